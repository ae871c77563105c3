"""Batches grouped by token counts against batches grouped by characters.

An encoder sorts its texts by length so that a batch carries little padding. Characters are
a poor proxy for a subword tokenizer's length on short texts ("a.b.c.d.e.f" is 11 characters
and 13 tokens, "international organizations" 27 and 4), so transformer encoders group by
token counts. This times both groupings on the same texts: the keyphrase candidates of the
first ``--n-docs`` articles of ``--corpus`` (what ``phrasekit keyphrases`` encodes) and
those articles' first 256 tokens. One process, ``--rounds`` interleaved rounds, median;
texts/s, the speed-up, the padded tokens per real token, and the largest difference between
the two groupings' vectors.

    python benchmarks/speed/batch_grouping.py --corpus bbc_news --n-docs 300 \\
        --models minilm@fast,minilm,pearl-minilm
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common
from _common import bench_parser, corpus_source, cpu_name


def main() -> None:
    ap = bench_parser(__doc__, corpus="bbc_news")
    ap.add_argument("--models", default="minilm@fast,minilm,pearl-minilm")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only", choices=("candidates", "documents"), help="one set of texts")
    args = ap.parse_args()
    import phrasekit
    from phrasekit.encoders.base import Encoder
    from phrasekit.io import read_corpus
    from phrasekit.phrases.keyphrases import KeyphraseExtractor

    docs = [d.text for d in read_corpus(corpus_source(args.corpus))][: args.n_docs or 300]
    cands = sorted({p for c in KeyphraseExtractor().find_candidates(docs) for p in c.phrases})
    sets = {"candidates": cands, "documents": docs}
    if args.only:
        sets = {k: v for k, v in sets.items() if k == args.only}
    print(f"CPU: {cpu_name()}; {len(cands)} distinct candidates of {len(docs)} documents of "
          f"{args.corpus}; median of {args.rounds} rounds\n")
    print("| model | texts | by characters, texts/s | by tokens, texts/s | speed-up "
          "| padded / real tokens (characters → tokens) | max abs diff |")
    print("|---|---|---:|---:|---:|---|---:|")
    for name in args.models.split(","):
        enc = phrasekit.load(name)
        by_tokens = type(enc)._token_counts
        for label, texts in sets.items():
            enc.encode(texts[:64])  # warm-up (the session, the graph)
            times: dict[str, list[float]] = {"chars": [], "tokens": []}
            vecs: dict[str, np.ndarray] = {}
            ratios: dict[str, float] = {}
            for _ in range(args.rounds):
                for how in ("chars", "tokens"):
                    type(enc)._token_counts = by_tokens if how == "tokens" else (
                        Encoder._token_counts)
                    t0 = time.perf_counter()
                    vecs[how] = enc.encode(texts)
                    times[how].append(time.perf_counter() - t0)
                    ratios[how] = padded_ratio_of(enc, texts, by_tokens, how)
            type(enc)._token_counts = by_tokens
            a, b = (statistics.median(times[h]) for h in ("chars", "tokens"))
            diff = float(np.abs(vecs["chars"] - vecs["tokens"]).max())
            print(f"| {name} | {len(texts)} {label} | {len(texts) / a:.0f} | {len(texts) / b:.0f}"
                  f" | {a / b:.2f}x | {ratios['chars']:.2f} → {ratios['tokens']:.2f} "
                  f"| {diff:.1e} |", flush=True)


def padded_ratio_of(enc, texts: list[str], by_tokens, how: str) -> float:
    """Tokens the batches of grouping ``how`` compute (padding included) per real token."""
    from phrasekit.encoders.base import Encoder

    grouping = type(enc)._token_counts
    type(enc)._token_counts = by_tokens
    counts = enc._token_counts(texts)
    type(enc)._token_counts = grouping if how == "tokens" else Encoder._token_counts
    padded = sum(len(idx) * max(counts[i] for i in idx)
                 for idx in enc._batches(texts, None, "", False))
    type(enc)._token_counts = grouping
    return padded / max(1, sum(counts))


if __name__ == "__main__":
    main()
