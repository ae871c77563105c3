"""Small I/O helpers: atomic writes and corpus reading with clear errors."""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def _umask() -> int:
    """The process umask (read by setting and restoring it)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_write(
    path: str | Path, mode: str = "w", encoding: str | None = "utf-8", newline: str | None = None
) -> Iterator[Any]:
    """Open a temp file next to ``path`` and move it into place only if the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        kwargs = {} if "b" in mode else {"encoding": encoding, "newline": newline}
        with os.fdopen(fd, mode, **kwargs) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the usual file mode
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_json(path: str | Path, obj: Any) -> None:
    """Write ``obj`` as pretty UTF-8 JSON, atomically."""
    with atomic_write(path) as fh:
        json.dump(obj, fh, ensure_ascii=False, indent=2)
        fh.write("\n")


def read_json_object(path: str | Path, error: type[Exception] = ValueError) -> dict[str, Any]:
    """Parse a JSON file that must hold an object; bad encoding, bad JSON or a non-object raise
    ``error`` naming the file (so config readers share one set of messages)."""
    path = Path(path)
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise error(f"{path}: malformed JSON ({exc})") from exc
    if not isinstance(obj, dict):
        raise error(f"{path}: expected a JSON object, got {type(obj).__name__}")
    return obj


def load_npy(path: str | Path, error: type[Exception] = ValueError) -> Any:
    """Load a plain ``.npy`` array (never pickled objects); missing/bad files raise ``error``."""
    import numpy as np

    path = Path(path)
    if not path.is_file():
        raise error(f"{path} is missing")
    try:
        return np.load(path, allow_pickle=False)
    except ValueError as exc:
        raise error(f"{path}: not a plain .npy array ({exc})") from exc


def write_text(path: str | Path, text: str) -> None:
    """Write text atomically."""
    with atomic_write(path) as fh:
        fh.write(text)


class CorpusError(ValueError):
    """A corpus file that cannot be read: missing, wrong encoding, malformed lines."""


@dataclass(frozen=True)
class Document:
    """One corpus document: an id, its text and any extra fields (label, keyphrases...)."""

    id: str
    text: str
    meta: dict[str, Any]


def _open_text(path: Path):
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8")
    return open(path, encoding="utf-8")


def read_corpus(path: str | Path, text_field: str = "text", id_field: str = "id") -> list[Document]:
    """Read a corpus: JSONL (``.jsonl``/``.jsonl.gz``, one object per line with ``text_field``)
    or plain text (``.txt``/anything else: one document per non-empty line).

    A directory is accepted when it holds ``documents.jsonl`` or ``documents.jsonl.gz``.
    Errors name the file and line number.
    """
    path = Path(path)
    if path.is_dir():
        for name in ("documents.jsonl", "documents.jsonl.gz"):
            if (path / name).is_file():
                path = path / name
                break
        else:
            raise CorpusError(f"{path} is a directory without documents.jsonl(.gz)")
    if not path.is_file():
        raise CorpusError(f"corpus file not found: {path}")
    is_jsonl = ".jsonl" in path.suffixes or ".json" in path.suffixes
    docs: list[Document] = []
    try:
        with _open_text(path) as fh:
            for lineno, line in enumerate(fh, start=1):
                line = line.strip()
                if not line:
                    continue
                if is_jsonl:
                    docs.append(_parse_jsonl_line(path, lineno, line, text_field, id_field))
                else:
                    docs.append(Document(id=str(len(docs)), text=line, meta={}))
    except UnicodeDecodeError as exc:
        raise CorpusError(f"{path}: not valid UTF-8 ({exc})") from exc
    except (OSError, EOFError) as exc:
        raise CorpusError(f"{path}: cannot read ({exc})") from exc
    if not docs:
        raise CorpusError(f"{path}: no documents found")
    return docs


def _parse_jsonl_line(
    path: Path, lineno: int, line: str, text_field: str, id_field: str
) -> Document:
    try:
        obj = json.loads(line)
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
    doc_id = str(obj.get(id_field, lineno - 1))
    meta = {k: v for k, v in obj.items() if k not in (text_field, id_field)}
    return Document(id=doc_id, text=text, meta=meta)
