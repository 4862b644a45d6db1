"""OpenAPI 2.0 / 3.0 / 3.1 documents into a service definition (the TOML shape of CONTRACT §5).

Local `$ref`s (`#/...`) are resolved with cycle protection; any other `$ref` (another file, a
URL) is never fetched and stays a name. Schemas become short type names and depth-limited
response shapes (catalog/schema_walk.py), so a 3 MB document turns into a catalog a person can read.
"""
from __future__ import annotations

import ipaddress
import re
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit

from workspacectl.engine.catalog import limits
from workspacectl.engine.catalog.definition_values import MAX_SERVICE, SERVICE_RE, ascii_fold, bad, kebab
from workspacectl.engine.catalog.schema_walk import Resolver, merged_properties, required_of, sample, shape, type_name

if TYPE_CHECKING:
    from workspacectl.engine.catalog.importer import Report

HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
NOISE_WORDS = {"api", "apis", "rest", "http", "web", "platform", "openapi", "swagger", "the", "v1", "v2",
               "v3", "v4", "beta", "preview", "public", "service", "services", "spec", "specification"}
BODY_TYPES = ("application/json", "application/x-www-form-urlencoded", "multipart/form-data")


# --- reading a parsed document: any key may hold any JSON value ---------------------------------

def _dict_at(node: dict, key: str) -> dict:
    """node[key] when it is an object, else an empty one."""
    value = node.get(key)
    return value if isinstance(value, dict) else {}


def _list_at(node: dict, key: str) -> list:
    """node[key] when it is an array, else an empty one."""
    value = node.get(key)
    return value if isinstance(value, list) else []


def _str_at(node: dict, key: str) -> str:
    """node[key] when it is a string, else ""."""
    value = node.get(key)
    return value if isinstance(value, str) else ""


# --- the service -----------------------------------------------------------------------------

def _servers_base(doc: dict) -> str | None:
    if doc.get("swagger"):
        host = doc.get("host")
        if not isinstance(host, str) or not host:
            return None
        schemes = _list_at(doc, "schemes")
        scheme = "https" if "https" in schemes or not schemes else str(schemes[0])
        base = _str_at(doc, "basePath")
        return f"{scheme}://{host}{base}".rstrip("/")
    servers = doc.get("servers")
    if not isinstance(servers, list):
        return None
    for s in servers:
        if not isinstance(s, dict) or not isinstance(s.get("url"), str):
            continue
        url = s["url"]
        variables = _dict_at(s, "variables")
        for var, spec in variables.items():
            default = spec.get("default") if isinstance(spec, dict) else None
            if default is not None:
                url = url.replace("{" + str(var) + "}", str(default))
        parts = urlsplit(url)
        if parts.scheme in ("http", "https") and parts.netloc and "{" not in url:
            return url.rstrip("/")
    return None


SECOND_LEVEL_SUFFIXES = {"co", "com", "net", "org", "gov", "edu", "ac", "or", "ne", "go"}


def _host_label(base: str | None) -> str | None:
    if not base:
        return None
    host = urlsplit(base).hostname or ""
    try:
        ipaddress.ip_address(host)
        return None                     # 127.0.0.1 names nothing
    except ValueError:
        pass
    labels = [x for x in host.split(".") if x]
    if len(labels) >= 3 and len(labels[-1]) == 2 and labels[-2] in SECOND_LEVEL_SUFFIXES:
        return kebab(labels[-3])        # api.acme.co.uk -> acme, not co
    if len(labels) >= 2:
        return kebab(labels[-2])
    return kebab(labels[0]) if labels else None


def derive_service(doc: dict, base: str | None) -> str:
    title = _str_at(_dict_at(doc, "info"), "title")
    plain = re.sub(r"[^a-z0-9]+", " ", re.sub(r"\(.*?\)", " ", ascii_fold(title).lower()))
    words = [w for w in plain.split() if w not in NOISE_WORDS]
    host = _host_label(base)
    if words and host and host.startswith(words[0]):
        return words[0][:MAX_SERVICE]
    if host and SERVICE_RE.match(host):
        return host[:MAX_SERVICE]
    candidate = "-".join(words[:3])[:MAX_SERVICE].strip("-")
    return candidate or "imported-api"


def _schemes(doc: dict, r: Resolver) -> dict:
    components = _dict_at(doc, "components")
    raw = doc.get("securityDefinitions") if doc.get("swagger") else components.get("securitySchemes")
    out = {}
    if isinstance(raw, dict):
        for k, v in raw.items():
            node, _ = r.resolve(v)
            if isinstance(node, dict):
                out[str(k)] = node
    return out


def _preferred_order(doc: dict, schemes: dict) -> list[str]:
    order: list[str] = []
    for req in _list_at(doc, "security"):
        if isinstance(req, dict):
            order.extend(k for k in req if k in schemes and k not in order)
    order.extend(k for k in schemes if k not in order)
    return order


def _absolute(url: object, base: str | None) -> str | None:
    if not isinstance(url, str) or not url:
        return None
    if base and not urlsplit(url).scheme:
        url = urljoin(base + "/", url)
    parts = urlsplit(url)
    return url if parts.scheme in ("http", "https") and parts.netloc else None


def credential_setup(doc: dict, r: Resolver, base: str | None) -> dict:
    """credentialType, oauth2 table and auth style from the security schemes."""
    schemes = _schemes(doc, r)
    order = _preferred_order(doc, schemes)
    for key in order:
        s = schemes[key]
        if s.get("type") != "oauth2":
            continue
        if doc.get("swagger"):
            flow = s if s.get("flow") == "accessCode" else None
        else:
            flow = _dict_at(_dict_at(s, "flows"), "authorizationCode")
        if not flow:
            continue
        authorize = _absolute(flow.get("authorizationUrl"), base)
        token = _absolute(flow.get("tokenUrl"), base)
        if not (authorize and token):
            continue
        scopes = _dict_at(flow, "scopes")
        oauth = {"authorizeUrl": authorize, "tokenUrl": token, "scopes": [str(x) for x in list(scopes)[:300]]}
        return {"credentialType": "oauth2", "oauth2": oauth, "auth": {"type": "bearer"}}
    for key in order:
        s = schemes[key]
        t = s.get("type")
        if t == "apiKey":
            place = s.get("in") if s.get("in") in ("header", "query", "cookie") else "header"
            name = str(s.get("name") or "Authorization")[:100]
            if place == "header" and name.lower() == "authorization":
                return {"credentialType": "apiKey", "auth": {"type": "bearer"}}
            return {"credentialType": "apiKey", "auth": {"type": place, "name": name}}
        if t == "basic" or (t == "http" and str(s.get("scheme", "")).lower() == "basic"):
            return {"credentialType": "apiKey", "auth": {"type": "basic"}}
        if t in ("http", "oauth2", "openIdConnect"):
            return {"credentialType": "apiKey", "auth": {"type": "bearer"}}
    return {"credentialType": "noAuth"}


# --- operations ------------------------------------------------------------------------------

def _param_list(r: Resolver, raw: Any) -> list[dict]:
    out = []
    for p in raw if isinstance(raw, list) else []:
        node, _ = r.resolve(p)
        if isinstance(node, dict) and isinstance(node.get("name"), str) and isinstance(node.get("in"), str):
            out.append(node)
    return out


def _first_line(text: object, limit: int = 200) -> str:
    if not isinstance(text, str):
        return ""
    text = " ".join(re.sub(r"<[^>]{0,200}>", " ", text[:4000]).split())
    m = re.match(r"(.+?[.!?])(\s|$)", text)
    first = m.group(1) if m else text
    return first if len(first) <= limit else first[: limit - 1].rstrip() + "…"


def _body_schema(r: Resolver, op: dict) -> tuple[Any, bool]:
    """The request body schema: OpenAPI 3 requestBody, or a Swagger 2 'in: body' parameter."""
    body, name = r.resolve(op.get("requestBody"))
    if not isinstance(body, dict):
        # a body behind a remote $ref is never fetched: it stays a param typed by the ref's name
        return (op.get("requestBody"), False) if name else (None, False)
    content = _dict_at(body, "content")
    media = next((content[m] for m in BODY_TYPES if isinstance(content.get(m), dict)), None)
    if media is None:
        media = next((v for v in content.values() if isinstance(v, dict)), None)
    if media is None:
        return None, False
    return media.get("schema"), bool(body.get("required"))


def _body_params(r: Resolver, schema: Any, required_body: bool, swagger_name: str = "body") -> list[dict]:
    node, name = r.resolve(schema)
    if not isinstance(node, dict):
        return [{"name": swagger_name, "in": "body", "type": name or "any", "required": required_body,
                 "description": "", "_schema": schema}] if (name or schema) else []
    props = merged_properties(r, node, frozenset())
    if not props:
        return [{"name": swagger_name, "in": "body", "type": type_name(r, schema), "required": required_body,
                 "description": _first_line(node.get("description"), 300), "_schema": schema}]
    required = required_of(r, node)
    out = []
    for k, v in props.items():
        sub, _ = r.resolve(v)
        desc = sub.get("description") if isinstance(sub, dict) else ""
        out.append({"name": str(k), "in": "body", "type": type_name(r, v), "required": k in required,
                    "description": _first_line(desc, 300), "_schema": v})
    return out


def _response_shape(r: Resolver, op: dict, swagger: bool) -> Any:
    responses = _dict_at(op, "responses")
    success = sorted(((str(c), v) for c, v in responses.items() if str(c).startswith("2")),
                     key=lambda cv: cv[0].upper().replace("X", "9"))
    for _code, raw in success:
        resp, name = r.resolve(raw)
        if not isinstance(resp, dict):
            if name:        # a response behind a remote $ref: its name is the shape
                return name
            continue
        if swagger:
            if resp.get("schema") is not None:
                return shape(r, resp["schema"])
            continue
        content = _dict_at(resp, "content")
        media = content.get("application/json")
        if not isinstance(media, dict):
            media = next((v for k, v in content.items() if "json" in str(k) and isinstance(v, dict)), None)
        if not isinstance(media, dict):
            media = next((v for v in content.values() if isinstance(v, dict)), None)
        if isinstance(media, dict) and media.get("schema") is not None:
            return shape(r, media["schema"])
    return None


def _fallback_name(method: str, path: str) -> str:
    segments = [s.strip("{}") for s in path.split("/") if s]
    return kebab("-".join([method, *segments])) or method


def _operation(r: Resolver, method: str, path: str, item: dict, op: dict, swagger: bool, where: str) -> dict:
    label = f"{where} operation {method.upper()} {path[:200]}"
    raw_counts = [len(x) for x in (item.get("parameters"), op.get("parameters")) if isinstance(x, list)]
    limits.check_param_count(sum(raw_counts), label)
    params: dict[tuple, dict] = {}
    for p in _param_list(r, item.get("parameters")) + _param_list(r, op.get("parameters")):
        params[(p["name"], p["in"])] = p
    out_params = []
    body_schema, body_required = _body_schema(r, op) if not swagger else (None, False)
    for p in params.values():
        place = p["in"]
        if swagger and place == "body":
            out_params.extend(_body_params(r, p.get("schema"), bool(p.get("required")), p["name"]))
            continue
        schema = p.get("schema") if not swagger else p
        if swagger and p.get("type") == "array":
            ptype = f"array of {type_name(r, p.get('items'))}"
        elif swagger:
            ptype = str(p.get("type") or "string")
        else:
            ptype = type_name(r, schema)
        out_params.append({"name": p["name"], "in": "body" if place == "formData" else place, "type": ptype,
                           "required": bool(p.get("required")) or place == "path",
                           "description": _first_line(p.get("description"), 300),
                           "_schema": schema, "_example": p.get("example")})
    if body_schema is not None:
        out_params.extend(_body_params(r, body_schema, body_required))
    limits.check_param_count(len(out_params), label)   # body fields included

    op_id = op.get("operationId")
    name = kebab(op_id) if isinstance(op_id, str) and kebab(op_id) else _fallback_name(method, path)
    description = _str_at(op, "description")
    summary = _first_line(_str_at(op, "summary"), 300) or _first_line(description) or f"{method.upper()} {path}"
    tags = [str(t) for t in _list_at(op, "tags") if isinstance(t, (str, int))][:10]

    example_in = "body" if method in ("post", "put", "patch") else "query"
    candidates = [p for p in out_params if p["in"] == example_in]
    chosen = [p for p in candidates if p["required"]] or candidates[:2]
    example = {p["name"]: sample(r, p.get("_schema"), p["name"], p.get("_example")) for p in chosen[:12]}
    return {
        "name": name,
        "summary": summary,
        "description": description[:8000],
        "method": method.upper(),
        "path": path if path.startswith("/") else "/" + path,
        "tags": tags,
        "params": [{k: v for k, v in p.items() if not k.startswith("_")} for p in out_params[:200]],
        "response": _response_shape(r, op, swagger),
        "example": example or None,
    }


def openapi_definition(doc: Any, where: str, service_override: str | None = None,
                       report: Report | None = None) -> dict:
    """An OpenAPI document (parsed) -> a service definition dict for catalog_import.build_record.
    report(phase, done, total), when given, hears each operation resolved."""
    if not isinstance(doc, dict):
        raise bad(where, "not an OpenAPI document (the top level must be an object).")
    version = doc.get("openapi") or doc.get("swagger")
    version = str(version) if version is not None else ""
    swagger = bool(doc.get("swagger"))
    if not (version.startswith("3.") or version.startswith("2")):
        raise bad(where, "not an OpenAPI 2.0 or 3.x document (no 'openapi: 3.x' or 'swagger: 2.0' key).")
    paths = doc.get("paths")
    if paths is None:
        paths = {}
    if not isinstance(paths, dict):
        raise bad(where, "'paths' must be an object.")
    budget = limits.SchemaBudget(where)
    r = Resolver(doc, budget)
    count = limits.count_openapi_operations(paths, r.resolve)
    limits.check_operation_count(count, where)
    base = _servers_base(doc)
    service = service_override or derive_service(doc, base)
    info = _dict_at(doc, "info")
    title = _str_at(info, "title") if _str_at(info, "title").strip() else service
    description = _str_at(info, "description")
    setup = credential_setup(doc, r, base)

    operations = []
    for path, raw_item in paths.items():
        item, _ = r.resolve(raw_item)
        if not isinstance(item, dict) or not isinstance(path, str):
            continue
        for method in HTTP_METHODS:
            op = item.get(method)
            if isinstance(op, dict):
                budget.begin(f"{method.upper()} {path}")
                operations.append(_operation(r, method, path, item, op, swagger, where))
                if report is not None:
                    report("resolve", len(operations), count)

    definition = {
        "service": service,
        "name": " ".join(title.split())[:200],
        "description": _first_line(description, 600),
        "credentialType": setup["credentialType"],
        "auth": setup.get("auth"),
        "operations": operations,
    }
    if setup.get("oauth2"):
        definition["oauth2"] = setup["oauth2"]
    if base:
        definition["baseUrl"] = base
    docs = doc.get("externalDocs")
    if isinstance(docs, dict) and _absolute(docs.get("url"), None):
        definition["docsUrl"] = docs["url"]
    return {k: v for k, v in definition.items() if v is not None}
