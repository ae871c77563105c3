"""What every command shares: logging, the one error path (exit 2) and common options."""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Callable
from typing import Annotated, Any

import typer

from phrasekit.io import CorpusError
from phrasekit.settings import SharedDataMissingError

logger = logging.getLogger("phrasekit")

Quiet = Annotated[bool, typer.Option("--quiet", "-q",
                                     help="Only warnings and results; no progress bars.")]
Verbose = Annotated[bool, typer.Option("--verbose", "-v", help="Debug logging.")]
ModelOpt = Annotated[str, typer.Option("--model", "-m",
                                       help="Model name (see `phrasekit models`) or folder.")]

#: Exceptions that mean "bad input": one line on stderr and exit code 2, no traceback.
USER_ERRORS = (ValueError, TypeError, FileNotFoundError, CorpusError, SharedDataMissingError)


class BadInputError(Exception):
    """Raised by commands for user errors that should exit with code 2."""


def setup_logging(quiet: bool, verbose: bool = False) -> None:
    """Log level from --quiet/--verbose; third-party loggers and progress bars kept quiet."""
    if quiet:  # read when huggingface_hub / transformers are imported, also in worker processes
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    level = logging.WARNING if quiet else (logging.DEBUG if verbose else logging.INFO)
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s",
                        datefmt="%H:%M:%S", force=True)
    for noisy in ("transformers", "sentence_transformers", "urllib3", "filelock", "httpx"):
        logging.getLogger(noisy).setLevel(logging.WARNING if not verbose else logging.INFO)
    try:  # transformers' weights-loading bar is noise for a CLI user (even if imported already)
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    except ImportError:  # pragma: no cover
        pass


def run_command(body: Callable[[], Any]) -> Any:
    """Call a command body, mapping user errors to exit code 2 with a one-line message."""
    try:
        return body()
    except (BadInputError, *USER_ERRORS) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(code=2) from None
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        raise typer.Exit(code=130) from None


def command(group: typer.Typer, name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register ``fn`` as command ``name`` of ``group``: logging set up from its --quiet and
    --verbose options, then ``fn`` runs through ``run_command``."""

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def wrapper(**kwargs: Any) -> Any:
            setup_logging(kwargs.get("quiet", False), kwargs.get("verbose", False))
            return run_command(lambda: fn(**kwargs))

        group.command(name)(wrapper)
        return fn

    return register
