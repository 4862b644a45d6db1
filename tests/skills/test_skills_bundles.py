"""Skill bundles on both backends: presigned upload -> validate -> publish, pull, hostile archives,
baseVersion conflicts, concurrent writers, versions and revert."""
from __future__ import annotations

import gzip
import io
import json
import tarfile
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.api_helpers import assert_error
from tests.skill_helpers import create, ext_header_targz, get_url, hostile_targz, publish_bundle, skill_md, stage, targz

FILES = {"SKILL.md": skill_md("round-trip"), "scripts/run.py": "print('hi')\n",
         "references/guide.md": "# Guide\n", "assets/logo.bin": bytes(range(256)) * 4}


def _untar(data: bytes) -> dict:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar if m.isfile()}


def _as_bytes(files: dict) -> dict:
    return {p: c.encode() if isinstance(c, str) else c for p, c in files.items()}


@pytest.mark.parametrize("top", [None, "round-trip"])
def test_upload_validate_publish_round_trip(backend, top):
    b = backend
    s = create(b, "round-trip")
    up = b.api("POST", f"/v1/skills/{s['id']}/bundle-upload-url")
    assert up.status == 201 and set(up.body) == {"uploadId", "url", "expiresAt"}
    assert up.body["url"].startswith("http://" if b.kind == "remote" else "file://")
    uid = stage(b, s["id"], targz(FILES, top=top))
    checked = b.ok("POST", f"/v1/skills/{s['id']}/validate", {"uploadId": uid})
    assert checked == {"valid": True, "errors": [], "warnings": []}
    v = b.api("POST", f"/v1/skills/{s['id']}/publish", {"uploadId": uid, "baseVersion": 0})
    assert v.status == 201 and v.body["number"] == 1 and v.body["source"] == "bundle"
    assert v.body["skill"]["version"] == 1 and v.body["skill"]["description"] == "Does a thing. Use when testing."
    # an upload publishes once
    assert_error(b.api("POST", f"/v1/skills/{s['id']}/publish", {"uploadId": uid}), 409, "conflict")

    link = b.ok("GET", f"/v1/skills/{s['id']}/bundle-url")
    assert set(link) == {"url", "expiresAt"}
    assert link["url"].startswith("http://" if b.kind == "remote" else "file://")
    got = _untar(get_url(link["url"]))
    assert got == _as_bytes(FILES)                     # entries at the root, identical bytes
    one = b.ok("GET", f"/v1/skills/{s['id']}/file-url", query={"path": "assets/logo.bin"})
    assert get_url(one["url"]) == FILES["assets/logo.bin"]
    assert_error(b.api("GET", f"/v1/skills/{s['id']}/file-url", query={"path": "nope.md"}), 404, "not_found")
    listed = b.ok("GET", f"/v1/skills/{s['id']}/files")
    binary = next(f for f in listed["files"] if f["path"] == "assets/logo.bin")
    assert binary["content"] is None and binary["size"] == 1024
    assert b.ok("GET", f"/v1/skills/{s['id']}")["lastUsedAt"] is not None


def test_pull_gives_identical_files(backend, tmp_path):
    b = backend
    s = create(b, "round-trip")
    publish_bundle(b, s["id"], targz(FILES))
    out = tmp_path / "pulled"
    b.wsctl("skill", "pull", "round-trip", out)
    got = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert got == _as_bytes(FILES)


def test_invalid_bundles_are_422_with_errors(backend):
    b = backend
    s = create(b, "strict-skill")
    cases = {
        "no SKILL.md": targz({"references/a.md": "x"}),
        "no frontmatter": targz({"SKILL.md": "# just text\n"}),
        "bad yaml": targz({"SKILL.md": "---\nname: strict-skill\ndescription: [unclosed\n---\n"}),
        "missing description": targz({"SKILL.md": "---\nname: strict-skill\n---\n"}),
        "unknown field": targz({"SKILL.md": skill_md("strict-skill", extra="colour: red\n")}),
        "name mismatch": targz({"SKILL.md": skill_md("other-skill")}),
        "bad metadata": targz({"SKILL.md": skill_md("strict-skill", extra="metadata:\n  tags: [a, b]\n")}),
        # a YAML escape for NUL: text no store keeps alike (PostgreSQL cannot hold it), refused on both
        "NUL in a field": targz({"SKILL.md": skill_md("strict-skill", extra='license: "MIT\\0"\n')}),
        "not gzip": b"plain bytes, not an archive",
    }
    for label, data in cases.items():
        uid = stage(b, s["id"], data)
        checked = b.ok("POST", f"/v1/skills/{s['id']}/validate", {"uploadId": uid})
        assert checked["valid"] is False and checked["errors"], label
        assert all(set(e) == {"path", "message"} for e in checked["errors"]), label
        r = b.api("POST", f"/v1/skills/{s['id']}/publish", {"uploadId": uid})
        assert_error(r, 422, "unprocessable")
        assert r.body["error"]["detail"]["errors"] == checked["errors"], label
    mismatch = b.ok("POST", f"/v1/skills/{s['id']}/validate",
                    {"uploadId": stage(b, s["id"], cases["name mismatch"])})
    assert "must equal the skill's name" in mismatch["errors"][0]["message"]
    nul = b.ok("POST", f"/v1/skills/{s['id']}/validate", {"uploadId": stage(b, s["id"], cases["NUL in a field"])})
    assert [e["message"] for e in nul["errors"]] == ["The frontmatter holds a NUL character (a \\0 or \\x00 "
                                                     "escape); remove it."]
    assert b.ok("GET", f"/v1/skills/{s['id']}")["version"] == 0
    assert b.ok("GET", f"/v1/skills/{s['id']}/versions")["versions"] == []


@pytest.mark.parametrize("kind", ["symlink", "hardlink", "absolute", "escape", "device"])
def test_hostile_entries_refused(backend, kind):
    b = backend
    s = create(b, "hostile")
    r = publish_bundle(b, s["id"], hostile_targz(kind))
    assert_error(r, 422, "unprocessable")
    assert r.body["error"]["detail"]["errors"]
    assert b.ok("GET", f"/v1/skills/{s['id']}")["version"] == 0
    assert not list(b.workspace.parent.glob("evil")) and not (b.workspace / "evil").exists()


@pytest.mark.parametrize("kind", [tarfile.XHDTYPE, tarfile.GNUTYPE_LONGNAME])
def test_oversized_extended_header_is_refused(backend, kind):
    """A pax or GNU long-name header of 4 MiB (a few KiB packed; 50 MiB packed would inflate to
    gigabytes) was read whole into the server's memory; a path needs at most a few KiB."""
    b = backend
    s = create(b, "hostile")
    r = publish_bundle(b, s["id"], ext_header_targz(kind, 4 << 20, {"SKILL.md": skill_md("hostile")}))
    assert_error(r, 422, "unprocessable")
    assert b.ok("GET", f"/v1/skills/{s['id']}")["version"] == 0


def test_flood_of_entries_is_refused(backend):
    """Folder headers are not files, but each was kept in memory: a small gzip of repeated headers
    held millions. Entries are bounded like files (5x the file limit)."""
    b = backend
    s = create(b, "hostile")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", format=tarfile.USTAR_FORMAT) as tar:
        md = skill_md("hostile").encode()
        info = tarfile.TarInfo("SKILL.md")
        info.size = len(md)
        tar.addfile(info, io.BytesIO(md))
        folder = tarfile.TarInfo("assets")
        folder.type = tarfile.DIRTYPE
        for _ in range(6000):
            tar.addfile(folder)
    r = publish_bundle(b, s["id"], buf.getvalue())
    assert_error(r, 422, "unprocessable")
    assert b.ok("GET", f"/v1/skills/{s['id']}")["version"] == 0


def _raw_name_targz(name: bytes) -> bytes:
    """SKILL.md plus one file whose raw header name tarfile would not write."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for path, data in (("SKILL.md", skill_md("hostile").encode()), ("assets/PLACEHOLDER", b"x")):
            info = tarfile.TarInfo(path)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    raw = bytearray(buf.getvalue())
    at = raw.index(b"assets/PLACEHOLDER")
    header = raw[at:at + 512]
    header[0:100] = name.ljust(100, b"\0")
    header[148:156] = b" " * 8
    header[148:156] = b"%06o\0 " % sum(header)
    raw[at:at + 512] = header
    return gzip.compress(bytes(raw))


@pytest.mark.parametrize("name", [b"assets/caf\xe9.md", b"assets/\x1b[2Jclear.md", b"assets/a\nb.md"])
def test_file_names_not_utf8_or_with_control_characters_are_refused(backend, name):
    """A name that is not UTF-8 became a lone surrogate (stored, then a 500 when answered); control
    characters in names reach terminals through `skill files` and `skill pull`."""
    b = backend
    s = create(b, "hostile")
    r = publish_bundle(b, s["id"], _raw_name_targz(name))
    assert_error(r, 422, "unprocessable")
    assert b.ok("GET", f"/v1/skills/{s['id']}")["version"] == 0
    b.ok("PUT", f"/v1/skills/{s['id']}/files", {"path": "SKILL.md", "content": skill_md("hostile")})
    for bad in ("assets/\x1b]0;title\x07.md", "assets/\ud800.md"):
        body = {"path": bad, "content": "x"}
        raw = json.dumps(body).encode() if b.kind == "remote" else None   # JSON escapes the lone surrogate
        assert_error(b.api("PUT", f"/v1/skills/{s['id']}/files", body, raw=raw), 400, "invalid_request")
    assert b.ok("GET", f"/v1/skills/{s['id']}")["version"] == 1


def test_upload_and_validate_need_a_real_upload(backend):
    b = backend
    s = create(b, "staged")
    other = create(b, "other-staged")
    assert_error(b.api("POST", f"/v1/skills/{s['id']}/validate", {}), 400, "invalid_request")
    assert_error(b.api("POST", f"/v1/skills/{s['id']}/validate", {"uploadId": "upl_nope"}), 404, "not_found")
    up = b.ok("POST", f"/v1/skills/{s['id']}/bundle-upload-url")
    assert_error(b.api("POST", f"/v1/skills/{s['id']}/publish", {"uploadId": up["uploadId"]}), 400, "invalid_request")
    uid = stage(b, other["id"], targz({"SKILL.md": skill_md("other-staged")}))
    assert_error(b.api("POST", f"/v1/skills/{s['id']}/publish", {"uploadId": uid}), 404, "not_found")


def test_base_version_conflict(backend):
    b = backend
    s = create(b, "racy")
    b.ok("PUT", f"/v1/skills/{s['id']}/files", {"path": "SKILL.md", "content": skill_md("racy"), "baseVersion": 0})
    r = b.api("PUT", f"/v1/skills/{s['id']}/files", {"path": "a.md", "content": "x", "baseVersion": 0})
    assert_error(r, 409, "conflict")
    assert r.body["error"]["detail"] == {"currentVersion": 1}
    r = publish_bundle(b, s["id"], targz({"SKILL.md": skill_md("racy")}), baseVersion=0)
    assert_error(r, 409, "conflict")
    assert b.ok("GET", f"/v1/skills/{s['id']}")["version"] == 1


def test_concurrent_writes_without_base_version_all_land(backend):
    b = backend
    s = create(b, "busy")
    b.ok("PUT", f"/v1/skills/{s['id']}/files", {"path": "SKILL.md", "content": skill_md("busy")})
    n = 8

    def write(i):
        return b.api("PUT", f"/v1/skills/{s['id']}/files", {"path": f"references/f{i}.md", "content": f"{i}"})

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(write, range(n)))
    assert all(r.status == 200 for r in results), [r.body for r in results if r.status != 200]
    numbers = sorted(r.body["number"] for r in results)
    assert numbers == list(range(2, n + 2))
    versions = b.ok("GET", f"/v1/skills/{s['id']}/versions")["versions"]
    assert [v["number"] for v in versions] == list(range(n + 1, 0, -1))
    files = {f["path"] for f in b.ok("GET", f"/v1/skills/{s['id']}/files")["files"]}
    assert files == {"SKILL.md", *(f"references/f{i}.md" for i in range(n))}   # no edit lost


def test_versions_and_revert(backend):
    b = backend
    s = create(b, "revertible")
    v1 = b.ok("PUT", f"/v1/skills/{s['id']}/files", {"path": "SKILL.md", "content": skill_md("revertible")})
    v2 = publish_bundle(b, s["id"], targz({"SKILL.md": skill_md("revertible", "Second."), "assets/x": b"\x00\x01"}))
    assert v2.status == 201
    versions = b.ok("GET", f"/v1/skills/{s['id']}/versions")
    assert [v["number"] for v in versions["versions"]] == [2, 1] and versions["nextCursor"] is None
    assert set(versions["versions"][0]) == {"id", "skillId", "number", "publishedAt", "publishedBy", "source", "sha256"}
    assert [v["source"] for v in versions["versions"]] == ["bundle", "inline"]
    r = b.api("POST", f"/v1/skills/{s['id']}/versions/{v1['id']}/revert", {"baseVersion": 1})
    assert_error(r, 409, "conflict")
    r = b.api("POST", f"/v1/skills/{s['id']}/versions/{v1['id']}/revert")
    assert r.status == 201 and r.body["number"] == 3 and r.body["source"] == "revert"
    assert r.body["sha256"] == v1["sha256"]
    assert r.body["skill"]["description"] == "Does a thing. Use when testing."
    assert [f["path"] for f in b.ok("GET", f"/v1/skills/{s['id']}/files")["files"]] == ["SKILL.md"]
    assert [v["number"] for v in b.ok("GET", f"/v1/skills/{s['id']}/versions")["versions"]] == [3, 2, 1]
    page = b.ok("GET", f"/v1/skills/{s['id']}/versions", query={"limit": "2"})
    rest = b.ok("GET", f"/v1/skills/{s['id']}/versions", query={"cursor": page["nextCursor"]})
    assert [v["number"] for v in page["versions"] + rest["versions"]] == [3, 2, 1]
    assert_error(b.api("POST", f"/v1/skills/{s['id']}/versions/skv_nope/revert"), 404, "not_found")


def test_read_only_members_cannot_stage_or_publish(backend):
    b = backend
    s = create(b, "guarded")
    member = b.add_member("rita@example.com")
    tok = b.session(member["id"])
    assert_error(b.api("POST", f"/v1/skills/{s['id']}/bundle-upload-url", secret=tok), 403, "forbidden")
    assert_error(b.api("PUT", f"/v1/skills/{s['id']}/files", {"path": "SKILL.md", "content": skill_md("guarded")},
                       secret=tok), 403, "forbidden")


def test_frontmatter_scalars_are_text_as_in_skills_ref(backend):
    """skills-ref reads frontmatter with strictyaml: numbers, booleans and dates are plain text."""
    b = backend
    s = create(b, "typed-scalars")
    extra = "metadata:\n  version: 1.0\n  stable: yes\n"
    r = b.api("PUT", f"/v1/skills/{s['id']}/files",
              {"path": "SKILL.md", "content": skill_md("typed-scalars", "42", extra)})
    assert r.status == 200, r.body
    assert b.ok("GET", f"/v1/skills/{s['id']}")["description"] == "42"
    r = b.api("PUT", f"/v1/skills/{s['id']}/files",
              {"path": "SKILL.md", "content": skill_md("typed-scalars", "2024-01-01")})
    assert r.status == 200, r.body
    r = b.api("PUT", f"/v1/skills/{s['id']}/files",
              {"path": "SKILL.md", "content": skill_md("typed-scalars", "d", "metadata:\n  nested: [a]\n")})
    assert r.status == 422 and r.body["error"]["code"] == "unprocessable"
