"""Service definitions into catalog records: TOML (CONTRACT §5) or OpenAPI (catalog/openapi_reader.py).

`parse_document(text, fmt, service, filename)` is the one entry point. It answers a *record*:

    {service, name, description, credentialType, envVars, fields, secretFields, setup,
     oauthClientId, oauthClientSecret (plaintext or None: the caller seals it),
     operations: [{opId, name, summary, description, method, path, tags, params, response,
                   example, markdown}],
     triggers: [{id, type, service, event, name, description, cadenceSeconds,
                 requiresCredential, config}]}

Every problem is ApiError("invalid_request", "<file>: <what is wrong>"), one line, never
quoting a secret value. Nothing here touches the database.
"""
from __future__ import annotations

import re
from typing import Any, Protocol, overload
from urllib.parse import urlsplit

from workspacectl.engine.catalog.definition_values import (
    GENERIC_SERVICES,
    MAX_NAME,
    MAX_SERVICE,
    SERVICE_RE,
    bad,
    jsonable,
    kebab,
)
from workspacectl.engine.validate import text_problem

CREDENTIAL_TYPES = ("oauth2", "apiKey", "platform", "noAuth")
TRIGGER_TYPES = ("webhook", "cron", "poll")
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "TRACE")
PARAM_PLACES = ("path", "query", "header", "body", "cookie")
MAX_ENV_VARS = 50
DEFAULT_POLL_CADENCE = 300
# How the client authenticates at the token and revoke endpoints (RFC 8414 names); the default is the
# one most providers document (docs/api.md §4.3).
CLIENT_AUTH_METHODS = ("client_secret_post", "client_secret_basic", "none")
DEFAULT_CLIENT_AUTH = "client_secret_post"


def env_prefix(service: str) -> str:
    return re.sub(r"[^A-Z0-9]+", "_", service.upper()).strip("_")


def default_env_vars(service: str, credential_type: str, fields: list[str]) -> dict:
    prefix = env_prefix(service)
    env: dict = {}
    if credential_type == "apiKey":
        env["apiKey"] = f"{prefix}_API_KEY"
    elif credential_type == "oauth2":
        env["accessToken"] = f"{prefix}_TOKEN"
    for f in fields:
        env.setdefault(f, f"{prefix}_{env_prefix(kebab(f))}")
    return env


# --- field helpers ---------------------------------------------------------------------------

@overload
def _str(d: dict, key: str, where: str, *, required: bool = False, default: str = "", max_len: int = 20000) -> str: ...
@overload
def _str(d: dict, key: str, where: str, *, required: bool = False, default: None, max_len: int = 20000) -> str | None: ...
def _str(d: dict, key: str, where: str, *, required: bool = False, default: str | None = "",
         max_len: int = 20000) -> str | None:
    value = d.get(key)
    if value is None:
        if required:
            raise bad(where, f"'{key}' is required.")
        return default
    if not isinstance(value, str):
        raise bad(where, f"'{key}' must be a string.")
    if required and not value.strip():
        raise bad(where, f"'{key}' must not be empty.")
    return value[:max_len]


def _str_list(d: dict, key: str, where: str) -> list[str]:
    value = d.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise bad(where, f"'{key}' must be a list of strings.")
    return list(dict.fromkeys(value))


def _bool(d: dict, key: str, where: str, default: bool) -> bool:
    value = d.get(key)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise bad(where, f"'{key}' must be true or false.")
    return value


def _url(d: dict, key: str, where: str, *, required: bool = False) -> str | None:
    value = _str(d, key, where, required=required, default=None, max_len=2000)
    if value is None:
        return None
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise bad(where, f"'{key}' must be an http(s) URL.")
    _check_callable(value, key, where)
    return value


def _check_callable(url: str, key: str, where: str) -> None:
    """A URL the server may call must not aim at link-local or cloud metadata addresses."""
    from workspacectl.engine.catalog.urls import import_refusal

    why = import_refusal(url)
    if why:
        raise bad(where, f"'{key}' is refused: {why}, which the server never calls; use the service's own host.")


def _base_url(d: dict, where: str, fields: list[str]) -> str:
    """An http(s) URL that may hold {field} placeholders for the credential's non-secret fields,
    e.g. "{instanceUrl}/services/data/v61.0"."""
    value = _str(d, "baseUrl", where, required=True, max_len=2000)
    probe = value
    for name in re.findall(r"\{([A-Za-z0-9_]+)\}", value):
        if name not in fields:
            raise bad(where, f"'baseUrl' names {{{name}}}, which is not one of its 'fields'.")
        probe = probe.replace("{" + name + "}", "https://instance.example" if probe.startswith("{" + name + "}") else "x")
    parts = urlsplit(probe)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise bad(where, "'baseUrl' must be an http(s) URL (it may start with a field such as {instanceUrl}).")
    if not value.startswith("{"):
        _check_callable(value, "baseUrl", where)
    return value


def _pagination(pages: dict, where: str) -> dict:
    """How the service pages, for `wsctl vault proxy --paginate` (Link headers need nothing):
    the cursor's dotted place in a JSON answer and the query parameter that sends it back."""
    out = {}
    for key, pattern in (("cursorPath", r"[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*"), ("cursorParam", r"[A-Za-z0-9_.\[\]-]+")):
        value = pages.get(key)
        if not isinstance(value, str) or not re.fullmatch(pattern, value) or len(value) > 200:
            raise bad(where, f"'pagination.{key}' is required: e.g. pagination = {{ cursorPath = "
                             "\"response_metadata.next_cursor\", cursorParam = \"cursor\" }.")
        out[key] = value
    unknown = sorted(set(pages) - set(out))
    if unknown:
        raise bad(where, f"'pagination' takes cursorPath and cursorParam only, not {', '.join(unknown)[:100]}.")
    return out


def _table(d: dict, key: str, where: str) -> dict:
    value = d.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise bad(where, f"'{key}' must be a table.")
    return value


def _check_env_vars(env_vars: dict, where: str, *, given: bool) -> None:
    """Every variable a credential would set must pass env_names (the one list of refused names)."""
    from workspacectl.formats.env_names import refusal

    if len(env_vars) > MAX_ENV_VARS:
        raise bad(where, f"'envVars' names at most {MAX_ENV_VARS} variables.")
    for k, var in env_vars.items():
        why = refusal(var)
        if why:
            hint = "" if given else " (the default name; set envVars explicitly)"
            raise bad(where, f"envVars.{str(k)[:64]} = {str(var)[:80]!r}{hint}: {why}.")


# --- the record ------------------------------------------------------------------------------

def build_record(d: dict, where: str, service_override: str | None = None, *, lenient_names: bool = False) -> dict:
    """Validate a TOML-shaped definition and answer the normalized record.

    lenient_names (OpenAPI): duplicate operation names get -2, -3 suffixes instead of an error.
    """
    if not isinstance(d, dict):
        raise bad(where, "the definition must be a table of keys.")
    service = service_override if service_override is not None else _str(d, "service", where, required=True)
    if not SERVICE_RE.match(service) or len(service) > MAX_SERVICE:
        raise bad(where, f"service '{service[:80]}' must be lower kebab case (a-z, 0-9, '-'), at most {MAX_SERVICE} characters.")
    if service in GENERIC_SERVICES:
        raise bad(where, f"service '{service}' is the name of a generic trigger provider; choose another "
                         "name (--service NAME, or `service` in the body).")
    credential_type = _str(d, "credentialType", where, required=True)
    if credential_type not in CREDENTIAL_TYPES:
        raise bad(where, f"'credentialType' must be one of {', '.join(CREDENTIAL_TYPES)}.")
    fields = _str_list(d, "fields", where)
    if "secretFields" in d:
        if credential_type != "apiKey":
            raise bad(where, "'secretFields' is only allowed when credentialType is apiKey.")
        secret_fields = _str_list(d, "secretFields", where)
    else:
        secret_fields = ["apiKey"] if credential_type == "apiKey" else []
    if credential_type == "apiKey" and not secret_fields:
        raise bad(where, "an apiKey service needs at least one name in 'secretFields'.")
    env_raw = _table(d, "envVars", where)
    env_vars = dict(env_raw) if env_raw else default_env_vars(service, credential_type, fields)
    _check_env_vars(env_vars, where, given=bool(env_raw))

    setup: dict = {}
    if d.get("docsUrl") is not None:
        setup["docsUrl"] = _url(d, "docsUrl", where)
    if d.get("baseUrl") is not None:
        setup["baseUrl"] = _base_url(d, where, fields)
    if d.get("probe") is not None:
        setup["probe"] = kebab(_str(d, "probe", where, required=True))
    auth = _table(d, "auth", where)
    if auth:
        setup["auth"] = jsonable(auth)
    pages = _table(d, "pagination", where)
    if pages:
        setup["pagination"] = _pagination(pages, where)
    if _str(d, "bodyEncoding", where, default="json") not in ("json", "form"):
        raise bad(where, "'bodyEncoding' must be json or form (application/x-www-form-urlencoded).")
    if d.get("bodyEncoding") == "form":     # only the example curl reads it
        setup["bodyEncoding"] = "form"
    client_id = client_secret = None
    oauth = _table(d, "oauth2", where)
    if credential_type == "oauth2":
        w = f"{where} [oauth2]"
        if not oauth:
            raise bad(where, "an oauth2 service needs an [oauth2] table with authorizeUrl and tokenUrl.")
        setup["authorizeUrl"] = _url(oauth, "authorizeUrl", w, required=True)
        setup["tokenUrl"] = _url(oauth, "tokenUrl", w, required=True)
        setup["scopes"] = _str_list(oauth, "scopes", w)
        if oauth.get("revokeUrl") is not None:
            setup["revokeUrl"] = _url(oauth, "revokeUrl", w)
        setup["pkce"] = _bool(oauth, "pkce", w, True)
        setup["scopeSeparator"] = _str(oauth, "scopeSeparator", w, default=" ", max_len=8)
        extra = _table(oauth, "extraAuthorizeParams", w)
        if not all(isinstance(v, str) for v in extra.values()):
            raise bad(w, "'extraAuthorizeParams' values must be strings.")
        setup["extraAuthorizeParams"] = dict(extra)
        client_id = _str(oauth, "clientId", w, default=None, max_len=1000)
        client_secret = _str(oauth, "clientSecret", w, default=None, max_len=4000)
        if oauth.get("issuer") is not None:
            setup["issuer"] = _url(oauth, "issuer", w)
        setup["clientAuth"] = _str(oauth, "clientAuth", w, default=DEFAULT_CLIENT_AUTH)
        if setup["clientAuth"] not in CLIENT_AUTH_METHODS:
            raise bad(w, f"'clientAuth' must be one of {', '.join(CLIENT_AUTH_METHODS)} (how the client "
                         "authenticates at the token endpoint).")
        setup["tokenBodyEncoding"] = _str(oauth, "tokenBodyEncoding", w, default="form")
        if setup["tokenBodyEncoding"] not in ("form", "json"):
            raise bad(w, "'tokenBodyEncoding' must be form (application/x-www-form-urlencoded, the default) or json.")
        if setup["clientAuth"] == "none":
            if client_secret is not None:
                raise bad(w, "clientAuth = \"none\" is a public client, which has no secret: remove 'clientSecret' "
                             "or choose client_secret_basic or client_secret_post.")
            if not setup["pkce"]:
                raise bad(w, "clientAuth = \"none\" (a public client) needs PKCE: remove 'pkce = false'.")
    elif oauth:
        raise bad(where, "an [oauth2] table is only allowed when credentialType is oauth2.")

    record: dict = {
        # read the issuer's RFC 8414 metadata at import for the client authentication (catalog/oauth_metadata.py)
        "oauthMetadataIssuer": setup.get("issuer") if oauth.get("clientAuth") is None else None,
        "service": service,
        "name": _str(d, "name", where, required=True, max_len=200),
        "description": _str(d, "description", where, max_len=4000),
        "credentialType": credential_type,
        "envVars": env_vars,
        "fields": fields,
        "secretFields": secret_fields,
        "setup": setup,
        "oauthClientId": client_id,
        "oauthClientSecret": client_secret,
    }
    record["operations"] = _operations(d.get("operations"), record, where, lenient_names)
    if "probe" in setup and not any(op["name"] == setup["probe"] for op in record["operations"]):
        raise bad(where, f"'probe' names '{setup['probe']}', which is not one of its operations.")
    record["triggers"] = parse_triggers(d.get("triggers"), where, service, credential_type)
    return record


def _operations(raw: Any, record: dict, where: str, lenient: bool) -> list[dict]:
    from workspacectl.engine.catalog.markdown import operation_markdown

    if raw is None:
        return []
    if not isinstance(raw, list):
        raise bad(where, "'operations' must be an array of tables ([[operations]]).")
    ops, seen = [], set()
    for i, o in enumerate(raw, 1):
        w = f"{where} operation {i}"
        if not isinstance(o, dict):
            raise bad(w, "each [[operations]] entry must be a table.")
        name = kebab(_str(o, "name", w, required=True, max_len=400))
        if not name:
            raise bad(w, "'name' must hold letters or digits.")
        if name in seen:
            if not lenient:
                raise bad(w, f"two operations are named '{name}'; names must be unique within a service.")
            n = 2
            while f"{name}-{n}" in seen:
                n += 1
            name = f"{name}-{n}"
        seen.add(name)
        method = _str(o, "method", w, required=True).upper()
        if method not in METHODS:
            raise bad(w, f"'method' must be one of {', '.join(METHODS)}.")
        path = _str(o, "path", w, required=True, max_len=2000)
        if not path.startswith("/"):
            raise bad(w, "'path' must start with '/' (relative to the service's baseUrl).")
        op = {
            "opId": f"{record['service']}.{name}",
            "name": name,
            "summary": " ".join(_str(o, "summary", w, max_len=1000).split()),
            "description": _str(o, "description", w),
            "method": method,
            "path": path,
            "tags": _str_list(o, "tags", w),
            "params": _params(o.get("params"), w, method, path),
            "response": jsonable(o.get("response")),
            "example": jsonable(o.get("example")),
        }
        markdown = _str(o, "markdown", w, default="", max_len=200000)
        op["markdown"] = markdown or operation_markdown(op, record)
        ops.append(op)
    return ops


def _params(raw: Any, where: str, method: str, path: str) -> list[dict]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise bad(where, "'params' must be an array of tables.")
    out = []
    for p in raw:
        if not isinstance(p, dict):
            raise bad(where, "each entry of 'params' must be a table with a name.")
        name = _str(p, "name", where, required=True, max_len=200)
        default_in = "path" if "{" + name + "}" in path else ("body" if method in ("POST", "PUT", "PATCH") else "query")
        place = _str(p, "in", where, default=default_in)
        place = "body" if place == "formData" else place
        if place not in PARAM_PLACES:
            raise bad(where, f"param '{name}': 'in' must be one of {', '.join(PARAM_PLACES)}.")
        out.append({
            "name": name,
            "in": place,
            "type": _str(p, "type", where, default="string", max_len=200) or "string",
            "required": _bool(p, "required", where, place == "path"),
            "description": " ".join(_str(p, "description", where, max_len=2000).split()),
        })
    return out


def parse_triggers(raw: Any, where: str, service: str | None, credential_type: str | None = None) -> list[dict]:
    """[[triggers]] of a service, or (service None) the generic providers with explicit ids."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise bad(where, "'triggers' must be an array of tables ([[triggers]]).")
    out, seen = [], set()
    for i, t in enumerate(raw, 1):
        w = f"{where} trigger {i}"
        if not isinstance(t, dict):
            raise bad(w, "each [[triggers]] entry must be a table.")
        ttype = _str(t, "type", w, required=True)
        if ttype not in TRIGGER_TYPES:
            raise bad(w, f"'type' must be one of {', '.join(TRIGGER_TYPES)}.")
        event = kebab(_str(t, "event", w, max_len=200)) or None
        if service is None or t.get("id") is not None:
            tid = _str(t, "id", w, required=True, max_len=MAX_NAME)
        else:
            if not event:
                raise bad(w, "'event' is required; the trigger id is <service>-<event>.")
            tid = f"{service}-{event}"
        if not SERVICE_RE.match(tid):
            raise bad(w, f"trigger id '{tid[:80]}' must be lower kebab case.")
        if tid in seen:
            raise bad(w, f"two triggers have the id '{tid}'.")
        seen.add(tid)
        cadence = t.get("cadenceSeconds")
        if ttype == "poll":
            if cadence is None:
                cadence = DEFAULT_POLL_CADENCE
            if isinstance(cadence, bool) or not isinstance(cadence, int) or not 1 <= cadence <= 31 * 86400:
                raise bad(w, "'cadenceSeconds' must be a whole number of seconds between 1 and 2678400.")
        else:
            cadence = None
        config = _table(t, "config", w)
        out.append({
            "id": tid,
            "type": ttype,
            "service": service,
            "event": event,
            "name": _str(t, "name", w, required=True, max_len=200),
            "description": _str(t, "description", w, max_len=4000),
            "cadenceSeconds": cadence,
            "requiresCredential": _bool(t, "requiresCredential", w,
                                        ttype == "poll" and credential_type in ("oauth2", "apiKey")),
            "config": jsonable(config),
        })
    return out


# --- documents -------------------------------------------------------------------------------

def parse_toml(text: str, where: str, service_override: str | None = None) -> dict:
    import tomllib

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise bad(where, f"not valid TOML ({e}).") from None
    except RecursionError:
        raise bad(where, "the document is nested too deeply.") from None
    from workspacectl.engine.catalog.limits import check_toml_shape

    check_toml_shape(data, where)
    from workspacectl.engine.catalog.definition_keys import check_keys

    check_keys(data, text, where)
    return build_record(data, where, service_override)


def parse_generic_toml(text: str, where: str) -> list[dict]:
    """The generic trigger providers file (catalog_data/_generic.toml): [[triggers]] with ids."""
    import tomllib

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise bad(where, f"not valid TOML ({e}).") from None
    return parse_triggers(data.get("triggers"), where, None)


def load_structured(text: str, where: str) -> Any:
    """JSON, else YAML (CSafeLoader when built with libyaml). Answers the parsed value or None."""
    import json

    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        try:
            return json.loads(text)
        except ValueError:
            pass  # YAML flow style is also allowed
        except RecursionError:
            raise bad(where, "the document is nested too deeply.") from None
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return yaml.load(text, Loader=loader)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark is not None else ""
        raise bad(where, f"not valid JSON or YAML{at}.") from None
    except RecursionError:
        raise bad(where, "the document is nested too deeply.") from None


def detect_format(text: str, filename: str | None) -> str:
    name = (filename or "").lower()
    if name.endswith(".toml"):
        return "toml"
    if name.endswith((".json", ".yaml", ".yml")):
        return "openapi"
    return sniff_format(text)


_OPENAPI_KEY = re.compile(r"""^["']?(openapi|swagger)["']?[ \t]*:""", re.M)


def sniff_format(text: str) -> str:
    """toml or openapi by content alone. A JSON document (it opens with `{`, which no TOML file
    can) is OpenAPI, whatever order its keys come in and however it is spaced; so is a YAML one
    with a top-level `openapi:` or `swagger:` key anywhere (TOML writes `key = value`, never
    `key:`); anything else is read as a service definition."""
    if text.lstrip("\ufeff \t\r\n").startswith("{"):
        return "openapi"
    return "openapi" if _OPENAPI_KEY.search(text) else "toml"


class Report(Protocol):
    """Hears an import's phases: read (parse the text), resolve (build the operations), index."""

    def __call__(self, phase: str, done: int | None = None, total: int | None = None) -> None: ...


def _no_report(phase: str, done: int | None = None, total: int | None = None) -> None:
    pass


def parse_document(text: str | bytes, fmt: str | None = None, service: str | None = None,
                   filename: str | None = None, report: Report | None = None) -> dict:
    """A definition file or OpenAPI document (text) -> the normalized record. report(phase, done,
    total), when given, hears the phases: read (parse the text), resolve (build the operations)."""
    report = report or _no_report
    where = (filename or "the definition").replace("\n", " ")[:200]
    from workspacectl.engine.catalog import limits

    if isinstance(text, (bytes, bytearray, str)):
        limits.check_size(text, where)
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8-sig")
        except UnicodeDecodeError:
            raise bad(where, "the file is not UTF-8 text.") from None
    if not isinstance(text, str) or not text.strip():
        raise bad(where, "the file is empty.")
    if service is not None and (not SERVICE_RE.match(service) or len(service) > MAX_SERVICE):
        raise bad(where, f"--service '{service[:80]}' must be lower kebab case (a-z, 0-9, '-').")
    fmt = fmt or detect_format(text, filename)
    if fmt not in ("toml", "openapi"):
        raise bad(where, "'format' must be toml or openapi.")
    report("read")
    limits.check_nodes(text, fmt, where)
    if fmt == "toml":
        return _text_only(parse_toml(text, where, service), where)
    from workspacectl.engine.catalog.openapi_reader import openapi_definition

    doc = load_structured(text, where)
    report("resolve")
    try:
        definition = openapi_definition(doc, where, service, report)
    except RecursionError:
        raise bad(where, "the document is nested too deeply.") from None
    return _text_only(build_record(definition, where, lenient_names=True), where)


def _text_only(record: dict, where: str) -> dict:
    """A JSON escape such as \\ud800 parses to a lone surrogate, and \\u0000 (JSON or TOML) to a
    NUL: neither is text every store keeps (SQLite cannot bind the one, PostgreSQL the other).
    Such a document is refused, on both stores, rather than stored half-readable."""
    why = text_problem(record)
    if why == "surrogate":
        raise bad(where, "the document holds a lone surrogate escape (\\ud800 to \\udfff), "
                         "which is not valid Unicode text; fix or remove it.")
    if why == "nul":
        raise bad(where, "the document holds a NUL character (\\u0000), which stored text may not contain; "
                         "remove it.")
    return record
