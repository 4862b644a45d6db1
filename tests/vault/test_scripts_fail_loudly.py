"""Issue 25 item 5: scripts fail loudly. The README's `eval "$(wsctl vault env …)"` line, read from
README.md and run as written under `set -euo pipefail`, stops the script when `vault env` fails;
a refused command names the scope it lacks and how to get it. Every door."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.api_helpers import assert_error
from tests.cli_helpers import one_error_line
from tests.vault_helpers import make_credential

README = Path(__file__).resolve().parents[2] / "README.md"
WSCTL_BIN = Path(sys.executable).parent


def readme_env_line() -> str:
    """The one line of the README's quick tour that evals `vault env`, exactly as written."""
    (line,) = [ln for ln in README.read_text().splitlines() if ln.startswith('eval "$(wsctl vault env ')]
    return line


def run_script(backend, script: str) -> subprocess.CompletedProcess:
    env = {**backend.env, "PATH": f"{WSCTL_BIN}:/usr/bin:/bin"}
    return subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, timeout=120)


def test_the_readme_env_line_stops_a_strict_script_on_failure_and_exports_on_success(backend):
    line = readme_env_line()
    script = f"set -euo pipefail\n{line}\nprintf 'reached:%s' \"${{STRIPE_API_KEY:-unset}}\"\n"
    # No credential named stripe-live yet: vault env fails, so the eval fails and the script stops there.
    r = run_script(backend, script)
    assert r.returncode == 1, (r.returncode, r.stdout, r.stderr)
    assert "reached" not in r.stdout and "No credential named 'stripe-live'" in r.stderr
    cred = make_credential(backend.workspace, backend.owner["id"], "stripe", {"apiKey": "sk-eval-1"})
    backend.ok("PATCH", f"/v1/vault/credentials/{cred['id']}", {"name": "stripe-live"})
    r = run_script(backend, script)
    assert (r.returncode, r.stdout) == (0, "reached:sk-eval-1"), r.stderr
    entries = backend.ok("GET", f"/v1/credentials/{cred['id']}/access-log")["entries"]
    assert [(e["outcome"], e["reason"]) for e in entries] == [("issued", "deploy")]


def test_a_failed_vault_env_prints_false_for_eval_and_nothing_in_other_formats(backend):
    # stdout is a pipe here, as in "$(…)": export (the default, for eval) prints `false`; the formats
    # that are not eval'd print nothing; a usage error (no --reason) fails the eval too.
    r = backend.wsctl("vault", "env", "nope", "--reason", "r", expect=5)
    assert r.out == "false\n" and one_error_line(r).startswith("error: No credential named 'nope'")
    assert backend.wsctl("vault", "env", "nope", "--reason", "r", "--format", "export", expect=5).out == "false\n"
    assert backend.wsctl("vault", "env", "nope", expect=2).out == "false\n"
    for args in (["--format", "dotenv"], ["--format=json"], ["--json"]):
        assert backend.wsctl("vault", "env", "nope", "--reason", "r", *args, expect=5).out == "", args
    assert backend.wsctl("vault", "token", "nope", "--reason", "r", expect=5).out == ""


def test_a_refusal_names_the_missing_scope_and_how_to_get_it(backend):
    cred = make_credential(backend.workspace, backend.owner["id"], "stripe", {"apiKey": "sk-scope-1"})
    token_only = backend.key("platform", ["vault:token"])
    personal = backend.key("personal", ["projects:manage"])
    # The API: the contract's message, word for word; the detail names the scope and what to do.
    r = backend.api("GET", "/v1/credentials", secret=token_only)
    assert_error(r, 403, "insufficient_scope", "Insufficient scope")
    assert r.body["error"]["detail"]["requiredScope"] == "vault:read"
    assert "lacks vault:read" in r.body["error"]["detail"]["hint"]
    r = backend.api("GET", "/v1/credentials", secret=personal)
    assert r.body["error"]["detail"]["requiredScope"] == "vault:read"
    assert r.body["error"]["detail"]["hint"].startswith("vault:read belongs to platform keys and this is a personal key")
    r = backend.api("GET", "/v1/keys", secret=token_only)
    assert r.body["error"]["detail"]["requiredScope"] == "session"
    # The command line: a name needs vault:read to be looked up; the id works with vault:token alone.
    r = backend.wsctl("vault", "token", cred["name"], "--reason", "r", env=backend.env_for(token_only), expect=4)
    assert one_error_line(r) == ("error: Insufficient scope: this key lacks vault:read, which names need (they are "
                                 "looked up in `wsctl vault list`): pass the id (cred_…), or use a key with vault:read.")
    r = backend.wsctl("vault", "token", cred["id"], "--reason", "r", "--format", "json", env=backend.env_for(token_only))
    assert r.json["apiKey"] == "sk-scope-1"
    r = backend.wsctl("vault", "list", env=backend.env_for(token_only), expect=4)
    assert "lacks vault:read: use a key with vault:read (`wsctl keys create --kind platform --scope vault:read`)" \
        in one_error_line(r)
    r = backend.wsctl("specialist", "list", env=backend.env_for(token_only), expect=4)
    assert "projects:manage belongs to personal keys and this is a platform key" in one_error_line(r)
    r = backend.wsctl("keys", "list", env=backend.env_for(token_only), expect=4)
    assert "only a signed-in session may do this" in one_error_line(r)
    # A scope of the other kind of key is invalid input that says which kind holds it.
    for kind, scope, other in (("platform", "skills:manage", "personal"), ("personal", "vault:read", "platform")):
        r = backend.wsctl("keys", "create", "--kind", kind, "--scope", scope, expect=7)
        assert one_error_line(r).startswith(f"error: {scope} belongs to {other} keys, not {kind} ones: make a "
                                            f"{other} key for it (`wsctl keys create --kind {other} --scope {scope}`)")
    r = backend.api("POST", "/v1/keys", {"kind": "platform", "scopes": ["skills:manage"]})
    assert_error(r, 400, "invalid_request")
    assert "belongs to personal keys" in r.body["error"]["message"]
    assert backend.ok("GET", "/v1/keys")["keys"] and all(
        k["scopes"] != ["skills:manage"] for k in backend.ok("GET", "/v1/keys")["keys"])
