"""Token issue speed: tokens/s and latency percentiles for an apiKey credential and a fresh OAuth
credential (no refresh needed), through the in-process engine and over HTTP (`wsctl serve`).

    python bench/token_issue.py [--n 400] [--threads 8]

Every issue is a real one: a write transaction that unseals the secret and writes the audit row.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.conftest import base_env, serve  # noqa: E402
from tests.oauth_provider import OAuthProvider  # noqa: E402
from tests.vault_helpers import APIKEY_TOML, install_service, make_credential  # noqa: E402


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def run(label: str, call, n: int, threads: int) -> None:
    for _ in range(min(20, n)):
        call()  # warm-up
    lat: list[float] = []

    def one(_):
        t0 = time.perf_counter()
        status = call()
        lat.append(time.perf_counter() - t0)
        assert status == 200, status

    t0 = time.perf_counter()
    if threads == 1:
        for i in range(n):
            one(i)
    else:
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(one, range(n)))
    wall = time.perf_counter() - t0
    print(f"{label:<44} {n / wall:8.0f} tokens/s   p50 {statistics.median(lat) * 1000:6.2f} ms   "
          f"p95 {pct(lat, 95) * 1000:6.2f} ms   p99 {pct(lat, 99) * 1000:6.2f} ms")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=400)
    ap.add_argument("--threads", type=int, default=8)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="wsctl-bench-"))
    env = base_env(tmp / "home")
    os.environ.update({"PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring", "WSCTL_HOME": str(tmp / "home")})
    subprocess.run([sys.executable, "-m", "workspacectl", "init", "--workspace", str(tmp / "ws"), "--name", "Bench",
                    "--owner-name", "Bench Owner", "--owner-email", "bench@example.com"], env=env, check=True,
                   capture_output=True)
    ws_path = tmp / "ws"
    from workspacectl.engine.db import transaction
    from workspacectl.engine.dispatch import Engine
    from workspacectl.engine.identity.auth import new_session
    from workspacectl.engine.store import identity
    from workspacectl.engine.workspaces.folder import Workspace

    ws = Workspace.open(ws_path)
    owner = identity.first_owner(ws.conn())["id"]
    with transaction(ws.conn()):
        session, _ = new_session(ws.conn(), owner, "bench")
    with OAuthProvider() as provider:
        install_service(ws_path, APIKEY_TOML.format(base=provider.url))
        install_service(ws_path, provider.service_toml("loopcrm"))
        key = make_credential(ws_path, owner, "keysvc", {"apiKey": "sk-bench"})["id"]
        grant = provider.grant()
        oauth = make_credential(ws_path, owner, "loopcrm", {"accessToken": grant["access_token"],
                                                             "refreshToken": grant["refresh_token"]},
                                expires_in=86400)["id"]
        engine = Engine(ws)
        print(f"token issue, n={args.n} per row ({os.cpu_count()} CPUs)")
        for cred, kind in ((key, "apiKey"), (oauth, "oauth2 (fresh)")):
            def local_call(cred=cred):
                return engine.handle("POST", f"/v1/credentials/{cred}/token", None, {"reason": "bench"}, session).status

            run(f"local  {kind}, 1 thread", local_call, args.n, 1)
            run(f"local  {kind}, {args.threads} threads", local_call, args.n, args.threads)
        import httpx

        with serve(ws_path, base_env(tmp / "srv-home")) as url:
            client = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {session}"}, timeout=30,
                                  limits=httpx.Limits(max_connections=args.threads * 2))
            for cred, kind in ((key, "apiKey"), (oauth, "oauth2 (fresh)")):
                def http_call(cred=cred):
                    return client.post(f"/v1/credentials/{cred}/token", json={"reason": "bench"}).status_code

                run(f"http   {kind}, 1 client", http_call, args.n, 1)
                run(f"http   {kind}, {args.threads} clients", http_call, args.n, args.threads)
            client.close()
        assert provider.refreshes == 0, "a fresh OAuth token must not be refreshed"


if __name__ == "__main__":
    main()
