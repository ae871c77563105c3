"""Batch size and attention kernel for long texts on the CPU: 150-word windows of news
articles, as the documents method encodes them, in batches of a fixed count of texts
against batches capped at ``tokens_per_batch`` tokens (the encoder's default).

One process, ``--rounds`` interleaved rounds; the median seconds per configuration is
reported as windows/s, its ratio to the first configuration and the minimum cosine of its
vectors to the first one's. Windows: the first 150-word windows of up to eight per article
of the first ``--docs`` bbc_news articles (shared corpora), a seeded sample of ``--n``.

    python benchmarks/speed/encode_batching.py --n 400 --threads 2 \\
        --configs bf16:eager:256,bf16:eager:32,bf16:sdpa:32,bf16:eager:budget,fp32:sdpa:32

An attention of ``onnx`` runs the configuration on ONNX Runtime instead (``fp32:onnx:budget``,
``int8:onnx:budget``).
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

from phrasekit.encoders.cache import chunk_words
from phrasekit.encoders.transformer import TransformerEncoder
from phrasekit.io import read_corpus
from phrasekit.models.backbones import minilm_path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common
from _common import bench_parser, corpus_source, cpu_name


def windows(n_docs: int, n: int, seed: int) -> list[str]:
    """A seeded sample of ``n`` 150-word windows (up to 8 per article)."""
    out = [w for d in read_corpus(corpus_source("bbc_news"))[:n_docs]
           for w in chunk_words(d.text, 150, 8)]
    pick = np.random.default_rng(seed).choice(len(out), size=min(n, len(out)), replace=False)
    return [out[i] for i in pick]


def main() -> None:
    ap = bench_parser(__doc__)
    ap.add_argument("--docs", type=int, default=1000)
    ap.add_argument("--n", type=int, default=400)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--configs", default="bf16:eager:256,bf16:eager:32,bf16:sdpa:32,"
                    "bf16:sdpa:8,bf16:eager:budget,fp32:sdpa:32,fp32:sdpa:budget")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    texts = windows(args.docs, args.n, args.seed)
    configs = [tuple(c.split(":")) for c in args.configs.split(",")]
    encoders = {(p, a): TransformerEncoder(minilm_path(), precision=p, backend="onnx")
                if a == "onnx" else TransformerEncoder(minilm_path(), precision=p,
                                                      attn_implementation=a)
                for p, a, _ in configs}
    times: dict[tuple, list[float]] = {c: [] for c in configs}
    vecs: dict[tuple, np.ndarray] = {}
    for _ in range(args.rounds):
        for c in configs:
            enc = encoders[c[:2]]
            budget = c[2] == "budget"
            enc.tokens_per_batch = TransformerEncoder.tokens_per_batch if budget else None
            t0 = time.perf_counter()
            vecs[c] = enc.encode(texts, batch_size=256 if budget else int(c[2]))
            times[c].append(time.perf_counter() - t0)
    base, ref = statistics.median(times[configs[0]]), vecs[configs[0]]
    print(f"CPU: {cpu_name()}; {len(texts)} windows, {args.threads} threads, median of "
          f"{args.rounds}\n\n| precision | attention | batch | windows/s | x first | cos min |\n"
          "|---|---|---|---:|---:|---:|")
    for c in configs:
        t = statistics.median(times[c])
        batch = f"<= {TransformerEncoder.tokens_per_batch} tokens" if c[2] == "budget" else c[2]
        cos = float((vecs[c] * ref).sum(axis=1).min())
        print(f"| {c[0]} | {c[1]} | {batch} | {len(texts) / t:.1f} | {base / t:.2f} | "
              f"{cos:.5f} |")


if __name__ == "__main__":
    main()
