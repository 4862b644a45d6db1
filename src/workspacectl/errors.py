"""The one error type of the project.

Every failure the API can answer is an ``ApiError`` carrying a contract code. The code decides
the HTTP status the server answers and the exit code the CLI exits with, so a rule broken on
either backend looks the same to the user:

    invalid_request   400  exit 7     bad body, query or argument
    unauthenticated   401  exit 3     unknown, revoked or expired secret
    insufficient_scope 403 exit 4     the key's kind or scopes do not cover the route
    forbidden         403  exit 4     visible, but the caller may not do this
    not_found         404  exit 5     absent, or invisible to the caller (existence not leaked)
    method_not_allowed 405 exit 5     the path exists, the method does not (an `Allow` header lists those it has)
    conflict          409  exit 6     a race or a uniqueness rule
    expired           410  exit 5     a link, code or upload past its lifetime
    payload_too_large 413  exit 7
    unprocessable     422  exit 7     a bundle that fails validation
    upstream_failed   502  exit 1     a provider refused (e.g. an OAuth refresh)
    unreachable       503  exit 8     the server could not be reached (client side); or the workspace's
                                      store could not be reached or refused for want of resources
    internal          500  exit 1     a bug; never produced on purpose
"""
from __future__ import annotations

import re
from typing import Any

HTTP_STATUS = {
    "invalid_request": 400,
    "unauthenticated": 401,
    "insufficient_scope": 403,
    "forbidden": 403,
    "not_found": 404,
    "method_not_allowed": 405,
    "conflict": 409,
    "expired": 410,
    "payload_too_large": 413,
    "unprocessable": 422,
    "upstream_failed": 502,
    "unreachable": 503,
    "internal": 500,
}

EXIT_CODES = {
    "invalid_request": 7,
    "unauthenticated": 3,
    "insufficient_scope": 4,
    "forbidden": 4,
    "not_found": 5,
    "method_not_allowed": 5,
    "conflict": 6,
    "expired": 5,
    "payload_too_large": 7,
    "unprocessable": 7,
    "upstream_failed": 1,
    "unreachable": 8,
    "internal": 1,
}

RETRY_AFTER_SECONDS = 2   # what a 503 answers in Retry-After

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def one_line(text: str) -> str:
    """A message as one line: control characters (a newline quoted from an argument, say) are
    shown escaped, so an error is always one line on stderr and in an error body."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], str(text))


class ApiError(Exception):
    """An API failure with a contract code, a one-line message and optional detail; `headers`
    are sent with the error answer (the `Allow` of a 405; `Retry-After` of every 503)."""

    def __init__(self, code: str, message: str, detail: Any = None, status: int | None = None,
                 headers: dict | None = None) -> None:
        if code not in HTTP_STATUS:
            code = "internal"
        message = one_line(message)
        super().__init__(message)
        self.code = code
        self.message = message
        self.detail = detail
        self.status = status or HTTP_STATUS[code]
        self.headers = dict(headers or {})
        if self.status == 503:   # the store unreachable or out of resources: worth retrying in a moment
            self.headers.setdefault("Retry-After", str(RETRY_AFTER_SECONDS))

    @property
    def exit_code(self) -> int:
        return EXIT_CODES.get(self.code, 1)

    def body(self) -> dict:
        err = {"status": self.status, "code": self.code, "message": self.message}
        if self.detail is not None:
            err["detail"] = self.detail
        return {"error": err}

    @classmethod
    def from_body(cls, status: int, body: Any) -> ApiError:
        """Rebuild the error a server answered (remote backend)."""
        err = body.get("error") if isinstance(body, dict) else None
        if isinstance(err, dict) and isinstance(err.get("code"), str):
            return cls(err["code"], str(err.get("message") or err["code"]), err.get("detail"), status=status)
        code = next((c for c, s in HTTP_STATUS.items() if s == status), "internal")
        return cls(code, f"The server answered HTTP {status}.", status=status)

    def __repr__(self) -> str:
        return f"ApiError({self.code!r}, {self.message!r})"

    def with_hint(self) -> str:
        """The message as `wsctl` prints it after `error: ` (and `wsctl mcp` answers it): the hint a
        403 insufficient_scope carries in its detail (the scope it lacks and how to get it), else
        the fixed hint of HINTS, else the message alone."""
        hint = self.detail.get("hint") if isinstance(self.detail, dict) and self.code == "insufficient_scope" else None
        if isinstance(hint, str) and hint.strip():
            return f"{self.message}: {hint.strip()}"
        return self.message + HINTS.get((self.code, self.message), "")


# Messages the contract fixes word for word over HTTP; where they are shown to a person or an agent
# (the CLI's error line, `wsctl mcp`'s tool errors) they also say what to do.
HINTS = {
    ("insufficient_scope", "Insufficient scope"):
        ": this key's kind or scopes do not cover this command. Use a key that holds the scope it needs"
        " (`wsctl keys create`), or a session (`wsctl auth login`).",
}
