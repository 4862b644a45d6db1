"""First page of the big lists on PostgreSQL next to SQLite, at 1,000 and 100,000 rows.

    python bench/pg_lists.py [--sizes 1000,100000] [--rounds 20] [--postgres URL]

For each store and size, the workspace gets that many members, credentials (owned by the owner)
and access-log rows of one credential (written in batches straight through the store's
connection), then GET /v1/members, /v1/credentials and /v1/credentials/ID/access-log (first page,
limit 100) run `--rounds` times in-process through the engine (auth, scope, query, serialization).
Each is read on the freshly loaded tables, then again after ANALYZE (on PostgreSQL autovacuum
analyzes a table soon after a bulk load; until then the planner guesses its row counts).
Prints p50 / p95 in ms. Every list is keyset-paginated (ORDER BY id LIMIT), so the first page
should not grow with the table.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))

from bench._harness import keyed_home  # noqa: E402
from tests.conftest import OWNER, base_env, run_wsctl  # noqa: E402

BATCH = 1000


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p * (len(values) - 1))))] * 1000


def fill(ws, size: int) -> str:
    """`size` members, credentials and access-log rows; answers the logged credential's id."""
    from workspacectl import clock
    from workspacectl.engine.db import transaction
    from workspacectl.engine.ids import new_id
    from workspacectl.engine.store import identity

    conn = ws.conn()
    owner = identity.first_owner(conn)["id"]
    now = clock.now_iso()
    target = new_id("cred")

    def insert(table: str, cols: tuple, rows: list[tuple]) -> None:
        for i in range(0, len(rows), BATCH):
            part = rows[i:i + BATCH]
            marks = ", ".join("(" + ", ".join("?" * len(cols)) + ")" for _ in part)
            conn.execute(f"INSERT INTO {table} ({', '.join(cols)}) VALUES {marks}", [v for r in part for v in r])

    with transaction(conn):
        insert("members", ("id", "name", "email", "role", "created_at"),
               [(new_id("um"), f"M{i}", f"m{i}@bench.example", "member", now) for i in range(size)])
        creds = [(target, "bench", "logged", "apiKey", owner, now, now)]
        creds += [(new_id("cred"), "bench", f"c{i}", "apiKey", owner, now, now) for i in range(size - 1)]
        insert("credentials", ("id", "service", "name", "credential_type", "owner_member_id", "created_at",
                               "updated_at"), creds)
        insert("credential_access_log", ("credential_id", "at", "member_id", "caller_kind", "reason", "outcome"),
               [(target, now, owner, "session", f"r{i}", "issued") for i in range(size)])
    return target


def route_key(route: str) -> str:
    return "entries" if route.endswith("access-log") else route.rsplit("/", 1)[-1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,100000")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--postgres", default=os.environ.get("WSCTL_TEST_POSTGRES_URL") or
                    "postgresql://postgres@127.0.0.1:5432/postgres")
    args = ap.parse_args()
    import psycopg

    from workspacectl.engine.db import transaction
    from workspacectl.engine.dispatch import Engine
    from workspacectl.engine.identity.auth import new_session
    from workspacectl.engine.store import identity
    from workspacectl.engine.workspaces import open_workspace

    tmp, key = keyed_home("wsctl-pg-lists-")
    made = []
    print(f"{'store':9s} {'rows':>7s} {'stats':8s} {'route':28s} {'p50 ms':>7s} {'p95 ms':>7s}")
    try:
        for size in [int(s) for s in args.sizes.split(",")]:
            db = f"wsctl_bench_lists_{os.getpid()}_{size}"
            with psycopg.connect(args.postgres, autocommit=True) as c:
                c.execute(f"CREATE DATABASE {db}")
            made.append(db)
            stores = {"sqlite": str(tmp / f"ws{size}"), "postgres": args.postgres.rpartition("/")[0] + "/" + db}
            for store, location in stores.items():
                env = {**base_env(tmp / "home"), "WSCTL_MASTER_KEY": key}
                run_wsctl(["init", "--workspace", location, "--owner-name", OWNER["name"],
                           "--owner-email", OWNER["email"]], env)
                ws = open_workspace(location)
                cred = fill(ws, size)
                conn = ws.conn()
                with transaction(conn):
                    token, _ = new_session(conn, identity.first_owner(conn)["id"], "bench")
                engine = Engine(ws)
                for stats in ("fresh", "analyzed"):
                    if stats == "analyzed":     # what autovacuum (PostgreSQL) does soon after a bulk load
                        conn.execute("ANALYZE")
                    for route in ("/v1/members", "/v1/credentials", f"/v1/credentials/{cred}/access-log"):
                        lat = []
                        for i in range(args.rounds + 2):
                            t0 = time.perf_counter()
                            r = engine.handle("GET", route, {"limit": "100"}, None, token)
                            if i >= 2:
                                lat.append(time.perf_counter() - t0)
                            assert r.status == 200, r.body
                        assert len(r.body[route_key(route)]) == min(100, size), route
                        shown = route.replace(cred, "ID")
                        print(f"{store:9s} {size:7d} {stats:8s} {shown:28s} {pct(lat, 0.5):7.1f} {pct(lat, 0.95):7.1f}")
                conn.close()
    finally:
        with psycopg.connect(args.postgres, autocommit=True) as c:
            for db in made:
                c.execute(f"DROP DATABASE IF EXISTS {db} WITH (FORCE)")


if __name__ == "__main__":
    main()
