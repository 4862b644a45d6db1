"""A small development set for operation search on documents nobody trained on (issue 29):
three public OpenAPI documents (tests/search_dev/: postmark, tvmaze, circleci; SOURCES.md in
tests/search_unseen/ says where they come from) and phrases for them, written on 2026-11-28 from
their operation lists before any ranking of them was run.

Unlike tests/search_unseen_labels.py (read to report, never to choose), this set is what
training settings are chosen on (bench/train_embeddings.py --dev): it is never trained on
either, and its providers are left out of the training documents (bench/train_documents.py).
A relevant operation is named by method and path, resolved to its opId in a workspace.

DEV_LABELS: [(phrase, (("METHOD", "/path"), ...), service)].
"""
from __future__ import annotations

from pathlib import Path

DEV_DIR = Path(__file__).resolve().parent / "search_dev"
DEV_SERVICES = ("postmark", "tvmaze", "circleci")
_P = "/project/{username}/{project}"

DEV_LABELS: list[tuple[str, tuple[tuple[str, str], ...], str]] = [
    ("send an email", (("POST", "/email"),), "postmark"),
    ("send lots of emails in one call", (("POST", "/email/batch"), ("POST", "/email/batchWithTemplates")), "postmark"),
    ("which emails bounced", (("GET", "/bounces"),), "postmark"),
    ("how many people opened my emails", (("GET", "/stats/outbound/opens"), ("GET", "/messages/outbound/opens")),
     "postmark"),
    ("spam complaints", (("GET", "/stats/outbound/spam"),), "postmark"),
    ("create an email template", (("POST", "/templates"),), "postmark"),
    ("who clicked links in my emails", (("GET", "/messages/outbound/clicks"), ("GET", "/stats/outbound/clicks")),
     "postmark"),
    ("reactivate a bounced address", (("PUT", "/bounces/{bounceid}/activate"),), "postmark"),
    ("search sent messages", (("GET", "/messages/outbound"),), "postmark"),
    ("retry a failed incoming email", (("PUT", "/messages/inbound/{messageid}/retry"),), "postmark"),
    ("block emails from a sender", (("POST", "/triggers/inboundrules"),), "postmark"),
    ("change mail server settings", (("PUT", "/server"),), "postmark"),
    ("follow a tv show", (("PUT", "/user/follows/shows/{show_id}"),), "tvmaze"),
    ("shows i follow", (("GET", "/user/follows/shows"),), "tvmaze"),
    ("mark an episode as watched", (("PUT", "/user/episodes/{episode_id}"),), "tvmaze"),
    ("upvote a show", (("PUT", "/user/votes/shows/{show_id}"),), "tvmaze"),
    ("stop following an actor", (("DELETE", "/user/follows/people/{person_id}"),), "tvmaze"),
    ("tag a show", (("PUT", "/user/tags/{tag_id}/shows/{show_id}"),), "tvmaze"),
    ("which episodes have i seen", (("GET", "/user/episodes"),), "tvmaze"),
    ("follow a tv network", (("PUT", "/user/follows/networks/{network_id}"),), "tvmaze"),
    ("rename a tag", (("PATCH", "/user/tags/{tag_id}"),), "tvmaze"),
    ("remove my vote for an episode", (("DELETE", "/user/votes/episodes/{episode_id}"),), "tvmaze"),
    ("trigger a build", (("POST", _P), ("POST", _P + "/tree/{branch}")), "circleci"),
    ("rerun a failed build", (("POST", _P + "/{build_num}/retry"),), "circleci"),
    ("cancel a running build", (("POST", _P + "/{build_num}/cancel"),), "circleci"),
    ("add an environment variable to a project", (("POST", _P + "/envvar"),), "circleci"),
    ("clear the build cache", (("DELETE", _P + "/build-cache"),), "circleci"),
    ("download build artifacts", (("GET", _P + "/{build_num}/artifacts"),), "circleci"),
    ("test results of a build", (("GET", _P + "/{build_num}/tests"),), "circleci"),
    ("recent builds", (("GET", "/recent-builds"), ("GET", _P)), "circleci"),
    ("who am i on circleci", (("GET", "/me"),), "circleci"),
    ("add a deploy key", (("POST", _P + "/checkout-key"), ("POST", _P + "/ssh-key")), "circleci"),
]


def dev_files() -> list[tuple[str, Path]]:
    return [(service, DEV_DIR / f"{service}.yaml") for service in DEV_SERVICES]


def resolved(conn) -> list[tuple[str, frozenset[str], str]]:
    """DEV_LABELS with opIds, from the operations table of a workspace that imported dev_files()."""
    where: dict[tuple[str, str, str], str] = {}
    for op_id, service, method, path in conn.execute("SELECT op_id, service, method, path FROM operations"):
        where[(service, (method or "").upper(), path or "")] = op_id
    out = []
    for phrase, refs, service in DEV_LABELS:
        ops = frozenset(where[(service, m, p)] for m, p in refs)
        out.append((phrase, ops, service))
    return out
