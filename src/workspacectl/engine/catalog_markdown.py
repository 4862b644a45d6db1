"""An operation's reference as markdown, generated from its record (CONTRACT §5).

It holds the method and path, the params with types and required marks, the response shape,
an example request (curl using the env var names) and the env var names that a credential of
the service injects into shell and agent runs.
"""
from __future__ import annotations

import json
import re
from urllib.parse import urlencode

CREDENTIAL_WORDS = {
    "oauth2": "an OAuth connection (the vault refreshes its access token)",
    "apiKey": "a pasted API key or token",
    "platform": "the platform itself (call it with scope platform:use; nothing to connect)",
    "noAuth": "no credential (a public API)",
}


def _cell(value) -> str:
    text = "" if value is None else " ".join(str(value).split())
    return text.replace("|", "\\|") or " "


def _shell_quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def secret_env_var(record: dict) -> str | None:
    """The env var holding the credential's secret: accessToken, else the first secret field."""
    env = record.get("envVars") or {}
    if record.get("credentialType") == "oauth2" and env.get("accessToken"):
        return env["accessToken"]
    for f in record.get("secretFields") or []:
        if env.get(f):
            return env[f]
    for key in ("apiKey", "accessToken", "token"):
        if env.get(key):
            return env[key]
    return None


def base_url(record: dict) -> str:
    """The base URL for the example, with {field} placeholders as the fields' env vars."""
    env = record.get("envVars") or {}
    base = (record.get("setup") or {}).get("baseUrl")
    if base:
        return re.sub(r"\{([A-Za-z0-9_]+)\}", lambda m: "${" + env[m.group(1)] + "}" if env.get(m.group(1))
                      else m.group(0), base)
    if "instanceUrl" in (record.get("fields") or []) and env.get("instanceUrl"):
        return "$" + env["instanceUrl"]
    return "<base URL>"


def example_curl(op: dict, record: dict) -> str:
    method = op["method"]
    url = base_url(record).rstrip("/") + op["path"]
    example = op.get("example")
    query: dict = {}
    body = None
    if isinstance(example, dict) and method in ("POST", "PUT", "PATCH"):
        body = example
    elif isinstance(example, dict):
        query = {k: v if isinstance(v, str) else json.dumps(v) for k, v in example.items()}
    elif example is not None and method in ("POST", "PUT", "PATCH"):
        body = example
    lines = []
    var = secret_env_var(record)
    auth = (record.get("setup") or {}).get("auth") or {"type": "bearer"}
    headers = []
    if var and record.get("credentialType") in ("oauth2", "apiKey"):
        kind = auth.get("type")
        if kind == "basic":
            lines.append(f'-u "${var}:"')
        elif kind == "header":
            headers.append(f'{auth.get("name") or "Authorization"}: ${var}')
        elif kind == "query":
            query[str(auth.get("name") or "api_key")] = "${" + var + "}"
        else:
            headers.append(f"Authorization: Bearer ${var}")
    if query:
        url += ("&" if "?" in url else "?") + urlencode(query, safe="${}<>")
    first = f'curl -X {method} "{url}"' if method != "GET" else f'curl "{url}"'
    lines.extend(f'-H "{h}"' for h in headers)
    if body is not None:
        lines.append('-H "Content-Type: application/json"')
        lines.append("-d " + _shell_quote(json.dumps(body, ensure_ascii=False)))
    return " \\\n  ".join([first, *lines])


def env_section(record: dict) -> list[str]:
    env = record.get("envVars") or {}
    ctype = record.get("credentialType", "noAuth")
    out = ["## Credentials", ""]
    out.append(f"{record.get('name') or record.get('service')} is connected through {CREDENTIAL_WORDS.get(ctype, ctype)}.")
    if env:
        out += ["", "A credential of this service injects these environment variables into command-line "
                    "shell runs and agent runs:", ""]
        out += [f"- `{var}` ({field})" for field, var in env.items()]
        out += ["", "Find one with `wsctl vault list`; then `wsctl vault run CRED_ID --reason \"...\" -- CMD` "
                    "runs a command with them set."]
    else:
        out += ["", "It injects no environment variables."]
    return out


def operation_markdown(op: dict, record: dict) -> str:
    op_id = op.get("opId") or f"{record['service']}.{op['name']}"
    out = [f"# {op_id}", ""]
    if op.get("summary"):
        out += [op["summary"], ""]
    out += [f"`{op['method']} {op['path']}`", ""]
    base = (record.get("setup") or {}).get("baseUrl")
    if base:
        out += [f"Base URL: {base}", ""]
    desc = (op.get("description") or "").strip()
    if desc and desc != op.get("summary"):
        out += [desc, ""]
    out += ["## Parameters", ""]
    params = op.get("params") or []
    if params:
        out += ["| Name | In | Type | Required | Description |", "|---|---|---|---|---|"]
        for p in params:
            out.append(f"| {_cell(p.get('name'))} | {_cell(p.get('in'))} | {_cell(p.get('type'))} | "
                       f"{'yes' if p.get('required') else 'no'} | {_cell(p.get('description'))} |")
    else:
        out.append("None.")
    out += ["", "## Response", ""]
    if op.get("response") is not None:
        out += ["```json", json.dumps(op["response"], indent=2, ensure_ascii=False), "```"]
    else:
        out.append("Not documented.")
    out += ["", "## Example", "", "```bash", example_curl(op, record), "```", ""]
    out += env_section(record)
    return "\n".join(out) + "\n"
