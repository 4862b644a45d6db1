"""How issued secrets are written out, and which values each way of writing can carry.

One module for both sides: the engine asks `refusal(form, ...)` before it issues a token (so a
request whose output cannot be written exactly gets no token and no audit row), and the CLI
prints with the same functions. Pure: no I/O.

The forms (the token request's `format`):

    json       the token body as JSON                       carries anything
    value      the one secret: accessToken, else apiKey,    refused when there are several
               else the only secret field
    variables  {VAR: value} as JSON (`vault env -f json`)   at least one variable
    environ    a child's environment (`vault run`)          no NUL (execve cannot pass one)
    export     `export VAR='…'` for eval                    no NUL (no shell variable holds one)
    dotenv     `VAR='…'` lines                              see below

dotenv lines must come back byte for byte, and run nothing, through python-dotenv's default
loader *and* `set -a; . FILE` in bash or dash. The two readers agree on:

  * single quotes, when the value has no `'`, no `\\` and does not end in `\\` (python-dotenv
    decodes `\\\\` and `\\'` inside single quotes; a shell does not);
  * else double quotes escaping only `\\` and `"`, when the value has no `$` and no backtick
    (a shell expands those inside double quotes).

A value neither carries is refused, as is one holding `${…}` (python-dotenv expands it whatever
the quotes), a carriage return (python-dotenv reads the file with universal newlines) or NUL.
"""
from __future__ import annotations

import json
import re
import shlex

from workspacectl.errors import ApiError

FORMS = ("json", "value", "variables", "environ", "export", "dotenv")
ENV_FORMS = frozenset({"variables", "environ", "export", "dotenv"})
# Token fields that are metadata, not secrets: never masked, never "the" value, still injected when mapped.
NON_SECRET_FIELDS = frozenset({"instanceUrl", "expiresAt", "tokenType"})
DOTENV_EXPANDS = re.compile(r"\$\{[^}:]*(?::-[^}]*)?\}")  # python-dotenv's own pattern (dotenv/variables.py)
JSON_HINT = ("Nothing was issued; `--format json` carries any value (`wsctl vault env ID --format json`, "
             "`wsctl vault token ID --format json`).")


def primary_field(token: dict) -> str | None:
    """The field `--format value` prints, or None when there is no single one."""
    for name in ("accessToken", "apiKey"):
        if token.get(name):
            return name
    secrets = [k for k, v in token.items() if k not in NON_SECRET_FIELDS and v]
    return secrets[0] if len(secrets) == 1 else None


def primary_value(token: dict) -> str:
    name = primary_field(token)
    if name is None:
        raise ApiError("invalid_request", _several(token))
    return str(token[name])


def _several(token: dict) -> str:
    secrets = sorted(k for k, v in token.items() if k not in NON_SECRET_FIELDS and v)
    return (f"This credential issues several secret fields ({', '.join(secrets)}); nothing was issued. "
            "Use `--format env` or `--format json`.")


def dotenv_quote(value: str) -> str | None:
    """The value quoted for a dotenv file, or None when no quoting both readers share carries it."""
    if "\0" in value or "\r" in value or DOTENV_EXPANDS.search(value):
        return None
    if "'" not in value and "\\\\" not in value and not value.endswith("\\"):
        return f"'{value}'"
    if "$" not in value and "`" not in value:
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return None


def _carries(form: str, value: str) -> bool:
    if form == "dotenv":
        return dotenv_quote(value) is not None
    if form in ("export", "environ"):
        return "\0" not in value
    return True


def refusal(form: str, token: dict, env_vars: dict) -> str | None:
    """Why the token body cannot be written in `form` (naming fields, never a value), or None.

    env_vars maps token fields to variable names, as the credential's `envVars` do."""
    if form == "value":
        return None if primary_field(token) else _several(token)
    if form not in ENV_FORMS:
        return None
    mapped = {f: token[f] for f in env_vars if token.get(f) is not None}
    if not mapped:
        return ("This credential names no environment variable for the fields it issues; nothing was issued. "
                "Use `wsctl vault token ID --format json`.")
    bad = sorted(f"{env_vars[f]} ({f})" for f, v in mapped.items() if not _carries(form, str(v)))
    if not bad:
        return None
    what = {"dotenv": "no dotenv quoting that python-dotenv and a POSIX shell both read back exactly carries "
                      "it (NUL, carriage return, ${…}, or a single quote or backslashes together with $ or `)",
            "export": "a shell variable cannot hold a NUL character",
            "environ": "an environment variable cannot hold a NUL character"}[form]
    return f"The value of {', '.join(bad)} cannot be written as {form}: {what}. {JSON_HINT}"


# --- printing -------------------------------------------------------------------------------

def _checked(form: str, env: dict[str, str]) -> None:
    """A last guard for a server that did not check (an older version): refuse rather than print wrong."""
    bad = [k for k, v in env.items() if not _carries(form, v)]
    if bad:
        raise ApiError("invalid_request", f"The value of {', '.join(bad)} cannot be written as {form}. {JSON_HINT}")


def export_lines(env: dict[str, str]) -> str:
    """`export VAR='value'` lines that `eval` reads back exactly, whatever the value holds."""
    _checked("export", env)
    return "".join(f"export {k}={shlex.quote(v)}\n" for k, v in env.items())


def dotenv_lines(env: dict[str, str]) -> str:
    _checked("dotenv", env)
    return "".join(f"{k}={dotenv_quote(v)}\n" for k, v in env.items())


def json_text(env: dict[str, str]) -> str:
    return json.dumps(env, indent=2, ensure_ascii=False) + "\n"
