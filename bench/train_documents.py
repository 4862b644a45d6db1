"""The public API documents operation search's vectors are trained on besides the 12 shared ones
(issue 29: learn APIs, not these APIs), imported into one workspace that
bench/train_embeddings.py --documents reads.

    python bench/train_documents.py --collection GIT_DIR --out WORKSPACE [--list bench/train_documents.txt]
    python bench/train_documents.py --collection GIT_DIR --make-list   # writes the list (see below)

The documents come from a public collection of API descriptions in the openapi-directory layout
(`APIs/<provider>/[<service>/]<version>/{openapi,swagger}.{yaml,json}`), read from a git copy of
it (GIT_DIR) at the commit named in the list's first line, so the same list gives the same
documents. Each is imported as `wsctl catalog import` imports a document (the admin route, the
same importer, service = its provider and service folder in kebab case); a document the importer
refuses is skipped and counted. Nothing here is shipped: the workspace is only training data.

--make-list chooses the documents mechanically: every provider's latest version of each of its
services, at most PER_PROVIDER services of one provider (the three cloud providers hold most of
the collection) and files of at most MAX_BYTES, leaving out HELD_OUT (the five providers whose
documents measure search, tests/search_unseen/: never trained on, in any version), DEV (the
three of tests/search_dev/, on which settings are chosen) and the
providers of the 12 shared documents (already in training, as the copies of ../shared/data).
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))

LIST = ROOT / "bench" / "train_documents.txt"
HELD_OUT = ("youneedabudget.com", "launchdarkly.com", "netlify.com", "zoom.us", "linode.com")
# the development documents settings are chosen on (tests/search_dev_labels.py): never trained on
DEV = ("postmarkapp.com", "tvmaze.com", "circleci.com")
SHARED = ("github.com", "slack.com", "stripe.com", "twilio.com", "squareup.com", "spotify.com", "sendgrid.com",
          "box.com", "discord.com", "asana.com", "openai.com", "intercom.io")
PER_PROVIDER = 40
MAX_BYTES = 1_500_000


def git(collection: Path, *args: str) -> bytes:
    return subprocess.run(["git", "--git-dir", str(collection), *args], check=True, capture_output=True).stdout


def make_list(collection: Path) -> list[str]:
    commit = git(collection, "rev-parse", "HEAD").decode().strip()
    latest: dict[tuple[str, str], tuple[str, str]] = {}
    for line in git(collection, "ls-tree", "-r", "-l", "HEAD", "APIs").decode().splitlines():
        meta, path = line.split("\t", 1)
        size = meta.split()[3]
        parts = path.split("/")
        if len(parts) < 4 or parts[-1] not in ("openapi.yaml", "swagger.yaml", "openapi.json", "swagger.json"):
            continue
        provider, service, version = parts[1], "/".join(parts[2:-2]), parts[-2]
        if provider in HELD_OUT or provider in DEV or provider in SHARED or not size.isdigit() or int(size) > MAX_BYTES:
            continue
        key = (provider, service)
        if key not in latest or version > latest[key][0]:
            latest[key] = (version, path)
    chosen: list[str] = []
    per: dict[str, int] = {}
    for (provider, _), (_, path) in sorted(latest.items()):
        if per.get(provider, 0) < PER_PROVIDER:
            per[provider] = per.get(provider, 0) + 1
            chosen.append(path)
    return [f"# commit {commit}", *chosen]


def service_name(path: str) -> str:
    from workspacectl.engine.catalog.definition_values import kebab

    parts = path.split("/")
    name = kebab(" ".join([parts[1].rsplit(".", 1)[0], *parts[2:-2]]))
    return name[:60].strip("-") or "doc"


def listed_services(listed: list[str]) -> list[str]:
    """The service name each listed document is imported under (the list's order)."""
    seen: set[str] = set()
    out = []
    for path in listed:
        if path.startswith("#") or not path.strip():
            continue
        service = service_name(path)
        while service in seen:
            service = f"{service[:56]}-{len(seen) % 1000}"
        seen.add(service)
        out.append(service)
    return out


def build(collection: Path, listed: list[str], out: Path) -> None:
    from workspacectl.engine.catalog import services as catalog_services
    from workspacectl.engine.dispatch import Engine
    from workspacectl.engine.registry import Caller
    from workspacectl.engine.store import identity
    from workspacectl.engine.workspaces import workspace_type
    from workspacectl.errors import ApiError

    kind = workspace_type(out)
    if kind.exists_at(out):     # resume: documents already imported are kept
        ws = kind.open(out)
    else:
        ws, _ = kind.create(out, name="Training documents", owner_name="Olive Owner", owner_email="olive@example.com")
        for (service,) in ws.conn().execute("SELECT service FROM integrations").fetchall():
            catalog_services.delete_service(ws.conn(), service)
    have = {r[0] for r in ws.conn().execute("SELECT service FROM integrations")}
    engine = Engine(ws)
    owner = identity.first_owner(ws.conn())
    caller = Caller(owner["id"], "owner", "session", "local")
    commit = listed[0].split()[-1]
    done = refused = 0
    t0 = time.perf_counter()
    for path, service in zip(listed[1:], listed_services(listed[1:])):
        if service in have:
            done += 1
            continue
        content = git(collection, "show", f"{commit}:{path}").decode("utf-8", "replace")
        try:
            resp = engine.call(caller, "POST", "/v1/admin/catalog", body={
                "content": content, "service": service, "filename": path.rsplit("/", 1)[-1]})
            ok = resp.status < 300
        except ApiError:
            ok = False
        done += ok
        refused += not ok
    n = ws.conn().execute("SELECT count(*) FROM operations").fetchone()[0]
    print(f"{done} documents imported ({refused} refused), {n} operations, {time.perf_counter() - t0:.0f} s",
          file=sys.stderr)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--collection", type=Path, required=True, help="git directory of the collection")
    ap.add_argument("--list", type=Path, default=LIST)
    ap.add_argument("--make-list", action="store_true", help="choose the documents and write --list")
    ap.add_argument("--out", type=Path, help="workspace to create and import the listed documents into")
    args = ap.parse_args()
    if args.make_list:
        lines = make_list(args.collection)
        args.list.write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(f"{len(lines) - 1} documents listed in {args.list}", file=sys.stderr)
    if args.out:
        listed = [ln for ln in args.list.read_text(encoding="utf-8").splitlines() if ln.strip()]
        build(args.collection, listed, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
