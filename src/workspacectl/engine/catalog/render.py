"""Catalog rows as the API answers them: integrations, operations, trigger providers."""
from __future__ import annotations

import json
import sqlite3


def integration_summary(row: sqlite3.Row) -> dict:
    return {
        "service": row["service"],
        "name": row["name"],
        "description": row["description"],
        "credentialType": row["credential_type"],
        "envVars": json.loads(row["env_vars_json"]),
        "operationCount": row["operation_count"] if "operation_count" in row.keys() else 0,
    }


def integration_detail(row: sqlite3.Row) -> dict:
    out = integration_summary(row)
    setup = json.loads(row["setup_json"])
    out["fields"] = json.loads(row["fields_json"])
    if row["credential_type"] == "apiKey":
        out["secretFields"] = json.loads(row["secret_fields_json"])
    if row["credential_type"] == "oauth2":
        for key in ("authorizeUrl", "tokenUrl", "scopes", "revokeUrl", "pkce", "scopeSeparator",
                    "extraAuthorizeParams", "issuer"):
            if key in setup:
                out[key] = setup[key]
        out["clientAuth"] = setup.get("clientAuth") or "client_secret_post"   # stored before it existed: the default
        out["tokenBodyEncoding"] = setup.get("tokenBodyEncoding") or "form"
        out["oauthClientConfigured"] = bool(row["oauth_client_id"]) and (
            row["oauth_client_secret"] is not None or out["clientAuth"] == "none")
    for key in ("baseUrl", "docsUrl", "probe", "pagination"):
        if setup.get(key) is not None:
            out[key] = setup[key]
    out["source"] = row["source"]
    out["updatedAt"] = row["updated_at"]
    return out


def operation_summary(row: sqlite3.Row) -> dict:
    return {"opId": row["op_id"], "service": row["service"], "name": row["name"], "summary": row["summary"],
            "method": row["method"], "path": row["path"]}


def operation_detail(row: sqlite3.Row, integration_row: sqlite3.Row) -> dict:
    out = operation_summary(row)
    out.update({
        "description": row["description"],
        "tags": json.loads(row["tags"]),
        "params": json.loads(row["params_json"]),
        "response": json.loads(row["response_json"]),
        "example": json.loads(row["example_json"]),
        "credentialType": integration_row["credential_type"],
        "envVars": json.loads(integration_row["env_vars_json"]),
        "markdown": row["markdown"],
    })
    return out


def trigger_json(row: sqlite3.Row, with_config: bool = False) -> dict:
    """The seed's trigger provider fields (cadenceSeconds for poll only); config on the detail."""
    out = {
        "type": row["type"],
        "triggerId": row["id"],
        "name": row["name"],
        "description": row["description"],
        "service": row["service"] or row["id"],   # a generic provider's own id (webhook, cron)
        "requiresCredential": bool(row["requires_credential"]),
    }
    if row["type"] == "poll":
        out["cadenceSeconds"] = row["cadence_seconds"]
    if with_config:
        out["config"] = json.loads(row["config_json"])
    return out
