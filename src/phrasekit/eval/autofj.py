"""AutoFJ fuzzy join (50 DBpedia tables): nearest-left-record retrieval accuracy (PEARL).

Protocol: every sub-folder of ``autofj/`` holding ``left.csv`` and ``right.csv`` (``id,title``)
and ``gt.csv`` (``id_l,title_l,id_r,title_r``) is a table; CSVs are read with the ``csv``
module, so titles such as "NA", "None" or "null" stay strings. For every right record that
appears in ``gt.csv`` (its title taken from ``right.csv`` by ``id_r``), retrieve the left record
whose title has the highest cosine similarity (first in file order on ties); it is correct when
the retrieved left title equals ``title_l``. Accuracy per table, macro-averaged over tables
(main metric ``acc``); ``micro_acc`` pools all queries. Records with an empty title cannot be
embedded: empty left titles are dropped from the candidates and gt rows whose right or left
title is empty are skipped, both with a logged count (the shipped data has none).

Each table is encoded on its own (left + right titles, each distinct string once), so memory
stays at one table even for the 4096-d ``string`` encoder. Quick mode: the 5 tables with the
fewest left rows (ties by name), each cut to its first 30 gt rows and, as candidates, the first
100 left rows plus the gold left titles of those queries (in left-file order).

Typo robustness (``AutoFJTask(noise="typo")``, named ``autofj+typo``): the query side, the
right-table titles, is perturbed (see :func:`phrasekit.eval.base.perturb`); the left table is
the clean "dictionary" and the gold titles are compared unchanged.
"""

from __future__ import annotations

import csv
import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from phrasekit.encoders.base import Encoder
from phrasekit.eval.base import Task, embed_unique, nearest, percent

logger = logging.getLogger(__name__)

FOLDER = "autofj"
TABLE_FILES = ("left.csv", "right.csv", "gt.csv")
QUICK_TABLES = 5
QUICK_QUERIES = 30
QUICK_LEFT = 100


@dataclass(frozen=True)
class JoinTable:
    """One fuzzy-join table: left titles (candidates) and (right title, gold left title) pairs."""

    name: str
    left: list[str]
    queries: list[tuple[str, str]]


def _read_csv(path: Path, columns: tuple[str, ...]) -> list[dict[str, str]]:
    with open(path, encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        missing = [c for c in columns if c not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(f"{path}: missing column(s) {missing}; header is {reader.fieldnames}")
        return list(reader)


def table_dirs(data_dir: Path) -> list[Path]:
    """The table folders of ``autofj/`` (those holding a left.csv), sorted by name."""
    root = Path(data_dir) / FOLDER
    tables = sorted(p for p in root.iterdir() if p.is_dir() and (p / "left.csv").is_file())
    if not tables:
        raise FileNotFoundError(f"no AutoFJ tables (<name>/left.csv) found under {root}")
    return tables


def load_table(folder: Path) -> JoinTable:
    """Read one table; empty titles are dropped (left) or their gt rows skipped, and logged."""
    for f in TABLE_FILES:
        if not (folder / f).is_file():
            raise FileNotFoundError(f"AutoFJ table {folder.name}: {folder / f} not found")
    left_rows = _read_csv(folder / "left.csv", ("id", "title"))
    right = {r["id"]: r["title"] for r in _read_csv(folder / "right.csv", ("id", "title"))}
    gt = _read_csv(folder / "gt.csv", ("id_l", "title_l", "id_r", "title_r"))
    left = [r["title"] for r in left_rows if r["title"].strip()]
    if len(left) < len(left_rows):
        logger.warning("autofj %s: dropped %d left rows with an empty title", folder.name,
                       len(left_rows) - len(left))
    queries: list[tuple[str, str]] = []
    skipped = 0
    for g in gt:
        if g["id_r"] not in right:
            raise ValueError(f"{folder / 'gt.csv'}: id_r {g['id_r']!r} is not in right.csv")
        title_r = right[g["id_r"]]
        if not title_r.strip() or not g["title_l"].strip():
            skipped += 1
            continue
        queries.append((title_r, g["title_l"]))
    if skipped:
        logger.warning("autofj %s: skipped %d gt rows with an empty title", folder.name, skipped)
    return JoinTable(folder.name, left, queries)


def join_accuracy(encoder: Encoder, table: JoinTable) -> tuple[int, int]:
    """(correct, total) of nearest-left retrieval for the table's gt right records."""
    if not table.queries or not table.left:
        return 0, len(table.queries)
    right = [q[0] for q in table.queries]
    emb = embed_unique(encoder, table.left + right)
    best = nearest(emb[len(table.left) :], emb[: len(table.left)])
    left = np.asarray(table.left, dtype=object)
    gold = np.asarray([q[1] for q in table.queries], dtype=object)
    return int((left[best] == gold).sum()), len(gold)


def quick_subset(table: JoinTable) -> JoinTable:
    """The quick-mode cut of a table: first queries, first left rows plus the gold left titles."""
    queries = table.queries[:QUICK_QUERIES]
    gold = {q[1] for q in queries}
    left = [t for i, t in enumerate(table.left) if i < QUICK_LEFT or t in gold]
    return JoinTable(table.name, left, queries)


def quick_tables(tables: list[Path]) -> list[Path]:
    """The ``QUICK_TABLES`` tables with the fewest left rows (ties broken by name)."""
    def n_left(p: Path) -> int:
        with open(p / "left.csv", encoding="utf-8", newline="") as fh:
            return sum(1 for _ in csv.reader(fh)) - 1

    return sorted(tables, key=lambda p: (n_left(p), p.name))[:QUICK_TABLES]


class AutoFJTask(Task):
    """Macro accuracy of nearest-left-title retrieval over the AutoFJ tables."""

    name = "autofj"
    main_metric = "acc"
    required = (f"{FOLDER}/",)
    description = "AutoFJ fuzzy join, nearest left title, macro accuracy over tables"
    supports_noise = True

    def __init__(self, noise: str | None = None) -> None:
        self._set_noise(noise)

    def noisy_table(self, table: JoinTable) -> JoinTable:
        """The table with this task's noise on the right titles (left and gold stay clean)."""
        noisy = self.perturb([q[0] for q in table.queries])
        queries = [(r, q[1]) for q, r in zip(table.queries, noisy, strict=True)]
        return JoinTable(table.name, table.left, queries)

    def evaluate(self, encoder: Encoder, data_dir: Path, quick: bool = False) -> dict[str, float]:
        """Evaluate table by table, then macro- and micro-average."""
        folders = table_dirs(data_dir)
        if quick:
            folders = quick_tables(folders)
        per_table: dict[str, float] = {}
        correct_all = total_all = 0
        for folder in folders:
            table = load_table(folder)
            if quick:
                table = quick_subset(table)
            if self.noise:
                table = self.noisy_table(table)
            correct, total = join_accuracy(encoder, table)
            if total == 0:
                logger.warning("autofj %s: no usable gt rows; table skipped", table.name)
                continue
            per_table[table.name] = correct / total
            correct_all += correct
            total_all += total
            logger.debug("autofj %s: %d/%d", table.name, correct, total)
        if not per_table:
            raise ValueError(f"autofj: no table with usable gt rows under {data_dir}")
        logger.info("autofj: %d tables, %d queries", len(per_table), total_all)
        return {
            "acc": percent(np.mean(list(per_table.values()))),
            "micro_acc": percent(correct_all / total_all),
        }
