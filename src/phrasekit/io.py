"""Small I/O helpers: atomic writes and corpus reading with clear errors."""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import json
import numbers
import os
import re
import tempfile
import textwrap
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any

from phrasekit.paths import (
    CORPUS_FOLDER_FILES,
    corpus_shards,
    own_siblings,
    real,
    stem,
    utf8_problem,
    what_is,
)


def umask() -> int:
    """The process umask (read by setting and restoring it)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


def pid_alive(pid: int) -> bool:
    """Whether a process with this id runs (leftovers of dead ones may be removed)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def remove_stale_temps(path: Path) -> None:
    """Delete ``atomic_write`` temp files beside ``path`` whose writer was killed (matched by
    exact name, never by a pattern made of the user's file name)."""
    for tmp, pid in own_siblings(path.parent, f".{stem(path.name)}.", r"\.[a-z0-9_]+\.tmp"):
        if not pid_alive(pid):
            with contextlib.suppress(OSError):
                tmp.unlink()


def writable_target(path: str | Path) -> Path:
    """The file an output ``path`` names: a symlink is followed (its target is replaced, the
    link kept); anything but a regular file or nothing there is refused with ``ValueError``."""
    path = Path(path)
    if path.is_symlink():
        path = real(path)
    if os.path.lexists(path) and not path.is_file():  # what_is names a FIFO or a device
        raise ValueError(f"{path} is {what_is(path)}, not a regular file; not replacing it")
    return path


@contextlib.contextmanager
def atomic_write(
    path: str | Path, mode: str = "w", encoding: str | None = "utf-8", newline: str | None = None
) -> Iterator[Any]:
    """Open a temp file next to ``path`` and move it into place only if the block succeeds."""
    path = writable_target(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{stem(path.name)}.{os.getpid()}.", suffix=".tmp",
                               dir=path.parent)
    try:
        kwargs = {} if "b" in mode else {"encoding": encoding, "newline": newline}
        with os.fdopen(fd, mode, **kwargs) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~umask())  # mkstemp makes 0600; give the usual file mode
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def json_loads(text: str | bytes) -> Any:
    """``json.loads``, with JSON nested deeper than Python's parser allows (a ``RecursionError``
    deep in the parser) raised as ``json.JSONDecodeError``, so every reader's malformed-JSON
    message, naming its file and line, covers it."""
    try:
        return json.loads(text)
    except RecursionError:
        raise json.JSONDecodeError("nested too deeply", "", 0) from None


def _json(obj: Any, path: str | Path) -> str:
    try:
        return json.dumps(obj, ensure_ascii=False, indent=2, allow_nan=False)
    except ValueError as exc:
        raise ValueError(f"{path}: refusing to write a non-finite number ({exc})") from exc


def write_json(path: str | Path, obj: Any, rows: tuple[str, Iterable[Any]] | None = None
               ) -> None:
    """Write ``obj`` as pretty UTF-8 JSON, atomically; NaN or infinity is refused (it is not
    JSON, and a number that went wrong must not be written as if it were a result).

    ``rows``: ``(key, items)``, a last key of the object whose list is written item by item
    as ``items`` yields them, so a list as long as a corpus is never held whole; the file is
    the same as with the list in ``obj``.
    """
    text = _json(obj, path)
    with atomic_write(path) as fh:
        if rows is None:
            fh.write(text + "\n")
            return
        key, items = rows
        if not isinstance(obj, dict) or key in obj:
            raise ValueError(f"{path}: rows need an object without the key {key!r}")
        fh.write(text[:-2] if obj else "{")
        fh.write(f"{',' if obj else ''}\n  {json.dumps(key, ensure_ascii=False)}: [")
        first = True
        for item in items:
            fh.write(("\n" if first else ",\n") + textwrap.indent(_json(item, path), "    "))
            first = False
        fh.write("]\n}\n" if first else "\n  ]\n}\n")


def read_json_object(path: str | Path, error: type[Exception] = ValueError) -> dict[str, Any]:
    """Parse a JSON file that must hold an object; bad encoding, bad JSON or a non-object raise
    ``error`` naming the file (so config readers share one set of messages)."""
    path = Path(path)
    try:
        obj = json_loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise error(f"{path}: malformed JSON ({exc})") from exc
    if not isinstance(obj, dict):
        raise error(f"{path}: expected a JSON object, got {type(obj).__name__}")
    return obj


def write_text(path: str | Path, text: str) -> None:
    """Write text atomically."""
    with atomic_write(path) as fh:
        fh.write(text)


def input_problem(path: str | Path, what: str = "file") -> str | None:
    """Why ``path`` cannot be read as an input ``what`` (a regular file), naming what it is: a
    FIFO, a device, a socket, a folder or nothing; None when it is a regular file."""
    path = Path(path)
    if path.is_file():  # False for a FIFO, a device or a socket
        return None
    if not os.path.lexists(path):
        if str(path) == "-":
            return f"- (stdin) is not read here: give the {what} by its path"
        return f"{what} not found: {path}"
    return f"{path} is {what_is(path)}, not a {what} (give a regular file)"


class CorpusError(ValueError):
    """A corpus file that cannot be read: missing, wrong encoding, malformed lines."""


@dataclass(frozen=True)
class Document:
    """One corpus document: an id, its text and any extra fields (label, keyphrases...)."""

    id: str
    text: str
    meta: dict[str, Any]

    def __post_init__(self) -> None:
        """An integer id is kept as its text, as a corpus file's is, so a document is the same
        after a model's save and load; other ids and non-string texts are refused."""
        if isinstance(self.id, numbers.Integral) and not isinstance(self.id, bool):
            object.__setattr__(self, "id", str(int(self.id)))
        if not isinstance(self.id, str) or not isinstance(self.text, str):
            raise TypeError(f"a Document needs a string or integer id and a string text, got "
                            f"{type(self.id).__name__} {self.id!r:.40} and "
                            f"{type(self.text).__name__}")


def iter_documents(docs: Iterable[Document | str]) -> Iterator[Document]:
    """``docs`` as ``Document`` objects, read lazily (a string gets its position as id)."""
    if docs is None or isinstance(docs, str | bytes) or not isinstance(docs, Iterable):
        raise TypeError(f"docs must be a list of Document objects or strings, got "
                        f"{type(docs).__name__}")
    for i, d in enumerate(docs):
        if isinstance(d, Document):
            yield d
        elif isinstance(d, str):
            yield Document(id=str(i), text=d, meta={})
        else:
            raise TypeError(f"docs[{i}] is {type(d).__name__}; expected Document or str")


def document_key(doc: Document) -> int:
    """An 8-byte digest of a document's id and text: how a fitted model knows documents
    without keeping their texts."""
    data = f"{doc.id}\0{doc.text}".encode("utf-8", "surrogatepass")
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little")


def iter_known_documents(docs: Iterable[Document | str], ids: Sequence[str], error: str,
                         keys: Mapping[int, int] | None = None
                         ) -> Iterator[tuple[int, Document]]:
    """``docs`` read lazily with their positions, checked id by id against ``ids`` (those of
    an earlier pass over the same corpus) and, at the positions of ``keys``, by
    :func:`document_key` (so that plain strings, whose ids are positions, are checked by
    text); a document that differs, or one too many or too few, raises
    ``ValueError(error + " (N documents; document n differs or is missing)")``."""
    n = 0
    keys = keys or {}
    for n, doc in enumerate(iter_documents(docs), start=1):
        if n > len(ids) or doc.id != ids[n - 1] or (
                n - 1 in keys and document_key(doc) != keys[n - 1]):
            break
        yield n - 1, doc
    else:
        if n == len(ids):
            return
        n += 1  # the first one missing
    raise ValueError(f"{error} ({len(ids)} documents; document {n} differs or is missing)")


def as_documents(docs: Iterable[Document | str]) -> list[Document]:
    """Accept ``Document`` objects or plain strings (given ids "0", "1", ...)."""
    if docs is None:
        raise TypeError("docs must be a list of Document objects or strings, got None")
    if isinstance(docs, str | bytes):
        raise TypeError("docs must be a list of documents, not a single string")
    return list(iter_documents(docs))


def _open_text(path: Path):
    """Open a (gzipped) UTF-8 file whose lines end at ``\\n`` only (a CR or U+2028 inside a
    document does not split it); a byte-order mark at its start is not text."""
    if path.suffix.lower() == ".gz":
        return gzip.open(path, "rt", encoding="utf-8-sig", newline="\n")
    return open(path, encoding="utf-8-sig", newline="\n")


def read_corpus(path: str | Path, text_field: str = "text", id_field: str = "id") -> list[Document]:
    """Read a corpus: JSONL (``.jsonl``/``.jsonl.gz``, one object per line with ``text_field``),
    Parquet (``.parquet``, a ``text_field`` column) or plain text (``.txt``/anything else: one
    document per non-empty line).

    A directory is accepted when it holds ``documents.jsonl`` or ``documents.jsonl.gz``, or
    Parquet shards (``*.parquet``, read in name order). Errors name the file and line (row).
    """
    return [d for batch in iter_corpus(path, text_field, id_field) for d in batch]


#: Documents per batch of ``iter_corpus``.
READ_BATCH = 1024


def iter_corpus(path: str | Path, text_field: str = "text", id_field: str = "id",
                batch_size: int = READ_BATCH) -> Iterator[list[Document]]:
    """``read_corpus``'s documents in lists of at most ``batch_size``, read from disk as they
    are consumed, so a corpus larger than memory can be streamed; the same formats, ids and
    errors (an error is raised when its line is reached)."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    files, kind = _corpus_files(Path(path))
    if kind == "text" and text_field != "text":
        raise CorpusError(f"{files[0]}: a plain-text corpus is one document per line, with no "
                          f"fields; the text field {text_field!r} (--text-field) applies to "
                          "JSONL and Parquet corpora")
    batches = _parquet_batches(files, text_field, id_field, batch_size) if kind == "parquet" \
        else _text_batches(files[0], kind == "jsonl", text_field, id_field, batch_size)
    found = False
    for batch in batches:
        found = True
        yield batch
    if not found:
        raise CorpusError(f"{files[0]}: no documents found")


@dataclass(frozen=True)
class StreamedCorpus:
    """A corpus on disk, read afresh on each pass (``iter_corpus``) and never held whole: for
    jobs that stream a corpus, once or more. ``count()`` reads it all once, which checks
    every line before the long work starts."""

    path: Path
    text_field: str = "text"
    id_field: str = "id"

    def __iter__(self) -> Iterator[Document]:
        for batch in iter_corpus(self.path, self.text_field, self.id_field):
            yield from batch

    def count(self) -> int:
        """The number of documents (raises ``CorpusError`` on the first bad line)."""
        return sum(len(b) for b in iter_corpus(self.path, self.text_field, self.id_field))


def document_location(path: str | Path, n: int) -> str:
    """Where the ``n``-th document (from 0) of a corpus is, as errors name it: ``file:line``
    (JSONL, text) or ``file: row r`` (Parquet)."""
    files, kind = _corpus_files(Path(path))
    if kind == "parquet":
        import pyarrow.parquet as pq

        for f in files:
            rows = pq.ParquetFile(f).metadata.num_rows
            if n < rows:
                return f"{f}: row {n + 1}"
            n -= rows
        return str(files[-1])
    with _open_text(files[0]) as fh:
        texts = (lineno for lineno, line in enumerate(fh, start=1) if line.strip())
        return f"{files[0]}:{next(islice(texts, n, None), '?')}"


def _corpus_files(path: Path) -> tuple[list[Path], str]:
    """The files of a corpus path and their kind (``parquet``, ``jsonl`` or ``text``)."""
    if path.is_dir():
        for name in CORPUS_FOLDER_FILES:
            if (path / name).is_file():
                path = path / name
                break
        else:
            shards = corpus_shards(path)
            if shards:
                return shards, "parquet"
            raise CorpusError(f"{path} is a folder without documents.jsonl(.gz) or "
                              "*.parquet shards")
    problem = input_problem(path, "corpus file")
    if problem is not None:
        raise CorpusError(problem)
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes[-1:] == [".parquet"]:
        return [path], "parquet"
    is_jsonl = bool({".jsonl", ".json", ".ndjson"} & set(suffixes))
    return [path], "jsonl" if is_jsonl else "text"


def _text_batches(path: Path, is_jsonl: bool, text_field: str, id_field: str,
                  batch_size: int) -> Iterator[list[Document]]:
    """Documents of a JSONL or plain-text file (one per non-empty line), in batches."""
    try:
        with _open_text(path) as fh:
            yield from line_documents(fh, str(path), is_jsonl, text_field, id_field, batch_size)
    except UnicodeDecodeError as exc:
        raise CorpusError(utf8_problem(str(path), exc, path)) from exc
    except (OSError, EOFError, zlib.error) as exc:
        raise CorpusError(f"{path}: cannot read ({exc})") from exc


def line_documents(lines: Iterable[str], name: str, is_jsonl: bool, text_field: str = "text",
                   id_field: str = "id", batch_size: int = READ_BATCH
                   ) -> Iterator[list[Document]]:
    """Documents of JSONL or plain-text ``lines`` (one per non-empty line) in batches; errors
    name ``name`` (a file, or ``stdin``) and the line."""
    batch: list[Document] = []
    first_line: dict[str, int] = {}
    for lineno, line in enumerate(lines, start=1):
        line = line.strip()
        if not line:
            continue
        doc = _parse_jsonl_line(name, lineno, line, text_field, id_field) if is_jsonl \
            else Document(id=str(len(first_line)), text=line, meta={})
        if first_line.setdefault(doc.id, lineno) != lineno:
            first = first_line[doc.id]
            implicit = is_jsonl and doc.id in (str(first - 1), str(lineno - 1))
            hint = (f"; a line without {id_field!r} takes its line number - 1 as its id: give "
                    "every document an id, or none") if implicit else ""
            raise CorpusError(f"{name}:{lineno}: duplicate document id {doc.id!r} "
                              f"(first on line {first}){hint}")
        batch.append(doc)
        if len(batch) == batch_size:
            yield batch
            batch = []
    if batch:
        yield batch


def _parquet_batches(files: list[Path], text_field: str, id_field: str, batch_size: int
                     ) -> Iterator[list[Document]]:
    """Documents of Parquet files, read ``batch_size`` rows at a time: ``text_field`` as text,
    ``id_field`` (else the running row number) as id, the other columns as metadata."""
    import pyarrow.parquet as pq

    n = 0
    first_row: dict[str, tuple[Path, int]] = {}
    for f in files:
        row = 0
        try:
            batches = pq.ParquetFile(f).iter_batches(batch_size=batch_size)
            for records in batches:
                batch = []
                for rec in records.to_pylist():
                    row += 1
                    text = rec.pop(text_field, None)
                    if not isinstance(text, str):
                        names = list(records.schema.names)
                        what = "is not a string" if text_field in names else "missing"
                        raise CorpusError(f"{f}: row {row}: column {text_field!r} {what} "
                                          f"(columns: {names})")
                    doc_id = str(n if rec.get(id_field) is None else rec.pop(id_field))
                    rec.pop(id_field, None)
                    if first_row.setdefault(doc_id, (f, row)) != (f, row):
                        hint = (f"; a row whose {id_field!r} is null takes its position - 1 "
                                "as its id: give every document an id, or none") \
                            if doc_id == str(n) else ""
                        raise CorpusError(f"{f}: row {row}: duplicate document id {doc_id!r} "
                                          f"(first in {first_row[doc_id][0].name} row "
                                          f"{first_row[doc_id][1]}){hint}")
                    batch.append(Document(id=doc_id, text=text, meta=rec))
                    n += 1
                yield batch
        except (OSError, ValueError) as exc:
            if isinstance(exc, CorpusError):
                raise
            raise CorpusError(f"{f}: not a readable Parquet file ({exc})") from exc


def _parse_jsonl_line(
    path: str | Path, lineno: int, line: str, text_field: str, id_field: str
) -> Document:
    try:
        obj = json_loads(line)
    except json.JSONDecodeError as exc:
        raise CorpusError(f"{path}:{lineno}: malformed JSON ({exc.msg})") from exc
    if not isinstance(obj, dict):
        raise CorpusError(f"{path}:{lineno}: expected a JSON object, got {type(obj).__name__}")
    text = obj.get(text_field)
    if not isinstance(text, str):
        raise CorpusError(
            f"{path}:{lineno}: field {text_field!r} missing or not a string "
            f"(fields present: {sorted(obj)})"
        )
    doc_id = obj.get(id_field, lineno - 1)
    if isinstance(doc_id, bool) or not isinstance(doc_id, str | int) or doc_id == "":
        raise CorpusError(f"{path}:{lineno}: field {id_field!r} must be a non-empty string or an "
                          f"integer, got {json.dumps(doc_id)[:60]}")
    for key, value in obj.items():  # a lone surrogate ("\\ud800") is no text a tool can write
        if isinstance(value, str) and (bad := LONE_SURROGATE.search(value)) is not None:
            raise CorpusError(f"{path}:{lineno}: field {key!r} holds an unpaired surrogate "
                              f"({bad.group()!a}), which is not Unicode text")
    doc_id = str(doc_id)
    meta = {k: v for k, v in obj.items() if k not in (text_field, id_field)}
    return Document(id=doc_id, text=text, meta=meta)


#: UTF-16 surrogates: JSON may escape one alone, which no UTF-8 reader or writer accepts.
#: A lone surrogate: a code point no UTF-8 text holds (a decoding went wrong).
LONE_SURROGATE = re.compile("[\ud800-\udfff]")
