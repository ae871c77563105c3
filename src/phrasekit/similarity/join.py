"""Fuzzy join: match each row of a right table to its most similar rows of a left table.

Values are embedded with any phrasekit encoder (each distinct string once), every right value
is searched against all left values by cosine (top-k; exact search, or a faiss HNSW index for
large left tables, see ``similarity.index.build_index``), candidates under ``threshold`` are
dropped, and ``one_to_one`` optionally keeps each left and right row in at most one match
(greedy by decreasing score).
"""

from __future__ import annotations

import csv
import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from phrasekit.encoders.base import Encoder
from phrasekit.io import atomic_write
from phrasekit.similarity.index import ANN_MIN_QUERIES, ANN_THRESHOLD, build_index, resolve_kind

logger = logging.getLogger(__name__)


class JoinError(ValueError):
    """A table that cannot be joined: unreadable, malformed, missing column, empty cells."""


@dataclass(frozen=True)
class Match:
    """One candidate pair: row numbers are 0-based data rows (header excluded)."""

    right_row: int
    right_value: str
    left_row: int
    left_value: str
    rank: int
    score: float


def read_column(path: str | Path, column: str, skip_empty: bool = False) -> list[tuple[int, str]]:
    """``(data row number, value)`` of ``column`` in a CSV file with a header row.

    Raises ``JoinError`` naming the file (and line) for a missing file, bad encoding, malformed
    CSV, a missing column (listing those present) or an empty cell (unless ``skip_empty``).
    """
    path = Path(path)
    if not path.is_file():
        raise JoinError(f"CSV file not found: {path}")
    out: list[tuple[int, str]] = []
    skipped = 0
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            reader = csv.reader(fh, strict=True)
            header = next(reader, None)
            if not header:
                raise JoinError(f"{path}: empty file (no header row)")
            header = [h.strip().lstrip("\ufeff") for h in header]
            if column not in header:
                raise JoinError(f"{path}: no column {column!r}; columns are {header}")
            col = header.index(column)
            for row_no, row in enumerate(reader):
                line = reader.line_num
                if not row:
                    continue
                if len(row) != len(header):
                    raise JoinError(
                        f"{path}:{line}: {len(row)} fields where the header has {len(header)}"
                    )
                value = row[col].strip()
                if not value:
                    if skip_empty:
                        skipped += 1
                        continue
                    raise JoinError(
                        f"{path}:{line}: empty {column!r} cell (use skip_empty / --skip-empty)"
                    )
                out.append((row_no, value))
    except UnicodeDecodeError as exc:
        raise JoinError(f"{path}: not valid UTF-8 ({exc})") from exc
    except csv.Error as exc:
        raise JoinError(f"{path}: malformed CSV ({exc})") from exc
    if skipped:
        logger.warning("%s: skipped %d empty %r cells", path, skipped, column)
    if not out:
        raise JoinError(f"{path}: no values in column {column!r}")
    return out


def _embed(encoder: Encoder, values: list[str], show_progress: bool) -> np.ndarray:
    """Encode each distinct value once and spread the vectors back to every row."""
    uniq, inverse = np.unique(np.asarray(values, dtype=object).astype(str), return_inverse=True)
    vecs = encoder.encode(uniq.tolist(), show_progress=show_progress)
    return vecs[inverse.reshape(-1)]


def fuzzy_join(
    left: list[tuple[int, str]],
    right: list[tuple[int, str]],
    encoder: Encoder,
    k: int = 1,
    threshold: float | None = None,
    one_to_one: bool = False,
    show_progress: bool = False,
    index: str = "auto",
    ann_threshold: int = ANN_THRESHOLD,
    ann_min_queries: int = ANN_MIN_QUERIES,
) -> list[Match]:
    """Top-``k`` left candidates for every right value, as ``Match`` rows sorted by right row.

    ``threshold`` drops candidates with a lower cosine; ``one_to_one`` keeps, greedily by
    decreasing score, only pairs whose left and right rows are still unmatched. ``index`` is
    ``"exact"``, ``"ann"`` (faiss HNSW: approximate candidates, exact scores) or ``"auto"``
    (ANN from ``ann_threshold`` left rows and ``ann_min_queries`` right rows on: below either,
    exact search is faster than building the graph).
    """
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    if threshold is not None and not -1.0 <= threshold <= 1.0:
        raise ValueError(f"threshold is a cosine in [-1, 1], got {threshold}")
    if not left or not right:
        raise ValueError("both tables need at least one value to join")
    # validate before encoding; a join is a one-off search, so the query count matters too
    kind = resolve_kind(index, len(left), ann_threshold, n_queries=len(right),
                        min_queries=ann_min_queries)
    left_vecs = _embed(encoder, [v for _, v in left], show_progress)
    right_vecs = _embed(encoder, [v for _, v in right], show_progress)
    search_index = build_index(left_vecs, kind=kind, show_progress=show_progress)
    logger.info("searching %d right rows in %s", len(right), search_index.describe())
    scores, ids = search_index.search(right_vecs, k=k, show_progress=show_progress)
    matches: list[Match] = []
    for i, (r_row, r_val) in enumerate(right):
        for rank, (score, j) in enumerate(zip(scores[i], ids[i], strict=True), start=1):
            if j < 0 or (threshold is not None and score < threshold):
                break
            l_row, l_val = left[int(j)]
            matches.append(Match(r_row, r_val, l_row, l_val, rank, round(float(score), 6)))
    if one_to_one:
        used_left: set[int] = set()
        used_right: set[int] = set()
        kept = []
        for m in sorted(matches, key=lambda m: (-m.score, m.right_row, m.left_row)):
            if m.left_row not in used_left and m.right_row not in used_right:
                kept.append(m)
                used_left.add(m.left_row)
                used_right.add(m.right_row)
        matches = sorted(kept, key=lambda m: (m.right_row, m.rank))
    return matches


def write_matches(path: str | Path, matches: list[Match]) -> None:
    """Write matches as CSV (right_row, right_value, left_row, left_value, rank, score)."""
    with atomic_write(path, newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["right_row", "right_value", "left_row", "left_value", "rank", "score"])
        for m in matches:
            writer.writerow([m.right_row, m.right_value, m.left_row, m.left_value, m.rank, m.score])
