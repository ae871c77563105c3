"""The keyphrase candidate step (spaCy in forked workers) with and without its speed settings.

Each run is a fresh process that loads spaCy and finds the candidates of the first ``--n-docs``
articles with ``--workers`` workers, as ``phrasekit keyphrases`` does. A variant switches off
one or more settings of the shipped code:

- ``batch64``: spaCy batches of 64 texts instead of ``SPACY_BATCH``;
- ``nofreeze``: the parent's objects are not frozen before the workers fork;
- ``malloc``: glibc's own allocator thresholds (``PHRASEKIT_MALLOC=default``).

Rounds run every variant in turn; the table gives each variant's median wall seconds of the
candidate step and the workers' CPU seconds, and the ratio to the first variant.

    python benchmarks/speed/keyphrase_candidates_speed.py --corpus bbc_news --n-docs 1000 \\
        --variants shipped,batch64,nofreeze,malloc,batch64+nofreeze+malloc --rounds 3
"""

from __future__ import annotations

import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common
from _common import bench_parser, child_json, corpus_source, cpu_name

CHILD = r"""
import gc, json, os, sys, time
variant, source, n_docs, workers = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
import phrasekit.phrases.keyphrases as kp
from phrasekit.io import read_corpus
if "batch64" in variant:
    kp.SPACY_BATCH = 64
if "nofreeze" in variant:
    gc.freeze = lambda: None
texts = [d.text for d in read_corpus(source)[:n_docs]]
ex = kp.KeyphraseExtractor(n_process=workers)
ex.nlp
t, c = time.perf_counter(), os.times()
cands = ex.find_candidates(texts)
c2 = os.times()
print(json.dumps({"wall": time.perf_counter() - t,
                  "workers_cpu": c2.children_user - c.children_user
                  + c2.children_system - c.children_system,
                  "candidates": sum(len(x) for x in cands)}))
"""


def run(variant: str, source: str, n_docs: int, workers: int) -> dict:
    env = dict(os.environ)
    if "malloc" in variant:
        env["PHRASEKIT_MALLOC"] = "default"
    return child_json(CHILD, [variant, source, str(n_docs), str(workers)], env)


def main() -> None:
    ap = bench_parser(__doc__, corpus="bbc_news")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--variants", default="shipped,batch64,nofreeze,malloc,"
                    "batch64+nofreeze+malloc")
    args = ap.parse_args()
    source = str(corpus_source(args.corpus))
    n_docs = args.n_docs or 1000
    variants = args.variants.split(",")
    results: dict[str, list[dict]] = {v: [] for v in variants}
    for _ in range(args.rounds):
        for v in variants:
            results[v].append(run(v, source, n_docs, args.workers))
    print(f"CPU: {cpu_name()}; {n_docs} {args.corpus} documents, {args.workers} workers, "
          f"median of {args.rounds} rounds\n")
    print("| variant | candidate step s | rounds s | workers' CPU s | x first | candidates |")
    print("|---|---:|---|---:|---:|---:|")
    first = None
    for v in variants:
        wall = statistics.median(r["wall"] for r in results[v])
        cpu = statistics.median(r["workers_cpu"] for r in results[v])
        first = first or wall
        rounds = "/".join(f"{r['wall']:.1f}" for r in results[v])
        print(f"| {v} | {wall:.2f} | {rounds} | {cpu:.1f} | {wall / first:.2f} | "
              f"{results[v][0]['candidates']} |")


if __name__ == "__main__":
    main()
