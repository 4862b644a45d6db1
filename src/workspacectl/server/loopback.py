"""The server app (API and pages) on 127.0.0.1:<free port> in a background thread, for as long as
one command runs: the local backend's connect pages (LocalBackend.loopback_pages)."""
from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

from workspacectl.errors import ApiError

if TYPE_CHECKING:
    import socket

    import uvicorn

    from workspacectl.engine.doors import Engine


class LoopbackServer:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.url: str | None = None
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._sock: socket.socket | None = None

    def __enter__(self) -> LoopbackServer:
        import socket

        import uvicorn

        from workspacectl.server.app import create_app

        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        app = create_app(self.engine, public_url=self.url)
        config = uvicorn.Config(app, log_level="warning", access_log=False, server_header=False, lifespan="off")
        server = self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=server.run, kwargs={"sockets": [self._sock]},
                                        name="wsctl-loopback", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 15
        while not server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.__exit__(None, None, None)
                raise ApiError("internal", "Could not start the loopback server for the connect page.")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(10)
        if self._sock is not None:
            self._sock.close()
