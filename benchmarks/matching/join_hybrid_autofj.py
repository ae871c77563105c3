"""The hybrid join against every single signal, table by table, on AutoFJ's held-out half.

Every table's held-out half (odd right rows; ``phrasekit.eval.autofj_join``) is joined to its
whole left table by ``fuzzy_join`` (k = 1, no threshold) with the hybrid scorer (its default
encoder, ``pearl-minilm``) and with the cosine of each single signal (``pearl-minilm``,
``minilm``, ``string``), clean and with seeded typos on the query side (the benchmark's own
``--noise typo``). Prints the per-table top-1 accuracy, the macro averages, the number of tables
where the hybrid is within 1.0 of the best single signal, and pooled P/R/F1 at each scorer's
default threshold. Each model encodes each distinct string once (an in-process memo).

Usage: python benchmarks/matching/join_hybrid_autofj.py [--tables N] [--out rows.json]
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

import phrasekit
from phrasekit.eval.autofj import table_dirs
from phrasekit.eval.autofj_join import JoinHalf, read_half, score_half
from phrasekit.eval.base import perturb
from phrasekit.settings import data_dir
from phrasekit.similarity.join import default_threshold, fuzzy_join

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common
from _common import cpu_name

SINGLE = ("pearl-minilm", "minilm", "string")


class Memo:
    """An encoder that encodes each distinct string once, optionally kept on disk between runs
    (``folder``: parts of ``.json`` texts + ``.npy`` vectors, one per :meth:`flush`)."""

    def __init__(self, name: str, folder: Path | None = None) -> None:
        self.inner = phrasekit.load(name)
        self.name = self.inner.name
        self.dim = self.inner.dim
        self.seen: dict[str, np.ndarray] = {}
        self.new: list[str] = []
        self.folder = folder / name if folder else None
        if self.folder is not None and self.folder.is_dir():
            for part in sorted(self.folder.glob("*.json")):
                texts = json.loads(part.read_text(encoding="utf-8"))
                vecs = np.load(part.with_suffix(".npy"))
                self.seen.update(zip(texts, vecs, strict=True))

    def encode(self, texts: Sequence[str], batch_size: int | None = None,
               show_progress: bool = False) -> np.ndarray:
        new = list(dict.fromkeys(t for t in texts if t not in self.seen))
        if new:
            for t, v in zip(new, self.inner.encode(new), strict=True):
                self.seen[t] = v
            self.new += new
        return np.stack([self.seen[t] for t in texts]) if texts else np.zeros((0, self.dim))

    def flush(self) -> None:
        """Write the strings encoded since the last flush as a new part."""
        if self.folder is None or not self.new:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        stem = self.folder / f"part-{len(list(self.folder.glob('*.json'))):04d}"
        np.save(stem.with_suffix(".npy"), np.stack([self.seen[t] for t in self.new]))
        stem.with_suffix(".json").write_text(json.dumps(self.new), encoding="utf-8")
        self.new = []


def run(table: JoinHalf, enc: Memo, scorer: str, typo: bool
        ) -> tuple[tuple[int, int, int, int], list[tuple[float, bool]]]:
    """(correct, partners, TP, matched) of one join of a table half, and each top match's
    (score, correct)."""
    texts = [t for _, t in table.right]
    queries = list(zip([r for r, _ in table.right],
                       perturb(texts, "typo") if typo else texts, strict=True))
    found = fuzzy_join(table.left, queries, enc, k=1, threshold=None, scorer=scorer)
    top = {m.right_row: (m.left_value, m.score) for m in found}
    scored = [(s, table.gold.get(r) == v) for r, (v, s) in top.items()]
    return score_half(table, top, default_threshold(enc.name, scorer)), scored


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tables", type=int, default=0, help="only the first N tables (0: all)")
    ap.add_argument("--out", type=Path, help="write the per-table numbers as JSON")
    ap.add_argument("--vectors", type=Path, help="keep each model's vectors in this folder")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    print(f"CPU: {cpu_name()}")
    encoders = {name: Memo(name, args.vectors) for name in SINGLE}
    systems = [("hybrid", "pearl-minilm", "hybrid")] + [(n, n, "cosine") for n in SINGLE]
    folders = table_dirs(data_dir())[: args.tables or None]
    rows: dict[str, dict[str, list[float]]] = {}
    pooled = {(s, t): np.zeros(4) for s, _, _ in systems for t in (False, True)}
    calib: list[tuple[float, bool]] = []
    t0 = time.perf_counter()
    for folder in folders:
        table = read_half(folder, "held-out")
        rows[table.name] = {}
        for typo in (False, True):
            for label, model, scorer in systems:
                (c, n, tp, m), scored = run(table, encoders[model], scorer, typo)
                if label == "hybrid" and not typo:
                    calib += scored
                pooled[(label, typo)] += (c, n, tp, m)
                rows[table.name].setdefault(label, []).append(100 * c / max(n, 1))
        for enc in encoders.values():
            enc.flush()
        print(f"  {table.name}: " + ", ".join(f"{k} {v[0]:.1f}/{v[1]:.1f}"
                                             for k, v in rows[table.name].items())
              + f" ({time.perf_counter() - t0:.0f} s)", flush=True)
    report(rows, pooled, [s for s, _, _ in systems])
    print("\nhybrid scores, clean held-out top-1 matches: | score | matches | correct |")
    for lo, hi in ((0.0, 0.3), (0.3, 0.5), (0.5, 0.7), (0.7, 0.9), (0.9, 0.97), (0.97, 1.01)):
        inside = [ok for s, ok in calib if lo <= s < hi]
        if inside:
            print(f"| [{lo:.2f}, {min(hi, 1.0):.2f}{']' if hi > 1 else ')'} | {len(inside)} | "
                  f"{100 * np.mean(inside):.1f}% |")
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1))


def report(rows: dict[str, dict[str, list[float]]], pooled: dict, labels: list[str]) -> None:
    """The per-table table, the macro averages, the within-1.0 count and the F1 rows."""
    print("\n| table | " + " | ".join(labels) + " |\n|---|" + "---:|" * len(labels))
    for name, r in rows.items():
        print(f"| {name} | " + " | ".join(f"{r[s][0]:.1f}" for s in labels) + " |")
    for typo, col in ((False, 0), (True, 1)):
        macro = {s: np.mean([r[s][col] for r in rows.values()]) for s in labels}
        within = sum(r["hybrid"][col] >= max(r[s][col] for s in labels[1:]) - 1.0
                     for r in rows.values())
        above = sum(r["hybrid"][col] > max(r[s][col] for s in labels[1:]) for r in rows.values())
        print(f"\n{'typo' if typo else 'clean'} queries, macro top-1: "
              + ", ".join(f"{s} {v:.2f}" for s, v in macro.items())
              + f"; hybrid within 1.0 of the best single signal on {within}/{len(rows)} tables,"
              f" above all of them on {above}")
        for s in labels:
            _, n, tp, m = pooled[(s, typo)]
            p, rec = tp / max(m, 1), tp / max(n, 1)
            f1 = 0.0 if p + rec == 0 else 2 * p * rec / (p + rec)
            print(f"  {s}: at its default threshold P {100 * p:.2f} R {100 * rec:.2f} "
                  f"F1 {100 * f1:.2f}")


if __name__ == "__main__":
    main()
