"""Webhook subscriptions (owner or admin session): add, list, show, remove, test, delivery log.

    POST   /v1/webhooks {url, events}       -> 201 {id, url, events, secret, createdBy, createdAt}
    GET    /v1/webhooks                     -> {webhooks: [...], nextCursor}
    GET    /v1/webhooks/{id}                -> the subscription (never its secret)
    DELETE /v1/webhooks/{id}                -> 204, its pending deliveries and log with it
    POST   /v1/webhooks/{id}/test           -> a webhook.test event delivered to it now: the delivery
    POST   /v1/webhooks/deliver             -> the due deliveries sent now, from this process (the local
                                               backend sends nothing by itself): counts by outcome
    GET    /v1/webhooks/{id}/deliveries     -> {deliveries: [...], nextCursor}, newest first

`events` lists event types (record.EVENT_TYPES), families (`credential.*`) or `*` for all. The
signing secret (`whsec_…`, Standard Webhooks) is answered once, at creation, and kept sealed like
every other secret. The URL follows the outbound rules of catalog URLs (engine/catalog/urls.py:
no link-local or cloud metadata address; checked again, resolved, at every attempt).
"""
from __future__ import annotations

import json
import sqlite3
from urllib.parse import urlsplit

from workspacectl import clock
from workspacectl.engine import crypto, pagination
from workspacectl.engine import validate as v
from workspacectl.engine.catalog.urls import import_refusal
from workspacectl.engine.db import transaction
from workspacectl.engine.events import delivery
from workspacectl.engine.events.feed import FAMILIES
from workspacectl.engine.events.record import EVENT_TYPES, record_event
from workspacectl.engine.events.signing import new_secret
from workspacectl.engine.ids import new_id
from workspacectl.engine.leases import new_holder
from workspacectl.engine.registry import Ctx, Response, route
from workspacectl.engine.schema_blocks import INT, PAGE, STR, TIME, array, obj, page_of, ref, text
from workspacectl.engine.scopes import SESSION
from workspacectl.engine.store import events as store
from workspacectl.errors import ApiError

MAX_URL = 2000
MAX_TYPES = 50
# A subscription as every answer shows it (without its secret; POST adds the secret once).
WEBHOOK_FIELDS = {"id": STR, "url": STR, "events": array(STR), "createdBy": STR, "createdAt": TIME}


def _require_admin(ctx: Ctx) -> None:
    if not ctx.caller.is_admin:
        raise ApiError("forbidden", "Only a workspace owner or admin may manage webhooks. "
                                    "Ask one of them (`wsctl members list` shows who) to do it, or to make you an admin.")


def _webhook_json(row: sqlite3.Row) -> dict:
    try:
        events = json.loads(row["events_json"])
    except ValueError:
        events = []
    return {"id": row["id"], "url": row["url"], "events": events, "createdBy": row["created_by"],
            "createdAt": row["created_at"]}


def _own(ctx: Ctx) -> sqlite3.Row:
    _require_admin(ctx)
    row = store.get_webhook(ctx.db, ctx.params["id"])
    if row is None:
        raise ApiError("not_found", f"No webhook '{ctx.params['id'][:100]}'. Run `wsctl webhooks list`.")
    return row


def check_url(url: str) -> str:
    try:
        parts = urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018 (a port that is not a number raises here)
    except ValueError:
        raise v.bad("'url' is not a valid URL; give an http(s) URL such as https://hooks.example.com/wsctl.") from None
    if parts.scheme not in ("http", "https") or not host:
        raise v.bad("'url' must be an http(s) URL with a host, such as https://hooks.example.com/wsctl.")
    why = import_refusal(url)
    if why:
        raise v.bad(f"'url' is refused: {why}. Webhooks may not call link-local or cloud metadata addresses.")
    return url


def check_types(types: list[str]) -> list[str]:
    if not types:
        raise v.bad('\'events\' lists at least one event type, or ["*"] for all.')
    for t in types:
        if t != "*" and t not in EVENT_TYPES and not (t.endswith(".*") and t[:-2] in FAMILIES):
            raise v.bad(f"Unknown event type '{t[:100]}'. Types: {', '.join(EVENT_TYPES)}; a family such as "
                        "credential.*; or * for all.")
    return list(dict.fromkeys(types))


@route("POST", "/v1/webhooks", scope=SESSION,
       body=obj({"url": text(1, MAX_URL, description="http(s); no link-local or cloud metadata address."),
                 "events": array(STR, minItems=1, maxItems=MAX_TYPES,
                                 description='Event types, families (credential.*) or ["*"] (the default).')},
                required=["url"]),
       responses={201: obj({**WEBHOOK_FIELDS, "secret": text(pattern="^whsec_", description="Shown once.")},
                           required="all")},
       summary="Subscribe a URL to events; the signing secret (whsec_) is shown once.")
def create_webhook(ctx: Ctx) -> Response:
    _require_admin(ctx)
    body = v.body_dict(ctx, allow_empty=False)
    url = check_url(v.string(body, "url", max_len=MAX_URL))
    types = check_types(v.string_list(body, "events", max_items=MAX_TYPES) if "events" in body else ["*"])
    webhook_id = new_id("wh")
    secret = new_secret()
    sealed = crypto.seal(ctx.ws, delivery.secret_aad(webhook_id), secret.encode())
    with transaction(ctx.db):
        store.insert_webhook(ctx.db, webhook_id=webhook_id, url=url, events=types, secret_sealed=sealed,
                             created_by=ctx.caller.member_id, now=clock.now_iso())
        row = store.get_webhook(ctx.db, webhook_id)
    return Response(201, {**_webhook_json(row), "secret": secret})


@route("GET", "/v1/webhooks", scope=SESSION,
       query=PAGE,
       responses={200: page_of("webhooks", ref("Webhook"))},
       summary="List webhook subscriptions (owner or admin).")
def list_webhooks(ctx: Ctx) -> dict:
    _require_admin(ctx)
    limit, after = pagination.page_args(ctx, str)
    rows = store.list_webhooks(ctx.db, after, limit + 1)
    return pagination.page("webhooks", rows, limit, lambda r: r["id"], _webhook_json)


@route("GET", "/v1/webhooks/{id}", scope=SESSION,
       responses={200: ref("Webhook")},
       summary="One webhook subscription, without its secret.")
def get_webhook(ctx: Ctx) -> dict:
    return _webhook_json(_own(ctx))


@route("DELETE", "/v1/webhooks/{id}", scope=SESSION,
       responses={204: None},
       summary="Remove a webhook subscription and its delivery log.")
def delete_webhook(ctx: Ctx) -> Response:
    row = _own(ctx)
    with transaction(ctx.db):
        store.delete_webhook(ctx.db, row["id"])
    return Response(204)


@route("POST", "/v1/webhooks/{id}/test", scope=SESSION,
       body=obj({}, description="Empty; no fields."),
       body_required=False,
       responses={200: ref("WebhookDelivery")},
       summary="Send a signed webhook.test event to the subscription now.")
def test_webhook(ctx: Ctx) -> dict:
    """A webhook.test event, delivered to this subscription alone, attempted now in this request
    (on every door: the local backend too). A failed attempt stays pending and is retried like any."""
    row = _own(ctx)
    with transaction(ctx.db):
        event_id = record_event(ctx.db, "webhook.test", subject_id=row["id"], actor_id=ctx.caller.member_id,
                                data={"webhookId": row["id"]}, only_webhook=row["id"])
        seq = store.delivery_seq(ctx.db, row["id"], event_id)
    assert seq is not None
    holder = new_holder()
    if delivery.claim(ctx.db, holder, seqs=[seq]):
        delivery.send(ctx.ws, seq, holder)
    found = store.get_delivery(ctx.db, store.delivery_id_of(ctx.db, seq))
    return delivery.delivery_json(found)


@route("GET", "/v1/webhooks/{id}/deliveries", scope=SESSION,
       query=PAGE,
       responses={200: page_of("deliveries", ref("WebhookDelivery"))},
       summary="A subscription's delivery log, newest first.")
def list_deliveries(ctx: Ctx) -> dict:
    row = _own(ctx)
    limit, before = pagination.page_args(ctx, int)
    rows = store.list_deliveries(ctx.db, row["id"], before, limit + 1)
    return pagination.page("deliveries", rows, limit, lambda r: r["seq"], delivery.delivery_json)


MAX_DELIVER = 200   # POST /v1/webhooks/deliver sends at most this many in one request


@route("POST", "/v1/webhooks/deliver", scope=SESSION,
       body=obj({}, description="Empty; no fields."),
       body_required=False,
       responses={200: obj({"delivered": INT, "pending": INT, "failed": INT}, required="all",
                           description="Attempts made by this request, by the status each left.")},
       summary="Send every due webhook delivery now, from this request (owner or admin).")
def deliver_now(ctx: Ctx) -> dict:
    """Send the due deliveries now, in this request (at most MAX_DELIVER), as a server's sender
    thread would: what a workspace with no `wsctl serve` runs (`wsctl webhooks deliver`, from cron)."""
    _require_admin(ctx)
    outcomes: dict[str, int] = {}
    holder, due = new_holder(), 0
    while due < MAX_DELIVER:
        found = delivery.deliver_due(ctx.ws, holder, min(delivery.BATCH, MAX_DELIVER - due), outcomes)
        due += found
        if found < delivery.BATCH:
            break
    return {"delivered": outcomes.get("delivered", 0), "pending": outcomes.get("pending", 0),
            "failed": outcomes.get("failed", 0)}
