"""``phrasekit topics apply`` and ``phrasekit topics search``: a saved document topic model
(``phrasekit topics CORPUS --save-model DIR``) used without refitting."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated

import typer

from phrasekit.cli.common import (
    BadInputError,
    Device,
    JsonFlag,
    Quiet,
    VectorCache,
    Verbose,
    command,
    existing_corpus,
)
from phrasekit.cli.common import vector_cache as resolve_cache

app = typer.Typer()

CorpusArg = Annotated[str, typer.Argument(
    metavar="CORPUS", help="JSONL(.gz) / Parquet / text corpus, a folder with documents.jsonl "
                           "or Parquet shards, or `sample`.")]
TextField = Annotated[str, typer.Option(help="JSONL field holding the text.")]
ModelDir = Annotated[Path, typer.Argument(
    metavar="DIR", help="A folder written by `phrasekit topics CORPUS --save-model DIR`.")]


def saved_model_dir(path: Path) -> Path:
    """``path`` when it is a folder; ``BadInputError`` naming it otherwise (a folder that is
    not a saved model is refused by ``DocumentTopicModel.load``, checking its manifest)."""
    if not path.is_dir():
        what = "a file, not a folder" if path.exists() else "no such folder"
        raise BadInputError(f"{path}: {what}; give the folder `phrasekit topics "
                            "CORPUS --save-model DIR` wrote")
    return path


@command(app, "apply", out="folder")
def apply_cmd(
    model_dir: ModelDir,
    corpus: CorpusArg,
    out: Annotated[Path, typer.Option(
        "--out", "-o", help="Output folder for topics.json, topics.md and report.html.")],
    model: Annotated[str | None, typer.Option(
        "--model", "-m", help="Encoder to place documents with (default: the saved model's "
                              "own; any other is refused).")] = None,
    cache_dir: Annotated[Path | None, typer.Option(
        help="Folder caching document vectors between runs (default: phrasekit's cache "
             "folder).")] = None,
    cache: VectorCache = True,
    text_field: TextField = "text",
    report: Annotated[bool, typer.Option(
        "--report/--no-report", help="Also write report.html.")] = True,
    placement: Annotated[str, typer.Option(
        help="fit: as the fit placed documents (those of the fitted sample encoded, the others "
             "by the fit's word-based student), so the fitted corpus gets the fit's topics; "
             "encoder: every document encoded and put in its nearest topic.")] = "fit",
    device: Device = "auto",
    quiet: Quiet = False,
    verbose: Verbose = False,
) -> None:
    """Place a corpus in the topics of a saved model, without refitting, and write the outputs
    of `phrasekit topics`: by default each document is placed as the fit placed it, so on the
    fitted corpus the outputs are the fit's.

    Example: phrasekit topics apply runs/model new.jsonl --out runs/new
    """
    from phrasekit.topics import apply_topics
    from phrasekit.topics.exploration.explore import APPLY_PLACEMENTS

    if placement not in APPLY_PLACEMENTS:
        raise BadInputError(f"--placement must be one of {', '.join(APPLY_PLACEMENTS)}, "
                            f"got {placement!r}")
    cache_dir = resolve_cache(cache_dir, cache)
    path = existing_corpus(corpus)
    t0 = time.perf_counter()
    applied, paths = apply_topics(saved_model_dir(model_dir), path, out, encoder=model,
                                  cache_dir=cache_dir, text_field=text_field, report=report,
                                  quiet=quiet, placement=placement)
    unassigned = int((applied.doc_labels_ < 0).sum())
    typer.echo(f"{len(applied.doc_ids_)} documents placed in {applied.n_topics_} topics "
               f"({unassigned} unassigned: no word the model knows, or none) in "
               f"{time.perf_counter() - t0:.1f}s -> {paths.get('report', paths['markdown'])}")


@command(app, "search")
def search_cmd(
    model_dir: ModelDir,
    query: Annotated[str, typer.Argument(metavar="QUERY", help="A word, phrase or sentence.")],
    k: Annotated[int, typer.Option("-k", help="Topics listed, best first.")] = 5,
    as_json: JsonFlag = False,
    device: Device = "auto",
    quiet: Quiet = False,
    verbose: Verbose = False,
) -> None:
    """The topics of a saved model nearest a query (DocumentTopicModel.find_topics): topic,
    score and label, best first.

    Example: phrasekit topics search runs/model "interest rates" -k 3
    """
    from phrasekit.topics import DocumentTopicModel

    if not query.strip():
        raise BadInputError("empty query given")
    tm = DocumentTopicModel.load(saved_model_dir(model_dir))
    found = [{"topic": t, "score": s, "label": tm.topic_label(t)}
             for t, s in tm.find_topics(query, k=k)]
    if as_json:
        typer.echo(json.dumps(found, ensure_ascii=False, indent=2))
        return
    typer.echo("topic\tscore\tlabel")
    for row in found:
        typer.echo(f"{row['topic']}\t{row['score']:.4f}\t{row['label']}")
