"""Batches side by side (one torch thread each) against one batch after another on all
threads, for texts of three lengths.

Entity names (AutoFJ left titles), news sentences and 150-word news windows (bbc_news),
encoded by each model of ``--models`` (``auto`` precision unless the name carries one) both
ways. One process, ``--rounds`` interleaved rounds; the median seconds per configuration is
reported as texts/s, the ratio of side by side to one after another, and the largest
difference between the two ways' vectors.

    python benchmarks/speed/batch_threads.py --models pearl-minilm,minilm,minilm@fp32
"""

from __future__ import annotations

import csv
import re
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

import phrasekit
from phrasekit.encoders import base
from phrasekit.encoders.cache import chunk_words
from phrasekit.io import read_corpus
from phrasekit.registry import precision_request
from phrasekit.settings import data_dir

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common
from _common import bench_parser, corpus_source, cpu_name


def text_sets(n: int, seed: int) -> dict[str, list[str]]:
    """A seeded sample of ``n`` texts of each kind (windows: ``n // 5``)."""
    rng = np.random.default_rng(seed)
    names: list[str] = []
    for table in sorted((data_dir() / "autofj").glob("*/left.csv")):
        with table.open(encoding="utf-8", newline="") as fh:
            names.extend(row["title"] for row in csv.DictReader(fh))
    docs = [d.text for d in read_corpus(corpus_source("bbc_news"))[:1000]]
    sentences = [s for d in docs for s in re.split(r"(?<=[.!?])\s+", d) if len(s) > 20]
    windows = [w for d in docs for w in chunk_words(d, 150, 8)]

    def pick(texts: list[str], k: int) -> list[str]:
        return [texts[i] for i in rng.choice(len(texts), size=min(k, len(texts)), replace=False)]

    return {"names": pick(names, n), "sentences": pick(sentences, n),
            "windows": pick(windows, n // 5)}


def main() -> None:
    ap = bench_parser(__doc__)
    ap.add_argument("--models", default="pearl-minilm,minilm")
    ap.add_argument("--n", type=int, default=4000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    sets = text_sets(args.n, args.seed)
    ways = {"one after another": 1, "side by side": base.SIDE_BY_SIDE_MAX_THREADS}
    models = args.models.split(",")
    encoders = {m: phrasekit.load(m, **precision_request(m, "auto")) for m in models}
    times: dict[tuple, list[float]] = {}
    vecs: dict[tuple, np.ndarray] = {}
    for _ in range(args.rounds):
        for m in models:
            for kind, texts in sets.items():
                for way, most in ways.items():
                    base.SIDE_BY_SIDE_MAX_THREADS = most
                    t0 = time.perf_counter()
                    vecs[m, kind, way] = encoders[m].encode(texts)
                    times.setdefault((m, kind, way), []).append(time.perf_counter() - t0)
    print(f"CPU: {cpu_name()}; {args.threads} threads, median of {args.rounds} rounds\n\n"
          "| model | texts | n | one after another /s | side by side /s | speed-up | max diff |\n"
          "|---|---|---:|---:|---:|---:|---:|")
    for m in models:
        for kind, texts in sets.items():
            serial, side = (statistics.median(times[m, kind, w]) for w in ways)
            diff = float(np.abs(vecs[m, kind, "side by side"]
                                - vecs[m, kind, "one after another"]).max())
            print(f"| {m} | {kind} | {len(texts)} | {len(texts) / serial:.0f} | "
                  f"{len(texts) / side:.0f} | {serial / side:.2f} | {diff:.1e} |")


if __name__ == "__main__":
    main()
