"""Trigger providers: GET /v1/triggers?q= (seed table, CONTRACT §9) and `wsctl trigger`."""
from __future__ import annotations

import base64
import json
import os
import textwrap

import pytest

SEED_FIELDS = {"type", "triggerId", "name", "description", "service", "requiresCredential"}
PERSONAL = ["projects:manage", "memory:manage", "skills:manage", "triggers:manage"]

ORBIT = textwrap.dedent("""
    service = "orbit"
    name = "Orbit Tracker"
    description = "Satellites."
    credentialType = "apiKey"
    [[operations]]
    name = "list-satellites"
    method = "GET"
    path = "/satellites"
    [[triggers]]
    type = "poll"
    event = "new-satellite"
    name = "New Satellite"
    description = "Fires when a SATELLITE is launched"
    cadenceSeconds = 90
    [[triggers]]
    type = "webhook"
    event = "orbit-decay"
    name = "Decay alert"
    description = "Orbit decay warnings pushed by the tracker"
    [[triggers]]
    type = "poll"
    event = "uberflug"
    name = "Überflug über der Straße"
    description = "Ein Objekt quert den Horizont"
    cadenceSeconds = 600
""")


@pytest.fixture
def orbit(backend):
    f = backend.workspace.parent / "orbit.toml"
    f.write_text(ORBIT)
    backend.wsctl("catalog", "import", f)
    return backend


def all_triggers(backend, **query):
    return backend.ok("GET", "/v1/triggers", query={"limit": "500", **query})["triggers"]


def test_list_has_the_seed_fields(orbit):
    triggers = all_triggers(orbit)
    by = {t["triggerId"]: t for t in triggers}
    assert triggers[0]["triggerId"] in ("webhook", "cron")  # generic providers come first
    assert by["webhook"]["type"] == "webhook" and by["cron"]["type"] == "cron"
    assert by["webhook"]["service"] == "webhook" and by["cron"]["service"] == "cron"   # strings, as the seed types them
    assert by["webhook"]["requiresCredential"] is False
    assert all(isinstance(t["service"], str) and t["service"] for t in triggers)
    assert set(by["webhook"]) == SEED_FIELDS and set(by["cron"]) == SEED_FIELDS
    assert by["orbit-new-satellite"] == {"type": "poll", "triggerId": "orbit-new-satellite", "name": "New Satellite",
                                         "description": "Fires when a SATELLITE is launched", "service": "orbit",
                                         "requiresCredential": True, "cadenceSeconds": 90}
    assert set(by["orbit-orbit-decay"]) == SEED_FIELDS  # cadenceSeconds is for poll providers only
    for t in triggers:
        if t["type"] == "poll":
            assert t["triggerId"] == f"{t['service']}-" + t["triggerId"][len(t["service"]) + 1:]
            assert isinstance(t["cadenceSeconds"], int) and t["cadenceSeconds"] > 0


def test_q_matches_name_service_and_description_case_insensitively(orbit):
    def ids(q):
        return {t["triggerId"] for t in all_triggers(orbit, q=q)}

    assert ids("new satellite") == {"orbit-new-satellite"}           # name
    assert ids("ORBIT") == {"orbit-new-satellite", "orbit-orbit-decay", "orbit-uberflug"}  # service
    assert ids("launched") == {"orbit-new-satellite"}                # description
    assert ids("satellite launched") == {"orbit-new-satellite"}      # every word must match
    assert ids("zzz-no-such-thing") == set()
    assert ids("100%_") == set()                                     # LIKE wildcards are literal
    assert "webhook" in ids("webhook")
    assert ids("") == {t["triggerId"] for t in all_triggers(orbit)}
    # not only ASCII: Unicode case folding (SQLite's LIKE would fold A-Z only)
    assert ids("ÜBERFLUG") == ids("überflug") == ids("STRASSE") == ids("horizont") == {"orbit-uberflug"}
    assert ids("\u65e5\u672c") == ids("%") == ids("\x00") == ids("'; DROP TABLE x; --") == set()
    assert ids("  satellite  ") == {"orbit-new-satellite"}


def _cursor(value) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")


def test_odd_queries_are_400_never_500(orbit):
    for query in ({"q": "x" * 201}, {"limit": "0"}, {"limit": "501"}, {"limit": "ten"}, {"cursor": "!!"},
                  {"cursor": _cursor(["orbit", 2 ** 70, "x"])}, {"cursor": _cursor(["\ud800", 1, "x"])},
                  {"cursor": _cursor({"a": 1})}, {"cursor": _cursor([["nested"], 1, "x"])}):
        r = orbit.api("GET", "/v1/triggers", query=query)
        assert (r.status, r.code) == (400, "invalid_request"), (query, r.body)
    # a well-formed cursor of another shape pages from the start instead of failing
    assert orbit.api("GET", "/v1/triggers", query={"cursor": _cursor(["orbit", 1.5])}).status == 200
    for name in ("%C3%9Cberflug", "%ED%A0%80", "%00", "x" * 3000):
        r = orbit.api("GET", f"/v1/triggers/{name}")
        assert (r.status, r.code) == (404, "not_found"), (name, r.body)


def test_pagination(orbit):
    full = [t["triggerId"] for t in all_triggers(orbit)]
    seen, cursor = [], None
    while True:
        body = orbit.ok("GET", "/v1/triggers", query={"limit": "3", **({"cursor": cursor} if cursor else {})})
        seen += [t["triggerId"] for t in body["triggers"]]
        cursor = body["nextCursor"]
        if not cursor:
            break
    assert seen == full
    assert orbit.api("GET", "/v1/triggers", query={"cursor": "eyJ4IjoxfQ"}).status == 400


def test_show(orbit):
    t = orbit.ok("GET", "/v1/triggers/cron")
    assert t["type"] == "cron" and t["service"] == "cron" and isinstance(t["config"].get("schedule"), str)
    assert {t["triggerId"] for t in all_triggers(orbit, q="cron")} >= {"cron"}   # q matches that service too
    # the generic providers' names are no catalog service's (so `service` stays unambiguous)
    r = orbit.api("POST", "/v1/admin/catalog", {"content": 'service = "cron"\nname = "C"\ncredentialType = "noAuth"\n'})
    assert r.status == 400 and "generic trigger provider" in r.body["error"]["message"], r.body
    r = orbit.api("GET", "/v1/triggers/nope")
    assert r.status == 404 and "wsctl trigger list" in r.body["error"]["message"]


def test_scope_rules(orbit):
    personal = orbit.key("personal", ["triggers:manage"])
    other_personal = orbit.key("personal", ["projects:manage", "memory:manage", "skills:manage"])
    platform = orbit.key("platform", ["vault:read", "docs:read"])
    for path in ("/v1/triggers", "/v1/triggers/webhook"):
        assert orbit.api("GET", path, secret=personal).status == 200
        r = orbit.api("GET", path, secret=other_personal)
        assert (r.status, r.code) == (403, "insufficient_scope")
        r = orbit.api("GET", path, secret=platform)
        assert (r.status, r.code) == (403, "insufficient_scope")
        assert orbit.api("GET", path, secret="").status == 401


def test_cli(orbit):
    body = orbit.wsctl("trigger", "list", "--json").json
    assert body == {"triggers": all_triggers(orbit), "nextCursor": None}
    lines = orbit.wsctl("trigger", "list", "-q", "satellite").out.splitlines()
    assert [line.split("\t")[:4] for line in lines] == [["orbit-new-satellite", "poll", "orbit", "90"]]
    assert orbit.wsctl("trigger", "list", "--query", "zzz-none").out == ""
    shown = orbit.wsctl("trigger", "show", "orbit-new-satellite", "--json").json
    assert shown == orbit.ok("GET", "/v1/triggers/orbit-new-satellite")
    assert "cadenceSeconds" in orbit.wsctl("trigger", "show", "orbit-new-satellite").out
    r = orbit.wsctl("trigger", "show", "nope", expect=5)
    assert r.err.startswith("error: ") and "wsctl trigger list" in r.err
    r = orbit.wsctl("trigger", "list", "-q", os.fsdecode(b"sat\xe9llite"), expect=7)   # Latin-1, not UTF-8
    assert r.err == "error: -q is not valid UTF-8 text; check it for stray bytes.\n"
    # wsctl(env=) merges onto the backend's env, so blank the session token explicitly
    env = {**orbit.env_for(orbit.key("platform", ["docs:read"])), "WSCTL_TOKEN": ""}
    r = orbit.wsctl("trigger", "list", env=env, expect=4)
    assert "Insufficient scope" in r.err
