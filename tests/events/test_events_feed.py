"""GET /v1/events and `wsctl events` on every door: what is recorded, by whom, about what; the
filters, the cursor a follower keeps, who sees what; never a secret in any event."""
from __future__ import annotations

import json
import subprocess
import threading

import pytest

from tests.conftest import WAIT_LIMIT, WSCTL
from tests.vault_helpers import (
    APIKEY_TOML,
    canary_scan,  # noqa: F401  (a fixture, named by pytestmark)
    install_service,
    make_credential,
    oauth_credential,
    token,
)

pytestmark = pytest.mark.usefixtures("canary_scan")


def feed(backend, secret: str | None = None, **query) -> list[dict]:
    r = backend.api("GET", "/v1/events", secret=secret, query={k: str(v) for k, v in query.items()})
    assert r.status == 200, r.body
    return r.body["events"]


@pytest.fixture
def keycred(backend, provider):
    install_service(backend.workspace, APIKEY_TOML.format(base=provider.url))
    provider.api_keys.add("sk-CANARY-one")
    return make_credential(backend.workspace, backend.owner["id"], "keysvc", {"apiKey": "sk-CANARY-one"},
                           {"instanceUrl": "https://one.example"})


def test_changes_are_recorded_in_order_with_actor_and_subject(backend, keycred, provider):
    owner = backend.owner["id"]
    start = backend.ok("GET", "/v1/events", query={"order": "desc", "limit": "1"})["cursor"]
    member = backend.add_member("mia@example.com", role="member")
    key = backend.ok("POST", "/v1/keys", {"kind": "platform", "scopes": ["vault:read"], "name": "ci"})
    assert backend.api("DELETE", f"/v1/keys/{key['id']}").status == 204
    cid = keycred["id"]
    backend.ok("PUT", f"/v1/credentials/{cid}/sharing", {"membershipId": member["id"], "role": "user"})
    backend.ok("PUT", f"/v1/vault/credentials/{cid}/data", {"apiKey": "sk-CANARY-two"})
    backend.ok("PATCH", f"/v1/vault/credentials/{cid}", {"name": "keysvc-live"})
    assert backend.api("DELETE", f"/v1/vault/credentials/{cid}").status == 204

    r = backend.api("GET", "/v1/events", query={"cursor": start})
    assert r.status == 200 and r.body["nextCursor"] is None
    got = [(e["type"], e["actorId"], e["subjectId"]) for e in r.body["events"]]
    assert got == [("member.added", owner, member["id"]), ("key.created", owner, key["id"]),
                   ("key.revoked", owner, key["id"]), ("credential.shared", owner, cid),
                   ("credential.updated", owner, cid), ("credential.renamed", owner, cid),
                   ("credential.deleted", owner, cid)]
    events = r.body["events"]
    assert events[3]["data"] == {"service": "keysvc", "name": "keysvc", "grantee": member["id"], "role": "user"}
    assert events[4]["data"]["changed"] == ["apiKey"]
    assert events[1]["data"] == {"kind": "platform", "name": "ci", "scopes": ["vault:read"]}
    assert all(e["id"].startswith("evt_") and e["timestamp"].endswith("Z") for e in events)
    assert r.body["cursor"] != start   # a follower resumes after the last event shown
    assert backend.ok("GET", "/v1/events", query={"cursor": r.body["cursor"]})["events"] == []
    text = json.dumps(r.body)
    assert "CANARY" not in text and key["secret"] not in text

    # The same through the command line: --json prints the API's body (newest first), --type filters.
    out = backend.wsctl("events", "--type", "credential.*", "--limit", "2", "--json")
    body = json.loads(out.out)
    assert [e["type"] for e in body["events"]] == ["credential.deleted", "credential.renamed"]
    plain = backend.wsctl("events", "--type", "key.created,key.revoked")
    assert "key.revoked" in plain.out and "key.created" in plain.out and "credential." not in plain.out


def test_filters_pages_and_order(backend, keycred):
    cid = keycred["id"]
    for name in ("a-one", "a-two", "a-three"):
        backend.ok("PATCH", f"/v1/vault/credentials/{cid}", {"name": name})
    renamed = feed(backend, type="credential.renamed", subject=cid)
    assert [e["data"]["name"] for e in renamed] == ["a-one", "a-two", "a-three"]
    newest = feed(backend, type="credential.renamed", order="desc", limit=2)
    assert [e["data"]["name"] for e in newest] == ["a-three", "a-two"]
    # Two events a page, followed by nextCursor: every event once, in order.
    seen, cursor = [], None
    while True:
        q = {"type": "credential.*", "limit": "2", **({"cursor": cursor} if cursor else {})}
        body = backend.ok("GET", "/v1/events", query=q)
        seen += [e["id"] for e in body["events"]]
        cursor = body["nextCursor"]
        if cursor is None:
            break
    assert len(seen) == len(set(seen)) == 4   # connected + three renames
    assert feed(backend, subject="cred_nothing") == []
    for bad in ({"type": "credential.nope"}, {"order": "sideways"}, {"cursor": "x"}):
        r = backend.api("GET", "/v1/events", query=bad)
        assert r.status == 400 and r.code == "invalid_request", (bad, r.body)


def test_who_sees_what(backend, keycred):
    """An owner or admin sees every event; a member only its credentials' events; a personal key
    none (403); a platform key with vault:read what its creator sees."""
    mia = backend.add_member("mia@example.com")
    mia_session = backend.session(mia["id"])
    assert feed(backend, secret=mia_session) == []   # not shared with her yet
    backend.ok("PUT", f"/v1/credentials/{keycred['id']}/sharing", {"workspace": True, "role": "viewer"})
    mine = feed(backend, secret=mia_session)
    assert {e["type"] for e in mine} == {"credential.connected", "credential.shared"}
    assert all(e["subjectId"] == keycred["id"] for e in mine)
    personal = backend.key("personal", ["projects:manage"])
    r = backend.api("GET", "/v1/events", secret=personal)
    assert r.status == 403 and r.code == "insufficient_scope"
    platform = backend.key("platform", ["vault:read"])
    assert "member.added" in {e["type"] for e in feed(backend, secret=platform)}


def test_refresh_and_broken_grant_are_events(backend, provider):
    install_service(backend.workspace, provider.service_toml("loopcrm"))
    cred, _ = oauth_credential(backend, provider, expires_in=5)
    assert token(backend, cred["id"]).status == 200   # within the margin: refreshed first
    provider.mode = "invalid_grant"
    r = backend.api("POST", f"/v1/vault/credentials/{cred['id']}/sync")
    assert r.status == 200 and r.body["status"] == "needs_reconnect"
    got = [(e["type"], e["actorId"], e["data"].get("reason")) for e in feed(backend, subject=cred["id"])]
    assert got == [("credential.connected", backend.owner["id"], None), ("credential.refreshed", None, None),
                   ("credential.broken", None, "invalid_grant")]
    assert not any(s in json.dumps(feed(backend)) for s in provider.all_secrets())


def test_skill_published_and_memory_folded(backend):
    from tests.skill_helpers import create, skill_md

    skill = create(backend, "feed-skill")
    backend.ok("PUT", f"/v1/skills/{skill['id']}/files", {"path": "SKILL.md", "content": skill_md("feed-skill")})
    (published,) = feed(backend, type="skill.published")
    assert published["subjectId"] == skill["id"] and published["actorId"] == backend.owner["id"]
    assert published["data"] == {"skill": "feed-skill", "version": 1, "source": "inline"}
    r = backend.api("POST", "/v1/memory/organization/proposals", {"text": "Deploys go out on Tuesdays."})
    assert r.status == 202, r.body
    backend.ok("POST", "/v1/memory/agent/run")
    (folded,) = feed(backend, type="memory.*")
    assert folded["type"] == "memory.folded" and folded["actorId"] is None
    assert folded["data"]["ownerType"] == "organization" and folded["data"]["folded"] == 1


def test_follow_prints_new_events(backend):
    argv = [*WSCTL, "events", "--follow", "--json", "--type", "member.added", "--interval", "0.2"]
    backend.add_member("before@example.com")   # before the follower starts: not printed
    with subprocess.Popen(argv, env=backend.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        try:
            line = ""
            # The follower starts from the feed's end: members added until it prints one are all new.
            added = []
            got = threading.Event()

            def read():
                nonlocal line
                line = proc.stdout.readline()
                got.set()

            threading.Thread(target=read, daemon=True).start()
            while not got.wait(0.5):
                added.append(backend.add_member(f"after{len(added)}@example.com")["id"])
                assert len(added) < WAIT_LIMIT * 2, "the follower printed nothing"
            event = json.loads(line)
            assert event["type"] == "member.added" and event["subjectId"] in added
        finally:
            proc.terminate()
            proc.communicate(timeout=WAIT_LIMIT)


def test_a_refused_probe_is_a_broken_event(backend, keycred, provider):
    provider.api_keys.discard("sk-CANARY-one")   # the service no longer takes the key
    r = backend.api("POST", f"/v1/vault/credentials/{keycred['id']}/sync")
    assert r.status == 200 and r.body["status"] == "invalid", r.body
    backend.ok("POST", f"/v1/vault/credentials/{keycred['id']}/sync")   # still invalid: no second event
    broken = feed(backend, type="credential.broken")
    assert [(e["subjectId"], e["actorId"], e["data"]["status"], e["data"]["reason"]) for e in broken] == [
        (keycred["id"], backend.owner["id"], "invalid", "probe_refused")]


def test_a_followers_cursor_passes_the_events_its_filter_skips(backend):
    """On the last page the cursor moves to the feed's end, past events the filter skipped; an
    event that matches after it is still found."""
    start = backend.ok("GET", "/v1/events", query={"order": "desc", "limit": "1"})["cursor"]
    backend.add_member("skip1@example.com")
    backend.add_member("skip2@example.com")
    body = backend.ok("GET", "/v1/events", query={"cursor": start, "type": "key.created"})
    assert body["events"] == [] and body["cursor"] != start
    assert backend.ok("GET", "/v1/events", query={"cursor": body["cursor"]})["events"] == []   # both passed
    key = backend.ok("POST", "/v1/keys", {"kind": "personal", "scopes": ["skills:manage"], "name": "later"})
    later = backend.ok("GET", "/v1/events", query={"cursor": body["cursor"], "type": "key.created"})
    assert [e["subjectId"] for e in later["events"]] == [key["id"]]
