"""An operation's reference as markdown, generated from its record (CONTRACT §5).

It holds the method and path, the params with types and required marks, the response shape,
an example request (curl using the env var names) and the env var names that a credential of
the service injects into shell and agent runs.
"""
from __future__ import annotations

import json
import re
from urllib.parse import quote, urlencode

CREDENTIAL_WORDS = {
    "oauth2": "an OAuth connection (the vault refreshes its access token)",
    "apiKey": "a pasted API key or token",
    "platform": "the platform itself (call it with scope platform:use; nothing to connect)",
    "noAuth": "no credential (a public API)",
}


def _cell(value: object) -> str:
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


_PLACEHOLDER = re.compile(r"\{([^{}/]+)\}")
_WRITE_METHODS = ("POST", "PUT", "PATCH")


def _env_ref(record: dict, name: object) -> str | None:
    """`$VAR` for a field or secret name the credential injects (case-insensitive: `{AccountSid}`
    is the `accountSid` field), else None."""
    env = record.get("envVars") or {}
    if not isinstance(name, str):
        return None
    var = env.get(name) or next((v for k, v in env.items() if k.lower() == name.lower()), None)
    return "$" + var if var else None


def _split_example(op: dict) -> tuple[dict, dict, dict, object]:
    """The example's values by where they go: (path, query, header, body). A key declared as a
    param goes where the param says; an undeclared one into the path when the path names it,
    else into the body of a POST/PUT/PATCH, else the query."""
    method, example = op["method"], op.get("example")
    if not isinstance(example, dict):
        return {}, {}, {}, example if method in _WRITE_METHODS else None
    places = {p.get("name"): p.get("in") for p in op.get("params") or [] if isinstance(p, dict)}
    in_path = set(_PLACEHOLDER.findall(op["path"]))
    path: dict = {}
    query: dict = {}
    header: dict = {}
    body: dict = {}
    dest = {"path": path, "query": query, "header": header, "body": body}
    for key, value in example.items():
        place = places.get(key) or ("path" if key in in_path else "body" if method in _WRITE_METHODS else "query")
        if place in dest:       # a cookie param is left out of the example
            dest[place][key] = value
    return path, query, header, (body if body or (method in _WRITE_METHODS and not example) else None)


def _text(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _fill_path(path: str, values: dict, record: dict) -> str:
    """Path placeholders from the credential's env vars (`{AccountSid}` -> `${TWILIO_ACCOUNT_SID}`),
    else the example's values; any other stays as written."""
    fields = {f.lower() for f in record.get("fields") or []}

    def sub(m: re.Match) -> str:
        ref = _env_ref(record, m.group(1)) if m.group(1).lower() in fields else None
        if ref:
            return "${" + ref[1:] + "}"
        if m.group(1) in values:
            return quote(_text(values[m.group(1)]), safe="/:@!,;=+")
        return m.group(0)
    return _PLACEHOLDER.sub(sub, path)


def _auth(record: dict) -> tuple[list[str], dict, list[str]]:
    """(curl options, query params, headers) presenting the credential in the service's `[auth]` style."""
    auth = (record.get("setup") or {}).get("auth")
    auth = auth if isinstance(auth, dict) else {}
    extra = auth.get("headers")
    extra = extra if isinstance(extra, dict) else {}
    headers = [f"{k}: {v}" for k, v in extra.items()]
    var = secret_env_var(record)
    if not var or record.get("credentialType") not in ("oauth2", "apiKey"):
        return [], {}, headers
    secret = "$" + var
    kind = auth.get("type") or "bearer"
    if kind == "basic":     # username and password name fields or secrets; else the secret is the user
        user, password = secret, ""
        if auth.get("username") or auth.get("password"):
            user = _env_ref(record, auth.get("username")) or ""
            password = _env_ref(record, auth.get("password")) or ""
        return [f'-u "{user}:{password}"'], {}, headers
    if kind == "header":
        prefix = auth.get("prefix") if isinstance(auth.get("prefix"), str) else ""
        value = _env_ref(record, auth.get("field")) or secret
        return [], {}, [f'{auth.get("name") or "Authorization"}: {prefix}{value}', *headers]
    if kind == "query":
        value = _env_ref(record, auth.get("field")) or secret
        return [], {str(auth.get("name") or "api_key"): "${" + value[1:] + "}"}, headers
    return [], {}, [f"Authorization: Bearer {secret}", *headers]


def _form_lines(body: dict | list, prefix: str = "") -> list[str]:
    """`--data-urlencode` options for a form-encoded body; nested values use brackets (a[b]=1, a[0]=x)."""
    out = []
    items = body.items() if isinstance(body, dict) else enumerate(body)
    for key, value in items:
        name = f"{prefix}[{key}]" if prefix else str(key)
        if isinstance(value, (dict, list)):
            out += _form_lines(value, name)
        else:
            out.append("--data-urlencode " + _shell_quote(f"{name}={'' if value is None else _text(value)}"))
    return out


def example_curl(op: dict, record: dict) -> str:
    method = op["method"]
    path_values, query, header_values, body = _split_example(op)
    options, auth_query, headers = _auth(record)
    url = base_url(record).rstrip("/") + _fill_path(op["path"], path_values, record)
    query = {k: _text(v) for k, v in {**query, **auth_query}.items()}
    if query:
        url += ("&" if "?" in url else "?") + urlencode(query, safe="${}<>")
    headers += [f"{k}: {_text(v)}" for k, v in header_values.items()]
    lines = [f'curl -X {method} "{url}"' if method != "GET" else f'curl "{url}"', *options]
    lines.extend(f'-H "{h}"' for h in headers)
    if body is not None and (record.get("setup") or {}).get("bodyEncoding") == "form" and isinstance(body, dict):
        lines += _form_lines(body)
    elif body is not None:
        lines.append('-H "Content-Type: application/json"')
        lines.append("-d " + _shell_quote(json.dumps(body, ensure_ascii=False)))
    return " \\\n  ".join(lines)


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
