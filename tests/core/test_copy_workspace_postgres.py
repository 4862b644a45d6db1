"""`wsctl admin copy-workspace` up to PostgreSQL and back down (engine/workspaces/copy.py): a
folder workspace into an empty database (rows, blobs as chunks in the database, secrets sealed
under the key given by WSCTL_MASTER_KEY), then that database into an empty folder, which must
hold exactly what the first folder held; a non-empty database is refused and left as it was."""
from __future__ import annotations

import os
import sqlite3

import pytest

from tests.conftest import base_env, make_backend, run_wsctl
from tests.core.test_copy_workspace import SECRET, _blob_files
from tests.skill_helpers import create, publish_bundle, skill_md, targz
from tests.vault_helpers import TWO_SECRET_TOML, install_service, make_credential

psycopg = pytest.importorskip("psycopg", reason="psycopg is not installed (pip install 'workspacectl[postgres]')")
KEY = "YmVuY2gta2V5LWJlbmNoLWtleS1iZW5jaC1rZXktMTI="


@pytest.fixture
def empty_db(pg_databases, tmp_path):
    """Makes empty databases on the test server (dropped with the session's others, in a batch)."""
    made = []

    def make() -> str:
        made.append(pg_databases.fresh(tmp_path / f"empty{len(made)}", empty=True))
        return str(made[-1])

    yield make
    for loc in made:
        pg_databases.drop(loc)


def _pg(url: str, sql: str) -> list:
    with psycopg.connect(url) as c:
        return c.execute(sql).fetchall()


def _sqlite(path, sql: str) -> list:
    con = sqlite3.connect(path / "workspace.db")
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_folder_up_to_postgres_and_back_down(tmp_path, empty_db, monkeypatch):
    monkeypatch.setenv("WSCTL_MASTER_KEY", KEY)
    home = tmp_path / "home"
    env = {**base_env(home), "WSCTL_MASTER_KEY": KEY}
    src = tmp_path / "src"
    run_wsctl(["init", "--workspace", src], env)
    b = make_backend("local", src, home)
    pid = b.ok("POST", "/v1/projects", {"name": "Up"})["project"]["id"]
    payload = os.urandom(2_500_000)          # three chunks in the database
    assert b.api("POST", f"/v1/projects/{pid}/files/bundle", raw=targz({"big.bin": payload, "a.md": "a"})).status == 200
    s = create(b, "climber")
    assert publish_bundle(b, s["id"], targz({"SKILL.md": skill_md("climber")})).status == 201
    install_service(src, TWO_SECRET_TOML)
    cred = make_credential(src, b.owner["id"], "twosecret", {"accountSid": "AC1", "authToken": SECRET})["id"]
    b.close()

    url = empty_db()
    up = run_wsctl(["admin", "copy-workspace", src, url, "--json"], env).json
    assert up["verified"] is True
    blobs = _blob_files(src)
    assert _pg(url, "SELECT count(*), sum(size) FROM blob")[0] == (len(blobs), sum(len(v) for v in blobs.values()))
    assert _pg(url, "SELECT count(*) FROM blob_chunk")[0][0] >= len(blobs) + 2
    for table in ("members", "projects", "project_files", "skill_versions", "credentials"):
        assert _pg(url, f"SELECT count(*) FROM {table}")[0][0] == up["tables"][table]["rows"] > 0
    # every copied table was analyzed with the copy: plans fit its rows from the first read
    filled = sorted(name for name, t in up["tables"].items() if t["rows"] > 0)
    analyzed = {r[0] for r in _pg(url, "SELECT DISTINCT tablename FROM pg_stats WHERE schemaname = current_schema()")}
    assert "members" in filled and set(filled) <= analyzed
    # sealed, byte for byte, under the same key; no secret in the clear anywhere in the database
    assert [bytes(r[0]) for r in _pg(url, "SELECT secret_blob FROM credentials ORDER BY id")] == \
        [r[0] for r in _sqlite(src, "SELECT secret_blob FROM credentials ORDER BY id")]
    assert not _pg(url, f"SELECT 1 FROM credentials WHERE position('{SECRET}' in encode(secret_blob, 'escape')) > 0")
    down = tmp_path / "down"                 # straight back down, before anything uses the copy
    back = run_wsctl(["admin", "copy-workspace", url, down, "--json"], env).json
    # opening the database as a source gave it a workspace id (made on first need); all else is as it was
    def but_settings(tables):
        return {name: t for name, t in tables.items() if name != "settings"}

    assert but_settings(back["tables"]) == but_settings(up["tables"]) and back["blobsSha256"] == up["blobsSha256"]
    assert _sqlite(down, "SELECT * FROM settings WHERE key != 'workspace_id' ORDER BY 1") == \
        _sqlite(src, "SELECT * FROM settings ORDER BY 1")
    assert _blob_files(down) == blobs
    for table in ("members", "project_files", "skill_versions", "credentials", "catalog_changes"):
        assert _sqlite(down, f"SELECT * FROM {table} ORDER BY 1") == _sqlite(src, f"SELECT * FROM {table} ORDER BY 1")

    # using it afterwards: the PostgreSQL workspace unseals the secret (same key), from its own rows
    token = run_wsctl(["vault", "token", cred, "--reason", "moved up", "--format", "json"],
                      {**env, "WSCTL_WORKSPACE": url})
    assert SECRET in token.out

    # a non-empty database is refused and stays as it was
    before = _pg(url, "SELECT count(*) FROM members")
    r = run_wsctl(["admin", "copy-workspace", src, url], env, expect=6)
    assert "not empty" in r.err and "Traceback" not in r.err
    assert _pg(url, "SELECT count(*) FROM members") == before

