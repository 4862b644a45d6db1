"""The credential proxy's overhead: a GET through `/v1/credentials/:id/proxy/...` against the same
GET straight to the service, over HTTP (`wsctl serve` on SQLite) and in-process (the local backend),
plus a large answer's throughput each way.

    python bench/proxy_overhead.py [--n 400] [--mib 32]

The service is tests/proxy_upstream.py (a real HTTP server) in a process of its own; every client
keeps its connection alive. Direct and proxied calls alternate, so load changes hit both alike.
Each proxied call is a real one: the credential read and unsealed, the address checked and pinned,
the access-log row written before the call and its outcome after (two write transactions).
"""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time

from _harness import ROOT, Scratch, int_options, make_workspace, mib, pct, reset_hwm, vm_hwm, vm_rss

from tests.vault_helpers import install_service, make_credential

SERVICE = """
service = "bench-proxy"
name = "Bench proxy service"
description = "The proxy bench's loopback service."
credentialType = "apiKey"
baseUrl = "{base}/api"
auth = {{ type = "header", name = "X-Api-Key" }}
"""
UPSTREAM = ("import sys, time; sys.path.insert(0, sys.argv[1]); from tests.proxy_upstream import Upstream; "
            "u = Upstream(); print(u.url, flush=True); time.sleep(10**6)")


def line(label: str, lat: list[float]) -> str:
    return (f"{label:<34} p50 {statistics.median(lat) * 1000:6.2f} ms   p95 {pct(lat, 95) * 1000:6.2f} ms   "
            f"p99 {pct(lat, 99) * 1000:6.2f} ms")


def compare(label: str, direct, proxied, n: int) -> None:
    for _ in range(20):
        direct(), proxied()
    d, p = [], []
    for _ in range(n):
        t0 = time.perf_counter()
        direct()
        t1 = time.perf_counter()
        proxied()
        t2 = time.perf_counter()
        d.append(t1 - t0)
        p.append(t2 - t1)
    print(line(f"{label}: direct", d))
    print(line(f"{label}: through the proxy", p))
    print(f"{label}: added p50 {(statistics.median(p) - statistics.median(d)) * 1000:.2f} ms, "
          f"p95 {(pct(p, 95) - pct(d, 95)) * 1000:.2f} ms")


def main() -> None:
    args = int_options(__doc__ or "", {"--n": 400, "--mib": 32})
    import httpx

    from workspacectl.backend.local import LocalBackend

    up = subprocess.Popen([sys.executable, "-c", UPSTREAM, str(ROOT)], stdout=subprocess.PIPE, text=True)
    try:
        base = up.stdout.readline().strip() if up.stdout else ""
        with Scratch("wsctl-proxy-bench-") as s:
            ws_path, token, owner = make_workspace(s.tmp)
            install_service(ws_path, SERVICE.format(base=base))
            cred = make_credential(ws_path, owner["id"], "bench-proxy", {"apiKey": "bench-key-0123456789"})
            server = s.serve(ws_path)
            path = f"/v1/credentials/{cred['id']}/proxy/echo"
            headers = {"Authorization": f"Bearer {token}", "X-Wsctl-Reason": "bench"}
            print(f"load before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}   cores: {os.cpu_count()}")
            with httpx.Client(base_url=base, trust_env=False) as direct, \
                    httpx.Client(base_url=server.url, trust_env=False, headers=headers) as proxied:
                def d():
                    assert direct.get("/api/echo", headers={"X-Api-Key": "bench-key-0123456789"}).status_code == 200

                def p():
                    assert proxied.get(path).status_code == 200

                compare("HTTP (wsctl serve, SQLite)", d, p, args.n)
                local = LocalBackend.open(ws_path, secret=token)
                try:
                    def lp():
                        ans = local.proxy("GET", path, [], {"X-Wsctl-Reason": "bench"}, None, None)
                        assert ans.status == 200 and b"".join(ans.chunks)

                    compare("in-process (local backend)", d, lp, args.n)
                finally:
                    local.close()
                size = args.mib << 20
                pid = server.proc.pid
                before, hwm_reset = vm_rss(pid), reset_hwm(pid)
                for label, client, url, extra in (("direct", direct, "/api/big", {"X-Api-Key": "x"}),
                                                  ("through the proxy", proxied, path.replace("echo", "big"), {})):
                    t0 = time.perf_counter()
                    got = 0
                    with client.stream("GET", url, params={"size": size}, headers=extra) as r:
                        for chunk in r.iter_raw():
                            got += len(chunk)
                    assert got == size, (label, got)
                    wall = time.perf_counter() - t0
                    print(f"{args.mib} MiB answer {label:<18} {size / wall / (1 << 20):7.1f} MiB/s")
                # the server relays the answer: its peak memory must not grow by the answer's size
                grown = vm_hwm(pid) - before
                print(f"server RSS before {mib(before)}, peak growth while relaying {mib(grown)}"
                      + ("" if hwm_reset else " (peak not reset: since start)"))
                up_path = path.replace("echo", "echo/upload")
                t0 = time.perf_counter()
                r = proxied.post(up_path, content=(b"u" * (1 << 16) for _ in range(size >> 16)))
                wall = time.perf_counter() - t0
                assert r.status_code == 200 and r.json()["length"] == size, r.text
                print(f"{args.mib} MiB upload through the proxy {size / wall / (1 << 20):7.1f} MiB/s, server peak growth "
                      f"{mib(vm_hwm(pid) - before)}")
            print(f"load after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    finally:
        up.terminate()
        up.wait()


if __name__ == "__main__":
    main()
