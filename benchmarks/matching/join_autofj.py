"""AutoFJ accuracy through the fuzzy-join API (``phrasekit.similarity.fuzzy_join``).

For each of the 50 tables: join right.csv to left.csv on ``title`` (k = 1), count a right row
correct when its matched left title equals the gold ``title_l`` of gt.csv; macro-average over
tables. Must equal the benchmark's ``autofj`` task for the same model; prints both numbers
when ``--compare`` is given (the comparison re-encodes everything, so it doubles the time).

Usage: python benchmarks/matching/join_autofj.py [--model minilm] [--compare]
"""

from __future__ import annotations

import argparse
import csv
import logging
import time

import numpy as np

import phrasekit
from phrasekit.eval.autofj import AutoFJTask
from phrasekit.settings import data_dir
from phrasekit.similarity import fuzzy_join, read_column


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--model", default="minilm")
    ap.add_argument("--compare", action="store_true", help="also run the benchmark task")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    root = data_dir() / "autofj"
    enc = phrasekit.load(args.model)
    t0 = time.perf_counter()
    accs = []
    for table in sorted(p for p in root.iterdir() if p.is_dir()):
        left = read_column(table / "left.csv", "title", skip_empty=True)
        right = read_column(table / "right.csv", "title", skip_empty=True)
        with open(table / "gt.csv", encoding="utf-8", newline="") as fh:
            gold = {r["title_r"]: r["title_l"] for r in csv.DictReader(fh)}
        matches = fuzzy_join(left, right, enc, k=1, threshold=None, scorer="cosine")
        hits = [m.left_value == gold[m.right_value] for m in matches if m.right_value in gold]
        accs.append(float(np.mean(hits)))
    print(f"join API  autofj acc ({args.model}, {len(accs)} tables): {100 * np.mean(accs):.2f} "
          f"({time.perf_counter() - t0:.0f} s)")
    if args.compare:
        t0 = time.perf_counter()
        bench = AutoFJTask().run(enc, data_dir())["acc"]
        secs = time.perf_counter() - t0
        print(f"benchmark autofj acc ({args.model}): {bench:.2f} ({secs:.0f} s)")


if __name__ == "__main__":
    main()
