"""Encoding speed: phrasekit's minilm encoder vs plain SentenceTransformer.encode, same weights.

Both run in one process, interleaved over several rounds (alternating which goes first), on
the same 10,000 phrases; the median time per system is reported as phrases/s, then
each system's ratio to plain, with the mean and minimum cosine of its vectors to the same
model's fp32 vectors. ``--models`` times several phrasekit models, each at fp32, at
``phrasekit encode``'s default precision (``auto``: bf16 on a CPU with AVX512-BF16 or AMX) and
at ``--precisions``. Phrases are short, so the time per batch is mostly fixed costs: measure
on the CPU at hand rather than assume the gain bf16 gives on documents.

Phrases: the first 10,000 distinct strings of the PPDB benchmark file when the shared data is
found, else word 2-4-grams from the bundled sample corpus.

``int8`` and ``fp32/onnx`` run on ONNX Runtime (the graph exported into the cache first).

Usage: python benchmarks/speed/encode_speed.py [--n 10000] [--rounds 3] [--batch-size N]
       [--threads 2] [--models minilm,pearl-minilm,phrase-bert-minilm]
       [--precisions bf16,int8,fp32/onnx]
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

import phrasekit
from phrasekit.datasets import sample_corpus_path
from phrasekit.io import read_corpus
from phrasekit.models.backbones import minilm_path
from phrasekit.registry import precision_request
from phrasekit.settings import data_dir

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common
from _common import bench_parser, cpu_name


def load_phrases(n: int) -> tuple[list[str], str]:
    """``n`` distinct phrases, from PPDB if available, else from the bundled corpus."""
    root = data_dir(required=False)
    seen: dict[str, None] = {}
    if root is not None and (root / "ppdb" / "ppdb.json").is_file():
        for p1, p2, *_ in json.loads((root / "ppdb" / "ppdb.json").read_text(encoding="utf-8")):
            for p in (p1, p2):
                if p.strip():
                    seen.setdefault(p, None)
            if len(seen) >= n:
                break
        source = "shared/data/ppdb"
    else:
        rng = np.random.default_rng(0)
        for doc in read_corpus(sample_corpus_path()):
            words = doc.text.split()
            for _ in range(20):
                k = int(rng.integers(2, 5))
                start = int(rng.integers(0, max(1, len(words) - k)))
                seen.setdefault(" ".join(words[start : start + k]), None)
            if len(seen) >= n:
                break
        source = "bundled sample corpus n-grams"
    return list(seen)[:n], source


def build_systems(args: argparse.Namespace, phrases: list[str]) -> tuple[dict, dict]:
    """The timed callables: plain sentence-transformers, then per model its fp32 encoder, its
    default and each extra precision; and which
    fp32 system each phrasekit one is compared with. The default is what ``phrasekit encode``
    uses: ``--precision auto`` (bf16 where the CPU has AVX512-BF16 or AMX)."""
    from sentence_transformers import SentenceTransformer

    plain = SentenceTransformer(str(minilm_path()), device="cpu")
    systems = {"plain": lambda: plain.encode(phrases, batch_size=args.batch_size or 32,
                                             normalize_embeddings=True, convert_to_numpy=True)}
    ref: dict[str, str] = {}
    for model in [m for m in args.models.split(",") if m]:
        default = phrasekit.load(model, **precision_request(model, "auto"))
        encoders = {f"{model}@fp32": phrasekit.load(model, precision="fp32"),
                    f"{model} (encode default: {getattr(default, 'precision', '?')})": default}
        for item in [p for p in args.precisions.split(",") if p]:
            prec, _, backend = item.partition("/")  # fp32/onnx: fp32 on ONNX Runtime
            extra = {"backend": backend} if backend else {}
            encoders[f"{model}@{item}"] = phrasekit.load(model, precision=prec, **extra)
        for name, enc in encoders.items():
            enc.encode(phrases[:256])  # warm-up
            systems[name] = lambda e=enc: e.encode(phrases, batch_size=args.batch_size)
            ref[name] = f"{model}@fp32"
    plain.encode(phrases[:256])
    return systems, ref


def main() -> None:
    ap = bench_parser(__doc__)
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=None,
                    help="same batch size for both (default: each library's own default)")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--models", default="minilm",
                    help="comma-separated phrasekit models, each timed at fp32, at its default "
                         "precision and at --precisions")
    ap.add_argument("--precisions", default="bf16,int8,fp32/onnx",
                    help="PRECISION or PRECISION/BACKEND (torch, onnx) entries")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    if args.threads:
        torch.set_num_threads(args.threads)
    phrases, source = load_phrases(args.n)
    print(f"phrases: {len(phrases)} from {source}; torch threads: {torch.get_num_threads()}; "
          f"CPU: {cpu_name()}")
    systems, ref = build_systems(args, phrases)
    times: dict[str, list[float]] = {k: [] for k in systems}
    vecs: dict[str, np.ndarray] = {}
    names = list(systems)
    for r in range(args.rounds):
        for name in names if r % 2 == 0 else names[::-1]:
            t0 = time.perf_counter()
            vecs[name] = systems[name]()
            times[name].append(time.perf_counter() - t0)
    plain_rate = len(phrases) / statistics.median(times["plain"])
    print(f"{'system':<42} {'phrases/s':>10} {'x plain':>8} {'cos mean':>9} {'cos min':>8}")
    for name in names:
        rate = len(phrases) / statistics.median(times[name])
        cos = (vecs[name] * vecs[ref.get(name, name)]).sum(axis=1)
        if name == "plain":
            cos = (vecs[name] * vecs[name]).sum(axis=1)
        print(f"{name:<42} {rate:>10.0f} {rate / plain_rate:>8.2f} {cos.mean():>9.5f} "
              f"{cos.min():>8.5f}")


if __name__ == "__main__":
    main()
