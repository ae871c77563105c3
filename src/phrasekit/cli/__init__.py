"""``phrasekit`` command line: thin wrappers over the Python API.

One module per command group (``models``, ``eval``, ``topics``, ``match``, ``train``); each has a
typer ``app``. The root imports a group's module only when one of its commands runs (or help
lists them), so a quick command such as ``neighbors`` on cached vectors does not pay for torch
and scikit-learn. Exit codes: 0 success, 2 bad input (unknown model, missing file, malformed
data), 1 other errors.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import signal
import sys
from collections.abc import Iterator, Mapping, MutableMapping
from typing import Any, NoReturn

import click
import typer
from typer.core import TyperGroup

from phrasekit.cli.common import BadInputError, Terminated, set_debug, unwind_on_sigterm

__all__ = ["COMMANDS", "BadInputError", "app", "main"]

#: Each top-level command and the module of ``phrasekit.cli`` that defines it, in help order.
COMMANDS: dict[str, str] = {
    "models": "models", "quantize": "models", "export": "models", "encode": "models",
    "eval": "eval",
    "phrases": "topics", "mentions": "topics", "topics": "topics", "keyphrases": "keyphrases",
    "facets": "topics",
    "neighbors": "match", "pairs": "match", "join": "match", "index": "match",
    "train": "train",
}


#: Each command's one-line help, so that ``phrasekit --help`` lists them without importing
#: their modules (torch, spaCy); ``tests/test_cli_help.py`` checks them against the commands.
SHORT_HELP: dict[str, str] = {
    "models": "List the model names `phrasekit.load` knows; * marks a default, with the "
              "commands it is the default of.",
    "quantize": "Copy a fine-tuned model folder with its backbone deltas stored as int8 (half "
                "the size).",
    "export": "Write a model as a sentence-transformers folder (SentenceTransformer, KeyBERT "
              "and BERTopic load it).",
    "encode": "Embed phrases (one per line, or one per table cell; row i of the output is "
              "phrase i) and save L2-normalised vectors.",
    "eval": "Run the phrase benchmark and print one table (rows: models, columns: tasks, "
            "avg7).",
    "phrases": "Extract noun chunks and named entities with counts, document frequencies and "
               "surface forms.",
    "mentions": "Write every phrase occurrence (noun chunks and named entities) with its "
                "document, its character span in the text and its vector: one row each, in "
                "Parquet files.",
    "topics": "Mine topics described by words and phrases; writes topics.json, topics.md and "
              "report.html; `topics apply` and `topics search` use a saved model.",
    "keyphrases": "Keyphrases per document: noun phrases ranked by embedding similarity to the "
                  "document.",
    "facets": "Print each facet's nearest words with cosines for texts: what each facet stands "
              "for.",
    "neighbors": "Nearest neighbours of a phrase in a vocabulary by cosine (the phrase itself "
                 "excluded).",
    "pairs": "Score sentence pairs with a SubTST model: P(paraphrase) or the predicted "
             "similarity.",
    "join": "Fuzzy-join two tables (CSV, TSV or Parquet) on one column each: embedding and "
            "character candidates scored by a learned match probability (--scorer cosine: the "
            "cosine alone).",
    "index": "Entity retrieval: a persisted top-k index over a dictionary of names.",
    "train": "Train phrasekit's models (CPU, resumable).",
}


def _load_command(name: str) -> typer.core.TyperCommand | TyperGroup:
    """Import the module defining top-level command ``name`` and return that command."""
    module = importlib.import_module(f"{__name__}.{COMMANDS[name]}")
    cli = typer.main.get_command(module.app)
    if isinstance(cli, TyperGroup) and name in cli.commands:
        return cli.commands[name]
    cli.name = name  # the module's app is the command itself (`eval`) or its group (`train`)
    return cli


class _LazyCommands(MutableMapping):
    """The root's command table: every name of :data:`COMMANDS` is listed, and its module is
    imported on first lookup."""

    def __init__(self, loaded: Mapping[str, typer.core.TyperCommand]) -> None:
        self._loaded = dict(loaded)

    def __getitem__(self, name: str) -> typer.core.TyperCommand | TyperGroup:
        if name not in self._loaded and name in COMMANDS:
            self._loaded[name] = _load_command(name)
        return self._loaded[name]

    def __setitem__(self, name: str, command: typer.core.TyperCommand) -> None:
        self._loaded[name] = command

    def __delitem__(self, name: str) -> None:
        del self._loaded[name]

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys([*COMMANDS, *self._loaded]))

    def __len__(self) -> int:
        return len(set(COMMANDS) | set(self._loaded))


#: Click's usage error, as typer raises it (typer may carry its own copy of click).
USAGE_ERRORS = tuple({c for c in typer.BadParameter.__mro__ if c.__name__ == "UsageError"}
                     | {click.UsageError})


def usage_error(exc: Exception) -> typer.Exit:
    """A command-line usage error (a missing or unknown option, a value of the wrong type)
    printed as one line naming the command and the option, as every other user error is;
    the exit (code 2) to raise instead of click's usage panel."""
    ctx = getattr(exc, "ctx", None)
    where = ctx.command_path if ctx is not None else "phrasekit"
    message = " ".join(exc.format_message().split())  # type: ignore[attr-defined]
    typer.echo(f"error: {where}: {message} (see `{where} --help`)", err=True)
    return typer.Exit(2)


class LazyGroup(TyperGroup):
    """The root group, whose commands are imported when used (see :class:`_LazyCommands`)."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)
        self.commands = _LazyCommands(self.commands)

    def make_context(self, info_name: str | None, args: list[str],
                     parent: click.Context | None = None, **extra: Any) -> click.Context:
        """The root's own options parsed; a usage error is one line (:func:`usage_error`)."""
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except USAGE_ERRORS as exc:
            raise usage_error(exc) from None

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command; a usage error of any command is one line (:func:`usage_error`)."""
        try:
            return super().invoke(ctx)
        except USAGE_ERRORS as exc:
            raise usage_error(exc) from None

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """``phrasekit --help`` lists the commands from :data:`SHORT_HELP`: no command module
        (torch, spaCy) is imported to print it."""
        loaded = self.commands
        self.commands = {name: click.Command(name, help=SHORT_HELP[name]) for name in COMMANDS}
        try:
            super().format_help(ctx, formatter)
        finally:
            self.commands = loaded


app = typer.Typer(
    name="phrasekit",
    cls=LazyGroup,
    help="Phrase embeddings, phrase benchmark and phrase-based topic mining (offline, CPU).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _print_version(value: bool) -> None:
    if value:
        from phrasekit import __version__

        typer.echo(f"phrasekit {__version__}")
        raise typer.Exit()


@app.callback()
def root(debug: bool = typer.Option(
        False, "--debug", help="On an error, show the full traceback instead of one line."),
         version: bool = typer.Option(
        False, "--version", is_eager=True, callback=_print_version,
        help="Print phrasekit's version and exit.")) -> None:
    """Phrase embeddings, phrase benchmark and phrase-based topic mining (offline, CPU)."""
    set_debug(debug)


def main() -> None:
    """Console-script entry point. SIGTERM unwinds the run as Ctrl-C does, so no temporary
    output is left; then the process ends at once, without waiting for worker pools' threads
    (Python's own exit would wait for the shares they were parsing)."""
    unwind_on_sigterm()
    try:
        app()
    except Terminated:  # outside a command's body (loading, parsing options)
        _leave(128 + signal.SIGTERM)
    except SystemExit as exc:
        if exc.code in (128 + signal.SIGINT, 128 + signal.SIGTERM):
            _leave(exc.code)
        raise


def _leave(code: int) -> NoReturn:
    """End an interrupted run now: its outputs are already cleaned up by the unwinding."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)
