"""What events and webhooks cost (issue 30), in-process on a fresh SQLite workspace.

1. A write's transaction with and without its event: N transactions each setting one settings
   row, then N also recording an event, with 0 and with 5 subscriptions (each event then gets 5
   delivery rows). Median and p95 microseconds per transaction.
2. Reading the feed with E events stored: GET /v1/events (limit 100: the first page, a page from
   a cursor in the middle, newest first, one type) through the engine, median ms.
3. Sending: D deliveries to one loopback subscriber answering 204, claimed and sent by
   delivery.deliver_due as `wsctl serve`'s sender does; deliveries per second.

    .venv/bin/python bench/events_cost.py [--n 2000] [--events 20000] [--deliveries 300]
"""
from __future__ import annotations

import shutil
import statistics
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import int_options, keyed_home, make_workspace


def _timed_ms(call, *args) -> float:
    """How long one call took, in ms."""
    t = time.perf_counter()
    call(*args)
    return (time.perf_counter() - t) * 1000


def timed(fn, n: int) -> tuple[float, float]:
    samples = []
    for i in range(n):
        t = time.perf_counter()
        fn(i)
        samples.append((time.perf_counter() - t) * 1e6)
    samples.sort()
    return statistics.median(samples), samples[int(len(samples) * 0.95)]


class Sink(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.send_response(204)
        self.send_header("content-length", "0")
        self.end_headers()


def main() -> None:
    opts = int_options(__doc__, {"--n": 2000, "--events": 20000, "--deliveries": 300})
    tmp, _ = keyed_home("wsctl-bench-events-")
    try:
        ws_path, _, owner = make_workspace(tmp)
        from workspacectl.engine.db import transaction
        from workspacectl.engine.dispatch import Engine
        from workspacectl.engine.events import delivery
        from workspacectl.engine.events.record import record_event
        from workspacectl.engine.registry import Caller
        from workspacectl.engine.store import identity
        from workspacectl.engine.workspaces import open_workspace

        ws = open_workspace(str(ws_path))
        conn = ws.conn()
        engine = Engine(ws)
        caller = Caller(owner["id"], "owner", "session", "bench")

        def plain(i):
            with transaction(conn):
                identity.set_setting(conn, "bench", str(i))

        def with_event(i):
            with transaction(conn):
                identity.set_setting(conn, "bench", str(i))
                record_event(conn, "member.added", subject_id=f"um_{i}", actor_id=owner["id"],
                             data={"email": f"m{i}@example.com", "role": "member"})

        print(f"1. a write's transaction, {opts.n} each (µs, median / p95)")
        print("   without an event            {:8.0f} / {:8.0f}".format(*timed(plain, opts.n)))
        print("   with an event, 0 webhooks   {:8.0f} / {:8.0f}".format(*timed(with_event, opts.n)))
        server = ThreadingHTTPServer(("127.0.0.1", 0), Sink)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{server.server_address[1]}/hook"
        hooks = [engine.call(caller, "POST", "/v1/webhooks", body={"url": url, "events": ["member.*"]}).body["id"]
                 for _ in range(5)]
        print("   with an event, 5 webhooks   {:8.0f} / {:8.0f}".format(*timed(with_event, opts.n)))
        for h in hooks:
            engine.call(caller, "DELETE", f"/v1/webhooks/{h}")

        with transaction(conn):
            for i in range(max(0, opts.events - 3 * opts.n)):
                record_event(conn, "key.created" if i % 2 else "member.added", subject_id=f"x_{i}",
                             actor_id=owner["id"], data={"role": "member"})
        total = engine.call(caller, "GET", "/v1/events", {"order": "desc", "limit": "1"}).body
        middle = engine.call(caller, "GET", "/v1/events", {"limit": "500"}).body["nextCursor"]
        print(f"2. the feed with ~{opts.events} events, limit 100 (ms, median of 50)")
        for label, query in (("first page", {}), ("from a cursor", {"cursor": middle}), ("newest first", {"order": "desc"}),
                             ("one type, newest first", {"order": "desc", "type": "key.created"})):
            assert len(engine.call(caller, "GET", "/v1/events", {**query, "limit": "100"}).body["events"]) == 100
            ms = statistics.median(
                _timed_ms(engine.call, caller, "GET", "/v1/events", {**query, "limit": "100"}) for _ in range(50))
            print(f"   {label:<24} {ms:7.2f}")
        assert total["events"]

        hook = engine.call(caller, "POST", "/v1/webhooks", body={"url": url, "events": ["skill.published"]}).body
        with transaction(conn):
            for i in range(opts.deliveries):
                record_event(conn, "skill.published", subject_id=f"skl_{i}", actor_id=owner["id"],
                             data={"skill": "bench", "version": i})
        started = time.perf_counter()
        sent = 0
        while (n := delivery.deliver_due(ws, "bench-holder")):
            sent += n
        took = time.perf_counter() - started
        log = engine.call(caller, "GET", f"/v1/webhooks/{hook['id']}/deliveries", {"limit": "500"}).body["deliveries"]
        assert sent == opts.deliveries and all(d["status"] == "delivered" for d in log)
        print(f"3. {sent} deliveries to a loopback subscriber: {sent / took:.0f}/s ({took * 1000 / sent:.1f} ms each)")
        server.shutdown()
        server.server_close()
        ws.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
