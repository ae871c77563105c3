"""What every command shares: logging, the one error path (exit 2) and common options."""

from __future__ import annotations

import functools
import logging
import os
import sys
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from safetensors import SafetensorError

from phrasekit.artifacts import check_folder_path, check_parent_writable
from phrasekit.io import CorpusError
from phrasekit.settings import SharedDataMissingError

logger = logging.getLogger("phrasekit")

Quiet = Annotated[bool, typer.Option("--quiet", "-q",
                                     help="Only warnings and results; no progress bars.")]
Verbose = Annotated[bool, typer.Option("--verbose", "-v", help="Debug logging.")]
ModelOpt = Annotated[str, typer.Option("--model", "-m",
                                       help="Model name (see `phrasekit models`) or folder.")]
Workers = Annotated[int, typer.Option(
    help="Processes for spaCy's parsing (0: one per CPU core; a corpus of a few hundred "
         "documents is parsed in one); with --engine ray, worker actors (0: one per CPU of "
         "the cluster).")]

#: Exceptions that mean "bad input": one line on stderr and exit code 2, no traceback.
USER_ERRORS = (ValueError, TypeError, OSError, EOFError, zlib.error, SafetensorError, CorpusError,
               SharedDataMissingError, typer.BadParameter)
#: Set by the root ``--debug`` option (or PHRASEKIT_DEBUG=1) on every run: errors show their
#: traceback.
DEBUG = {"on": False}


def set_debug(flag: bool) -> None:
    """Turn tracebacks on for this run when ``--debug`` is given or PHRASEKIT_DEBUG is set."""
    DEBUG["on"] = flag or os.environ.get("PHRASEKIT_DEBUG", "") not in ("", "0")


class BadInputError(Exception):
    """Raised by commands for user errors that should exit with code 2."""


def check_output_file(out: Path, inputs: tuple[Path, ...] = ()) -> None:
    """Refuse, before any long work, an output file path that is a folder, sits under a file,
    cannot be written, or is one of the command's ``inputs`` (it would overwrite its input)."""
    if out.is_dir():
        raise BadInputError(f"--out {out} is a folder; give a file path")
    check_parent_writable(out)
    for path in inputs:
        if out.exists() and path.exists() and os.path.samefile(out, path):
            raise BadInputError(f"--out {out} is the input file {path}; write elsewhere")


def setup_logging(quiet: bool, verbose: bool = False) -> None:
    """Log level from --quiet/--verbose; third-party loggers and progress bars kept quiet."""
    level = logging.WARNING if quiet else (logging.DEBUG if verbose else logging.INFO)
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s",
                        datefmt="%H:%M:%S", force=True)
    for noisy in ("transformers", "sentence_transformers", "urllib3", "filelock", "httpx"):
        logging.getLogger(noisy).setLevel(logging.WARNING if not verbose else logging.INFO)
    _hide_weight_loading_bars()


def _hide_weight_loading_bars() -> None:
    """transformers' weights-loading bar is noise for a CLI user. Importing transformers takes
    seconds, so it is not imported for this: the environment variable covers a later import
    (worker processes included), the calls an earlier one."""
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    if "huggingface_hub" in sys.modules:
        from huggingface_hub.utils import disable_progress_bars

        disable_progress_bars()
    if "transformers" in sys.modules:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()


def _one_line(exc: BaseException) -> str:
    """The exception's message on one line (multi-line library messages folded)."""
    message = exc.format_message() if isinstance(exc, typer.BadParameter) else str(exc)
    text = " ".join(message.split()) or type(exc).__name__
    return text if len(text) <= 500 else text[:497] + "..."


def run_command(body: Callable[[], Any]) -> Any:
    """Call a command body: user errors end in one line and exit code 2, anything else in one
    line and exit code 1; the traceback only with ``--debug``."""
    try:
        return body()
    except (typer.Exit, typer.Abort):  # a command's own exit code
        raise
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        raise typer.Exit(code=130) from None
    except BrokenPipeError:  # `phrasekit ... | head`: the reader left; say nothing more
        os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
        raise typer.Exit(code=0) from None
    except (BadInputError, *USER_ERRORS) as exc:
        if DEBUG["on"]:
            raise
        typer.echo(f"error: {_one_line(exc)}", err=True)
        raise typer.Exit(code=2) from None
    except Exception as exc:
        if DEBUG["on"]:
            raise
        typer.echo(f"error: internal error ({type(exc).__name__}: {_one_line(exc)}); rerun "
                   "with `phrasekit --debug ...` for the traceback", err=True)
        raise typer.Exit(code=1) from None


def check_paths(kwargs: dict[str, Any], out_kind: str | None) -> None:
    """Validate a command's ``--out``/``--output`` path (``out_kind`` "file" or "folder")
    against the other path arguments, before the command body runs."""
    name = "out" if "out" in kwargs else "output"
    out = kwargs.get(name)
    if out_kind is None or not isinstance(out, Path):
        return
    if out_kind == "folder":
        check_folder_path(out)
        return
    inputs = tuple(v for k, v in kwargs.items() if isinstance(v, Path) and k != name)
    check_output_file(out, inputs=inputs)


def command(group: typer.Typer, name: str, out: str | None = None
            ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register ``fn`` as command ``name`` of ``group``: logging set up from its --quiet and
    --verbose options, its output path checked (``out``: "file" or "folder"), then ``fn`` runs
    through ``run_command``."""

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def wrapper(**kwargs: Any) -> Any:
            setup_logging(kwargs.get("quiet", False), kwargs.get("verbose", False))

            def body() -> Any:
                check_paths(kwargs, out)
                return fn(**kwargs)

            return run_command(body)

        group.command(name)(wrapper)
        return fn

    return register


def resolve_workers(workers: int) -> int:
    """``--workers`` as a process count (0: one per CPU core)."""
    if workers < 0:
        raise BadInputError(f"--workers must be >= 0, got {workers}")
    return workers or os.cpu_count() or 1
