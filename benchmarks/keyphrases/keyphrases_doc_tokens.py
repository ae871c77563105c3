"""How many tokens the keyphrase document pass reads: F1@5 and F1@10 on the non-test splits.

For each model of ``--models`` and each split (Inspec dev and train, restaurant reviews train),
one process finds the candidates once, encodes them once, and ranks them against document
vectors read at each of ``--tokens`` (every other setting the default). Test splits are never
read.

Usage::

    python benchmarks/keyphrases/keyphrases_doc_tokens.py --models minilm@fast,minilm \\
        --tokens 256,192
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common
from _common import bench_parser, cpu_name
from keyphrases_nested_dev import load_split

SPLITS = ("inspec-dev", "inspec-train", "restaurant-train")


def main() -> None:
    ap = bench_parser(__doc__)
    ap.add_argument("--models", default="minilm@fast,minilm")
    ap.add_argument("--tokens", default="256,192")
    args = ap.parse_args()
    from phrasekit.eval.keyphrases import score_keyphrases
    from phrasekit.phrases.keyphrases import KeyphraseExtractor
    from phrasekit.registry import as_encoder

    print(f"CPU: {cpu_name()}\n")
    print("| model | split | docs | doc tokens | F1@5 | F1@10 |\n|---|---|---:|---:|---:|---:|")
    for model in args.models.split(","):
        enc = as_encoder(model)
        for split in SPLITS:
            texts, golds = load_split(split)
            ex = KeyphraseExtractor(enc)
            cands = ex.find_candidates(texts)
            for tokens in (int(t) for t in args.tokens.split(",")):
                doc_vecs, cand_vecs = ex.set_params(doc_tokens=tokens).embed(cands)
                preds = [[p for p, _ in ex.rank(c, d, v)]
                         for c, d, v in zip(cands, doc_vecs, cand_vecs, strict=True)]
                m = score_keyphrases(preds, golds)
                print(f"| {model} ({enc.precision}) | {split} | {len(texts)} | {tokens} "
                      f"| {m['F1@5']:.2f} | {m['F1@10']:.2f} |", flush=True)


if __name__ == "__main__":
    main()
