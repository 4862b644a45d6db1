"""Projects (specialists): list/create/get/patch and the role of the nearest grant."""


def test_create_list_get_patch(backend):
    made = backend.api("POST", "/v1/projects", {"name": "Support", "icon": "🎧", "workerColor": "teal",
                                                "workerAccessories": {"head": "cap", "shirt": None, "hand": None}})
    assert made.status == 201
    p = made.body["project"]
    assert p["id"].startswith("proj_") and p["role"] == "owner" and p["isOwner"] and p["canEdit"]
    assert p["ownerMembershipId"] == backend.owner["id"] and p["orgGrant"] is None and not p["isShared"]
    assert made.body["memory"]["version"] == 1 and made.body["resources"] == []
    listed = backend.ok("GET", "/v1/projects")
    assert [x["id"] for x in listed["projects"]] == [p["id"]] and listed["nextCursor"] is None
    got = backend.ok("GET", f"/v1/projects/{p['id']}")
    assert got["project"] == p
    patched = backend.ok("PATCH", f"/v1/projects/{p['id']}", {"name": "Customer support"})
    assert patched["project"]["name"] == "Customer support" and patched["project"]["icon"] == "🎧"


def test_other_member_sees_nothing_and_personal_key_lists(backend):
    pid = backend.ok("POST", "/v1/projects", {"name": "Private"})["project"]["id"]
    bob = backend.add_member("bob@example.com")
    bob_key = backend.key("personal", ["projects:manage"], bob["id"])
    assert backend.ok("GET", "/v1/projects", secret=bob_key)["projects"] == []
    r = backend.api("GET", f"/v1/projects/{pid}", secret=bob_key)
    assert r.status == 404 and r.code == "not_found"
    r = backend.api("PATCH", f"/v1/projects/{pid}", {"name": "x"}, secret=bob_key)
    assert r.status == 404
    platform = backend.key("platform", ["vault:read"])
    r = backend.api("GET", "/v1/projects", secret=platform)
    assert r.status == 403 and r.code == "insufficient_scope"


def test_bad_bodies_and_pagination(backend):
    for body in ({}, {"name": ""}, {"name": 5}, {"name": "x", "workerAccessories": {"feet": "boots"}}, ["x"]):
        r = backend.api("POST", "/v1/projects", body)
        assert r.status == 400 and r.code == "invalid_request", (body, r.body)
    ids = [backend.ok("POST", "/v1/projects", {"name": f"p{i}"})["project"]["id"] for i in range(5)]
    seen, cursor = [], None
    while True:
        q = {"limit": "2", **({"cursor": cursor} if cursor else {})}
        body = backend.ok("GET", "/v1/projects", query=q)
        seen += [p["id"] for p in body["projects"]]
        cursor = body["nextCursor"]
        if not cursor:
            break
    assert seen == ids
    for bad in ("garbage!!", "eyJhIjoxfQ", "WzFd"):
        r = backend.api("GET", "/v1/projects", query={"cursor": bad})
        assert r.status == 400, (bad, r.body)
