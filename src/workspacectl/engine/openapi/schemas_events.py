"""/v1/openapi.json: the event feed and webhook subscriptions (engine/events/), merged by schemas.py."""
from __future__ import annotations

from workspacectl.engine.events.delivery import MAX_ATTEMPTS
from workspacectl.engine.events.feed import MAX_FILTERS
from workspacectl.engine.events.record import EVENT_TYPES
from workspacectl.engine.events.webhooks import MAX_TYPES, MAX_URL
from workspacectl.engine.openapi.blocks import INT, PAGE, STR, TIME, array, nullable, obj, page_of, query, ref, text

_EVENT = obj({"id": STR, "type": text(enum=list(EVENT_TYPES)), "timestamp": TIME,
              "actorId": nullable(text(description="The member who acted; null for the server's own work.")),
              "subjectId": nullable(STR),
              "data": {"type": "object", "description": "Names, ids, counts and reasons; never a secret."}},
             required="all")
_WEBHOOK = {"id": STR, "url": STR, "events": array(STR), "createdBy": STR, "createdAt": TIME}

COMPONENTS: dict[str, dict] = {
    "Event": _EVENT,
    "Webhook": obj(_WEBHOOK, required="all"),
    "WebhookDelivery": obj({
        "id": text(description="The webhook-id header of every attempt."), "webhookId": STR, "eventId": STR,
        "eventType": STR, "status": text(enum=["pending", "delivered", "failed"]),
        "attempts": {"type": "integer", "minimum": 0, "maximum": MAX_ATTEMPTS},
        "lastAttemptAt": nullable(TIME), "lastStatus": nullable(INT), "lastError": nullable(STR),
        "nextAttemptAt": nullable(TIME), "deliveredAt": nullable(TIME), "createdAt": TIME}, required="all"),
}

_FEED_QUERY = [
    query("type", STR, f"Comma-separated event types or families (credential.*), at most {MAX_FILTERS}."),
    query("subject", STR, f"Comma-separated subject ids, at most {MAX_FILTERS}."),
    query("order", text(enum=["asc", "desc"]), "asc: oldest first (default; follow with `cursor`), desc: newest first."),
    *PAGE,
]

ROUTE_DOCS: dict[tuple[str, str], dict] = {
    ("GET", "/v1/events"): {"query": _FEED_QUERY, "responses": {200: obj({
        "events": array(ref("Event")), "nextCursor": nullable(STR),
        "cursor": text(description="Where a follower resumes, oldest first: pass it as `cursor` later.")},
        required="all")}},
    ("POST", "/v1/webhooks"): {
        "body": obj({"url": text(1, MAX_URL, description="http(s); no link-local or cloud metadata address."),
                     "events": array(STR, minItems=1, maxItems=MAX_TYPES,
                                     description='Event types, families (credential.*) or ["*"] (the default).')},
                    required=["url"]),
        "responses": {201: obj({**_WEBHOOK, "secret": text(pattern="^whsec_", description="Shown once.")},
                               required="all")}},
    ("GET", "/v1/webhooks"): {"query": PAGE, "responses": {200: page_of("webhooks", ref("Webhook"))}},
    ("GET", "/v1/webhooks/{id}"): {"responses": {200: ref("Webhook")}},
    ("DELETE", "/v1/webhooks/{id}"): {"responses": {204: None}},
    ("POST", "/v1/webhooks/{id}/test"): {"body": obj({}, description="Empty; no fields."), "body_required": False,
                                         "responses": {200: ref("WebhookDelivery")}},
    ("POST", "/v1/webhooks/deliver"): {
        "body": obj({}, description="Empty; no fields."), "body_required": False,
        "responses": {200: obj({"delivered": INT, "pending": INT, "failed": INT}, required="all",
                               description="Attempts made by this request, by the status each left.")}},
    ("GET", "/v1/webhooks/{id}/deliveries"): {"query": PAGE,
                                              "responses": {200: page_of("deliveries", ref("WebhookDelivery"))}},
}
