"""`wsctl admin copy-workspace SRC DST` (engine/workspaces/copy.py): every row and blob of a
workspace into an empty one, secrets sealed under the same key, verified before it says done;
refusals change nothing. Real workspaces, the real CLI; the PostgreSQL directions run where a
PostgreSQL workspace door is built (tests/core/test_copy_workspace_postgres.py)."""
from __future__ import annotations

import io
import os
import sqlite3
import tarfile
from pathlib import Path

from tests.conftest import base_env, make_backend, run_wsctl
from tests.skill_helpers import create, publish_bundle, skill_md, targz
from tests.vault_helpers import TWO_SECRET_TOML, install_service, make_credential

SECRET = "CANARY-copy-secret-0123456789"


def filled(workspace: Path, home: Path) -> dict:
    """A source with something in every area that holds blobs or secrets."""
    b = make_backend("local", workspace, home)
    pid = b.ok("POST", "/v1/projects", {"name": "Moving"})["project"]["id"]
    payload = os.urandom(300_000)
    r = b.api("POST", f"/v1/projects/{pid}/files/bundle",
              raw=targz({"docs/readme.md": "# moving up\n", "data/blob.bin": payload}))
    assert r.status == 200, r.body
    s = create(b, "mover")
    assert publish_bundle(b, s["id"], targz({"SKILL.md": skill_md("mover"), "references/a.md": "a"})).status == 201
    install_service(workspace, TWO_SECRET_TOML)
    cred = make_credential(workspace, b.owner["id"], "twosecret", {"accountSid": "AC1", "authToken": SECRET})
    b.close()
    return {"project": pid, "skill": s["id"], "credential": cred["id"], "payload": payload}


def _rows(path: Path, sql: str) -> list:
    con = sqlite3.connect(path / "workspace.db")
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def _blob_files(path: Path) -> dict[str, bytes]:
    return {p.parent.name + p.name: p.read_bytes() for p in (path / "blobs" / "sha256").glob("*/*")}


def _tree(path: Path) -> dict:
    if not path.exists():
        return {}
    return {str(p.relative_to(path)): (p.stat().st_size, p.stat().st_mtime_ns) for p in path.rglob("*") if p.is_file()}


def test_folder_to_folder_copies_every_row_and_blob_sealed_as_it_was(workspace, home, tmp_path):
    made = filled(workspace, home)
    dst = tmp_path / "moved"
    r = run_wsctl(["admin", "copy-workspace", workspace, dst, "--json"], base_env(home))
    summary = r.json
    assert summary["verified"] is True and summary["target"] == str(dst)
    for table in ("members", "projects", "project_files", "skills", "skill_versions", "credentials", "integrations"):
        (n,) = _rows(workspace, f"SELECT count(*) FROM {table}")[0]
        assert summary["tables"][table]["rows"] == n and n > 0, table
        assert _rows(dst, f"SELECT * FROM {table} ORDER BY 1") == _rows(workspace, f"SELECT * FROM {table} ORDER BY 1")
    # sealed bytes identical (not re-sealed), under the same key; no plaintext secret in the target
    sealed = "SELECT secret_blob FROM credentials ORDER BY id"
    assert _rows(dst, sealed) == _rows(workspace, sealed)
    assert (dst / "master.key").read_bytes() == (workspace / "master.key").read_bytes()
    assert oct((dst / "master.key").stat().st_mode & 0o777) == "0o600"
    assert not any(SECRET.encode() in p.read_bytes() for p in dst.rglob("*") if p.is_file())
    # every blob, byte for byte, and the counts the summary gives
    assert _blob_files(dst) == _blob_files(workspace)
    assert summary["blobs"] == len(_blob_files(workspace)) >= 3
    # the target works: a member signs in, reads the files, unseals the secret
    b = make_backend("local", dst, tmp_path / "home2")
    with tarfile.open(fileobj=io.BytesIO(b.api("GET", f"/v1/projects/{made['project']}/files/bundle").body), mode="r:gz") as tf:
        assert tf.extractfile("data/blob.bin").read() == made["payload"]
    token = b.ok("POST", f"/v1/credentials/{made['credential']}/token", {"reason": "after the move"})
    assert token.get("authToken") == SECRET or SECRET in str(token)
    assert [h["opId"] for h in b.ok("GET", "/v1/operations", query={"q": "send a message"})["operations"]][:1]
    b.close()


def test_refusals_change_nothing(workspace, home, tmp_path):
    filled(workspace, home)
    env = base_env(home)
    before_src = _tree(workspace)
    # a target holding a workspace with members: 6
    taken = tmp_path / "taken"
    run_wsctl(["init", "--workspace", taken], base_env(tmp_path / "h3"))
    before = _tree(taken)
    r = run_wsctl(["admin", "copy-workspace", workspace, taken], env, expect=6)
    assert "not empty" in r.err and "Traceback" not in r.err and r.err.count("\n") == 1
    assert _tree(taken) == before
    # a folder holding something else: 6, and it is left alone
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    run_wsctl(["admin", "copy-workspace", workspace, other], env, expect=6)
    assert [p.name for p in other.iterdir()] == ["notes.txt"]
    # the same workspace twice (spelt differently): 7
    r = run_wsctl(["admin", "copy-workspace", workspace, f"{workspace}/../{workspace.name}/"], env, expect=7)
    assert "same workspace" in r.err
    # no source: 5, and no target made
    r = run_wsctl(["admin", "copy-workspace", tmp_path / "nothing", tmp_path / "new"], env, expect=5)
    assert not (tmp_path / "new").exists() and "wsctl init" in r.err
    assert _tree(workspace) == before_src


def test_a_damaged_source_blob_fails_the_copy_and_leaves_no_target(workspace, home, tmp_path):
    filled(workspace, home)
    victim = sorted((workspace / "blobs" / "sha256").glob("*/*"))[0]
    victim.write_bytes(victim.read_bytes() + b"rot")
    empty = tmp_path / "empty"
    empty.mkdir()
    r = run_wsctl(["admin", "copy-workspace", workspace, empty], base_env(home), expect=1)
    assert "damaged" in r.err and "Traceback" not in r.err
    assert list(empty.iterdir()) == []                      # an empty folder stays an empty folder
    run_wsctl(["admin", "copy-workspace", workspace, tmp_path / "absent"], base_env(home), expect=1)
    assert not (tmp_path / "absent").exists()


def test_a_target_without_the_key_is_refused(workspace, home, tmp_path):
    """The source's key comes from the environment: a copy run without it cannot give the target
    a key for the sealed secrets, so it refuses (3) and leaves nothing."""
    key = "A" * 43 + "="
    env = {**base_env(home), "WSCTL_MASTER_KEY": key}
    src = tmp_path / "keyed"
    run_wsctl(["init", "--workspace", src], env)
    install_service(src, TWO_SECRET_TOML)
    os.environ["WSCTL_MASTER_KEY"] = key
    try:
        from tests.conftest import _owner_and_token

        owner, _ = _owner_and_token(src)
        make_credential(src, owner["id"], "twosecret", {"accountSid": "AC1", "authToken": SECRET})
    finally:
        del os.environ["WSCTL_MASTER_KEY"]
    assert not (src / "master.key").exists()
    r = run_wsctl(["admin", "copy-workspace", src, tmp_path / "nokey"], base_env(home), expect=3)
    assert "WSCTL_MASTER_KEY" in r.err and key not in r.err
    assert not (tmp_path / "nokey").exists()
    out = run_wsctl(["admin", "copy-workspace", src, tmp_path / "withkey", "--json"], env).json
    assert out["verified"] is True and out["tables"]["credentials"]["rows"] == 1
    assert not (tmp_path / "withkey" / "master.key").exists()     # the key stays where it was given
    cred = _rows(tmp_path / "withkey", "SELECT id FROM credentials")[0][0]
    r = run_wsctl(["vault", "token", cred, "--reason", "moved", "--format", "json"],
                  {**env, "WSCTL_WORKSPACE": str(tmp_path / "withkey")})
    assert SECRET in r.out
