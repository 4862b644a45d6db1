"""The example request in an operation's generated markdown: values go where their params say,
and the credential is presented in the service's own `[auth]` style (docs/api.md §4.1)."""
from __future__ import annotations

import textwrap

BELLS = textwrap.dedent("""
    service = "bells"
    name = "Bells"
    credentialType = "apiKey"
    envVars = { accountSid = "BELLS_SID", authToken = "BELLS_TOKEN" }
    fields = ["accountSid"]
    secretFields = ["authToken"]
    baseUrl = "https://api.bells.example/v2"
    bodyEncoding = "form"
    auth = { type = "basic", username = "accountSid", password = "authToken" }
    [[operations]]
    name = "ring"
    method = "POST"
    path = "/Accounts/{AccountSid}/Rooms/{room}/Rings.json"
    params = [ { name = "room", in = "path" }, { name = "dryRun", in = "query", type = "boolean" },
               { name = "X-Trace", in = "header" }, { name = "To", in = "body", required = true } ]
    [operations.example]
    AccountSid = "AC123"
    room = "hall b"
    dryRun = true
    "X-Trace" = "t-1"
    To = "+15550100"
    tone = { pitch = "C", beats = [1, 2] }
    [[operations]]
    name = "get-ring"
    method = "GET"
    path = "/rings/{id}"
    example = { id = 42, verbose = "yes" }
""")

GONGS = textwrap.dedent("""
    service = "gongs"
    name = "Gongs"
    credentialType = "apiKey"
    envVars = { apiKey = "GONGS_KEY" }
    baseUrl = "https://gongs.example"
    auth = { type = "header", name = "X-Api-Key", prefix = "Key ", headers = { "Gongs-Version" = "7" } }
    [[operations]]
    name = "strike"
    method = "POST"
    path = "/strikes"
    example = { loud = true }
""")


def example_of(backend, op_id: str) -> str:
    md = backend.ok("GET", f"/v1/operations/{op_id}")["markdown"]
    return md.split("## Example\n\n```bash\n", 1)[1].split("\n```", 1)[0]


def test_example_request_follows_params_and_auth_style(backend):
    for text in (BELLS, GONGS):
        assert backend.api("POST", "/v1/admin/catalog", {"content": text, "format": "toml"}).status == 201
    # path values fill the path (a field's placeholder takes its env var), query and header values
    # go where declared, the body is form-encoded, and basic auth pairs the named field and secret
    assert example_of(backend, "bells.ring").splitlines() == [
        'curl -X POST "https://api.bells.example/v2/Accounts/${BELLS_SID}/Rooms/hall%20b/Rings.json?dryRun=true" \\',
        '  -u "$BELLS_SID:$BELLS_TOKEN" \\',
        '  -H "X-Trace: t-1" \\',
        "  --data-urlencode 'To=+15550100' \\",
        "  --data-urlencode 'tone[pitch]=C' \\",
        "  --data-urlencode 'tone[beats][0]=1' \\",
        "  --data-urlencode 'tone[beats][1]=2'"]
    # an undeclared key the path names fills it; any other key of a GET is a query parameter
    assert example_of(backend, "bells.get-ring").splitlines()[0] == \
        'curl "https://api.bells.example/v2/rings/42?verbose=yes" \\'
    assert example_of(backend, "gongs.strike").splitlines() == [
        'curl -X POST "https://gongs.example/strikes" \\',
        '  -H "X-Api-Key: Key $GONGS_KEY" \\',
        '  -H "Gongs-Version: 7" \\',
        '  -H "Content-Type: application/json" \\',
        "  -d '{\"loud\": true}'"]
    r = backend.api("POST", "/v1/admin/catalog", {"content": 'bodyEncoding = "xml"\n' + GONGS, "format": "toml"})
    assert (r.status, r.code) == (400, "invalid_request") and "bodyEncoding" in r.body["error"]["message"]
    assert "bodyEncoding" not in backend.ok("GET", "/v1/integrations/gongs")


def test_builtin_examples_use_the_services_auth_and_fill_their_paths(backend):
    twilio = example_of(backend, "twilio.send-message")
    assert "/Accounts/${TWILIO_ACCOUNT_SID}/Messages.json" in twilio
    assert '-u "$TWILIO_ACCOUNT_SID:$TWILIO_AUTH_TOKEN"' in twilio and "--data-urlencode 'To=" in twilio
    assert "Content-Type: application/json" not in twilio
    issue = example_of(backend, "github.get-issue")
    assert issue.startswith('curl "https://api.github.com/repos/octocat/Hello-World/issues/1347"')
    anthropic = example_of(backend, "anthropic.create-message")
    assert '-H "x-api-key: $ANTHROPIC_API_KEY"' in anthropic and '-H "anthropic-version: ' in anthropic
    # no built-in example leaves an example value out of its path
    for service in ("github", "google-sheets", "hacker-news", "jira", "notion", "stripe", "twilio"):
        for op in backend.ok("GET", f"/v1/integrations/{service}/operations", query={"limit": "500"})["operations"]:
            detail = backend.ok("GET", f"/v1/operations/{op['opId']}")
            first = example_of(backend, op["opId"]).splitlines()[0]
            for key in (detail["example"] or {}) if isinstance(detail["example"], dict) else ():
                assert "{" + key + "}" not in first, (op["opId"], first)
