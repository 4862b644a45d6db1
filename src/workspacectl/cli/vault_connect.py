"""`wsctl vault connect SERVICE [--no-open] [--wait]`: start a connection and see it through.

Remote backend: POST /v1/connections, then a web sign-in link (POST /v1/auth/web-link) whose
`next` is the connect page, so the browser arrives signed in as you; the link is opened in the
browser, or printed with --no-open. --wait polls GET /v1/connections/ID (spinner on stderr)
until it is connected, failed or expired, then prints the credential id (--json: the final
connection body). Without --wait it prints the pending connection and returns.

Local backend: the same pages on a one-off loopback server (127.0.0.1, a free port) that lives
as long as the command, so the command always waits; it stops after connect, failure, expiry or
Ctrl-C. For an apiKey service it asks for the key instead, at a hidden prompt on a terminal, or
reads it from stdin when stdin is not a terminal (one line per secret field, then one per plain
field, in the order `wsctl catalog integration SERVICE` lists them); --no-open forces the link.

`--name NAME` names the new credential (default: the service's name, made unique: `stripe`,
`stripe-2`); a name that is taken or malformed is refused before anything is asked.
`--reconnect CREDENTIAL` (an id or a name) makes the connection refill that credential (same id, shares and access log;
status back to ok) instead of adding a new one: the way out of `needs_reconnect`.

The sign-in link is printed on stderr ("Open this link ..."); stdout carries only the result.
No secret is ever taken from argv.
"""
from __future__ import annotations

import sys
import threading
import time

from workspacectl.cli.context import backend, state
from workspacectl.cli.output import fields, info, print_json
from workspacectl.errors import ApiError

POLL_REMOTE_SECONDS = 1.0
POLL_LOCAL_SECONDS = 0.3


class LoopbackServer:
    """The server app (API and pages) on 127.0.0.1:<free port> in a background thread."""

    def __init__(self, ws):
        self.ws = ws
        self.url: str | None = None
        self._server = None
        self._thread = None
        self._sock = None

    def __enter__(self) -> "LoopbackServer":
        import socket

        import uvicorn

        from workspacectl.engine.dispatch import Engine
        from workspacectl.server.app import create_app

        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        app = create_app(Engine(self.ws), public_url=self.url)
        config = uvicorn.Config(app, log_level="warning", access_log=False, server_header=False, lifespan="off")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._sock]},
                                        name="wsctl-loopback", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 15
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.__exit__(None, None, None)
                raise ApiError("internal", "Could not start the loopback server for the connect page.")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(10)
        if self._sock is not None:
            self._sock.close()


# --- helpers ----------------------------------------------------------------------------------

def _path_of(url: str) -> str:
    import urllib.parse

    return urllib.parse.urlsplit(url).path


def signin_link(be, connection: dict) -> str:
    """A single-use web sign-in link that lands on the connect page, or the bare connectUrl when
    the caller cannot make one (an API key instead of a session)."""
    try:
        body = be.request("POST", "/v1/auth/web-link", body={"next": _path_of(connection["connectUrl"])})
        return body["url"]
    except ApiError as e:
        if e.code != "insufficient_scope":
            raise
        info("Note: API keys cannot sign a browser in; sign in to the server in the browser first.")
        return connection["connectUrl"]


def present_link(url: str, service: str, no_open: bool) -> None:
    if not no_open:
        import webbrowser

        try:
            opened = webbrowser.open(url)
        except Exception:  # no usable browser is not an error: the link is printed below
            opened = False
        if opened:
            info(f"Opened your browser to connect {service}. If nothing appeared, open this link:")
        else:
            info(f"Could not open a browser. Open this link to connect {service}:")
    else:
        info(f"Open this link to connect {service} (single use, valid 5 minutes):")
    info(url)


def wait_for(poll, interval: float, expires_at: str | None) -> dict:
    """Poll until the status is no longer pending; a spinner on stderr when it is a terminal."""
    from workspacectl import clock

    limit = clock.parse_iso(expires_at) if expires_at else None

    def loop() -> dict:
        while True:
            body = poll()
            if body.get("status") != "pending":
                return body
            if limit is not None and clock.now() > limit:
                return poll()
            time.sleep(interval)

    if sys.stderr.isatty():
        from rich.console import Console

        with Console(stderr=True).status("Waiting for the connection to be completed in the browser…"):
            return loop()
    return loop()


def finish(final: dict, service: str, json_out: bool) -> None:
    if json_out:
        print_json(final)
    status = final.get("status")
    if status == "connected":
        if not json_out:
            print(final.get("credentialId"))
            info(f"Connected {service}. Use it with `wsctl vault token {final.get('credentialId')} --reason ...`.")
        return
    if status == "expired":
        raise ApiError("expired", f"The connection expired before it was completed; run "
                       f"`wsctl vault connect {service}` again.")
    raise ApiError("upstream_failed", f"The connection failed: {final.get('error') or 'no reason given'}. "
                   f"Run `wsctl vault connect {service}` to try again.")


def render_pending(body: dict) -> None:
    fields([("id", body["id"]), ("service", body["service"]), ("status", body["status"]),
            ("expiresAt", body["expiresAt"])])
    info(f"Check on it with `wsctl api GET /v1/connections/{body['id']}` or run again with --wait.")


# --- reading a key locally ----------------------------------------------------------------------

def read_values(form) -> dict[str, str]:
    """The key (and plain fields) from a hidden prompt on a terminal, else from stdin lines."""
    names = list(form.secret_fields) + list(form.fields)
    if sys.stdin.isatty():
        import getpass

        values = {}
        for n in form.secret_fields:
            values[n] = getpass.getpass(f"{form.service_name} {n} (hidden): ")
        for n in form.fields:
            values[n] = input(f"{form.service_name} {n}: ")
        return values
    lines = sys.stdin.read().splitlines()
    if len(lines) < len(names) or not any(line.strip() for line in lines):
        raise ApiError("invalid_request", f"Give one line per field on stdin, in this order: {', '.join(names)} "
                       f"(or use --no-open for a link to a form).")
    return dict(zip(names, lines))


# --- the command ------------------------------------------------------------------------------

def _start_body(service: str, reconnect: str | None, name: str | None) -> dict:
    return {"service": service, **({"credentialId": reconnect} if reconnect else {}),
            **({"name": name} if name is not None else {})}


def _connect_remote(be, service: str, no_open: bool, wait: bool, json_out: bool, reconnect: str | None,
                    name: str | None) -> None:
    created = be.request("POST", "/v1/connections", body=_start_body(service, reconnect, name))
    present_link(signin_link(be, created), service, no_open)
    if not wait:
        if json_out:
            print_json(created)
        else:
            render_pending(created)
        return
    final = wait_for(lambda: be.request("GET", f"/v1/connections/{created['id']}"), POLL_REMOTE_SECONDS,
                     created.get("expiresAt"))
    finish(final, service, json_out)


def _connect_local(be, service: str, no_open: bool, json_out: bool, reconnect: str | None, name: str | None) -> None:
    from workspacectl.engine.vault import connections as engine_connections

    conn = be.ws.conn()
    form = engine_connections.service_form(conn, service)
    ctype = engine_connections.credential_type(conn, {"service": service})
    if ctype == "apiKey" and not no_open:
        if reconnect:  # refuse a wrong id before asking for the key
            from workspacectl.engine.dispatch import check_scope

            check_scope(be.caller, "vault:connect")
            engine_connections.reconnect_target(conn, reconnect, be.caller.member_id, service)
        engine_connections.check_new_name(conn, name, reconnect)  # a taken name before asking for the key
        final = engine_connections.connect_in_place(be.ws, be.caller, service, read_values(form), reconnect, name)
        finish(final, service, json_out)
        return
    with LoopbackServer(be.ws) as server:
        be.base_url = server.url
        try:
            created = be.request("POST", "/v1/connections", body=_start_body(service, reconnect, name))
            present_link(signin_link(be, created), service, no_open)
            info("Keep this command running until the page says you are connected (Ctrl-C cancels).")
            final = wait_for(lambda: be.request("GET", f"/v1/connections/{created['id']}"), POLL_LOCAL_SECONDS,
                             created.get("expiresAt"))
        finally:
            be.base_url = None
    finish(final, service, json_out)


def connect_command(ctx, service: str, no_open: bool, wait: bool, json: bool, reconnect: str | None = None,
                    name: str | None = None) -> None:
    if reconnect:
        from workspacectl.cli.refs import resolve

        reconnect = resolve(ctx, "credential", reconnect)
    be = backend(ctx)
    json_out = bool(json or state(ctx).json)
    try:
        if be.kind == "local":
            _connect_local(be, service, no_open, json_out, reconnect, name)
        else:
            _connect_remote(be, service, no_open, wait, json_out, reconnect, name)
    except KeyboardInterrupt:
        info("Cancelled. A pending connection expires by itself an hour after it was started.")
        raise SystemExit(130) from None
