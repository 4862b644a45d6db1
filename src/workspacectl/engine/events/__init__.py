"""Events and webhooks (issue 30): what happened in the workspace, as a feed and as signed HTTP calls.

    record.py    record_event(conn, type, ...): one row, written inside the change's own transaction,
                 fanned out to a delivery row per matching subscription (the wings call this)
    feed.py      GET /v1/events: the cursor-paged feed
    webhooks.py  /v1/webhooks: subscriptions, their test call and delivery log
    delivery.py  claiming due deliveries with a lease, sending them signed, retrying with back-off
    signing.py   Standard Webhooks signatures (webhook-id, webhook-timestamp, webhook-signature)
"""
