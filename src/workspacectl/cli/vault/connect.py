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
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from workspacectl.cli.common.context import backend, state
from workspacectl.cli.common.output import fields, info, print_json
from workspacectl.errors import ApiError

if TYPE_CHECKING:
    import typer

    from workspacectl.backend.base import Backend, InProcessConnect

POLL_REMOTE_SECONDS = 1.0
POLL_LOCAL_SECONDS = 0.3


# --- helpers ----------------------------------------------------------------------------------

def _path_of(url: str) -> str:
    import urllib.parse

    return urllib.parse.urlsplit(url).path


def signin_link(be: Backend | InProcessConnect, connection: dict) -> str:
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


def wait_for(poll: Callable[[], dict], interval: float, expires_at: str | None) -> dict:
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


def finish(final: dict, service: str, json_out: bool, be: Backend | InProcessConnect | None = None) -> None:
    if json_out:
        print_json(final)
    status = final.get("status")
    if status == "connected":
        if not json_out:
            cred_id = final.get("credentialId")
            print(cred_id)
            name = _credential_name(be, cred_id)
            info(f"Connected {service} as {name}. Use it by name or id: `wsctl vault token {name} --reason ...`."
                 if name else f"Connected {service}. Use it with `wsctl vault token {cred_id} --reason ...`.")
        return
    if status == "expired":
        raise ApiError("expired", f"The connection expired before it was completed; run "
                       f"`wsctl vault connect {service}` again.")
    raise ApiError("upstream_failed", f"The connection failed: {final.get('error') or 'no reason given'}. "
                   f"Run `wsctl vault connect {service}` to try again.")


def _credential_name(be: Backend | InProcessConnect | None, cred_id: object) -> str | None:
    """The new credential's name, for the closing line (None when it cannot be read)."""
    if be is None or not isinstance(cred_id, str):
        return None
    from urllib.parse import quote

    try:
        return (be.request("GET", f"/v1/credentials/{quote(cred_id, safe='')}") or {}).get("name")
    except ApiError:
        return None


def render_pending(body: dict) -> None:
    fields([("id", body["id"]), ("service", body["service"]), ("status", body["status"]),
            ("expiresAt", body["expiresAt"])])
    info(f"Check on it with `wsctl api GET /v1/connections/{body['id']}` or run again with --wait.")


# --- reading a key locally ----------------------------------------------------------------------

def read_values(form: dict, service: str) -> dict[str, str]:
    """The key (and plain fields) from a hidden prompt on a terminal, else from stdin lines."""
    names = list(form["secretFields"]) + list(form["fields"])
    if sys.stdin.isatty():
        import getpass

        values = {}
        for n in form["secretFields"]:
            values[n] = getpass.getpass(f"{form['name']} {n} (hidden): ")
        for n in form["fields"]:
            values[n] = input(f"{form['name']} {n}: ")
        return values
    lines = sys.stdin.read().splitlines()
    if len(lines) < len(names) or not any(line.strip() for line in lines):
        raise ApiError("invalid_request", f"Connecting {service} needs {', '.join(names)} and no terminal is attached to "
                       f"ask: give one line per field on stdin, in this order (e.g. printf '%s\\n' \"$KEY\" | wsctl vault "
                       f"connect {service}), or use --no-open for a link to a form.")
    return dict(zip(names, lines))


# --- the command ------------------------------------------------------------------------------

def _start_body(service: str, reconnect: str | None, name: str | None) -> dict:
    return {"service": service, **({"credentialId": reconnect} if reconnect else {}),
            **({"name": name} if name is not None else {})}


def _connect_remote(be: Backend, service: str, no_open: bool, wait: bool, json_out: bool, reconnect: str | None,
                    name: str | None) -> None:
    created = be.request("POST", "/v1/connections", body=_start_body(service, reconnect, name))
    present_link(signin_link(be, created), service, no_open)
    if not wait:
        if json_out:
            print_json(created)
        else:
            render_pending(created)
        return
    be.long_running()   # the user takes as long as they take in the browser
    final = wait_for(lambda: be.request("GET", f"/v1/connections/{created['id']}"), POLL_REMOTE_SECONDS,
                     created.get("expiresAt"))
    finish(final, service, json_out, be)


def _connect_local(be: InProcessConnect, service: str, no_open: bool, json_out: bool, reconnect: str | None, name: str | None) -> None:
    form = be.connect_form(service)
    if form["credentialType"] == "apiKey" and not no_open:
        if reconnect:  # refuse a wrong id before asking for the key
            be.check_reconnect(service, reconnect)
        be.check_credential_name(name, reconnect)  # and a malformed or taken name
        final = be.connect_key(service, read_values(form, service), reconnect, name)
        finish(final, service, json_out, be)
        return
    with be.loopback_pages():
        created = be.request("POST", "/v1/connections", body=_start_body(service, reconnect, name))
        present_link(signin_link(be, created), service, no_open)
        info("Keep this command running until the page says you are connected (Ctrl-C cancels).")
        final = wait_for(lambda: be.request("GET", f"/v1/connections/{created['id']}"), POLL_LOCAL_SECONDS,
                         created.get("expiresAt"))
    finish(final, service, json_out, be)


def connect_command(ctx: typer.Context, service: str, no_open: bool, wait: bool, json: bool, reconnect: str | None = None,
                    name: str | None = None) -> None:
    if reconnect:
        from workspacectl.cli.common.refs import resolve

        reconnect = resolve(ctx, "credential", reconnect)
    be = backend(ctx)
    json_out = bool(json or state(ctx).json)
    try:
        here = be.in_process_connect()
        if here is not None:
            _connect_local(here, service, no_open, json_out, reconnect, name)
        else:
            _connect_remote(be, service, no_open, wait, json_out, reconnect, name)
    except KeyboardInterrupt:
        info("Cancelled. A pending connection expires by itself an hour after it was started.")
        raise SystemExit(130) from None
