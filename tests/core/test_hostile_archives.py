"""The hostile archive and frontmatter corpus (issue 14 item 5): every case goes through the
project-files upload and the skill upload -> validate -> publish path, on both doors.

Archive cases break a rule both paths share (engine/bundle_tar.read_tar, the one reader): both
must refuse them, project files with 400/413, skills with valid=false and 422, never a 5xx, and
nothing may change (files, versions, stored blobs). Frontmatter and skill-only cases are plain
files to a project; the skill path alone refuses them. A few go through the CLI too (exit 7).
"""
from __future__ import annotations

import gzip
import hashlib
import io
import os
import tarfile

from tests.projects.test_project_files import _blob_files, gzip_bomb, listing, new_project, post_bundle
from tests.skill_helpers import create, ext_header_targz, skill_md, stage

NAME = "hostile"
MD = skill_md(NAME).encode()


def _info(name: str, size: int = 0, kind=tarfile.REGTYPE, **kw) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size, info.type = size, kind
    for k, val in kw.items():
        setattr(info, k, val)
    return info


def raw_tar(members, end: bool = True) -> bytes:
    """An uncompressed tar of SKILL.md then `members`: (TarInfo, bytes) or raw header bytes."""
    out = [_info("SKILL.md", len(MD)).tobuf(tarfile.USTAR_FORMAT), MD.ljust(512, b"\0")]
    for m in members:
        if isinstance(m, bytes):
            out.append(m)
            continue
        info, data = m
        out.append(info.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape"))
        if data:
            out.append(data + b"\0" * (-len(data) % 512))
    if end:
        out.append(b"\0" * 1024)
    return b"".join(out)


def tgz(members, end: bool = True) -> bytes:
    return gzip.compress(raw_tar(members, end))


def header(name: bytes, size_field: bytes = b"00000000001", kind: bytes = b"0") -> bytes:
    """A ustar header with any raw name and size field, and a correct checksum."""
    h = bytearray(_info("x", 1).tobuf(tarfile.USTAR_FORMAT))
    h[0:100] = name[:100].ljust(100, b"\0")
    h[124:136] = size_field.ljust(12, b"\0")[:12]
    h[156:157] = kind
    h[148:156] = b" " * 8
    h[148:156] = b"%06o\0 " % sum(h)
    return bytes(h)


def pax_record(key: str, value: str) -> bytes:
    """`LEN key=value\\n`, LEN counting the whole record, its own digits included."""
    rec = f" {key}={value}\n".encode()
    n = len(rec) + 1
    while len(str(n)) + len(rec) != n:
        n = len(str(n)) + len(rec)
    return str(n).encode() + rec


def pax(records: dict[str, str], then: bytes) -> bytes:
    """A pax extended header with these records, then the member header `then` (and its data)."""
    body = b"".join(pax_record(k, val) for k, val in records.items())
    return header(b"././@PaxHeader", b"%011o" % len(body), b"x") + body.ljust(-(-len(body) // 512) * 512, b"\0") + then


def file_block(name: bytes, data: bytes = b"x", kind: bytes = b"0", size_field: bytes | None = None) -> bytes:
    return header(name, size_field if size_field is not None else b"%011o" % len(data), kind) + \
        data.ljust(-(-len(data) // 512) * 512, b"\0")


def bad_checksum() -> bytes:
    h = bytearray(file_block(b"references/after.md", b"after"))
    h[0] ^= 0x20   # the name changed after the checksum was computed
    return bytes(h)


def many_files(n: int) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        tf.addfile(_info("SKILL.md", len(MD)), io.BytesIO(MD))
        for i in range(n):
            tf.addfile(_info(f"assets/f{i:05d}"), io.BytesIO(b""))
    return buf.getvalue()


def with_md(md: bytes, extra: dict | None = None) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", format=tarfile.PAX_FORMAT) as tf:
        for path, data in {"SKILL.md": md, **(extra or {})}.items():
            tf.addfile(_info(path, len(data)), io.BytesIO(data))
    return buf.getvalue()


def fm(yaml_text: str) -> bytes:
    return f"---\n{yaml_text}---\n# body\n".encode()


LAUGHS = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(8))

# ------------------------------------------------------------------ archive cases: a common rule
ARCHIVES = {
    "pax size negative": lambda: gzip.compress(raw_tar([pax({"size": "-5"}, file_block(b"assets/neg", b"x" * 10))])),
    "pax size huge": lambda: gzip.compress(raw_tar([pax({"size": "9" * 30}, file_block(b"assets/huge", b""))])),
    "pax size not a number": lambda: gzip.compress(raw_tar([pax({"size": "12abc"}, file_block(b"assets/nan"))])),
    "pax size with sign": lambda: gzip.compress(raw_tar([pax({"size": "+1"}, file_block(b"assets/plus"))])),
    "header size not octal": lambda: gzip.compress(raw_tar([file_block(b"assets/oct", b"x", size_field=b"0000000009")])),
    "header size base-256 negative": lambda: gzip.compress(raw_tar([file_block(b"assets/b256", b"",
                                                                               size_field=b"\xff" * 12)])),
    "gnu sparse type": lambda: gzip.compress(raw_tar([file_block(b"assets/sparse", b"x", kind=b"S")])),
    "pax gnu sparse 0.1": lambda: gzip.compress(raw_tar([pax({"GNU.sparse.map": "0,1", "GNU.sparse.size": "1"},
                                                             file_block(b"assets/sp01"))])),
    "pax gnu sparse 1.0": lambda: gzip.compress(raw_tar([pax({"GNU.sparse.major": "1", "GNU.sparse.minor": "0"},
                                                             file_block(b"assets/sp10"))])),
    "path over 1024 bytes": lambda: tgz([(_info("assets/" + "/".join(["d" * 200] * 6)), b"")]),
    "name of 300 bytes": lambda: tgz([(_info("references/" + "n" * 300, 1), b"x")]),
    "folder name of 256 bytes": lambda: tgz([(_info("references/" + "d" * 256 + "/f", 1), b"x")]),
    "symlink": lambda: tgz([(_info("assets/link", kind=tarfile.SYMTYPE, linkname="/etc/passwd"), b"")]),
    "hardlink": lambda: tgz([(_info("assets/hard", kind=tarfile.LNKTYPE, linkname="SKILL.md"), b"")]),
    "char device": lambda: tgz([(_info("assets/dev", kind=tarfile.CHRTYPE, devmajor=1, devminor=3), b"")]),
    "block device": lambda: tgz([(_info("assets/blk", kind=tarfile.BLKTYPE, devmajor=8), b"")]),
    "fifo": lambda: tgz([(_info("assets/fifo", kind=tarfile.FIFOTYPE), b"")]),
    "vendor type": lambda: gzip.compress(raw_tar([file_block(b"assets/vol", b"", kind=b"V")])),
    "absolute path": lambda: gzip.compress(raw_tar([file_block(b"/etc/cron.d/evil")])),
    "escaping path": lambda: gzip.compress(raw_tar([file_block(b"../evil")])),
    "inner escaping path": lambda: gzip.compress(raw_tar([file_block(b"assets/../../evil")])),
    "backslash path": lambda: gzip.compress(raw_tar([file_block(b"assets\\..\\evil")])),
    "duplicate names": lambda: tgz([(_info("assets/dup", 3), b"one"), (_info("assets/dup", 3), b"two")]),
    "file and folder": lambda: tgz([(_info("references/a", 1), b"a"), (_info("references/a/b", 1), b"b")]),
    "folder entry and file": lambda: tgz([(_info("references/a", kind=tarfile.DIRTYPE), b""),
                                          (_info("references/a", 1), b"a")]),
    "non-utf-8 name": lambda: gzip.compress(raw_tar([file_block(b"assets/caf\xe9")])),
    "escape character in name": lambda: gzip.compress(raw_tar([file_block(b"assets/\x1b[31mred")])),
    "newline in name": lambda: tgz([(_info("assets/a\nb", 1), b"x")]),
    "truncated gzip": lambda: tgz([(_info("assets/r.bin", 5000), os.urandom(5000))])[:-100],
    "truncated inside a file": lambda: gzip.compress(raw_tar([(_info("assets/r.bin", 5000), os.urandom(5000))])[:3000]),
    "no end-of-archive marker": lambda: tgz([(_info("assets/ok", 1), b"x")], end=False),
    "corrupt header after SKILL.md": lambda: gzip.compress(raw_tar([bad_checksum()])),
    "trailing garbage in the tar": lambda: gzip.compress(raw_tar([]) + b"GARBAGE" * 100),
    "two archives concatenated": lambda: gzip.compress(raw_tar([]) + raw_tar([(_info("assets/hidden", 1), b"x")])),
    "trailing garbage after gzip": lambda: tgz([]) + b"not gzip at all",
    "malformed pax record": lambda: gzip.compress(raw_tar([header(b"././@PaxHeader", b"%011o" % 12, b"x")
                                                           + b"99 path=x\n\0\0".ljust(512, b"\0")
                                                           + file_block(b"assets/p")])),
    "global pax header naming a path": lambda: gzip.compress(raw_tar([
        header(b"pax_global_header", b"%011o" % 16, b"g") + b"16 path=assets/\n".ljust(512, b"\0"),
        file_block(b"assets/g")])),
    "extended header then the end": lambda: gzip.compress(raw_tar([header(b"././@LongLink", b"%011o" % 4, b"L")
                                                                   + b"abc\0".ljust(512, b"\0")])),
    "huge pax header": lambda: ext_header_targz(tarfile.XHDTYPE, 4 << 20, {"SKILL.md": MD}),
    "gzip of garbage": lambda: gzip.compress(b"not a tar archive" * 100),
    "not gzip": lambda: b"PK\x03\x04" + b"\0" * 100,
    "empty gzip": lambda: gzip.compress(b""),
    "too many files": lambda: many_files(10_001),
    "zip bomb": gzip_bomb,
}

# ------------------------------------------------------------------ skill-only cases: frontmatter and bundle rules
SKILL_ONLY = {
    "frontmatter over 64 KiB": lambda: with_md(fm(f"name: {NAME}\ndescription: d\nlicense: {'x' * 70_000}\n")),
    "frontmatter of 8 MiB": lambda: with_md(fm(f"name: {NAME}\ndescription: d\n" + "# pad\n" * (8 << 17))),
    "frontmatter never closed": lambda: with_md(b"---\nname: hostile\ndescription: d\n" + b"x: y\n" * 20_000),
    "billion laughs": lambda: with_md(fm(f"name: {NAME}\ndescription: d\n{LAUGHS}")),
    "billion laughs in a known field": lambda: with_md(fm(f"name: {NAME}\n{LAUGHS}description: *i\n")),
    "recursive alias": lambda: with_md(fm(f"name: {NAME}\ndescription: d\nallowed-tools: &t [*t]\n")),
    "deep nesting": lambda: with_md(fm(f"name: {NAME}\ndescription: {'[' * 5000}{']' * 5000}\n")),
    "frontmatter is a list": lambda: with_md(fm("- name\n- description\n")),
    "frontmatter is a scalar": lambda: with_md(fm("just text\n")),
    "missing name": lambda: with_md(fm("description: d\n")),
    "missing description": lambda: with_md(fm(f"name: {NAME}\n")),
    "name mismatch": lambda: with_md(fm("name: someone-else\ndescription: d\n")),
    "SKILL.md not utf-8": lambda: with_md(b"---\nname: hostile\ndescription: caf\xe9\n---\n"),
    "no SKILL.md": lambda: gzip.compress(raw_tar([])[1024:]),
    "names differing in case": lambda: with_md(MD, {"references/Guide.md": b"a", "references/guide.md": b"b"}),
    ".git in a path": lambda: with_md(MD, {"scripts/.git/config": b"x"}),
}


def _try_project(b, pid, data: bytes):
    before, blobs_before = listing(b, pid), _blob_files(b)
    r = post_bundle(b, pid, data)
    changed = listing(b, pid) != before or _blob_files(b) != blobs_before
    return r, changed


def _try_skill(b, sid: str, data: bytes):
    blobs_before = _blob_files(b)
    uid = stage(b, sid, data)
    checked = b.api("POST", f"/v1/skills/{sid}/validate", {"uploadId": uid})
    published = b.api("POST", f"/v1/skills/{sid}/publish", {"uploadId": uid})
    skill = b.ok("GET", f"/v1/skills/{sid}")
    # the upload itself is one stored blob (swept when it expires); nothing else may appear
    upload = hashlib.sha256(data).hexdigest()
    new = {p for p in _blob_files(b) - blobs_before
           if p.replace("/", "") != f"sha256{upload}" and not p.startswith(f"row:{upload}:")}   # file or blob row
    changed = skill["version"] != 0 or b.ok("GET", f"/v1/skills/{sid}/versions")["versions"] != [] or bool(new)
    return checked, published, changed


def _verdicts(b, cases: dict, project: bool) -> list[str]:
    wrong = []
    pid = new_project(b) if project else None
    if project:
        post_bundle(b, pid, gzip.compress(raw_tar([(_info("existing.txt", 6), b"before")])))
    sid = create(b, NAME)["id"]
    for label, make in cases.items():
        data = make()
        if project:
            r, changed = _try_project(b, pid, data)
            if r.status not in (400, 413) or r.code not in ("invalid_request", "payload_too_large") or changed:
                wrong.append(f"{label}: project files answered {r.status} {r.body}, changed={changed}")
        checked, published, changed = _try_skill(b, sid, data)
        ok = (checked.status == 200 and checked.body["valid"] is False and checked.body["errors"]
              and all(set(e) == {"path", "message"} and e["message"] for e in checked.body["errors"])
              and published.status == 422 and published.code == "unprocessable"
              and published.body["error"]["detail"]["errors"] == checked.body["errors"] and not changed)
        if not ok:
            wrong.append(f"{label}: skill validate {checked.status} {str(checked.body)[:300]}, "
                         f"publish {published.status} {str(published.body)[:300]}, changed={changed}")
    return wrong


def test_corpus_size():
    assert len(ARCHIVES) + len(SKILL_ONLY) >= 60


def test_every_hostile_archive_is_refused_the_same_on_both_paths(backend):
    wrong = _verdicts(backend, ARCHIVES, project=True)
    assert not wrong, "\n".join(wrong)


def test_every_hostile_frontmatter_or_skill_rule_is_refused(backend):
    wrong = _verdicts(backend, SKILL_ONLY, project=False)
    assert not wrong, "\n".join(wrong)


def test_the_valid_twin_of_the_corpus_is_accepted(backend):
    """The builders make valid archives when nothing hostile is added: the refusals above are
    for the hostile part, not the framing."""
    b = backend
    pid = new_project(b)
    data = gzip.compress(raw_tar([pax({"path": "references/long-" + "é" * 100}, file_block(b"x", b"pax path")),
                                  file_block(b"references/plain.md", b"plain")]))
    assert post_bundle(b, pid, data).body == {"added": 3, "updated": 0}
    sid = create(b, NAME)["id"]
    uid = stage(b, sid, data)
    assert b.ok("POST", f"/v1/skills/{sid}/validate", {"uploadId": uid})["valid"] is True
    assert b.api("POST", f"/v1/skills/{sid}/publish", {"uploadId": uid}).status == 201


CLI_CASES = ["pax size negative", "gnu sparse type", "corrupt header after SKILL.md", "name of 300 bytes"]


def test_the_cli_refuses_with_exit_7_and_one_line(backend, tmp_path):
    b = backend
    pid = new_project(b)
    for label in CLI_CASES:
        f = tmp_path / "bundle.tar.gz"
        f.write_bytes(ARCHIVES[label]())
        r = b.wsctl("specialist", "files", "bundle", "upload", pid, f, expect=7)
        assert "Traceback" not in r.err and r.err.strip().count("\n") == 0, (label, r.err)
    assert b.ok("GET", f"/v1/projects/{pid}/files")["files"] == []
    skill = tmp_path / NAME
    (skill / "references").mkdir(parents=True)
    for label, text in {"frontmatter over 64 KiB": fm(f"name: {NAME}\ndescription: d\nlicense: {'x' * 70_000}\n"),
                        "billion laughs": fm(f"name: {NAME}\n{LAUGHS}description: *i\n")}.items():
        (skill / "SKILL.md").write_bytes(text)
        r = b.wsctl("skill", "validate", skill, expect=7)
        assert "invalid" in r.out and "Traceback" not in r.err, (label, r.out, r.err)
        b.wsctl("skill", "publish", skill, expect=7)
    assert b.ok("GET", "/v1/skills")["skills"] == []


def test_what_publishes_at_the_limits_pulls_whole(backend, tmp_path):
    """The boundary of the pull rules: a 255-byte name, a 1,024-byte path and an executable
    script publish, and `wsctl skill pull` writes every one of them back, byte for byte."""
    b = backend
    deep = "references/" + "/".join(["d" * 200] * 4) + "/"
    files = {"SKILL.md": MD, "references/" + "n" * 255: b"long name",
             deep + "p" * (1024 - len(deep.encode())): b"long path", "scripts/run.sh": b"#!/bin/sh\necho hi\n"}
    assert max(len(p.encode()) for p in files) == 1024
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", format=tarfile.PAX_FORMAT) as tf:
        for path, data in files.items():
            tf.addfile(_info(path, len(data), mode=0o755 if path.endswith(".sh") else 0o644), io.BytesIO(data))
    sid = create(b, NAME)["id"]
    r = b.api("POST", f"/v1/skills/{sid}/publish", {"uploadId": stage(b, sid, buf.getvalue())})
    assert r.status == 201, r.body
    out = tmp_path / "pulled"
    b.wsctl("skill", "pull", NAME, out)
    got = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert got == files
    assert os.access(out / "scripts" / "run.sh", os.X_OK)
