"""Single-flight OAuth refresh, across threads and processes sharing one workspace.

A refresh is claimed as a lease on the credential row (`refresh_lease_owner/until`) in a short
write transaction; the provider call runs outside any transaction, so unrelated writes are not
blocked while the provider thinks; the new tokens (and a rotated refresh token, or the old one
when the provider omits it) are saved in one transaction that also frees the lease. Everyone
else waits by polling the row with plain reads, then re-reads and finds the token fresh.

After a refused grant (`invalid_grant`) the credential is `needs_reconnect` and nothing calls
the provider again until it is reconnected. After any other provider failure the credential
backs off for BACKOFF_SECONDS: requests in that window answer 502 without calling the provider.
A catalog that cannot refresh (no OAuth client, no token URL) answers 409 and records no back-off,
so the first request after an admin fixes it refreshes.

A crash during a refresh (issue 25): the provider's answer, with a rotated refresh token, is
sealed and saved in one transaction as soon as it is read, before anything else; it is saved even
when the lease ran out meanwhile, unless the credential's secrets changed since they were read (a
reconnect, an erase, another refresh that saved first). The lease names its holder's process
(refresh_holder.py): a caller on the same machine sees at once that the holder is gone and takes
the refresh over; on PostgreSQL a free session lock says the same of a holder on any machine; a
lease that no check reaches runs out (LEASE_SECONDS at most). A refresh taken over
from a holder that never released its lease was interrupted: if the provider then refuses the grant
(it had rotated the refresh token before the holder died), the credential is `needs_reconnect`
with the reason `refresh_interrupted` ("the refresh was interrupted"), not `invalid_grant`.
"""
from __future__ import annotations

import json
import random
import sqlite3
import time
from typing import TYPE_CHECKING

from workspacectl import clock
from workspacectl.engine.db import must_not_wait, transaction
from workspacectl.engine.events.record import record_event
from workspacectl.engine.store import vault as store
from workspacectl.engine.vault import oauth, refresh_holder
from workspacectl.engine.vault.credentials import (
    REASONS,
    credential_lock,
    open_secrets,
    precise_now,
    reveal_all,
    seal_secrets,
)
from workspacectl.errors import ApiError

if TYPE_CHECKING:
    from workspacectl.engine.db.conn import Conn
    from workspacectl.engine.workspaces.folder import Workspace

REFRESH_MARGIN_SECONDS = 60
# A token is refreshed when what is left of it falls under the margin: REFRESH_MARGIN_SECONDS, or
# this share of its lifetime when that is less (a 3 s token is refreshed in its last 0.75 s, not on
# every call; a 1 h token in its last minute).
REFRESH_MARGIN_SHARE = 0.25
LEASE_SECONDS = 2 * oauth.TIMEOUT_SECONDS + 5
WAIT_SECONDS = LEASE_SECONDS + 5
BACKOFF_SECONDS = 30


def reconnect_error(service: str, cred_id: str, reason: str | None = None) -> ApiError:
    why = REASONS.get(reason or "", REASONS["invalid_grant"])
    return ApiError("upstream_failed", f"This {service} credential needs to be reconnected: {why}. "
                    f"Run `wsctl vault connect {service} --reconnect {cred_id}` (same id, same shares).")


def _later_than(iso: str | None, seconds: float = 0) -> bool:
    """True when the ISO time is after now + seconds."""
    if not iso:
        return False
    try:
        return clock.parse_iso(iso).timestamp() > clock.now().timestamp() + seconds
    except ValueError:
        return False


def margin_seconds(row: sqlite3.Row) -> float:
    """How long before its expiry a token is refreshed: REFRESH_MARGIN_SECONDS, or
    REFRESH_MARGIN_SHARE of its lifetime (from when it was stored to its expiry) when less."""
    try:
        lifetime = (clock.parse_iso(row["expires_at"]) - clock.parse_iso(row["refreshed_at"])).total_seconds()
    except (TypeError, ValueError, AttributeError):
        return REFRESH_MARGIN_SECONDS
    return max(0.0, min(REFRESH_MARGIN_SECONDS, lifetime * REFRESH_MARGIN_SHARE))


def needs_refresh(row: sqlite3.Row, since: str | None = None, force: bool = False) -> bool:
    """An OAuth access token within the margin of its expiry (with force: any not refreshed since).

    A token refreshed after `since` (when this request arrived at the door) is accepted while it is
    still valid, even inside the margin, so requests queued behind a refresh take its token instead
    of refreshing again, and a provider issuing short-lived tokens cannot make us loop.
    """
    if row["credential_type"] != "oauth2":
        return False
    refreshed_after = since is not None and bool(since) and (row["refreshed_at"] or "") >= since
    if force and not refreshed_after:
        return True
    if row["expires_at"] is None:
        return False
    if "refreshToken" not in (row["secret_names_json"] or ""):
        return not _later_than(row["expires_at"])  # nothing to refresh with: use it until it ends
    if _later_than(row["expires_at"], REFRESH_MARGIN_SECONDS) or _later_than(row["expires_at"], margin_seconds(row)):
        return False   # the first test settles the common case (a minute or more left) without the lifetime
    return not (refreshed_after and _later_than(row["expires_at"]))


def _decide(row: sqlite3.Row | None, since: str | None, force: bool, holder_gone: bool = False) -> str:
    """'fresh', 'wait', 'refresh' or 'take over' (a live lease whose holder is gone: refresh_holder,
    or `holder_gone`: its PostgreSQL session lock was free); raises for a credential that must not
    be refreshed now."""
    if row is None:
        raise ApiError("not_found", "That credential no longer exists. Run `wsctl vault list`.")
    if row["status"] == "needs_reconnect":
        raise reconnect_error(row["service"], row["id"], row["last_error"])
    if not needs_refresh(row, since, force):
        return "fresh"
    if _later_than(row["refresh_lease_until"]):
        owner = row["refresh_lease_owner"]
        gone = (holder_gone and refresh_holder.names_holder(owner)) or refresh_holder.is_gone(owner)
        return "take over" if gone else "wait"
    if _later_than(row["refresh_retry_at"]):
        wait = max(1, int(clock.parse_iso(row["refresh_retry_at"]).timestamp() - clock.now().timestamp()))
        raise ApiError("upstream_failed", f"The last token refresh for this {row['service']} credential failed; "
                       f"retrying is paused for {wait} s. Try again then, or run `wsctl vault sync`.")
    return "refresh"


def ensure_fresh(ws: Workspace, cred_id: str, *, force: bool = False, since: str | None = None) -> str:
    """Make sure the credential's access token is usable; answers the `since` mark to re-check with.

    force=True refreshes even a fresh token, unless another refresh completes after this call
    started (then that one counts).
    """
    must_not_wait("a token refresh")   # may call the provider, or wait for another refresh
    conn = ws.conn()
    since = since or precise_now()
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        row = store.get_credential(conn, cred_id)
        decision = _decide(row, since, force)
        if decision == "fresh":
            return since
        # PostgreSQL: the holder of a refresh holds a session lock that dies with its connection.
        # Taking it first tells a holder on any machine that is gone (the lock was free) from a live one.
        pg = refresh_holder.has_session_locks(conn)
        try_it = decision != "wait" or (pg and row is not None and refresh_holder.names_holder(row["refresh_lease_owner"]))
        locked = try_it and (not pg or refresh_holder.session_lock(conn, cred_id))
        # A lease that ran out while its holder's session lock is still held (a holder elsewhere,
        # stalled): taken over as before session locks, under an owner naming no holder, so nobody
        # reads the free session lock as this refresh's holder being gone.
        expired_live = (pg and not locked and decision == "refresh" and row is not None
                        and row["refresh_lease_owner"] is not None)
        try:
            if locked or expired_live:
                owner = refresh_holder.new_owner() if locked else refresh_holder.unnamed_owner()
                claimed = None
                with transaction(conn, locks=[credential_lock(cred_id)]):
                    row = store.get_credential_sealed(conn, cred_id)
                    decision = _decide(row, since, force, holder_gone=bool(pg and locked))
                    until = clock.later(LEASE_SECONDS)
                    if decision == "refresh":
                        taken = store.claim_refresh_lease(conn, cred_id, owner, until, clock.now_iso())
                    else:   # _decide answered for a row, so there is one
                        taken = decision == "take over" and row is not None and store.take_over_refresh_lease(
                            conn, cred_id, row["refresh_lease_owner"], owner, until)
                    if taken:
                        claimed = row
                if decision == "fresh":
                    return since
                # a lease its holder never released (gone, or run out): that refresh was interrupted
                interrupted = claimed is not None and claimed["refresh_lease_owner"] is not None
                if claimed is not None and _refresh_with_lease(ws, conn, claimed, owner, interrupted):
                    return since
        finally:
            if locked and pg:
                refresh_holder.session_unlock(conn, cred_id)
        if time.monotonic() > deadline:
            raise ApiError("upstream_failed", "Another request has been refreshing this credential's token for "
                           "too long; try again in a minute.")
        time.sleep(random.uniform(0.02, 0.06))


def _refresh_with_lease(ws: Workspace, conn: Conn, row: sqlite3.Row, owner: str, interrupted: bool = False) -> bool:
    """Call the provider holding the lease; save the result at once. False when the credential's
    secrets changed meanwhile (then the caller decides again on what is stored now)."""
    cred_id, service = row["id"], row["service"]
    held = open_secrets(ws, row)
    refresh_token = held.get("refreshToken")
    try:
        if refresh_token is None:
            if _later_than(row["expires_at"]):
                with transaction(conn, locks=[credential_lock(cred_id)]):
                    store.release_refresh_lease(conn, cred_id, owner)
                return True  # nothing to refresh with; the token is still valid for now
            raise oauth.InvalidGrant(service)
        try:
            scopes = json.loads(row["scopes_json"] or "[]")
        except ValueError:
            scopes = []
        tokens = oauth.refresh(ws, conn, service, refresh_token, scopes)
    except oauth.InvalidGrant:
        reason = "refresh_interrupted" if interrupted else "invalid_grant"
        with transaction(conn, locks=[credential_lock(cred_id)]):
            if _secrets_changed(conn, row):   # another refresh saved first: its refresh token is the live one
                store.release_refresh_lease(conn, cred_id, owner)
                return False
            store.set_status(conn, cred_id, "needs_reconnect", clock.now_iso(), reason)
            store.release_refresh_lease(conn, cred_id, owner)
            record_event(conn, "credential.broken", subject_id=cred_id,
                         data={"service": service, "name": row["name"], "status": "needs_reconnect",
                               "reason": reason})
        raise reconnect_error(service, cred_id, reason) from None
    except oauth.OAuthNotConfigured:
        with transaction(conn, locks=[credential_lock(cred_id)]):  # the catalog's fault, not the provider's: no back-off
            store.release_refresh_lease(conn, cred_id, owner)
        raise
    except ApiError as e:
        with transaction(conn, locks=[credential_lock(cred_id)]):
            store.record_refresh_failure(conn, cred_id, clock.later(BACKOFF_SECONDS), e.code, clock.now_iso())
            store.release_refresh_lease(conn, cred_id, owner)
        raise ApiError("upstream_failed", f"{e.message} Token refresh for this credential pauses "
                       f"{BACKOFF_SECONDS} s.") from None
    except BaseException:
        with transaction(conn, locks=[credential_lock(cred_id)]):
            store.release_refresh_lease(conn, cred_id, owner)
        raise
    # The provider's answer is read: seal and save it now, in one transaction, before anything else.
    # A rotating provider has already retired the old refresh token, so the new one is saved even
    # when this lease ran out meanwhile, unless the secrets changed since they were read.
    with transaction(conn, locks=[credential_lock(cred_id)]):
        if _secrets_changed(conn, row, answered=True):
            store.release_refresh_lease(conn, cred_id, owner)
            return False  # a reconnect, an erase or another refresh saved first: what is stored wins
        kept = {k: v for k, v in reveal_all(held).items() if k not in ("accessToken", "refreshToken")}
        new = {**kept, **tokens.secrets(previous_refresh=refresh_token)}
        try:
            fields = {**json.loads(row["fields_json"] or "{}"), **tokens.fields}
        except ValueError:
            fields = dict(tokens.fields)
        store.update_secrets(conn, cred_id, secret_blob=seal_secrets(ws, cred_id, new), secret_names=sorted(new),
                             now=clock.now_iso(), refreshed_at=precise_now(), expires_at=tokens.expires_at,
                             token_type=tokens.token_type, scopes=tokens.scopes,
                             fields=fields if tokens.fields else None)
        store.release_refresh_lease(conn, cred_id, owner)
        record_event(conn, "credential.refreshed", subject_id=cred_id, data={"service": service, "name": row["name"]})
    return True


def _secrets_changed(conn: Conn, row: sqlite3.Row, answered: bool = False) -> bool:
    """True when the credential is gone, needs a reconnect or its sealed secrets differ from those in
    `row`. With `answered` (the provider's tokens are in hand), a credential that only awaits a
    reconnect because this very refresh was taken for interrupted (a holder that stalled past its
    lease, its successor refused) is not: the answer saved puts it back in order."""
    current = store.get_credential_sealed(conn, row["id"])
    if current is None:
        return True
    if current["status"] == "needs_reconnect" and not (answered and current["last_error"] == "refresh_interrupted"):
        return True
    return bytes(current["secret_blob"] or b"") != bytes(row["secret_blob"] or b"")
