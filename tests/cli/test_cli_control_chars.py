"""Control characters never reach a terminal raw (issue 9 item 2), on both backends.

Names, descriptions, notes, reasons, imported catalog text, field values and server error
messages hold escape sequences (colour, OSC window title, BEL, a C1 CSI, a bidi override, a
carriage return) and rich markup. Human output shows them escaped (`\\x1b`, cli/common/output.py
`visible`), piped and on a terminal (a real pty, rich styling on); `--json` returns the exact
values."""
from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import time

import pytest

from tests.conftest import WSCTL
from tests.vault_helpers import make_credential

EVIL = "Evil\x1b[31mRED\x1b]0;pwned\x07[bold]x[/]\x9b2J\u202eRTL\rFAKE"
# What must never appear raw, in any human output.
RAW = ["\x1b[31m", "\x1b]0;pwned", "\x07", "\x9b", "\u202e", "\rFAKE"]
SEEN = r"Evil\x1b[31mRED\x1b]0;pwned\x07[bold]x[/]\x9b2J\u202eRTL\rFAKE"   # as visible() shows it

CATALOG = """
service = "evilsvc"
name = "Evil \\u001b[31mKeys\\u0007 [red]x[/red]"
description = "Imported text \\u001b]0;pwned\\u0007 with \\u009b2J and \\u202e in it.\\nSecond line\\r\\u001b[2K."
credentialType = "apiKey"
envVars = { apiKey = "EVIL_KEY", instanceUrl = "EVIL_URL" }
fields = ["instanceUrl"]
[[operations]]
name = "ping"
summary = "Ping \\u001b[5mblink\\u001b[0m"
method = "GET"
path = "/ping"
"""


@pytest.fixture
def hostile(backend):
    """Every kind of text another member or the outside can put in front of you, holding EVIL."""
    b = backend
    b.ok("POST", "/v1/admin/catalog", {"content": CATALOG, "filename": "evil.toml"})
    cred = make_credential(b.workspace, b.owner["id"], "evilsvc", {"apiKey": "k-1"}, fields={"instanceUrl": EVIL})
    assert b.api("POST", f"/v1/credentials/{cred['id']}/token", {"reason": EVIL}).status == 200
    proj = b.ok("POST", "/v1/projects", {"name": EVIL, "description": EVIL + "\nline two"})["project"]
    b.ok("POST", "/v1/memory/membership/proposals", {"text": EVIL})
    b.ok("POST", "/v1/memory/organization/proposals", {"text": EVIL})
    b.ok("POST", "/v1/memory/agent/run")                       # folds them into the guides ...
    b.ok("POST", "/v1/memory/membership/proposals", {"text": EVIL + "\nmore"})  # ... and one stays pending
    version = b.ok("GET", f"/v1/projects/{proj['id']}")["memory"]["version"]
    b.ok("PUT", f"/v1/projects/{proj['id']}/memory", {"text": EVIL, "version": version})
    return {"cred": cred["id"], "proj": proj["id"]}


def human_commands(h: dict) -> list[list[str]]:
    return [["specialist", "list"], ["specialist", "show", h["proj"]], ["specialist", "memory", "show", h["proj"]],
            ["memory", "show", "me"],
            ["memory", "show", "org"], ["vault", "log", h["cred"]], ["vault", "list"], ["vault", "show", h["cred"]],
            ["catalog", "integration", "evilsvc"], ["catalog", "integrations"], ["catalog", "operations", "evilsvc"]]


def control_bytes(data: bytes) -> set[str]:
    """Every C0 (but newline and tab), DEL, C1 and bidi control in the decoded output."""
    text = data.decode("utf-8")
    return set(re.findall("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]", text))


def run_in_pty(args: list[str], env: dict) -> bytes:
    """Run wsctl with stdin, stdout and stderr on a pseudo-terminal; answers all it wrote."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([*WSCTL, *args], env=env, stdin=slave, stdout=slave, stderr=slave, close_fds=True)
    os.close(slave)
    out = bytearray()
    deadline = time.monotonic() + 300   # a hang fails the test instead of blocking the suite
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 5)
        if not ready:
            if proc.poll() is not None:
                break
            continue
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    assert proc.wait(60) == 0, (args, bytes(out)[-2000:])
    return bytes(out)


def test_piped_human_output_shows_control_characters_escaped(backend, hostile):
    for args in human_commands(hostile):
        r = backend.wsctl(*args)
        for stream in (r.out, r.err):
            assert control_bytes(stream.encode()) == set(), (args, stream)
    r = backend.wsctl("specialist", "list")
    assert SEEN in r.out, r.out
    line = next(ln for ln in r.out.splitlines() if ln.startswith(hostile["proj"]))
    assert len(line.split("\t")) == 8   # a tab or newline in a name cannot shift or fake columns
    assert SEEN in backend.wsctl("vault", "log", hostile["cred"]).out
    shown = backend.wsctl("vault", "show", hostile["cred"]).out
    assert SEEN in shown and re.search(r"^name +evilsvc$", shown, re.M)  # a credential's name is a plain handle
    assert SEEN in backend.wsctl("specialist", "memory", "show", hostile["proj"]).out
    memory = backend.wsctl("memory", "show", "me")
    assert SEEN in memory.out and SEEN in memory.err   # the guide, and the pending note on stderr
    described = backend.wsctl("catalog", "integration", "evilsvc").out
    assert r"Imported text \x1b]0;pwned\x07 with \x9b2J and \u202e in it." in described
    assert "\nSecond line\\r\\x1b[2K." in described    # a newline stays a newline; a lone CR does not


def test_on_a_terminal_rich_styles_but_member_text_stays_inert(backend, hostile):
    env = {**backend.env, "TERM": "xterm-256color", "COLUMNS": "400", "LINES": "50"}
    env.pop("NO_COLOR", None)
    seen_styling = False
    for args in human_commands(hostile):
        out = run_in_pty(args, env)
        text = out.decode("utf-8")
        for raw in RAW:
            assert raw not in text, (args, raw, text)
        assert "\x07" not in text and "\x1b]" not in text, (args, text)   # no bell, no OSC at all
        assert not control_bytes(out) - {"\x1b", "\r"}, (args, control_bytes(out))
        assert not re.search("\r(?!\n)", text), (args, text)   # CR only as the pty's CRLF
        seen_styling |= "\x1b[" in text
        if args[:2] == ["specialist", "list"]:
            plain = re.sub(r"\x1b\[[0-9;]*m", "", text)
            assert SEEN[:40] in plain and "[bold]x[/]" in plain, plain  # markup printed as typed
    assert seen_styling   # rich really did style: the test ran on a terminal


def test_json_returns_the_exact_values(backend, hostile):
    projects = backend.wsctl("specialist", "list", "--json").json["projects"]
    assert [p["name"] for p in projects if p["id"] == hostile["proj"]] == [EVIL]
    entries = backend.wsctl("vault", "log", hostile["cred"], "--json").json["entries"]
    assert [e["reason"] for e in entries] == [EVIL]
    memory = backend.wsctl("memory", "show", "me", "--json")
    assert EVIL in memory.json["guide"] and memory.json["pendingNotes"][0]["text"] == EVIL + "\nmore"
    assert control_bytes(memory.out.encode()) == set()   # JSON escapes carry them, exactly
    detail = backend.wsctl("vault", "show", hostile["cred"], "--json").json
    assert detail["fields"]["instanceUrl"] == EVIL
    assert json.loads(backend.wsctl("--json", "specialist", "show", hostile["proj"]).out)["project"]["name"] == EVIL


def test_error_lines_and_paths_show_control_characters_escaped(backend, hostile):
    # a server (or engine) error quoting what it was sent
    r = backend.wsctl("specialist", "show", "proj_" + EVIL, expect=5)
    assert r.err.startswith("error: ") and len(r.err.splitlines()) == 1, r.err
    assert control_bytes(r.err.encode()) == set(), r.err
    r = backend.wsctl("vault", "token", hostile["cred"], "--reason", "x" * 501, expect=7)
    assert control_bytes(r.err.encode()) == set()
    # a path from the environment
    r = backend.wsctl("vault", "list", env={"WSCTL_SERVER": "", "WSCTL_TOKEN": "",
                                           "WSCTL_WORKSPACE": str(backend.home / "no\x1b]0;pwned\x07where")},
                      expect=5)
    assert control_bytes(r.err.encode()) == set() and r"no\x1b]0;pwned\x07where" in r.err, r.err
