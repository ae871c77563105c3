"""AutoFJ through the fuzzy join itself: top-1 accuracy and F1 of ``fuzzy_join`` on the held-out
half, for either scorer (``hybrid``, the default of ``phrasekit join``, or ``cosine``).

Split (AutoFJ ships none): in every table the right rows with an even data-row number
(0, 2, 4, ...) are the dev half, on which the hybrid combiner and every default threshold are
chosen, and the odd ones the held-out half, the only one this task reports. Left tables are
whole. A right row's top-1 match is correct when its left title equals the gold ``title_l``;
``acc`` is the macro average over tables of the accuracy on right rows that have a partner
(k = 1, no threshold, as PEARL's protocol); ``f1`` pools precision and recall over all tables
at the scorer's default threshold (a match of a row without a partner is a false positive).
"""

from __future__ import annotations

import csv
import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from phrasekit.encoders.base import Encoder
from phrasekit.eval.autofj import FOLDER, quick_tables, table_dirs
from phrasekit.eval.base import Task, percent
from phrasekit.similarity.join import default_threshold, fuzzy_join

logger = logging.getLogger(__name__)

HALVES = ("dev", "held-out")


@dataclass(frozen=True)
class JoinHalf:
    """One table's left rows, the right rows of one half, and the gold left title per right row
    that has a partner (rows are 0-based data rows of the CSVs)."""

    name: str
    left: list[tuple[int, str]]
    right: list[tuple[int, str]]
    gold: dict[int, str]


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def read_half(folder: Path, half: str) -> JoinHalf:
    """The ``half`` (``dev``: even right rows, ``held-out``: odd) of one AutoFJ table; empty
    titles are skipped on both sides."""
    if half not in HALVES:
        raise ValueError(f"half must be one of {HALVES}, got {half!r}")
    left = [(i, r["title"].strip()) for i, r in enumerate(_rows(folder / "left.csv"))
            if r["title"].strip()]
    right_rows = _rows(folder / "right.csv")
    gold_by_id = {g["id_r"]: g["title_l"].strip() for g in _rows(folder / "gt.csv")}
    parity = 0 if half == "dev" else 1
    right, gold = [], {}
    for i, r in enumerate(right_rows):
        if i % 2 != parity or not r["title"].strip():
            continue
        right.append((i, r["title"].strip()))
        if gold_by_id.get(r["id"]):
            gold[i] = gold_by_id[r["id"]]
    return JoinHalf(folder.name, left, right, gold)


def score_half(table: JoinHalf, top: dict[int, tuple[str, float]], threshold: float | None
               ) -> tuple[int, int, int, int]:
    """(correct top-1, rows with a partner, true positives, matched) of a half's top-1 matches
    ``top`` (right row -> (left title, score)) at ``threshold`` (None: no threshold)."""
    correct = sum(1 for r, g in table.gold.items() if r in top and top[r][0] == g)
    matched = {r for r, (_, s) in top.items() if threshold is None or s >= threshold}
    tp = sum(1 for r in matched if table.gold.get(r) == top[r][0])
    return correct, len(table.gold), tp, len(matched)


class AutoFJJoinTask(Task):
    """``fuzzy_join`` on AutoFJ's held-out half: macro top-1 accuracy and F1 at the default."""

    main_metric = "acc"
    required = (f"{FOLDER}/",)
    supports_noise = True

    def __init__(self, scorer: str = "hybrid", noise: str | None = None) -> None:
        self.scorer = scorer
        self.name = "autofj_join" if scorer == "hybrid" else f"autofj_join_{scorer}"
        self.description = (f"AutoFJ held-out half through fuzzy_join (scorer {scorer}): "
                            "macro top-1 accuracy, F1 at the default threshold")
        self._set_noise(noise)

    def evaluate(self, encoder: Encoder, data_dir: Path, quick: bool = False) -> dict[str, float]:
        """Join every table's held-out half (k = 1, no threshold), then score it."""
        folders = table_dirs(data_dir)
        if quick:
            folders = quick_tables(folders)
        threshold = default_threshold(getattr(encoder, "name", ""), self.scorer)
        accs, tp, matched, partners = [], 0, 0, 0
        for folder in folders:
            table = read_half(folder, "held-out")
            right = table.right[:60] if quick else table.right
            queries = list(zip([r for r, _ in right], self.perturb([t for _, t in right]),
                               strict=True))
            found = fuzzy_join(table.left, queries, encoder, k=1, threshold=None,
                               scorer=self.scorer)
            top = {m.right_row: (m.left_value, m.score) for m in found}
            half = JoinHalf(table.name, table.left, right,
                            {r: g for r, g in table.gold.items() if r in dict(right)})
            c, n, t, m = score_half(half, top, threshold)
            if n:
                accs.append(c / n)
            tp, matched, partners = tp + t, matched + m, partners + n
        p, r = tp / max(matched, 1), tp / max(partners, 1)
        return {"acc": percent(np.mean(accs)), "precision": percent(p), "recall": percent(r),
                "f1": percent(0.0 if p + r == 0 else 2 * p * r / (p + r))}
