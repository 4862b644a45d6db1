"""The memory agent's fold and memory reads.

    python bench/memory_fold.py [--notes 1000] [--sections 20] [--gets 200]

- fold: --notes pending notes (spread over --sections sections, 1-3 lines each) queued through the
  engine, then timed `wsctl memory agent run` (local CLI, engine in-process; the default
  section-append policy). Rows for a quarter, half and all of --notes into an empty guide (to
  show how the time grows), --notes more into the guide the first run left, and --notes folded
  over HTTP by the same command against `wsctl serve`. `idle run` is the command with nothing
  pending (the CLI's own cost).
- read: GET /v1/memory/organization p50/p95 with the large guide those folds leave, in-process
  and over HTTP, with no note pending and with --notes pending.
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._harness import Scratch, base_env, int_options, local_env, make_workspace, median, pct, remote_env, run_cli

ORG = "/v1/memory/organization"


def engine_for(ws_path: Path):
    from workspacectl.engine.dispatch import Engine
    from workspacectl.engine.workspaces.folder import Workspace

    return Engine(Workspace.open(ws_path))


def propose(engine, token: str, n: int, sections: int, tag: str) -> None:
    for i in range(n):
        lines = [f"{tag} note {i}: prefer the {i % 13}th option when the customer asks about plan {i % 17}."]
        if i % 3 == 1:
            lines.append(f"Check the invoice history first (case {tag}-{i}).")
        if i % 3 == 2:
            lines += [f"Escalate after {i % 5 + 1} days.", f"Link: https://example.com/kb/{tag}/{i}"]
        r = engine.handle("POST", f"{ORG}/proposals", None, {"text": "\n".join(lines),
                                                             "section": f"Section {i % sections}"}, token)
        assert r.status == 202, r.body


def fold(env: dict, expect: int) -> float:
    r = run_cli(["memory", "agent", "run", "--json"], env)
    folded = sum(len(o["folded"]) for o in json.loads(r.out)["owners"])
    assert folded == expect, (folded, expect)
    return r.wall


def timed(fn, n: int) -> list[float]:
    for _ in range(10):
        fn()
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def main() -> int:
    args = int_options(__doc__, {"--notes": 1000, "--sections": 20, "--gets": 200})
    with Scratch("wsctl-bench-memory-") as scratch:
        tmp = scratch.tmp
        print(f"memory agent fold (section-append), {args.sections} sections; {os.cpu_count()} CPUs")
        for n in sorted({max(1, args.notes // 4), max(1, args.notes // 2), args.notes}):
            sub = tmp / f"n{n}"
            sub.mkdir()
            ws_path, token, _ = make_workspace(sub)
            env = local_env(sub, ws_path)
            propose(engine_for(ws_path), token, n, args.sections, "a")
            print(f"local  fold {n:>5} notes into an empty guide      {fold(env, n):6.2f} s")
        # The last workspace: its guide holds args.notes entries now.
        engine = engine_for(ws_path)
        idle = fold(env, 0)
        print(f"local  idle run (nothing pending)                 {idle:6.2f} s")
        propose(engine, token, args.notes, args.sections, "b")
        print(f"local  fold {args.notes:>5} more into a {args.notes}-entry guide   {fold(env, args.notes):6.2f} s")
        srv_env = {**base_env(tmp / "srv-home"), "WSCTL_MEMORY_INTERVAL": "0"}
        server = scratch.serve(ws_path, srv_env)
        renv = remote_env(tmp, server.url, token)
        propose(engine, token, args.notes, args.sections, "c")
        print(f"http   fold {args.notes:>5} more into a {2 * args.notes}-entry guide   {fold(renv, args.notes):6.2f} s")

        import httpx

        guide = engine.handle("GET", ORG, None, None, token).body["guide"]
        print(f"\nGET {ORG}: guide {len(guide.encode()) / 1024:.0f} KiB, {guide.count(chr(10))} lines")
        client = httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {token}"}, timeout=30,
                              trust_env=False)
        for pending in (0, args.notes):
            if pending:
                propose(engine, token, pending, args.sections, "d")
            for door, call in (("local", lambda: engine.handle("GET", ORG, None, None, token)),
                               ("http", lambda: client.get(ORG))):
                lat = timed(call, args.gets)
                print(f"{door:<6} {pending:>5} pending   p50 {median(lat) * 1000:7.2f} ms   "
                      f"p95 {pct(lat, 95) * 1000:7.2f} ms   (n={args.gets})")
        client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
