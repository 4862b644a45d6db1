"""A real HTTP service on loopback for the credential proxy's tests (no mocks: the proxy talks HTTP
to it through the engine's own client).

    with Upstream() as up:
        up.url                        # http://127.0.0.1:PORT; the services' baseUrl is up.url + "/api"
        up.accept = lambda req: ...   # which requests carry the right credential (else 401)
        up.script.append((429, {"Retry-After": "0"}))   # the next answers, before the usual ones
        up.requests                   # every request: Seen(method, path, query, headers, body_length, chunks)

Paths under /api:
- /api/echo...: 200 {"ok", "method", "path", "query", "length", "sha256"} with headers the proxy must
  strip (Set-Cookie, WWW-Authenticate, Keep-Alive, X-Wsctl-Upstream-Status, X-Echo-Auth when it
  echoes the credential's Authorization or X-Api-Key) and one it must keep.
- /api/big?size=N: N bytes, sent chunked in 64 KiB pieces; with `gate` set, the first half is sent,
  then the rest only once the test sets the gate (an answer held whole by the proxy never arrives).
- /api/upload: reads the body as it comes; `received` is set once `gate_at` bytes have arrived.
- /api/redirect?to=URL&code=N: a redirect.
- /api/pages?page=N and /api/cursor?cursor=C: pages (Link headers; a cursor in the JSON body).
"""
from __future__ import annotations

import hashlib
import json
import threading
import urllib.parse
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Seen:
    method: str
    path: str
    query: str
    headers: dict
    body_length: int = 0
    chunks: int = 0
    extra: dict = field(default_factory=dict)


class Upstream:
    def __init__(self):
        self.accept = lambda req: True
        self.script: list[tuple[int, dict]] = []
        self.requests: list[Seen] = []
        self.gate = None               # threading.Event: /api/big waits for it after half the body
        self.gate_at = 0               # /api/upload sets `received` once this many bytes came
        self.received = threading.Event()
        self.lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        # a short poll: close() (shutdown) waits for the loop to look, 0.5 s by default
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _handler(self):
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True   # as a real server: headers and body are two writes

            def log_message(self, *args):
                pass

            def _body_chunks(self):
                """The request body as it arrives (Content-Length or chunked)."""
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    while True:
                        size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                        if size == 0:
                            self.rfile.readline()
                            return
                        data = self.rfile.read(size)
                        self.rfile.readline()
                        yield data
                left = int(self.headers.get("Content-Length") or 0)
                while left > 0:
                    data = self.rfile.read1(min(left, 65536))
                    if not data:
                        return
                    left -= len(data)
                    yield data

            def _send(self, status: int, body=None, headers: dict | None = None):
                data = json.dumps(body).encode() if body is not None else b""
                self.send_response(status)
                if body is not None:
                    self.send_header("Content-Type", "application/json")
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _any(self):
                u = urllib.parse.urlsplit(self.path)
                seen = Seen(self.command, u.path, u.query, {k.lower(): v for k, v in self.headers.items()})
                digest = hashlib.sha256()
                for chunk in self._body_chunks():
                    seen.body_length += len(chunk)
                    seen.chunks += 1
                    digest.update(chunk)
                    if outer.gate_at and seen.body_length >= outer.gate_at:
                        outer.received.set()
                with outer.lock:
                    outer.requests.append(seen)
                    scripted = outer.script.pop(0) if outer.script else None
                if scripted is not None:
                    return self._send(scripted[0], {"scripted": scripted[0]}, scripted[1])
                if not outer.accept(seen):
                    return self._send(401, {"error": "bad credential"}, {"WWW-Authenticate": 'Bearer realm="up"'})
                q = dict(urllib.parse.parse_qsl(u.query))
                if u.path.startswith("/api/echo"):
                    echoed = self.headers.get("Authorization") or self.headers.get("X-Api-Key") or "-"
                    return self._send(200, {"ok": True, "method": self.command, "path": u.path, "query": u.query,
                                            "length": seen.body_length, "sha256": digest.hexdigest()},
                                      {"Set-Cookie": "sid=upstream-session", "X-Kept": "yes", "X-Echo-Auth": echoed,
                                       "Keep-Alive": "timeout=5", "X-Wsctl-Upstream-Status": "999",
                                       "WWW-Authenticate": "Basic", "Link": f'<{outer.url}/api/echo?page=2>; rel="next"'})
                if u.path == "/api/big":
                    return self._big(int(q.get("size", "0")))
                if u.path == "/api/redirect":
                    return self._send(int(q.get("code", "302")), None, {"Location": q["to"]})
                if u.path == "/api/pages":
                    page = int(q.get("page", "1"))
                    link = {"Link": f'<{outer.url}/api/pages?page={page + 1}>; rel="next"'} if page < 3 else {}
                    return self._send(200, [{"page": page}], link)
                if u.path == "/api/cursor":
                    cursor = q.get("cursor", "")
                    nxt = {"": "c2", "c2": "c3"}.get(cursor, "")
                    return self._send(200, {"items": [cursor or "c1"], "meta": {"next": nxt}})
                return self._send(404, {"error": "no such path", "path": u.path})

            def _big(self, size: int):
                self.send_response(200)
                self.send_header("Content-Type", "application/octet-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                sent, piece = 0, b"x" * 65536
                while sent < size:
                    if outer.gate is not None and sent >= size // 2:
                        if not outer.gate.wait(30):
                            break
                        outer.gate = None
                    n = min(len(piece), size - sent)
                    self.wfile.write(b"%x\r\n" % n + piece[:n] + b"\r\n")
                    self.wfile.flush()
                    sent += n
                self.wfile.write(b"0\r\n\r\n")

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _any

        return Handler
