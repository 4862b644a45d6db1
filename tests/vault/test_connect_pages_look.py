"""The hosted connect pages as a person sees them, in headless Chromium at desktop and phone
widths, light and dark, on both backends: the workspace's and member's names (hostile ones stay
text), the service's name, description and help link, fields in the definition's order with
labels, hints and autofocus; a wrong key refused by the service's probe with nothing stored; a
clear success page; friendly used-link pages; no sideways scroll; nothing loaded from elsewhere."""
from __future__ import annotations

from tests.connect_helpers import credential_ids, path_of
from tests.vault_helpers import canary_scan, install_service, member_with_session, open_ws  # noqa: F401

HOSTILE = '<img src=x onerror="window.pwned=1">'
SERVICE_TOML = """
service = "lookcrm"
name = "Look CRM"
description = "Contacts and deals for the page tests."
credentialType = "apiKey"
envVars = {{ apiKey = "LOOK_API_KEY", instanceUrl = "LOOK_URL" }}
fields = ["instanceUrl"]
secretFields = ["apiKey"]
baseUrl = "{base}"
docsUrl = "{base}/help/keys"
probe = "whoami"
auth = {{ type = "bearer" }}
[[operations]]
name = "whoami"
summary = "Who the key belongs to"
method = "GET"
path = "/probe"
"""


def _no_sideways_scroll(page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth")


def test_connect_pages_people_trust(backend, door, provider, chromium, tmp_path, local_ws):
    from workspacectl.engine.db import transaction
    from workspacectl.engine.store.identity import set_setting

    install_service(backend.workspace, SERVICE_TOML.format(base=provider.url))
    ws = local_ws(backend.workspace)
    with transaction(ws.conn()):
        set_setting(ws.conn(), "name", "Acme " + HOSTILE)
    member = backend.add_member("eve@example.com", name="Eve " + HOSTILE)
    session = backend.session(member["id"])
    provider.api_keys.add("sk-CANARY-good")

    c = door.connect("lookcrm", secret=session)
    page = chromium.pages[0] if chromium.pages else chromium.new_page()
    outside = []
    page.on("request", lambda r: outside.append(r.url) if not r.url.startswith(door.base_url) else None)
    shots = {}
    for width, scheme in ((1280, "light"), (390, "dark")):
        page.set_viewport_size({"width": width, "height": 900})
        page.emulate_media(color_scheme=scheme)
        resp = page.goto(door.signin_link(path_of(c["connectUrl"]), session=session))
        assert resp.status == 200 and page.url == c["connectUrl"]
        assert "Acme " + HOSTILE in page.inner_text("header .workspace")
        assert "Eve " + HOSTILE in page.inner_text("header .member")
        assert page.evaluate("window.pwned") is None and page.locator("img").count() == 0
        assert page.inner_text(".service") == "Look CRM"
        assert page.inner_text(".desc") == "Contacts and deals for the page tests."
        assert page.get_attribute(".help a", "href") == provider.url + "/help/keys"
        names = page.eval_on_selector_all("form input:not([type=hidden])", "els => els.map(e => e.name)")
        assert names == ["apiKey", "instanceUrl"]
        assert [page.inner_text(f"label[for=f-{n}]") for n in names] == ["API key", "Instance URL"]
        assert all(page.inner_text(f"#f-{n}-hint") for n in names)
        assert page.evaluate("document.activeElement.name") == "apiKey"   # autofocus
        bg = page.evaluate("getComputedStyle(document.body).backgroundColor")
        assert (bg == "rgb(255, 255, 255)") == (scheme == "light"), bg   # follows the system's scheme
        assert _no_sideways_scroll(page), width
        shots[width] = tmp_path / f"connect-{width}-{scheme}.png"
        page.screenshot(path=str(shots[width]), full_page=True)

    # A wrong key: the service's probe refuses it; said on the page, nothing stored.
    page.fill("input[name=apiKey]", "sk-CANARY-wrong")
    page.fill("input[name=instanceUrl]", "https://acme.example")
    with page.expect_navigation() as nav:
        page.click("button[type=submit]")
    assert nav.value.status == 400
    assert "Look CRM refused this key" in page.inner_text("[role=alert]")
    assert page.input_value("input[name=instanceUrl]") == "https://acme.example"
    assert page.input_value("input[name=apiKey]") == ""
    assert door.status(c["id"], secret=session)["status"] == "pending"
    assert credential_ids(door, secret=session) == []
    assert _no_sideways_scroll(page)

    # The right key: checked, then a clear success page.
    page.fill("input[name=apiKey]", "sk-CANARY-good")
    with page.expect_navigation() as nav:
        page.click("button[type=submit]")
    assert nav.value.status == 200
    assert page.title().startswith("Look CRM is connected")
    assert page.inner_text("[role=status]") == "Connected. You can close this tab."
    got = door.status(c["id"], secret=session)
    assert got["status"] == "connected" and got["credentialId"] in page.inner_text("main")
    assert _no_sideways_scroll(page)
    page.screenshot(path=str(tmp_path / "connected-390-dark.png"), full_page=True)

    # The used link: a friendly page, no form.
    resp = page.goto(c["connectUrl"])
    assert resp.status == 410 and page.title().startswith("This link can no longer be used")
    assert "already used" in page.inner_text("[role=alert]") and page.locator("form").count() == 0
    assert _no_sideways_scroll(page)
    assert outside == []
    assert all(p.stat().st_size > 5000 for p in tmp_path.glob("*.png")) and len(list(tmp_path.glob("*.png"))) == 3
