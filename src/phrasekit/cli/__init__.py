"""``phrasekit`` command line: thin wrappers over the Python API.

One module per command group (``models``, ``eval``, ``topics``, ``match``, ``train``); each has a
typer ``app``. The root imports a group's module only when one of its commands runs (or help
lists them), so a quick command such as ``neighbors`` on cached vectors does not pay for torch
and scikit-learn. Exit codes: 0 success, 2 bad input (unknown model, missing file, malformed
data), 1 other errors.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping, MutableMapping

import typer
from typer.core import TyperGroup

from phrasekit.cli.common import BadInputError, set_debug

__all__ = ["COMMANDS", "BadInputError", "app", "main"]

#: Each top-level command and the module of ``phrasekit.cli`` that defines it, in help order.
COMMANDS: dict[str, str] = {
    "models": "models", "quantize": "models", "encode": "models", "eval": "eval",
    "phrases": "topics", "mentions": "topics", "topics": "topics", "keyphrases": "topics",
    "facets": "topics",
    "neighbors": "match", "pairs": "match", "join": "match", "index": "match",
    "train": "train",
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


class LazyGroup(TyperGroup):
    """The root group, whose commands are imported when used (see :class:`_LazyCommands`)."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)
        self.commands = _LazyCommands(self.commands)


app = typer.Typer(
    name="phrasekit",
    cls=LazyGroup,
    help="Phrase embeddings, phrase benchmark and phrase-based topic mining (offline, CPU).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def root(debug: bool = typer.Option(
        False, "--debug", help="On an error, show the full traceback instead of one line.")
         ) -> None:
    """Phrase embeddings, phrase benchmark and phrase-based topic mining (offline, CPU)."""
    set_debug(debug)


def main() -> None:
    """Console-script entry point."""
    app()
