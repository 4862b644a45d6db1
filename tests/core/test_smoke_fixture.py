def test_backend_fixture_members(backend):
    body = backend.ok("GET", "/v1/members")
    assert [m["email"] for m in body["members"]] == ["olive@example.com"]
    cli = backend.wsctl("members", "list", "--json").json
    assert cli == body
