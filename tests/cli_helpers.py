"""Small helpers shared by the CLI test files (tests/test_cli_*.py)."""
from __future__ import annotations

import json
import threading
import tomllib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


def one_error_line(r) -> str:
    """The CLI's error contract: exactly one line on stderr, `error: ...`, no traceback."""
    lines = r.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), f"not one error line:\n{r.err}"
    assert "Traceback" not in r.err
    return lines[0]


def read_toml(path: Path) -> dict:
    with Path(path).open("rb") as f:
        return tomllib.load(f)


class CaptureServer:
    """A stand-in server on loopback that records the Authorization headers it is sent
    and answers every request 401, as a real server answers an unknown secret."""

    def __init__(self):
        seen: list = []

        class Handler(BaseHTTPRequestHandler):
            def _answer(self):
                seen.append(self.headers.get("Authorization"))
                body = json.dumps({"error": {"status": 401, "code": "unauthenticated",
                                             "message": "Authentication required."}}).encode()
                self.send_response(401)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _answer

            def log_message(self, *args):
                pass

        self.seen = seen
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> CaptureServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
