"""Where a token issue's CPU goes, in-process, on SQLite next to PostgreSQL (one run).

    python bench/pg_token_profile.py [--n 2000] [--postgres URL] [--profile 25]

For each store (a folder workspace; a fresh PostgreSQL database), one thread issues `--n` tokens
for an apiKey credential through the engine (Engine.handle: auth, route, transaction, unseal,
audit row), after a warm-up. Prints per token: this process's CPU (user + system), the
PostgreSQL backend's CPU (/proc of pg_backend_pid(), same machine), the wall time, and the
statements and round trips the door sent (counted on the psycopg cursor). `--profile K` adds a
cProfile of the PostgreSQL run, top K functions by own time. Checks one audit row per token.
"""
from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))

from bench._harness import cpu_seconds, keyed_home  # noqa: E402
from tests.conftest import OWNER, base_env, run_wsctl  # noqa: E402
from tests.vault_helpers import APIKEY_TOML, install_service, make_credential  # noqa: E402


def count_round_trips():
    """Count what the door sends on psycopg: statements (each cursor execute, and each statement
    of a multi-statement message) and round trips (an execute outside a pipeline, or a pipeline
    block: its statements go together and are answered together). Answers the counters."""
    import contextlib

    import psycopg

    counts = {"round trips": 0, "statements": 0}
    for cls in (psycopg.Cursor, psycopg.ClientCursor):
        for name in ("execute", "executemany"):
            original = cls.__dict__.get(name)
            if original is None:
                continue

            def wrapped(self, query, *args, _original=original, **kwargs):
                text = query if isinstance(query, str) else str(query)
                counts["statements"] += max(1, text.count("; ") + 1)
                counts["round trips"] += 0 if self.connection._pipeline else 1
                return _original(self, query, *args, **kwargs)
            setattr(cls, name, wrapped)
    pipeline = psycopg.Connection.pipeline

    @contextlib.contextmanager
    def counted_pipeline(self):
        outer = self._pipeline is None
        with pipeline(self) as p:
            yield p
        counts["round trips"] += 1 if outer else 0
    psycopg.Connection.pipeline = counted_pipeline
    return counts


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--postgres", default=os.environ.get("WSCTL_TEST_POSTGRES_URL") or
                    "postgresql://postgres@127.0.0.1:5432/postgres")
    ap.add_argument("--profile", type=int, default=0)
    ap.add_argument("--stores", default="sqlite,postgres")
    ap.add_argument("--keep", action="store_true", help="keep the PostgreSQL database (printed)")
    args = ap.parse_args()
    import psycopg

    from workspacectl.engine.db import transaction
    from workspacectl.engine.dispatch import Engine
    from workspacectl.engine.identity.auth import new_session
    from workspacectl.engine.store import identity
    from workspacectl.engine.workspaces import open_workspace

    tmp, key = keyed_home("wsctl-pg-token-")
    db = f"wsctl_bench_token_{os.getpid()}"
    counts = count_round_trips()
    print(f"{'store':9s} {'client CPU µs':>13s} {'db CPU µs':>9s} {'wall µs':>8s} {'round trips':>11s} "
          f"{'statements':>10s}   (per token, n={args.n}, load {os.getloadavg()[0]:.1f})")
    try:
        with psycopg.connect(args.postgres, autocommit=True) as c:
            c.execute(f"CREATE DATABASE {db}")
        locations = {"sqlite": str(tmp / "ws"), "postgres": args.postgres.rpartition("/")[0] + "/" + db}
        for store in args.stores.split(","):
            location = locations[store]
            env = {**base_env(tmp / "home"), "WSCTL_MASTER_KEY": key}
            run_wsctl(["init", "--workspace", location, "--owner-name", OWNER["name"],
                       "--owner-email", OWNER["email"]], env)
            ws = open_workspace(location)
            conn = ws.conn()
            owner = identity.first_owner(conn)["id"]
            with transaction(conn):
                session, _ = new_session(conn, owner, "bench")
            install_service(location, APIKEY_TOML.format(base="http://127.0.0.1:9"))
            cred = make_credential(location, owner, "keysvc", {"apiKey": "sk-bench"})["id"]
            ws = open_workspace(location)
            engine = Engine(ws)
            route = f"/v1/credentials/{cred}/token"
            for _ in range(50):
                assert engine.handle("POST", route, None, {"reason": "bench"}, session).status == 200
            conn = ws.conn()
            backend = conn.execute("SELECT pg_backend_pid()").fetchone()[0] if store == "postgres" else None
            rows_before = conn.execute("SELECT count(*) FROM credential_access_log").fetchone()[0]
            counts.update({"round trips": 0, "statements": 0})
            prof = cProfile.Profile(time.process_time) if args.profile and store == "postgres" else None
            db_cpu0 = cpu_seconds(backend) if backend else 0.0
            cpu0, wall0 = time.process_time(), time.perf_counter()
            if prof:
                prof.enable()
            for _ in range(args.n):
                r = engine.handle("POST", route, None, {"reason": "bench"}, session)
                assert r.status == 200, r.body
            if prof:
                prof.disable()
            cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
            db_cpu = (cpu_seconds(backend) - db_cpu0) if backend else 0.0
            trips, statements = counts["round trips"], counts["statements"]
            rows = conn.execute("SELECT count(*) FROM credential_access_log").fetchone()[0] - rows_before
            assert rows == args.n, (rows, args.n)
            n = args.n
            print(f"{store:9s} {cpu / n * 1e6:13.0f} {db_cpu / n * 1e6:9.0f} {wall / n * 1e6:8.0f} "
                  f"{trips / n:11.2f} {statements / n:10.2f}" + ("   (under cProfile)" if prof else ""))
            if prof:
                pstats.Stats(prof).sort_stats("tottime").print_stats(args.profile)
            conn.close()
    finally:
        if args.keep:
            print(f"kept database {db}; WSCTL_MASTER_KEY={key}")
        else:
            with psycopg.connect(args.postgres, autocommit=True) as c:
                c.execute(f"DROP DATABASE IF EXISTS {db} WITH (FORCE)")


if __name__ == "__main__":
    main()
