"""What every command shares: logging, the one error path (exit 2) and common options."""

from __future__ import annotations

import contextlib
import errno
import functools
import json
import logging
import math
import os
import signal
import sys
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any

import typer
from safetensors import SafetensorError

from phrasekit.artifacts import check_folder_path, check_parent_writable, check_run_folder
from phrasekit.cli.options import name_flags, option_flags
from phrasekit.io import CorpusError, writable_target
from phrasekit.paths import check_output, is_inside, read_with_folder
from phrasekit.settings import SharedDataMissingError, check_environment, vector_cache_dir
from phrasekit.tables import FORMAT_NAMES, is_stdout

logger = logging.getLogger("phrasekit")

Quiet = Annotated[bool, typer.Option("--quiet", "-q",
                                     help="Only warnings and results; no progress bars.")]
Verbose = Annotated[bool, typer.Option("--verbose", "-v", help="Debug logging.")]
ModelOpt = Annotated[str, typer.Option("--model", "-m",
                                       help="Model name (see `phrasekit models`) or folder.")]
CsvSafe = Annotated[bool, typer.Option(
    "--csv-safe/--no-csv-safe", help="Write a text cell that starts with =, +, -, @, tab or CR "
                                     "with a leading ' so that a spreadsheet shows it as text "
                                     "instead of running it as a formula.")]
Precision = Annotated[str, typer.Option(
    help="auto (bf16 where the CPU has native bfloat16 - AVX512-BF16 or AMX - else fp32; "
         "int8 instead where the CPU has native int8 dot products - VNNI, AMX, ARM - and it "
         "measures faster), fast (auto, and 7-bit int8 on CPUs without VNNI where it "
         "measures faster), fp32, bf16 or int8 (transformer models).")]
Device = Annotated[str, typer.Option(
    help="Where models run: auto (CUDA when torch sees a GPU, else the CPU), cpu, cuda or "
         "cuda:N. Sets PHRASEKIT_DEVICE for the command, so worker processes follow it.")]
VectorCache = Annotated[bool, typer.Option(
    "--cache/--no-cache", help="Keep document and phrase vectors between runs (default: in "
                               "phrasekit's cache folder, bounded by PHRASEKIT_VECTOR_CACHE_MB, "
                               "2048), so a re-run on the same corpus and model encodes only "
                               "new text.")]
JsonFlag = Annotated[bool, typer.Option(
    "--json", help="Print JSON (UTF-8, indented) on stdout instead of the table.")]
Threads = Annotated[int | None, typer.Option(
    "--threads", help="Threads to compute on (torch, OpenMP, BLAS). Default: PHRASEKIT_THREADS, "
                      "else the CPU cores free now (cores minus the ones other processes "
                      "keep busy).")]
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


class Terminated(BaseException):
    """SIGTERM in the command's process, raised where it lands so that the run unwinds as on
    Ctrl-C: temporary outputs are removed and nothing half-written is left."""


def unwind_on_sigterm() -> None:
    """Turn SIGTERM into :class:`Terminated` in this process; a forked worker that inherits the
    handler dies of the signal as before."""
    pid = os.getpid()

    def handler(signum: int, frame: object) -> None:
        if os.getpid() != pid:
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        raise Terminated

    with contextlib.suppress(ValueError):  # only the main thread may set handlers
        signal.signal(signal.SIGTERM, handler)


#: Suffixes of files, refused as the name of a new output folder (a name never lies; a folder
#: of Parquet files may be named .parquet, as Arrow and Spark datasets are).
FILE_SUFFIXES = (*(s for s in FORMAT_NAMES if s not in (".parquet", ".pq")), ".npz",
                 ".safetensors", ".md", ".html")
#: Formats that may go to stdout (``--out -``).
TEXT_SUFFIXES = (".csv", ".tsv", ".jsonl", ".txt")


def file_path(raw: str) -> Path:
    """The parser of an output file's path: a name ending in a path separator names a folder,
    which ``Path`` would silently turn into a file of the folder's name, so it is refused."""
    if raw.endswith(("/", os.sep)) and raw.strip("/" + os.sep):
        raise typer.BadParameter(f"{raw} ends in {raw[-1]!r}, which names a folder; this "
                                 f"option writes a file: name the file ({raw}NAME)")
    return Path(raw)


def stream_path(raw: str) -> Path:
    """The parser of an output that may be ``-`` (stdout): only ``-`` itself is stdout; a path
    that merely normalises to it (``./-``) is the file named ``-`` in the current folder."""
    path = file_path(raw)
    return Path.cwd() / path if str(path) == "-" and raw != "-" else path


def check_out_format(out: Path, writes: tuple[str, ...]) -> str:
    """The format (a suffix of ``writes``) an output names; an output whose suffix is not one
    of them (another format or an unknown suffix) is refused, so a file's name never lies
    about its contents. A name without a suffix gets the first of ``writes``; ``-`` (stdout)
    the first text format of ``writes``, refused where there is none."""
    if is_stdout(out):
        text = [w for w in writes if w in TEXT_SUFFIXES]
        if not text:
            raise BadInputError(f"--out -: this command writes {FORMAT_NAMES[writes[0]]}, "
                                "which is not sent to stdout; name an output file")
        return text[0]
    suffix = out.suffix.lower()
    if not suffix:
        return writes[0]
    if suffix not in writes:
        kinds = {FORMAT_NAMES[w]: w for w in reversed(writes)}  # one suffix per format
        names, suffixes = list(reversed(kinds)), list(reversed(kinds.values()))
        what = FORMAT_NAMES.get(suffix, f"a {suffix} file")
        raise BadInputError(f"{out}: this command writes {', '.join(names)}, not {what}; name "
                            f"the output {' or '.join(suffixes)}")
    return suffix


#: Output formats whose text cells ``--csv-safe`` guards (what a spreadsheet opens).
CSV_SAFE_FORMATS = (".csv", ".tsv", ".txt")


def check_csv_safe(csv_safe: bool, fmt: str) -> None:
    """``--no-csv-safe`` with an output format it does not touch is refused (ignored else)."""
    if not csv_safe and fmt not in CSV_SAFE_FORMATS:
        raise BadInputError(f"--no-csv-safe applies to CSV and tab-separated outputs, not "
                            f"{FORMAT_NAMES.get(fmt, fmt)}")


def echo_json(obj: Any) -> None:
    """Print ``obj`` as indented UTF-8 JSON on stdout: what every ``--json`` option writes."""
    typer.echo(json.dumps(obj, ensure_ascii=False, indent=2, allow_nan=False))


#: ``--json`` of the commands that write files: a summary of the run.
SummaryFlag = Annotated[bool, typer.Option(
    "--json", help="When the run ends, print a JSON summary on stdout (counts, seconds, "
                   "output paths); the usual last line goes to stderr. Needs -o FILE.")]


def check_summary_out(as_json: bool, out: Path | None) -> None:
    """``--json`` needs stdout: refused (before any work) when the output is stdout."""
    if as_json and (out is None or is_stdout(out)):
        raise BadInputError("--json prints the run summary on stdout, where this output "
                            "would go too: write it to a file with -o FILE")


def finish_run(as_json: bool, line: str | None, summary: dict[str, Any],
               err: bool = False) -> None:
    """A command's last line (on stderr with ``--json``, or ``err``) and, with ``--json``,
    its run summary on stdout (paths as text)."""
    if line is not None:
        typer.echo(line, err=err or as_json)
    if as_json:
        echo_json({k: str(v) if isinstance(v, Path) else v for k, v in summary.items()})


def vector_cache(cache_dir: Path | None, cache: bool) -> Path | None:
    """The folder vectors are cached in: ``--cache-dir``, else phrasekit's own
    (``settings.vector_cache_dir``); None with ``--no-cache``."""
    if not cache:
        if cache_dir is not None:
            raise BadInputError("--no-cache and --cache-dir contradict each other: give one")
        return None
    return cache_dir if cache_dir is not None else vector_cache_dir()


def check_output_file(out: Path, inputs: tuple[str | Path, ...] = (), option: str = "--out"
                      ) -> None:
    """Refuse, before any long work, an output file path that is a folder, a FIFO or device,
    sits under a file, cannot be written, or resolves to one of the command's ``inputs`` or
    into an input folder (it would overwrite its input)."""
    if out.is_dir():
        raise BadInputError(f"{option} {out} is a folder; give a file path")
    try:
        check_output(out, option, inputs)
        writable_target(out)
    except ValueError as exc:
        raise BadInputError(str(exc)) from None
    check_parent_writable(out)


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


#: Write errors that name no file by themselves (a full disk, a file size limit).
_WRITE_ERRNOS = (errno.EFBIG, errno.ENOSPC, errno.EDQUOT)


def run_command(body: Callable[[], Any], writing: object = None) -> Any:
    """Call a command body: user errors end in one line and exit code 2, anything else in one
    line and exit code 1; the traceback only with ``--debug``. ``writing``: the output, named
    in a write error that names no file ("File too large")."""
    try:
        return body()
    except (typer.Exit, typer.Abort):  # a command's own exit code
        raise
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        raise typer.Exit(code=130) from None
    except Terminated:
        typer.echo("terminated", err=True)
        raise typer.Exit(code=128 + signal.SIGTERM) from None
    except BrokenPipeError:  # `phrasekit ... | head`: the reader left; say nothing more
        os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
        raise typer.Exit(code=0) from None
    except RecursionError:  # a reader not covered by io.json_loads
        if DEBUG["on"]:
            raise
        typer.echo("error: an input is nested too deeply to read (JSON or similar); check the "
                   "input files", err=True)
        raise typer.Exit(code=2) from None
    except (BadInputError, *USER_ERRORS) as exc:
        if DEBUG["on"]:
            raise
        where = (f" (writing {writing})" if isinstance(exc, OSError) and not exc.filename
                 and exc.errno in _WRITE_ERRNOS and writing is not None else "")
        typer.echo(f"error: {_one_line(exc)}{where}", err=True)
        raise typer.Exit(code=2) from None
    except Exception as exc:
        if DEBUG["on"]:
            raise
        typer.echo(f"error: internal error ({type(exc).__name__}: {_one_line(exc)}); rerun "
                   "with `phrasekit --debug ...` for the traceback", err=True)
        raise typer.Exit(code=1) from None


def _input_paths(kwargs: dict[str, Any], skip: str) -> tuple[str | Path, ...]:
    """Every argument of a command that names an existing path (corpus, tables, model or index
    folders, caches), and ``-`` for stdin (which may be a redirected file): what its output
    must never overwrite."""
    values: list[str | Path] = []
    for key, value in kwargs.items():
        for item in value if isinstance(value, list | tuple) else (value,):
            if key != skip and isinstance(item, str | Path) and str(item) == "-":
                values.append("-")
            elif key != skip and isinstance(item, str | Path) and str(item) != "":
                with contextlib.suppress(OSError, ValueError):
                    if os.path.lexists(item):
                        values.append(item)
    return tuple(values)


#: Numeric options shared by commands: parameter name -> (option, lowest, highest), checked
#: before any work (NaN and infinity refused), so no value reaches a library that would crash,
#: hang or allocate for it.
NUMERIC_OPTIONS: dict[str, tuple[str, float, float]] = {
    "threads": ("--threads", 1, 1024), "num_threads": ("--threads", 1, 1024),
    "workers": ("--workers", 0, 1024), "seed": ("--seed", 0, 2**32 - 1),
    "grounding": ("--grounding", 0.0, 100.0), "worker_cpus": ("--worker-cpus", 0.01, 1024),
    "batch_size": ("--batch-size", 1, 1_000_000), "k": ("-k", 1, 1_000_000),
    "top_n": ("--top-n", 1, 100_000),
    "threshold": ("--threshold", -1.0, 1.0), "diversity": ("--diversity", 0.0, 1.0),
    "lr": ("--lr", 1e-12, 100.0), "dropout": ("--dropout", 0.0, 0.999),
    "max_minutes": ("--minutes", 1e-3, 1e6), "max_steps": ("--max-steps", 1, 10**9),
}


def check_numbers(kwargs: dict[str, Any], flags: dict[str, str] | None = None) -> None:
    """Refuse an out-of-range, NaN or infinite value of a :data:`NUMERIC_OPTIONS` option,
    named by the command's own flag (``flags``: parameter -> flag) where it has one."""
    for name, (option, low, high) in NUMERIC_OPTIONS.items():
        value = kwargs.get(name)
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        if not math.isfinite(value) or not low <= value <= high:
            raise BadInputError(f"{(flags or {}).get(name, option)} must be between {low} and "
                                f"{high}, got {value}")


def check_paths(kwargs: dict[str, Any], out_kind: str | None) -> None:
    """Validate a command's ``--out``/``--output`` path (``out_kind`` "file", "folder" or
    "run": a training run's folder, :func:`~phrasekit.artifacts.check_run_folder`)
    against the other path arguments, before the command body runs; "stream": a file, or
    ``-`` for stdout."""
    for option in ("cache_dir", "work_dir"):  # folders a command writes into and keeps
        folder = kwargs.get(option)
        if isinstance(folder, Path) and folder.exists() and not folder.is_dir():
            raise BadInputError(f"--{option.replace('_', '-')} {folder} is a file, not a folder")
    name = "out" if "out" in kwargs else "output"
    out = kwargs.get(name)
    if isinstance(kwargs.get("work_dir"), Path):  # caches may live in it: they are kept too
        data = {k: v for k, v in kwargs.items() if k not in ("cache_dir", "phrase_cache")}
        _check_work_dir(kwargs["work_dir"], _input_paths(data, "work_dir"), out)
    if out_kind is None or not isinstance(out, Path):
        return
    if is_stdout(out):
        if out_kind != "stream":
            raise BadInputError(f"--{name} -: this command writes a {out_kind}, not a stream "
                                "to stdout; name the output")
        return
    inputs = _input_paths(kwargs, name)
    for folder in (Path(p) for p in inputs if Path(p).is_dir()):
        if read_with_folder(folder, out):
            raise BadInputError(f"--{name} {out} would be read as part of the corpus folder "
                                f"{folder} (its documents file or Parquet shards); write "
                                "elsewhere")
    if out_kind in ("folder", "run"):
        if out.suffix.lower() in FILE_SUFFIXES and not out.is_dir():
            raise BadInputError(f"--{name} {out}: this command writes a folder, and the name "
                                f"ends in {out.suffix} as a file's would; name it without it")
        check_folder_path(out, inputs)
        if out_kind == "run":
            check_run_folder(out)
        return
    check_output_file(out, inputs=inputs)


def _check_work_dir(work: Path, inputs: tuple[str | Path, ...], out: object) -> None:
    """``--work-dir`` apart from the current folder, the inputs and the output: shards written
    into a corpus folder would be read back as its documents."""
    if is_inside(Path.cwd(), work):
        raise BadInputError(f"--work-dir {work} is the current folder or holds it; give a "
                            "folder of its own")
    others = [*inputs, *([out] if isinstance(out, Path) and not is_stdout(out) else [])]
    for path in others:
        if is_inside(work, path) or is_inside(path, work):
            raise BadInputError(f"--work-dir {work} overlaps {path} (an input or the output); "
                                "give a folder of its own")


@contextlib.contextmanager
def command_device(device: str | None) -> Iterator[None]:
    """A command's ``--device``, checked before any work and set as ``PHRASEKIT_DEVICE``
    (what ``registry.load`` places models by) while the command runs."""
    if device is None:
        yield
        return
    from phrasekit.encoders.base import check_gpu_request  # torch only for a GPU request

    try:
        check_gpu_request(device)
    except ValueError as exc:
        raise BadInputError(f"--device: {exc}") from None
    before = os.environ.get("PHRASEKIT_DEVICE")
    os.environ["PHRASEKIT_DEVICE"] = device
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("PHRASEKIT_DEVICE", None)
        else:
            os.environ["PHRASEKIT_DEVICE"] = before


def command_threads(threads: int | None) -> int:
    """Set the threads a command computes on: ``--threads``, else ``PHRASEKIT_THREADS`` (a bad
    value: one line, exit 2), else the cores free now (:mod:`phrasekit.threads`). An explicit
    count is passed on to worker processes as ``PHRASEKIT_THREADS``."""
    from phrasekit.threads import ENV, ThreadsError, choose_threads, set_threads

    try:
        n = choose_threads("auto" if threads is None else threads)
    except ThreadsError as exc:
        raise BadInputError(str(exc)) from None
    if threads is not None:
        os.environ[ENV] = str(n)
    set_threads(n)
    return n


def command(group: typer.Typer, name: str, out: str | None = None, cls: type | None = None
            ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register ``fn`` as command ``name`` of ``group``: logging set up from its --quiet and
    --verbose options, its output path checked (``out``: "file", "stream" (a file or ``-``),
    "folder" or "run", a training run's folder), then ``fn`` runs through ``run_command``.
    ``cls``: the click command class (default typer's)."""

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        flags = {**option_flags(fn), **getattr(fn, "config_flags", {})}
        words = getattr(fn, "config_fields", frozenset())

        @functools.wraps(fn)
        def wrapper(**kwargs: Any) -> Any:
            setup_logging(kwargs.get("quiet", False), kwargs.get("verbose", False))

            def body() -> Any:
                check_environment()
                check_numbers(kwargs, flags)
                command_threads(kwargs.get("threads", kwargs.get("num_threads")))
                check_paths(kwargs, out)
                with command_device(kwargs.get("device")):
                    try:
                        return fn(**kwargs)
                    except (ValueError, TypeError) as exc:  # settings named as flags
                        named = name_flags(str(exc), flags, words)
                        if named == str(exc):
                            raise
                        raise BadInputError(named) from exc

            return run_command(body, kwargs.get("out", kwargs.get("output")))

        group.command(name, **({} if cls is None else {"cls": cls}))(wrapper)
        return fn

    return register


def existing_corpus(corpus: str) -> Path:
    """The corpus' path (``sample`` and folders resolved); ``BadInputError`` when missing."""
    from phrasekit.datasets import resolve_corpus

    path = resolve_corpus(corpus)
    if not path.exists():
        raise BadInputError("- (stdin) is not read here: give the corpus by its path"
                            if corpus == "-" else f"corpus not found: {corpus}")
    return path


def resolve_workers(workers: int) -> int:
    """``--workers`` as a process count (0: one per CPU core)."""
    if workers < 0:
        raise BadInputError(f"--workers must be >= 0, got {workers}")
    return workers or os.cpu_count() or 1
