"""Text files read one text per line (``encode``'s input): split on ``\\n`` only, so line i
is row i; blank lines and carriage returns inside a line named by their line."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from phrasekit.io import CorpusError, input_problem


def inner_cr(lines: Iterable[str], where: str, first: int = 1) -> str | None:
    """The problem of the first line holding a carriage return inside it (old Mac line ends,
    or a stray CR: either way not one text), named ``where:LINE`` (lines numbered from
    ``first``); None when there is none."""
    line = next((n for n, text in enumerate(lines, start=first) if "\r" in text), None)
    return None if line is None else (f"{where}:{line}: a carriage return (\\r) inside the line; "
                                      "lines end at \\n only (convert it, e.g. tr '\\r' '\\n')")


def _text_lines(path: str | Path, skip_blank: bool) -> Iterator[str | None]:
    """Every line of a UTF-8 file, stripped; None for a blank line that ``skip_blank`` lets
    through (see ``iter_lines``)."""
    path = Path(path)
    problem = input_problem(path, "text file")
    if problem is not None:
        raise CorpusError(problem)
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise CorpusError(f"{path}:{lineno}: not valid UTF-8 ({exc})") from exc
            if lineno == 1:
                line = line.removeprefix("\ufeff")
            line = line.removesuffix("\n").removesuffix("\r").strip()
            if (problem := inner_cr([line], str(path), lineno)) is not None:
                raise CorpusError(problem)
            if not line and not skip_blank:
                raise CorpusError(f"{path}:{lineno}: blank line (every line must hold a text; "
                                  "--skip-blank drops them)")
            yield line or None


def iter_lines(path: str | Path, skip_blank: bool = False) -> Iterator[str]:
    """The lines of a UTF-8 text file, read one at a time and split on ``\\n`` only (a
    ``\\r`` before it dropped), so line i is row i; other separators (U+2028, form feed...)
    stay inside their line. Each line is stripped of surrounding whitespace. A blank line
    raises ``CorpusError`` naming it, or is skipped with ``skip_blank``; so does a line that is
    not UTF-8."""
    return (line for line in _text_lines(path, skip_blank) if line is not None)


def count_lines(path: str | Path, skip_blank: bool = False) -> tuple[int, int]:
    """Check a whole file as ``iter_lines`` reads it, without keeping it: ``(lines with a
    text, blank lines skipped)``. Run before long work, so a bad line fails first."""
    kept = skipped = 0
    for line in _text_lines(path, skip_blank):
        kept += line is not None
        skipped += line is None
    if not kept:
        raise CorpusError(f"{path}: no lines to read ({_no_lines(skipped)})")
    return kept, skipped


def _no_lines(blank: int) -> str:
    return f"only {blank} blank line{'s' if blank > 1 else ''}" if blank else "empty file"


def read_lines(path: str | Path, skip_blank: bool = False) -> tuple[list[str], int]:
    """The lines of a UTF-8 text file, as ``iter_lines`` reads them, in one list.

    Returns ``(lines stripped of surrounding whitespace, blank lines skipped)``.
    """
    lines = list(_text_lines(path, skip_blank))
    kept = [line for line in lines if line is not None]
    if not kept:
        raise CorpusError(f"{path}: no lines to read ({_no_lines(len(lines))})")
    return kept, len(lines) - len(kept)
