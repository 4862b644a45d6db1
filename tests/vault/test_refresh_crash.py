"""kill -9 during a rotating refresh (issue 25), on every door: the process refreshing is killed at
the points that matter, each found by state (the provider holds the request or its answer until the
test has killed the process; the test watches the provider and the database, never a timer).

- before the provider rotates (its request is then lost): the next caller sees at once that the
  lease's holder is gone, takes the refresh over before the lease would have run out, and the
  credential stays ok;
- after the provider rotated, before its answer was read: the next caller takes over at once; the
  provider refuses the retired refresh token, and the credential is needs_reconnect saying "the
  refresh was interrupted";
- right after the answer was saved: the rotated tokens are there; nothing is refreshed again.

The process killed is a second `wsctl serve` on the door's workspace (remote on SQLite and on
PostgreSQL), or a `wsctl vault token` command on the workspace (local).
"""
from __future__ import annotations

import subprocess
import threading

import httpx
import pytest

from tests import forkserver
from tests.conftest import WAIT_LIMIT, WSCTL, base_env, start_server, wait_until, workspace_db
from tests.vault_helpers import (
    canary_scan,  # noqa: F401  (a fixture, named by pytestmark)
    install_service,
    make_credential,
    token,
)
from workspacectl import clock

pytestmark = pytest.mark.usefixtures("canary_scan")


class Victim:
    """A process asking for the credential's token (so refreshing it), to be killed with SIGKILL."""

    def __init__(self, backend, cred_id: str):
        self.thread: threading.Thread | None = None
        if backend.kind == "remote":
            home = backend.workspace.parent / "victim-home"
            self.server = start_server(backend.workspace, base_env(home), log=backend.workspace.parent / "victim.log")
            self.proc = self.server.proc

            def ask():
                try:
                    httpx.post(f"{self.server.url}/v1/credentials/{cred_id}/token", json={"reason": "victim"},
                               headers={"Authorization": f"Bearer {backend.owner_token}"}, timeout=WAIT_LIMIT,
                               trust_env=False)
                except httpx.HTTPError:
                    pass   # killed mid-request, as intended

            self.thread = threading.Thread(target=ask, daemon=True)
            self.thread.start()
        else:
            args = ["vault", "token", cred_id, "--reason", "victim"]
            self.proc = forkserver.spawn(args, backend.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) \
                or subprocess.Popen([*WSCTL, *args], env=backend.env, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)

    def finish(self) -> None:
        """Wait until its own request is done (the command ended, or the server answered it)."""
        if self.thread is not None:
            self.thread.join(WAIT_LIMIT)
        else:
            self.proc.wait(WAIT_LIMIT)

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()
        if self.thread is not None:
            self.thread.join(WAIT_LIMIT)


def _lease(backend, cred_id: str) -> tuple[str | None, str | None]:
    con = workspace_db(backend.workspace)
    try:
        row = con.execute("SELECT refresh_lease_owner, refresh_lease_until FROM credentials WHERE id = ?",
                          (cred_id,)).fetchone()
    finally:
        con.close()
    return row[0], row[1]


def _refreshed_at(backend, cred_id: str) -> str:
    con = workspace_db(backend.workspace)
    try:
        return con.execute("SELECT refreshed_at FROM credentials WHERE id = ?", (cred_id,)).fetchone()[0]
    finally:
        con.close()


@pytest.fixture
def expired(backend, provider):
    install_service(backend.workspace, provider.service_toml("loopcrm"))
    grant = provider.grant()
    return make_credential(backend.workspace, backend.owner["id"], "loopcrm",
                           {"accessToken": grant["access_token"], "refreshToken": grant["refresh_token"]},
                           expires_in=-5)


def _held_lease(backend, cred_id: str) -> float:
    """The lease the victim holds now (it is in the provider's hands): its end, as a timestamp."""
    owner, until = _lease(backend, cred_id)
    assert owner and until, "the refreshing process holds no lease"
    return clock.parse_iso(until).timestamp()


def test_killed_before_the_provider_rotates_the_next_caller_takes_over_at_once(backend, provider, expired):
    provider.refresh_gate, provider.abandon = threading.Event(), 1
    victim = Victim(backend, expired["id"])
    try:
        wait_until(lambda: provider.refreshes == 1, "the victim's refresh did not reach the provider")
        lease_end = _held_lease(backend, expired["id"])
    finally:
        victim.kill()
        provider.refresh_gate.set()   # its request is dropped unanswered: nothing rotated
    r = token(backend, expired["id"])
    assert r.status == 200, r.body
    assert provider.refreshes == 2 and r.body["accessToken"] == provider.issued[-1]["access_token"]
    assert provider.refresh_times[1] < lease_end, "the dead holder's lease was waited out"
    detail = backend.ok("GET", f"/v1/credentials/{expired['id']}")
    assert detail["status"] == "ok" and detail["statusReason"] is None
    assert _lease(backend, expired["id"]) == (None, None)


def test_killed_after_the_provider_rotated_says_the_refresh_was_interrupted(backend, provider, expired):
    provider.answer_gate = threading.Event()
    victim = Victim(backend, expired["id"])
    try:
        wait_until(provider.answer_held.is_set, "the provider did not rotate the victim's refresh token")
        lease_end = _held_lease(backend, expired["id"])
    finally:
        victim.kill()
        provider.answer_gate.set()    # the rotated answer goes to a dead socket
    r = token(backend, expired["id"])
    assert (r.status, r.code) == (502, "upstream_failed"), r.body
    assert "needs to be reconnected: the refresh was interrupted" in r.body["error"]["message"]
    assert f"--reconnect {expired['id']}" in r.body["error"]["message"]
    assert provider.refreshes == 2 and provider.refresh_times[1] < lease_end
    detail = backend.ok("GET", f"/v1/credentials/{expired['id']}")
    assert (detail["status"], detail["statusReason"]) == ("needs_reconnect", "the refresh was interrupted")
    again = token(backend, expired["id"])   # nothing calls the provider any more
    assert again.status == 502 and provider.refreshes == 2
    shown = backend.wsctl("vault", "show", expired["id"]).out
    assert "statusReason" in shown and "the refresh was interrupted" in shown


def test_killed_once_the_answer_is_saved_keeps_the_rotated_tokens(backend, provider, expired):
    before = _refreshed_at(backend, expired["id"])
    victim = Victim(backend, expired["id"])
    try:
        wait_until(lambda: _refreshed_at(backend, expired["id"]) != before, "the victim saved no refresh")
    finally:
        victim.kill()
    r = token(backend, expired["id"])
    assert r.status == 200, r.body
    assert provider.refreshes == 1 and r.body["accessToken"] == provider.issued[-1]["access_token"]
    probe = httpx.get(f"{provider.url}/probe", headers={"Authorization": f"Bearer {r.body['accessToken']}"},
                      trust_env=False)
    assert probe.status_code == 200
    assert backend.ok("GET", f"/v1/credentials/{expired['id']}")["status"] == "ok"


def test_a_holder_stalled_past_its_lease_still_saves_its_late_answer(backend, provider, expired):
    """The holder is alive but its lease ran out (made so in the database: it stalled) while the
    provider held its rotated answer: the next caller takes the refresh over, the provider refuses
    the retired token and the credential is needs_reconnect ("interrupted"); then the late answer
    arrives, is saved, and the credential is usable again with it."""
    provider.answer_gate = threading.Event()
    victim = Victim(backend, expired["id"])
    try:
        wait_until(provider.answer_held.is_set, "the provider did not rotate the victim's refresh token")
        con = workspace_db(backend.workspace)
        con.execute("UPDATE credentials SET refresh_lease_until = ? WHERE id = ?", (clock.later(-1), expired["id"]))
        con.close()
        r = token(backend, expired["id"])
        assert (r.status, provider.refreshes) == (502, 2), r.body
        assert backend.ok("GET", f"/v1/credentials/{expired['id']}")["statusReason"] == "the refresh was interrupted"
    finally:
        provider.answer_gate.set()
    late = provider.issued[-1]   # the victim's rotated tokens (the takeover got none)
    wait_until(lambda: backend.ok("GET", f"/v1/credentials/{expired['id']}")["status"] == "ok",
               "the late answer was not saved")
    victim.finish()
    r = token(backend, expired["id"])
    assert r.status == 200 and r.body["accessToken"] == late["access_token"] and provider.refreshes == 2
    victim.kill()
