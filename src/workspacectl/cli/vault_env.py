"""Turning issued tokens into environment variables, and printing them safely.

A credential's `envVars` (from its list entry or detail) maps token fields to variable names,
e.g. ``{"accessToken": "SLACK_TOKEN", "instanceUrl": "SLACK_URL"}``. Only fields present in the
token answer are set. Secret values here are plain strings on purpose: these are the outputs
that exist to show them (`vault token`, `vault env`, `vault run`).
"""
from __future__ import annotations

from workspacectl.formats.env_names import refusal
from workspacectl.formats.env_text import NON_SECRET_FIELDS, dotenv_lines, export_lines, json_text
from workspacectl.errors import ApiError


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
    owner: dict[str, dict] = {}
    for detail in details:
        for var in (detail.get("envVars") or {}).values():
            if var in owner and owner[var].get("id") != detail.get("id"):
                first, second = (f"{d.get('name') or d.get('id')} ({d.get('id')})" for d in (owner[var], detail))
                raise ApiError("invalid_request", f"Credentials {first} and {second} both set {var}; "
                               "pass only one of them.")
            owner[var] = detail


def merge_env(parts: list[tuple[str, dict[str, str]]]) -> dict[str, str]:
    """Join the variables of several credentials (check_no_clash refused clashes before issuing)."""
    merged: dict[str, str] = {}
    for _, env in parts:
        merged.update(env)
    return merged


def secret_values(token: dict) -> list[str]:
    """The values of a token answer that must be masked (everything but metadata)."""
    return [str(v) for k, v in token.items() if k not in NON_SECRET_FIELDS and v not in (None, "")]


# --- printing -------------------------------------------------------------------------------

# How each `vault env --format` is printed (workspacectl/formats/env_text.py decides what each can carry),
# and the token request's `format` that makes the engine refuse before issuing what it cannot.
FORMATTERS = {"export": export_lines, "dotenv": dotenv_lines, "json": json_text}
REQUEST_FORMS = {"export": "export", "dotenv": "dotenv", "json": "variables"}
