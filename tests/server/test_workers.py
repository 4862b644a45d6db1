"""`wsctl serve --workers N`: several processes answer on one port, exactly one runs the timer,
SIGTERM stops them all (exit 0, no orphans), a dead worker is replaced, a killed parent takes
its workers with it. Real `wsctl serve` processes on loopback, a real workspace."""
from __future__ import annotations

import os
import signal
from pathlib import Path

import httpx

from tests.conftest import _owner_and_token, base_env, run_wsctl, start_server, wait_until
from workspacectl.engine.store.leases import get_lease
from workspacectl.engine.workspaces.folder import Workspace
from workspacectl.server.memory_timer import LEASE

ORG = "/v1/memory/organization"


def children(pid: int) -> set[int]:
    try:
        return {int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()}
    except FileNotFoundError:
        return set()


def two_workers(server, log, other_than: int | None = None) -> set[int]:
    def pair():
        c = children(server.proc.pid)
        return c if len(c) == 2 and other_than not in c else None

    return wait_until(pair, "two worker processes", server.proc, log)


def alive(pid: int) -> bool:
    """Running and not a zombie."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, IndexError):
        return False


def stop_leaving_no_workers(server, pids: set[int]) -> None:
    """Stop the server, then kill any of `pids` still running: a failed test leaves no worker behind."""
    server.stop()
    for pid in pids:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


def workers_seen(url: str, want: set[int]):
    """Fresh connections to /healthz until every worker number in `want` answered."""
    seen: set[int] = set()

    def poll():
        for _ in range(20):
            r = httpx.get(url + "/healthz", timeout=30, trust_env=False, headers={"Connection": "close"})
            assert r.status_code == 200 and r.json()["ok"] is True
            seen.add(r.json()["worker"])
        return seen >= want

    wait_until(poll, f"workers {sorted(want)} did not all answer (seen {sorted(seen)})")
    return seen


def lease_row(workspace: Path):
    conn = Workspace(workspace).conn()
    try:
        return get_lease(conn, LEASE)
    finally:
        conn.close()


def test_two_workers_answer_one_runs_the_timer_and_sigterm_stops_both(workspace, tmp_path):
    log = tmp_path / "serve.log"
    server = start_server(workspace, base_env(tmp_path / "srv-home"), log=log,
                          args=("--workers", 2, "--memory-interval", "0.2"))
    try:
        assert workers_seen(server.url, {1, 2}) == {1, 2}
        pids = two_workers(server, log)
        # The timer: one holder, renewing each tick, never taken over by the other worker.
        first = wait_until(lambda: (r := lease_row(workspace)) is not None and r["renewals"] >= 1 and r,
                           "a worker took the timer lease", server.proc, log)
        holder_pid = int(first["holder"].split(":")[1])
        assert holder_pid in pids
        later = wait_until(lambda: (r := lease_row(workspace))["renewals"] >= first["renewals"] + 5 and r,
                           "the timer kept running", server.proc, log)
        assert (later["holder"], later["acquired_at"]) == (first["holder"], first["acquired_at"])
        # ... and it is the one folding the memory agent's notes.
        _, token = _owner_and_token(workspace)
        auth = {"Authorization": f"Bearer {token}"}
        r = httpx.post(server.url + ORG + "/proposals", json={"text": "Workers fold once."}, headers=auth,
                       trust_env=False, timeout=60)
        assert r.status_code == 202, r.text
        wait_until(lambda: "Workers fold once." in httpx.get(server.url + ORG, headers=auth, trust_env=False,
                                                             timeout=60).json()["guide"],
                   "the timer folded the note", server.proc, log)
        # the fold's log line is written after its commit, which the GET above may already see
        text = wait_until(lambda: "memory agent: organization" in (t := log.read_text()) and t,
                          "the timer logged its fold", server.proc, log)
        assert text.count("now runs the memory agent and housekeeping") == 1, text
        folds = [line for line in text.splitlines() if "memory agent: organization" in line]
        runner = next(line.split()[2] for line in text.splitlines() if "now runs the memory agent" in line)
        assert folds and all(line.split()[2] == runner for line in folds), text

        server.proc.send_signal(signal.SIGTERM)
        assert server.proc.wait(120) == 0
        wait_until(lambda: not any(alive(p) for p in pids), "the workers exited")
        assert lease_row(workspace) is None   # handed on at a clean stop
    finally:
        server.stop()
        for pid in children(server.proc.pid):
            os.kill(pid, signal.SIGKILL)


def test_a_dead_worker_is_reported_and_replaced(workspace, tmp_path):
    log = tmp_path / "serve.log"
    server = start_server(workspace, base_env(tmp_path / "srv-home"), log=log,
                          args=("--workers", 2, "--memory-interval", "0"))
    try:
        before = two_workers(server, log)
        victim = min(before)
        os.kill(victim, signal.SIGKILL)
        wait_until(lambda: f"(pid {victim}) exited with code -9; starting a new one" in log.read_text(),
                   "the parent reported the dead worker", server.proc, log)
        after = two_workers(server, log, other_than=victim)
        assert len(after & before) == 1
        assert workers_seen(server.url, {1, 2}) == {1, 2}
        assert server.proc.poll() is None
    finally:
        server.stop()
    assert server.proc.returncode == 0


def test_workers_that_cannot_start_stop_the_server_with_exit_1(workspace, tmp_path):
    """The workspace goes away under a running server: the workers still running keep their open
    database, but every replacement fails to open it and exits before it takes requests; after
    three such starts in a row `wsctl serve` stops all workers and exits 1, saying why."""
    log = tmp_path / "serve.log"
    server = start_server(workspace, base_env(tmp_path / "srv-home"), log=log,
                          args=("--workers", 2, "--memory-interval", "0"))
    moved = workspace.with_name(workspace.name + "-moved")
    pids: set[int] = set()
    try:
        pids = two_workers(server, log)
        assert workers_seen(server.url, {1, 2}) == {1, 2}   # both took requests: the kill is no failed start
        workspace.rename(moved)
        os.kill(min(pids), signal.SIGKILL)
        assert server.proc.wait(120) == 1
        text = log.read_text()
        assert text.count("before it took requests") == 1 and "3 in a row, stopping" in text, text
        assert text.count(f"No workspace at {workspace}") == 3, text   # each failed worker in one line
        assert "wsctl serve stopped: workers exit before they take requests (3 in a row)" in text, text
        assert "Traceback" not in text, text
        wait_until(lambda: not any(alive(p) for p in pids), "the other worker was stopped")
    finally:
        stop_leaving_no_workers(server, pids)
        if moved.exists():
            moved.rename(workspace)


def test_workers_that_keep_dying_stop_the_server_with_exit_1(workspace, tmp_path):
    """Workers that start and take requests, then die: each is replaced, until more than five have
    died within a minute; then `wsctl serve` exits 1. The test kills each pair once its
    replacements took requests (three rounds, six exits), by what the log says, not by time."""
    log = tmp_path / "serve.log"
    server = start_server(workspace, base_env(tmp_path / "srv-home"), log=log,
                          args=("--workers", 2, "--memory-interval", "0"))
    killed: set[int] = set()
    try:
        pids = two_workers(server, log)
        assert workers_seen(server.url, {1, 2}) == {1, 2}   # both took requests
        for round_ in range(3):
            for pid in pids:
                os.kill(pid, signal.SIGKILL)
            killed |= pids
            if round_ == 2:
                break

            def replacements(killed=frozenset(killed)):
                text = log.read_text()
                new = children(server.proc.pid) - killed
                return new if len(new) == 2 and all(f"(pid {p}) started again and takes requests" in text
                                                    for p in new) else None

            pids = wait_until(replacements, "two replacement workers took requests", server.proc, log)
        assert server.proc.wait(120) == 1
        text = log.read_text()
        assert "6 exits in 60 s, stopping" in text, text
        assert "wsctl serve stopped: workers keep exiting (6 in 60 s); see the log above for the cause." in text, text
        assert "Traceback" not in text, text
        wait_until(lambda: not children(server.proc.pid), "no worker is left")
    finally:
        server.stop()


def test_a_killed_parent_leaves_no_workers(workspace, tmp_path):
    log = tmp_path / "serve.log"
    server = start_server(workspace, base_env(tmp_path / "srv-home"), log=log,
                          args=("--workers", 2, "--memory-interval", "0"))
    pids: set[int] = set()
    try:
        pids = two_workers(server, log)
        server.proc.kill()
        server.proc.wait()
        wait_until(lambda: not any(alive(p) for p in pids), "the workers of a killed parent exited")
    finally:
        stop_leaving_no_workers(server, pids)


def test_workers_must_be_one_or_more(workspace, tmp_path):
    r = run_wsctl(["serve", "--workspace", workspace, "--port", "0", "--workers", "0"],
                  base_env(tmp_path / "h"), expect=2)
    assert "--workers" in r.err and "Traceback" not in r.err


def test_two_workers_on_a_postgresql_workspace(pg_workspace, pg_databases, tmp_path):
    """The same on the PostgreSQL door: both workers answer, one holds the timer lease in the
    database, SIGTERM stops both and hands the lease on."""
    from tests.conftest import pg_env
    from workspacectl.engine.workspaces import open_workspace

    log = tmp_path / "serve.log"
    env = {**pg_env(tmp_path / "srv-home", pg_databases), "WSCTL_BLOB_DIR": str(pg_workspace / "blobs")}
    server = start_server(pg_workspace, env, log=log, args=("--workers", 2, "--memory-interval", "0.2"))

    def lease():
        conn = open_workspace(str(pg_workspace)).conn()
        try:
            return get_lease(conn, LEASE)
        finally:
            conn.close()

    try:
        assert workers_seen(server.url, {1, 2}) == {1, 2}
        pids = two_workers(server, log)
        first = wait_until(lambda: (r := lease()) is not None and r["renewals"] >= 1 and r,
                           "a worker took the timer lease", server.proc, log)
        assert int(first["holder"].split(":")[1]) in pids
        later = wait_until(lambda: (r := lease())["renewals"] >= first["renewals"] + 3 and r,
                           "the timer kept running", server.proc, log)
        assert (later["holder"], later["acquired_at"]) == (first["holder"], first["acquired_at"])
        server.proc.send_signal(signal.SIGTERM)
        assert server.proc.wait(120) == 0
        wait_until(lambda: not any(alive(p) for p in pids), "the workers exited")
        assert lease() is None
    finally:
        server.stop()
