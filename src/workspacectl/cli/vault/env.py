"""Turning issued tokens into environment variables, and printing them safely.

A credential's `envVars` (from its list entry or detail) maps token fields to variable names,
e.g. ``{"accessToken": "SLACK_TOKEN", "instanceUrl": "SLACK_URL"}``. Only fields present in the
token answer are set. Secret values here are plain strings on purpose: these are the outputs
that exist to show them (`vault token`, `vault env`, `vault run`).
"""
from __future__ import annotations

import re

from workspacectl.errors import ApiError
from workspacectl.formats.env_names import refusal
from workspacectl.formats.env_text import NON_SECRET_FIELDS, dotenv_lines, export_lines, json_text


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


def var_prefix(word: str) -> str:
    """'stripe-live' -> 'STRIPE_LIVE': upper case, every run of other characters one '_'."""
    return re.sub(r"[^A-Z0-9]+", "_", word.upper()).strip("_")


def named_after_credential(detail: dict) -> dict:
    """The detail with its envVars named after the credential instead of the service: the
    service's own prefix is replaced by the credential's name (stripe-live: STRIPE_API_KEY ->
    STRIPE_LIVE_API_KEY), and a variable without that prefix gets the name in front (SK ->
    STRIPE_LIVE_SK). A credential named after its service keeps the catalog's names."""
    name, service = detail.get("name") or "", detail.get("service") or ""
    ours, theirs = var_prefix(name), var_prefix(service)
    if not ours or ours[0].isdigit():
        raise ApiError("invalid_request", f"Credential {name or detail.get('id')} ({detail.get('id')}): its name "
                       "cannot begin an environment variable name; rename it with `wsctl vault rename`, or use "
                       "--var-names service.")
    renamed = {}
    for field, var in (detail.get("envVars") or {}).items():
        if not isinstance(var, str):
            renamed[field] = var
        elif theirs and (var == theirs or var.startswith(theirs + "_")):
            renamed[field] = ours + var[len(theirs):]
        else:
            renamed[field] = f"{ours}_{var}"
    return {**detail, "envVars": renamed, "varNamesFrom": "credential"}


def check_injectable(details: list[dict]) -> None:
    """Refuse, before any token is issued (and logged), a credential whose envVars name a variable
    env_names refuses (a catalog row older than that rule), and credentials that name one variable."""
    for detail in details:
        for var in (detail.get("envVars") or {}).values():
            why = refusal(var)
            if why and detail.get("varNamesFrom") == "credential":
                raise ApiError("invalid_request", f"Credential {detail.get('name')} ({detail.get('id')}) would set "
                               f"{str(var)[:80]}, named after it: {why}. Nothing was issued; rename the credential "
                               "(`wsctl vault rename`) or use --var-names service.")
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
                hint = ("rename one (`wsctl vault rename`) or pass only one of them"
                        if detail.get("varNamesFrom") == "credential" else
                        "pass only one of them, or --var-names credential to name each one's variables after it "
                        f"({_example(owner[var], var)}, {_example(detail, var)})")
                raise ApiError("invalid_request", f"Credentials {first} and {second} both set {var}; {hint}. "
                               "Nothing was issued.")
            owner[var] = detail


def _example(detail: dict, var: str) -> str:
    """What `var` would be called when named after this credential (for a message)."""
    field = next((f for f, v in (detail.get("envVars") or {}).items() if v == var), None)
    try:
        return named_after_credential(detail)["envVars"].get(field, var)
    except ApiError:
        return var


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
