"""Tables in and out: CSV, TSV and Parquet read with errors that name the file and line; CSV,
TSV, JSON lines and Parquet written by the output's suffix, whole or not at all (``-``: stdout,
for the text formats)."""

from __future__ import annotations

import contextlib
import csv
import json
import logging
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import numpy as np

from phrasekit.io import atomic_write, input_problem
from phrasekit.paths import csv_reader, utf8_problem

if TYPE_CHECKING:
    import pyarrow as pa

logger = logging.getLogger(__name__)

#: The output path that means standard output.
STDOUT = "-"
#: Table formats by file suffix (anything else is written as CSV).
TABLE_SUFFIXES = {".csv": "csv", ".txt": "csv", ".tsv": "tsv", ".jsonl": "jsonl",
                  ".parquet": "parquet", ".pq": "parquet"}
#: Suffixes :func:`read_table` reads.
READ_SUFFIXES = (".csv", ".tsv", ".parquet", ".pq")
#: First characters that make a spreadsheet read a cell as a formula (CSV injection).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


class TableError(ValueError):
    """A table that cannot be read: missing, malformed, missing column, empty cells."""


def is_stdout(path: str | Path | None) -> bool:
    """Whether an output path is ``-`` (standard output)."""
    return path is not None and str(path) == STDOUT


def table_format(path: str | Path) -> str:
    """The format a table output's suffix names: csv (also the default), tsv, jsonl or
    parquet; ``-`` is CSV on stdout."""
    return "csv" if is_stdout(path) else TABLE_SUFFIXES.get(Path(path).suffix.lower(), "csv")


class SafeWriter:
    """A ``csv.writer`` whose text cells that a spreadsheet would run as a formula (starting
    with ``=``, ``+``, ``-``, ``@``, tab or CR) are written with a leading ``'``, which shows
    them as text (``safe=False`` writes every cell as it is)."""

    def __init__(self, fh: Any, safe: bool = True, **fmt: Any) -> None:
        self._writer, self.safe = csv.writer(fh, **fmt), safe

    def writerow(self, row: Iterable[Any]) -> None:
        """Write one row, text cells made safe; a list or mapping cell (a Parquet list or
        struct column passed through) is written as JSON, not as Python's repr."""
        cells = [json.dumps(c, ensure_ascii=False, default=str)
                 if isinstance(c, list | tuple | dict) else c for c in row]
        self._writer.writerow([f"'{c}" if self.safe and isinstance(c, str)
                               and c.startswith(FORMULA_STARTS) else c for c in cells])

    def writerows(self, rows: Iterable[Iterable[Any]]) -> None:
        """Write rows, text cells made safe."""
        for row in rows:
            self.writerow(row)


@contextlib.contextmanager
def open_text_out(path: str | Path) -> Iterator[Any]:
    """A text output: stdout for ``-``, else a file written atomically."""
    if is_stdout(path):
        yield sys.stdout
        sys.stdout.flush()
        return
    with atomic_write(path, newline="") as fh:
        yield fh


def arrow_columns(header: Sequence[str], rows: list[Sequence[Any]]) -> Any:
    """Rows as a ``pyarrow.Table``; a column whose values mix types is written as text."""
    import pyarrow as pa

    arrays = []
    for i, _ in enumerate(header):
        values = [row[i] for row in rows]
        try:
            arrays.append(pa.array(values))
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            arrays.append(pa.array([None if v is None else str(v) for v in values]))
    return pa.Table.from_arrays(arrays, names=list(header))


def write_parquet(path: str | Path, table: Any) -> None:
    """Write a ``pyarrow.Table`` as Parquet, atomically."""
    import pyarrow.parquet as pq

    with atomic_write(path, "wb") as fh:
        pq.write_table(table, fh)


def write_table(path: str | Path, header: Sequence[str], rows: Iterable[Sequence[Any]],
                csv_safe: bool = True, fmt: str | None = None) -> int:
    """Write rows in format ``fmt`` (csv, tsv, jsonl, parquet), by default the one of
    ``path``'s suffix (:func:`table_format`; ``-``: CSV on stdout); None is an empty cell
    (null in Parquet and JSON). ``csv_safe``: CSV and TSV text cells that start like a formula
    get a leading ``'`` (:class:`SafeWriter`), on stdout as in a file. Returns the rows
    written."""
    fmt = fmt or table_format(path)
    if fmt == "parquet":
        kept = list(rows)
        write_parquet(path, arrow_columns(header, kept))
        return len(kept)
    written = 0
    with open_text_out(path) as fh:
        if fmt == "jsonl":
            for row in rows:
                fh.write(json.dumps(dict(zip(header, row, strict=True)), ensure_ascii=False,
                                    default=str) + "\n")
                written += 1
            return written
        writer = SafeWriter(fh, csv_safe, **({"delimiter": "\t"} if fmt == "tsv" else {}))
        writer.writerow(header)
        for row in rows:
            writer.writerow(row)
            written += 1
    return written


def _text_chunks(texts: Iterator[str], chunks: Iterable[np.ndarray]
                 ) -> Iterator[tuple[list[str], np.ndarray]]:
    """Each chunk of vectors with the texts it encodes (the next ``len(chunk)`` texts)."""
    for chunk in chunks:
        batch = list(islice(texts, len(chunk)))
        if len(batch) != len(chunk):
            raise ValueError(f"{len(chunk)} vectors for {len(batch)} texts")
        yield batch, chunk


def write_vector_table(path: str | Path, texts: Iterable[str], chunks: Iterable[np.ndarray],
                       dtype: str = "float32") -> int:
    """Write texts with their vectors, chunk by chunk as they come: Parquet (``text``, and
    ``vector`` as a fixed-size list of ``dtype``) or JSON lines (``-``: stdout). Returns the
    rows written."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    pairs, written = _text_chunks(iter(texts), chunks), 0
    if table_format(path) != "parquet":
        with open_text_out(path) as fh:
            for batch, chunk in pairs:
                for text, vec in zip(batch, chunk.astype(dtype).tolist(), strict=True):
                    fh.write(json.dumps({"text": text, "vector": vec}, ensure_ascii=False)
                             + "\n")
                written += len(batch)
        return written
    with atomic_write(path, "wb") as fh:
        writer = None
        for batch, chunk in pairs:
            table = pa.table({"text": pa.array(batch, pa.string()),
                              "vector": matrix_column(chunk.astype(dtype))})
            writer = writer or pq.ParquetWriter(fh, table.schema)
            writer.write_table(table)
            written += len(batch)
        if writer is None:
            raise ValueError(f"{path}: no rows to write")
        writer.close()
    return written


#: What a file's suffix names, as messages say it: every reader and writer's one table.
FORMAT_NAMES = {".npy": "a NumPy matrix", ".csv": "CSV", ".tsv": "tab-separated text",
                ".parquet": "Parquet", ".pq": "Parquet", ".json": "JSON",
                ".jsonl": "JSON lines", ".ndjson": "JSON lines", ".xlsx": "an Excel workbook",
                ".xls": "an Excel workbook", ".txt": "text", ".gz": "a compressed file",
                ".zip": "a zip archive"}
#: Suffixes of files that are not tables (read as CSV they would give one odd column).
NOT_TABLES = (".jsonl", ".ndjson", ".json", ".xlsx", ".xls", ".npy", ".gz", ".zip")


@dataclass
class Table:
    """A table read from CSV, TSV or Parquet: its header and data rows."""

    path: Path
    header: list[str]
    rows: list[tuple[int, int, list[Any]]] = field(default_factory=list)
    """``(data row number, file line, fields)``; row numbers are 0-based, header excluded (a
    blank line takes a number but is no row; in a one-column table it is a row with an empty
    cell, unless only blank lines follow it). Parquet rows' "line" is their row number + 1, a
    data frame's its position."""
    by_row: bool = False
    """Whether rows are named by number (Parquet, data frames) rather than by file line."""

    def column(self, name: str) -> int:
        """Position of column ``name``; ``TableError`` listing the columns when absent."""
        if name not in self.header:
            raise TableError(f"{self.path}: no column {name!r}; columns are {self.header}")
        return self.header.index(name)

    def where(self, line: int) -> str:
        """A row's place for an error: ``file:line``, or ``file row N`` (``by_row``)."""
        return f"{self.path} row {line}" if self.by_row else f"{self.path}:{line}"


def _check_header(path: Path, header: list[str]) -> list[str]:
    seen: set[str] = set()
    for name in header:
        if name in seen:
            raise TableError(f"{path}: duplicate column {name!r} in the header row")
        seen.add(name)
    return header


def _read_parquet(path: Path) -> Table:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        data = pq.read_table(path)
    except (pa.ArrowException, OSError) as exc:
        raise TableError(f"{path}: not a readable Parquet file ({exc})") from exc
    table = Table(path, _check_header(path, list(data.column_names)), by_row=True)
    columns = [data.column(i).to_pylist() for i in range(data.num_columns)]
    table.rows = [(i, i + 1, [col[i] for col in columns]) for i in range(data.num_rows)]
    return table


def _warn_other_separator(path: Path, header: list[str], delimiter: str) -> None:
    """A one-column header holding another separator is most often a file split by it."""
    other = next((c for c in (";", "\t", ",", "|") if c != delimiter and c in header[0]), None)
    if len(header) == 1 and other is not None:
        logger.warning("%s: one column, named %r: if the file is separated by %r, rewrite it "
                       "with %r (or as .tsv / .parquet)", path, header[0], other, delimiter)


def read_table(path: str | Path) -> Table:
    """Read a table with a header row: Parquet (``.parquet``/``.pq``), tab-separated
    (``.tsv``) or UTF-8 CSV (anything else).

    Raises ``TableError`` naming the file (and line) for a missing file, bad encoding, malformed
    CSV, a repeated column name in the header, or a row with the wrong number of fields.
    """
    path = Path(path)
    problem = input_problem(path, "table file")
    if problem is not None:
        raise TableError(problem)
    if path.suffix.lower() in (".parquet", ".pq"):
        return _read_parquet(path)
    if path.suffix.lower() in NOT_TABLES:
        raise TableError(f"{path}: {FORMAT_NAMES[path.suffix.lower()]} is not a table format "
                         "phrasekit reads; give CSV, .tsv or .parquet (with a header row)")
    if path.suffix.lower() != ".tsv":
        return _read_delimited(path, ",", csv.QUOTE_MINIMAL)
    try:
        return _read_delimited(path, "\t", csv.QUOTE_MINIMAL)
    except TableError as quoted:  # a cell such as '"Weird" Al Yankovic' in a TSV of no quoting
        try:
            table = _read_delimited(path, "\t", csv.QUOTE_NONE)
        except TableError as literal:  # the error of the reading that got further
            further = getattr(literal, "line", 0) > getattr(quoted, "line", 0)
            raise (literal if further else quoted) from None
        logger.info("%s: read as tab-separated text without quoting", path)
        return table


def _read_delimited(path: Path, delimiter: str, quoting: int) -> Table:
    """``read_table`` of a CSV or TSV file with ``quoting`` (csv's constant)."""
    reader: Any = None
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            reader = csv_reader(fh, strict=True, delimiter=delimiter, quoting=quoting)
            header = next(reader, None)
            if not header:
                raise TableError(f"{path}: empty file (no header row)")
            table = Table(path, _check_header(path, [h.strip().lstrip("\ufeff")
                                                     for h in header]))
            _warn_other_separator(path, table.header, delimiter)
            blanks: list[tuple[int, int]] = []  # a one-column table's blank lines so far
            for row_no, row in enumerate(reader):
                if not row:  # no row of several fields; in one column an empty cell, unless
                    if len(header) == 1:  # only blank lines follow (the file's end)
                        blanks.append((row_no, reader.line_num))
                    continue
                table.rows.extend((n, line, [""]) for n, line in blanks)
                blanks.clear()
                if len(row) != len(header):
                    raise _at_line(TableError(f"{path}:{reader.line_num}: {len(row)} fields "
                                              f"where the header has {len(header)}"),
                                   reader.line_num)
                table.rows.append((row_no, reader.line_num, row))
    except UnicodeDecodeError as exc:
        raise TableError(utf8_problem(str(path), exc, path)) from exc
    except csv.Error as exc:
        where = f"{path}:{reader.line_num}" if reader is not None else str(path)
        kind = "CSV" if delimiter == "," else "TSV"
        raise _at_line(TableError(f"{where}: malformed {kind} ({exc})"),
                       reader.line_num if reader is not None else 0) from exc
    return table


def _at_line(exc: TableError, line: int) -> TableError:
    """``exc`` carrying the line it names (which of two readings got further)."""
    exc.line = line  # type: ignore[attr-defined]
    return exc


def is_missing(value: Any) -> bool:
    """Whether a cell is missing: None, a float NaN (pandas, NumPy), pandas' ``NA`` or
    ``NaT`` (frames read as lists give these for their nulls)."""
    if value is None:
        return True
    if isinstance(value, float | np.floating):
        return bool(np.isnan(value))
    return type(value).__name__ in ("NAType", "NaTType")


def column_values(table: Table, column: str, skip_empty: bool = False,
                  option: str = "skip_empty=True", required: bool = True
                  ) -> list[tuple[int, str]]:
    """``(data row number, stripped value)`` of ``column``; an empty cell raises ``TableError``
    naming the file and line (unless ``skip_empty``: skipped with a logged count), and so does
    a column without values when ``required``."""
    col = table.column(column)
    out: list[tuple[int, str]] = []
    skipped = 0
    for row_no, line, row in table.rows:
        cell = row[col]
        if isinstance(cell, bool | list | tuple | dict | bytes | bytearray):  # Parquet / frames
            raise TableError(f"{table.where(line)}: {column!r} holds a {type(cell).__name__} "
                             f"({cell!r:.40}), not text")
        value = "" if is_missing(cell) else str(cell).strip()  # numbers (ids) read as text
        if value:
            out.append((row_no, value))
        elif skip_empty:
            skipped += 1
        else:
            raise TableError(f"{table.where(line)}: empty {column!r} cell ({option} skips "
                             "such rows)")
    if skipped:
        logger.warning("%s: skipped %d empty %r cells", table.path, skipped, column)
    if not out and required:
        raise TableError(f"{table.path}: no values in column {column!r}")
    return out


def only_column(table: Table, column: str | None, option: str = "--column") -> str:
    """``column``, or the table's only column when None; a table of several columns and no
    choice raises ``TableError`` listing them."""
    if column is not None:
        table.column(column)
        return column
    if len(table.header) != 1:
        raise TableError(f"{table.path}: {len(table.header)} columns {table.header}; choose one "
                         f"with {option}")
    return table.header[0]


def matrix_column(matrix: np.ndarray) -> pa.FixedSizeListArray:
    """An (n, d) matrix as an Arrow column of fixed-size lists (its dtype kept)."""
    import pyarrow as pa  # not needed by the readers and writers above

    flat = pa.array(np.ascontiguousarray(matrix).reshape(-1))
    return pa.FixedSizeListArray.from_arrays(flat, int(matrix.shape[1]))


def column_matrix(column: pa.ChunkedArray | pa.Array, width: int) -> np.ndarray:
    """The (n, width) matrix of a ``matrix_column``."""
    import pyarrow as pa

    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    return column.flatten().to_numpy(zero_copy_only=False).reshape(-1, width)


# ------------------------------------------------------------------ .npy matrices
VECTOR_DTYPES = ("float32", "float16")


def write_npy_rows(fh: BinaryIO, chunks: Iterable[np.ndarray], n_rows: int, dim: int,
                   dtype: str = "float32") -> None:
    """Write an ``(n_rows, dim)`` ``.npy`` to ``fh`` from row chunks as they come, so the
    matrix is never whole in memory; a stream that ends with another row count raises."""
    dt = np.dtype(dtype)
    np.lib.format.write_array_header_1_0(fh, {"descr": np.lib.format.dtype_to_descr(dt),
                                              "fortran_order": False, "shape": (n_rows, dim)})
    rows = 0
    for chunk in chunks:
        if chunk.ndim != 2 or chunk.shape[1] != dim or rows + len(chunk) > n_rows:
            raise ValueError(f"rows of shape {chunk.shape} do not fit a ({n_rows}, {dim}) "
                             f"matrix after {rows} rows")
        fh.write(np.ascontiguousarray(chunk, dtype=dt).tobytes())
        rows += len(chunk)
    if rows != n_rows:
        raise ValueError(f"expected {n_rows} rows, got {rows}")


def load_npy(path: str | Path, error: type[Exception] = ValueError) -> Any:
    """Load a plain ``.npy`` array (never pickled objects); missing/bad files raise ``error``."""
    path = Path(path)
    if not path.is_file():
        raise error(f"{path} is missing")
    try:
        return np.load(path, allow_pickle=False)
    except ValueError as exc:
        raise error(f"{path}: not a plain .npy array ({exc})") from exc
