"""Drill: token issue on two servers while the memory agent folds the largest fold the limits allow.

    python bench/memory_fold_drill.py [--notes 1000] [--scenario maximal fill] [--clients 2] [--every 0.02]

Two `wsctl serve` processes on one workspace (timers off). --notes organization notes are queued
(through the engine), then --agents servers are told to run the memory agent at once (POST
/v1/memory/agent/run on each: two agents, each in its own process, by default), while --clients threads per
server issue tokens for an apiKey credential (POST /v1/credentials/:id/token, a write: it takes
the workspace's write lock for its audit row), one every --every seconds each. Reported per
server: token issues during the fold, p50 / p99 / max latency and every answer that was not 200.
A baseline row does the same for 5 s with nothing to fold.

Scenarios (the proposal limits: text 20,000 characters, one file of at most 1 MiB):
- maximal: every note at both limits (20,000 characters of text and a 1 MiB file). The guide
  fills to its bound after ~52 notes; the rest are held (kept, not folded).
- fill:    every note with a 1 MiB file and ~1,000 bytes of text, so all of them fit the guide:
  the most a single fold can fold and write (1,000 notes, ~1 GiB of files, a ~1 MiB guide).

Target (issue 15 item 4): token p99 under 1 s on both servers and no 409.
"""
from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._harness import Scratch, base_env, make_workspace, pct, start_server

ORG = "/v1/memory/organization"


def queue_notes(ws_path: Path, token: str, n: int, scenario: str) -> None:
    from workspacectl.engine.dispatch import Engine
    from workspacectl.engine.workspaces.folder import Workspace

    engine = Engine(Workspace.open(ws_path))
    text_len = 20000 if scenario == "maximal" else 1000
    for i in range(n):
        head = f"Note {i:04d} ({scenario}): "
        text = head + (f"rule {i} " * (text_len // 8))[: text_len - len(head)]
        content = f"# Reference {i}\n" + chr(ord("a") + i % 26) * (1024 * 1024 - 20)
        body = {"text": text, "section": f"Section {i % 20}", "file": {"path": f"refs/{i:04d}.md", "content": content}}
        r = engine.handle("POST", f"{ORG}/proposals", None, body, token)
        assert r.status == 202, r.body
    engine.ws.conn().close()


def credential(ws_path: Path, owner_id: str) -> str:
    from tests.vault_helpers import APIKEY_TOML, install_service, make_credential

    install_service(ws_path, APIKEY_TOML.format(base="http://127.0.0.1:9"))
    return make_credential(ws_path, owner_id, "keysvc", {"apiKey": "sk-drill"})["id"]


class TokenLoad:
    """Threads issuing tokens on one server until stopped; latencies and non-200 answers."""

    def __init__(self, url: str, token: str, cred: str, clients: int, every: float):
        import httpx

        self.http = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=120,
                                 trust_env=False, limits=httpx.Limits(max_connections=clients + 2))
        self.cred, self.clients, self.every = cred, clients, every
        self.lat: list[float] = []
        self.bad: dict[int, int] = {}
        self.stop = threading.Event()
        self.threads: list[threading.Thread] = []

    def _loop(self) -> None:
        while not self.stop.is_set():
            t0 = time.perf_counter()
            r = self.http.post(f"/v1/credentials/{self.cred}/token", json={"reason": "fold drill"})
            took = time.perf_counter() - t0
            self.lat.append(took)
            if r.status_code != 200:
                self.bad[r.status_code] = self.bad.get(r.status_code, 0) + 1
            self.stop.wait(max(0.0, self.every - took))

    def start(self) -> TokenLoad:
        self.threads = [threading.Thread(target=self._loop, daemon=True) for _ in range(self.clients)]
        for t in self.threads:
            t.start()
        return self

    def finish(self) -> None:
        self.stop.set()
        for t in self.threads:
            t.join()
        self.http.close()

    def row(self, label: str) -> str:
        lat = self.lat
        return (f"{label:<34} {len(lat):6d} issues   p50 {pct(lat, 50) * 1000:7.1f} ms   p99 {pct(lat, 99) * 1000:7.1f} ms"
                f"   max {max(lat) * 1000:7.1f} ms   not 200: {self.bad or 'none'}")


def drill(scratch: Scratch, n: int, scenario: str, clients: int, every: float, agents: int) -> None:
    import httpx

    tmp = scratch.tmp / scenario
    tmp.mkdir()
    ws_path, token, owner = make_workspace(tmp)
    cred = credential(ws_path, owner["id"])
    t0 = time.perf_counter()
    queue_notes(ws_path, token, n, scenario)
    print(f"\n[{scenario}] queued {n} notes in {time.perf_counter() - t0:.1f} s; "
          f"workspace.db {os.path.getsize(ws_path / 'workspace.db') / 2**20:.0f} MiB")
    env = {"WSCTL_MEMORY_INTERVAL": "0"}
    servers = [start_server(ws_path, {**base_env(tmp / f"srv{i}-home"), **env}, log=tmp / f"server{i + 1}.log")
               for i in range(2)]
    scratch._servers += servers
    loads = [TokenLoad(s.url, token, cred, clients, every).start() for s in servers]
    time.sleep(5)
    for i, load in enumerate(loads):
        load.finish()
        print(load.row(f"server {i + 1}: baseline 5 s, no fold"))
    loads = [TokenLoad(s.url, token, cred, clients, every).start() for s in servers]
    answers: list = [None] * agents

    def run_agent(i: int) -> None:
        with httpx.Client(base_url=servers[i].url, headers={"Authorization": f"Bearer {token}"}, timeout=3600,
                          trust_env=False) as c:
            answers[i] = c.post("/v1/memory/agent/run")

    t0 = time.perf_counter()
    threads = [threading.Thread(target=run_agent, args=(i,)) for i in range(agents)]
    for a in threads:
        a.start()
    for a in threads:
        a.join()
    fold_wall = time.perf_counter() - t0
    for load in loads:
        load.finish()
    folded = held = dropped = 0
    for i, r in enumerate(answers):
        if r.status_code != 200:
            log = servers[i].log_text().strip().splitlines()
            print(f"agent on server {i + 1}: {r.status_code} {r.text[:300]}\n  log: {' | '.join(log[-3:])[:600]}")
            continue
        org = r.json()["owners"][0]
        counts = [len(org.get(k, [])) for k in ("folded", "held", "dropped")]  # no "held" before issue 15
        folded, held, dropped = folded + counts[0], held + counts[1], dropped + counts[2]
        print(f"agent on server {i + 1}: folded {counts[0]}, held {counts[1]}, dropped {counts[2]}, "
              f"version {org['version']}")
    with httpx.Client(base_url=servers[0].url, headers={"Authorization": f"Bearer {token}"}, timeout=120,
                      trust_env=False) as c:
        body = c.get(ORG).json()
        files = c.get(ORG + "/files", params={"limit": 500}).json()
    if folded + held + dropped != n or body["pendingNotes"]:
        print(f"NOT ALL FOLDED: {len(body['pendingNotes'])} still pending")
    print(f"fold wall {fold_wall:.1f} s: {folded} folded, {held} held, {dropped} dropped; guide "
          f"{len(body['guide'].encode()) / 1024:.0f} KiB, version {body['version']}, "
          f"{len(files['files'])}{'+' if files['nextCursor'] else ''} files")
    for i, load in enumerate(loads):
        print(load.row(f"server {i + 1}: during the fold"))
    for s in servers:
        s.stop()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--notes", type=int, default=1000)
    ap.add_argument("--scenario", nargs="+", choices=["maximal", "fill"], default=["maximal", "fill"])
    ap.add_argument("--clients", type=int, default=2, help="token threads per server")
    ap.add_argument("--every", type=float, default=0.02, help="seconds between one thread's token requests")
    ap.add_argument("--agents", type=int, choices=[1, 2], default=2, help="servers told to run the agent at once")
    args = ap.parse_args()
    print(f"memory fold drill: {args.notes} notes, 2 servers x {args.clients} token clients every "
          f"{args.every * 1000:.0f} ms; {os.cpu_count()} CPUs")
    with Scratch("wsctl-drill-memory-") as scratch:
        for scenario in args.scenario:
            drill(scratch, args.notes, scenario, args.clients, args.every, args.agents)
    return 0


if __name__ == "__main__":
    sys.exit(main())
