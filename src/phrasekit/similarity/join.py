"""Fuzzy join: match each row of a right table to its most similar rows of a left table.

Values are embedded with any phrasekit encoder (each distinct string once), every right value
is searched against all left values by cosine (top-k; exact search, or a faiss HNSW index for
large left tables, see ``similarity.index.build_index``), candidates under ``threshold`` are
dropped, and ``one_to_one`` optionally keeps each left and right row in at most one match
(greedy by decreasing score).

:func:`write_joined` writes the matches with every other column of both tables (``left_*``,
``right_*``); ``how="left"`` also writes each right row that has no match, once, with empty
left columns. ``DEFAULT_THRESHOLDS`` holds the cosine threshold chosen for the default model on
AutoFJ (``benchmarks/join_threshold_dev.py``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from phrasekit.encoders.base import Encoder, known_rows
from phrasekit.registry import as_encoder
from phrasekit.similarity.index import (
    ANN_MIN_QUERIES,
    ANN_THRESHOLD,
    SearchIndex,
    build_index,
    resolve_kind,
)
from phrasekit.tables import SafeWriter as SafeWriter  # re-exported: callers import it here
from phrasekit.tables import Table, TableError, write_table
from phrasekit.tables import column_values as column_values
from phrasekit.tables import read_table as read_table

logger = logging.getLogger(__name__)

JOIN_HOWS = ("inner", "left")
#: The output's own columns; the tables' other columns follow as ``left_<name>``,
#: ``right_<name>``.
MATCH_COLUMNS = ("right_row", "right_value", "left_row", "left_value", "rank", "score")
#: Default ``--threshold`` per model: the cosine in 0.00, 0.01, ..., 1.00 that maximised the
#: F1 of top-1 matches on the dev half of AutoFJ (right rows 0, 2, 4, ... of all 50 tables;
#: ``benchmarks/join_threshold_dev.py``): minilm 0.70, dev F1 68.8 (P 72.9,
#: R 65.2) against 67.7 without a threshold, the held-out half 69.5 against 68.4;
#: pearl-minilm (the default of `join`) 0.73, dev F1 68.7 (P 73.1, R 64.8) against 67.6, the
#: held-out half 69.6 against 68.4.
DEFAULT_THRESHOLDS: dict[str, float] = {"minilm": 0.70, "pearl-minilm": 0.73}


def resolve_threshold(threshold: float | str | None, model: Any) -> float | None:
    """``threshold="default"``: the model's ``DEFAULT_THRESHOLDS`` entry, as ``phrasekit
    join`` takes it (by the name given, else the encoder's name; None for a model without
    one); a number, or None for no threshold, as it is."""
    if isinstance(threshold, str):
        if threshold != "default":
            raise ValueError(f"threshold is a cosine in [-1, 1], 'default' or None, got "
                             f"{threshold!r}")
        name = model if isinstance(model, str | Path) else getattr(model, "name", None)
        return DEFAULT_THRESHOLDS.get(str(name)) if name is not None else None
    return threshold


#: A search function: (index over the left vectors, left vectors, right vectors, k) ->
#: (scores, ids), as ``SearchIndex.search`` gives them.
Search = Callable[[SearchIndex, np.ndarray, np.ndarray, int], tuple[np.ndarray, np.ndarray]]


#: A table that cannot be joined: unreadable, malformed, missing column, empty cells.
JoinError = TableError


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
    CSV, a repeated or missing column (listing those present) or an empty cell (unless
    ``skip_empty``).
    """
    return column_values(read_table(path), column, skip_empty=skip_empty)


def _embed(encoder: Encoder, values: list[str], show_progress: bool) -> np.ndarray:
    """Encode each distinct value once and spread the vectors back to every row."""
    uniq, inverse = np.unique(np.asarray(values, dtype=object).astype(str), return_inverse=True)
    vecs = encoder.encode(uniq.tolist(), show_progress=show_progress)
    return vecs[inverse.reshape(-1)]


def join_values(values: Any, side: str) -> list[tuple[int, str]]:
    """A join side as ``(row, text)`` pairs: given as such pairs, or as texts in a list or a
    pandas, Polars or Arrow series (row: the position); a text that is not a non-empty string
    raises ``ValueError`` naming its position."""
    import narwhals.stable.v2 as nw

    try:
        values = nw.from_native(values, series_only=True).to_list()
    except TypeError:
        if isinstance(values, str):
            raise TypeError(f"{side} must be a list of texts, not one string") from None
        values = list(values)
    if all(isinstance(v, tuple) and len(v) == 2 for v in values):
        return values
    for i, text in enumerate(values):
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"{side} value {i} is {text!r}, not a non-empty text")
    return [(i, text.strip()) for i, text in enumerate(values)]


def fuzzy_join(
    left: list[tuple[int, str]] | Any,
    right: list[tuple[int, str]] | Any,
    encoder: Encoder | str | Path,
    k: int = 1,
    threshold: float | str | None = "default",
    one_to_one: bool = False,
    show_progress: bool = False,
    index: str = "auto",
    ann_threshold: int = ANN_THRESHOLD,
    ann_min_queries: int = ANN_MIN_QUERIES,
    search: Search | None = None,
) -> list[Match]:
    """Top-``k`` left candidates for every right value, as ``Match`` rows sorted by right row.

    ``threshold`` drops candidates with a lower cosine; ``one_to_one`` keeps, greedily by
    decreasing score, only pairs whose left and right rows are still unmatched. ``index`` is
    ``"exact"``, ``"ann"`` (faiss HNSW: approximate candidates, exact scores) or ``"auto"``
    (ANN from ``ann_threshold`` left rows and ``ann_min_queries`` right rows on: below either,
    exact search is faster than building the graph). ``search(index, left_vectors,
    right_vectors, k)`` replaces the in-process search (e.g. a sharded one on a cluster).
    ``encoder``: an encoder, or a model name or folder (``phrasekit.load``). ``left`` and
    ``right``: ``(row, text)`` pairs, or texts (a list, or a pandas, Polars or Arrow series;
    rows are then positions), see :func:`join_values`. ``threshold="default"``: the model's,
    as ``phrasekit join`` takes it (:func:`resolve_threshold`); None: no threshold.
    """
    threshold = resolve_threshold(threshold, encoder)
    encoder = as_encoder(encoder)
    left, right = join_values(left, "left"), join_values(right, "right")
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
    if search is None:
        scores, ids = search_index.search(right_vecs, k=k, show_progress=show_progress)
    else:
        scores, ids = search(search_index, left_vecs, right_vecs, k)
    # a value the encoder knows nothing of (no GloVe word) matches only its exact repeat
    unknown = ~known_rows(encoder, [v for _, v in right], right_vecs)
    if unknown.any():
        logger.warning("%d right value(s) have no known word for %s; they match only an "
                       "identical left value", int(unknown.sum()), getattr(encoder, "name", ""))
    matches: list[Match] = []
    for i, (r_row, r_val) in enumerate(right):
        for rank, (score, j) in enumerate(zip(scores[i], ids[i], strict=True), start=1):
            if j < 0 or (threshold is not None and score < threshold) or (
                    unknown[i] and score < 0.9999):
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


def write_matches(path: str | Path, matches: list[Match], csv_safe: bool = True) -> None:
    """Write matches (right_row, right_value, left_row, left_value, rank, score) in the format
    of ``path``'s suffix (``tables.write_table``)."""
    write_table(path, MATCH_COLUMNS, ([m.right_row, m.right_value, m.left_row, m.left_value,
                                       m.rank, m.score] for m in matches), csv_safe=csv_safe)


def carried_columns(left: Table, left_on: str, right: Table, right_on: str) -> list[str]:
    """Output header: ``MATCH_COLUMNS``, then every left column but ``left_on`` as
    ``left_<name>`` and every right column but ``right_on`` as ``right_<name>``; a name already
    taken (a column called ``row`` or ``value``) gets ``_2`` (``_3``...) appended."""
    header = list(MATCH_COLUMNS)
    taken = set(header)
    for prefix, table, on in (("left_", left, left_on), ("right_", right, right_on)):
        for name in table.header:
            if name == on:
                continue
            out, n = prefix + name, 2
            while out in taken:
                out, n = f"{prefix}{name}_{n}", n + 1
            header.append(out)
            taken.add(out)
    return header


def joined_rows(matches: list[Match], left: Table, left_on: str, right: Table, right_on: str,
                how: str = "inner") -> Iterator[list[Any]]:
    """The rows of :func:`write_joined` (None for an empty cell), in its order."""
    if how not in JOIN_HOWS:
        raise ValueError(f"how must be one of {', '.join(JOIN_HOWS)}, got {how!r}")
    lcol, rcol = left.column(left_on), right.column(right_on)
    left_rows = {row_no: row for row_no, _, row in left.rows}
    by_right: dict[int, list[Match]] = {}
    for m in matches:
        by_right.setdefault(m.right_row, []).append(m)
    l_other = [i for i in range(len(left.header)) if i != lcol]
    r_other = [i for i in range(len(right.header)) if i != rcol]
    for row_no, _, row in right.rows:
        found = by_right.get(row_no, [])
        if not found and how == "inner":
            continue
        r_cells = [row[i] for i in r_other]
        for m in found:
            lrow = left_rows[m.left_row]
            yield [m.right_row, m.right_value, m.left_row, m.left_value, m.rank, m.score,
                   *(lrow[i] for i in l_other), *r_cells]
        if not found:
            value = row[rcol]
            yield [row_no, None if value is None else str(value).strip(), None, None, None,
                   None, *([None] * len(l_other)), *r_cells]


def write_joined(path: str | Path, matches: list[Match], left: Table, left_on: str,
                 right: Table, right_on: str, how: str = "inner", csv_safe: bool = True
                 ) -> int:
    """Write matches with the other columns of both tables, in the format of ``path``'s suffix
    (CSV, TSV, JSON lines or Parquet; ``-``: CSV on stdout); return the rows written.

    ``how="inner"``: one row per match, by right row then rank. ``how="left"``: the right table
    is kept whole: every right data row appears, in file order, with its matches, or once with
    empty ``left_*`` columns, rank and score when it has none (also a row skipped for an empty
    join cell). ``csv_safe``: text cells that start like a formula get a leading ``'``
    (``tables.SafeWriter``).
    """
    rows = joined_rows(matches, left, left_on, right, right_on, how=how)
    return write_table(path, carried_columns(left, left_on, right, right_on), rows,
                       csv_safe=csv_safe)
