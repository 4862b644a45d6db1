"""Token issue on one PostgreSQL replica while a large bundle is stored through the other (issue 27
item 4, the second bench): token latency idle and during the store.

    python bench/pg_bundle_tokens.py [--mib 1024] [--seconds 8] [--connections 8] [--postgres URL]

Two `wsctl serve` replicas of one fresh PostgreSQL workspace. First wrk (-t2, `--connections`)
issues tokens on replica B for `--seconds` (idle), then a specialist bundle of `--mib` MiB (one
file of random bytes, gzip level 1) is uploaded through replica A and, while it is being stored,
wrk issues tokens on replica B again until the upload answers (during). Printed: token req/s,
p50 and p99 of each phase, the upload's time and status, non-2xx answers, and the load average.
Before issue 27 the upload's transaction held the workspace's writer lock while its blobs were
copied in, and token issues (which share that lock) waited behind writers queued for it.
"""
from __future__ import annotations

import argparse
import io
import os
import shutil
import subprocess
import sys
import tarfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))

from bench._harness import pg_bench_env, wrk, wrk_summary  # noqa: E402
from bench.pg_door import POST, Db, _Loc, setup  # noqa: E402
from tests.conftest import base_env, start_server  # noqa: E402


def bundle(path: Path, mib: int) -> None:
    """A tar.gz of one file of `mib` MiB of random bytes (1 MiB pattern, so it does not shrink)."""
    piece = os.urandom(1 << 20)

    class Source(io.RawIOBase):
        def __init__(self):
            self.left = mib << 20

        def readable(self) -> bool:
            return True

        def readinto(self, b) -> int:
            n = min(len(b), self.left, len(piece))
            b[:n] = piece[:n]
            self.left -= n
            return n

    with tarfile.open(path, "w:gz", compresslevel=1) as tf:
        info = tarfile.TarInfo("big.bin")
        info.size = mib << 20
        tf.addfile(info, io.BufferedReader(Source(), 1 << 20))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mib", type=int, default=1024)
    ap.add_argument("--seconds", type=int, default=8)
    ap.add_argument("--connections", type=int, default=8)
    ap.add_argument("--postgres", default=os.environ.get("WSCTL_TEST_POSTGRES_URL") or
                    "postgresql://postgres@127.0.0.1:5432/postgres")
    args = ap.parse_args()
    import httpx

    tmp, key = pg_bench_env("wsctl-pg-bundle-")
    env = {**base_env(tmp / "env-home"), "WSCTL_MASTER_KEY": key, "WSCTL_BLOB_DIR": str(tmp / "pg-blobs")}
    db = Db(args.postgres, f"wsctl_bench_bundle_{os.getpid()}")
    servers = []
    try:
        token, cred, _ = setup(db.url, env, tmp)
        script = tmp / "post.lua"
        script.write_text(POST % token)
        data = tmp / "bundle.tar.gz"
        bundle(data, args.mib)
        servers = [start_server(_Loc(db.url, tmp / f"replica-{i}"), env, log=tmp / f"replica-{i}.log")
                   for i in range(2)]
        a, b = servers[0].url, servers[1].url
        auth = {"Authorization": f"Bearer {token}"}
        with httpx.Client(timeout=3600, trust_env=False) as http:
            pid = http.post(f"{a}/v1/projects", json={"name": "Big"}, headers=auth).json()["project"]["id"]
        token_url = f"{b}/v1/credentials/{cred}/token"
        print(f"uptime: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
        print(f"bundle {args.mib} MiB ({data.stat().st_size >> 20} MiB gzip) via replica A; tokens via replica B, "
              f"wrk -t2 -c{args.connections}")
        load = os.getloadavg()[0]
        idle = wrk_summary(wrk(token_url, args.seconds, args.connections, script).communicate()[0])
        print(f"idle    load {load:5.1f}  tokens {idle['rps']:7.0f}/s  p50 {idle['p50']:7.1f} ms  "
              f"p99 {idle['p99']:7.1f} ms  non-2xx {idle['errors']}", flush=True)
        result: dict = {}

        def upload() -> None:
            started = time.monotonic()
            with httpx.Client(timeout=3600, trust_env=False) as http, data.open("rb") as fh:
                r = http.post(f"{a}/v1/projects/{pid}/files/bundle", content=fh,
                              headers={**auth, "Content-Type": "application/gzip"})
            result.update(status=r.status_code, seconds=time.monotonic() - started,
                          body=r.text[:300] if r.status_code >= 300 else "")

        t = threading.Thread(target=upload)
        load = os.getloadavg()[0]
        t.start()
        during = []
        while t.is_alive():
            during.append(wrk_summary(wrk(token_url, args.seconds, args.connections, script).communicate()[0]))
        t.join()
        for i, d in enumerate(during, 1):
            print(f"during  load {load:5.1f}  tokens {d['rps']:7.0f}/s  p50 {d['p50']:7.1f} ms  "
                  f"p99 {d['p99']:7.1f} ms  non-2xx {d['errors']}  wrk timeouts (2 s) {d['timeouts']}  "
                  f"(wrk run {i} of {len(during)})", flush=True)
        stalled = sum(1 for d in during if d["rps"] == 0 or d["timeouts"])
        worst = max(d["p99"] for d in during)
        print(f"upload  {result.get('status')} in {result.get('seconds', float('nan')):.1f} s; token p99 during / "
              f"idle = {worst / idle['p99']:.2f} (worst wrk run that completed requests); wrk runs with no token "
              f"answered or a request past wrk's 2 s timeout: {stalled} of {len(during)}")
        if result.get("body"):
            print(f"upload answered: {result['body']}")
    finally:
        for s in servers:
            s.stop()
        db.drop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
