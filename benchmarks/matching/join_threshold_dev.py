"""Choose the fuzzy join's default cosine threshold on the dev half of AutoFJ (50 DBpedia tables).

Split (AutoFJ ships no dev/test split): in every table, the right rows with an even data-row
number (0, 2, 4, ...) form the dev half and the odd ones the held-out half; left tables are
whole. Every table keeps right rows on both sides, including the right rows that have no
partner in ``gt.csv`` (Reptile, ShoppingMall), which are what a threshold is for.

Per table, every right title is joined to the left table (``fuzzy_join``, k = 1, no threshold).
A right row's top match is correct when its left title equals the gold ``title_l`` of
``gt.csv`` (by title, as ``benchmarks/matching/join_autofj.py``). For a threshold t, a right row is
matched when its top cosine is >= t: TP = matched and correct, FP = matched and not correct
(a wrong partner, or a right row without one); P = TP / matched, R = TP / right rows with a
partner, F1 pooled over all tables (micro). The threshold is the value of 0.00, 0.01, ...,
1.00 with the highest dev F1 (ties: the lower); the held-out half is only reported.

Usage: python benchmarks/matching/join_threshold_dev.py [--model pearl-minilm] [--cache scores.npz]
"""

from __future__ import annotations

import argparse
import csv
import logging
import time
from pathlib import Path

import numpy as np

import phrasekit
from phrasekit.settings import data_dir
from phrasekit.similarity import fuzzy_join, read_column

GRID = np.round(np.arange(0.0, 1.0001, 0.01), 2)
SHOWN = np.round(np.arange(0.3, 0.9501, 0.05), 2)


def table_scores(table: Path, enc: phrasekit.Encoder) -> np.ndarray:
    """Rows (right row number, top-1 cosine, correct, has a partner) for one table."""
    left = read_column(table / "left.csv", "title", skip_empty=True)
    right = read_column(table / "right.csv", "title", skip_empty=True)
    with open(table / "gt.csv", encoding="utf-8", newline="") as fh:
        gold = {r["title_r"]: r["title_l"] for r in csv.DictReader(fh)}
    rows = [(m.right_row, m.score, m.left_value == gold.get(m.right_value),
             m.right_value in gold)
            for m in fuzzy_join(left, right, enc, k=1, threshold=None, scorer="cosine")]
    return np.asarray(rows, dtype=np.float64).reshape(-1, 4)


def prf(scores: np.ndarray, correct: np.ndarray, partner: np.ndarray,
        t: float) -> tuple[float, float, float]:
    """Pooled precision, recall and F1 (in %) of the top-1 matches at threshold ``t``."""
    matched = scores >= t
    tp = float(np.sum(matched & correct))
    p = tp / max(1, int(matched.sum()))
    r = tp / max(1, int(partner.sum()))
    f = 0.0 if p + r == 0 else 2 * p * r / (p + r)
    return 100 * p, 100 * r, 100 * f


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--model", default="pearl-minilm")
    ap.add_argument("--cache", type=Path, help="save / reuse the per-row scores (.npz)")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    if args.cache is not None and args.cache.is_file():
        rows = np.load(args.cache)["rows"]
    else:
        enc = phrasekit.load(args.model)
        t0 = time.perf_counter()
        tables = sorted(p for p in (data_dir() / "autofj").iterdir() if p.is_dir())
        rows = np.concatenate([table_scores(t, enc) for t in tables])
        print(f"{len(tables)} tables, {len(rows)} right rows joined in "
              f"{time.perf_counter() - t0:.0f} s ({args.model})")
        if args.cache is not None:
            np.savez(args.cache, rows=rows)
    halves = {"dev": rows[rows[:, 0] % 2 == 0], "held-out": rows[rows[:, 0] % 2 == 1]}
    cols = {h: (r[:, 1], r[:, 2] > 0, r[:, 3] > 0) for h, r in halves.items()}
    for h, (_, _, partner) in cols.items():
        print(f"{h}: {len(partner)} right rows, {int((~partner).sum())} without a partner")
    f1 = [prf(*cols["dev"], t)[2] for t in GRID]
    best = float(GRID[int(np.argmax(f1))])
    print("| threshold | dev P | dev R | dev F1 |\n|---|---|---|---|")
    for t in sorted({*SHOWN.tolist(), best, 0.0}):
        p, r, f = prf(*cols["dev"], t)
        mark = " (chosen)" if t == best else ""
        print(f"| {t:.2f}{mark} | {p:.2f} | {r:.2f} | {f:.2f} |")
    for t in (None, best):
        p, r, f = prf(*cols["held-out"], -np.inf if t is None else t)
        print(f"held-out half, {'no threshold' if t is None else f'threshold {t:.2f}'}: "
              f"P {p:.2f} R {r:.2f} F1 {f:.2f}")


if __name__ == "__main__":
    main()
