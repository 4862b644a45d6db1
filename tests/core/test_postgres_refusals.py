"""A PostgreSQL workspace whose database refuses for want of resources (SQLSTATE class 53: disk
full, out of memory, too many connections) or for a system error (class 58: an I/O error) answers
as a SQLite workspace whose disk refuses a write: 503 `unreachable`, one line saying nothing was
saved and to retry later, the CLI exits 8, and nothing of the request is written.

The statement-level refusals come from a real trigger on the test's own database that raises
the SQLSTATE; the connection-level one from a real role whose CONNECTION LIMIT is lowered to 0
once the server runs, so only a connection opened afterwards is refused."""
from __future__ import annotations

import threading

import httpx
import psycopg
import pytest

from tests.conftest import PgLocation, base_env, make_backend, pg_env, run_wsctl, start_server, wait_until
from tests.project_helpers import make_project
from tests.skill_helpers import create, put_url, skill_md, targz
from tests.vault_helpers import APIKEY_TOML, install_service, make_credential


def _sql(url: str, statement: str, params=()):
    with psycopg.connect(url, autocommit=True) as c:
        cur = c.execute(statement, params)
        return cur.fetchall() if cur.description else None


def _refuse(url: str, table: str, sqlstate: str) -> None:
    """Every INSERT into `table` fails with `sqlstate`, as the database server would report it."""
    _sql(url, "CREATE OR REPLACE FUNCTION wsctl_test_refuse() RETURNS trigger LANGUAGE plpgsql AS $$ "
              "BEGIN RAISE EXCEPTION 'refused for the test' USING ERRCODE = TG_ARGV[0]; END $$")
    _sql(url, f"CREATE TRIGGER wsctl_test_refuse BEFORE INSERT ON {table} FOR EACH ROW "
              f"EXECUTE FUNCTION wsctl_test_refuse('{sqlstate}')")


def _allow(url: str, table: str) -> None:
    _sql(url, f"DROP TRIGGER wsctl_test_refuse ON {table}")


def _assert_refused(status: int, body: dict, cause: str) -> None:
    assert status == 503, body
    err = body["error"]
    assert err["code"] == "unreachable" and err["status"] == 503
    assert err["message"].startswith("The workspace could not be written (PostgreSQL: ")
    assert cause in err["message"] and err["message"].endswith("nothing was saved, retry later.")
    assert "\n" not in err["message"] and "refused for the test" not in err["message"]


def _assert_cli_refused(result, cause: str) -> None:
    assert result.code == 8, result
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and cause in lines[0] and "retry later" in lines[0], result.err
    assert "Traceback" not in result.err


@pytest.fixture
def pg_served(pg_workspace, pg_databases, home, tmp_path):
    """A backend on `wsctl serve` over a fresh PostgreSQL workspace."""
    env = {**pg_env(tmp_path / "server-home", pg_databases), "WSCTL_BLOB_DIR": str(pg_workspace / "blobs")}
    server = start_server(pg_workspace, env, log=tmp_path / "server.log", args=("--memory-interval", "0"))
    b = make_backend("remote", pg_workspace, home, server=server)
    try:
        yield b
    finally:
        b.close()
    assert "Traceback" not in server.log_text()


@pytest.mark.parametrize("sqlstate,cause", [("53100", "disk full"), ("53200", "out of memory"),
                                            ("58030", "I/O error")])
def test_a_refused_sign_in_uses_no_login_code_and_makes_no_session(pg_served, tmp_path, sqlstate, cause):
    """Exchanging a login code marks the code used, then writes the session: the refused session
    row takes the code's use with it, so the same code signs in once the database accepts writes."""
    b, url = pg_served, str(pg_served.workspace)
    code = b.ok("POST", f"/v1/members/{b.owner['id']}/login-codes")["code"]
    sessions = _sql(url, "SELECT count(*) FROM secrets")[0][0]
    _refuse(url, "secrets", sqlstate)
    r = b.api("POST", "/v1/auth/session", {"code": code}, secret="")
    _assert_refused(r.status, r.body, cause)
    cli = run_wsctl(["auth", "login", "--server", b.base_url, "--code", code], base_env(tmp_path / "cli-home"),
                    expect=None)
    _assert_cli_refused(cli, cause)
    assert _sql(url, "SELECT count(*) FROM secrets")[0][0] == sessions
    assert _sql(url, "SELECT count(*) FROM login_codes WHERE used_at IS NOT NULL")[0][0] == 0
    _allow(url, "secrets")
    assert b.api("POST", "/v1/auth/session", {"code": code}, secret="").status == 201


def test_a_refused_token_issue_releases_no_token_and_logs_no_row(pg_served, tmp_path):
    """No audit row, no token: the row is refused with a full disk, the answer carries no secret."""
    b, url = pg_served, str(pg_served.workspace)
    install_service(b.workspace, APIKEY_TOML.format(base="http://127.0.0.1:9"))
    cred = make_credential(b.workspace, b.owner["id"], "keysvc", {"apiKey": "sk-quick"},
                           fields={"instanceUrl": "https://keysvc.example"})["id"]
    path = f"/v1/credentials/{cred}/token"
    assert b.api("POST", path, {"reason": "before"}).status == 200
    _refuse(url, "credential_access_log", "53100")
    r = b.api("POST", path, {"reason": "refused"})
    _assert_refused(r.status, r.body, "disk full")
    assert "sk-quick" not in str(r.body)
    cli = b.wsctl("vault", "token", cred, "--reason", "cli refused", expect=None)
    _assert_cli_refused(cli, "disk full")
    assert "sk-quick" not in cli.out + cli.err
    assert _sql(url, "SELECT reason FROM credential_access_log WHERE credential_id = %s", (cred,)) == [("before",)]
    _allow(url, "credential_access_log")
    assert b.api("POST", path, {"reason": "after"}).body["apiKey"] == "sk-quick"


def test_a_refused_blob_chunk_leaves_no_file_and_no_blob(pg_served, tmp_path):
    """A bundle whose bytes the database refuses (the binary COPY of its chunks, SQL run on the
    session itself): 503, no file row, no blob row, over HTTP and `wsctl specialist files bundle upload`."""
    b, url = pg_served, str(pg_served.workspace)
    pid = make_project(b, "Refused")
    blobs = _sql(url, "SELECT (SELECT count(*) FROM blob), (SELECT count(*) FROM blob_chunk)")
    _refuse(url, "blob_chunk", "53100")
    r = b._http.post(f"/v1/projects/{pid}/files/bundle", content=targz({"a.md": "refused"}),
                     headers={"Authorization": f"Bearer {b.owner_token}", "Content-Type": "application/gzip"})
    _assert_refused(r.status_code, r.json(), "disk full")
    folder = tmp_path / "bundle"
    folder.mkdir()
    (folder / "b.md").write_text("refused too")
    _assert_cli_refused(b.wsctl("specialist", "files", "bundle", "upload", pid, str(folder), expect=None), "disk full")
    assert b.ok("GET", f"/v1/projects/{pid}/files")["files"] == []
    assert _sql(url, "SELECT (SELECT count(*) FROM blob), (SELECT count(*) FROM blob_chunk)") == blobs
    _allow(url, "blob_chunk")
    b.wsctl("specialist", "files", "bundle", "upload", pid, str(folder))
    assert [f["path"] for f in b.ok("GET", f"/v1/projects/{pid}/files")["files"]] == ["b.md"]


def test_a_session_the_database_ended_costs_one_503_then_a_new_one_is_opened(pg_served):
    """The database ends the server's session (pg_terminate_backend, as a restart or failover
    does): the request that finds it gone is 503 saying to retry (whether a change in flight landed
    is unknown, so it does not say nothing was saved), and the next one runs on a new session."""
    b, url = pg_served, str(pg_served.workspace)
    assert b.ok("GET", "/v1/members")["members"]
    db = url.rpartition("/")[2]
    ended = _sql(url, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s "
                      "AND application_name = 'wsctl' AND pid <> pg_backend_pid()", (db,))
    assert ended and all(ok for (ok,) in ended)
    r = b.api("GET", "/v1/members")
    assert r.status == 503, r.body
    message = r.body["error"]["message"]
    assert r.body["error"]["code"] == "unreachable" and "\n" not in message
    assert "connection lost" in message and "retry later" in message and "nothing was saved" not in message
    assert b.ok("GET", "/v1/members")["members"]
    assert b.add_member("after@example.com")["email"] == "after@example.com"


def test_the_hosted_pages_answer_a_refused_write_with_503(pg_served):
    """The sign-in link and the presigned skill upload run engine work outside the /v1 routes:
    a refused write there is 503 too (a page saying to retry, the upload's JSON error), the link
    and the upload stay unused, and both work once the database accepts writes."""
    b, url = pg_served, str(pg_served.workspace)
    link = b.ok("POST", "/v1/auth/web-link", {"next": "/docs"})["url"]
    sid = create(b, "pg-refused")["id"]
    up = b.ok("POST", f"/v1/skills/{sid}/bundle-upload-url")
    bundle = targz({"SKILL.md": skill_md("pg-refused"), "x.txt": "x"})
    _refuse(url, "secrets", "53100")
    _refuse(url, "blob_chunk", "53100")
    with httpx.Client(trust_env=False, timeout=60) as browser:
        page = browser.get(link, follow_redirects=False)
        assert page.status_code == 503 and "set-cookie" not in page.headers
        assert "retry later" in page.text and "disk full" in page.text
        refused = browser.put(up["url"], content=bundle)
        _assert_refused(refused.status_code, refused.json(), "disk full")
        _allow(url, "secrets")
        _allow(url, "blob_chunk")
        assert browser.get(link, follow_redirects=False).status_code == 303
    assert put_url(up["url"], bundle) == 200
    b.ok("POST", f"/v1/skills/{sid}/publish", {"uploadId": up["uploadId"]})
    assert b.ok("GET", f"/v1/skills/{sid}")["version"] == 1


def test_the_local_door_answers_a_refused_write_alike(pg_workspace, pg_databases, home):
    """A local command on the PostgreSQL workspace (no server): exit 8, one line, no member."""
    url = str(pg_workspace)
    _refuse(url, "members", "53100")
    env = {**pg_env(home, pg_databases), "WSCTL_WORKSPACE": url}
    cli = run_wsctl(["members", "add", "rita@example.com", "--name", "Rita"], env, expect=None)
    _assert_cli_refused(cli, "disk full")
    assert _sql(url, "SELECT count(*) FROM members WHERE email = 'rita@example.com'")[0][0] == 0
    _allow(url, "members")
    run_wsctl(["members", "add", "rita@example.com", "--name", "Rita"], env)


def test_the_timer_logs_one_line_per_refused_tick_and_goes_on(pg_workspace, pg_databases, tmp_path):
    """The server's timer (memory agent and housekeeping) whose lease write the database refuses
    logs one warning line a tick, no traceback, and takes the lease once writes are accepted."""
    url = str(pg_workspace)
    _refuse(url, "leases", "53100")
    _sql(url, "CREATE TRIGGER wsctl_test_refuse_update BEFORE UPDATE ON leases FOR EACH ROW "
              "EXECUTE FUNCTION wsctl_test_refuse('53100')")
    env = {**pg_env(tmp_path / "server-home", pg_databases), "WSCTL_BLOB_DIR": str(pg_workspace / "blobs")}
    server = start_server(pg_workspace, env, log=tmp_path / "server.log", args=("--memory-interval", "0.2"))
    refused = "timer: could not take or renew the server-timer lease (The workspace could not be written (PostgreSQL: disk full"
    try:
        wait_until(lambda: server.log_text().count(refused) >= 2, "two refused timer ticks", server.proc, server.log)
        _allow(url, "leases")
        _sql(url, "DROP TRIGGER wsctl_test_refuse_update ON leases")
        wait_until(lambda: "timer: this process now runs" in server.log_text(), "the timer taking its lease",
                   server.proc, server.log)
    finally:
        server.stop()
    text = server.log_text()
    assert "Traceback" not in text
    assert all(line.endswith("retrying next tick") for line in text.splitlines() if refused in line)


@pytest.fixture
def limited_role(pg_databases):
    """A login role that may use the test databases as their owner does (a member of it), but is not
    a superuser, so a CONNECTION LIMIT applies to it."""
    name = pg_databases.prefix + "limited"
    _sql(pg_databases.admin_url, f"CREATE ROLE {name} LOGIN")
    _sql(pg_databases.admin_url, f"GRANT {_sql(pg_databases.admin_url, 'SELECT current_user')[0][0]} TO {name}")
    try:
        yield name
    finally:
        _sql(pg_databases.admin_url, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s",
             (name,))
        wait_until(lambda: not _sql(pg_databases.admin_url, "SELECT 1 FROM pg_stat_activity WHERE usename = %s",
                                    (name,)), "the limited role's sessions to end")
        _sql(pg_databases.admin_url, f"DROP ROLE {name}")


def _as_role(url: str, role: str) -> str:
    scheme, _, rest = url.partition("://")
    return f"{scheme}://{role}@{rest.partition('@')[2]}"


@pytest.fixture
def served_as_limited_role(pg_workspace, pg_databases, limited_role, home, tmp_path):
    """(backend, its URL as the limited role): `wsctl serve` connected as that role."""
    url = _as_role(str(pg_workspace), limited_role)
    env = {**pg_env(tmp_path / "server-home", pg_databases), "WSCTL_BLOB_DIR": str(pg_workspace / "blobs"),
           "WSCTL_BUSY_TIMEOUT_MS": "600000"}
    server = start_server(PgLocation(url, tmp_path), env, log=tmp_path / "server.log",
                          args=("--memory-interval", "0"))
    b = make_backend("remote", pg_workspace, home, server=server)
    try:
        yield b, url
    finally:
        b.close()
        _sql(str(pg_workspace), f"ALTER ROLE {limited_role} CONNECTION LIMIT -1")
    assert "Traceback" not in server.log_text()


def test_a_connection_refused_for_too_many_connections_answers_503(served_as_limited_role, pg_databases,
                                                                   limited_role, home):
    """The server runs as a role whose connection limit drops to 0 once it is up: what it had open
    goes on working; a request that needs a new connection (an engine thread added while the only
    one waits for the writer lock) is 503 saying to retry later, and so is a local command. The
    waiting write then completes, once."""
    b, url = served_as_limited_role
    admin = str(b.workspace)
    assert b.ok("GET", "/v1/members")["members"]
    _sql(admin, f"ALTER ROLE {limited_role} CONNECTION LIMIT 0")
    cli = run_wsctl(["members", "list"], {**pg_env(home, pg_databases), "WSCTL_WORKSPACE": url}, expect=None)
    assert cli.code == 8 and len(cli.err.strip().splitlines()) == 1, cli
    assert "too many connections" in cli.err and "retry later" in cli.err and "Traceback" not in cli.err
    added = {}
    with psycopg.connect(admin) as holder:      # holds the writer lock: the write waits
        holder.execute("SELECT pg_advisory_xact_lock(%s, %s)", (0x77736374, 1))
        writer = threading.Thread(target=lambda: added.setdefault(
            "r", b.api("POST", "/v1/members", {"email": "wanda@example.com", "name": "Wanda"})))
        writer.start()
        wait_until(lambda: _sql(admin, "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid) "
                                "WHERE a.usename = %s AND l.locktype = 'advisory' AND NOT l.granted",
                                (limited_role,))[0][0] == 1, "the write waiting for the writer lock")
        with httpx.Client(base_url=b.base_url, trust_env=False, timeout=60,
                          headers={"Authorization": f"Bearer {b.owner_token}"}) as c:
            r = c.get("/v1/members")
    writer.join(60)
    assert r.status_code == 503, r.text
    message = r.json()["error"]["message"]
    assert r.json()["error"]["code"] == "unreachable" and "\n" not in message
    assert "too many connections" in message and message.endswith("retry later.")
    assert added["r"].status == 201
    assert _sql(admin, "SELECT count(*) FROM members WHERE email = 'wanda@example.com'")[0][0] == 1


def test_a_refused_read_while_authenticating_answers_503(served_as_limited_role, tmp_path):
    """The read of the presented key itself refused (out of memory: a row-level security policy on
    the secrets table that raises 53200, which binds the server's role but not the superuser's): 503
    for an API call, for an upload refused before its body is read, and exit 8 for the CLI."""
    b, _ = served_as_limited_role
    admin = str(b.workspace)
    pid = make_project(b, "Before")
    # A session the server has never looked up: a replica's authentication cache (engine/db/
    # pg_auth_cache.py) may answer one it has seen without reading secrets at all, rightly.
    fresh = b.session()
    _sql(admin, "CREATE FUNCTION wsctl_test_refuse_read() RETURNS boolean LANGUAGE plpgsql AS $$ "
                "BEGIN RAISE EXCEPTION 'refused for the test' USING ERRCODE = '53200'; END $$")
    _sql(admin, "CREATE POLICY wsctl_test_refuse ON secrets USING (wsctl_test_refuse_read())")
    _sql(admin, "ALTER TABLE secrets ENABLE ROW LEVEL SECURITY")
    _sql(admin, "ALTER TABLE secrets FORCE ROW LEVEL SECURITY")
    r = b.api("GET", "/v1/members", secret=fresh)
    _assert_refused(r.status, r.body, "out of memory")
    up = b._http.post(f"/v1/projects/{pid}/files/bundle", content=targz({"a.md": "a"}),
                      headers={"Authorization": f"Bearer {fresh}", "Content-Type": "application/gzip"})
    _assert_refused(up.status_code, up.json(), "out of memory")
    _assert_cli_refused(b.wsctl("members", "list", env=b.env_for(fresh), expect=None), "out of memory")
    _sql(admin, "ALTER TABLE secrets DISABLE ROW LEVEL SECURITY")
    assert b.ok("GET", "/v1/members")["members"]
    assert b.ok("GET", f"/v1/projects/{pid}/files")["files"] == []


@pytest.mark.parametrize("table", ["members", "secrets"])
def test_a_local_command_whose_opening_read_is_refused_exits_8(served_as_limited_role, pg_databases, home, table):
    """The local door reads before any route when it opens the workspace: whether it holds one
    (members), and the caller (the presented key in secrets): a refused read there (the same
    raising policy) is exit 8 and one line, not a bug's exit 1."""
    b, url = served_as_limited_role
    admin = str(b.workspace)
    env = {**pg_env(home, pg_databases), "WSCTL_WORKSPACE": url,
           "WSCTL_API_KEY": b.key("personal", ["projects:manage"])}
    run_wsctl(["specialist", "list"], env)
    _sql(admin, "CREATE FUNCTION wsctl_test_refuse_read() RETURNS boolean LANGUAGE plpgsql AS $$ "
                "BEGIN RAISE EXCEPTION 'refused for the test' USING ERRCODE = '58030'; END $$")
    _sql(admin, f"CREATE POLICY wsctl_test_refuse ON {table} USING (wsctl_test_refuse_read())")
    _sql(admin, f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
    _sql(admin, f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY")
    try:
        _assert_cli_refused(run_wsctl(["specialist", "list"], env, expect=None), "I/O error")
    finally:
        _sql(admin, f"ALTER TABLE {table} DISABLE ROW LEVEL SECURITY")
    run_wsctl(["specialist", "list"], env)
