"""Standard input as the command line reads it (an input named ``-``): UTF-8 text, lines split
on ``\\n`` only, and a corpus of JSON lines or plain lines."""

from __future__ import annotations

import sys

from phrasekit.cli.common import BadInputError
from phrasekit.io import Document, line_documents
from phrasekit.lines import inner_cr
from phrasekit.paths import utf8_problem


def read_stdin() -> str:
    """Standard input as UTF-8 text (a leading byte-order mark dropped)."""
    if sys.stdin is None:
        raise BadInputError("stdin is closed: give the input as a file, or pipe it in")
    try:
        return sys.stdin.buffer.read().decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise BadInputError(utf8_problem("stdin", exc)) from None


def stdin_lines(skip_blank: bool) -> list[str]:
    """The lines of standard input (UTF-8), stripped, as ``io.iter_lines`` reads a file: a
    blank line is refused, naming it, unless ``skip_blank``."""
    text = read_stdin()
    lines = [line.strip() for line in text.removesuffix("\n").split("\n")] if text else []
    if (problem := inner_cr(lines, "stdin")) is not None:
        raise BadInputError(problem)
    blank = [i for i, line in enumerate(lines, start=1) if not line]
    if blank and not skip_blank:
        raise BadInputError(f"stdin:{blank[0]}: blank line (every line must hold a text; "
                            "--skip-blank drops them)")
    kept = [line for line in lines if line]
    if not kept:
        raise BadInputError("stdin: no lines to read")
    return kept


def stdin_corpus(text_field: str) -> list[Document]:
    """A corpus read from standard input (CORPUS ``-``): JSON lines when the first non-blank
    line is an object, else one document per non-blank line; errors name ``stdin:LINE``."""
    lines = read_stdin().split("\n")
    first = next((line.strip() for line in lines if line.strip()), "")
    if not first:
        raise BadInputError("stdin: no document to read")
    return [d for batch in line_documents(lines, "stdin", first.startswith("{"), text_field)
            for d in batch]
