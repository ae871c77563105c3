"""Fuzzy join: match each row of a right table to its most similar rows of a left table.

Values are embedded with any phrasekit encoder (each distinct string once), every right value
is searched against all left values by cosine (top-k; exact search, or a faiss HNSW index for
large left tables, see ``similarity.index.build_index``), candidates under ``threshold`` are
dropped, and ``one_to_one`` optionally keeps each left and right row in at most one match
(greedy by decreasing score).

:func:`write_joined` writes the matches with every other column of both tables (``left_*``,
``right_*``); ``how="left"`` also writes each right row that has no match, once, with empty
left columns. ``DEFAULT_THRESHOLDS`` holds the cosine threshold chosen for the default model on
AutoFJ (``benchmarks/matching/join_threshold_dev.py``).
"""

from __future__ import annotations

import logging
import numbers
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from phrasekit.encoders.base import Encoder, as_text_list, distinct, known_rows
from phrasekit.errors import check_int
from phrasekit.registry import as_encoder, registered_base
from phrasekit.similarity.hybrid import K_EMBED, SCORERS, hybrid_top_k, shipped_combiner
from phrasekit.similarity.index import (
    ANN_MIN_QUERIES,
    ANN_THRESHOLD,
    SearchIndex,
    build_index,
    resolve_kind,
)
from phrasekit.tables import SafeWriter as SafeWriter  # re-exported: callers import it here
from phrasekit.tables import Table, TableError, is_missing, write_table
from phrasekit.tables import column_values as column_values
from phrasekit.tables import read_table as read_table

logger = logging.getLogger(__name__)

JOIN_HOWS = ("inner", "left")
#: The output's own columns; the tables' other columns follow as ``left_<name>``,
#: ``right_<name>``.
MATCH_COLUMNS = ("right_row", "right_value", "left_row", "left_value", "rank", "score")
#: Default ``--threshold`` per model: the cosine in 0.00, 0.01, ..., 1.00 that maximised the
#: F1 of top-1 matches on the dev half of AutoFJ (right rows 0, 2, 4, ... of all 50 tables;
#: ``benchmarks/matching/join_threshold_dev.py``): minilm 0.70, dev F1 68.8 (P 72.9,
#: R 65.2) against 67.7 without a threshold, the held-out half 69.5 against 68.4;
#: pearl-minilm (the default of `join`) 0.73, dev F1 68.7 (P 73.1, R 64.8) against 67.6, the
#: held-out half 69.6 against 68.4.
DEFAULT_THRESHOLDS: dict[str, float] = {"minilm": 0.70, "pearl-minilm": 0.73}


def resolve_threshold(threshold: float | str | None, model: Any, scorer: str = "hybrid"
                      ) -> float | None:
    """``threshold="default"``: :func:`default_threshold` of the model and scorer, as
    ``phrasekit join`` takes it (by the name given, else the encoder's name); a number, or
    None for no threshold, as it is."""
    if isinstance(threshold, str):
        if threshold != "default":
            raise ValueError(f"threshold is a number, 'default' or None, got {threshold!r}")
        name = model if isinstance(model, str | Path) else getattr(model, "name", None)
        name = Path(name).name if isinstance(name, Path) or Path(str(name)).is_dir() else name
        return default_threshold(str(name), scorer) if name is not None else None
    if isinstance(threshold, bool | np.bool_) or not (threshold is None
                                                     or isinstance(threshold, numbers.Real)):
        raise TypeError(f"threshold is a number, 'default' or None, got {threshold!r}")
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
    uniq, inverse = distinct(values)
    vecs = encoder.encode(uniq, show_progress=show_progress)
    return vecs[inverse]


def join_values(values: Any, side: str, skip_empty: bool = False) -> list[tuple[int, str]]:
    """A join side as ``(row, text)`` pairs: given as such pairs, or as texts in a list, a
    NumPy array, a pandas, Polars or Arrow series or a ``pyarrow`` (chunked) array (row: the
    position). A missing value (None, NaN, pandas NA, an Arrow or Polars null) or a blank text
    raises ``ValueError`` naming its position, or is skipped with ``skip_empty``; any other
    value that is not a string is refused the same way."""
    import narwhals.stable.v2 as nw

    if isinstance(values, str):
        raise TypeError(f"{side} must be a list of texts, not one string")
    if callable(getattr(values, "to_pylist", None)):  # pyarrow Array, ChunkedArray
        values = values.to_pylist()
    try:
        values = nw.from_native(values, series_only=True).to_list()
    except TypeError:
        values = as_text_list(values, side)
    if values and all(isinstance(v, tuple) and len(v) == 2 for v in values):
        return _checked_pairs(values, side, skip_empty)
    out: list[tuple[int, str]] = []
    for i, text in enumerate(values):
        missing = is_missing(text) or (isinstance(text, str) and not text.strip())
        if missing and skip_empty:
            continue
        if missing or not isinstance(text, str):
            what = "missing" if is_missing(text) else repr(text)
            raise ValueError(f"{side} value {i} is {what}, not a non-empty text (skip it "
                             "with skip_empty=True)")
        out.append((i, text.strip()))
    if len(out) < len(values):
        logger.warning("%s: skipped %d missing or empty values", side, len(values) - len(out))
    return out


def _checked_pairs(pairs: list[tuple[Any, Any]], side: str, skip_empty: bool
                   ) -> list[tuple[int, str]]:
    """``(row, text)`` pairs with integer rows, each row once, and non-empty texts
    (stripped); a pair that breaks this raises ``ValueError`` naming its position."""
    out: list[tuple[int, str]] = []
    seen: set[int] = set()
    for i, (row, text) in enumerate(pairs):
        if isinstance(row, bool) or not isinstance(row, int | np.integer):
            raise ValueError(f"{side} pair {i}: its row {row!r:.40} is not an integer (give "
                             "(row, text) pairs with integer rows, or a list of texts)")
        if int(row) in seen:
            raise ValueError(f"{side} pair {i}: row {row} is given twice")
        seen.add(int(row))
        if isinstance(text, str) and text.strip():
            out.append((int(row), text.strip()))
        elif not (skip_empty and (is_missing(text) or isinstance(text, str))):
            what = "missing" if is_missing(text) else repr(text)
            raise ValueError(f"{side} pair {i} (row {row}): its text is {what:.60}, not a "
                             "non-empty text")
    return out


def default_threshold(model: str, scorer: str = "hybrid") -> float | None:
    """The default threshold of a join with encoder ``model``: the hybrid combiner's match
    probability (chosen by F1 on AutoFJ's dev half), or for ``cosine`` the model's cosine in
    ``DEFAULT_THRESHOLDS`` (None for other models)."""
    check_scorer(scorer)
    if scorer == "hybrid":
        return shipped_combiner(model, warn=False).threshold
    return DEFAULT_THRESHOLDS.get(registered_base(model))


def check_scorer(scorer: str) -> None:
    """Raise ValueError naming the scorers when ``scorer`` is not one."""
    if scorer not in SCORERS:
        raise ValueError(f"scorer must be one of {', '.join(SCORERS)}, got {scorer!r}")


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
    scorer: str = "hybrid",
    combiner: Any = None,
) -> list[Match]:
    """Top-``k`` left candidates for every right value, as ``Match`` rows sorted by right row.

    ``scorer="hybrid"`` (default): candidates of the embedding search united with a character
    n-gram search, each scored by the learned combiner (``similarity.hybrid``; ``combiner``
    replaces the shipped one): ``score`` is a match probability. ``scorer="cosine"``: the
    embedding's cosine alone. ``threshold`` drops candidates with a lower score (None: none;
    :func:`default_threshold` gives the chosen one); ``one_to_one`` keeps, greedily by
    decreasing score, only pairs whose left and right rows are still unmatched. ``index`` is
    ``"exact"``, ``"ann"`` (faiss HNSW) or ``"auto"`` (ANN from ``ann_threshold`` left rows and
    ``ann_min_queries`` right rows on). ``search(index, left_vectors, right_vectors, k)``
    replaces the in-process embedding search (e.g. a sharded one on a cluster). ``encoder``:
    an encoder, or a model name or folder (``phrasekit.load``). ``left`` and ``right``:
    ``(row, text)`` pairs, or texts (a list, or a pandas, Polars or Arrow series; rows are then
    positions), see :func:`join_values`. ``threshold="default"``:
    the model's and scorer's, as ``phrasekit join`` takes it (:func:`resolve_threshold`).
    """
    check_scorer(scorer)
    threshold = resolve_threshold(threshold, encoder, scorer)
    encoder = as_encoder(encoder)
    left, right = join_values(left, "left"), join_values(right, "right")
    check_int("k", k, 1)
    if not isinstance(one_to_one, bool | np.bool_):
        raise TypeError(f"one_to_one is True or False, got {one_to_one!r}")
    if combiner is not None and not callable(getattr(combiner, "predict", None)):
        raise TypeError(f"combiner must be a fitted combiner (with predict), got "
                        f"{type(combiner).__name__}")
    low = 0.0 if scorer == "hybrid" else -1.0
    if threshold is not None and not low <= threshold <= 1.0:
        raise ValueError(f"threshold is a {'probability' if low == 0 else 'cosine'} in "
                         f"[{low:g}, 1], got {threshold}")
    if not left or not right:
        raise ValueError("both tables need at least one value to join")
    # validate before encoding; a join is a one-off search, so the query count matters too
    kind = resolve_kind(index, len(left), ann_threshold, n_queries=len(right),
                        min_queries=ann_min_queries, dim=getattr(encoder, "dim", None))
    left_vecs = _embed(encoder, [v for _, v in left], show_progress)
    right_vecs = _embed(encoder, [v for _, v in right], show_progress)
    search_index = build_index(left_vecs, kind=kind, show_progress=show_progress)
    logger.info("searching %d right rows in %s", len(right), search_index.describe())
    k_search = k if scorer == "cosine" else min(max(k, K_EMBED), len(left))
    if search is None:
        scores, ids = search_index.search(right_vecs, k=k_search, show_progress=show_progress)
    else:
        scores, ids = search(search_index, left_vecs, right_vecs, k_search)
    if scorer == "hybrid":
        scores, ids = hybrid_top_k(
            [v for _, v in left], [v for _, v in right], left_vecs, right_vecs, ids, k,
            combiner or _combiner_for(encoder), show_progress=show_progress,
            encode=encoder.encode)
        unknown = np.zeros(len(right), dtype=bool)
    else:
        unknown = _unknown(encoder, right, right_vecs)
    matches = _matches(left, right, scores, ids, threshold, unknown)
    return _one_to_one(matches) if one_to_one else matches


def _combiner_for(encoder: Encoder) -> Any:
    return shipped_combiner(getattr(encoder, "name", ""))


def _unknown(encoder: Encoder, right: list[tuple[int, str]], right_vecs: np.ndarray
             ) -> np.ndarray:
    """Right rows the encoder knows nothing of (no GloVe word): they match only an identical
    left value under the cosine scorer."""
    unknown = ~known_rows(encoder, [v for _, v in right], right_vecs)
    if unknown.any():
        logger.warning("%d right value(s) have no known word for %s; they match only an "
                       "identical left value", int(unknown.sum()), getattr(encoder, "name", ""))
    return unknown


def _matches(left: list[tuple[int, str]], right: list[tuple[int, str]], scores: np.ndarray,
             ids: np.ndarray, threshold: float | None, unknown: np.ndarray) -> list[Match]:
    """Match rows of every right row's ranked candidates above ``threshold``."""
    matches: list[Match] = []
    for i, (r_row, r_val) in enumerate(right):
        for rank, (score, j) in enumerate(zip(scores[i], ids[i], strict=True), start=1):
            if j < 0 or (threshold is not None and score < threshold) or (
                    unknown[i] and score < 0.9999):
                break
            l_row, l_val = left[int(j)]
            matches.append(Match(r_row, r_val, l_row, l_val, rank, round(float(score), 6)))
    return matches


def _one_to_one(matches: list[Match]) -> list[Match]:
    """Greedily by decreasing score, the matches whose left and right rows are still free."""
    used_left: set[int] = set()
    used_right: set[int] = set()
    kept = []
    for m in sorted(matches, key=lambda m: (-m.score, m.right_row, m.left_row)):
        if m.left_row not in used_left and m.right_row not in used_right:
            kept.append(m)
            used_left.add(m.left_row)
            used_right.add(m.right_row)
    return sorted(kept, key=lambda m: (m.right_row, m.rank))


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
