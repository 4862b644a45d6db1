"""Presigned skill URLs: a signature, object or method that does not match is 403; past expiry 410.

Remote: over HTTP against `wsctl serve`, expiry driven by a second server on the same workspace
with WSCTL_NOW_OFFSET_SECONDS. Local: the file:// flow and the engine functions the server uses,
expiry driven by the same variable in-process.
"""
from __future__ import annotations

import httpx
import pytest

from tests.api_helpers import assert_error
from tests.conftest import base_env, serve
from tests.skill_helpers import create, file_path, put_url, skill_md, stage, targz
from workspacectl.engine.skills import transfers
from workspacectl.engine.workspaces import open_workspace
from workspacectl.errors import ApiError

BUNDLE = targz({"SKILL.md": skill_md("signed")})


def _flip(token: str) -> str:
    payload, mac = token.split(".")
    return f"{payload}.{('A' if mac[0] != 'A' else 'B')}{mac[1:]}"


def test_remote_tampering_is_403(backend):
    if backend.kind != "remote":
        pytest.skip("HTTP URLs are the remote backend's")
    b = backend
    s = create(b, "signed")
    up = b.ok("POST", f"/v1/skills/{s['id']}/bundle-upload-url")
    base, token = up["url"].rsplit("/", 1)
    assert_error(httpx.put(f"{base}/{_flip(token)}", content=BUNDLE, trust_env=False), 403, "forbidden")
    assert_error(httpx.put(f"{base}/garbage", content=BUNDLE, trust_env=False), 403, "forbidden")
    assert_error(httpx.get(up["url"], trust_env=False), 403, "forbidden")                   # wrong method
    assert_error(httpx.put(up["url"].replace("/upload/", "/download/"), content=BUNDLE, trust_env=False),
                 403, "forbidden")
    assert put_url(up["url"], BUNDLE) == 200
    assert_error(httpx.put(up["url"], content=BUNDLE, trust_env=False), 409, "conflict")    # one object only
    b.ok("POST", f"/v1/skills/{s['id']}/publish", {"uploadId": up["uploadId"]})
    link = b.ok("GET", f"/v1/skills/{s['id']}/bundle-url")["url"]
    assert httpx.get(link, trust_env=False).status_code == 200
    dbase, dtoken = link.rsplit("/", 1)
    assert_error(httpx.get(f"{dbase}/{_flip(dtoken)}", trust_env=False), 403, "forbidden")
    assert_error(httpx.put(link, content=b"x", trust_env=False), 403, "forbidden")
    # another object under the same signature: swap the payload of a file link into the bundle link
    flink = b.ok("GET", f"/v1/skills/{s['id']}/file-url", query={"path": "SKILL.md"})["url"]
    forged = f"{dbase}/{flink.rsplit('/', 1)[1].split('.')[0]}.{dtoken.split('.')[1]}"
    assert_error(httpx.get(forged, trust_env=False), 403, "forbidden")
    assert "/blobs/***" in b.server.log_text() and dtoken not in b.server.log_text()


def test_remote_expired_is_410(backend):
    if backend.kind != "remote":
        pytest.skip("HTTP URLs are the remote backend's")
    b = backend
    s = create(b, "signed")
    up = b.ok("POST", f"/v1/skills/{s['id']}/bundle-upload-url")
    stage(b, s["id"], BUNDLE)
    b.ok("POST", f"/v1/skills/{s['id']}/publish", {"uploadId": stage(b, s["id"], BUNDLE)})
    link = b.ok("GET", f"/v1/skills/{s['id']}/bundle-url")["url"]
    with serve(b.workspace, base_env(b.workspace.parent / "late-home"), offset=16 * 60) as late:
        token = up["url"].rsplit("/", 1)[1]
        assert_error(httpx.put(f"{late}/blobs/upload/{token}", content=BUNDLE, trust_env=False), 410, "expired")
        dtoken = link.rsplit("/", 1)[1]
        assert_error(httpx.get(f"{late}/blobs/download/{dtoken}", trust_env=False), 410, "expired")
        # tampered and expired: the signature is checked first
        assert_error(httpx.get(f"{late}/blobs/download/{_flip(dtoken)}", trust_env=False), 403, "forbidden")


def test_local_signatures_and_expiry(backend, monkeypatch):
    if backend.kind != "local":
        pytest.skip("the engine functions behind the local file:// flow")
    b = backend
    ws = open_workspace(str(b.workspace))
    s = create(b, "signed")
    up = b.ok("POST", f"/v1/skills/{s['id']}/bundle-upload-url")
    token = file_path(up["url"]).name
    with pytest.raises(ApiError) as e:
        transfers.receive_upload(ws, _flip(token), [BUNDLE])
    assert e.value.code == "forbidden"
    with pytest.raises(ApiError) as e:
        transfers.serve_download(ws, token)                 # an upload token is not a download token
    assert e.value.code == "forbidden"
    # a file written under a forged name is never taken in
    (file_path(up["url"]).parent / _flip(token)).write_bytes(BUNDLE)
    assert_error(b.api("POST", f"/v1/skills/{s['id']}/validate", {"uploadId": up["uploadId"]}), 400, "invalid_request")
    # written at the real URL, then checked after the link expired: 410
    put_url(up["url"], BUNDLE)
    monkeypatch.setenv("WSCTL_NOW_OFFSET_SECONDS", str(16 * 60))
    assert_error(b.api("POST", f"/v1/skills/{s['id']}/validate", {"uploadId": up["uploadId"]}), 410, "expired")
    with pytest.raises(ApiError) as e:
        transfers.verify(ws, token, "PUT")
    assert e.value.code == "expired"
    monkeypatch.delenv("WSCTL_NOW_OFFSET_SECONDS")
    # the local download URL is a file:// copy of the canonical bundle
    b.ok("POST", f"/v1/skills/{s['id']}/publish", {"uploadId": stage(b, s["id"], BUNDLE)})
    link = b.ok("GET", f"/v1/skills/{s['id']}/bundle-url")
    assert link["url"].startswith("file://") and file_path(link["url"]).read_bytes()[:2] == b"\x1f\x8b"


def test_download_of_a_file_with_a_non_latin_name(backend):
    """Headers are latin-1: the presigned GET of `references/技能.md` must not be a 500."""
    b = backend
    s = create(b, "unicode-files")
    b.ok("PUT", f"/v1/skills/{s['id']}/files", {"path": "SKILL.md", "content": skill_md("unicode-files")})
    b.ok("PUT", f"/v1/skills/{s['id']}/files", {"path": "references/技能 ü.md", "content": "hi"})
    link = b.ok("GET", f"/v1/skills/{s['id']}/file-url", query={"path": "references/技能 ü.md"})["url"]
    if backend.kind == "remote":
        r = httpx.get(link, trust_env=False)
        assert r.status_code == 200 and r.content == b"hi"
        assert "filename*=UTF-8''%E6%8A%80%E8%83%BD%20%C3%BC.md" in r.headers["content-disposition"]
    else:
        assert file_path(link).read_bytes() == b"hi"


def test_unsigned_token_is_403_whatever_its_payload(backend):
    """The payload was parsed before the signature was checked: deeply nested JSON in an unsigned
    token raised RecursionError (a 500 from a request needing no key)."""
    import base64

    payload = base64.urlsafe_b64encode(b"[" * 100_000).decode().rstrip("=")
    forged = f"{payload}.{'A' * 43}"
    if backend.kind == "local":
        ws = open_workspace(str(backend.workspace))
        for method in ("GET", "PUT"):
            with pytest.raises(ApiError) as e:
                transfers.verify(ws, forged, method)
            assert e.value.code == "forbidden"
        return
    short = f"{base64.urlsafe_b64encode(b'[' * 3000).decode().rstrip('=')}.{'A' * 43}"   # fits a URL
    assert_error(httpx.get(f"{backend.base_url}/blobs/download/{short}", trust_env=False), 403, "forbidden")
    assert_error(httpx.put(f"{backend.base_url}/blobs/upload/{short}", content=BUNDLE, trust_env=False),
                 403, "forbidden")


def test_tokens_stay_out_of_the_log_however_the_path_is_spelled(backend):
    """The log redacted /blobs/<token> as sent; a percent-encoded or doubled-slash spelling reached
    the same handler (or a 404) with the token written out in full."""
    if backend.kind != "remote":
        pytest.skip("the server's access log")
    b = backend
    s = create(b, "signed")
    b.ok("PUT", f"/v1/skills/{s['id']}/files", {"path": "SKILL.md", "content": skill_md("signed")})
    token = b.ok("GET", f"/v1/skills/{s['id']}/bundle-url")["url"].rsplit("/", 1)[1]
    for spelled in (f"/%62lobs/download/{token}", f"/blobs/download/%{ord(token[0]):02X}{token[1:]}",
                    f"//blobs/download/{token}", f"/signin/../blobs/download/{token}"):
        httpx.get(httpx.URL(b.base_url + spelled), trust_env=False)
    from workspacectl.server.app import redact_path

    for spelled in (f"/%62lobs/download/{token}", f"//blobs/download/{token}", f"/%2Fconnect/{token}"):
        assert token not in redact_path(spelled)
    assert token[:40] not in b.server.log_text()
