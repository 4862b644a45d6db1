"""A 1 GiB project bundle up and down over HTTP, blobs in a folder and in PostgreSQL.

    python bench/pg_blobs.py [--mib 1023] [--stores folder,postgres] [--pg-url postgresql://postgres@127.0.0.1:5432/postgres]

The bundle: --mib MiB of random bytes in 64 MiB files, packed once into a tar.gz on disk with
gzip level 0 (stored blocks: random data does not compress, and level 0 keeps the packing out of
the figures). For each store a fresh workspace (`wsctl init`; for postgres an own database made
and dropped here, with WSCTL_MASTER_KEY set), a real `wsctl serve` on 127.0.0.1, then
- upload:   POST /v1/projects/ID/files/bundle, the file streamed by httpx
- download: GET the same bundle, streamed and hashed, never held
MB/s is bundle bytes (upload) or file content (download) over wall time. Server peak = VmHWM of
the server process during that transfer (reset before each); idle = its RSS before.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import sys
import tarfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._harness import MiB, Scratch, mib, reset_hwm, vm_hwm, vm_rss
from tests.conftest import WSCTL, base_env

KEY = "YmVuY2gta2V5LWJlbmNoLWtleS1iZW5jaC1rZXktMTI="


def make_bundle(folder: Path, size_mib: int) -> tuple[Path, int]:
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / "bundle.tar.gz"
    piece = 64
    with tarfile.open(out, "w:gz", compresslevel=0) as tf:
        left, i = size_mib, 0
        while left > 0:
            n = min(piece, left)
            f = folder / f"part-{i:02d}.bin"
            with open(f, "wb") as fh:
                for _ in range(n):
                    fh.write(os.urandom(MiB))
            tf.add(f, arcname=f"data/part-{i:02d}.bin")
            f.unlink()
            left, i = left - n, i + 1
    return out, size_mib * MiB


def owner_token(location: str, env: dict) -> str:
    import subprocess

    code = ("import sys\n"
            "from workspacectl.engine.workspaces import open_workspace\n"
            "from workspacectl.engine.identity.auth import new_session\n"
            "from workspacectl.engine.db import transaction\n"
            "from workspacectl.engine.store import identity\n"
            "loc = sys.argv[1]\n"
            "ws = open_workspace(loc)\n"
            "conn = ws.conn()\n"
            "owner = identity.first_owner(conn)\n"
            "with transaction(conn):\n"
            "    token, _ = new_session(conn, owner['id'], 'bench')\n"
            "print(token)\n")
    p = subprocess.run([sys.executable, "-c", code, location], env=env, capture_output=True, text=True, check=True)
    return p.stdout.strip()


def run_store(store: str, location: str, bundle: Path, content: int, scratch: Scratch, env: dict) -> list[dict]:
    import subprocess

    import httpx

    subprocess.run([*WSCTL, "init", "--workspace", location, "--name", "Bench"], env=env, check=True,
                   capture_output=True)
    token = owner_token(location, env)
    server = scratch.serve(location if store == "postgres" else Path(location), env)
    pid = server.proc.pid
    rows = []
    with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {token}"}, timeout=None,
                      trust_env=False) as http:
        proj = http.post("/v1/projects", json={"name": "Big"}).json()["project"]["id"]
        idle = vm_rss(pid)
        reset_hwm(pid)
        t0 = time.perf_counter()
        with open(bundle, "rb") as fh:
            r = http.post(f"/v1/projects/{proj}/files/bundle", content=fh,
                          headers={"Content-Type": "application/gzip", "Content-Length": str(bundle.stat().st_size)})
        wall = time.perf_counter() - t0
        assert r.status_code == 200, r.text[:300]
        rows.append({"store": store, "op": "upload", "wall": wall, "mbps": bundle.stat().st_size / MiB / wall,
                     "peak": vm_hwm(pid), "idle": idle})
        idle = vm_rss(pid)
        reset_hwm(pid)
        t0 = time.perf_counter()
        digest, n = hashlib.sha256(), 0
        with http.stream("GET", f"/v1/projects/{proj}/files/bundle") as resp:
            assert resp.status_code == 200
            for chunk in resp.iter_bytes(MiB):
                digest.update(chunk)
                n += len(chunk)
        wall = time.perf_counter() - t0
        rows.append({"store": store, "op": "download", "wall": wall, "mbps": content / MiB / wall,
                     "peak": vm_hwm(pid), "idle": idle, "bytes": n})
    server.stop()
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mib", type=int, default=1023, help="bundle content in MiB (a project holds at most 1 GiB)")
    ap.add_argument("--stores", default="folder,postgres")
    ap.add_argument("--pg-url", default=os.environ.get("WSCTL_TEST_POSTGRES_URL",
                                                        "postgresql://postgres@127.0.0.1:5432/postgres"))
    args = ap.parse_args()
    rows = []
    with Scratch("wsctl-bench-pgblobs-") as scratch:
        bundle, content = make_bundle(scratch.tmp / "bundle", args.mib)
        print(f"bundle: {mib(content)} content, {mib(bundle.stat().st_size)} packed", flush=True)
        for store in args.stores.split(","):
            env = {**base_env(scratch.tmp / f"home-{store}"), "WSCTL_MASTER_KEY": KEY}
            if store == "folder":
                rows += run_store(store, str(scratch.tmp / "ws-folder"), bundle, content, scratch, env)
            else:
                import psycopg

                name = f"h11b_bench_{uuid.uuid4().hex[:10]}"
                with psycopg.connect(args.pg_url, autocommit=True) as admin:
                    admin.execute(f'CREATE DATABASE "{name}"')
                try:
                    rows += run_store(store, args.pg_url.rsplit("/", 1)[0] + "/" + name, bundle, content, scratch, env)
                finally:
                    with psycopg.connect(args.pg_url, autocommit=True) as admin:
                        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    print("| store    | op       | wall s | MiB/s | server idle | server peak |")
    print("|----------|----------|-------:|------:|------------:|------------:|")
    for r in rows:
        print(f"| {r['store']:<8} | {r['op']:<8} | {r['wall']:6.1f} | {r['mbps']:5.1f} | {mib(r['idle']):>11} | "
              f"{mib(r['peak']):>11} |")


if __name__ == "__main__":
    main()
