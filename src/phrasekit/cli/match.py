"""Matching commands: fuzzy join, entity index, nearest neighbours, sentence-pair scores."""

from __future__ import annotations

import csv
import functools
import hashlib
import io
import os
import re
import time
from pathlib import Path
from typing import Annotated, Any

import typer

from phrasekit.cli.common import (
    BadInputError,
    CsvSafe,
    Device,
    JsonFlag,
    ModelOpt,
    Precision,
    Quiet,
    SummaryFlag,
    Verbose,
    check_csv_safe,
    check_out_format,
    check_summary_out,
    command,
    echo_json,
    finish_run,
    stream_path,
)
from phrasekit.cli.engine import ENGINE_OPTIONS, encoder_for, open_run
from phrasekit.cli.options import with_config
from phrasekit.encoders.cache import check_cache_file
from phrasekit.eval.lexical_diversity import (
    nearest_neighbors,
    normalize_text,
    read_vocabulary_file,
)
from phrasekit.io import atomic_write, input_problem
from phrasekit.models.folders import SUBTST_FORMAT, model_folder_format
from phrasekit.paths import csv_reader, utf8_problem
from phrasekit.pipeline import ShardedSearch
from phrasekit.registry import (
    DEFAULT_MODEL,
    JOIN_MODEL,
    check_model_name,
    load,
    precision_request,
)
from phrasekit.similarity.hybrid import SCORERS, shipped_combiner
from phrasekit.similarity.index import INDEX_KINDS
from phrasekit.similarity.join import (
    DEFAULT_THRESHOLDS,
    JOIN_HOWS,
    SafeWriter,
    column_values,
    default_threshold,
    fuzzy_join,
    read_table,
    write_joined,
)
from phrasekit.similarity.retrieval import (
    ENTITY_INDEX_KINDS,
    EntityIndex,
    check_index_out,
    read_names,
)
from phrasekit.tables import is_stdout

app = typer.Typer()
index_app = typer.Typer(
    help="Entity retrieval: a persisted top-k index over a dictionary of names.",
    no_args_is_help=True)


def _check_index_kind(index: str, kinds: tuple[str, ...] = INDEX_KINDS) -> None:
    if index not in kinds:
        raise BadInputError(f"--index must be one of {', '.join(kinds)}, got {index!r}")


def _vectors_cache(vocab: Path, model: str, what: str = "vectors") -> Path | None:
    """Where ``neighbors`` keeps a vocabulary's vectors (``what`` "vectors") or its queries'
    (``what`` "queries") for ``model``: beside the vocabulary (None when that folder is not
    writable)."""
    if not os.access(vocab.parent, os.W_OK):
        return None
    spec = Path(model).name if Path(model).is_dir() else model
    tag = re.sub(r"[^A-Za-z0-9_.-]+", "_", spec)
    if Path(model).is_dir():  # two folders of one name must not share a cache
        tag += "-" + hashlib.sha256(str(Path(model).resolve()).encode()).hexdigest()[:8]
    return vocab.parent / f"{vocab.name}.{tag}.{what}.npz"


@command(app, "neighbors")
def neighbors_cmd(
    query: Annotated[str, typer.Argument(help="The phrase whose nearest neighbours to list.")],
    vocab: Annotated[Path, typer.Option(
        "--vocab", help="Vocabulary: text file (one entry per line) or a PhraseVocabulary "
                        "JSON(.gz) from `phrasekit phrases`.")],
    k: Annotated[int, typer.Option("-k", help="Neighbours to list.")] = 10,
    model: ModelOpt = DEFAULT_MODEL,
    max_vocab: Annotated[int | None, typer.Option(
        help="Use only the first N vocabulary entries (a JSON vocabulary is ranked by "
             "document frequency).")] = None,
    cache: Annotated[bool, typer.Option(
        "--cache/--no-cache", help="Keep the vocabulary's vectors in a file beside it "
                                   "(VOCAB.MODEL.vectors.npz, checked at read), and the "
                                   "queries' in VOCAB.MODEL.queries.npz: a later query "
                                   "encodes only itself, and a query seen before (or one "
                                   "from the vocabulary) loads no model.")] = True,
    as_json: JsonFlag = False,
    device: Device = "auto",
    quiet: Quiet = False,
    verbose: Verbose = False,
) -> None:
    """Nearest neighbours of a phrase in a vocabulary by cosine (the phrase itself excluded).

    Example: phrasekit neighbors "natural language processing" --vocab phrases.json.gz -k 10
    """
    if k < 1:
        raise BadInputError(f"-k must be at least 1, got {k}")
    if not query.strip():
        raise BadInputError("the query is empty")
    if max_vocab is not None and max_vocab < 1:
        raise BadInputError(f"--max-vocab must be at least 1, got {max_vocab}")
    check_model_name(model)
    texts = read_vocabulary_file(vocab, max_entries=max_vocab)
    if all(normalize_text(t) == normalize_text(query) for t in texts):  # before a model loads
        raise BadInputError(f"{vocab}: the vocabulary has no entry other than the query "
                            f"{query!r}")
    caches = [_vectors_cache(vocab, model, what) if cache else None
              for what in ("vectors", "queries")]
    for path in caches:  # a file phrasekit did not write is refused before any encoding
        check_cache_file(path)
    hits = nearest_neighbors(functools.partial(load, model), query, texts, k=k,
                             show_progress=not quiet, cache=caches[0], query_cache=caches[1])
    if as_json:
        echo_json({"query": query, "model": model, "neighbors": [
            {"rank": rank, "neighbor": text, "cosine": round(float(score), 6)}
            for rank, (text, score) in enumerate(hits, start=1)]})
        return
    typer.echo("rank\tneighbor\tcosine")
    for rank, (text, score) in enumerate(hits, start=1):
        typer.echo(f"{rank}\t{text}\t{score:.4f}")


#: What `pairs` and `index query` write, by the output's suffix (.txt: the same text).
PAIRS_WRITES = (".tsv", ".txt")
QUERY_WRITES = (".csv", ".txt")


@command(app, "pairs", out="stream")
def pairs_cmd(
    model: Annotated[str, typer.Option(
        "--model", "-m", help="A trained pair model folder (e.g. from `train subtst`).")],
    input: Annotated[Path, typer.Argument(
        help="Tab-separated file: sentence A, sentence B per line (no header).")],
    out: Annotated[Path | None, typer.Option(
        "--out", "-o", parser=stream_path,
        help="TSV to write (A, B, score); default (or -): stdout.")] = None,
    csv_safe: CsvSafe = True,
    device: Device = "auto",
    as_json: SummaryFlag = False,
    quiet: Quiet = False,
) -> None:
    """Score sentence pairs with a SubTST model: P(paraphrase) or the predicted similarity.

    Example: phrasekit pairs -m runs/subtst-mrpc pairs.tsv -o scored.tsv
    """
    if out is not None:
        check_out_format(out, PAIRS_WRITES)
    if model_folder_format(model) != SUBTST_FORMAT:
        raise BadInputError(f"{model} is not a SubTST model folder (train one with "
                            "`phrasekit train subtst`)")
    check_summary_out(as_json, out)
    problem = input_problem(input, "pairs file")
    if problem is not None:
        raise BadInputError(problem)
    t0 = time.perf_counter()
    try:
        with open(input, encoding="utf-8-sig", newline="") as fh:
            rows = list(csv_reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE))
    except UnicodeDecodeError as exc:
        raise BadInputError(utf8_problem(str(input), exc, input)) from None
    while rows and not rows[-1]:  # blank lines at the end only
        rows.pop()
    if not rows:
        raise BadInputError(f"{input}: no sentence pairs (expected sentence A, a tab, "
                            "sentence B per line)")
    for i, r in enumerate(rows, start=1):  # one row per line (no quoting)
        if not r:
            raise BadInputError(f"{input}:{i}: blank line (every line holds sentence A, a "
                                "tab, sentence B, and the output keeps the lines' order)")
        if len(r) != 2 or not r[0].strip() or not r[1].strip():
            raise BadInputError(f"{input}:{i}: expected two non-empty tab-separated sentences"
                                f", found {len(r)} field(s)")
    output = None if is_stdout(out) else out
    encoder = load(model)
    pairs = [(r[0], r[1]) for r in rows]
    scores = encoder.predict(pairs, proba=True)
    if encoder.config.kind == "classification":
        scores = scores[:, 1]
    buf = io.StringIO()
    writer = SafeWriter(buf, csv_safe, delimiter="\t",
                        lineterminator="\n")
    for (a, b), s in zip(pairs, scores, strict=True):
        writer.writerow([a, b, f"{float(s):.4f}"])
    if output is None:
        typer.echo(buf.getvalue(), nl=False)
    else:
        with atomic_write(output) as fh:
            fh.write(buf.getvalue())
        finish_run(as_json, f"{len(pairs)} pairs scored -> {output}", {
            "command": "pairs", "input": input, "model": model, "pairs": len(pairs),
            "seconds": round(time.perf_counter() - t0, 3), "output": output})


#: What `join` writes, by the output's suffix (.txt: CSV; `-`: CSV on stdout).
JOIN_WRITES = (".csv", ".tsv", ".jsonl", ".parquet", ".pq", ".txt")


JoinScorer = Annotated[str, typer.Option(
    help="hybrid: candidates of the embedding and of character n-grams, scored by a learned "
         "combiner of embedding, n-gram, string-ratio, token-overlap, number and initials "
         "features; the score is a match probability. cosine: the embedding's cosine alone.")]


@command(app, "join", out="stream")
@with_config(run=ENGINE_OPTIONS)
def join_cmd(
    left: Annotated[Path, typer.Argument(
        help="Left (reference) table with a header row: CSV, .tsv or .parquet.")],
    right: Annotated[Path, typer.Argument(
        help="Right table (CSV, .tsv or .parquet) whose rows are matched to left rows.")],
    left_on: Annotated[str, typer.Option(help="Column of the left table to match on.")],
    right_on: Annotated[str, typer.Option(help="Column of the right table to match on.")],
    out: Annotated[Path, typer.Option(
        "--out", "-o", parser=stream_path,
        help="Output table: right_row, right_value, left_row, left_value, rank, "
             "score, then the other columns of the left table as left_<name> "
             "and of the right as right_<name> (a name already taken gets _2). "
             "Format by suffix: .csv, .tsv, .jsonl or .parquet; - writes CSV "
             "to stdout. Must not be one of the input files.")],
    model: ModelOpt = JOIN_MODEL,
    k: Annotated[int, typer.Option("-k", help="Candidates kept per right row.")] = 1,
    scorer: JoinScorer = "hybrid",
    threshold: Annotated[float | None, typer.Option(
        help="Drop candidates under this score (hybrid: a probability in [0, 1]; cosine: in "
             "[-1, 1]). Default: the cutoff with the highest F1 of top-1 matches on the dev "
             "half of the AutoFJ benchmark (right rows 0, 2, 4, ... of its 50 tables): "
             f"hybrid {shipped_combiner(JOIN_MODEL).threshold:.2f}; cosine with {JOIN_MODEL} "
             f"{DEFAULT_THRESHOLDS[JOIN_MODEL]} (other models: none unless given).")] = None,
    no_threshold: Annotated[bool, typer.Option(
        "--no-threshold", help="Keep every candidate, however low its score.")] = False,
    how: Annotated[str, typer.Option(
        help="inner: write only right rows that have a match. left: keep the right CSV (the "
             "table whose rows are matched) whole, as SQL's `right LEFT JOIN left`: every "
             "right row is written, in file order; one without a match (none above the "
             "threshold, lost to --one-to-one, or an empty cell under --skip-empty) appears "
             "once with empty left columns, rank and score.")] = "inner",
    one_to_one: Annotated[bool, typer.Option(
        help="Each left and right row in at most one match (greedy by score).")] = False,
    skip_empty: Annotated[bool, typer.Option(
        help="Skip rows whose join cell is empty instead of failing.")] = False,
    index: Annotated[str, typer.Option(
        help="Search: exact, ivf (faiss inverted lists, quick to build), ann (faiss HNSW) or "
             "auto (ivf from 100,000 left and 40,000 right rows).")] = "auto",
    csv_safe: CsvSafe = True,
    precision: Precision = "auto",
    device: Device = "auto",
    as_json: SummaryFlag = False,
    quiet: Quiet = False,
    verbose: Verbose = False,
    *,
    run: dict[str, Any],
) -> None:
    """Fuzzy-join two tables (CSV, TSV or Parquet) on one column each: embedding and character
    candidates scored by a learned match probability (--scorer cosine: the cosine alone).

    Example: phrasekit join left.csv right.csv --left-on title --right-on title --out matches.csv
    """
    check_model_name(model)
    check_csv_safe(csv_safe, check_out_format(out, JOIN_WRITES))
    check_summary_out(as_json, out)
    t0 = time.perf_counter()
    threshold, options = (join_threshold(model, scorer, threshold, no_threshold, how, index),
                          precision_request(model, precision))
    (left_table, left_vals), (right_table, right_vals) = (
        _join_column(path, on, skip_empty) for path, on in ((left, left_on), (right, right_on)))
    with open_run(run, None if is_stdout(out) else out, quiet=quiet) as sharded:
        matches = fuzzy_join(left_vals, right_vals, encoder_for(sharded, model, **options), k=k,
                             threshold=threshold, one_to_one=one_to_one, scorer=scorer,
                             show_progress=not quiet, index=index,
                             search=sharded and ShardedSearch(sharded.engine, sharded.store,
                                                              show_progress=not quiet))
    rows = write_joined(out, matches, left_table, left_on, right_table, right_on, how=how,
                        csv_safe=csv_safe)
    cut = f"{scorer}, " + ("no threshold" if threshold is None else f"threshold {threshold:g}")
    finish_run(as_json, f"{len(matches)} matches for {len(right_vals)} right rows ({cut}); "
               f"{rows} rows -> {'stdout' if is_stdout(out) else out}", {
                   "command": "join", "left": left, "right": right, "model": model,
                   "left_rows": len(left_vals), "right_rows": len(right_vals),
                   "matches": len(matches), "rows_written": rows, "scorer": scorer,
                   "threshold": threshold, "how": how,
                   "seconds": round(time.perf_counter() - t0, 3), "output": out},
               err=is_stdout(out))


def _join_column(path: Path, on: str, skip_empty: bool) -> tuple[Any, list[str]]:
    """A join input's table and its join column's values (checked before any work)."""
    table = read_table(path)
    return table, column_values(table, on, skip_empty=skip_empty, option="--skip-empty")


def join_threshold(model: str, scorer: str, threshold: float | None, no_threshold: bool,
                   how: str, index: str) -> float | None:
    """Check ``join``'s options (one line each) and return the threshold to use: the given
    one, none with ``--no-threshold``, else the scorer's default for the model."""
    _check_index_kind(index)
    if how not in JOIN_HOWS:
        raise BadInputError(f"--how must be one of {', '.join(JOIN_HOWS)}, got {how!r}")
    if no_threshold and threshold is not None:
        raise BadInputError("give --threshold or --no-threshold, not both")
    check_join_scorer(scorer, threshold)
    if threshold is None and not no_threshold:
        return default_threshold(Path(model).name if Path(model).is_dir() else model, scorer)
    return threshold


def check_join_scorer(scorer: str, threshold: float | None) -> None:
    """One line for an unknown ``--scorer`` or a ``--threshold`` outside its scale."""
    if scorer not in SCORERS:
        raise BadInputError(f"--scorer must be one of {', '.join(SCORERS)}, got {scorer!r}")
    low = 0.0 if scorer == "hybrid" else -1.0
    if threshold is not None and not low <= threshold <= 1.0:
        what = "a match probability" if scorer == "hybrid" else "a cosine"
        raise BadInputError(f"--threshold is {what} in [{low:g}, 1] with --scorer {scorer}, "
                            f"got {threshold}")


@command(index_app, "build", out="folder")
@with_config(run=ENGINE_OPTIONS)
def index_build_cmd(
    names_file: Annotated[Path, typer.Argument(
        help="Names: .txt (one per line) or .csv/.tsv with a header row.")],
    out: Annotated[Path, typer.Option(
        "--out", "-o", help="Output folder (replaced if it holds an earlier index).")],
    model: ModelOpt = JOIN_MODEL,
    column: Annotated[str | None, typer.Option(
        help="Name column of a .csv/.tsv (optional for one column).")] = None,
    id_column: Annotated[str | None, typer.Option(
        help="Id column of a .csv/.tsv (default: row number).")] = None,
    index: Annotated[str, typer.Option(
        help="Search: exact, ann (faiss HNSW) or auto (ann from 100,000 names).")] = "auto",
    device: Device = "auto",
    quiet: Quiet = False,
    verbose: Verbose = False,
    *,
    run: dict[str, Any],
) -> None:
    """Embed a dictionary of names and save a searchable index folder.

    Example: phrasekit index build entities.csv --column name --id-column id --out runs/entities
    """
    check_model_name(model)
    _check_index_kind(index, ENTITY_INDEX_KINDS)
    check_index_out(out)
    names, ids = read_names(names_file, column=column, id_column=id_column)
    with open_run(run, out, quiet=quiet) as sharded:
        encoder = model if sharded is None else encoder_for(sharded, model)
        ent = EntityIndex.build(names, encoder, ids=ids, index=index, show_progress=not quiet)
    ent.save(out)
    dropped = len(names) - len(ent)  # a name repeated without ids is kept once
    note = f"; {dropped} repeated {'entry' if dropped == 1 else 'entries'} kept once" \
        if dropped else ""
    typer.echo(f"indexed {len(ent)} names ({ent.kind}, {ent.dim}d, {ent.model}{note}) -> "
               f"{out}")


@command(index_app, "query", out="stream")
def index_query_cmd(
    directory: Annotated[Path, typer.Argument(help="Folder written by `phrasekit index build`.")],
    texts: Annotated[list[str] | None, typer.Argument(help="Query texts.")] = None,
    k: Annotated[int, typer.Option("-k", help="Results per query.")] = 5,
    scorer: Annotated[str, typer.Option(
        help="hybrid: embedding and character n-gram candidates scored by the learned "
             "combiner (the score is a match probability); cosine: the cosine alone.")
    ] = "hybrid",
    queries: Annotated[Path | None, typer.Option(
        help="Queries file: .txt (one per line) or .csv/.tsv (with --column).")] = None,
    column: Annotated[str | None, typer.Option(
        help="Query column of a .csv/.tsv queries file.")] = None,
    out: Annotated[Path | None, typer.Option(
        "--out", "-o", parser=stream_path,
        help="Write results as CSV (query_row, query, rank, name, id, score) "
             "instead of printing them (- prints them).")] = None,
    as_json: JsonFlag = False,
    csv_safe: CsvSafe = True,
    device: Device = "auto",
    quiet: Quiet = False,
    verbose: Verbose = False,
) -> None:
    """Top-k names for each query text (tab-separated on stdout, JSON with --json, or CSV with
    --out).

    Example: phrasekit index query runs/entities "new york city" "NYC" -k 3
    """
    if k < 1:
        raise BadInputError(f"-k must be at least 1, got {k}")
    check_join_scorer(scorer, None)
    if as_json and out is not None and not is_stdout(out):
        raise BadInputError("--json prints to stdout and --out writes CSV: give one")
    if out is not None:
        check_out_format(out, QUERY_WRITES)
    printed = out is None or is_stdout(out)  # JSON, or a plain table to read
    check_csv_safe(csv_safe, ".json" if as_json else "the printed table" if printed else ".csv")
    if column is not None and queries is None:
        raise BadInputError("--column names the query column of --queries FILE; give the file")
    items = list(texts or [])
    if queries is not None:
        items += read_names(queries, column=column, what="queries file")[0]
    if not items:
        raise BadInputError("give query texts or --queries FILE")
    blank = next((i for i, q in enumerate(texts or []) if not q.strip()), None)
    if blank is not None:  # before the index and its model load
        raise BadInputError(f"query {blank + 1} is empty: give a name to look up")
    broken = next((i for i, q in enumerate(texts or []) if any(c in q for c in "\t\r\n")),
                  None)
    if broken is not None:  # a name is one line; the table on stdout is tab-separated
        raise BadInputError(f"query {broken + 1} holds a tab or a line break: give one name "
                            "per argument")
    ent = EntityIndex.load(directory)
    results = ent.query(items, k=k, show_progress=not quiet, scorer=scorer)
    rows = [(i, q, rank, name, ident, round(float(score), 6))  # a number: never prefixed
            for i, (q, hits) in enumerate(zip(items, results, strict=True))
            for rank, (name, ident, score) in enumerate(hits, start=1)]
    if as_json:
        echo_json([{"query_row": i, "query": q, "hits": [
            {"rank": rank, "name": name, "id": ident, "score": round(score, 6)}
            for rank, (name, ident, score) in enumerate(hits, start=1)]}
            for i, (q, hits) in enumerate(zip(items, results, strict=True))])
        return
    header = ("query_row", "query", "rank", "name", "id", "score")
    if out is None or is_stdout(out):  # a plain table to read; a tab or break in a name: a space
        typer.echo("\t".join(header[1:]))
        for row in rows:
            typer.echo("\t".join(re.sub(r"[\t\r\n]", " ", f"{x:.6f}" if isinstance(x, float)
                                       else str(x)) for x in row[1:]))
        return
    with atomic_write(out, newline="") as fh:
        writer = SafeWriter(fh, csv_safe)
        writer.writerow(header)
        writer.writerows(rows)
    typer.echo(f"{len(rows)} results for {len(items)} queries -> {out}")


app.add_typer(index_app, name="index")
