"""Data frames in and out: fuzzy-join two pandas, Polars or Arrow tables and get one of the same
kind back, or add a vector column to one; narwhals reads and builds the frames, so phrasekit
names no data-frame library itself.

``join_frames`` writes the columns of ``phrasekit join`` (right_row, right_value, left_row,
left_value, rank, score, then ``left_<name>`` and ``right_<name>`` for the other columns);
``encode_frame`` adds a column of L2-normalised vectors (a fixed-size list in Arrow and Polars,
arrays in pandas) and keeps the frame's pandas index; a joined frame is a new one, numbered
from 0.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from phrasekit.encoders.base import Encoder
from phrasekit.registry import DEFAULT_MODEL, JOIN_MODEL, as_encoder
from phrasekit.similarity.join import MATCH_COLUMNS, carried_columns, fuzzy_join, joined_rows
from phrasekit.tables import Table, arrow_columns, column_values, is_missing, matrix_column


def _frame(native: Any, name: str) -> Any:
    """``native`` as an eager narwhals frame; ``TypeError`` naming the argument otherwise."""
    import narwhals.stable.v2 as nw

    labels = getattr(native, "columns", None)  # a pandas Index has levels
    if getattr(labels, "nlevels", 1) > 1:
        raise ValueError(f"{name} has MultiIndex columns; flatten them to names first")
    if hasattr(labels, "nlevels") and not labels.is_unique:
        raise ValueError(f"{name} has the column {labels[labels.duplicated()][0]!r} more "
                         "than once")
    try:
        frame = nw.from_native(native, eager_only=True)
    except TypeError:
        raise TypeError(f"{name} must be a pandas, Polars or PyArrow table, got "
                        f"{type(native).__name__}") from None
    odd = [c for c in frame.columns if not isinstance(c, str)]
    if odd:
        raise ValueError(f"{name}'s column names must be strings; {odd[0]!r} is a "
                         f"{type(odd[0]).__name__} (rename the columns)")
    return frame


def _as_table(frame: Any, name: str) -> Table:
    """A narwhals frame as a ``tables.Table`` (rows named by position); a missing cell (None,
    NaN, pandas NA, an Arrow or Polars null) is None, the empty cell of the tables."""
    columns = [[None if is_missing(v) else v for v in frame[c].to_list()]
               for c in frame.columns]
    table = Table(Path(name), [str(c) for c in frame.columns], by_row=True)
    table.rows = [(i, i, [col[i] for col in columns]) for i in range(len(frame))]
    return table


def _like(table: Any, frame: Any) -> Any:
    """A ``pyarrow.Table`` as a native frame of ``frame``'s library; in pandas an integer or
    boolean column with nulls is a nullable ``Int64`` / ``UInt64`` / ``boolean`` column (not
    float64 or object)."""
    import narwhals.stable.v2 as nw
    import pyarrow as pa

    namespace = nw.get_native_namespace(frame)
    native = nw.from_arrow(table, backend=namespace).to_native()
    if getattr(namespace, "__name__", "") == "pandas":
        nullable = (("Int64", pa.types.is_signed_integer), ("UInt64", pa.types.is_unsigned_integer),
                    ("boolean", pa.types.is_boolean))
        for name, column in zip(table.column_names, table.columns, strict=True):
            for dtype, of_type in nullable:
                if of_type(column.type) and column.null_count:
                    native[name] = namespace.array(column.to_pylist(), dtype=dtype)
    return native


def join_frames(
    left: Any,
    right: Any,
    left_on: str,
    right_on: str | None = None,
    model: Encoder | str | Path = JOIN_MODEL,
    k: int = 1,
    threshold: float | str | None = "default",
    how: str = "inner",
    one_to_one: bool = False,
    skip_empty: bool = False,
    show_progress: bool = False,
    scorer: str = "hybrid",
) -> Any:
    """Fuzzy-join data frame ``right`` to ``left`` on one column each (``right_on``: default
    ``left_on``) and return the matches as a frame of ``right``'s library.

    ``model``: a model name or folder, an encoder, or any object with ``encode``
    (``phrasekit.load``). ``k``, ``threshold``, ``one_to_one``, ``how`` and ``scorer`` as in
    ``phrasekit join``: ``threshold="default"`` takes the model's and scorer's (0.34, a match
    probability, for the hybrid scorer), None keeps every candidate; an empty join cell raises
    ``ValueError``
    naming its row unless ``skip_empty``. A frame without rows (or, with ``skip_empty``,
    without a value) matches nothing, as in a frame library's join: the result has no rows,
    or with ``how="left"`` and such a ``left``, every right row unmatched.
    """
    left_frame, right_frame = _frame(left, "left"), _frame(right, "right")
    left_table, right_table = _as_table(left_frame, "left"), _as_table(right_frame, "right")
    right_on = left_on if right_on is None else right_on
    values = [column_values(table, on, skip_empty, "skip_empty=True", required=False)
              for table, on in ((left_table, left_on), (right_table, right_on))]
    if not values[0] or not values[1]:  # no rows, or (skip_empty) only empty cells
        matches = []
    else:
        matches = fuzzy_join(values[0], values[1], model, k=k, threshold=threshold,
                             one_to_one=one_to_one, show_progress=show_progress, scorer=scorer)
    header = carried_columns(left_table, left_on, right_table, right_on)
    rows = list(joined_rows(matches, left_table, left_on, right_table, right_on, how=how))
    n = len(MATCH_COLUMNS)
    carried = _carried(left_frame, left_on, right_frame, right_on, rows)
    if carried is None:  # a column Arrow cannot hold (mixed types): built from the values
        carried = arrow_columns(header[n:], [row[n:] for row in rows]).columns
    table = _match_table([row[:n] for row in rows])
    for name, column in zip(header[n:], carried, strict=True):
        table = table.append_column(name, column)
    return _like(table, right_frame)


def _match_table(rows: list[list[Any]]) -> Any:
    """The :data:`MATCH_COLUMNS` as an Arrow table of fixed types: integers and floats
    whether or not anything matched (null where a ``how="left"`` row has no match)."""
    import pyarrow as pa

    types = (pa.int64(), pa.string(), pa.int64(), pa.string(), pa.int64(), pa.float64())
    return pa.Table.from_arrays([pa.array([row[i] for row in rows], type=kind)
                                 for i, kind in enumerate(types)], names=list(MATCH_COLUMNS))


def _carried(left: Any, left_on: str, right: Any, right_on: str, rows: list[list[Any]]
             ) -> list[Any] | None:
    """The other columns of both frames for the joined ``rows``, taken from the frames'
    Arrow columns (so each keeps its type: categories, nullable booleans, unsigned
    integers), null where a row has no match; None where a frame does not convert to Arrow."""
    import pyarrow as pa

    try:
        left_arrow, right_arrow = left.to_arrow(), right.to_arrow()
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError):
        return None
    left_at = pa.array([row[2] for row in rows], type=pa.int64())
    right_at = pa.array([row[0] for row in rows], type=pa.int64())
    return [*(left_arrow.column(c).take(left_at) for c in left.columns if c != left_on),
            *(right_arrow.column(c).take(right_at) for c in right.columns if c != right_on)]


def encode_frame(
    frame: Any,
    column: str,
    model: Encoder | str | Path = DEFAULT_MODEL,
    vector_column: str = "vector",
    batch_size: int = 128,
    show_progress: bool = False,
) -> Any:
    """``frame`` (pandas, Polars or PyArrow) with a column ``vector_column`` of the
    L2-normalised vectors of its text column ``column``, as a frame of the same library."""
    nw_frame = _frame(frame, "frame")
    if column not in nw_frame.columns:
        raise ValueError(f"no column {column!r}; columns are {list(nw_frame.columns)}")
    if vector_column in nw_frame.columns:
        raise ValueError(f"the frame already has a column {vector_column!r}; name another "
                         "with vector_column=")
    texts = nw_frame[column].to_list()
    for i, text in enumerate(texts):
        if not isinstance(text, str) or not text.strip():
            what = "missing" if is_missing(text) else repr(text)
            raise ValueError(f"row {i} of column {column!r} is {what}, not a non-empty text")
    vectors = as_encoder(model).encode(texts, batch_size=batch_size, show_progress=show_progress)
    table = nw_frame.to_arrow()
    return _like(table.append_column(vector_column,
                                     matrix_column(np.asarray(vectors, np.float32))), nw_frame)
