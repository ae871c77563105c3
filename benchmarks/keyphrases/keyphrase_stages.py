"""Where `phrasekit keyphrases` spends its time: spaCy, the document pass, the phrase pass.

For each encoder of ``--models``, one process finds the candidates of the first ``--n-docs``
documents (spaCy in ``--workers`` forked workers while the encoder loads, as the command runs),
then encodes the documents and the corpus' distinct candidate strings, each timed alone, with
no vector cache. Prints one row per model: seconds per stage, the counts, and candidates per
document.

Usage::

    python benchmarks/keyphrases/keyphrase_stages.py --corpus bbc_news --n-docs 1000 \\
        --models minilm@auto,minilm@int8
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common
from _common import bench_parser, corpus_source, cpu_name


def main() -> None:
    ap = bench_parser(__doc__, corpus="bbc_news")
    ap.add_argument("--models", default="minilm@auto,minilm@int8")
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    from phrasekit.io import read_corpus
    from phrasekit.phrases.keyphrases import KeyphraseExtractor

    texts = [d.text for d in read_corpus(corpus_source(args.corpus))][: args.n_docs]
    print(f"CPU: {cpu_name()}; {len(texts)} documents of {args.corpus}\n")
    print("| model | precision, runtime | spaCy s | documents s | phrases s | documents "
          "| distinct candidates | candidates per document (mean / median) |")
    print("|---|---|---:|---:|---:|---:|---:|---|")
    for model in args.models.split(","):
        ext = KeyphraseExtractor(encoder=model, cache_dir=None, n_process=args.workers)
        t0 = time.perf_counter()
        cands = ext.find_candidates(texts, meanwhile=lambda ext=ext: ext.encoder_)
        t1 = time.perf_counter()
        enc = ext.encoder_
        phrases = sorted({p for c in cands for p in c.phrases})
        windows = [w for c in cands for w in c.windows]
        t2 = time.perf_counter()
        enc.encode(windows)
        t3 = time.perf_counter()
        enc.encode(phrases)
        t4 = time.perf_counter()
        per = [len(c) for c in cands]
        print(f"| {model} | {enc.precision}, {enc.backend} | {t1 - t0:.1f} | {t3 - t2:.1f} "
              f"| {t4 - t3:.1f} | {len(windows)} | {len(phrases):,} "
              f"| {np.mean(per):.0f} / {np.median(per):.0f} |", flush=True)


if __name__ == "__main__":
    main()
