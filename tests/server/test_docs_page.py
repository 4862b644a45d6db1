"""`wsctl serve` answers /docs with an interactive reference built from /v1/openapi.json, its
assets shipped in the package: checked over HTTP (CSP, no outside URL) and in headless Chromium
(every operation rendered, a hostile summary stays text, "Send request" calls the API, no
request leaves the server, no sideways scroll on a phone)."""
from __future__ import annotations

import re

import httpx
import pytest

from tests.conftest import start_server


@pytest.fixture
def server(workspace):
    s = start_server(workspace)
    try:
        yield s.url
    finally:
        s.stop()


def test_docs_assets_ship_in_the_package_and_name_no_outside_host(server):
    with httpx.Client(base_url=server, trust_env=False, timeout=30) as c:
        page = c.get("/docs")
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        csp = page.headers["content-security-policy"]
        assert "default-src 'none'" in csp and "script-src 'self'" in csp and "connect-src 'self'" in csp
        assert "http" not in csp and "unsafe" not in csp
        for asset in ("/docs/docs.js", "/docs/docs.css"):
            r = c.get(asset)
            assert r.status_code == 200 and r.headers["content-security-policy"] == csp
            assert not re.search(r"https?://", r.text), asset  # nothing fetched from elsewhere
            assert not re.search(r"\.innerHTML\s*=|insertAdjacentHTML|document\.write", r.text), asset
        assert not re.search(r"(src|href)=\"https?://", page.text)
        assert c.get("/docs/../v1/openapi.json").status_code in (200, 404)
        assert c.get("/docs/secret.py").status_code == 404


def test_docs_page_renders_every_operation_in_chromium(server, chromium, workspace):
    from playwright.sync_api import expect  # the fixture has checked playwright is there

    spec = httpx.get(server + "/v1/openapi.json", trust_env=False, timeout=30).json()
    ops = [(m, p, o) for p, v in spec["paths"].items() for m, o in v.items()]
    outside = []
    page = chromium.new_page()
    page.set_viewport_size({"width": 1280, "height": 900})
    page.on("request", lambda r: outside.append(r.url) if not r.url.startswith(server) else None)
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(server + "/docs")
    page.wait_for_selector("body[data-ready=true]")
    assert page.locator("details").count() == len(ops)
    for tag in spec["tags"]:
        assert page.locator(f"#tag-{tag['name']} h2").inner_text().startswith(tag["name"])
    _m, _p, o = next(x for x in ops if x[1] == "/v1/auth/whoami")
    det = page.locator(f"#op-{o['operationId']}")
    assert o["summary"] in det.locator("summary").inner_text()
    det.locator("summary").click()
    # Try it: without a key the API answers 401, shown in the page.
    det.locator("button").click()
    expect(det.locator(".result")).to_have_text(re.compile(r"^401"), timeout=60_000)
    # With the owner's token: 200 and the member's JSON.
    from tests.conftest import _owner_and_token
    owner, secret = _owner_and_token(workspace)
    page.fill("#token", secret)
    det.locator("button").click()
    expect(det.locator(".result")).to_have_text(re.compile(r"^200"), timeout=60_000)
    assert owner["id"] in det.locator(".result").inner_text()
    page.screenshot(path=str(workspace.parent / "docs-desktop.png"), full_page=False)
    # Filter narrows the list.
    page.fill("#filter", "whoami")
    assert page.locator("details:not([hidden])").count() == 1
    # A phone: no sideways scroll.
    page.set_viewport_size({"width": 390, "height": 844})
    page.fill("#filter", "")
    page.locator("details").first.locator("summary").click()
    assert page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth")
    page.screenshot(path=str(workspace.parent / "docs-phone.png"))
    assert outside == []
    assert [e for e in errors if "401" not in e] == []  # the 401 of the keyless try is the only one
