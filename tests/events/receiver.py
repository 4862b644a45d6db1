"""A webhook subscriber on 127.0.0.1 for the tests: it checks every call's signature with the
`standardwebhooks` reference library and records what came, by state (no timers decide anything).

    with Receiver() as r:          r.url; r.secret = <the whsec_ of the subscription>
    r.fail_first = 2               the first two calls answer 500
    r.block_first = True           the first call is held (r.holding is set) until r.release is set,
                                   then answered 500
    r.calls                        [(webhook-id, payload dict, verified: bool, answered status)]
"""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Receiver:
    def __init__(self):
        self.secret: str | None = None
        self.fail_first = 0
        self.block_first = False
        self.calls: list[tuple[str, dict, bool, int]] = []
        self.bodies: list[bytes] = []
        self.holding = threading.Event()
        self.release = threading.Event()
        self.arrived = threading.Condition()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/hooks"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self) -> None:
        self.release.set()
        self._server.shutdown()
        self._server.server_close()

    def verified(self, body: bytes, headers: dict) -> bool:
        from standardwebhooks.webhooks import Webhook, WebhookVerificationError

        try:
            Webhook(self.secret or "").verify(body, headers)
        except (WebhookVerificationError, ValueError):
            return False
        return True

    def wait_for(self, condition, timeout: float = 60.0) -> None:
        """Until condition(self.calls) holds (a bound for a hung run, never the thing tested)."""
        with self.arrived:
            if not self.arrived.wait_for(lambda: condition(self.calls), timeout):
                raise AssertionError(f"the receiver never saw what was awaited; calls: {self.calls}")

    def acked(self) -> list[tuple[str, dict]]:
        return [(i, p) for i, p, _, status in self.calls if 200 <= status < 300]

    def _handler(self):
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                headers = {k.lower(): v for k, v in self.headers.items()}
                ok = receiver.verified(body, headers)
                with receiver.arrived:
                    first = not receiver.bodies
                    receiver.bodies.append(body)
                    n = len(receiver.bodies)
                if first and receiver.block_first:
                    receiver.holding.set()
                    receiver.release.wait(120)
                held = first and receiver.block_first   # its sender is gone by now in the drill: never acked
                status = 500 if n <= receiver.fail_first or held else (204 if ok else 401)
                with receiver.arrived:   # recorded before the answer: the sender may look right after it
                    receiver.calls.append((headers.get("webhook-id", ""), json.loads(body or b"{}"), ok, status))
                    receiver.arrived.notify_all()
                try:
                    self.send_response(status)
                    self.send_header("content-length", "0")
                    self.end_headers()
                except OSError:
                    pass   # the sender went away (killed): a held call is answered 500 anyway

        return Handler
