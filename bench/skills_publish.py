"""`wsctl skill publish DIR` and inline file writes: wall times and versions/s.

    python bench/skills_publish.py [--runs 5] [--files 50] [--threads 8] [--puts 120]

For a skill folder of --files files (SKILL.md, references/*.md, scripts/*.py, assets/*.bin;
about 0.7 MiB in all), through the local backend (WSCTL_WORKSPACE) and over HTTP (a real
`wsctl serve` on 127.0.0.1), each the median (p50) and max of --runs CLI runs:
- first:     publish a skill that does not exist yet (created, uploaded, validated, published)
- unchanged: publish the same folder again (one GET and one versions lookup; nothing uploaded)
- changed:   one file edited, publish again (a new version)
Then --puts inline `PUT /v1/skills/:id/files` over HTTP from --threads clients: all to one skill
(they serialize on the write lock) and spread over --threads skills; versions/s and latency.
"""
from __future__ import annotations

import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._harness import Scratch, int_options, local_env, make_workspace, median, pct, remote_env, run_cli


def make_skill(folder: Path, name: str, n_files: int) -> None:
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: Bench skill. Use when benchmarking.\n---\n"
                                     f"# {name}\n\nSee references/ for details.\n")
    rest = n_files - 1
    n_bin = max(1, rest // 10)
    n_py = max(1, rest // 5)
    n_md = rest - n_bin - n_py
    for d in ("references", "scripts", "assets"):
        (folder / d).mkdir()
    for i in range(n_md):
        (folder / "references" / f"ref-{i:02d}.md").write_text(f"# Reference {i}\n\n" + "Some guidance text. " * 400)
    for i in range(n_py):
        (folder / "scripts" / f"tool_{i:02d}.py").write_text(f"print('tool {i}')\n" * 200)
    for i in range(n_bin):
        (folder / "assets" / f"asset-{i}.bin").write_bytes(os.urandom(100 * 1024))


def publish_rows(door: str, env: dict, tmp: Path, runs: int, n_files: int) -> None:
    firsts, unchanged, changed = [], [], []
    for i in range(runs):
        folder = tmp / f"skills-{door}" / f"bench-{door}-{i}"
        make_skill(folder, f"bench-{door}-{i}", n_files)
        r = run_cli(["skill", "publish", folder, "--json"], env)
        assert json.loads(r.out)["results"][0]["outcome"] == "created", r.out
        firsts.append(r.wall)
    folder = tmp / f"skills-{door}" / f"bench-{door}-0"
    for _ in range(runs):
        r = run_cli(["skill", "publish", folder, "--json"], env)
        assert json.loads(r.out)["results"][0]["outcome"] == "unchanged", r.out
        unchanged.append(r.wall)
    for i in range(runs):
        with open(folder / "references" / "ref-00.md", "a") as f:
            f.write(f"\nEdit {i}.\n")
        r = run_cli(["skill", "publish", folder, "--json"], env)
        assert json.loads(r.out)["results"][0]["outcome"] == "published", r.out
        changed.append(r.wall)
    for label, walls in (("first publish", firsts), ("unchanged re-run", unchanged), ("changed re-run", changed)):
        print(f"{door:<6} {label:<18} p50 {median(walls) * 1000:7.0f} ms   max {max(walls) * 1000:7.0f} ms   "
              f"(n={len(walls)})")


def put_rows(url: str, token: str, threads: int, puts: int) -> None:
    import httpx

    client = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=120,
                          trust_env=False, limits=httpx.Limits(max_connections=threads * 2))
    ids = []
    for i in range(threads):
        r = client.post("/v1/skills", json={"name": f"inline-{i}", "description": "Inline bench. Use when testing."})
        assert r.status_code == 201, r.text
        ids.append(r.json()["id"])
        body = f"---\nname: inline-{i}\ndescription: Inline bench. Use when testing.\n---\n# x\n"
        assert client.put(f"/v1/skills/{ids[-1]}/files", json={"path": "SKILL.md", "content": body}).status_code == 200
        for k in range(9):   # a 10-file skill, so each write re-publishes a real bundle
            client.put(f"/v1/skills/{ids[-1]}/files",
                       json={"path": f"references/r{k}.md", "content": "text " * 2000})
    for label, targets in (("one skill", [ids[0]]), (f"{threads} skills", ids)):
        lat: list[float] = []

        def one(n, targets=targets, lat=lat):
            sid = targets[n % len(targets)]
            t0 = time.perf_counter()
            r = client.put(f"/v1/skills/{sid}/files",
                           json={"path": f"references/w{n % 20}.md", "content": f"write {n}\n" * 50})
            lat.append(time.perf_counter() - t0)
            assert r.status_code == 200, r.text

        t0 = time.perf_counter()
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(one, range(puts)))
        wall = time.perf_counter() - t0
        versions = sum(client.get(f"/v1/skills/{sid}").json()["version"] for sid in set(targets))
        print(f"http   inline PUT, {threads} clients, {label:<9} {puts / wall:6.1f} versions/s   "
              f"p50 {median(lat) * 1000:6.0f} ms   p95 {pct(lat, 95) * 1000:6.0f} ms   (n={puts}, "
              f"versions now {versions})")
    client.close()


def main() -> int:
    args = int_options(__doc__, {"--runs": 5, "--files": 50, "--threads": 8, "--puts": 120})
    with Scratch("wsctl-bench-skills-") as scratch:
        tmp = scratch.tmp
        ws_path, token, _ = make_workspace(tmp)
        server = scratch.serve(ws_path)
        print(f"skill of {args.files} files; {args.runs} CLI runs per row; {os.cpu_count()} CPUs")
        publish_rows("local", local_env(tmp, ws_path), tmp, args.runs, args.files)
        publish_rows("http", remote_env(tmp, server.url, token), tmp, args.runs, args.files)
        put_rows(server.url, token, args.threads, args.puts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
