"""Project (specialist) shared files on both backends: list, tar.gz download and additive upload,
remove, roles, and every hostile bundle refused whole with nothing changed."""
from __future__ import annotations

import functools
import gzip
import hashlib
import io
import os
import struct
import tarfile
import zlib

import pytest

from tests.api_helpers import assert_error
from tests.skill_helpers import ext_header_targz

GZIP = "application/gzip"


# ---------------------------------------------------------------- helpers

def tgz(entries, level: int = 6) -> bytes:
    """entries: {name: bytes}, or a list of (name, bytes) and (TarInfo, None) pairs."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=level) as tf:
        items = entries.items() if isinstance(entries, dict) else entries
        for name, data in items:
            if isinstance(name, tarfile.TarInfo):
                tf.addfile(name, io.BytesIO(data) if data is not None else None)
                continue
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def special(name: str, kind, **kw) -> tuple:
    info = tarfile.TarInfo(name)
    info.type = kind
    for k, v in kw.items():
        setattr(info, k, v)
    return info, None


def new_project(backend, secret=None) -> str:
    return backend.ok("POST", "/v1/projects", {"name": "Files"}, secret=secret)["project"]["id"]


def post_bundle(backend, pid: str, data: bytes, secret=None):
    """POST a bundle as the CLI sends it: Content-Type application/gzip (spooled by the server;
    a stream for the local engine)."""
    secret = backend.owner_token if secret is None else secret
    path = f"/v1/projects/{pid}/files/bundle"
    if backend.kind == "remote":
        r = backend._http.post(path, content=data, headers={"Authorization": f"Bearer {secret}", "Content-Type": GZIP})
        from tests.conftest import ApiResult

        return ApiResult(r.status_code, r.json() if r.content else None)
    from tests.conftest import ApiResult

    resp = backend._engine.handle("POST", path, None, io.BytesIO(data), secret, None)
    return ApiResult(resp.status, resp.body)


def listing(backend, pid, secret=None) -> dict:
    return {f["path"]: f for f in backend.ok("GET", f"/v1/projects/{pid}/files", secret=secret)["files"]}


def download(backend, pid, secret=None) -> dict:
    r = backend.api("GET", f"/v1/projects/{pid}/files/bundle", secret=secret)
    assert r.status == 200, r.body
    with tarfile.open(fileobj=io.BytesIO(r.body), mode="r:gz") as tf:
        return {m.name: tf.extractfile(m).read() for m in tf.getmembers() if m.isreg()}


# ---------------------------------------------------------------- round trip and semantics

def test_upload_list_download_round_trip(backend):
    pid = new_project(backend)
    assert backend.ok("GET", f"/v1/projects/{pid}/files") == {"files": [], "nextCursor": None}
    assert download(backend, pid) == {}
    big = os.urandom(300_000)
    files = {"readme.md": b"# hello\n", "docs/guide/intro.txt": b"intro", "data/big.bin": big,
             "empty": b"", "ünïcode name.txt": "ü".encode(), "x/" + "n" * 200: b"long name"}
    r = post_bundle(backend, pid, tgz(files))
    assert (r.status, r.body) == (200, {"added": 6, "updated": 0})
    listed = backend.ok("GET", f"/v1/projects/{pid}/files")
    assert listed["nextCursor"] is None
    assert [f["path"] for f in listed["files"]] == sorted(files)
    for f in listed["files"]:
        assert set(f) == {"path", "size", "sha256", "updatedAt"}
        assert f["size"] == len(files[f["path"]])
        assert f["sha256"] == hashlib.sha256(files[f["path"]]).hexdigest()
        assert f["updatedAt"].endswith("Z")
    assert download(backend, pid) == files  # bytes identical, names exactly the paths: at the root
    got = backend.ok("GET", f"/v1/projects/{pid}")
    assert got["project"]["counts"]["files"] == 6


def test_download_is_gzip_streamed_with_entries_at_root(backend):
    pid = new_project(backend)
    post_bundle(backend, pid, tgz({"a/b.txt": b"b"}))
    if backend.kind == "remote":
        r = backend._http.get(f"/v1/projects/{pid}/files/bundle",
                              headers={"Authorization": f"Bearer {backend.owner_token}"})
        assert r.status_code == 200 and r.headers["content-type"] == GZIP
        data = r.content
    else:
        data = backend.api("GET", f"/v1/projects/{pid}/files/bundle").body
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tf:
        members = tf.getmembers()
    assert [(m.name, m.isreg(), m.mode) for m in members] == [("a/b.txt", True, 0o644)]


def test_upload_is_additive_and_counts_added_and_updated(backend):
    pid = new_project(backend)
    assert post_bundle(backend, pid, tgz({"a": b"1", "b": b"2"})).body == {"added": 2, "updated": 0}
    before = listing(backend, pid)
    assert post_bundle(backend, pid, tgz({"b": b"two", "c": b"3"})).body == {"added": 1, "updated": 1}
    after = listing(backend, pid)
    assert sorted(after) == ["a", "b", "c"]          # never removes
    assert after["a"] == before["a"]
    assert after["b"]["size"] == 3
    assert download(backend, pid) == {"a": b"1", "b": b"two", "c": b"3"}
    # the same content again changes nothing and counts nothing
    assert post_bundle(backend, pid, tgz({"b": b"two"})).body == {"added": 0, "updated": 0}
    assert listing(backend, pid) == after
    # folders in the archive, and a leading ./ (as `tar -C dir .` writes), are fine
    dirs = [special(".", tarfile.DIRTYPE), special("./d", tarfile.DIRTYPE), ("./d/e.txt", b"e")]
    assert post_bundle(backend, pid, tgz(dirs)).body == {"added": 1, "updated": 0}
    assert "d/e.txt" in listing(backend, pid)


def test_list_pages_by_path(backend):
    pid = new_project(backend)
    names = [f"f{i:02d}" for i in range(7)]
    post_bundle(backend, pid, tgz({n: n.encode() for n in names}))
    seen, cursor = [], None
    while True:
        query = {"limit": "3", **({"cursor": cursor} if cursor else {})}
        body = backend.ok("GET", f"/v1/projects/{pid}/files", query=query)
        assert len(body["files"]) <= 3
        seen += [f["path"] for f in body["files"]]
        cursor = body["nextCursor"]
        if not cursor:
            break
    assert seen == names
    assert_error(backend.api("GET", f"/v1/projects/{pid}/files", query={"limit": "0"}), 400, "invalid_request")
    assert_error(backend.api("GET", f"/v1/projects/{pid}/files", query={"cursor": "garbage"}), 400, "invalid_request")


def test_remove_one_file(backend):
    pid = new_project(backend)
    post_bundle(backend, pid, tgz({"keep": b"k", "dir/gone": b"g"}))
    r = backend.api("DELETE", f"/v1/projects/{pid}/files", query={"path": "dir/gone"})
    assert r.status == 204 and r.body in (None, b"")
    assert sorted(listing(backend, pid)) == ["keep"]
    assert_error(backend.api("DELETE", f"/v1/projects/{pid}/files", query={"path": "dir/gone"}), 404, "not_found")
    for bad in ("", "../keep", "/keep", "a//b", "a\\b", "a\x01b", "./keep"):
        assert_error(backend.api("DELETE", f"/v1/projects/{pid}/files", query={"path": bad}), 400, "invalid_request")
    assert_error(backend.api("DELETE", f"/v1/projects/{pid}/files"), 400, "invalid_request")
    # a file may come back after removal, and overwriting a removed blob's content works
    assert post_bundle(backend, pid, tgz({"dir/gone": b"g"})).body == {"added": 1, "updated": 0}
    assert download(backend, pid) == {"keep": b"k", "dir/gone": b"g"}


def test_roles_viewer_forbidden_stranger_not_found(backend):
    pid = new_project(backend)
    post_bundle(backend, pid, tgz({"a": b"1"}))
    viewer = backend.add_member("vera@example.com")
    editor = backend.add_member("eddie@example.com")
    stranger = backend.add_member("sam@example.com")
    v_tok, e_tok, s_tok = (backend.session(m["id"]) for m in (viewer, editor, stranger))
    backend.ok("PUT", f"/v1/projects/{pid}/grants", {"membershipId": viewer["id"], "role": "viewer"})
    backend.ok("PUT", f"/v1/projects/{pid}/grants", {"membershipId": editor["id"], "role": "editor"})
    files, bundle = f"/v1/projects/{pid}/files", tgz({"b": b"2"})
    # the stranger sees nothing: 404 everywhere, existence not leaked
    assert_error(backend.api("GET", files, secret=s_tok), 404, "not_found")
    assert_error(backend.api("GET", files + "/bundle", secret=s_tok), 404, "not_found")
    assert_error(post_bundle(backend, pid, bundle, secret=s_tok), 404, "not_found")
    assert_error(backend.api("DELETE", files, secret=s_tok, query={"path": "a"}), 404, "not_found")
    # the viewer reads but may not change
    assert sorted(listing(backend, pid, secret=v_tok)) == ["a"]
    assert download(backend, pid, secret=v_tok) == {"a": b"1"}
    assert_error(post_bundle(backend, pid, bundle, secret=v_tok), 403, "forbidden")
    assert_error(backend.api("DELETE", files, secret=v_tok, query={"path": "a"}), 403, "forbidden")
    # the editor writes
    assert post_bundle(backend, pid, bundle, secret=e_tok).body == {"added": 1, "updated": 0}
    assert backend.api("DELETE", files, secret=e_tok, query={"path": "a"}).status == 204
    assert sorted(listing(backend, pid)) == ["b"]
    assert_error(backend.api("GET", "/v1/projects/proj_missing/files"), 404, "not_found")


def test_personal_key_scope(backend):
    pid = new_project(backend)
    key = backend.key("personal", ["projects:manage"])
    assert post_bundle(backend, pid, tgz({"k": b"1"}), secret=key).body == {"added": 1, "updated": 0}
    other = backend.key("personal", ["skills:manage"])
    assert_error(backend.api("GET", f"/v1/projects/{pid}/files", secret=other), 403, "insufficient_scope")
    assert_error(post_bundle(backend, pid, tgz({"k": b"2"}), secret=other), 403, "insufficient_scope")


# ---------------------------------------------------------------- hostile bundles: refused whole

def _hardlink():
    info = tarfile.TarInfo("link")
    info.type, info.linkname = tarfile.LNKTYPE, "ok.txt"
    return info, None


def _raw_header_tar(name: bytes, size: int = 1) -> bytes:
    """A ustar archive whose one member has a name tarfile would not write (absolute, '..')."""
    info = tarfile.TarInfo("placeholder")
    info.size = size
    header = bytearray(info.tobuf(tarfile.USTAR_FORMAT))
    header[0:100] = name.ljust(100, b"\0")
    header[148:156] = b" " * 8
    header[148:156] = (b"%06o\0 " % sum(header))
    return gzip.compress(bytes(header) + b"x".ljust(512, b"\0") + b"\0" * 1024)


HOSTILE = {
    "symlink": lambda: tgz([("ok.txt", b"fine"), special("evil", tarfile.SYMTYPE, linkname="/etc/passwd")]),
    "hardlink": lambda: tgz([("ok.txt", b"fine"), _hardlink()]),
    "char device": lambda: tgz([("ok.txt", b"fine"), special("dev", tarfile.CHRTYPE, devmajor=1, devminor=3)]),
    "block device": lambda: tgz([special("blk", tarfile.BLKTYPE, devmajor=8, devminor=0)]),
    "fifo": lambda: tgz([("ok.txt", b"fine"), special("pipe", tarfile.FIFOTYPE)]),
    "absolute path": lambda: _raw_header_tar(b"/etc/cron.d/evil"),
    "dot-dot path": lambda: tgz({"ok.txt": b"fine", "../x": b"escape"}),
    "inner dot-dot": lambda: tgz({"ok.txt": b"fine", "a/../../x": b"escape"}),
    "empty part": lambda: tgz({"ok.txt": b"fine", "a//b": b"x"}),
    "inner dot part": lambda: tgz({"a/./b": b"x"}),
    "backslash": lambda: tgz({"ok.txt": b"fine", "a\\..\\b": b"x"}),
    "control character": lambda: tgz({"ok.txt": b"fine", "a\nb": b"x"}),
    "over-long path": lambda: tgz({"ok.txt": b"fine", "/".join(["d" * 200] * 6): b"x"}),
    "over-long name": lambda: tgz({"n" * 256: b"x"}),
    "not utf-8 name": lambda: _raw_header_tar(b"caf\xe9.txt"),
    "absolute dir": lambda: tgz([special("/tmp/evil", tarfile.DIRTYPE)]),
    "conflicting duplicates": lambda: tgz([("dup.txt", b"one"), ("dup.txt", b"two")]),
    "file and folder": lambda: tgz({"a": b"file", "a/b": b"under a file"}),
    "garbage": lambda: b"this is not a gzip at all",
    "gzip of garbage": lambda: gzip.compress(b"not a tar archive" * 100),
    "truncated gzip": lambda: tgz({"ok.txt": os.urandom(5000)})[:-100],
    "truncated tar": lambda: gzip.compress(zlib.decompress(tgz({"ok.txt": os.urandom(5000)}), 31)[:2000]),
    "zip file": lambda: b"PK\x03\x04" + b"\0" * 100,
    "json body": lambda: b'{"files": []}',
    # extended headers are read whole into memory: bounded, whatever the size limit of the files
    "huge pax header": lambda: ext_header_targz(tarfile.XHDTYPE, 4 << 20, {"ok.txt": b"fine"}),
    "huge gnu long name": lambda: ext_header_targz(tarfile.GNUTYPE_LONGNAME, 4 << 20, {"ok.txt": b"fine"}),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_bundle_refused_whole_changes_nothing(backend, case):
    pid = new_project(backend)
    post_bundle(backend, pid, tgz({"existing.txt": b"before", "ok.txt": b"old"}))
    before, blobs_before = listing(backend, pid), _blob_files(backend)
    r = post_bundle(backend, pid, HOSTILE[case]())
    assert_error(r, 400, "invalid_request")
    assert listing(backend, pid) == before
    assert download(backend, pid) == {"existing.txt": b"before", "ok.txt": b"old"}
    assert _blob_files(backend) == blobs_before  # nothing staged is left behind


def _blob_files(backend) -> set:
    """What the workspace stores as blobs: the files under blobs/ (staging included) and, on a
    PostgreSQL workspace, the `blob` rows with their chunk counts."""
    root = backend.workspace / "blobs"
    found = {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}
    return found | {f"row:{sha}:{size}:{chunks}" for sha, size, chunks in _blob_rows(backend)}


def _blob_rows(backend) -> list:
    if backend.door != "postgres":
        return []
    import psycopg

    with psycopg.connect(str(backend.workspace)) as c:
        return c.execute("SELECT b.sha256, b.size, count(c.seq) FROM blob b JOIN blob_chunk c USING (sha256)"
                         " GROUP BY b.sha256, b.size ORDER BY 1").fetchall()


def test_identical_duplicates_are_one_file(backend):
    pid = new_project(backend)
    assert post_bundle(backend, pid, tgz([("same", b"x"), ("same", b"x")])).body == {"added": 1, "updated": 0}


def test_folder_over_existing_file_conflicts(backend):
    pid = new_project(backend)
    post_bundle(backend, pid, tgz({"a": b"file", "d/x": b"x"}))
    before = listing(backend, pid)
    assert_error(post_bundle(backend, pid, tgz({"new": b"n", "a/b": b"under a file"})), 409, "conflict")
    assert_error(post_bundle(backend, pid, tgz({"d": b"a file where a folder is"})), 409, "conflict")
    assert listing(backend, pid) == before


def test_too_many_files_is_413_and_changes_nothing(backend):
    pid = new_project(backend)
    post_bundle(backend, pid, tgz({"existing.txt": b"before"}))
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for i in range(10_001):
            tf.addfile(tarfile.TarInfo(f"f/{i:05d}"), io.BytesIO(b""))
    r = post_bundle(backend, pid, buf.getvalue())
    assert_error(r, 413, "payload_too_large")
    assert sorted(listing(backend, pid)) == ["existing.txt"]


def test_declared_size_over_limit_is_413(backend):
    pid = new_project(backend)
    info = tarfile.TarInfo("huge.bin")
    info.size = (1 << 30) + 1
    data = gzip.compress(info.tobuf(tarfile.PAX_FORMAT) + b"\0" * 4096)  # the header alone is refused
    assert_error(post_bundle(backend, pid, data), 413, "payload_too_large")
    assert listing(backend, pid) == {}


@functools.lru_cache(maxsize=1)
def gzip_bomb(mib: int = 1536) -> bytes:
    """A small valid tar followed by `mib` MiB of zeros, a real gzip of about 1 MiB. Each MiB is
    compressed after a full flush, so its compressed bytes repeat and are made once."""
    head = zlib.decompress(tgz({"ok.txt": b"fine"}), 31)
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    zeros = b"\0" * (1 << 20)
    start = z.compress(head) + z.flush(zlib.Z_FULL_FLUSH)
    one = z.compress(zeros) + z.flush(zlib.Z_FULL_FLUSH)
    crc = zlib.crc32(head)
    for _ in range(mib):
        crc = zlib.crc32(zeros, crc)
    # b"\x03\x00": an empty final deflate block; then the gzip trailer (CRC-32, size mod 2^32)
    return start + one * mib + b"\x03\x00" + struct.pack("<II", crc, (len(head) + (mib << 20)) & 0xFFFFFFFF)


def test_gzip_bomb_helper_is_a_real_gzip():
    small = gzip_bomb.__wrapped__(3)
    assert gzip.decompress(small)[-(3 << 20):] == b"\0" * (3 << 20)


def test_gzip_bomb_is_stopped_while_reading(backend):
    """A tiny gzip inflating past the limit: 413 while reading, nothing kept."""
    pid = new_project(backend)
    bomb = gzip_bomb()
    assert len(bomb) < 4 << 20
    assert_error(post_bundle(backend, pid, bomb), 413, "payload_too_large")
    assert listing(backend, pid) == {}


def test_body_without_gzip_content_type_and_empty_body(backend):
    pid = new_project(backend)
    ok = backend.api("POST", f"/v1/projects/{pid}/files/bundle", raw=tgz({"raw": b"r"}))
    assert (ok.status, ok.body) == (200, {"added": 1, "updated": 0})
    assert_error(backend.api("POST", f"/v1/projects/{pid}/files/bundle"), 400, "invalid_request")
    assert_error(backend.api("POST", f"/v1/projects/{pid}/files/bundle", {"a": 1}), 400, "invalid_request")
    assert_error(post_bundle(backend, pid, b""), 400, "invalid_request")


def test_large_upload_over_the_json_limit_is_accepted(backend):
    """70 MiB of incompressible content: over the 64 MiB JSON body limit, streamed, not held whole."""
    if backend.kind == "local":
        pytest.skip("the body limit is the server's; the local engine reads the same stream")
    pid = new_project(backend)
    blob = os.urandom(70 << 20)
    assert post_bundle(backend, pid, tgz({"big.bin": blob}, level=1)).body == {"added": 1, "updated": 0}
    f = listing(backend, pid)["big.bin"]
    assert f["size"] == len(blob) and f["sha256"] == hashlib.sha256(blob).hexdigest()


# ---------------------------------------------------------------- the command line

def _wsctl_bytes(backend, cwd, *args):
    """wsctl with binary stdout, run in cwd (for the default output file name)."""
    from tests.conftest import run_wsctl

    return run_wsctl(args, backend.env, expect=None, text=False, cwd=cwd)


def test_cli_upload_folder_list_download_rm(backend, tmp_path):
    pid = new_project(backend)
    src = tmp_path / "src"
    (src / "sub" / "deeper").mkdir(parents=True)
    (src / "empty-folder").mkdir()
    files = {"a.txt": b"alpha\n", "sub/b.bin": os.urandom(200_000), "sub/deeper/c.md": b"# c"}
    for name, data in files.items():
        (src / name).write_bytes(data)
    r = backend.wsctl("specialist", "files", "bundle", "upload", pid, src, "--json")
    assert r.json == {"added": 3, "updated": 0, "unchanged": 0, "deleted": 0, "bytesSent": r.json["bytesSent"]}
    assert r.json["bytesSent"] > 200_000  # the random 200 kB file does not compress
    api_body = backend.ok("GET", f"/v1/projects/{pid}/files")
    assert backend.wsctl("specialist", "files", "list", pid, "--json").json == api_body
    plain = backend.wsctl("specialist", "files", "list", pid).out.splitlines()
    assert [line.split("\t")[:2] for line in plain] == [[p, str(len(files[p]))] for p in sorted(files)]

    # download to a named file: whole, renamed into place, entries at the root
    out = tmp_path / "out" / "bundle.tar.gz"
    out.parent.mkdir()
    r = backend.wsctl("specialist", "files", "bundle", "download", pid, "-o", out, "--json")
    assert r.json == {"path": str(out), "bytes": out.stat().st_size}
    assert sorted(p.name for p in out.parent.iterdir()) == ["bundle.tar.gz"]  # no temp file left
    with tarfile.open(out, "r:gz") as tf:
        assert {m.name: tf.extractfile(m).read() for m in tf.getmembers()} == files
    # the default name is <id>.tar.gz in the current folder; `-o -` writes to stdout
    p = _wsctl_bytes(backend, tmp_path, "specialist", "files", "bundle", "download", pid)
    assert p.code == 0, p.err
    assert (tmp_path / f"{pid}.tar.gz").read_bytes() == out.read_bytes()
    p = _wsctl_bytes(backend, tmp_path, "specialist", "files", "bundle", "download", pid, "-o", "-")
    assert p.code == 0, p.err
    with tarfile.open(fileobj=io.BytesIO(p.out), mode="r:gz") as tf:
        assert sorted(tf.getnames()) == sorted(files)

    # upload a .tar.gz file: additive
    tarball = tmp_path / "more.tar.gz"
    tarball.write_bytes(tgz({"a.txt": b"changed", "new.txt": b"n"}))
    r = backend.wsctl("specialist", "files", "bundle", "upload", pid, tarball)
    assert "Added 1, updated 1" in r.out
    assert sorted(listing(backend, pid)) == sorted([*files, "new.txt"])

    # rm: refuses without --yes off a terminal, removes with it, 404 after
    r = backend.wsctl("specialist", "files", "rm", pid, "new.txt", expect=7)
    assert "--yes" in r.err
    r = backend.wsctl("specialist", "files", "rm", pid, "new.txt", "--yes", "--json")
    assert r.out == ""
    assert "new.txt" not in listing(backend, pid)
    backend.wsctl("specialist", "files", "rm", pid, "new.txt", "--yes", expect=5)
    backend.wsctl("specialist", "files", "rm", pid, "../x", "--yes", expect=7)


def test_cli_refusals(backend, tmp_path):
    pid = new_project(backend)
    post_bundle(backend, pid, tgz({"keep": b"k"}))
    before = listing(backend, pid)
    src = tmp_path / "src"
    src.mkdir()
    (src / "ok.txt").write_bytes(b"ok")
    (src / "link").symlink_to("/etc/passwd")
    r = backend.wsctl("specialist", "files", "bundle", "upload", pid, src, expect=7)
    assert "symbolic link" in r.err and len(r.err.strip().splitlines()) == 1
    garbage = tmp_path / "garbage.tar.gz"
    garbage.write_bytes(b"not a tarball")
    backend.wsctl("specialist", "files", "bundle", "upload", pid, garbage, expect=7)
    backend.wsctl("specialist", "files", "bundle", "upload", pid, tmp_path / "missing", expect=7)
    backend.wsctl("specialist", "files", "list", "proj_missing", expect=5)
    out = tmp_path / "x.tar.gz"
    backend.wsctl("specialist", "files", "bundle", "download", "proj_missing", "-o", out, expect=5)
    assert not out.exists() and not list(tmp_path.glob(".x.tar.gz.*"))
    assert listing(backend, pid) == before


def test_gzip_content_type_on_other_routes_is_a_plain_400(backend):
    """The server spools application/gzip bodies for every /v1 route; a JSON route refuses one."""
    if backend.kind == "local":
        pytest.skip("a server matter: how an HTTP body reaches the engine")
    r = backend._http.post("/v1/projects", content=tgz({"a": b"1"}),
                           headers={"Authorization": f"Bearer {backend.owner_token}", "Content-Type": GZIP})
    assert_error(r, 400, "invalid_request")
    r = backend._http.post("/v1/projects/proj_x/files/bundle", content=b"x", headers={"Content-Type": GZIP})
    assert_error(r, 401, "unauthenticated")
