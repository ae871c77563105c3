"""Encoding speed: phrasekit's minilm encoder vs plain SentenceTransformer.encode, same weights.

Both run in one process, interleaved over several rounds (alternating which goes first), on
the same 10,000 phrases; the median time per system is reported as phrases/s, then
``ratio: X`` (phrasekit fp32 / plain) and the same for the reduced-precision modes, with the
mean and minimum cosine of their vectors to phrasekit's fp32 vectors.

Phrases: the first 10,000 distinct strings of the PPDB benchmark file when the shared data is
found, else word 2-4-grams from the bundled sample corpus.

Usage: python benchmarks/encode_speed.py [--n 10000] [--rounds 3] [--batch-size N] [--threads 2]
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import time

import numpy as np
import torch

import phrasekit
from phrasekit.datasets import sample_corpus_path
from phrasekit.io import read_corpus
from phrasekit.models.backbones import minilm_path
from phrasekit.settings import data_dir


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


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument(
        "--batch-size",
        type=int,
        default=None,
        help="same batch size for both (default: each library's own default)",
    )
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--precisions", default="bf16,int8")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    if args.threads:
        torch.set_num_threads(args.threads)
    from sentence_transformers import SentenceTransformer

    phrases, source = load_phrases(args.n)
    print(f"phrases: {len(phrases)} from {source}; torch threads: {torch.get_num_threads()}")
    plain = SentenceTransformer(str(minilm_path()), device="cpu")
    systems = {
        "plain": lambda: plain.encode(
            phrases,
            batch_size=args.batch_size or 32,
            normalize_embeddings=True,
            convert_to_numpy=True,
        )
    }
    encoders = {"phrasekit-fp32": phrasekit.load("minilm")}
    for prec in [p for p in args.precisions.split(",") if p]:
        encoders[f"phrasekit-{prec}"] = phrasekit.load("minilm", precision=prec)
    for name, enc in encoders.items():
        systems[name] = lambda e=enc: e.encode(phrases, batch_size=args.batch_size)

    for enc in encoders.values():
        enc.encode(phrases[:256])
    plain.encode(phrases[:256])

    times: dict[str, list[float]] = {k: [] for k in systems}
    vecs: dict[str, np.ndarray] = {}
    names = list(systems)
    for r in range(args.rounds):
        order = names if r % 2 == 0 else names[::-1]
        for name in order:
            t0 = time.perf_counter()
            vecs[name] = systems[name]()
            times[name].append(time.perf_counter() - t0)
    ref = vecs["phrasekit-fp32"]
    plain_rate = len(phrases) / statistics.median(times["plain"])
    print(f"{'system':<16} {'phrases/s':>10} {'ratio':>7} {'cos mean':>9} {'cos min':>8}")
    for name in names:
        rate = len(phrases) / statistics.median(times[name])
        cos = (vecs[name] * ref).sum(axis=1)
        ratio = rate / plain_rate
        print(f"{name:<16} {rate:>10.0f} {ratio:>7.2f} {cos.mean():>9.5f} {cos.min():>8.5f}")
    fp32_rate = len(phrases) / statistics.median(times["phrasekit-fp32"])
    print(f"ratio: {fp32_rate / plain_rate:.2f}")
    for name in names:
        if name.startswith("phrasekit-") and name != "phrasekit-fp32":
            rate = len(phrases) / statistics.median(times[name])
            print(f"ratio {name.removeprefix('phrasekit-')}: {rate / plain_rate:.2f}")


if __name__ == "__main__":
    main()
