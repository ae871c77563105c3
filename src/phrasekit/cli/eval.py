"""The benchmark command: one table of models x tasks."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from phrasekit.cli.common import (
    BadInputError,
    Device,
    Quiet,
    Threads,
    Verbose,
    check_out_format,
    check_output_file,
    command,
    file_path,
)
from phrasekit.settings import torch_threads

app = typer.Typer()


@command(app, "eval")
def eval_cmd(
    model: Annotated[list[str], typer.Option(
        "--model", "-m", help="Model name; repeat for several rows.")],
    tasks: Annotated[str | None, typer.Option(
        help="Comma-separated tasks (default: all).")] = None,
    quick: Annotated[bool, typer.Option(help="Small deterministic subset of every task.")] = False,
    json_out: Annotated[Path | None, typer.Option(
        "--json", parser=file_path, help="Write all metrics as JSON.")] = None,
    data_dir: Annotated[Path | None, typer.Option(
        help="Benchmark data folder (else PHRASEKIT_DATA / shared/data).")] = None,
    threads: Threads = None,
    timings: Annotated[bool, typer.Option(help="Also print seconds per task.")] = True,
    noise: Annotated[str | None, typer.Option(
        help="Test-side noise for robustness: `typo` (seeded; bird, autofj and the autofj_join "
             "tasks only, the default tasks then).")] = None,
    aliases: Annotated[Path | None, typer.Option(
        help="Also score real-alias retrieval (per alias kind) on this aliases.tsv.gz or PEARL "
             "data folder (`train pearl-data --redirects`); alone, without --tasks, only that."
    )] = None,
    alias_split: Annotated[str, typer.Option(
        help="Split of --aliases to score: dev (model choice) or test (once, at the end).")
    ] = "dev",
    device: Device = "auto",
    quiet: Quiet = False,
    verbose: Verbose = False,
) -> None:
    """Run the phrase benchmark and print one table (rows: models, columns: tasks, avg7).

    Example: phrasekit eval --model minilm --model minilm@bf16 --json runs/eval.json
    Typo robustness: phrasekit eval --model minilm --tasks bird,autofj --noise typo
    The join itself: phrasekit eval -m pearl-minilm --tasks autofj_join,autofj_join_cosine
    Real aliases: phrasekit eval -m minilm -m pearl-minilm --aliases runs/pearl-data
    """
    # imported on use: the runner pulls in torch and scikit-learn, which `eval --help` skips
    from phrasekit.eval.aliases import ALIAS_FILE, alias_file, format_alias_table, score_models
    from phrasekit.eval.runner import format_table, parse_tasks, run_benchmark

    task_list = [t.strip() for t in tasks.split(",") if t.strip()] if tasks is not None else None
    if task_list == []:
        raise BadInputError(f"--tasks {tasks!r} names no task; give comma-separated task names "
                            "or leave --tasks out for all")
    parse_tasks(task_list)  # a bad task name fails before any model runs
    if json_out is not None:  # never into the benchmark's own files, checked before the run
        from phrasekit.paths import is_inside

        if str(json_out) == "-":
            raise BadInputError("--json -: the table goes to stdout, so --json names a file "
                                "(e.g. --json results.json)")
        check_out_format(json_out, (".json",))
        from phrasekit.settings import data_dir as default_data_dir

        data = data_dir if data_dir is not None else default_data_dir(required=False)
        check_output_file(json_out, tuple(p for p in (data, aliases) if p is not None),
                          option="--json")
        if data is not None and data.is_dir() and is_inside(json_out, data):
            raise BadInputError(f"--json {json_out} is inside the benchmark data folder {data}"
                                ", whose files are the benchmark's; write elsewhere")
    if alias_split not in ("dev", "test"):
        raise BadInputError(f"--alias-split must be dev or test, got {alias_split!r}")
    if alias_split != "dev" and aliases is None:
        raise BadInputError("--alias-split chooses the split of --aliases: give the file")
    if aliases is not None:
        if json_out is not None and tasks is None:
            raise BadInputError("--json records the benchmark tasks: add --tasks, or print the "
                                "alias table alone without --json")
        if not aliases.exists():
            raise BadInputError(f"--aliases {aliases}: not found")
        if not alias_file(aliases).is_file():
            raise BadInputError(f"--aliases {aliases}: a folder without {ALIAS_FILE} (give "
                                "the file, or the PEARL data folder that holds it)")
        with torch_threads(threads):
            rows = score_models(model, aliases, alias_split)
        typer.echo(format_alias_table(rows, alias_split))
        if tasks is None:
            return
    result = run_benchmark(model, tasks=task_list, data_dir=data_dir, quick=quick,
                           json_path=json_out, show_progress=not quiet,
                           num_threads=threads, noise=noise)
    typer.echo(format_table(result, timings=timings))
