"""`wsctl vault` and `wsctl admin` through the real CLI, on both backends.

Credentials are made in-process as a completed connection makes them (tests/vault_helpers.py);
every behaviour under test goes through `backend.wsctl(...)` (a real `wsctl` subprocess).
"""
from __future__ import annotations

import base64
import os
import shlex
import signal
import subprocess
import sys

import pytest

from tests.conftest import WAIT_LIMIT, WSCTL, base_env, free_port, run_wsctl, serve, wait_until
from tests.vault_helpers import (
    canary_scan,  # noqa: F401  (a fixture, named by pytestmark)
    install_service,
    make_credential,
    member_with_session,
)

pytestmark = pytest.mark.usefixtures("canary_scan")

HOST_TOML = """
service = "hostile"
name = "Hostile Keys"
description = "An API-key service whose keys hold every character a shell cares about."
credentialType = "apiKey"
envVars = {{ apiKey = "HOSTILE_KEY", instanceUrl = "HOSTILE_URL" }}
fields = ["instanceUrl"]
baseUrl = "{base}"
probe = "whoami"
auth = {{ type = "bearer" }}
[[operations]]
name = "whoami"
summary = "Who the key belongs to"
method = "GET"
path = "/probe"
"""

OTHER_TOML = """
service = "other"
name = "Other Keys"
description = "A second API-key service."
credentialType = "apiKey"
envVars = { apiKey = "OTHER_KEY" }
[[operations]]
name = "ping"
summary = "Ping"
method = "GET"
path = "/ping"
"""

# Quotes, spaces, $, backticks, backslashes, a newline, a tab and non-ASCII.
HOSTILE = "sk-Q7-CANARY it's \"quoted\" $HOME ${PATH} `id` $(whoami) \\ back\\n\nline two\tend é"
URL = "https://acme.example/a b?x='1'"
PY = sys.executable


@pytest.fixture
def cred(backend, provider):
    install_service(backend.workspace, HOST_TOML.format(base=provider.url))
    provider.api_keys.add(HOSTILE)
    return make_credential(backend.workspace, backend.owner["id"], "hostile", {"apiKey": HOSTILE},
                           {"instanceUrl": URL})


def as_key(backend, key: str) -> dict:
    """Env presenting an API key. backend.wsctl merges env over backend.env, which (remote) holds the
    owner's WSCTL_TOKEN, and WSCTL_TOKEN wins over WSCTL_API_KEY: blank it."""
    return {**backend.env_for(key), "WSCTL_TOKEN": ""}


def py(code: str) -> list[str]:
    return [PY, "-c", code]


# --- list, show, fields -----------------------------------------------------------------------

def test_list_and_show_print_the_api_body_and_no_secret(backend, cred):
    r = backend.wsctl("vault", "list", "--json")
    assert r.json == backend.ok("GET", "/v1/credentials")
    assert [c["id"] for c in r.json["credentials"]] == [cred["id"]]
    plain = backend.wsctl("vault", "list")
    assert plain.out.splitlines() == [f"{cred['id']}\thostile\thostile\towner\tok"]  # the name is the service's
    shown = backend.wsctl("vault", "show", cred["id"], "--json")
    assert shown.json == backend.ok("GET", f"/v1/credentials/{cred['id']}")
    text = backend.wsctl("vault", "show", cred["id"]).out
    assert "HOSTILE_KEY" in text and URL in text and "not shared" in text
    for out in (r.out, plain.out, shown.out, text):
        assert "sk-Q7" not in out


def test_show_unknown_credential_exits_5(backend, cred):
    r = backend.wsctl("vault", "show", "cred_nope", expect=5)
    assert r.err.startswith("error: ") and "wsctl vault list" in r.err


def test_fields_show_which_secrets_are_set_never_their_values(backend, cred):
    r = backend.wsctl("vault", "fields", cred["id"], "--json")
    assert r.json == {"fields": {"instanceUrl": URL}, "secretFields": [{"name": "apiKey", "set": True}]}
    text = backend.wsctl("vault", "fields", cred["id"]).out
    assert "apiKey" in text and "set (secret)" in text and "sk-Q7" not in text


# --- token ------------------------------------------------------------------------------------

def test_token_formats(backend, cred):
    as_json = backend.wsctl("vault", "token", cred["id"], "--reason", "json format")
    assert as_json.json == {"apiKey": HOSTILE, "instanceUrl": URL}
    assert backend.wsctl("vault", "token", cred["id"], "--reason", "flag", "--json").json == as_json.json
    value = backend.wsctl("vault", "token", cred["id"], "--reason", "value", "--format", "value")
    assert value.out == HOSTILE + "\n"
    # env lines are dotenv lines: this key holds ${PATH} and a quote with $, which no dotenv quoting
    # carries exactly, so it is refused before it is issued (tests/vault/test_vault_output.py has the corpus).
    env = backend.wsctl("vault", "token", cred["id"], "--reason", "env", "--format", "env", expect=7)
    assert "--format json" in env.err and env.out == "" and "sk-Q7" not in env.err
    log = backend.ok("GET", f"/v1/credentials/{cred['id']}/access-log")["entries"]
    assert [e["reason"] for e in log] == ["value", "flag", "json format"]
    assert all(e["outcome"] == "issued" and e["fields"] == ["apiKey", "instanceUrl"] for e in log)


def test_token_reason_rules_and_bad_format(backend, cred):
    r = backend.wsctl("vault", "token", cred["id"], expect=2)
    assert "--reason" in r.err
    r = backend.wsctl("vault", "token", cred["id"], "--reason", "  ", expect=7)
    assert "reason" in r.err
    backend.wsctl("vault", "token", cred["id"], "--reason", "x" * 501, expect=7)
    backend.wsctl("vault", "token", cred["id"], "--reason", "r", "--format", "yaml", expect=2)  # a choice
    assert backend.ok("GET", f"/v1/credentials/{cred['id']}/access-log")["entries"] == []


# --- env --------------------------------------------------------------------------------------

def _bash(backend, script: str) -> subprocess.CompletedProcess:
    env = {**backend.env, "WSCTL": shlex.join(WSCTL)}
    return subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, timeout=180)


def test_env_export_round_trips_hostile_values_through_eval(backend, cred):
    script = (f'eval "$($WSCTL vault env {cred["id"]} --reason eval-test)" || exit 9; '
              'printf %s "$HOSTILE_KEY"; printf "\\0"; printf %s "$HOSTILE_URL"')
    p = _bash(backend, script)
    assert p.returncode == 0, p.stderr
    assert p.stdout == f"{HOSTILE}\0{URL}"


def test_env_export_lines_are_export_statements(backend, cred):
    out = backend.wsctl("vault", "env", cred["id"], "--reason", "r").out
    assert out == f"export HOSTILE_KEY={shlex.quote(HOSTILE)}\nexport HOSTILE_URL={shlex.quote(URL)}\n"


def test_env_dotenv_refuses_what_it_cannot_carry_and_issues_nothing(backend, cred):
    r = backend.wsctl("vault", "env", cred["id"], "--reason", "r", "--format", "dotenv", expect=7)
    assert "HOSTILE_KEY" in r.err and "--format json" in r.err and r.out == "" and "sk-Q7" not in r.err
    assert backend.ok("GET", f"/v1/credentials/{cred['id']}/access-log")["entries"] == []


def test_env_json_and_several_credentials(backend, cred):
    install_service(backend.workspace, OTHER_TOML)
    other = make_credential(backend.workspace, backend.owner["id"], "other", {"apiKey": "ok-2"})
    r = backend.wsctl("vault", "env", cred["id"], other["id"], "--reason", "both", "--format", "json")
    assert r.json == {"HOSTILE_KEY": HOSTILE, "HOSTILE_URL": URL, "OTHER_KEY": "ok-2"}
    assert backend.wsctl("vault", "env", cred["id"], "--reason", "both", "--json").json == \
        {"HOSTILE_KEY": HOSTILE, "HOSTILE_URL": URL}
    # Each credential's token is audited with the reason.
    for c in (cred, other):
        assert backend.ok("GET", f"/v1/credentials/{c['id']}/access-log")["entries"][-1]["reason"] == "both"


def test_env_refuses_two_credentials_setting_one_variable(backend, cred):
    install_service(backend.workspace, OTHER_TOML)
    a = make_credential(backend.workspace, backend.owner["id"], "other", {"apiKey": "a-1"})
    b = make_credential(backend.workspace, backend.owner["id"], "other", {"apiKey": "b-2"})
    r = backend.wsctl("vault", "env", a["id"], b["id"], "--reason", "clash", expect=7)
    assert "OTHER_KEY" in r.err and r.out == "false\n"   # export lines, for eval: a line that fails it
    assert "a-1" not in r.err and "b-2" not in r.err
    # Refused before any token is issued: no "issued" row for a secret nobody received.
    for c in (a, b):
        assert backend.ok("GET", f"/v1/credentials/{c['id']}/access-log")["entries"] == []
    backend.wsctl("vault", "run", a["id"], b["id"], "--reason", "clash", "--", "true", expect=7)
    assert backend.ok("GET", f"/v1/credentials/{a['id']}/access-log")["entries"] == []


def test_env_of_unknown_credential_issues_nothing(backend, cred):
    backend.wsctl("vault", "env", cred["id"], "cred_nope", "--reason", "r", expect=5)
    assert backend.ok("GET", f"/v1/credentials/{cred['id']}/access-log")["entries"] == []


# --- run --------------------------------------------------------------------------------------

PRINT_ENV = "import os; print(os.environ['HOSTILE_KEY']); print(os.environ['HOSTILE_URL'])"


def test_run_injects_env_without_masking(backend, cred):
    r = backend.wsctl("vault", "run", cred["id"], "--reason", "run", "--no-masking", "--", *py(PRINT_ENV))
    assert r.out == f"{HOSTILE}\n{URL}\n"
    assert backend.ok("GET", f"/v1/credentials/{cred['id']}/access-log")["entries"][0]["reason"] == "run"


def test_run_masks_secrets_in_stdout_and_stderr(backend, cred):
    code = ("import os, sys; k = os.environ['HOSTILE_KEY']; print('key:', k); print(os.environ['HOSTILE_URL']); "
            "print('err', k, 'end', file=sys.stderr)")
    r = backend.wsctl("vault", "run", cred["id"], "--reason", "mask", "--", *py(code))
    assert r.out == f"key: ***\n{URL}\n"  # the instance URL is not a secret
    assert "err *** end" in r.err and "sk-Q7" not in r.err


def test_run_masks_a_secret_written_in_two_halves_across_a_flush(backend, cred):
    code = ("import os, sys, time; k = os.environ['HOSTILE_KEY']; h = len(k) // 2; "
            "sys.stdout.write('<' + k[:h]); sys.stdout.flush(); time.sleep(0.3); "
            "sys.stdout.write(k[h:] + '>\\n'); sys.stdout.flush(); "
            "sys.stdout.write(k[:5]); sys.stdout.flush()")  # a prefix that never completes is printed as is
    r = backend.wsctl("vault", "run", cred["id"], "--reason", "halves", "--", *py(code))
    assert r.out == "<***>\n" + HOSTILE[:5]


def test_run_passes_the_exit_code_through(backend, cred):
    backend.wsctl("vault", "run", cred["id"], "--reason", "exit", "--", *py("raise SystemExit(42)"), expect=42)
    backend.wsctl("vault", "run", cred["id"], "--reason", "exit", "--no-masking", "--", *py("raise SystemExit(3)"),
                  expect=3)
    r = backend.wsctl("vault", "run", cred["id"], "--reason", "missing", "--", "no-such-command-xyz", expect=127)
    assert "no-such-command-xyz" in r.err


def test_run_does_not_use_a_shell_unless_asked(backend, cred):
    r = backend.wsctl("vault", "run", cred["id"], "--reason", "noshell", "--no-masking", "--",
                      PY, "-c", "import sys; print(sys.argv[1:])", "$HOSTILE_KEY", "a b")
    assert r.out == "['$HOSTILE_KEY', 'a b']\n"
    r = backend.wsctl("vault", "run", cred["id"], "--reason", "shell", "--", "bash", "-c", 'printf "%s" "$HOSTILE_KEY"')
    assert r.out == "***"


def test_run_needs_the_separator_and_a_command(backend, cred):
    r = backend.wsctl("vault", "run", cred["id"], "--reason", "r", expect=7)
    assert "--" in r.err
    backend.wsctl("vault", "run", cred["id"], "--reason", "r", "--", expect=7)
    backend.wsctl("vault", "run", "--reason", "r", "--", "true", expect=7)
    assert backend.ok("GET", f"/v1/credentials/{cred['id']}/access-log")["entries"] == []


CHILD_ON_SIGNAL = """
import os, signal, sys, time
def on_signal(signum, frame):
    open(sys.argv[1], "w").write(signal.Signals(signum).name + " " + os.environ["HOSTILE_URL"])
    sys.exit(7)
signal.signal(getattr(signal, sys.argv[3]), on_signal)
open(sys.argv[2], "w").write("ready")
time.sleep(3600)   # until the forwarded signal ends it
sys.exit(1)
"""


@pytest.mark.parametrize("masking, sig", [(True, "SIGTERM"), (False, "SIGINT")])
def test_run_forwards_signals_to_the_child(backend, cred, tmp_path, masking, sig):
    """SIGTERM, and SIGINT when wsctl is not a terminal's foreground (Ctrl-C there reaches the child itself)."""
    got, ready = tmp_path / "got", tmp_path / "ready"
    args = [*WSCTL, "vault", "run", cred["id"], "--reason", "signals", *([] if masking else ["--no-masking"]),
            "--", PY, "-c", CHILD_ON_SIGNAL, str(got), str(ready), sig]
    p = subprocess.Popen(args, env=backend.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, start_new_session=True)
    try:
        wait_until(lambda: ready.exists() or p.poll() is not None, "the child did not start")
        assert ready.exists(), p.communicate(timeout=60)
        p.send_signal(getattr(signal, sig))  # to wsctl only, never to the child directly
        p.wait(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
        p.stdout.close()   # unread: closed here rather than left to the collector (a ResourceWarning)
        p.stderr.close()
    assert got.read_text() == f"{sig} {URL}"
    assert p.returncode == 7  # the child's own exit code


def test_run_child_killed_by_a_signal_exits_128_plus_n(backend, cred):
    code = "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"
    backend.wsctl("vault", "run", cred["id"], "--reason", "killed", "--", *py(code), expect=128 + 9)


# --- set-key, sync, delete --------------------------------------------------------------------

def test_set_key_reads_stdin_and_keeps_the_id(backend, cred):
    r = backend.wsctl("vault", "set-key", cred["id"], "--json", input="sk-NEW-CANARY key 'two'\n")
    assert r.json["id"] == cred["id"] and "sk-NEW" not in r.out + r.err
    value = backend.wsctl("vault", "token", cred["id"], "--reason", "r", "--format", "value").out
    assert value == "sk-NEW-CANARY key 'two'\n"
    plain = backend.wsctl("vault", "set-key", cred["id"], input="third-CANARY\n")
    assert "Replaced apiKey" in plain.err and "third" not in plain.out + plain.err
    r = backend.wsctl("vault", "set-key", cred["id"], input="\n", expect=7)
    assert "nothing changed" in r.err
    backend.wsctl("vault", "set-key", cred["id"], "--field", "password", input="x\n", expect=7)
    assert backend.wsctl("vault", "token", cred["id"], "--reason", "r", "--format", "value").out == "third-CANARY\n"


def test_set_key_of_two_secret_fields_reads_one_line_each(backend):
    from tests.vault_helpers import TWO_SECRET_TOML

    install_service(backend.workspace, TWO_SECRET_TOML)
    c = make_credential(backend.workspace, backend.owner["id"], "twosecret", {"accountSid": "AC1", "authToken": "t1"})
    backend.wsctl("vault", "set-key", c["id"], input="AC2\nt2\n")
    assert backend.wsctl("vault", "token", c["id"], "--reason", "r").json == {"accountSid": "AC2", "authToken": "t2"}
    backend.wsctl("vault", "set-key", c["id"], "--field", "authToken", input="t3\n")
    assert backend.wsctl("vault", "token", c["id"], "--reason", "r").json == {"accountSid": "AC2", "authToken": "t3"}
    backend.wsctl("vault", "set-key", c["id"], input="only-one\n", expect=7)
    r = backend.wsctl("vault", "token", c["id"], "--reason", "r", "--format", "value", expect=7)
    assert "--format env" in r.err and "AC2" not in r.err


def test_sync_probes_the_credential(backend, provider, cred):
    # A key an HTTP header can carry (the hostile one is not: see the report on vault_probe).
    provider.api_keys.add("sk-plain-CANARY-123")
    backend.wsctl("vault", "set-key", cred["id"], input="sk-plain-CANARY-123\n")
    r = backend.wsctl("vault", "sync", cred["id"], "--json")
    assert r.json["status"] == "ok" and r.json["syncedAt"]
    provider.api_keys.clear()
    text = backend.wsctl("vault", "sync", cred["id"]).out
    assert "invalid" in text and "sk-plain" not in text


def test_delete_confirms_unless_yes(backend, cred):
    r = backend.wsctl("vault", "delete", cred["id"], input="", expect=7)
    assert "--yes" in r.err
    assert backend.api("GET", f"/v1/credentials/{cred['id']}").status == 200
    r = backend.wsctl("vault", "delete", cred["id"], "--yes")
    assert f"Deleted {cred['id']}" in r.err
    assert backend.api("GET", f"/v1/credentials/{cred['id']}").status == 404
    backend.wsctl("vault", "delete", cred["id"], "--yes", expect=5)


# --- share and log ----------------------------------------------------------------------------

def test_share_with_a_member_and_the_workspace(backend, cred):
    member, session = member_with_session(backend, "vic@example.com")
    as_member = backend.env_for(session)
    backend.wsctl("vault", "show", cred["id"], env=as_member, expect=5)
    r = backend.wsctl("vault", "share", cred["id"], "--member", "vic@example.com", "--role", "viewer", "--json")
    assert r.json["sharing"] == [{"membershipId": member["id"], "role": "viewer"}]
    assert backend.wsctl("vault", "list", "--json", env=as_member).json["credentials"][0]["access"] == "viewer"
    r = backend.wsctl("vault", "token", cred["id"], "--reason", "peek", env=as_member, expect=4)
    assert "viewer" in r.err and "sk-Q7" not in r.out + r.err
    backend.wsctl("vault", "share", cred["id"], "--member", member["id"], "--role", "user")
    got = backend.wsctl("vault", "token", cred["id"], "--reason", "use", "--format", "value", env=as_member)
    assert got.out == HOSTILE + "\n"
    backend.wsctl("vault", "share", cred["id"], "--member", member["id"], "--role", "none")
    backend.wsctl("vault", "show", cred["id"], env=as_member, expect=5)
    text = backend.wsctl("vault", "share", cred["id"], "--workspace", "--role", "user").out
    assert "workspace=user" in text
    assert backend.wsctl("vault", "show", cred["id"], "--json", env=as_member).json["access"] == "user"
    # Only the owner shares; the flags must name exactly one grantee and a known role.
    backend.wsctl("vault", "share", cred["id"], "--workspace", "--role", "viewer", env=as_member, expect=4)
    backend.wsctl("vault", "share", cred["id"], "--role", "user", expect=7)
    backend.wsctl("vault", "share", cred["id"], "--workspace", "--member", member["id"], "--role", "user", expect=7)
    backend.wsctl("vault", "share", cred["id"], "--workspace", "--role", "admin", expect=2)  # not a choice


def test_log_lists_issued_and_refused_requests(backend, cred):
    member, session = member_with_session(backend, "vera@example.com")
    backend.wsctl("vault", "share", cred["id"], "--member", member["id"], "--role", "viewer")
    backend.wsctl("vault", "token", cred["id"], "--reason", "owner needs it")
    backend.wsctl("vault", "token", cred["id"], "--reason", "viewer tries", env=backend.env_for(session), expect=4)
    r = backend.wsctl("vault", "log", cred["id"], "--json")
    assert r.json == backend.ok("GET", f"/v1/credentials/{cred['id']}/access-log")
    assert [(e["reason"], e["outcome"]) for e in r.json["entries"]] == [("viewer tries", "refused"),
                                                                          ("owner needs it", "issued")]
    lines = backend.wsctl("vault", "log", cred["id"]).out.splitlines()
    assert len(lines) == 2
    refused, issued = (line.split("\t") for line in lines)
    # The KEY column names the key exactly as --json's keyId does (a session's id, or local in-process).
    keys = [e["keyId"] for e in r.json["entries"]]
    assert all(k == "local" or k.startswith("ses_") for k in keys)
    assert refused[1:] == [member["id"], keys[0], "viewer tries", "", "refused"]
    assert issued[1:] == [backend.owner["id"], keys[1], "owner needs it", "apiKey, instanceUrl", "issued"]
    backend.wsctl("vault", "log", cred["id"], env=backend.env_for(session), expect=4)


def test_platform_key_is_logged_with_its_key_id(backend, cred):
    key = backend.key("platform", ["vault:read", "vault:token"])
    backend.wsctl("vault", "token", cred["id"], "--reason", "ci job", env=as_key(backend, key))
    entry = backend.wsctl("vault", "log", cred["id"], "--json").json["entries"][0]
    assert entry["keyId"].startswith("key_") and entry["reason"] == "ci job"
    assert entry["keyId"] in backend.wsctl("vault", "log", cred["id"]).out
    personal = backend.key("personal", ["projects:manage"])
    r = backend.wsctl("vault", "list", env=as_key(backend, personal), expect=4)
    assert r.err.startswith("error: Insufficient scope") and len(r.err.strip().splitlines()) == 1



def test_env_output_with_a_token_only_key_names_the_missing_scope_and_issues_nothing(backend, cred):
    """Variable names come from the detail (vault:read): a vault:token-only key gets the token as
    JSON, and for env output a refusal naming the scope, before any token is issued."""
    key = as_key(backend, backend.key("platform", ["vault:token"]))
    assert backend.wsctl("vault", "token", cred["id"], "--reason", "json", env=key).json["apiKey"] == HOSTILE
    for args in (["token", cred["id"], "--format", "env"], ["env", cred["id"]],
                 ["run", cred["id"], "--reason", "r", "--", *py("pass")]):
        r = backend.wsctl("vault", *args, *([] if "run" in args else ["--reason", "r"]), env=key, expect=4)
        assert "vault:read" in r.err and r.out == ("false\n" if args[0] == "env" else ""), (args, r.err)
    entries = backend.ok("GET", f"/v1/credentials/{cred['id']}/access-log")["entries"]
    assert [e["reason"] for e in entries] == ["json"], "nothing issued for the refused env outputs"

# --- admin rotate-key -------------------------------------------------------------------------

def _rotate_an_environment_key(backend, cred) -> None:
    """A PostgreSQL workspace's replicas take the key from WSCTL_MASTER_KEY (docs/api.md §5): wsctl
    cannot change it, so rotate-key alone is exit 7 saying how, and changes nothing. Done as told,
    on a replica given the new key and the old one as WSCTL_MASTER_KEY_PREVIOUS, it re-seals
    everything under the new key, and a replica with only the old key is then refused."""
    r = backend.wsctl("admin", "rotate-key", "--yes", "--json", expect=7)
    assert "WSCTL_MASTER_KEY_PREVIOUS" in r.err and "rotate-key again" in r.err and r.out == ""
    assert backend.wsctl("vault", "token", cred["id"], "--reason", "not rotated").json["apiKey"] == HOSTILE
    old, new = os.environ["WSCTL_MASTER_KEY"], base64.b64encode(os.urandom(32)).decode()
    ws = backend.workspace
    env = {**base_env(ws.parent / "rotating-home"), "WSCTL_MASTER_KEY": new, "WSCTL_MASTER_KEY_PREVIOUS": old}
    with serve(ws, env) as url:
        r = backend.wsctl("admin", "rotate-key", "--yes", "--json", env={"WSCTL_SERVER": url})
        assert r.json["keySource"] == "env" and r.json["credentials"] >= 1, r.json
        got = backend.wsctl("vault", "token", cred["id"], "--reason", "rotated", env={"WSCTL_SERVER": url})
        assert got.json["apiKey"] == HOSTILE
    r = run_wsctl(["serve", "--workspace", ws, "--port", free_port()], {**base_env(ws.parent / "old-key-home"),
                  "WSCTL_MASTER_KEY": old}, expect=3, timeout=WAIT_LIMIT)
    assert "WSCTL_MASTER_KEY" in r.err and old not in r.err + r.out



def test_rotate_key_confirms_and_keeps_every_secret_readable(backend, cred):
    r = backend.wsctl("admin", "rotate-key", input="", expect=7)
    assert "--yes" in r.err
    if backend.door == "postgres":
        _rotate_an_environment_key(backend, cred)
    else:
        r = backend.wsctl("admin", "rotate-key", "--yes", "--json")
        assert r.json["credentials"] >= 1
        assert backend.wsctl("vault", "token", cred["id"], "--reason", "after rotation").json["apiKey"] == HOSTILE
        text = backend.wsctl("admin", "rotate-key", "--yes").err
        assert "Re-encrypted" in text
    _member, session = member_with_session(backend, "adam@example.com", role="admin")
    backend.wsctl("admin", "rotate-key", "--yes", env=backend.env_for(session), expect=4)
