"""Remote backend: the same API over HTTP with httpx (imported only here).

What a server answers is checked before it is believed: an error status without the contract's
error body, or a success that is not JSON, is not a workspace server (a web page, a proxy's
error, another API). That is one line naming the URL, the status and the content type that
answered, exit 8 like a server that cannot be reached (CONTRACT §10).

Retries (bounded, with backoff): a request whose connection never opened is sent again whatever
its method (nothing reached the server). GET and HEAD are also sent again after a connection that
broke mid-way and after a gateway's 502/503/504 (not our own JSON errors, such as
upstream_failed). A POST, PUT or DELETE that may have landed is never repeated, and neither is a
streamed upload (its body cannot be read twice). The waits between tries grow from
WSCTL_RETRY_BACKOFF_MS (the first wait; 0 tries again at once, the same number of times).

Bounded waits (backend/timeouts.py): the whole command, from its first call to the server, ends
within `--timeout` / WSCTL_TIMEOUT seconds (60 by default), its calls, their retries and their
waits included: no try starts, and no wait is slept, past that deadline, and each try's connect
and read timeouts are what is left of it. A transfer (upload, download, an answer streamed as
progress lines) has no deadline: each read and write must move bytes within the limit, so a
stalled one stops and a slow one does not, and the time it takes is not counted against the
command's. A command that waits by design (a child process, a browser, an event stream, an
agent, the proxy) calls long_running(): then each call has the limit and the command none. A
transport failure is one line, exit 8, saying which (never connected, timed out, broke mid-way).
"""
from __future__ import annotations

import contextlib
import json
import os
import random
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, BinaryIO

import httpx

from workspacectl import __version__
from workspacectl.backend import http_trace, timeouts
from workspacectl.backend.base import note_call
from workspacectl.errors import ApiError
from workspacectl.formats import transfer_size

if TYPE_CHECKING:
    from workspacectl.backend.base import Progress, ProxyAnswer

ATTEMPTS = 4                       # one try and at most three more
BACKOFF = (0.25, 0.75, 1.5)        # seconds before each further try (plus up to 25% jitter)
MAX_RETRY_AFTER = 5.0              # a gateway's Retry-After is honoured up to this
BACKOFF_ENV = "WSCTL_RETRY_BACKOFF_MS"   # the first wait in ms; the other waits and that cap scale with it
MAX_BACKOFF_MS = 60_000
GATEWAY = frozenset({502, 503, 504})
SAFE = frozenset({"GET", "HEAD"})


def strip_api_suffix(url: str) -> str:
    """'https://h/v1/' and 'https://h/v1' -> 'https://h': routes are named from the base URL."""
    url = url.rstrip("/")
    return url[:-3].rstrip("/") if url.endswith("/v1") else url


def _content_type(resp: httpx.Response) -> str:
    return resp.headers.get("content-type", "").split(";")[0].strip().lower()


def _is_our_error(resp: httpx.Response, body: Any) -> bool:
    err = body.get("error") if isinstance(body, dict) else None
    return isinstance(err, dict) and isinstance(err.get("code"), str) and "json" in _content_type(resp)


def not_a_workspace_server(resp: httpx.Response) -> ApiError:
    req = resp.request
    kind = _content_type(resp) or "no content type"
    return ApiError("unreachable", f"{http_trace.redact_url(str(req.url))} is not a workspace server: {req.method} "
                    f"answered HTTP {resp.status_code} ({kind}). Check --server / WSCTL_SERVER: it is the "
                    "server's base URL, e.g. https://wsctl.example.com.")


def backoff_scale() -> float:
    """WSCTL_RETRY_BACKOFF_MS over the default first wait (250 ms): 1.0 when unset; 0 tries again at
    once. A bad value is refused (invalid input, exit 7), never guessed at."""
    raw = os.environ.get(BACKOFF_ENV, "").strip()
    if not raw:
        return 1.0
    if not (raw.isascii() and raw.isdigit() and int(raw) <= MAX_BACKOFF_MS):
        raise ApiError("invalid_request", f"{BACKOFF_ENV} must be a whole number of milliseconds from 0 to "
                       f"{MAX_BACKOFF_MS} (default {BACKOFF[0] * 1000:.0f}); fix or unset it.")
    return int(raw) / (BACKOFF[0] * 1000)


def _delay(attempt: int, resp: httpx.Response | None, scale: float = 1.0) -> float:
    """Seconds to wait before try number attempt + 2: BACKOFF with jitter, or a gateway's
    Retry-After when longer, up to MAX_RETRY_AFTER; the backoff and that cap scaled by `scale`."""
    wait = BACKOFF[min(attempt, len(BACKOFF) - 1)] * (1 + random.random() / 4) * scale
    if resp is not None:
        try:
            wait = max(wait, min(float(resp.headers.get("retry-after", "")), MAX_RETRY_AFTER * scale))
        except ValueError:
            pass
    return wait


class _Sending:
    """A request body sent in pieces, each reported as progress("upload", sent, size), then
    progress("server"). Iterable again (not a generator), so a request whose connection never
    opened can be sent again."""

    STEP = 64 * 1024

    def __init__(self, raw: bytes, progress: Progress) -> None:
        self.raw, self.progress = raw, progress

    def __iter__(self) -> Iterator[bytes]:
        size = len(self.raw)
        self.progress("upload", 0, size)
        for start in range(0, size, self.STEP):
            yield self.raw[start:start + self.STEP]
            self.progress("upload", min(start + self.STEP, size), size)
        self.progress("server", None, None)


def _line(resp: httpx.Response, text: str) -> dict | None:
    """One progress line as an object (None for a blank one); anything else is not our server."""
    if not text.strip():
        return None
    try:
        item = json.loads(text)
    except ValueError:
        item = None
    if not isinstance(item, dict):
        raise not_a_workspace_server(resp)
    return item


class RemoteBackend:
    kind = "remote"

    def __init__(self, url: str, secret: str | None, timeout: float | None = None, unauthenticated_hint: str | None = None,
                 attempts: int = ATTEMPTS):
        self.location = strip_api_suffix(url)
        self.timeout = timeouts.seconds() if timeout is None else timeout   # per call; per stall in a transfer
        self.attempts = max(1, attempts)   # 1: no retries (shell completion must answer at once)
        self.backoff = backoff_scale()
        self.ends: float | None = None      # the command's deadline, set by its first call
        self.whole_command = True           # False: long_running(), each call bounded on its own
        self.unauthenticated_hint = unauthenticated_hint   # why no token was sent, said on a 401
        headers = {"User-Agent": f"wsctl/{__version__}"}
        if secret:
            headers["Authorization"] = f"Bearer {secret}"
        self.http = httpx.Client(base_url=self.location, headers=headers, timeout=self._limits(self.timeout))

    @staticmethod
    def _limits(seconds: float) -> httpx.Timeout:
        return httpx.Timeout(seconds, connect=timeouts.connect_seconds(seconds))

    def in_process_connect(self) -> None:
        """The server connects credentials (its connect pages); nothing is read in this process."""
        return None

    def long_running(self) -> None:
        """This command waits by design (vault run, connect --wait, events --follow, mcp, the
        proxy): each call keeps its limit, the command has no deadline of its own."""
        self.whole_command = False

    def _deadline(self, now: float) -> tuple[float, bool]:
        """This call's deadline, and whether the command's (not the call's own limit) set it."""
        own = now + self.timeout
        if not self.whole_command:
            return own, False
        if self.ends is None:
            self.ends = own
        return min(own, self.ends), self.ends < own

    @contextlib.contextmanager
    def _off_the_clock(self) -> Iterator[None]:
        """A transfer is bounded by its progress: the time it takes moves the command's deadline on."""
        started = time.monotonic()
        try:
            yield
        finally:
            if self.ends is not None:
                self.ends += time.monotonic() - started

    def failed(self, exc: Exception, method: str, path: str, transfer: bool = False,
               whole_command: bool = False) -> ApiError:
        """The one line for a transport failure of this call (backend/timeouts.py)."""
        return timeouts.transport_error(exc, f"the server at {self.location}", f"{method} {path.split('?', maxsplit=1)[0]}", self.timeout, transfer,
                                        may_have_landed=method not in SAFE, whole_command=whole_command)

    def _send(self, method: str, path: str, replayable: bool = True, stream: bool = False, transfer: bool = False,
              **kw: Any) -> httpx.Response:
        """One request, tried again as the module docstring says, within the call's deadline (a
        transfer: each read and write within the limit). stream: the answer's body is left unread
        (the caller reads and closes it)."""
        method = method.upper()
        deadline, cut = self._deadline(time.monotonic())
        if not transfer and deadline <= time.monotonic():
            raise timeouts.out_of_time(f"the server at {self.location}", f"{method} {path.split('?', maxsplit=1)[0]}", self.timeout)
        for attempt in range(self.attempts):
            last = attempt == self.attempts - 1
            started = time.monotonic()
            left = deadline - started
            request = self.http.build_request(method, path, timeout=self._limits(self.timeout if transfer else max(left, 0.001)),
                                              **kw)
            try:
                resp = self.http.send(request, stream=stream)
            except httpx.TransportError as e:
                never_opened = isinstance(e, (httpx.ConnectError, httpx.ConnectTimeout))
                again = replayable and not last and (never_opened or method in SAFE)
                wait = _delay(attempt, None, self.backoff) if again else 0
                again = again and time.monotonic() + wait < deadline   # no try starts past the deadline
                http_trace.trace(method, str(request.url), type(e).__name__, time.monotonic() - started,
                                 f"; trying again in {wait:.2f} s" if again else "")
                if not again:
                    raise self.failed(e, method, path, transfer, cut and not transfer) from None
                time.sleep(wait)
                continue
            again = (replayable and not last and method in SAFE and resp.status_code in GATEWAY
                     and not self._ours(resp))
            wait = _delay(attempt, resp, self.backoff) if again else 0
            again = again and time.monotonic() + wait < deadline
            http_trace.trace(method, str(request.url), f"{resp.status_code} {_content_type(resp) or '-'}",
                             time.monotonic() - started, f"; trying again in {wait:.2f} s" if again else "")
            if not again:
                return resp
            resp.close()
            time.sleep(wait)
        raise AssertionError("unreachable: the last attempt returns or raises")

    @staticmethod
    def _ours(resp: httpx.Response) -> bool:
        """A gateway status carrying our own error body (upstream_failed) is an answer, not a hiccup."""
        if "json" not in _content_type(resp):
            return False
        try:
            resp.read()
            return _is_our_error(resp, resp.json())
        except (ValueError, httpx.HTTPError):
            return False

    def _answer(self, resp: httpx.Response) -> Any:
        if resp.status_code >= 400:
            try:
                body = resp.json()
            except ValueError:
                body = None
            if not _is_our_error(resp, body):
                raise not_a_workspace_server(resp)
            err = ApiError.from_body(resp.status_code, body)
            if err.code == "unauthenticated" and self.unauthenticated_hint:
                raise ApiError("unauthenticated", self.unauthenticated_hint, status=resp.status_code)
            raise err
        if resp.status_code == 204 or not resp.content:
            return None
        if "json" in _content_type(resp):
            try:
                body = resp.json()
            except ValueError:
                raise not_a_workspace_server(resp) from None
            if isinstance(body, dict):
                return body
        raise not_a_workspace_server(resp)

    def request(self, method: str, path: str, query: dict | None = None, body: Any = None,
                progress: Progress | None = None) -> Any:
        """progress(phase, done, total) hears the body go ("upload", bytes sent, size), then "server",
        then the phases the server reports (see with_progress)."""
        note_call(method)
        if progress is not None:
            with self._off_the_clock():
                return self.with_progress(method, path, query, body, progress)
        kw: dict = {"params": query or None}
        if isinstance(body, (bytes, bytearray)):
            kw["content"] = bytes(body)
            kw["headers"] = {"Content-Type": "application/octet-stream"}
        elif body is not None:
            kw["json"] = body
        return self._answer(self._send(method, path, **kw))

    def with_progress(self, method: str, path: str, query: dict | None, body: Any, progress: Progress) -> Any:
        """One request whose answer comes as progress lines (Accept: application/x-ndjson,
        server/progress_stream.py, docs/api.md §1 "Progress"): each line's phase goes to progress,
        the last line's status and body are the answer. A server that answers plain JSON (the
        work reported no phase, or an error came first) is read as usual."""
        raw = bytes(body) if isinstance(body, (bytes, bytearray)) else json.dumps(body).encode() if body is not None else b""
        headers = {"Content-Type": "application/octet-stream" if isinstance(body, (bytes, bytearray)) else "application/json",
                   "Content-Length": str(len(raw)), "Accept": "application/x-ndjson"}
        resp = self._send(method, path, stream=True, transfer=True, params=query or None,
                          content=_Sending(raw, progress), headers=headers)
        try:
            if "ndjson" not in _content_type(resp) or resp.status_code != 200:
                resp.read()
                return self._answer(resp)
            last = None
            for text in resp.iter_lines():
                item = _line(resp, text)
                if item is None:
                    continue
                if isinstance(item.get("progress"), dict):
                    step = item["progress"]
                    progress(str(step.get("phase")), step.get("done"), step.get("total"))
                elif isinstance(item.get("status"), int):
                    last = item
        except httpx.TransportError as e:
            raise self.failed(e, method, path, transfer=True) from None
        finally:
            resp.close()
        if last is None:
            raise ApiError("unreachable", f"The answer from {self.location} ended before its result; the request may "
                           "or may not have taken effect. Check, then run it again.")
        if last["status"] >= 400:
            raise ApiError.from_body(last["status"], last.get("body"))
        return last.get("body")

    def exchange(self, method: str, path: str, query: dict | None = None, body: Any = None,
                 headers: dict | None = None) -> tuple[int, list[tuple[str, str]], Any]:
        """One call as `wsctl api` shows it: (status, response headers, body), never raising on an
        HTTP error status (the error body is the body)."""
        note_call(method)
        kw: dict = {"params": query or None, "headers": dict(headers or {})}
        if body is not None:
            kw["json"] = body
        resp = self._send(method, path, **kw)
        if not resp.content:
            answer = None
        elif "json" in resp.headers.get("content-type", ""):
            try:
                answer = resp.json()
            except ValueError:
                answer = resp.content
        else:
            answer = resp.content
        return resp.status_code, list(resp.headers.items()), answer

    def proxy(self, method: str, path: str, query: list[tuple[str, str]], headers: dict[str, str],
              body: BinaryIO | None, length: int | None) -> ProxyAnswer:
        """The call streamed to the server and its answer streamed back; a service's answer is
        marked by the proxy's X-Wsctl-Upstream-Status header, anything else is ours (an error)."""
        from workspacectl.backend.base import ProxyAnswer

        sent = {k: v.encode("utf-8") for k, v in headers.items()}
        kw: dict = {"params": query or None, "headers": sent}
        if body is not None:
            if length is not None:
                sent["Content-Length"] = str(length).encode()

            source = body   # not None here, and so in chunks()

            def chunks() -> Iterator[bytes]:
                while chunk := source.read(1 << 16):
                    yield chunk

            kw["content"] = chunks()
        resp = self._send(method, path, replayable=False, stream=True, **kw)
        if "x-wsctl-upstream-status" not in resp.headers:
            try:
                resp.read()
            finally:
                resp.close()
            if resp.status_code < 400:
                raise not_a_workspace_server(resp)
            self._answer(resp)

        def relayed() -> Iterator[bytes]:
            try:
                yield from resp.iter_bytes()
            except httpx.HTTPError as e:
                raise ApiError("upstream_failed", f"The answer broke off ({type(e).__name__}); try again.") from None
            finally:
                resp.close()

        return ProxyAnswer(resp.status_code, list(resp.headers.multi_items()), relayed(), resp.close)

    def download(self, path: str, out: BinaryIO, progress: Callable[[int], None] | None = None,
                 total: Callable[[int | None], None] | None = None) -> int:
        """Stream a binary route into out. total(size), when given, is told the size the answer
        announces before the first byte (formats/transfer_size.py: its Content-Length, else the
        inflated length of a tar.gz made on the fly, which progress then counts; None: unknown)."""
        with self._off_the_clock():
            return self._download(path, out, progress, total)

    def _download(self, path: str, out: BinaryIO, progress: Callable[[int], None] | None,
                  total: Callable[[int | None], None] | None) -> int:
        written = 0
        resp = self._send("GET", path, stream=True, transfer=True)
        try:
            if resp.status_code >= 400:
                resp.read()
                self._answer(resp)
            advance = transfer_size.counter(resp.headers.get, progress, total)
            for chunk in resp.iter_bytes():
                out.write(chunk)
                written += len(chunk)
                advance(chunk)
        except httpx.TransportError as e:
            raise self.failed(e, "GET", path, transfer=True) from None
        finally:
            resp.close()
        return written

    def upload(self, method: str, path: str, data: BinaryIO, size: int | None, content_type: str,
               progress: Callable[[int], None] | None = None) -> Any:
        note_call(method)
        def chunks() -> Iterator[bytes]:
            while chunk := data.read(1 << 20):
                if progress:
                    progress(len(chunk))
                yield chunk

        headers = {"Content-Type": content_type}
        if size is not None:  # None: a stream made on the fly (a packed folder), sent chunked
            headers["Content-Length"] = str(size)
        with self._off_the_clock():
            return self._answer(self._send(method, path, replayable=False, transfer=True, content=chunks(), headers=headers))
