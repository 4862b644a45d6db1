"""Secrets out, exactly and inertly, in every format, on both backends (issue 9, items 1 and 3).

A corpus of hostile values goes through each way `wsctl` writes secrets: dotenv lines read by
python-dotenv's default loader and by `set -a; . FILE` in real bash and dash, export lines
eval'd by both shells, a `vault run` child's environment, and JSON. Each value comes back byte
for byte and nothing in it runs (a canary file is never created). A value a format cannot carry
is refused (exit 7, naming --format json) before any token is issued: the access log stays empty.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from tests.conftest import run_wsctl
from tests.vault_helpers import TWO_SECRET_TOML, install_service, make_credential

SHELLS = ("bash", "dash")
PY = sys.executable
PWN = "{pwn}"  # replaced by the canary file's path in each test

# dotenv carries these: single quotes where they suffice, double quotes for a quote or backslashes.
CARRIED = [
    f"cost $5 $HOME $(touch {PWN}) $$ end$",
    f"`touch {PWN}` and `id` ;| & > < * ? ~ !",
    "it's \"quoted\" \\ back\\slash",
    "C:\\\\new\\\\table\\\\",
    "# not a comment = key=value #",
    "  leading and trailing spaces  ",
    "line one\nline two\n",
    "it's\n\"two lines\" \\n not an escape",
    "clé ünïcode 😀 日本 \u00a0nbsp",
    "=starts=with=equals==",
    "${unclosed and $ {spaced",
    "a\\'b \\\" c",
]
# dotenv cannot carry these (python-dotenv expands ${…} whatever the quotes; a shell runs $ or `
# inside double quotes; a carriage return is lost to universal newlines). Export, run and JSON can.
REFUSED = [
    f"sk_live_${{HOME}}$(touch {PWN})`id`\"q'x",
    "prefix-${HOME}-suffix",
    "it's $5",
    f"a\\\\b `touch {PWN}`",
    "carriage\rreturn",
]
NUL = "nul\0byte"

HOSTILE_SERVICE = "hostile-{n}"


def service_toml(n: int) -> str:
    """An apiKey service with n secret fields f00.., set as HOSTILE_00.. (n=1: HOSTILE_00 only)."""
    names = [f"f{i:02d}" for i in range(n)]
    env = ", ".join(f'{f} = "HOSTILE_{i:02d}"' for i, f in enumerate(names))
    return (f'service = "hostile-{n}"\nname = "Hostile {n}"\ndescription = "Keys holding what shells care about."\n'
            f'credentialType = "apiKey"\nenvVars = {{ {env} }}\nsecretFields = {json.dumps(names)}\n'
            '[[operations]]\nname = "ping"\nsummary = "Ping"\nmethod = "GET"\npath = "/ping"\n')


def hostile_credential(backend, values: list[str]) -> tuple[dict, dict[str, str]]:
    """A credential holding `values`, and the variables they should come back as."""
    service = install_service(backend.workspace, service_toml(len(values)))
    secrets = {f"f{i:02d}": v for i, v in enumerate(values)}
    cred = make_credential(backend.workspace, backend.owner["id"], service, secrets)
    return cred, {f"HOSTILE_{i:02d}": v for i, v in enumerate(values)}


def with_canary(values: list[str], canary) -> list[str]:
    return [v.replace(PWN, str(canary)) for v in values]


def log_of(backend, cred: dict) -> list:
    return backend.ok("GET", f"/v1/credentials/{cred['id']}/access-log")["entries"]


def exact_out(backend, *args: str) -> str:
    """stdout of `wsctl ARGS` exactly, as bytes decoded (text mode would turn a carriage return into \\n)."""
    return run_wsctl(args, backend.env, text=False).out.decode("utf-8")


DUMP_ENV = "import json, os, sys; print(json.dumps({k: os.environ.get(k) for k in sys.argv[1:]}))"


def shell_env(shell: str, script: str, names: list[str], *args: str) -> dict:
    """Run `script` in a real shell, then report the named variables as its child sees them."""
    assert shutil.which(shell), f"{shell} is needed (apt-get install {shell})"
    p = subprocess.run([shell, "-c", f'{script}\nexec "$0" -c "$DUMP" "$@"', PY, *names],
                       env={"PATH": "/usr/bin:/bin", "DUMP": DUMP_ENV, "HOME": "/nonexistent", **dict(args)},
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


# --- dotenv -----------------------------------------------------------------------------------

def test_dotenv_round_trips_hostile_values_through_python_dotenv_bash_and_dash(backend, tmp_path):
    dotenv = pytest.importorskip("dotenv", reason="python-dotenv (the test extra) reads the file back")
    canary = tmp_path / "pwned"
    cred, want = hostile_credential(backend, with_canary(CARRIED, canary))
    out = exact_out(backend, "vault", "env", cred["id"], "--reason", "dotenv", "--format", "dotenv")
    env_file = tmp_path / "secrets.env"
    env_file.write_bytes(out.encode("utf-8"))
    assert dotenv.dotenv_values(env_file) == want  # the default loader: interpolation on
    for shell in SHELLS:
        assert shell_env(shell, f'set -a; . "{env_file}"', list(want)) == want, shell
    assert not canary.exists(), "a hostile value ran while the file was read"
    # Single quotes where they suffice; double quotes only for a value with a quote or backslashes.
    assert out.splitlines()[0] == f"HOSTILE_00='{want['HOSTILE_00']}'"
    assert "\nHOSTILE_02=\"it's \\\"quoted\\\" \\\\ back\\\\slash\"\n" in out
    # `vault token --format env` writes the same lines for one credential.
    assert exact_out(backend, "vault", "token", cred["id"], "--reason", "env", "--format", "env") == out
    assert [e["outcome"] for e in log_of(backend, cred)] == ["issued", "issued"]


@pytest.mark.parametrize("index", range(len(REFUSED)))
def test_a_value_dotenv_cannot_carry_is_refused_before_any_token(backend, tmp_path, index):
    canary = tmp_path / "pwned"
    value = with_canary([REFUSED[index]], canary)[0]
    cred, want = hostile_credential(backend, [value])
    for args in (["env", "--format", "dotenv"], ["token", "--format", "env"]):
        r = backend.wsctl("vault", args[0], cred["id"], "--reason", "refused", *args[1:], expect=7)
        assert "--format json" in r.err and "HOSTILE_00" in r.err and r.out == ""
        assert value not in r.err and len(r.err.strip().splitlines()) == 1
    assert log_of(backend, cred) == [], "no token, no audit row, for a refused request"
    # JSON carries it exactly; that request is issued and logged.
    assert backend.wsctl("vault", "env", cred["id"], "--reason", "json", "--format", "json").json == want
    assert [e["reason"] for e in log_of(backend, cred)] == ["json"]
    assert not canary.exists()


# --- export, run, json ------------------------------------------------------------------------

def test_export_lines_eval_exactly_in_bash_and_dash(backend, tmp_path):
    canary = tmp_path / "pwned"
    cred, want = hostile_credential(backend, with_canary(CARRIED + REFUSED, canary))
    out = exact_out(backend, "vault", "env", cred["id"], "--reason", "export")
    assert out.count("\nexport ") == len(want) - 1 and out.startswith("export HOSTILE_00='")
    for shell in SHELLS:
        # as `eval "$(wsctl vault env …)"` would, the output arriving in a variable
        assert shell_env(shell, 'eval "$WSCTL_OUT"', list(want), ("WSCTL_OUT", out)) == want, shell
    assert not canary.exists(), "a hostile value ran under eval"


def test_run_and_json_carry_every_value_exactly(backend, tmp_path):
    canary = tmp_path / "pwned"
    cred, want = hostile_credential(backend, with_canary(CARRIED + REFUSED, canary))
    r = backend.wsctl("vault", "run", cred["id"], "--reason", "run", "--no-masking", "--",
                      PY, "-c", DUMP_ENV, *want)
    assert json.loads(r.out) == want
    assert backend.wsctl("vault", "env", cred["id"], "--reason", "json", "--format", "json").json == want
    body = backend.wsctl("vault", "token", cred["id"], "--reason", "token").json
    assert {f"HOSTILE_{k[1:]}": v for k, v in body.items()} == want
    assert not canary.exists()
    assert len(log_of(backend, cred)) == 3


def test_a_nul_is_refused_by_export_and_run_before_any_token(backend, tmp_path):
    canary = tmp_path / "ran"
    cred, want = hostile_credential(backend, [NUL])
    r = backend.wsctl("vault", "env", cred["id"], "--reason", "export", expect=7)
    # nothing but the line that makes an eval of it fail (issue 25 item 5: scripts fail loudly)
    assert "NUL" in r.err and "--format json" in r.err and r.out == "false\n"
    assert backend.wsctl("vault", "env", cred["id"], "--reason", "dotenv", "--format", "dotenv", expect=7).out == ""
    backend.wsctl("vault", "run", cred["id"], "--reason", "run", "--", "touch", str(canary), expect=7)
    assert not canary.exists(), "the command did not run"
    assert log_of(backend, cred) == []
    assert backend.wsctl("vault", "env", cred["id"], "--reason", "json", "--format", "json").json == want
    assert [e["reason"] for e in log_of(backend, cred)] == ["json"]


# --- no token for a refused request (item 3) --------------------------------------------------

def test_value_format_of_several_secret_fields_issues_nothing(backend):
    install_service(backend.workspace, TWO_SECRET_TOML)
    c = make_credential(backend.workspace, backend.owner["id"], "twosecret", {"accountSid": "AC1", "authToken": "t1"})
    r = backend.wsctl("vault", "token", c["id"], "--reason", "value", "--format", "value", expect=7)
    assert "accountSid, authToken" in r.err and "--format json" in r.err and "t1" not in r.err and r.out == ""
    assert log_of(backend, c) == []
    env = backend.wsctl("vault", "token", c["id"], "--reason", "env", "--format", "env").out
    assert env == "TWO_ACCOUNT_SID='AC1'\nTWO_AUTH_TOKEN='t1'\n"
    assert [e["reason"] for e in log_of(backend, c)] == ["env"]


def test_several_credentials_are_checked_before_any_is_issued(backend, tmp_path):
    canary = tmp_path / "ran"
    good, _ = hostile_credential(backend, ["fine"])
    install_service(backend.workspace, TWO_SECRET_TOML)
    bad = make_credential(backend.workspace, backend.owner["id"], "twosecret", {"accountSid": "AC1",
                                                                                "authToken": "it's $5"})
    nul_service = install_service(backend.workspace, service_toml(1).replace("HOSTILE_00", "NUL_00")
                                  .replace('"hostile-1"', '"nulsvc"'))
    nul = make_credential(backend.workspace, backend.owner["id"], nul_service, {"f00": NUL})
    r = backend.wsctl("vault", "env", good["id"], bad["id"], "--reason", "both", "--format", "dotenv", expect=7)
    assert "TWO_AUTH_TOKEN (authToken)" in r.err and r.out == ""
    backend.wsctl("vault", "run", good["id"], nul["id"], "--reason", "both", "--", "touch", str(canary), expect=7)
    assert not canary.exists()
    for c in (good, bad, nul):
        assert log_of(backend, c) == [], "the good one is not issued either"
    assert backend.wsctl("vault", "env", good["id"], bad["id"], "--reason", "ok").out.count("export ") == 3
    assert [len(log_of(backend, c)) for c in (good, bad)] == [1, 1]


def test_a_credential_whose_env_vars_name_nothing_issued_is_refused_first(backend):
    install_service(backend.workspace, service_toml(1).replace('f00 = "HOSTILE_00"', 'instanceUrl = "ONLY_URL"')
                    .replace('"hostile-1"', '"urlonly"'))
    c = make_credential(backend.workspace, backend.owner["id"], "urlonly", {"f00": "k"})
    for args in (["env", c["id"]], ["env", c["id"], "--format", "json"], ["token", c["id"], "--format", "env"],
                 ["run", c["id"], "--reason", "r", "--", "true"]):
        r = backend.wsctl("vault", *args, *([] if "run" in args else ["--reason", "r"]), expect=7)
        assert "names no environment variable" in r.err, args
    assert log_of(backend, c) == []


def test_token_route_format_and_dry_run(backend):
    cred, _ = hostile_credential(backend, ["it's $5"])
    path = f"/v1/credentials/{cred['id']}/token"
    r = backend.api("POST", path, {"reason": "r", "format": "dotenv"})
    assert r.status == 400 and r.code == "invalid_request" and "--format json" in r.body["error"]["message"]
    assert "$5" not in json.dumps(r.body)
    assert backend.ok("POST", path, {"reason": "r", "format": "export", "dryRun": True}) == \
        {"dryRun": True, "fields": ["f00"]}
    for body in ({"reason": "r", "format": "yaml"}, {"reason": "r", "format": ["json"]},
                 {"reason": "r", "dryRun": "yes"}):
        assert backend.api("POST", path, body).status == 400, body
    assert log_of(backend, cred) == []
    assert backend.ok("POST", path, {"reason": "r", "format": "export"}) == {"f00": "it's $5"}
    assert [e["outcome"] for e in log_of(backend, cred)] == ["issued"]
