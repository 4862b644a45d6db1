"""The PostgreSQL door against SQLite and against PostgreSQL itself, in one run (issue 27 item 4).

    python bench/pg_door.py [--seconds 5] [--connections 16] [--rounds 1] [--postgres URL]
                            [--configs sqlite:1,postgres:1,postgres:2]

For each configuration (a SQLite folder workspace with one `wsctl serve`; a PostgreSQL workspace
with one replica; the same with two replicas, one wrk per replica at once) wrk (-t2, `--connections`
per replica) drives GET /v1/auth/whoami (a session) and POST /v1/credentials/ID/token (an apiKey
credential: a real issue each time, its audit row written), each right beside a GET /healthz run of
its own (before it in odd rounds, after it in even ones; the ratio is to that neighbour). Then
pgbench runs PostgreSQL's own equivalent of the token's transaction (the credential read the door
runs, the audit INSERT, COMMIT; prepared; `--connections` clients) on the same database, in the
same run: the anchor, and the door's token rate over it is printed.

Printed per row: requests/s summed over the replicas, the ratio to the neighbouring /healthz, the
servers' CPU (user+system from /proc, parent and children) per request, the database backends' CPU per request (PostgreSQL), non-2xx answers, and the 1-minute
load average when the row started (the machine is shared: compare ratios within one run, never
absolute numbers across runs). Every token wrk received must have its audit row: the bench counts
the credential's access-log rows before and after each token row and fails when fewer were added
than tokens received (a few more is normal: requests in flight when wrk stops).
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))

from bench._harness import cpu_seconds, pg_bench_env, wrk, wrk_summary  # noqa: E402
from tests.conftest import OWNER, base_env, run_wsctl, start_server  # noqa: E402
from tests.vault_helpers import APIKEY_TOML, install_service, make_credential  # noqa: E402

GET = 'wrk.headers["Authorization"] = "Bearer %s"\n'
POST = """wrk.method = "POST"
wrk.body   = '{"reason": "bench"}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer %s"
"""


def process_tree(pid: int) -> list[int]:
    """pid and its children (a `serve --workers N` parent has its workers)."""
    out = [pid]
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rpartition(")")[2].split()[1]) == pid:
                out.append(int(entry.name))
    return out


class Db:
    """The bench's PostgreSQL database: backend CPU, the audit rows, pgbench."""

    def __init__(self, admin_url: str, name: str):
        import psycopg

        self.admin_url, self.name = admin_url, name
        self.url = admin_url.rpartition("/")[0] + "/" + name
        with psycopg.connect(admin_url, autocommit=True) as c:
            c.execute(f"CREATE DATABASE {name}")

    def backends_cpu(self) -> dict[int, float]:
        import psycopg

        with psycopg.connect(self.admin_url, autocommit=True) as c:
            pids = [r[0] for r in c.execute("SELECT pid FROM pg_stat_activity WHERE datname = %s "
                                            "AND pid <> pg_backend_pid()", (self.name,))]
        return {p: cpu_seconds(p) for p in pids}

    def drop(self) -> None:
        import psycopg

        with psycopg.connect(self.admin_url, autocommit=True) as c:
            c.execute(f"DROP DATABASE IF EXISTS {self.name} WITH (FORCE)")


def audit_rows(location: str, cred: str) -> int:
    from workspacectl.engine.store.vault import count_access_log
    from workspacectl.engine.workspaces import open_workspace

    ws = open_workspace(location)
    try:
        return count_access_log(ws.conn(), cred)
    finally:
        ws.close()


def token_transaction_sql(cred: str, member: str) -> str:
    """pgbench's script: what a token issue's transaction runs on PostgreSQL, values inlined."""
    from workspacectl.engine.db.postgres import translate
    from workspacectl.engine.store import vault

    def literal(v: str) -> str:
        return "'" + v.replace("'", "''") + "'"

    read = translate(vault._TO_ISSUE).replace("%(cred)s", literal(cred)).replace("%(member)s", literal(member))
    read = read.replace("%%", "%")
    insert = ("INSERT INTO credential_access_log (credential_id, at, member_id, key_id, caller_kind, reason, "
              f"fields_json, outcome) VALUES ({literal(cred)}, CAST(now() AS text), "
              f"{literal(member)}, NULL, 'session', 'bench', '[\"apiKey\"]', 'issued')")
    return f"BEGIN;\n{read};\n{insert};\nCOMMIT;\n"


def pgbench(db: Db, script: Path, seconds: int, clients: int) -> float:
    run = subprocess.run(["pgbench", "-n", "-M", "prepared", "-c", str(clients), "-j", "2", "-T", str(seconds),
                          "-f", str(script), db.url], capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"pgbench failed: {run.stderr.strip()[-500:]}")
    return float(re.search(r"tps = ([\d.]+)", run.stdout).group(1))


def setup(location: str, env: dict, tmp: Path) -> tuple[str, str, str]:
    """(session token, credential id, owner member id) of a fresh workspace at location."""
    from workspacectl.engine.db import transaction
    from workspacectl.engine.identity.auth import new_session
    from workspacectl.engine.store import identity
    from workspacectl.engine.workspaces import open_workspace

    run_wsctl(["init", "--workspace", location, "--owner-name", OWNER["name"], "--owner-email", OWNER["email"]], env)
    ws = open_workspace(location)
    conn = ws.conn()
    owner = identity.first_owner(conn)
    with transaction(conn):
        token, _ = new_session(conn, owner["id"], "bench")
    service = install_service(location, APIKEY_TOML.format(base="http://127.0.0.1:9"))
    cred = make_credential(location, owner["id"], service, {"apiKey": "sk-bench"})
    ws.close()
    return token, cred["id"], owner["id"]


class _Loc(str):
    """A location start_server accepts: its str is served, its parent holds the server's files."""

    def __new__(cls, location: str, folder: Path):
        s = super().__new__(cls, location)
        folder.mkdir(parents=True, exist_ok=True)
        s.parent = folder
        return s


def drive(urls: list[str], path: str, args, script: Path | None, pids: list[int], db: Db | None) -> dict:
    procs = [q for p in pids for q in process_tree(p)]
    before = sum(cpu_seconds(p) for p in procs)
    db_before = db.backends_cpu() if db else {}
    load = os.getloadavg()[0]
    results = [wrk_summary(p.communicate()[0]) for p in [wrk(u + path, args.seconds, args.connections, script)
                                                     for u in urls]]
    requests = max(1, sum(r["requests"] for r in results))
    db_after = db.backends_cpu() if db else {}
    return {"rps": sum(r["rps"] for r in results), "requests": requests, "load": load,
            "errors": sum(r["errors"] for r in results),
            "cpu_us": (sum(cpu_seconds(p) for p in procs) - before) / requests * 1e6,
            "db_us": sum(v - db_before.get(p, 0.0) for p, v in db_after.items()) / requests * 1e6}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--connections", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--configs", default="sqlite:1,postgres:1,postgres:2")
    ap.add_argument("--postgres", default=os.environ.get("WSCTL_TEST_POSTGRES_URL") or
                    "postgresql://postgres@127.0.0.1:5432/postgres")
    args = ap.parse_args()
    tmp, key = pg_bench_env("wsctl-pg-door-")
    configs = [(c.split(":")[0], int(c.split(":")[1])) for c in args.configs.split(",")]
    db = Db(args.postgres, f"wsctl_bench_door_{os.getpid()}") if any(s == "postgres" for s, _ in configs) else None
    env = {**base_env(tmp / "env-home"), "WSCTL_MASTER_KEY": key, "WSCTL_BLOB_DIR": str(tmp / "pg-blobs")}
    made: dict[str, tuple] = {}
    anchor = None
    print(f"uptime: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
    print(f"wrk -t2 -c{args.connections} -d{args.seconds}s per replica (one wrk per replica at once); rps summed; "
          "CPU in µs per request (server / database backends); load = 1-min load average at the row's start")
    print(f"{'round':>5s} {'store':8s} {'rep':>3s} {'path':8s} {'load':>5s} {'req/s':>8s} {'ratio':>6s} "
          f"{'CPU/req':>8s} {'db/req':>7s} {'non2xx':>6s}")
    failures = []
    tokens_rps: dict = {}
    try:
        for rnd in range(1, args.rounds + 1):
            for store, replicas in configs:
                location = str(tmp / "ws") if store == "sqlite" else db.url
                if store not in made:
                    made[store] = setup(location, env, tmp)
                token, cred, _ = made[store]
                get, post = tmp / f"{store}-get.lua", tmp / f"{store}-post.lua"
                get.write_text(GET % token)
                post.write_text(POST % token)
                servers = [start_server(_Loc(location, tmp / f"{store}-{replicas}-{rnd}-{i}"), env,
                                        log=tmp / f"{store}-{replicas}-{rnd}-{i}.log") for i in range(replicas)]
                try:
                    urls, pids = [s.url for s in servers], [s.proc.pid for s in servers]
                    print(f"# {store} x{replicas}: server pids {' '.join(map(str, pids))} (py-spy record -p PID)",
                          flush=True)
                    paths = {"healthz": ("/healthz", None), "whoami": ("/v1/auth/whoami", get),
                             "token": (f"/v1/credentials/{cred}/token", post)}
                    # each path right beside a /healthz of its own (before it in odd rounds, after it in
                    # even ones): on a shared machine the load moves within seconds, so a ratio is
                    # taken between neighbours, never across the whole configuration
                    for what in ("whoami", "token"):
                        rows = {}
                        for step in (("healthz", what) if rnd % 2 else (what, "healthz")):
                            before = audit_rows(location, cred) if step == "token" else 0
                            rows[step] = drive(urls, paths[step][0], args, paths[step][1], pids,
                                               db if store == "postgres" else None)
                            if step == "token":
                                added = audit_rows(location, cred) - before
                                rows[step]["audit"] = added
                                if added < rows[step]["requests"] - rows[step]["errors"]:
                                    failures.append(f"{store}:{replicas} round {rnd}: {added} audit rows for "
                                                    f"{rows[step]['requests']} tokens")
                        for step in ("healthz", what):
                            r = rows[step]
                            ratio = r["rps"] / rows["healthz"]["rps"]
                            extra = f"  audit rows +{r['audit']} for {r['requests']} tokens" if step == "token" else ""
                            print(f"{rnd:5d} {store:8s} {replicas:3d} {step:8s} {r['load']:5.1f} {r['rps']:8.0f} "
                                  f"{ratio:6.2f} {r['cpu_us']:8.0f} {r['db_us']:7.0f} {r['errors']:6d}{extra}",
                                  flush=True)
                        if what == "token":
                            tokens_rps[(store, replicas)] = rows["token"]["rps"]
                finally:
                    for s in servers:
                        s.stop()
            if db is not None and "postgres" in made:
                _, cred, member = made["postgres"]
                script = tmp / "token.sql"
                script.write_text(token_transaction_sql(cred, member))
                load = os.getloadavg()[0]
                anchor = pgbench(db, script, args.seconds, args.connections)
                print(f"{rnd:5d} pgbench  {'':3s} {'token tx':8s} {load:5.1f} {anchor:8.0f}   (the anchor: "
                      "PostgreSQL alone running the token's transaction, prepared)", flush=True)
                for (store, replicas), rps in sorted(tokens_rps.items()):
                    if store == "postgres":
                        print(f"{rnd:5d} {store:8s} {replicas:3d} token / pgbench = {rps / anchor:.2f}", flush=True)
    finally:
        if db is not None:
            db.drop()
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        sys.exit("audit rows missing: " + "; ".join(failures))


if __name__ == "__main__":
    main()
