"""Long work shows progress (issue 12 item 7), on stderr and only on a terminal: catalog import's
phases (read, resolve, index: in-process, or streamed by the server as progress lines after the
upload's bar), transfer bars with the measured or announced total, and a specialist folder upload that sends only what changed. Terminal behaviour
is checked under a real pty on stderr (stdout stays a pipe, as `wsctl ... | jq` has it); the same
commands piped or with --json show no progress at all.
"""
from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import struct
import subprocess
import termios
import threading

from tests.conftest import WAIT_LIMIT, WSCTL

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
ETA = re.compile(r" (-:--:--|\d+:\d\d:\d\d)")   # a transfer bar's time left


def test_sizes_read_as_people_read_them():
    from workspacectl.cli.common.output import human_size

    assert [human_size(n) for n in (0, 1, 1023, 1024, 1536, 200 * 2**20, 5 * 2**40, 3 * 2**50)] == [
        "0 bytes", "1 byte", "1023 bytes", "1.0 KiB", "1.5 KiB", "200.0 MiB", "5.0 TiB", "3.0 PiB"]


def with_terminal_stderr(env: dict, args) -> tuple[int, str, str]:
    """Run wsctl with a pty as stderr (stdout a pipe); answers (exit code, stdout, all the
    terminal showed, redrawn frames included)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
    env = {**env, "TERM": "xterm-256color"}  # base_env's TERM=dumb would turn animation off
    proc = subprocess.Popen([*WSCTL, *map(str, args)], env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    seen = bytearray()

    def pump():
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            seen.extend(chunk)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    with proc.stdout:      # closed once read: not left to the collector (a ResourceWarning)
        out = proc.stdout.read()
    code = proc.wait(WAIT_LIMIT)
    reader.join(WAIT_LIMIT)
    os.close(master)
    return code, out.decode(), seen.decode(errors="replace")


def new_project(backend) -> str:
    return backend.ok("POST", "/v1/projects", {"name": "Files"})["project"]["id"]


def openapi_doc(n: int) -> str:
    paths = {f"/things{i}": {"get": {"operationId": f"listThings{i}", "summary": f"List things {i}",
                                     "responses": {"200": {"description": "ok"}}}} for i in range(n)}
    return json.dumps({"openapi": "3.0.0", "info": {"title": "Progress API", "version": "1"},
                       "servers": [{"url": "https://progress.example/api"}], "paths": paths})


def test_catalog_import_shows_its_phases_only_on_a_terminal(backend, tmp_path):
    doc = tmp_path / "progress.json"
    doc.write_text(openapi_doc(5))
    code, out, term = with_terminal_stderr(backend.env, ["catalog", "import", doc])
    assert code == 0 and out == "progress\n", (out, term)
    # the same phases on every door: over HTTP the server streams them (application/x-ndjson)
    for phase in ("reading the document", "resolving operations", "indexing operations (5)"):
        assert f"Importing progress.json: {phase}" in term, term
    if backend.kind == "remote":   # first the upload, with its size, then the server's phases
        assert "Importing progress.json: sending the document" in term, term
        assert "Importing progress.json on the server..." in term, term
    assert any(c in term for c in SPINNER) and "Imported progress" in term
    # piped: the one summary line, no spinner, no phase; --json on a terminal: no progress either
    r = backend.wsctl("catalog", "import", doc)
    assert r.err == "Replaced progress: 5 operations, 0 trigger providers.\n", r.err
    code, out, term = with_terminal_stderr(backend.env, ["catalog", "import", doc, "--json"])
    assert code == 0 and json.loads(out)["service"] == "progress"
    assert "Importing" not in term and not any(c in term for c in SPINNER), term


def test_folder_upload_shows_totals_on_a_terminal_and_sends_only_what_changed(backend, tmp_path):
    pid = new_project(backend)
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    files = {"a.txt": b"alpha\n" * 1000, "sub/b.bin": os.urandom(300_000), "sub/c.md": b"# c\n"}
    for name, data in files.items():
        (src / name).write_bytes(data)
    total = sum(map(len, files.values()))

    code, out, term = with_terminal_stderr(backend.env, ["specialist", "files", "bundle", "upload", pid, src])
    assert code == 0, term
    assert "Comparing" in term and "Uploading 3 files" in term, term
    assert total == 306_004 and "/298.8 KiB" in term, term   # the measured total, before a byte is sent
    assert re.search(r" [\d.]+ (bytes|KiB|MiB)/s ", term) and ETA.search(term), term   # rate and time left
    assert out.startswith("Added 3, updated 0, unchanged 0 files") and re.search(r"\(\d+\.\d KiB sent\)\.$", out), out

    # unchanged: nothing is sent (no upload request at all), and a piped run shows no bar
    r = backend.wsctl("specialist", "files", "bundle", "upload", pid, src, "--json")
    assert r.json == {"added": 0, "updated": 0, "unchanged": 3, "deleted": 0, "bytesSent": 0}
    assert r.err == ""
    # one file changed, one gone: only the changed one travels; the gone one is kept
    (src / "a.txt").write_bytes(b"changed\n")
    (src / "sub" / "c.md").unlink()
    r = backend.wsctl("specialist", "files", "bundle", "upload", pid, src, "--json")
    summary = r.json
    assert (summary["added"], summary["updated"], summary["unchanged"], summary["deleted"]) == (0, 1, 1, 0)
    assert 0 < summary["bytesSent"] < 10_000, summary   # the 300 kB random file was not sent again
    listed = {f["path"] for f in backend.ok("GET", f"/v1/projects/{pid}/files")["files"]}
    assert listed == {"a.txt", "sub/b.bin", "sub/c.md"}
    r = backend.wsctl("specialist", "files", "bundle", "upload", pid, src)
    assert "1 files in" in r.err and "--delete" in r.err and "(0 bytes sent)" in r.out, r.err
    # --delete: the folder is the truth; --json on a terminal shows no progress
    code, out, term = with_terminal_stderr(backend.env, ["specialist", "files", "bundle", "upload", pid, src,
                                                         "--delete", "--json"])
    assert code == 0 and json.loads(out) == {"added": 0, "updated": 0, "unchanged": 2, "deleted": 1,
                                             "bytesSent": 0}
    assert "Comparing" not in term and "Uploading" not in term, term
    listed = {f["path"]: f["sha256"] for f in backend.ok("GET", f"/v1/projects/{pid}/files")["files"]}
    import hashlib

    assert listed == {p: hashlib.sha256((src / p).read_bytes()).hexdigest() for p in ("a.txt", "sub/b.bin")}


def test_download_bar_on_a_terminal_only(backend, tmp_path):
    pid = new_project(backend)
    src = tmp_path / "src"
    src.mkdir()
    (src / "x.bin").write_bytes(os.urandom(100_000))
    backend.wsctl("specialist", "files", "bundle", "upload", pid, src)
    out = tmp_path / "b.tar.gz"
    code, _, term = with_terminal_stderr(backend.env, ["specialist", "files", "bundle", "download", pid, "-o", out])
    assert code == 0 and "Downloading" in term and "Saved" in term, term
    # the total is known before the first byte: the tar inside (512-byte header, the file padded to
    # 512, the 1,024-byte end, all padded to a 10,240-byte record: 102,400 bytes), counted inflated
    assert "/100.0 KiB" in term and ETA.search(term), term   # (before the answer's headers arrive: 0/? bytes)
    r = backend.wsctl("specialist", "files", "bundle", "download", pid, "-o", out)
    assert "Downloading" not in r.err and re.fullmatch(rf"Saved \d+\.\d KiB to {re.escape(str(out))}\.\n", r.err), r.err
    r = backend.wsctl("specialist", "files", "bundle", "download", pid, "-o", out, "--json")
    assert r.json == {"path": str(out), "bytes": out.stat().st_size}   # the JSON keeps bytes


def _bundle_answer(backend, pid: str) -> tuple[dict, bytes]:
    """(lower-cased headers, body) of the project bundle route, as this door answers it."""
    path = f"/v1/projects/{pid}/files/bundle"
    if backend.kind == "remote":
        r = backend._http.get(path, headers={"Authorization": f"Bearer {backend.owner_token}"})
        assert r.status_code == 200
        return {k.lower(): v for k, v in r.headers.items()}, r.content
    resp = backend._engine.handle("GET", path, None, None, backend.owner_token)
    return {k.lower(): str(v) for k, v in resp.headers.items()}, b"".join(resp.stream)


def test_a_bundle_announces_the_length_of_the_tar_inside(backend, tmp_path):
    import gzip

    pid = new_project(backend)
    src = tmp_path / "src"
    (src / ("long-" * 30)).mkdir(parents=True)   # a path over 100 bytes: a pax header
    (src / ("long-" * 30) / "ünï.txt").write_bytes(b"u" * 777)
    (src / "x.bin").write_bytes(os.urandom(5_000))
    (src / "empty").write_bytes(b"")
    backend.wsctl("specialist", "files", "bundle", "upload", pid, src)
    headers, body = _bundle_answer(backend, pid)
    assert headers["x-uncompressed-length"] == str(len(gzip.decompress(body)))
    assert "content-length" not in headers or backend.kind == "remote"   # streamed: no Content-Length


def test_skill_pull_bar_has_a_total(backend, tmp_path):
    d = tmp_path / "big-skill"
    (d / "assets").mkdir(parents=True)
    (d / "SKILL.md").write_text("---\nname: big-skill\ndescription: A big one.\n---\nBody\n")
    (d / "assets" / "x.bin").write_bytes(os.urandom(200_000))
    backend.wsctl("skill", "publish", d)
    code, _, term = with_terminal_stderr(backend.env, ["skill", "pull", "big-skill", tmp_path / "out"])
    assert code == 0 and (tmp_path / "out" / "assets" / "x.bin").read_bytes() == (d / "assets" / "x.bin").read_bytes()
    assert "download big-skill" in term and re.search(r"/(19\d|20\d)\.\d KiB", term), term


def test_catalog_import_progress_lines_over_http(backend, tmp_path):
    """The contract of Accept: application/x-ndjson (docs/api.md §1 "Progress"), as a script meets it;
    and the CLI's one error line when the import fails after the phases began."""
    doc = openapi_doc(30)
    body = {"content": doc, "filename": "lines.json"}
    if backend.kind == "remote":
        headers = {"Authorization": f"Bearer {backend.owner_token}", "Accept": "application/x-ndjson"}
        r = backend._http.post("/v1/admin/catalog", json=body, headers=headers)
        assert r.status_code == 200 and r.headers["content-type"] == "application/x-ndjson"
        lines = [json.loads(x) for x in r.text.splitlines()]
        phases = [x["progress"]["phase"] for x in lines[:-1]]
        assert phases[0] == "read" and "resolve" in phases and phases[-1] == "index", lines
        assert lines[-1]["status"] == 201 and lines[-1]["body"]["service"] == "progress"
        assert ("index", 30) in {(x["progress"]["phase"], x["progress"]["total"]) for x in lines[:-1]}
        # an error before any phase (no key): the usual status and JSON body
        r = backend._http.post("/v1/admin/catalog", json=body, headers={"Accept": "application/x-ndjson"})
        assert r.status_code == 401 and r.json()["error"]["code"] == "unauthenticated"
        # a route that reports no phase answers as usual
        r = backend._http.get("/v1/auth/whoami", headers=headers)
        assert r.status_code == 200 and r.headers["content-type"] == "application/json"
        # an error after the phases began: 200, and the last line carries it
        bad = {"content": "{\"openapi\": \"3.0.0\", \"paths\": 7}", "filename": "bad.json"}
        r = backend._http.post("/v1/admin/catalog", json=bad, headers=headers)
        last = json.loads(r.text.splitlines()[-1])
        assert last["status"] == 400 and last["body"]["error"]["code"] == "invalid_request", r.text
    # the CLI on a terminal: the same one error line and exit 7 on every door
    bad_doc = tmp_path / "bad.json"
    bad_doc.write_text('{"openapi": "3.0.0", "paths": 7}')
    code, out, term = with_terminal_stderr(backend.env, ["catalog", "import", bad_doc])
    assert code == 7 and out == "" and "error: " in term and "Traceback" not in term, term
