"""`--debug` anywhere on the line, except as another option's value (issue 12), on every door; and
what the manual says WSCTL_DEBUG does."""
from __future__ import annotations

from tests.conftest import base_env, run_wsctl


def test_debug_as_an_options_value_is_that_value_not_the_switch(backend):
    r = backend.wsctl("specialist", "create", "dbg", "--description", "--debug", "--json")
    assert r.json["project"]["description"] == "--debug"
    assert "debug:" not in r.err
    # -p takes a value too: a profile named "--debug" (the door's WSCTL_SERVER/WSCTL_WORKSPACE wins
    # over a profile that does not exist), not tracing, and "specialist list" still the command
    r = backend.wsctl("-p", "--debug", "specialist", "list")
    assert "dbg" in r.out and "debug:" not in r.err


def test_debug_elsewhere_is_the_switch(backend):
    r = backend.wsctl("specialist", "list", "--debug", "--description-is-not-here", expect=2)
    assert "--debug" not in r.err.split("error:", 1)[1]  # taken off the line before click parsed it
    r = backend.wsctl("--debug", "specialist", "show", "dbg-missing", expect=5)
    assert "debug: GET " in r.err and "/v1/projects" in r.err
    r = backend.wsctl("specialist", "create", "dbg2", "--debug", "--description", "plain", "--json")
    assert r.json["project"]["description"] == "plain" and "debug: POST " in r.err


def test_the_manual_says_what_wsctl_debug_does(home):
    page = run_wsctl(["man", "--roff"], base_env(home)).out
    entry = page.split("WSCTL_DEBUG", 1)[1].split(".TP", 1)[0]
    assert "redacted" in entry and "request" in entry
