"""Small helpers for API-level tests: the contract's error body, dummy paths from the scope table."""
from __future__ import annotations

import re

from workspacectl.engine.scopes import PERSONAL_SCOPES, PLATFORM_SCOPES

ERROR_KEYS = {"status", "code", "message", "detail"}
ISO_Z = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
MEMBER_KEYS = {"id", "name", "email", "role", "createdAt"}


def assert_error(r, status: int, code: str, message: str | None = None) -> None:
    """r (an ApiResult or an httpx.Response) answers the contract's error body with this status."""
    status_got = getattr(r, "status", None) or r.status_code
    body = r.body if hasattr(r, "body") else r.json()
    assert status_got == status, f"expected {status} {code}, got {status_got} {body}"
    assert_error_body(body, status)
    assert body["error"]["code"] == code, body
    if message is not None:
        assert body["error"]["message"] == message, body


def assert_error_body(body, status: int) -> None:
    assert isinstance(body, dict) and set(body) == {"error"}, body
    err = body["error"]
    assert set(err) <= ERROR_KEYS and {"status", "code", "message"} <= set(err), err
    assert err["status"] == status, err
    assert isinstance(err["code"], str) and isinstance(err["message"], str) and err["message"].strip(), err
    assert "\n" not in err["message"] and "Traceback" not in err["message"], err


def fill(path: str, value: str = "zz-missing-1") -> str:
    """A ROUTE_SCOPES path with every {param} replaced by an id that does not exist."""
    return re.sub(r"\{\w+\}", value, path)


def kind_of_scope(scope: str) -> str | None:
    if scope in PLATFORM_SCOPES:
        return "platform"
    if scope in PERSONAL_SCOPES:
        return "personal"
    return None
