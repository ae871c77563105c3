"""Model commands: list the registry, quantise or export a model, encode phrases."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any

import typer

from phrasekit import models as model_folders
from phrasekit.cli.common import (
    BadInputError,
    Device,
    JsonFlag,
    ModelOpt,
    Precision,
    Quiet,
    SummaryFlag,
    Verbose,
    check_out_format,
    check_summary_out,
    command,
    echo_json,
    finish_run,
    logger,
    stream_path,
)
from phrasekit.cli.engine import ENGINE_OPTIONS, encoder_for, open_run
from phrasekit.cli.options import with_config
from phrasekit.cli.stdin import stdin_lines
from phrasekit.io import atomic_write
from phrasekit.lines import count_lines, iter_lines
from phrasekit.registry import (
    DEFAULT_MODEL,
    TASK_DEFAULTS,
    available_models,
    check_model_name,
    precision_request,
)
from phrasekit.tables import (
    FORMAT_NAMES,
    NOT_TABLES,
    READ_SUFFIXES,
    VECTOR_DTYPES,
    column_values,
    is_stdout,
    only_column,
    read_table,
    write_npy_rows,
    write_vector_table,
)

app = typer.Typer()


#: The lines `phrasekit models` prints above its table.
MODELS_LEGEND = ("# *: the default model of the commands its \"default of\" line names (used "
                 "when no --model",
                 "#    is given); in brackets, the dev score that chose it.")
#: `phrasekit models` fits in this many columns (descriptions wrap under themselves).
MODELS_WIDTH = 100


def format_models(models: dict[str, str], defaults: dict[str, str],
                  width: int = MODELS_WIDTH) -> list[str]:
    """The legend, a header, then per model: a ``*`` for a default, the name and its
    description, wrapped under itself within ``width`` columns, and for a default a "default
    of" line naming its commands."""
    import textwrap

    names = max(map(len, [*models, "model"]))
    indent = " " * (names + 4)
    lines = [*MODELS_LEGEND, f"  {'model':<{names}}  description"]
    for name, desc in models.items():
        text = [desc] + ([f"default of: {defaults[name]}"] if name in defaults else [])
        body = [part for t in text for part in textwrap.wrap(
            t, width - len(indent), subsequent_indent="  ", break_on_hyphens=False)]
        star = "*" if name in defaults else " "
        lines.append(f"{star} {name:<{names}}  {body[0]}".rstrip())
        lines += [indent + part for part in body[1:]]
    return lines


def models_records(models: dict[str, str], defaults: dict[str, str]) -> list[dict[str, Any]]:
    """`phrasekit models --json`: one object per model (name, default, default_of,
    description)."""
    return [{"name": name, "default": name in defaults, "default_of": defaults.get(name),
             "description": desc} for name, desc in models.items()]


@command(app, "models")
def models_cmd(as_json: JsonFlag = False, quiet: Quiet = False) -> None:
    """List the model names `phrasekit.load` knows; * marks a default, with the commands it is
    the default of. The list ends with this CPU and the precisions `auto` and `fast` take on it.

    Example: phrasekit models --json
    """
    if as_json:
        echo_json(models_records(available_models(), TASK_DEFAULTS))
        return
    from phrasekit.encoders.cpu import precision_summary

    for line in [*format_models(available_models(), TASK_DEFAULTS), *precision_summary()]:
        typer.echo(line)


@command(app, "quantize", out="folder")
def quantize_cmd(
    model_dir: Annotated[Path, typer.Argument(
        help="A PEARL, Phrase-BERT or UCTopic model folder (float16 backbone deltas).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for the int8 copy.")],
    quiet: Quiet = False,
) -> None:
    """Copy a fine-tuned model folder with its backbone deltas stored as int8 (half the size).

    Example: phrasekit quantize runs/pearl/model --out runs/pearl/model-int8
    """
    sizes = model_folders.quantize_model_folder(model_dir, out)  # imports torch, on use
    typer.echo(f"{model_dir} ({sizes['source_mb']} MB) -> {out} ({sizes['int8_mb']} MB)")


@command(app, "export", out="folder")
def export_cmd(
    model: Annotated[str, typer.Argument(help="Model name (see `phrasekit models`) or folder.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Output folder.")],
    quiet: Quiet = False,
    verbose: Verbose = False,
) -> None:
    """Write a model as a sentence-transformers folder (SentenceTransformer, KeyBERT and
    BERTopic load it).

    Example: phrasekit export phrase-bert-minilm --out runs/phrase-bert-st
    """
    from phrasekit.artifacts import check_output_folder
    from phrasekit.encoders import export_sentence_transformers
    from phrasekit.encoders.export import EXPORT_KIND
    from phrasekit.registry import load

    check_model_name(model)
    check_output_folder(out, EXPORT_KIND)  # an existing folder judged before the model loads
    export_sentence_transformers(load(model, device="cpu"), out)
    modules = json.loads((Path(out) / "modules.json").read_text(encoding="utf-8"))
    if any(m.get("type", "").startswith("phrasekit.") for m in modules):  # PEARL's own parts
        typer.echo(f"{model} -> {out} (phrasekit.load({str(out)!r}) and --model {out} load "
                   f"it; so does SentenceTransformer({str(out)!r}, trust_remote_code=True) "
                   "where phrasekit is installed)")
    else:
        typer.echo(f"{model} -> {out} (SentenceTransformer({str(out)!r}) loads it)")


#: What `encode` writes, by the output's suffix (`-`: JSON lines on stdout).
ENCODE_WRITES = (".npy", ".parquet", ".pq", ".jsonl")


def encode_input(input_file: Path, column: str | None, skip_blank: bool
                 ) -> tuple[int, Callable[[], Iterator[str]]]:
    """The number of texts to encode and a function that yields them: the cells of one column
    of a CSV, TSV or Parquet table (``column``, or its only column), or the lines of a text
    file; read and checked before any model is loaded."""
    if is_stdout(input_file):
        if column is not None:
            raise BadInputError("--column needs a table input (.csv, .tsv, .parquet), not stdin")
        texts = stdin_lines(skip_blank)
        return len(texts), lambda: iter(texts)
    if input_file.suffix.lower() in READ_SUFFIXES:
        table = read_table(input_file)
        name = only_column(table, column)
        values = [v for _, v in column_values(table, name, skip_empty=skip_blank,
                                              option="--skip-blank")]
        return len(values), lambda: iter(values)
    if column is not None:
        raise BadInputError(f"{input_file}: --column needs a table input (.csv, .tsv, .parquet)")
    suffix = input_file.suffix.lower()
    if suffix in NOT_TABLES:  # read as lines, a JSON line would be embedded as one phrase
        hint = f"; zcat {input_file} | phrasekit encode - ..." if suffix == ".gz" else ""
        raise BadInputError(f"{input_file}: encode reads a text file (one phrase per line) or a "
                            f"table (.csv, .tsv, .parquet), not {FORMAT_NAMES[suffix]}{hint}")
    n_lines, skipped = count_lines(input_file, skip_blank=skip_blank)
    if skipped:
        typer.echo(f"skipped {skipped} blank line(s) of {input_file}", err=True)
    return n_lines, lambda: iter_lines(input_file, skip_blank=skip_blank)


@command(app, "encode", out="stream")
@with_config(run=ENGINE_OPTIONS)
def encode_cmd(
    input_file: Annotated[Path, typer.Argument(
        help="Text file, one phrase per line (UTF-8; - reads stdin), or a table (.csv, .tsv, "
             ".parquet) with a header row: the phrases are the cells of --column.")],
    out: Annotated[Path, typer.Option(
        "--out", "-o", parser=stream_path,
        help="Output: .npy (n x d matrix), .parquet (text and vector columns) "
             "or .jsonl; - writes JSON lines to stdout.")],
    model: ModelOpt = DEFAULT_MODEL,
    column: Annotated[str | None, typer.Option(
        help="The column to encode when the input is a table (default: its only "
             "column).")] = None,
    batch_size: Annotated[int, typer.Option(help="Texts per batch.")] = 128,
    precision: Precision = "auto",
    skip_blank: Annotated[bool, typer.Option(
        help="Drop blank lines or empty cells (and say how many) instead of refusing the "
             "file; row i of the output is then the i-th non-blank one.")] = False,
    dtype: Annotated[str, typer.Option(
        help="Number type of the saved vectors: float32, or float16 for half the file "
             "(cosines change by about 1e-4; open a .npy with numpy.load(..., mmap_mode='r') "
             "to read rows without loading the file).")] = "float32",
    device: Device = "auto",
    as_json: SummaryFlag = False,
    quiet: Quiet = False,
    verbose: Verbose = False,
    *,
    run: dict[str, Any],
) -> None:
    """Embed phrases (one per line, or one per table cell; row i of the output is phrase i) and
    save L2-normalised vectors. Lines are split on newline characters only; a text file is
    read and the output written shard by shard, so neither is held whole in memory.

    Example: phrasekit encode phrases.txt --out phrases.npy --model minilm
    """
    check_model_name(model)
    fmt = check_out_format(out, ENCODE_WRITES)
    check_summary_out(as_json, out)
    t0 = time.perf_counter()
    if dtype not in VECTOR_DTYPES:
        raise BadInputError(f"--dtype must be one of {', '.join(VECTOR_DTYPES)}, got {dtype!r}")
    kwargs = precision_request(model, precision)
    n_texts, texts = encode_input(input_file, column, skip_blank)  # before any work
    with open_run(run, None if is_stdout(out) else out, quiet=quiet) as sharded:
        encoder = encoder_for(sharded, model, **kwargs)
        rows = encoder.encode_stream(texts(), batch_size=batch_size, show_progress=not quiet,
                                     total=n_texts)
        if fmt == ".npy":
            with atomic_write(out, "wb") as fh:
                write_npy_rows(fh, rows, n_texts, encoder.dim, dtype=dtype)
        else:
            write_vector_table(out, texts(), rows, dtype=dtype)
    logger.info("wrote %s: %d x %d", out, n_texts, encoder.dim)
    finish_run(as_json, None, {"command": "encode", "input": input_file, "model": model,
                               "texts": n_texts, "dim": encoder.dim, "dtype": dtype,
                               "seconds": round(time.perf_counter() - t0, 3), "output": out})
