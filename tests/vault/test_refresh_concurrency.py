"""Single-flight refresh across processes: 50 concurrent token requests on an expired OAuth
credential, split over two `wsctl serve` processes on one workspace, cause exactly one refresh
at the provider; all 50 get the same new token; the access log holds exactly 50 issued rows.
"""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.conftest import WAIT_LIMIT, base_env, make_backend, serve, wait_until, workspace_db
from tests.oauth_provider import OAuthProvider
from tests.vault_helpers import (
    canary_scan,  # noqa: F401  (a fixture, named by pytestmark)
    install_service,
    make_credential,
)

pytestmark = pytest.mark.usefixtures("canary_scan")

REQUESTS = 50


@pytest.fixture
def provider():
    with OAuthProvider() as p:
        p.refresh_delay = 0.3  # a slow provider widens the window for duplicate refreshes
        yield p


@pytest.fixture
def remote(workspace, home):
    b = make_backend("remote", workspace, home)
    yield b
    b.close()


@pytest.fixture
def local(workspace, home):
    b = make_backend("local", workspace, home)
    yield b
    b.close()


def _burst(urls: list[str], secret: str, cred_id: str, n: int) -> list[httpx.Response]:
    barrier = threading.Barrier(n)
    clients = [httpx.Client(trust_env=False, base_url=u, timeout=60, limits=httpx.Limits(max_connections=n)) for u in urls]

    def one(i: int) -> httpx.Response:
        barrier.wait()
        return clients[i % len(clients)].post(f"/v1/credentials/{cred_id}/token", json={"reason": f"burst {i}"},
                                              headers={"Authorization": f"Bearer {secret}"})

    try:
        with ThreadPoolExecutor(n) as pool:
            return list(pool.map(one, range(n)))
    finally:
        for c in clients:
            c.close()


@pytest.mark.parametrize("rotate", [True, False], ids=["rotating", "non-rotating"])
def test_fifty_requests_over_two_servers_cause_one_refresh(remote, provider, rotate):
    backend = remote
    provider.rotate_refresh = rotate
    install_service(backend.workspace, provider.service_toml("loopcrm"))
    grant = provider.grant()
    cred = make_credential(backend.workspace, backend.owner["id"], "loopcrm",
                           {"accessToken": grant["access_token"], "refreshToken": grant["refresh_token"]},
                           expires_in=-5)
    with serve(backend.workspace, base_env(backend.workspace.parent / "second-home")) as second:
        responses = _burst([backend.base_url, second], backend.owner_token, cred["id"], REQUESTS)
    bodies = [r.json() for r in responses]
    assert [r.status_code for r in responses] == [200] * REQUESTS, bodies[:3]
    assert provider.refreshes == 1
    tokens = {b["accessToken"] for b in bodies}
    assert tokens == {provider.issued[-1]["access_token"]}
    assert grant["access_token"] not in tokens
    log = backend.api("GET", f"/v1/credentials/{cred['id']}/access-log", query={"limit": "500"}).body["entries"]
    assert len(log) == REQUESTS and {e["outcome"] for e in log} == {"issued"}
    assert sorted(e["reason"] for e in log) == sorted(f"burst {i}" for i in range(REQUESTS))


def test_fifty_threads_in_one_process_cause_one_refresh(local, provider):
    """The same rule through the in-process engine (local backend): threads, not processes."""
    backend = local
    from workspacectl.engine.dispatch import Engine
    from workspacectl.engine.workspaces import open_workspace

    install_service(backend.workspace, provider.service_toml("loopcrm"))
    grant = provider.grant()
    cred = make_credential(backend.workspace, backend.owner["id"], "loopcrm",
                           {"accessToken": grant["access_token"], "refreshToken": grant["refresh_token"]},
                           expires_in=-5)
    engine = Engine(open_workspace(str(backend.workspace)))
    barrier = threading.Barrier(REQUESTS)

    def one(i: int):
        barrier.wait()
        return engine.handle("POST", f"/v1/credentials/{cred['id']}/token", None, {"reason": f"t{i}"},
                             backend.owner_token)

    with ThreadPoolExecutor(REQUESTS) as pool:
        responses = list(pool.map(one, range(REQUESTS)))
    assert [r.status for r in responses] == [200] * REQUESTS, [r.body for r in responses if r.status != 200][:2]
    assert provider.refreshes == 1
    assert {r.body["accessToken"] for r in responses} == {provider.issued[-1]["access_token"]}
    log = backend.api("GET", f"/v1/credentials/{cred['id']}/access-log", query={"limit": "500"}).body["entries"]
    assert len(log) == REQUESTS


def test_failed_refresh_is_not_repeated_by_the_waiters(backend, provider):
    """While one request refreshes and fails, the others wait, then answer 502 without retrying."""
    install_service(backend.workspace, provider.service_toml("loopcrm"))
    grant = provider.grant()
    cred = make_credential(backend.workspace, backend.owner["id"], "loopcrm",
                           {"accessToken": grant["access_token"], "refreshToken": grant["refresh_token"]},
                           expires_in=-5)
    provider.mode = "error5xx"
    n = 10
    if backend.kind == "remote":
        responses = [(r.status_code, r.json()) for r in _burst([backend.base_url], backend.owner_token, cred["id"], n)]
    else:
        barrier = threading.Barrier(n)

        def one(i):
            barrier.wait()
            r = backend.api("POST", f"/v1/credentials/{cred['id']}/token", {"reason": "x"})
            return r.status, r.body

        with ThreadPoolExecutor(n) as pool:
            responses = list(pool.map(one, range(n)))
    assert {s for s, _ in responses} == {502}
    assert provider.refreshes == 1
    assert backend.api("GET", f"/v1/credentials/{cred['id']}/access-log").body["entries"] == []


def test_provider_call_does_not_hold_the_write_lock(backend, provider):
    """While a refresh is in flight, unrelated writes on the workspace go through. The provider
    holds its answer until the write is done: an order, not a stopwatch."""
    install_service(backend.workspace, provider.service_toml("loopcrm"))
    grant = provider.grant()
    cred = make_credential(backend.workspace, backend.owner["id"], "loopcrm",
                           {"accessToken": grant["access_token"], "refreshToken": grant["refresh_token"]},
                           expires_in=-5)
    other = make_credential(backend.workspace, backend.owner["id"], "loopcrm", {"accessToken": "x-CANARY"})
    provider.refresh_gate = threading.Event()
    result = {}
    t = threading.Thread(target=lambda: result.setdefault("r", backend.api(
        "POST", f"/v1/credentials/{cred['id']}/token", {"reason": "slow"})))
    t.start()
    try:
        wait_until(lambda: provider.refreshes == 1, "the refresh did not reach the provider")
        # the provider is still holding its answer: a write lock held across the call would make
        # this wait out the busy timeout and answer 409
        r = backend.api("PUT", f"/v1/credentials/{other['id']}/sharing", {"workspace": True, "role": "viewer"})
        assert not provider.refresh_gate.is_set() and t.is_alive()
        assert r.status == 200, r.body
    finally:
        provider.refresh_gate.set()
        t.join(WAIT_LIMIT)
    assert result["r"].status == 200


def test_a_lease_left_by_a_crashed_process_expires(backend, provider):
    """A refresh lease whose holder died is taken over once it runs out, not before: the order
    of the provider's refresh and the lease's end is checked, not how long the request took."""
    from workspacectl import clock

    install_service(backend.workspace, provider.service_toml("loopcrm"))
    grant = provider.grant()
    cred = make_credential(backend.workspace, backend.owner["id"], "loopcrm",
                           {"accessToken": grant["access_token"], "refreshToken": grant["refresh_token"]},
                           expires_in=-5)
    lease_until = clock.later(2)
    con = workspace_db(backend.workspace)
    con.execute("UPDATE credentials SET refresh_lease_owner = 'dead', refresh_lease_until = ? WHERE id = ?",
                (lease_until, cred["id"]))
    con.close()
    r = backend.api("POST", f"/v1/credentials/{cred['id']}/token", {"reason": "after crash"})
    assert r.status == 200, r.body
    assert provider.refreshes == 1 and r.body["accessToken"] == provider.issued[-1]["access_token"]
    assert provider.refresh_times[0] >= clock.parse_iso(lease_until).timestamp(), "refreshed under a live lease"


@pytest.mark.parametrize("lifetime", [3], ids=["3s-token"])   # 3 s and 1 h against Authlib: test_authlib_provider.py
def test_a_burst_on_an_expired_credential_refreshes_once_whatever_the_lifetime(backend, provider, lifetime):
    """Issue 25: 20 requests on an expired credential whose provider issues `lifetime`-second
    tokens cause one refresh, over two replicas (server on SQLite, on PostgreSQL) or twenty threads
    (local). A request queued behind the refresh (its handler starting after the refresh ended) takes
    the new token: it arrived before the refresh ended, so that refresh counts as its own."""
    n = 20
    provider.expires_in = lifetime
    provider.refresh_delay = 0   # a quick refresh ends while most requests still queue for an engine thread
    install_service(backend.workspace, provider.service_toml("loopcrm"))
    grant = provider.grant()
    cred = make_credential(backend.workspace, backend.owner["id"], "loopcrm",
                           {"accessToken": grant["access_token"], "refreshToken": grant["refresh_token"]},
                           expires_in=-5)
    if backend.kind == "remote":
        env = base_env(backend.workspace.parent / "second-home")
        with serve(backend.workspace, env) as second:
            answers = [(r.status_code, r.json()) for r in
                       _burst([backend.base_url, second], backend.owner_token, cred["id"], n)]
    else:
        barrier = threading.Barrier(n)

        def one(i):
            barrier.wait()
            r = backend.api("POST", f"/v1/credentials/{cred['id']}/token", {"reason": f"t{i}"})
            return r.status, r.body

        with ThreadPoolExecutor(n) as pool:
            answers = list(pool.map(one, range(n)))
    assert [s for s, _ in answers] == [200] * n, answers[:2]
    assert provider.refreshes == 1
    assert {b["accessToken"] for _, b in answers} == {provider.issued[-1]["access_token"]}


def test_on_postgresql_a_holder_elsewhere_is_known_gone_by_its_session_lock(pg_workspace, home, provider):
    """PostgreSQL only (SQLite's processes share one machine, where the pid check serves): a lease
    held by a process on another machine is taken over at once when that holder's session lock is
    free (its connection died with it), and waited out while the lock is held (it is alive)."""
    import psycopg

    from workspacectl import clock

    b = make_backend("local", pg_workspace, home)
    try:
        install_service(pg_workspace, provider.service_toml("loopcrm"))
        grant = provider.grant()
        cred = make_credential(pg_workspace, b.owner["id"], "loopcrm",
                               {"accessToken": grant["access_token"], "refreshToken": grant["refresh_token"]},
                               expires_in=-5)
        elsewhere = "another-host|another-boot|4242|99|0123456789ab"   # no pid here can say
        con = workspace_db(pg_workspace)
        until = clock.later(60)
        con.execute("UPDATE credentials SET refresh_lease_owner = ?, refresh_lease_until = ? WHERE id = ?",
                    (elsewhere, until, cred["id"]))
        r = b.api("POST", f"/v1/credentials/{cred['id']}/token", {"reason": "holder gone"})
        assert r.status == 200 and provider.refreshes == 1, r.body
        assert provider.refresh_times[0] < clock.parse_iso(until).timestamp(), "the lease was waited out"
        # The same again, the holder alive: its session lock held (here by the test's own session).
        con.execute("UPDATE credentials SET expires_at = ?, refresh_lease_owner = ?, refresh_lease_until = ? "
                    "WHERE id = ?", (clock.later(-5), elsewhere, clock.later(2), cred["id"]))
        with psycopg.connect(str(pg_workspace), autocommit=True) as holder:
            holder.execute("SELECT pg_advisory_lock(hashtext('wsctl-token-refresh'), hashtext(%s))", (cred["id"],))
            lease_end = clock.parse_iso(con.execute("SELECT refresh_lease_until FROM credentials WHERE id = ?",
                                                    (cred["id"],)).fetchone()[0]).timestamp()
            r = b.api("POST", f"/v1/credentials/{cred['id']}/token", {"reason": "holder alive"})
        assert r.status == 200 and provider.refreshes == 2, r.body
        assert provider.refresh_times[1] >= lease_end, "a live holder's lease was taken over"
        con.close()
    finally:
        b.close()
