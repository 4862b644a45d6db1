"""A labelled set for operation search over the shared OpenAPI documents (../shared/data/openapi/).

Each phrase is worded the way a user would ask for a capability, not copied from an
operation's summary; `relevant` is every opId that answers it. Services are the documents'
file stems, imported with `--service <stem>`, so opIds read `<stem>.<kebab operationId>`.

The split was fixed mechanically when the set was written, before any ranking work: every
third phrase (index % 3 == 2) is `holdout`, the rest `dev`. Tuning looked at `dev` only, so
the holdout figures say how well the ranking generalises to phrasings it was not tuned on.

One label was widened after a ranking showed it incomplete: "cancel a customer's subscription"
also accepts stripe's DELETE /v1/customers/{customer}/subscriptions/{id}, whose description is
"Cancels a customer's subscription".
"""
from __future__ import annotations

import os
from pathlib import Path


def _openapi_dir() -> Path:
    """WSCTL_OPENAPI_DIR, else ../shared/data/openapi next to the checkout, else /work/shared/..."""
    candidates = [Path(os.environ["WSCTL_OPENAPI_DIR"])] if os.environ.get("WSCTL_OPENAPI_DIR") else []
    candidates += [Path(__file__).resolve().parents[2] / "shared" / "data" / "openapi",
                   Path("/work/shared/data/openapi")]
    return next((p for p in candidates if p.is_dir()), candidates[0])


OPENAPI_DIR = _openapi_dir()
SERVICES = ("asana", "box", "discord", "github", "intercom", "openai", "sendgrid", "slack",
            "spotify", "square", "stripe", "twilio")

_PHRASES: list[tuple[str, tuple[str, ...]]] = [
    ("send a text message to a phone", ("twilio.create-message",)),
    ("refund a payment", ("stripe.post-refunds", "stripe.post-charges-charge-refunds",
                          "stripe.post-charges-charge-refund", "square.refund-payment")),
    ("post a message in a slack channel", ("slack.chat-post-message",)),
    ("open a new issue on a github repo", ("github.issues-create",)),
    ("charge a customer's credit card", ("stripe.post-charges", "stripe.post-payment-intents",
                                         "square.create-payment")),
    ("send an email to a customer", ("sendgrid.post-mail-send",)),
    ("turn an audio recording into text", ("openai.create-transcription",)),
    ("generate a picture from a text prompt", ("openai.create-image",)),
    ("add a song to my playlist", ("spotify.add-items-to-playlist", "spotify.add-tracks-to-playlist")),
    ("who am I logged in as on github", ("github.users-get-authenticated",)),
    ("upload a document to box", ("box.post-files-content",)),
    ("make a new task in asana", ("asana.create-task",)),
    ("cancel a customer's subscription", ("stripe.delete-subscriptions-subscription-exposed-id",
                                          "stripe.delete-customers-customer-subscriptions-subscription-exposed-id",
                                          "square.cancel-subscription")),
    ("show all the repositories I own", ("github.repos-list-for-authenticated-user",)),
    ("kick a user out of a discord server", ("discord.delete-guild-member", "discord.ban-user-from-guild")),
    ("remove a message from a discord channel", ("discord.delete-message",)),
    ("answer a customer conversation in intercom", ("intercom.reply-conversation",)),
    ("invite someone to a slack channel", ("slack.conversations-invite", "slack.admin-conversations-invite")),
    ("place an outbound phone call", ("twilio.create-call",)),
    ("get an embedding vector for a sentence", ("openai.create-embedding",)),
    ("add a new customer", ("stripe.post-customers", "square.create-customer", "intercom.create-contact")),
    ("never email this address again", ("sendgrid.post-asm-suppressions-global",)),
    ("merge a pull request", ("github.pulls-merge",)),
    ("star a repository on github", ("github.activity-star-repo-for-authenticated-user",)),
    ("fork someone's repo", ("github.repos-create-fork",)),
    ("find songs by an artist on spotify", ("spotify.search", "spotify.get-an-artists-top-tracks")),
    ("follow an artist", ("spotify.follow-artists-users",)),
    ("bill a customer with an invoice", ("stripe.post-invoices", "square.create-invoice")),
    ("how much money is in my stripe account", ("stripe.get-balance",)),
    ("adjust stock levels of items", ("square.batch-change-inventory",)),
    ("share a folder with a coworker", ("box.post-collaborations",)),
    ("download a file from box", ("box.get-files-id-content",)),
    ("check whether a text is offensive or harmful", ("openai.create-moderation",)),
    ("react with an emoji to a slack message", ("slack.reactions-add",)),
    ("change the topic of a slack channel", ("slack.conversations-set-topic",)),
    ("archive a channel", ("slack.conversations-archive", "slack.admin-conversations-archive")),
    ("leave a comment on an asana task", ("asana.create-story-for-task",)),
    ("list all projects in my asana workspace", ("asana.get-projects-for-workspace", "asana.get-projects")),
    ("put a tag on a contact", ("intercom.attach-tag-to-contact",)),
    ("ask gpt a question", ("openai.create-chat-completion", "openai.create-response")),
    ("buy a new phone number", ("twilio.create-incoming-phone-number",)),
    ("set up a webhook for a discord channel", ("discord.create-webhook",)),
    ("pause the music", ("spotify.pause-a-users-playback",)),
    ("skip to the next song", ("spotify.skip-users-playback-to-next-track",)),
    ("list recent payments", ("stripe.get-charges", "stripe.get-payment-intents", "square.list-payments")),
    ("create a discount coupon", ("stripe.post-coupons",)),
    ("send a direct message to a discord user", ("discord.create-dm", "discord.create-message")),
    ("assign a github issue to someone", ("github.issues-add-assignees",)),
    ("list everyone in our slack workspace", ("slack.users-list", "slack.admin-users-list")),
    ("find a slack user by their email address", ("slack.users-lookup-by-email",)),
    ("make an email template", ("sendgrid.post-templates",)),
    ("delete a file in box", ("box.delete-files-id",)),
    ("fine-tune a model on my own data", ("openai.create-fine-tuning-job",)),
    ("create a folder", ("box.post-folders",)),
    ("add a person to an asana team", ("asana.add-user-for-team",)),
    ("close a support conversation", ("intercom.manage-conversation",)),
    ("publish a new release of my project on github", ("github.repos-create-release",)),
    ("kick off a github actions workflow", ("github.actions-create-workflow-dispatch",)),
    ("read some text aloud as speech", ("openai.create-speech",)),
    ("mark an asana task as done", ("asana.update-task",)),
]

# (phrase, relevant opIds, split)
LABELS: list[tuple[str, frozenset[str], str]] = [
    (phrase, frozenset(ops), "holdout" if i % 3 == 2 else "dev") for i, (phrase, ops) in enumerate(_PHRASES)
]


def all_label_op_ids() -> set[str]:
    return {op for _, ops, _ in LABELS for op in ops}


def openapi_files() -> list[tuple[str, Path]]:
    """(service, path) for every shared document, in a fixed order."""
    out = []
    for service in SERVICES:
        matches = sorted(OPENAPI_DIR.glob(f"{service}.*"))
        if matches:
            out.append((service, matches[0]))
    return out


def drop_other_services(conn) -> None:
    """Remove every service that is not one of the shared documents (the built-in catalog)."""
    from workspacectl.engine.catalog import services as catalog_services

    for (service,) in conn.execute("SELECT service FROM integrations").fetchall():
        if service not in SERVICES:
            catalog_services.delete_service(conn, service)


def import_shared_corpus_through_the_route(ws) -> dict[str, tuple[int, dict]]:
    """Import every shared document through POST /v1/admin/catalog as the owner, as
    `wsctl catalog import FILE --service <stem>` does locally, then drop the other services.
    Answers {file name: (status, answer body)}."""
    from workspacectl.engine.dispatch import Engine
    from workspacectl.engine.registry import Caller
    from workspacectl.engine.store import identity

    engine = Engine(ws)
    owner = identity.first_owner(ws.conn())
    caller = Caller(owner["id"], "owner", "session", "local")
    answers = {}
    for service, path in openapi_files():
        resp = engine.call(caller, "POST", "/v1/admin/catalog", body={
            "content": path.read_text(encoding="utf-8"), "service": service, "filename": path.name})
        answers[path.name] = (resp.status, resp.body)
    drop_other_services(ws.conn())
    return answers


def make_corpus_workspace(path: Path, answers: dict | None = None):
    """A workspace at `path` holding exactly the shared corpus: made and imported (through the
    admin route; each document's answer put in `answers`) when new; when it exists, opened
    (which may load newer built-in services) and trimmed again."""
    from workspacectl.engine.workspaces import workspace_type

    kind = workspace_type(path)   # a folder, or a postgresql:// URL (bench/pg_search.py)
    if kind.exists_at(path):
        ws = kind.open(path)
        drop_other_services(ws.conn())
        return ws
    ws, _ = kind.create(path, name="Search corpus", owner_name="Olive Owner", owner_email="olive@example.com")
    got = import_shared_corpus_through_the_route(ws)
    if answers is not None:
        answers.update(got)
    return ws


def recall_at(ranked: list[str], relevant: frozenset[str], k: int) -> float:
    """1.0 when any relevant opId is in the first k results (a phrase is answered by one hit)."""
    return 1.0 if any(op in relevant for op in ranked[:k]) else 0.0


def reciprocal_rank(ranked: list[str], relevant: frozenset[str], k: int = 10) -> float:
    for i, op in enumerate(ranked[:k]):
        if op in relevant:
            return 1.0 / (i + 1)
    return 0.0


def evaluate(search_fn, labels=None) -> dict:
    """search_fn(phrase) -> ranked opIds. Answers recall@1, recall@5, MRR@10 and the misses."""
    labels = LABELS if labels is None else labels
    r1 = r5 = mrr = 0.0
    misses = []
    for phrase, relevant, _ in labels:
        ranked = list(search_fn(phrase))
        r1 += recall_at(ranked, relevant, 1)
        r5 += recall_at(ranked, relevant, 5)
        mrr += reciprocal_rank(ranked, relevant, 10)
        if not recall_at(ranked, relevant, 5):
            misses.append((phrase, ranked[:5]))
    n = max(len(labels), 1)
    return {"n": len(labels), "recall@1": r1 / n, "recall@5": r5 / n, "mrr@10": mrr / n, "misses": misses}
