"""The hybrid join at scale: a large left table of real entity names against many queries.

Names: the canonical names and aliases of the leakage-filtered DBpedia redirects
(``aliases.tsv.gz`` of ``phrasekit.training.pearl.redirects``). The left table is ``--left``
distinct names (every canonical of the sampled queries included), the right table ``--right``
aliases whose canonical is in the left table. ``phrasekit join`` runs on the two CSVs in a
child process (its defaults: hybrid scorer, pearl-minilm), and the wall time, the child's peak
memory and the top-1 accuracy against the alias's canonical are printed.

``--recall N``: on the first N right rows against a left sample of ``--recall-left`` names,
the join's top-1 on its large-table path (IVF search, frequent n-grams out of the n-gram search) is
compared with the same hybrid scoring over exact searches of the same depth: the share of
queries whose top-1 both agree on (the recall of the approximate searches). Exhaustive hybrid
scoring (every left name a candidate) is no reference: the combiner is trained on the
searches' candidates, so pairs past them are outside what it learned (docs/matching.md).

Usage: python benchmarks/matching/join_scale.py ALIASES.tsv.gz [--left 1000000] [--right 100000]
       [--recall 1000 --recall-left 10000]
"""

from __future__ import annotations

import argparse
import csv
import gzip
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common
from _common import cpu_name


def sample_tables(path: Path, n_left: int, n_right: int, seed: int = 0
                  ) -> tuple[list[str], list[tuple[str, str]]]:
    """(left names, [(alias, canonical)]) drawn from the alias file."""
    rng = random.Random(seed)
    pairs = []
    with gzip.open(path, "rt", encoding="utf-8", newline="") as fh:
        pairs = [(r["alias"], r["canonical"]) for r in csv.DictReader(fh, delimiter="\t")]
    rng.shuffle(pairs)
    queries = pairs[:n_right]
    left = dict.fromkeys(c for _, c in queries)
    for _alias, canon in pairs[n_right:]:
        if len(left) >= n_left:
            break
        left.setdefault(canon)
    asked = {a for a, _ in queries}
    for alias, _ in pairs[n_right:]:
        if len(left) >= n_left:
            break
        if alias not in asked:
            left.setdefault(alias)
    return list(left), queries


def write_csv(path: Path, header: str, values: list[str]) -> None:
    with path.open("w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh)
        w.writerow([header])
        w.writerows([v] for v in values)


def run_join(left: Path, right: Path, out: Path) -> tuple[float, float]:
    """Run ``phrasekit join`` in a child; (wall seconds, peak MB of the child)."""
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "phrasekit", "join", str(left), str(right),
                    "--left-on", "name", "--right-on", "name", "--no-threshold", "--out",
                    str(out)], check=True)
    wall = time.perf_counter() - t0
    return wall, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def search_recall(left: list[str], queries: list[tuple[str, str]], search: str = "ivf"
                  ) -> tuple[float, float, float]:
    """Agreement of the join's top-1 on its large-table path (``search``: ivf as the join's
    auto picks for a one-off search of a large table, or ann for HNSW; frequent n-grams
    left out of the n-gram search) with the same hybrid scoring over exact searches (exact
    embedding top-10, n-gram top-10 over every n-gram), and the share of each that is the
    alias's canonical."""
    import phrasekit
    from phrasekit.similarity.features import CharNgrams, token_idf
    from phrasekit.similarity.hybrid import K_EMBED, LeftSide, hybrid_top_k, shipped_combiner
    from phrasekit.similarity.index import build_index

    enc = phrasekit.load("pearl-minilm", precision="auto")  # the join's own precision
    texts = [a for a, _ in queries]
    lv = enc.encode(left, show_progress=True)
    qv = enc.encode(texts, show_progress=True)
    combiner = shipped_combiner(enc.name)
    t0 = time.perf_counter()
    # the large-table path of `phrasekit join` (auto: inverted lists for a one-off search)
    _, ann_ids = build_index(lv, kind=search, show_progress=True).search(qv, k=K_EMBED)
    _, join_top = hybrid_top_k(LeftSide.fit(left), texts, lv, qv, ann_ids, 1, combiner)
    t1 = time.perf_counter()
    _, exact_ids = build_index(lv, kind="exact").search(qv, k=K_EMBED)
    every_ngram = CharNgrams(max_df=1.0, min_df_cap=len(left)).fit(left)
    _, ref_top = hybrid_top_k(LeftSide(list(left), every_ngram, token_idf(left)), texts, lv,
                              qv, exact_ids, 1, combiner)
    print(f"the join's path {t1 - t0:.0f} s, exact searches {time.perf_counter() - t1:.0f} s",
          flush=True)
    agree = float(np.mean(join_top[:, 0] == ref_top[:, 0]))
    right = [c for _, c in queries]
    acc = [float(np.mean([j >= 0 and left[j] == c for j, c in zip(top[:, 0], right,
                                                                   strict=True)]))
           for top in (join_top, ref_top)]
    return agree, acc[0], acc[1]


def scale_run(aliases: Path, n_left: int, n_right: int) -> None:
    """Join ``n_right`` aliases to ``n_left`` names with ``phrasekit join``; print the row."""
    left, queries = sample_tables(aliases, n_left, n_right)
    with tempfile.TemporaryDirectory() as tmp:
        lp, rp, out = Path(tmp) / "left.csv", Path(tmp) / "right.csv", Path(tmp) / "out.csv"
        write_csv(lp, "name", left)
        write_csv(rp, "name", [a for a, _ in queries])
        wall, peak = run_join(lp, rp, out)
        with out.open(encoding="utf-8", newline="") as fh:
            got = {int(r["right_row"]): r["left_value"] for r in csv.DictReader(fh)
                   if r["rank"] == "1"}
    acc = np.mean([got.get(i) == c for i, (_, c) in enumerate(queries)])
    print("| left rows | right rows | wall s | peak MB (child) | top-1 = canonical |")
    print(f"|---:|---:|---:|---:|---:|\n| {len(left):,} | {len(queries):,} | {wall:.0f} | "
          f"{peak:.0f} | {100 * acc:.1f}% |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("aliases", type=Path)
    ap.add_argument("--left", type=int, default=1_000_000)
    ap.add_argument("--right", type=int, default=100_000, help="0: no scale run")
    ap.add_argument("--recall", type=int, default=0)
    ap.add_argument("--recall-left", type=int, default=10_000)
    ap.add_argument("--recall-search", choices=("ivf", "ann"), default="ivf",
                    help="the approximate search whose recall is measured (ivf: the join's)")
    args = ap.parse_args()
    print(f"CPU: {cpu_name()}")
    if args.right:
        scale_run(args.aliases, args.left, args.right)
    if args.recall:
        sub_left, sub_q = sample_tables(args.aliases, args.recall_left, args.recall, seed=1)
        agree, acc_join, acc_ref = search_recall(sub_left, sub_q, args.recall_search)
        print(f"{len(sub_left):,} x {len(sub_q):,}: the join's top-1 is that of exact searches "
              f"for {agree:.4f} of the queries; top-1 = canonical: join {100 * acc_join:.1f}%, "
              f"exact searches {100 * acc_ref:.1f}%")


if __name__ == "__main__":
    main()
