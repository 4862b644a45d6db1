"""The whole words of the shared OpenAPI documents that the MiniLM vocabulary can only cut into
pieces ("refund", "repo", "stargazers"), most frequent first, for bench/distil_embeddings.py
--words (model2vec's vocabulary extension: such a word gets its own vector, the model's reading
of the whole word, instead of the mean of its pieces').

    python bench/catalog_words.py OUT [--min-count 3] [--workspace DIR]

Counts the words (engine/catalog/search_text.words, accents folded) of every operation's name,
summary, description, path, tags and parameter names over the 12 documents; keeps the alphabetic
ones of 3-30 letters seen at least --min-count times that are not a whole token already.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))

from tests.search_labels import make_corpus_workspace  # noqa: E402
from workspacectl.engine.catalog import embedding  # noqa: E402
from workspacectl.engine.catalog.search_text import clean, words  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--min-count", type=int, default=3)
    ap.add_argument("--workspace", help="reuse a workspace made by an earlier run (with the corpus imported)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="wsctl-words-") as tmp:
        ws = make_corpus_workspace(Path(args.workspace) if args.workspace else Path(tmp) / "ws")
        conn = ws.conn()
        counts: Counter[str] = Counter()
        for row in conn.execute("SELECT name, summary, description, path, tags, params_json FROM operations"):
            params = " ".join(str(p.get("name", "")) for p in json.loads(row[5] or "[]") if isinstance(p, dict))
            text = " ".join([row[0] or "", row[1] or "", clean(row[2] or ""), row[3] or "", row[4] or "", params])
            counts.update(embedding._fold(w) for w in words(text))
        conn.close()
    keep = [w for w, n in counts.most_common()
            if n >= args.min_count and w.isascii() and w.isalpha() and 3 <= len(w) <= 30 and not embedding.is_word(w)]
    args.out.write_text("\n".join(keep) + "\n", encoding="utf-8")
    print(f"{len(keep)} words written to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
