"""Written tuning phrases for operation search: three for every operation of the 12 shared documents.

The phrases live in tests/search_phrases/<service>.tsv, one a line: `phrase<TAB>opId[,opId...]`.
How they were made (doc2query by hand, 2026-11-26): for each operation of a document, from its
method, path, summary and the start of its description only, phrases written the way people
type into a search box (short, lower case, often vague, about one in six with a slip, about one
in three naming the service), never copying the summary; siblings that answer as well are listed
beside the operation. Two passes first (one plainer, one vaguer), then a third after the next
line `# third pass` of each file: the goal in everyday words, by someone who does not know the
API's vocabulary, differing from the first two. The writers never saw tests/search_holdout.py
nor any ranking. Every operation was phrased (none chosen by the holdout), so the holdout's
operations have written phrases like all others; its phrases are not among them (the few written
word for word alike were dropped; tests/catalog/test_search.py checks).

Tuning data: the vectors (bench/train_embeddings.py) and the re-rank (bench/train_rerank.py)
are fitted on them. Two ways to cut them into folds:
- by service group (SERVICE_FOLD, the default): a fold's model has seen no written phrase of
  that fold's documents, so cross-validation over them, and the holdout ranked with the model
  that left its phrase's document out, say what the phrases teach about a document nobody
  wrote phrases for;
- by phrase (by_phrase(): line i of the files in fold i % 5): an operation's phrases mostly
  fall in different folds, so a fold's model has seen the operation through another phrase,
  as the shipped model has seen every operation of these documents: the setting the holdout is
  read in (a new phrase for a phrased operation).
"""
from __future__ import annotations

from pathlib import Path

FOLDER = Path(__file__).resolve().parent / "search_phrases"

# Five groups of services of about 650-760 operations each.
SERVICE_FOLD = {
    "github": 0, "spotify": 0,
    "stripe": 1, "intercom": 1,
    "square": 2, "sendgrid": 2,
    "box": 3, "openai": 3, "slack": 3,
    "asana": 4, "discord": 4, "twilio": 4,
}


def read(folder: Path = FOLDER) -> list[tuple[str, frozenset[str], str]]:
    """(phrase, relevant opIds, fold) for every line of every service's file, in file order;
    a phrase written twice in one file keeps its first line."""
    out: list[tuple[str, frozenset[str], str]] = []
    seen: set[str] = set()
    for path in sorted(folder.glob("*.tsv")):
        fold = f"fold{SERVICE_FOLD[path.stem]}"
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip() or line.startswith("#"):
                continue
            phrase, _, ops = line.partition("\t")
            phrase = " ".join(phrase.split()).lower()
            rel = frozenset(op.strip() for op in ops.split(",") if op.strip())
            if phrase and rel and phrase not in seen:
                seen.add(phrase)
                out.append((phrase, rel, fold))
    return out


WRITTEN_LABELS: list[tuple[str, frozenset[str], str]] = read()


def by_phrase(labels=None) -> list[tuple[str, frozenset[str], str]]:
    """The written phrases with folds by phrase instead of by service group."""
    return [(p, rel, f"fold{i % 5}") for i, (p, rel, _) in enumerate(WRITTEN_LABELS if labels is None else labels)]
