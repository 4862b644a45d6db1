"""Authentication's cache on two replicas of one PostgreSQL workspace (issue 27 item 3,
engine/db/pg_auth_cache.py, m031_auth_notify): each replica answers known sessions and keys from
its cache, and a session or key revoked through one replica is refused by the other on the very
next request. Asserted by status; where a notification must arrive, by a bounded poll on a state.
"""
from __future__ import annotations

import psycopg
import pytest

from tests.conftest import wait_until
from tests.server.test_postgres_replicas import _as, replicas  # noqa: F401  (a fixture)

WHOAMI = "/v1/auth/whoami"


def _listeners_confirmed(url: str) -> int:
    with psycopg.connect(url, autocommit=True) as c:
        return c.execute("SELECT count(*) FROM auth_listeners WHERE seen >= 0 "
                         "AND beat > clock_timestamp() - interval '2 seconds'").fetchone()[0]


def _both_listening(backend, b_url: str) -> None:
    """Each replica starts its listener at its first lookup; wait until both have confirmed."""
    with _as(backend.base_url, backend.owner_token) as a, _as(b_url, backend.owner_token) as b:
        assert a.get(WHOAMI).status_code == 200 and b.get(WHOAMI).status_code == 200
    wait_until(lambda: _listeners_confirmed(str(backend.workspace)) >= 2, "both replicas' listeners confirmed")


def test_a_session_revoked_on_one_replica_is_refused_by_the_other_at_once(replicas):  # noqa: F811
    backend, b_url = replicas
    _both_listening(backend, b_url)
    for _ in range(5):
        session = backend.session()
        with _as(backend.base_url, session) as a, _as(b_url, session) as b:
            for _ in range(3):     # known to both replicas (and cached by them)
                assert b.get(WHOAMI).status_code == 200
                assert a.get(WHOAMI).status_code == 200
            assert a.delete("/v1/auth/session").status_code == 204
            assert b.get(WHOAMI).status_code == 401
            assert a.get(WHOAMI).status_code == 401


def test_a_key_revoked_on_one_replica_is_refused_by_the_other_at_once(replicas):  # noqa: F811
    backend, b_url = replicas
    _both_listening(backend, b_url)
    for _ in range(3):
        key = backend.key("platform", ["vault:read"])
        with _as(b_url, key) as b:
            for _ in range(3):
                r = b.get(WHOAMI)
                assert r.status_code == 200
            key_id = r.json()["keyId"]
            assert backend.api("DELETE", f"/v1/keys/{key_id}").status == 204
            assert b.get(WHOAMI).status_code == 401
            assert b.get("/v1/credentials").status_code == 401


def test_the_cache_answers_and_the_trigger_is_what_lets_go(replicas):  # noqa: F811
    """The cache is really used: with m031's trigger off, a revocation written behind the engine's
    back is not seen by a replica that cached the session; with it on, the same change reaches the
    replica by its notification alone (nobody waits for it: a bounded poll on the answer)."""
    backend, b_url = replicas
    _both_listening(backend, b_url)
    session = backend.session()
    url = str(backend.workspace)
    with _as(b_url, session) as b:
        assert b.get(WHOAMI).status_code == 200      # read and cached
        key_id = b.get(WHOAMI).json()["keyId"]
        with psycopg.connect(url, autocommit=True) as c:
            c.execute("ALTER TABLE secrets DISABLE TRIGGER secrets_auth_changed")
            try:
                c.execute("UPDATE secrets SET revoked_at = '2026-01-01T00:00:00Z' WHERE id = %s", (key_id,))
                assert b.get(WHOAMI).status_code == 200   # the cache's answer
            finally:
                c.execute("ALTER TABLE secrets ENABLE TRIGGER secrets_auth_changed")
            c.execute("UPDATE secrets SET revoked_at = '2026-01-01T00:00:01Z' WHERE id = %s", (key_id,))
        wait_until(lambda: b.get(WHOAMI).status_code == 401, "the notified replica refuses the revoked session")


@pytest.mark.parametrize("what", ["session", "key"])
def test_a_revoked_secret_stays_refused_on_the_replica_that_revoked_it(replicas, what):  # noqa: F811
    backend, b_url = replicas
    _both_listening(backend, b_url)
    secret = backend.session() if what == "session" else backend.key("platform", ["vault:read"])
    with _as(b_url, secret) as b:
        r = b.get(WHOAMI)
        assert r.status_code == 200
        path = "/v1/auth/session" if what == "session" else f"/v1/keys/{r.json()['keyId']}"
        if what == "session":
            assert b.delete(path).status_code == 204
        else:
            with _as(b_url, backend.owner_token) as owner:
                assert owner.delete(path).status_code == 204
        assert b.get(WHOAMI).status_code == 401
