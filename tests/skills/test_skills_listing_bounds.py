"""GET /v1/skills/:id/files inlines at most 4 MiB of text in all (docs/api.md §9 "Bounded
answers"); past it, a file is listed with its size, why its content is left out and the route that
answers its download. On every door."""
from __future__ import annotations

import json

from tests.skill_helpers import create, get_url, publish_bundle, skill_md, targz

MiB = 1024 * 1024


def test_inlined_content_is_capped_and_the_rest_points_to_its_download(backend):
    s = create(backend, "big-text")
    files = {"SKILL.md": skill_md("big-text"),
             "assets/big.md": "b" * (MiB + 1),              # over 1 MiB: never inlined
             "assets/logo.bin": bytes(range(256)) * 4,       # not text
             **{f"references/{c}.md": c * 1_000_000 for c in "abcd"},
             "references/ctl.txt": "\x01" * 250_000,         # 250 kB raw, 1.5 MB as JSON: past what is left
             "references/e.md": "e" * 1_000_000}
    r = publish_bundle(backend, s["id"], targz(files))
    assert r.status == 201, r.body
    body = backend.ok("GET", f"/v1/skills/{s['id']}/files")
    assert len(json.dumps(body, ensure_ascii=False).encode()) < 4 * MiB + 64 * 1024   # the answer is bounded
    by = {f["path"]: f for f in body["files"]}
    assert list(by) == sorted(files)                                                 # every file listed, by path
    inlined = {p for p, f in by.items() if f["content"] is not None}
    assert inlined == {"SKILL.md", "references/a.md", "references/b.md", "references/c.md", "references/d.md"}
    assert {p: f["contentOmitted"] for p, f in by.items() if p not in inlined} == {
        "assets/big.md": "large", "assets/logo.bin": "binary", "references/ctl.txt": "budget", "references/e.md": "budget"}
    assert body["inlineLimit"] == 4 * MiB
    assert body["inlinedBytes"] == sum(len(json.dumps(by[p]["content"]).encode()) for p in inlined) <= 4 * MiB
    for p in inlined:
        assert by[p]["contentOmitted"] is None and "fileUrl" not in by[p] and by[p]["size"] == len(files[p])
    for p in set(by) - inlined:   # where to download the rest: the route answers a presigned URL of the bytes
        f = by[p]
        assert f["size"] == len(files[p]) and f["fileUrl"].startswith(f"/v1/skills/{s['id']}/file-url?path=")
        data = files[p] if isinstance(files[p], bytes) else files[p].encode()
        assert get_url(backend.ok("GET", f["fileUrl"])["url"]) == data, p


def test_project_resources_are_capped_and_skills_filter_by_project(backend):
    from tests.project_helpers import make_project, pin

    pid, other = make_project(backend, "Holds"), make_project(backend, "Other")
    mine = [create(backend, f"held-{i}")["id"] for i in range(2)]
    create(backend, "loose")
    for sid in mine:
        assert pin(backend, sid, pid).status == 200
    listed = backend.ok("GET", "/v1/skills", query={"projectId": pid})
    assert [x["id"] for x in listed["skills"]] == mine and listed["nextCursor"] is None
    assert backend.ok("GET", "/v1/skills", query={"projectId": other})["skills"] == []
    r = backend.api("GET", "/v1/skills", query={"projectId": "proj_nope"})
    assert r.status == 404 and "wsctl specialist list" in r.body["error"]["message"]
    if backend.kind != "local":
        return   # the cap below is the engine's on every door; 500 imports over HTTP cost seconds
    for i in range(499):
        backend.ok("POST", "/v1/workflows", {"name": f"wf-{i}", "nodes": [], "projectId": pid})
    got = backend.ok("GET", f"/v1/projects/{pid}")
    assert got["project"]["counts"]["workflows"] + got["project"]["counts"]["skills"] == 501
    assert len(got["resources"]) == 500 and [r["id"] for r in got["resources"]] == sorted(r["id"] for r in got["resources"])
    page = backend.ok("GET", "/v1/workflows", query={"projectId": pid, "limit": "500"})
    assert len(page["workflows"]) == 499 and page["nextCursor"] is None
