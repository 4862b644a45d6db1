"""The HTTP/1.1 protocol `wsctl serve` runs: uvicorn's h11 one, except that a request too
malformed to reach the app (bad framing, oversized headers, a garbled request line) is answered
with the contract's error body instead of uvicorn's plain-text 400."""
from __future__ import annotations

import json

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from workspacectl.errors import ApiError

_BODY = json.dumps(ApiError("invalid_request", "The HTTP request is malformed; check its request line, "
                                               "headers and body framing.").body()).encode()


class ContractH11Protocol(H11Protocol):
    def send_400_response(self, msg: str) -> None:
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(_BODY)).encode()),
                   (b"connection", b"close")]
        for event in (h11.Response(status_code=400, headers=headers, reason=b"Bad Request"), h11.Data(data=_BODY),
                      h11.EndOfMessage()):
            self.transport.write(self.conn.send(event))
        self.transport.close()
