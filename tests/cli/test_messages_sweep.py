"""Every error says what went wrong with what, and what to do (issue 26 item 3).

A sweep of the CLI's error paths: each exit code (1 through 8) reached through at least two
commands, on every door (local, remote on SQLite, remote on PostgreSQL), checking the contract
(CONTRACT §10: one line on stderr, `error: ...`, no traceback) and the words: the line names the
thing (the argument, the file, the server) and the fix (a command to run, a flag to pass, what
to give instead). Usage errors (2) and an unreachable server (8) do not depend on the backend:
they run once, on the local door's run, as does `vault connect` of an API key without a terminal
(against a server it prints a link to a form instead).
"""
from __future__ import annotations

import re

from tests.cli_helpers import one_error_line
from tests.conftest import NO_BACKOFF, OWNER, base_env, free_port
from tests.vault_helpers import install_service, make_credential, oauth_credential

# What a fix reads like: a command to run, a flag or variable to use, or an instruction.
FIX = re.compile(r"`wsctl [^`]+`|See `wsctl|--[a-z]|WSCTL_[A-Z]+|\b(?:[Rr]un|[Uu]se|[Gg]ive|[Pp]ass|[Cc]heck|[Aa]sk|"
                 r"[Cc]hoose|[Ss]ign in|[Ss]tart|[Rr]econnect|[Aa]llow)\b")


def checked(r, thing: str, fix: str) -> str:
    line = one_error_line(r)
    assert thing in line, f"the line does not name {thing!r}: {line}"
    assert fix in line, f"the line does not say {fix!r}: {line}"
    assert FIX.search(line), f"no fix in: {line}"
    assert "?." not in line and ".." not in line.replace("...", "") and not line.endswith(" ."), line
    return line


def test_each_exit_code_names_the_thing_and_the_fix(backend, provider, tmp_path):
    w = backend.wsctl
    mia = backend.add_member("mia@example.com", "Mia Member")
    mia_env = backend.env_for(backend.session(mia["id"]))
    narrow = backend.key("personal", ["projects:manage"])
    make_credential(backend.workspace, backend.owner["id"], "github", {"accessToken": "gh-1"})
    install_service(backend.workspace, provider.service_toml("loopcrm"))
    refused, _ = oauth_credential(backend, provider, expires_in=5)
    backend.ok("POST", "/v1/projects", {"name": "Support"})
    cases = [
        # 1: a provider refused (an OAuth refresh with a revoked grant): reconnect
        (("vault", "token", refused["id"], "--reason", "sweep"), None, 1, "loopcrm", "wsctl vault connect loopcrm"),
        (("vault", "env", refused["id"], "--reason", "sweep"), None, 1, "loopcrm", "wsctl vault connect loopcrm"),
        # 3: an unknown secret: sign in again
        (("members", "list"), backend.env_for("ws_session_" + "x" * 40), 3, "This session is unknown", "unset WSCTL_TOKEN"),
        (("vault", "list"), backend.env_for("ws_platform_" + "x" * 40), 3, "This API key is unknown", "`wsctl keys create`"),
        # 4: a key without the scope, a member without the role
        (("vault", "list"), backend.env_for(narrow), 4, "Insufficient scope", "wsctl keys create"),
        (("members", "login-code", OWNER["email"]), mia_env, 4, "owner or admin", "Ask one of them (`wsctl members list`"),
        # 5: nothing by that name or id
        (("vault", "token", "nosuch", "--reason", "sweep"), None, 5, "'nosuch'", "`wsctl vault list`"),
        (("specialist", "show", "Nope"), None, 5, "'Nope'", "`wsctl specialist list`"),
        (("workflow", "show", "wf_nope"), None, 5, "'wf_nope'", "`wsctl workflow list`"),
        # 6: taken
        (("members", "add", OWNER["email"], "--name", "Twin"), None, 6, OWNER["email"], "`wsctl members list`"),
        (("vault", "rename", "loopcrm", "github"), None, 6, "'github'", "choose another name"),
        # 7: bad input
        (("members", "add", "not-an-email", "--name", "X"), None, 7, "'not-an-email'", "give one like name@example.com"),
        (("workflow", "import", tmp_path / "missing.json"), None, 7, "missing.json", "give the path of a workflow.json"),
        (("vault", "inject", "-i", tmp_path / "absent.tpl", "-r", "sweep"), None, 7, "absent.tpl", "-i/--in-file"),
    ]
    if backend.door == "local":   # the same on every backend: before any backend, or no server at all
        closed = {**backend.env, "WSCTL_SERVER": f"http://127.0.0.1:{free_port()}", "WSCTL_TOKEN": "ws_session_" + "x" * 40,
                  **NO_BACKOFF}
        cases += [
            # an API key with no terminal to ask it at (on a server, connect prints a link instead)
            (("vault", "connect", "stripe"), None, 7, "Connecting stripe needs apiKey", "| wsctl vault connect stripe"),
            (("vault", "tokn", "x"), None, 2, "'tokn'", "Did you mean 'token'? See `wsctl vault -h`."),
            (("vault", "token", "github"), None, 2, "--reason", "See `wsctl vault token -h`."),
            (("--timeout", "0", "vault", "list"), None, 2, "--timeout", "above 0"),
            (("vault", "list"), closed, 8, closed["WSCTL_SERVER"], "start it with `wsctl serve`"),
            (("specialist", "create", "Ops"), closed, 8, closed["WSCTL_SERVER"], "Check --server / WSCTL_SERVER"),
        ]
    if backend.kind == "remote":   # a code from another workspace, or one used already
        cases.append((("auth", "login", "--server", backend.base_url, "--code", "AAAA-BBBB-CCCC"),
                      base_env(tmp_path / "elsewhere"), 3, "login code", "`wsctl members login-code EMAIL`"))
    provider.mode = "invalid_grant"
    reached = {}
    for args, env, code, thing, fix in cases:
        r = w(*args, env=env, expect=code)
        checked(r, thing, fix)
        reached.setdefault(code, []).append(args[:2])
    assert all(len(v) >= 2 for v in reached.values()), reached
    assert sorted(reached) == ([1, 2, 3, 4, 5, 6, 7, 8] if backend.door == "local" else [1, 3, 4, 5, 6, 7])


# What else reads as a fix in a message: retrying, correcting, a shape to follow, a flag.
FIX_WORDS = re.compile(r"`[^`]+`|--[a-z]|-[a-z] |WSCTL_[A-Z]+|\b(?:[Rr]un|[Uu]se|[Gg]ive|[Pp]ass|[Cc]heck|[Aa]sk|"
                       r"[Cc]hoose|[Ss]ign in|[Ss]tart|[Rr]econnect|[Aa]llow|[Ff]ix|[Tt]ry|[Rr]etry|[Mm]ake|[Ss]et|"
                       r"[Ss]ave|[Rr]emove|[Ww]ait|[Ss]ee|[Ee]dit|[Rr]ename|[Pp]ick|[Oo]pen|[Nn]ame|[Tt]ype|[Pp]ipe|"
                       r"[Rr]ead|[Ff]etch|[Ss]plit|[Tt]rim|[Cc]onvert|[Ww]rite|[Ss]top)\b|one of|it takes|must be|"
                       r"this output has|this credential's|it issues|Expected")


def test_every_error_the_cli_itself_raises_says_what_to_do():
    """The static half of the sweep: every message an ApiError raised in cli/ or backend/ carries
    (the errors no server makes: files, flags, terminals, transfers) holds a fix."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "src" / "workspacectl"
    missing = []
    for source in sorted([*(root / "cli").glob("*.py"), *(root / "backend").glob("*.py")]):
        text = source.read_text()
        for m in re.finditer(r'ApiError\(\s*"(\w+)",\s*((?:f?"(?:[^"\\]|\\.)*"\s*)+)', text):
            if not FIX_WORDS.search(m.group(2)):
                missing.append(f"{source.name}:{text[:m.start()].count(chr(10)) + 1}: {' '.join(m.group(2).split())[:120]}")
    assert not missing, "messages without a fix:\n" + "\n".join(missing)
