"""Turning issued tokens into environment variables, and printing them safely.

A credential's `envVars` (from its list entry or detail) maps token fields to variable names,
e.g. ``{"accessToken": "SLACK_TOKEN", "instanceUrl": "SLACK_URL"}``. Only fields present in the
token answer are set. Secret values here are plain strings on purpose: these are the outputs
that exist to show them (`vault token`, `vault env`, `vault run`).
"""
from __future__ import annotations

import json
import shlex

from workspacectl.env_names import refusal
from workspacectl.errors import ApiError

# Token fields that are metadata, not secrets: never masked, still injected when mapped.
NON_SECRET_FIELDS = frozenset({"instanceUrl", "expiresAt", "tokenType"})


def env_for(detail: dict, token: dict) -> dict[str, str]:
    """{VAR: value} for one credential; refuses one whose integration names no variable we can set."""
    mapping = detail.get("envVars") or {}
    out: dict[str, str] = {}
    for field, var in mapping.items():
        if field in token and token[field] is not None and refusal(var) is None:
            out[var] = str(token[field])
    if not out:
        raise ApiError("invalid_request", f"Credential {detail.get('id')} ({detail.get('service')}) names no "
                       "environment variable for the fields it issues; use `wsctl vault token ID --format json`.")
    return out


def check_injectable(details: list[dict]) -> None:
    """Refuse, before any token is issued (and logged), a credential whose envVars name a variable
    env_names refuses (a catalog row older than that rule), and credentials that name one variable."""
    for detail in details:
        for var in (detail.get("envVars") or {}).values():
            why = refusal(var)
            if why:
                raise ApiError("invalid_request", f"Credential {detail.get('id')} ({detail.get('service')}): {why}. "
                               "Nothing was issued; an owner or admin fixes envVars with `wsctl catalog import`.")
    check_no_clash(details)


def check_no_clash(details: list[dict]) -> None:
    """Refuse, before any token is issued (and logged), credentials whose envVars name one variable."""
    owner: dict[str, str] = {}
    for detail in details:
        cred_id = detail.get("id")
        for var in (detail.get("envVars") or {}).values():
            if var in owner and owner[var] != cred_id:
                raise ApiError("invalid_request", f"Credentials {owner[var]} and {cred_id} both set {var}; "
                               "pass only one of them.")
            owner[var] = cred_id


def merge_env(parts: list[tuple[str, dict[str, str]]]) -> dict[str, str]:
    """Join the variables of several credentials (check_no_clash refused clashes before issuing)."""
    merged: dict[str, str] = {}
    for _, env in parts:
        merged.update(env)
    return merged


def secret_values(token: dict) -> list[str]:
    """The values of a token answer that must be masked (everything but metadata)."""
    return [str(v) for k, v in token.items() if k not in NON_SECRET_FIELDS and v not in (None, "")]


def primary_value(token: dict) -> str:
    """The one secret `--format value` prints: accessToken, else apiKey, else the only secret field."""
    for name in ("accessToken", "apiKey"):
        if token.get(name):
            return str(token[name])
    secrets = [k for k, v in token.items() if k not in NON_SECRET_FIELDS and v]
    if len(secrets) == 1:
        return str(token[secrets[0]])
    raise ApiError("invalid_request", "This credential issues several secret fields "
                   f"({', '.join(sorted(secrets))}); use --format env or --format json.")


# --- printing -------------------------------------------------------------------------------

def plain_lines(env: dict[str, str]) -> str:
    """VAR=value lines, unquoted (like `env` prints them)."""
    return "".join(f"{k}={v}\n" for k, v in env.items())


def export_lines(env: dict[str, str]) -> str:
    """`export VAR='value'` lines that `eval` reads back exactly, whatever the value holds."""
    return "".join(f"export {k}={shlex.quote(v)}\n" for k, v in env.items())


def dotenv_quote(value: str) -> str:
    """A double-quoted dotenv value: backslash, double quote, newline and carriage return escaped."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
    return f'"{escaped}"'


def dotenv_lines(env: dict[str, str]) -> str:
    return "".join(f"{k}={dotenv_quote(v)}\n" for k, v in env.items())


def json_text(env: dict[str, str]) -> str:
    return json.dumps(env, indent=2, ensure_ascii=False) + "\n"


FORMATTERS = {"export": export_lines, "dotenv": dotenv_lines, "json": json_text}
