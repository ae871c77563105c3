"""``phrasekit`` command line: thin wrappers over the Python API.

One module per command group (``models``, ``eval``, ``topics``, ``match``, ``train``); each has a
typer ``app`` that is merged into the one here. Exit codes: 0 success, 2 bad input (unknown
model, missing file, malformed data), 1 other errors.
"""

from __future__ import annotations

import typer

from phrasekit.cli import eval as eval_group
from phrasekit.cli import match, models, topics, train
from phrasekit.cli.common import BadInputError, set_debug

__all__ = ["BadInputError", "app", "main"]

app = typer.Typer(
    name="phrasekit",
    help="Phrase embeddings, phrase benchmark and phrase-based topic mining (offline, CPU).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
for group in (models, eval_group, topics, match):
    app.add_typer(group.app)
app.add_typer(train.app, name="train")


@app.callback()
def root(debug: bool = typer.Option(
        False, "--debug", help="On an error, show the full traceback instead of one line.")
         ) -> None:
    """Phrase embeddings, phrase benchmark and phrase-based topic mining (offline, CPU)."""
    set_debug(debug)


def main() -> None:
    """Console-script entry point."""
    app()
