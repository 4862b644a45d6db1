"""`wsctl skill ...` through the real CLI on both backends; publish DIR... is idempotent."""
from __future__ import annotations

import json

from tests.skill_helpers import skill_md


def _folder(root, name, extra_files=None, description="Does a thing. Use when testing."):
    d = root / name
    (d / "scripts").mkdir(parents=True)
    (d / "SKILL.md").write_text(skill_md(name, description))
    (d / "scripts" / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (d / "scripts" / "run.sh").chmod(0o755)
    for p, c in (extra_files or {}).items():
        (d / p).parent.mkdir(parents=True, exist_ok=True)
        (d / p).write_text(c)
    return d


def test_publish_creates_then_is_unchanged_then_publishes(backend, tmp_path):
    b = backend
    one, two = _folder(tmp_path, "ci-one"), _folder(tmp_path, "ci-two")
    r = b.wsctl("skill", "publish", one, two)
    assert r.out.splitlines() == ["ci-one: created, published v1", "ci-two: created, published v1"]
    r = b.wsctl("skill", "publish", one, two)
    assert r.out.splitlines() == ["ci-one: unchanged (v1)", "ci-two: unchanged (v1)"]
    assert [v["number"] for v in b.ok("GET", "/v1/skills/ci-one/versions")["versions"]] == [1]
    (one / "references").mkdir()
    (one / "references" / "more.md").write_text("more\n")
    r = b.wsctl("skill", "publish", one, two, "--json")
    results = r.json["results"]
    assert [(x["name"], x["outcome"]) for x in results] == [("ci-one", "published"), ("ci-two", "unchanged")]
    assert results[0]["version"]["number"] == 2 and results[1]["version"] is None
    # pull gives the folder back, executable bit included
    out = tmp_path / "pulled"
    b.wsctl("skill", "pull", "ci-one", out)
    assert (out / "references" / "more.md").read_text() == "more\n"
    assert (out / "scripts" / "run.sh").stat().st_mode & 0o111
    r = b.wsctl("skill", "publish", out)     # the pulled copy equals the live version
    assert r.out.strip() == "ci-one: unchanged (v2)"
    b.wsctl("skill", "pull", "ci-one", out)   # pulling again over a skill folder is fine
    # a non-empty folder that is not a skill folder is refused, as `git clone` refuses one
    home = tmp_path / "somebody"
    home.mkdir()
    (home / ".bashrc").write_text("mine\n")
    r = b.wsctl("skill", "pull", "ci-one", home, expect=7)
    assert "--force" in r.err and sorted(p.name for p in home.iterdir()) == [".bashrc"]
    b.wsctl("skill", "pull", "ci-one", home, "--force")
    assert (home / "SKILL.md").is_file() and (home / ".bashrc").read_text() == "mine\n"


def test_validate_and_invalid_publish_exit_7(backend, tmp_path):
    b = backend
    good = _folder(tmp_path, "good-skill")
    assert b.wsctl("skill", "validate", good).out.strip().endswith("valid")
    bad = tmp_path / "bad-skill"
    bad.mkdir()
    (bad / "SKILL.md").write_text("---\nname: Bad_Skill\n---\n")
    r = b.wsctl("skill", "validate", bad, "--json", expect=7)
    body = json.loads(r.out)
    assert body["valid"] is False and {e["path"] for e in body["errors"]} == {"SKILL.md"}
    r = b.wsctl("skill", "publish", good, bad, expect=7)
    assert "Nothing was published" in r.err
    assert b.ok("GET", "/v1/skills")["skills"] == []


def test_cli_commands_print_the_api_body(backend, tmp_path):
    b = backend
    created = b.wsctl("skill", "create", "cli-skill", "--description", "From the CLI.", "--json").json
    assert created["status"] == "draft"
    assert b.wsctl("skill", "show", "cli-skill", "--json").json == b.ok("GET", f"/v1/skills/{created['id']}")
    md = tmp_path / "SKILL.md"
    md.write_text(skill_md("cli-skill"))
    v1 = b.wsctl("skill", "put", "cli-skill", "SKILL.md", md, "--json").json
    assert v1["number"] == 1 and v1["skill"]["version"] == 1
    r = b.wsctl("skill", "put", "cli-skill", "references/a.md", "-", "--base-version", "0", input="a\n", expect=6)
    assert "version 1" in r.err
    b.wsctl("skill", "put", "cli-skill", "references/a.md", "-", "--base-version", "1", input="a\n")
    assert [f["path"] for f in b.wsctl("skill", "files", "cli-skill", "--json").json["files"]] == \
        ["SKILL.md", "references/a.md"]
    assert b.wsctl("skill", "revert", "cli-skill", "1", "--json").json["number"] == 3
    assert [v["source"] for v in b.wsctl("skill", "versions", "cli-skill", "--json").json["versions"]] == \
        ["revert", "inline", "inline"]
    assert b.wsctl("skill", "disable", "cli-skill", "--json").json["enabled"] is False
    assert b.wsctl("skill", "enable", "cli-skill").out.strip() == "cli-skill: enabled"
    assert b.wsctl("skill", "edit", "cli-skill", "--description", "New words.", "--json").json["version"] == 4
    assert b.wsctl("skill", "platform", "vault-tokens", "--json").json["name"] == "vault-tokens"
    assert "cli-skill" in b.wsctl("skill", "list").out
    b.wsctl("skill", "archive", "cli-skill", expect=7)                    # no TTY, no --yes
    assert b.wsctl("skill", "archive", "cli-skill", "--yes", "--json").json["status"] == "archived"
    b.wsctl("skill", "show", "cli-skill", expect=5)


def test_parallel_publish_of_the_same_folder_all_succeed(backend, tmp_path):
    """Parallel CI jobs publishing one folder: one publishes, the others find it unchanged (not 409)."""
    import subprocess

    from tests.conftest import WSCTL, finish_all

    b = backend
    d = _folder(tmp_path, "ci-race")
    procs = [subprocess.Popen([*WSCTL, "skill", "publish", str(d)], env=b.env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(4)]
    outs = finish_all(procs)
    assert all(rc == 0 for rc, _o, _e in outs), outs
    lines = sorted(o.strip() for _rc, o, _e in outs)
    assert sum(1 for line in lines if line.endswith("published v1")) == 1, lines
    assert lines.count("ci-race: unchanged (v1)") == 3, lines
    assert [v["number"] for v in b.ok("GET", "/v1/skills/ci-race/versions")["versions"]] == [1]


# ---------------------------------------------------------------- a hostile server

class _Hostile:
    """A loopback HTTP server answering the skill routes `pull` and `publish` use with whatever
    the test puts in `answers` ({(method, path): (status, content type, bytes)})."""

    def __init__(self):
        import http.server
        import threading

        answers: dict = {}
        self.answers = answers

        class Handler(http.server.BaseHTTPRequestHandler):
            def _answer(self):
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                status, ctype, body = answers.get((self.command, self.path.split("?")[0]),
                                                  (404, "application/json", json.dumps(
                                                      {"error": {"status": 404, "code": "not_found",
                                                                 "message": "nope"}}).encode()))
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_PUT = do_POST = _answer

            def log_message(self, *a):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def json(self, method, path, body, status=200):
        self.answers[(method, path)] = (status, "application/json", json.dumps(body).encode())

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def _run_against(server, tmp_path, *args, expect=None):
    from tests.conftest import base_env, run_wsctl

    env = {**base_env(tmp_path / "home"), "WSCTL_SERVER": server.url, "WSCTL_TOKEN": "ws_session_hostile"}
    return run_wsctl(args, env, expect=expect)


def _bundle(entries) -> bytes:
    import io
    import tarfile

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for path, data in entries:
            info = tarfile.TarInfo(path)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def test_hostile_server_cannot_point_pull_or_publish_at_local_files(tmp_path):
    """The URLs come from the server: a file:// one made `pull` read, and `publish` overwrite, any
    file of the user's. Only the local backend hands out file:// URLs."""
    victim = tmp_path / "victim.tar.gz"
    victim.write_bytes(_bundle([("SKILL.md", skill_md("stolen").encode())]))
    before = victim.read_bytes()
    s = _Hostile()
    try:
        s.json("GET", "/v1/skills/stolen/bundle-url", {"url": victim.as_uri(), "expiresAt": "2030-01-01T00:00:00Z"})
        r = _run_against(s, tmp_path, "skill", "pull", "stolen", tmp_path / "out")
        assert r.code != 0 and "file://" not in r.out and not (tmp_path / "out").exists()

        skill = {"id": "skl_x", "name": "ci-one", "version": 0}
        s.json("GET", "/v1/skills/ci-one", skill)
        s.json("POST", "/v1/skills/skl_x/bundle-upload-url",
               {"uploadId": "upl_x", "url": victim.as_uri(), "expiresAt": "2030-01-01T00:00:00Z"}, 201)
        s.json("POST", "/v1/skills/skl_x/validate", {"valid": True, "errors": [], "warnings": []})
        r = _run_against(s, tmp_path, "skill", "publish", _folder(tmp_path, "ci-one"))
        assert r.code != 0
        assert victim.read_bytes() == before
    finally:
        s.close()


def test_hostile_bundle_is_refused_before_anything_is_written(tmp_path):
    """pull's extraction: a file and a folder of one name crashed half-way (files written, a
    traceback); a folder that is a symlink in DIR was followed, writing outside DIR."""
    s = _Hostile()
    try:
        s.json("GET", "/v1/skills/evil/bundle-url", {"url": f"{s.url}/blobs/download/t1",
                                                      "expiresAt": "2030-01-01T00:00:00Z"})
        md = skill_md("evil").encode()
        s.answers[("GET", "/blobs/download/t1")] = (200, "application/gzip", _bundle(
            [("SKILL.md", md), ("assets", b"a file"), ("assets/inner.txt", b"under it")]))
        out = tmp_path / "out"
        r = _run_against(s, tmp_path, "skill", "pull", "evil", out)
        assert r.code == 7 and "Traceback" not in r.err
        assert not out.exists() or list(out.iterdir()) == []

        outside = tmp_path / "outside"
        outside.mkdir()
        out2 = tmp_path / "out2"
        out2.mkdir()
        (out2 / "assets").symlink_to(outside)
        s.answers[("GET", "/blobs/download/t1")] = (200, "application/gzip", _bundle(
            [("SKILL.md", md), ("assets/planted.sh", b"echo owned")]))
        r = _run_against(s, tmp_path, "skill", "pull", "evil", out2)
        assert r.code == 7 and "Traceback" not in r.err
        assert list(outside.iterdir()) == [] and not (out2 / "SKILL.md").exists()
    finally:
        s.close()


def test_publish_checks_the_bundle_once_and_packs_it_once(backend, tmp_path):
    """One validation per publish: the folder is checked here (so nothing is published when one
    fails), then the server checks the upload once, in /publish; no /validate call between. The
    calls are read from --debug's one line per call, on every door."""
    import re

    b = backend
    one = _folder(tmp_path, "once-only")
    r = b.wsctl("--debug", "skill", "publish", one)
    assert r.out.strip() == "once-only: created, published v1"
    calls = [(m, re.sub(r"^[a-z]+:(//[^/]+)?", "", url).split("?")[0])
             for m, url in re.findall(r"^debug: (\S+) (\S+) ->", r.err, re.M)]
    api = [(m, p) for m, p in calls if p.startswith("/v1/")]
    assert api == [("GET", "/v1/skills/once-only"), ("POST", "/v1/skills"),
                   ("POST", f"/v1/skills/{b.ok('GET', '/v1/skills/once-only')['id']}/bundle-upload-url"),
                   ("POST", f"/v1/skills/{b.ok('GET', '/v1/skills/once-only')['id']}/publish")]
    r = b.wsctl("--debug", "skill", "publish", one)   # unchanged: the digest of the one pack decides
    assert r.out.strip() == "once-only: unchanged (v1)"
    assert not re.search(r"/(validate|bundle-upload-url|publish)\b", r.err)
