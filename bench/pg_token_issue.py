"""Token issue throughput on PostgreSQL next to SQLite, with one and with two `wsctl serve`
replicas, against /healthz on the same servers (wrk drives the load).

    python bench/pg_token_issue.py [--seconds 10] [--connections 8] [--postgres URL]
                                   [--stores sqlite,postgres] [--replicas 1,2]

For each store (a folder workspace; a fresh PostgreSQL database) and each replica count (1, 2),
wrk runs `--seconds` against every replica at once, first GET /healthz (the HTTP stack alone),
then POST /v1/credentials/ID/token on an apiKey credential (a real issue each time: a write
transaction taking the writer lock, unsealing the key and writing the audit row). Requests/s are
summed over the replicas; latency p50/p99 is wrk's, of the first replica. CPU per token is
user + system time from /proc over the tokens wrk received: of the `wsctl serve` processes, and
(PostgreSQL) of the database's backends serving them; steadier than requests/s on a shared
machine. `load` is the 1-minute load average when the row started. To measure another checkout's
servers under the same conditions, put its src/ first in PYTHONPATH (the servers inherit it).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))

from bench._harness import cpu_seconds, pg_bench_env, wrk, wrk_summary  # noqa: E402
from tests.conftest import OWNER, base_env, run_wsctl, start_server  # noqa: E402
from tests.vault_helpers import APIKEY_TOML, install_service, make_credential  # noqa: E402

LUA = """
wrk.method = "POST"
wrk.body   = '{"reason": "bench"}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer %s"
"""


def backend_pids(admin_url: str, db: str | None) -> list[int]:
    """The PostgreSQL backends connected to the bench database (the servers' connections)."""
    if db is None:
        return []
    import psycopg

    with psycopg.connect(admin_url, autocommit=True) as c:
        return [r[0] for r in c.execute("SELECT pid FROM pg_stat_activity WHERE datname = %s", (db,))]


def load(urls: list[str], path: str, seconds: int, connections: int, script: Path | None,
         server_pids: list[int], db_cpu) -> dict:
    before = sum(cpu_seconds(p) for p in server_pids)
    db_before = db_cpu()
    procs = [wrk(u + path, seconds, connections, script) for u in urls]
    results = [wrk_summary(p.communicate()[0]) for p in procs]
    requests = max(1, sum(r["requests"] for r in results))
    db_after = db_cpu()
    return {"rps": sum(r["rps"] for r in results), "p50": results[0]["p50"], "p99": results[0]["p99"],
            "errors": sum(r["errors"] for r in results),
            "cpu_us": (sum(cpu_seconds(p) for p in server_pids) - before) / requests * 1e6,
            "db_cpu_us": sum(v - db_before.get(pid, 0.0) for pid, v in db_after.items()) / requests * 1e6}


def owner_session(location: str, home: Path) -> str:
    from workspacectl.engine.db import transaction
    from workspacectl.engine.identity.auth import new_session
    from workspacectl.engine.store import identity
    from workspacectl.engine.workspaces import open_workspace

    ws = open_workspace(location)
    conn = ws.conn()
    owner = identity.first_owner(conn)
    with transaction(conn):
        token, _ = new_session(conn, owner["id"], "bench")
    service = install_service(location, APIKEY_TOML.format(base="http://127.0.0.1:9"))
    cred = make_credential(location, owner["id"], service, {"apiKey": "sk-bench"})
    conn.close()
    return token, cred["id"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--connections", type=int, default=8)
    ap.add_argument("--stores", default="sqlite,postgres")
    ap.add_argument("--replicas", default="1,2")
    ap.add_argument("--postgres", default=os.environ.get("WSCTL_TEST_POSTGRES_URL") or
                    "postgresql://postgres@127.0.0.1:5432/postgres")
    args = ap.parse_args()
    import psycopg

    tmp, key = pg_bench_env("wsctl-pg-token-")
    db = f"wsctl_bench_token_{os.getpid()}"
    with psycopg.connect(args.postgres, autocommit=True) as c:
        c.execute(f"CREATE DATABASE {db}")
    stores = {"sqlite": str(tmp / "ws"), "postgres": args.postgres.rpartition("/")[0] + "/" + db}
    print(f"wrk -c {args.connections} -d {args.seconds}s per replica; requests/s summed over replicas; "
          "CPU in µs per token")
    print(f"{'store':9s} {'replicas':>8s} {'load':>5s} {'healthz rps':>12s} {'token rps':>10s} {'token p50 ms':>13s} "
          f"{'token p99 ms':>13s} {'non-2xx':>8s} {'server CPU':>10s} {'db CPU':>7s}")
    try:
        for store in args.stores.split(","):
            location = stores[store]

            def db_cpu(store=store) -> dict[int, float]:
                return {p: cpu_seconds(p) for p in backend_pids(args.postgres, db if store == "postgres" else None)}

            env = {**base_env(tmp / f"{store}-home"), "WSCTL_MASTER_KEY": key, "WSCTL_BLOB_DIR": str(tmp / "pg-blobs")}
            run_wsctl(["init", "--workspace", location, "--owner-name", OWNER["name"],
                       "--owner-email", OWNER["email"]], env)
            token, cred = owner_session(location, tmp)
            script = tmp / f"{store}.lua"
            script.write_text(LUA % token)
            for replicas in [int(n) for n in args.replicas.split(",")]:
                servers = [start_server(_Loc(location, tmp / f"{store}-{replicas}-{i}"), env,
                                        log=tmp / f"{store}-{replicas}-{i}.log") for i in range(replicas)]
                try:
                    urls, pids = [s.url for s in servers], [s.proc.pid for s in servers]
                    started_at = os.getloadavg()[0]
                    health = load(urls, "/healthz", args.seconds, args.connections, None, pids, db_cpu)
                    issue = load(urls, f"/v1/credentials/{cred}/token", args.seconds, args.connections, script,
                                 pids, db_cpu)
                    print(f"{store:9s} {replicas:8d} {started_at:5.1f} {health['rps']:12.0f} {issue['rps']:10.0f} "
                          f"{issue['p50']:13.1f} {issue['p99']:13.1f} {issue['errors']:8d} "
                          f"{issue['cpu_us']:10.0f} {issue['db_cpu_us']:7.0f}", flush=True)
                finally:
                    for s in servers:
                        s.stop()
    finally:
        with psycopg.connect(args.postgres, autocommit=True) as c:
            c.execute(f"DROP DATABASE IF EXISTS {db} WITH (FORCE)")
    print(json.dumps({"done": True}))


class _Loc(str):
    """A location start_server accepts: its str is served, its parent holds the server's files."""

    def __new__(cls, location: str, folder: Path):
        s = super().__new__(cls, location)
        folder.mkdir(parents=True, exist_ok=True)
        s.parent = folder
        return s


if __name__ == "__main__":
    main()
