"""`phrasekit keyphrases`: keyphrases per document (EmbedRank++), here or on a Ray engine."""

from __future__ import annotations

import inspect
import time
from pathlib import Path
from typing import Annotated, Any

import typer

from phrasekit.cli.common import (
    BadInputError,
    CsvSafe,
    Device,
    ModelOpt,
    Quiet,
    SummaryFlag,
    Threads,
    VectorCache,
    Verbose,
    Workers,
    check_csv_safe,
    check_out_format,
    check_summary_out,
    command,
    finish_run,
    resolve_workers,
    stream_path,
    vector_cache,
)
from phrasekit.cli.engine import ENGINE_OPTIONS, Run, open_run
from phrasekit.cli.options import with_config
from phrasekit.cli.stdin import stdin_corpus
from phrasekit.cli.topics import TextField
from phrasekit.datasets import resolve_corpus
from phrasekit.eval.keyphrases import DEFAULT_KS, format_metrics, gold_of, score_keyphrases
from phrasekit.io import Document, document_location, read_corpus
from phrasekit.phrases.keyphrases import CANDIDATE_KINDS, KeyphraseExtractor, Keyphrases
from phrasekit.pipeline import sharded_keyphrases
from phrasekit.registry import KEYPHRASES_MODEL
from phrasekit.tables import STDOUT, is_stdout, write_table

app = typer.Typer()
Split = Annotated[str | None, typer.Option(
    help="Only documents whose `split` field equals this (e.g. `dev` for Inspec).")]
GoldField = Annotated[str | None, typer.Option(
    help="Score against this field's gold keyphrases (e.g. `keyphrases` for Inspec): P/R/F1 at "
         "5 and 10, stemmed exact match.")]

#: KeyphraseExtractor's defaults, quoted in `keyphrases --help` (they live only there).
_KP_DEFAULTS = {name: p.default for name, p in
                inspect.signature(KeyphraseExtractor.__init__).parameters.items()}
_NESTED_DEFAULT = "--suppress-nested" if _KP_DEFAULTS["suppress_nested"] else "--keep-nested"


def keyphrases_for(run: Run | None, extractor: KeyphraseExtractor, docs: list[Document],
                   show_progress: bool) -> list[Keyphrases]:
    """``extractor``'s keyphrases of ``docs``, here or shard by shard on the run's engine."""
    if run is None:
        return extractor.extract(docs, show_progress=show_progress)
    return sharded_keyphrases(extractor.settings(), [d.text for d in docs], run.engine,
                              run.store, show_progress=show_progress)


def write_keyphrases(out: Path | str, fmt: str, ids: list[str], results: list[Keyphrases],
                     csv_safe: bool = True) -> None:
    """JSON lines (``fmt`` .jsonl: one ``{id, keyphrases: [{phrase, score}]}`` per document;
    ``-``: stdout) or a flat table of id, rank, phrase, score (``csv_safe``: formula-like
    CSV/TSV cells made text)."""
    if fmt != ".jsonl":
        write_table(out, ("id", "rank", "phrase", "score"),
                    ([i, rank, p, round(s, 6)] for i, r in zip(ids, results, strict=True)
                     for rank, (p, s) in enumerate(r, start=1)), csv_safe=csv_safe)
        return
    write_table(out, ("id", "keyphrases"),
                ([i, [{"phrase": p, "score": round(s, 6)} for p, s in r]]
                 for i, r in zip(ids, results, strict=True)), fmt="jsonl")


#: What `keyphrases` writes, by the output's suffix (`-`: JSON lines on stdout).
KEYPHRASE_WRITES = (".jsonl", ".parquet", ".pq", ".csv", ".tsv")


def read_documents(corpus: str, text_field: str, split: str | None) -> list[Document]:
    """The documents of CORPUS (``-``: stdin), of ``split`` when given; empty texts refused."""
    where = _corpus_name(corpus)
    docs = stdin_corpus(text_field) if is_stdout(corpus) else \
        read_corpus(resolve_corpus(corpus), text_field=text_field)
    if split is not None:
        present = sorted({str(d.meta["split"]) for d in docs if d.meta.get("split") is not None})
        docs = [d for d in docs  # a split field of numbers is matched as their text
                if d.meta.get("split") is not None and str(d.meta["split"]) == split]
        if not docs:
            found = (f"splits present: {', '.join(present)}" if present
                     else "no document has a 'split' field")
            raise BadInputError(f"{where}: no document has split {split!r} ({found})")
    empty = next((i for i, d in enumerate(docs) if not d.text.strip()), None)
    if empty is not None:
        if not is_stdout(corpus) and split is None:
            where = document_location(resolve_corpus(corpus), empty)
        raise BadInputError(f"{where}: document {docs[empty].id!r} has an empty "
                            f"{text_field!r}")
    return docs


def read_golds(docs: list[Document], corpus: str, field: str | None) -> list[list[str]] | None:
    """The gold keyphrases of ``docs`` (``--gold-field``); a bad one names the corpus."""
    if field is None:
        return None
    try:
        return gold_of(docs, field)
    except ValueError as exc:
        raise BadInputError(f"{_corpus_name(corpus)}: {exc}") from None


def _corpus_name(corpus: str) -> str:
    """The corpus as errors name it: its file, or ``<stdin>`` for ``-``."""
    return "<stdin>" if is_stdout(corpus) else str(resolve_corpus(corpus))


@command(app, "keyphrases", out="stream")
@with_config(run=ENGINE_OPTIONS)
def keyphrases_cmd(
    corpus: Annotated[str, typer.Argument(
        metavar="CORPUS", help="JSONL(.gz) / Parquet / text corpus, a folder with "
        "documents.jsonl or Parquet shards, `sample`, or - for stdin (JSON lines, or one "
        "document per line).")],
    out: Annotated[Path | None, typer.Option(
        "--out", "-o", parser=stream_path,
        help="Output: .jsonl (one {id, keyphrases: [{phrase, score}]} per document), or a "
             "flat table of id, rank, phrase, score as .parquet, .csv or .tsv; default (or "
             "-): JSON lines on stdout.")
    ] = None,
    top_n: Annotated[int, typer.Option("-n", "--top-n", help="Keyphrases per document.")] = 10,
    model: ModelOpt = KEYPHRASES_MODEL,
    diversity: Annotated[float | None, typer.Option(
        help="MMR diversity in [0, 1]: weight against choosing a phrase similar to those "
             f"already chosen (0: plain ranking by score; default {_KP_DEFAULTS['diversity']}, "
             "chosen on the Inspec dev split).")] = None,
    candidates: Annotated[str | None, typer.Option(
        help="Candidate spans: noun_chunks, pos (adjective/noun runs) or both (default "
             f"{_KP_DEFAULTS['candidates']}, chosen on the Inspec dev split).")] = None,
    suppress_nested: Annotated[bool | None, typer.Option(
        "--suppress-nested/--keep-nested", show_default=False,
        help="Of two candidates whose words contain one another ('neural network' / "
             "'recurrent neural network'), keep only the higher scored (default: "
             f"{_NESTED_DEFAULT}).")] = None,
    text_field: TextField = "text",
    split: Split = None,
    gold_field: GoldField = None,
    threads: Threads = None,
    workers: Workers = 0,
    cache: VectorCache = True,
    csv_safe: CsvSafe = True,
    device: Device = "auto",
    as_json: SummaryFlag = False,
    quiet: Quiet = False,
    verbose: Verbose = False,
    *,
    run: dict[str, Any],
) -> None:
    """Keyphrases per document: noun phrases ranked by embedding similarity to the document.

    Example: phrasekit keyphrases sample --out keyphrases.jsonl -n 10
    Inspec dev score: phrasekit keyphrases ../shared/corpora/inspec --split dev \\
                        --gold-field keyphrases --out dev.jsonl
    """
    fmt = ".jsonl" if out is None else check_out_format(out, KEYPHRASE_WRITES)
    check_csv_safe(csv_safe, fmt)
    check_summary_out(as_json, out)
    if candidates is not None and candidates not in CANDIDATE_KINDS:
        raise BadInputError(f"--candidates must be one of {', '.join(CANDIDATE_KINDS)}, got "
                            f"{candidates!r}")
    given = {"diversity": diversity, "candidates": candidates, "suppress_nested": suppress_nested}
    extractor = KeyphraseExtractor(  # validates before the corpus is read
        encoder=model, top_n=top_n, n_process=resolve_workers(workers),
        cache_dir=vector_cache(None, cache), **{k: v for k, v in given.items() if v is not None})
    docs = read_documents(corpus, text_field, split)
    golds = read_golds(docs, corpus, gold_field)
    if golds is not None:  # score at 5 and 10 even when fewer are written
        extractor = extractor.set_params(top_n=max(top_n, *DEFAULT_KS))
    t0 = time.perf_counter()
    to_stdout = out is None or is_stdout(out)
    with open_run(run, None if to_stdout else out, workers=workers or None,
                  quiet=quiet) as sharded:
        results = keyphrases_for(sharded, extractor, docs, show_progress=not quiet)
    secs = time.perf_counter() - t0
    write_keyphrases(out or STDOUT, fmt, [d.id for d in docs], [r[:top_n] for r in results],
                     csv_safe)
    if not to_stdout and not as_json:
        typer.echo(f"{len(docs)} documents in {secs:.1f}s -> {out}")
    summary: dict[str, Any] = {
        "command": "keyphrases", "corpus": corpus, "model": model, "documents": len(docs),
        "keyphrases": sum(len(r[:top_n]) for r in results), "seconds": round(secs, 3),
        "output": out}
    if golds is not None:
        metrics = score_keyphrases([[p for p, _ in r] for r in results], golds)
        typer.echo(f"{gold_field}: {format_metrics(metrics)}", err=to_stdout or as_json)
        summary["metrics"] = metrics
    finish_run(as_json, f"{len(docs)} documents in {secs:.1f}s -> {out}" if as_json else None,
               summary)
