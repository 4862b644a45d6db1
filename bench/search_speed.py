"""Operation search latency over the shared corpus (12 OpenAPI documents, 3,481 operations).

    python bench/search_speed.py [--rounds 5] [--copies 1] [--no-http] [--workspace DIR or postgresql://URL]
                                 [--reindex] [--http-only]

Prints p50 / p95 / max per query for:
- engine:  engine.catalog_search.search() in-process (the index lookup and the re-rank)
- local:   the whole GET /v1/operations route through the engine (auth, scope, serialization),
           as the local backend runs it
- http:    the same route over HTTP against a real `wsctl serve` on loopback (httpx client)
- bm25:    the plain-BM25 baseline of search_quality.py, for scale

Queries: the labelled phrases (tuning set and holdout) plus one- and two-word probes, each run --rounds times (after
one warm-up pass). --copies N imports the corpus N times under other service names
(github-2 ...) to show how latency grows with the catalog: --copies 29 makes 100,949 operations.
The first search after an import builds the in-process matrix of vectors (timed apart as
"first search"); the rest are one matrix-vector product over it plus the lexical lookup.
--workspace reuses a workspace of an earlier run (a folder, or a PostgreSQL URL: its key in
WSCTL_MASTER_KEY), without the full reindex a new one is timed with (--reindex times it again).
The http line adds the server's CPU per request (user + system of the `wsctl serve` process
from /proc over the timed rounds, divided by the requests): on a shared machine the wall p95 is
mostly the wait for a core. --http-only measures only that line.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))

from bench.search_quality import PlainBM25  # noqa: E402
from tests.search_holdout import HOLDOUT  # noqa: E402
from tests.search_labels import LABELS, make_corpus_workspace, openapi_files  # noqa: E402
from workspacectl.engine.catalog import search as catalog_search  # noqa: E402

PROBES = ["refund", "send sms", "list users", "delete file", "upload", "stripe", "github issues", "webhook",
          "create customer", "search", "get", "a", "playlist tracks", "oauth token", "channel message"]


def percentiles(samples: list[float]) -> str:
    s = sorted(samples)
    p50 = statistics.median(s)
    p95 = s[min(len(s) - 1, int(round(0.95 * (len(s) - 1))))]
    return f"p50 {p50 * 1000:7.2f} ms   p95 {p95 * 1000:7.2f} ms   max {s[-1] * 1000:7.2f} ms   (n={len(s)})"


def timed(fn, queries: list[str], rounds: int, cpu: list | None = None, warm: bool = True) -> list[float]:
    """Wall time per query; with `cpu`, this process's CPU time per query is appended to it (on a
    machine shared with other jobs, wall time mostly measures the wait for a core)."""
    for q in queries if warm else ():       # warm-up: caches, the first ensure_current
        fn(q)
    out = []
    for _ in range(rounds):
        for q in queries:
            t, c = time.perf_counter(), time.process_time()
            fn(q)
            out.append(time.perf_counter() - t)
            if cpu is not None:
                cpu.append(time.process_time() - c)
    return out


def add_copies(conn, copies: int) -> None:
    """The imported corpus again under other service names (github-2 ... github-N): each
    service's integration and operation rows copied with the service and opIds renamed (what
    importing its document under that name makes, triggers aside), then the index built once
    (reindex_all): minutes instead of an hour of imports on PostgreSQL. A reused workspace keeps
    the copies it has."""
    from workspacectl.engine.db import transaction

    present = {r[0] for r in conn.execute("SELECT service FROM integrations")}
    added = False
    with transaction(conn):
        for i in range(2, copies + 1):
            for service, _ in openapi_files():
                name = f"{service}-{i}"
                if name in present:
                    continue
                added = True
                for table, key in (("integrations", None), ("operations", "op_id")):
                    cur = conn.execute(f"SELECT * FROM {table} WHERE service = ?", (service,))
                    rows = cur.fetchall()
                    columns = [d[0] for d in cur.description]
                    renamed = []
                    for row in rows:
                        values = dict(zip(columns, tuple(row)))
                        values["service"] = name
                        if key:
                            values[key] = f"{name}.{values[key][len(service) + 1:]}"
                        renamed.append(tuple(values[c] for c in columns))
                    conn.executemany(f"INSERT INTO {table} ({', '.join(columns)}) "
                                     f"VALUES ({', '.join('?' * len(columns))})", renamed)
        if added:
            t = time.perf_counter()
            catalog_search.reindex_all(conn)
            print(f"copies indexed (reindex_all) in {time.perf_counter() - t:.1f} s")


def http_samples(ws, queries: list[str], rounds: int) -> tuple[list[float], float]:
    """(wall time per request, the server's CPU seconds per request over the timed rounds)."""
    import httpx

    from bench._harness import cpu_seconds
    from workspacectl.engine.db import transaction
    from workspacectl.engine.identity.auth import new_session
    from workspacectl.engine.store import identity

    with transaction(ws.conn()):
        token, _ = new_session(ws.conn(), identity.first_owner(ws.conn())["id"], "bench")
    ws_path = ws.location
    with tempfile.TemporaryDirectory() as home:
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("WSCTL_") or k == "WSCTL_MASTER_KEY"},
               "WSCTL_HOME": home, "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring"}
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        proc = subprocess.Popen([sys.executable, "-m", "workspacectl", "serve", "--workspace", str(ws_path),
                                 "--host", "127.0.0.1", "--port", str(port)], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            url = f"http://127.0.0.1:{port}"
            with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=30) as client:
                deadline = time.time() + 30
                while True:
                    try:
                        if client.get("/healthz").status_code == 200:
                            break
                    except httpx.HTTPError:
                        if time.time() > deadline:
                            raise
                        time.sleep(0.05)

                def call(q):
                    r = client.get("/v1/operations", params={"q": q, "limit": 20})
                    assert r.status_code == 200, r.text
                for q in queries:       # warm-up, outside the CPU count
                    call(q)
                cpu0 = cpu_seconds(proc.pid)
                walls = timed(call, queries, rounds, warm=False)
                return walls, (cpu_seconds(proc.pid) - cpu0) / max(len(walls), 1)
        finally:
            proc.terminate()
            proc.wait(10)


def cli_ratio(rounds: int, before: str | None = None) -> None:
    """A local `wsctl catalog search` against a local `wsctl catalog integrations` on a workspace
    made by `wsctl init` holding the 12 documents (imported with `wsctl catalog import`), run
    alternately so both see the same load; the figures are medians of per-round ratios, of wall
    time and of the CLI process's own CPU time (steadier on a shared machine). The package's
    bytecode is compiled first, as an installed wsctl has it (PYTHONDONTWRITEBYTECODE would
    otherwise make every run compile the modules it imports, the search's more than the list's).
    before: the src folder of another version (e.g. from `git archive`), run with this interpreter
    (PYTHONPATH) in the same rounds on the same workspace, after this one's search."""
    import compileall

    from bench._harness import local_env, make_workspace, median, run_cli

    compileall.compile_dir(str(ROOT / "src" / "workspacectl"), quiet=1)
    with tempfile.TemporaryDirectory(prefix="wsctl-search-cli-") as tmp:
        ws_path, _, _ = make_workspace(Path(tmp))
        env = local_env(Path(tmp), ws_path)
        for service, path in openapi_files():
            run_cli(["catalog", "import", str(path), "--service", service], env)
        run_cli(["catalog", "search", "warm up"], env)      # builds nothing new; caches the OS's files
        walls, cpus, searches, lists, olds, old_cpus = [], [], [], [], [], []
        old_env = {**env, "PYTHONPATH": before} if before else env
        if before:
            compileall.compile_dir(str(Path(before) / "workspacectl"), quiet=1)
            run_cli(["catalog", "search", "warm up"], old_env)
        for i in range(rounds):
            q = [phrase for phrase, _, _ in HOLDOUT][i % len(HOLDOUT)]
            a = run_cli(["catalog", "search", q], env)
            if before:
                old = run_cli(["catalog", "search", q], old_env)
                olds.append(old)
            b = run_cli(["catalog", "integrations"], env)
            searches.append(a)
            lists.append(b)
            walls.append(a.wall / b.wall)
            cpus.append(a.cpu / b.cpu)
            if before:
                old_cpus.append(old.cpu / b.cpu)
        print(f"cli     local `catalog search` {median([r.wall for r in searches]) * 1000:.0f} ms wall, "
              f"{median([r.cpu for r in searches]) * 1000:.0f} ms CPU; local `catalog integrations` "
              f"{median([r.wall for r in lists]) * 1000:.0f} ms wall, {median([r.cpu for r in lists]) * 1000:.0f} ms CPU")
        print(f"cli     search/integrations median ratio: wall {median(walls):.2f}, CPU {median(cpus):.2f} (n={rounds})")
        if before:
            print(f"cli     before ({before}): search {median([r.cpu for r in olds]) * 1000:.0f} ms CPU, "
                  f"search/integrations median ratio CPU {median(old_cpus):.2f}")
        print(f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--copies", type=int, default=1, help="import the corpus this many times")
    ap.add_argument("--no-http", action="store_true", help="skip the HTTP measurement")
    ap.add_argument("--workspace", help="reuse a workspace made by an earlier run (a folder or a PostgreSQL URL)")
    ap.add_argument("--reindex", action="store_true", help="time a full reindex of a reused workspace too")
    ap.add_argument("--http-only", action="store_true", help="only the HTTP line")
    ap.add_argument("--cli", type=int, default=0, metavar="ROUNDS",
                    help="only compare local `wsctl catalog search` with `wsctl catalog integrations`")
    ap.add_argument("--before", metavar="SRC", help="with --cli: another version's src folder, run side by side")
    args = ap.parse_args()
    if args.cli:
        cli_ratio(args.cli, args.before)
        return 0

    tmp = None
    if args.workspace:
        ws_path = args.workspace if args.workspace.startswith("postgresql://") else Path(args.workspace)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="wsctl-search-bench-")
        ws_path = Path(tmp.name) / "ws"
    t0 = time.perf_counter()
    from workspacectl.engine.workspaces import workspace_type

    kind = workspace_type(ws_path)
    # a reused workspace is opened as it is (make_corpus_workspace would drop the copies)
    ws = kind.open(ws_path) if tmp is None and kind.exists_at(ws_path) else make_corpus_workspace(ws_path)
    print(f"corpus workspace ready in {time.perf_counter() - t0:.1f} s")
    conn = ws.conn()
    if args.copies > 1:
        add_copies(conn, args.copies)
    n_ops = conn.execute("SELECT count(*) FROM operations").fetchone()[0]
    if tmp is not None or args.reindex:
        t = time.perf_counter()
        catalog_search.reindex_all(conn)
        print(f"corpus: {n_ops} operations; full index rebuild (lexical and vectors) {time.perf_counter() - t:.2f} s")
    else:
        print(f"corpus: {n_ops} operations (reused, not reindexed)")
    print(f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    queries = [phrase for phrase, _, _ in LABELS] + [phrase for phrase, _, _ in HOLDOUT] + PROBES
    if args.http_only:
        walls, cpu_per = http_samples(ws, queries, args.rounds)
        print(f"{len(queries)} queries x {args.rounds} rounds, limit 20\n")
        print(f"http    {percentiles(walls)}   server CPU {cpu_per * 1000:.2f} ms/request")
        print(f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
        return 0
    t = time.perf_counter()
    catalog_search.search(conn, "send a message", limit=20)
    print(f"first search (loads the vectors into memory) {time.perf_counter() - t:.2f} s")
    print(f"{len(queries)} queries x {args.rounds} rounds, limit 20\n")
    cpu: list[float] = []
    print(f"engine  {percentiles(timed(lambda q: catalog_search.search(conn, q, limit=20), queries, args.rounds, cpu))}")
    print(f"  cpu   {percentiles(cpu)}")
    lexical_cpu: list[float] = []
    timed(lambda q: catalog_search.search(conn, q, limit=20, mode="lexical"), queries, args.rounds, lexical_cpu)
    print(f"lexical half alone, cpu {percentiles(lexical_cpu)}")

    from workspacectl.engine.dispatch import Engine
    from workspacectl.engine.registry import Caller
    from workspacectl.engine.store import identity

    engine = Engine(ws)
    owner = identity.first_owner(conn)
    caller = Caller(owner["id"], owner["role"], "session", "bench")
    print(f"local   {percentiles(timed(lambda q: engine.call(caller, 'GET', '/v1/operations', {'q': q, 'limit': '20'}), queries, args.rounds))}")
    if not args.no_http:
        walls, cpu_per = http_samples(ws, queries, args.rounds)
        print(f"http    {percentiles(walls)}   server CPU {cpu_per * 1000:.2f} ms/request")
    baseline = PlainBM25(conn)
    print(f"bm25    {percentiles(timed(lambda q: baseline.search(q, 20), queries, args.rounds))}")
    print(f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    if tmp is not None:
        conn.close()
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
