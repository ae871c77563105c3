"""Corpus commands: phrase extraction, topic mining, keyphrases, and the facet view of texts."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated, Any

import click
import typer
from typer.core import TyperCommand

from phrasekit.artifacts import check_output_folder
from phrasekit.cli.common import (
    BadInputError,
    CsvSafe,
    Device,
    JsonFlag,
    Quiet,
    SummaryFlag,
    Threads,
    VectorCache,
    Verbose,
    Workers,
    command,
    existing_corpus,
    file_path,
    finish_run,
    logger,
    resolve_workers,
    vector_cache,
)
from phrasekit.cli.engine import ENGINE_OPTIONS, Run, encoder_for, open_run
from phrasekit.cli.options import parameter_defaults, with_config
from phrasekit.cli.topics_checks import (
    DEFAULT_TIME_BINS,
    check_method_options,
    check_topics_options,
    slice_options,
)
from phrasekit.datasets import resolve_corpus
from phrasekit.io import StreamedCorpus, read_corpus
from phrasekit.phrases import PhraseExtractor
from phrasekit.pipeline import LocalEngine, ShardedExtractor
from phrasekit.pipeline.mentions import MENTIONS_KIND, write_mentions
from phrasekit.registry import (
    CCL_MODEL,
    DEFAULT_MODEL,
    DOCUMENTS_MODEL,
    TOPICS_MODEL,
    available_models,
    check_model_name,
    load,
)
from phrasekit.tables import VECTOR_DTYPES

app = typer.Typer()

_CORPUS = ("JSONL(.gz) / Parquet / text corpus, a folder with documents.jsonl or Parquet "
           "shards, or `sample`")
CorpusArg = Annotated[str, typer.Argument(metavar="CORPUS", help=f"{_CORPUS}.")]
TextField = Annotated[str, typer.Option(help="JSONL field holding the text.")]
FitDocs = Annotated[str | None, typer.Option(
    help="documents: fit on a seeded sample of this many documents (only those are encoded); "
         "the others are placed by a tf-idf student trained on the sample's topics (default "
         "auto: 2000, or more to hold 60,000 words; all: every document encoded).")]
SpanView = Annotated[str, typer.Option(
    help="ccl: what CCL's KMeans clusters for pseudo-labels: span (the phrase's tokens pooled "
         "in its sentence), context (the phrase masked, the mask pooled) or both.")]
MethodOpt = Annotated[str, typer.Option(
    help="`documents` (k-means on document embeddings, K by stability, topics named by their "
         "most distinctive words and phrases), `clusters` (clusters of phrase embeddings, K by "
         "silhouette), `pntm` (Phrase-BERT's neural topic model; UNTM with -m glove-50d) or "
         "`ccl` (UCTopic: noun-chunk instances in context, CCL fine-tuning; -m also takes a "
         "span model folder from `train uctopic`).")]
TopicsModelOpt = Annotated[str | None, typer.Option(
    "--model", "-m", help="Model name (see `phrasekit models`) or folder; default minilm@auto "
                          "(documents: bf16 where the CPU has native bfloat16, else fp32, or "
                          "int8 with VNNI where faster), "
                          "minilm (clusters, pntm) or uctopic-minilm (ccl).")]
CclSteps = Annotated[int, typer.Option(
    help="ccl: CCL fine-tuning steps (0: topics are KMeans clusters of the encoder's space).")]
MaxInstances = Annotated[int, typer.Option(
    help="ccl: at most this many phrase instances encoded and fine-tuned on.")]
TimeField = Annotated[str | None, typer.Option(
    help="documents: record field holding each document's date (ISO 8601); writes "
         "topics_over_time.csv, each topic's share and terms per --time-bins bin.")]
ClassField = Annotated[str | None, typer.Option(
    help="documents: record field holding each document's class; writes "
         "topics_per_class.csv, each topic's share and terms per class.")]
TimeBins = Annotated[str, typer.Option(
    help="Bins of --time-field: year, quarter, month, week, day, or a number of equal-width "
         "bins.")]
SaveModel = Annotated[Path | None, typer.Option(
    help="documents: also save the fitted model to this folder (DocumentTopicModel.load "
         "places new documents with it).")]


#: ``phrasekit topics NAME ...``: the commands on a saved model (``cli.topics_saved``).
SAVED_MODEL_COMMANDS = ("apply", "search")
#: ``topics --help``'s usage lines: fitting, then the commands on a saved model.
TOPICS_USAGE = ("[OPTIONS] CORPUS",
                "apply DIR CORPUS --out OUT   (place a corpus in saved topics)",
                "search DIR QUERY [-k N]      (the saved topics nearest a query)")
#: ... and its examples of them.
SAVED_EXAMPLES = ["phrasekit topics sample --out runs/demo --save-model runs/model",
                  "phrasekit topics apply runs/model new.jsonl --out runs/new",
                  'phrasekit topics search runs/model "interest rates" -k 3']


class TopicsCommand(TyperCommand):
    """``phrasekit topics``: fits topics on CORPUS, or runs ``apply`` / ``search`` on a saved
    model when the first argument names one of them (a corpus file named so: ./apply)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.short_help = (f"{self.help.split(chr(10))[0].rstrip('.')}; `topics apply` and "
                           "`topics search` use a saved model.")

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """A compact help (under 80 lines): the saved-model commands in the usage lines, the
        examples verbatim, one or two lines per option."""
        from phrasekit.cli.compact_help import compact_help

        text = self.help or ""
        examples = [line.strip().removeprefix("Examples:").strip()
                    for line in text[text.find("Examples:"):].splitlines()]
        examples = [e for e in examples if e.startswith("phrasekit ")]
        formatter.write(compact_help(self, ctx, TOPICS_USAGE, examples + SAVED_EXAMPLES))

    def make_context(self, info_name: str | None, args: list[str],
                     parent: click.Context | None = None, **extra: Any) -> click.Context:
        if args and args[0] in SAVED_MODEL_COMMANDS:
            from phrasekit.cli import topics_saved

            group = typer.main.get_command(topics_saved.app)
            sub = group.commands[args[0]]  # type: ignore[attr-defined]
            return sub.make_context(f"{info_name} {args[0]}", args[1:], parent=parent,
                                    **extra)
        return super().make_context(info_name, args, parent=parent, **extra)




def sharded_topic_parts(method: str, model: str, run: Run) -> dict[str, Any]:
    """The encoder and the phrase extractor of topic ``method`` (documents, clusters, pntm),
    sharded over the run's engine."""
    from phrasekit.topics import DocumentTopicModel
    base = DocumentTopicModel().phrase_extractor() if method == "documents" \
        else PhraseExtractor()
    return {"model": encoder_for(run, model), "extractor": extractor_for(run, base)}


def extractor_for(run: Run | None, base: PhraseExtractor) -> PhraseExtractor:
    """``base``, or an extractor with its settings sharded over the run's engine."""
    return base if run is None else ShardedExtractor.like(base, run.engine, run.store)


@command(app, "phrases", out="file")
@with_config(run=ENGINE_OPTIONS)
def phrases_cmd(
    corpus: CorpusArg,
    out: Annotated[Path, typer.Option(
        "--out", "-o", parser=file_path, help="Output JSON vocabulary (.json or .json.gz).")],
    min_df: Annotated[int, typer.Option(
        help="Keep phrases in at least this many documents.")] = 2,
    max_phrases: Annotated[int | None, typer.Option(
        help="Keep at most this many (most frequent).")] = None,
    text_field: TextField = "text",
    workers: Workers = 0,
    quiet: Quiet = False,
    verbose: Verbose = False,
    *,
    run: dict[str, Any],
) -> None:
    """Extract noun chunks and named entities with counts, document frequencies and surface forms.

    Example: phrasekit phrases sample --out phrases.json.gz --min-df 3
    """
    if min_df < 1:
        raise BadInputError(f"--min-df must be at least 1, got {min_df}")
    if max_phrases is not None and max_phrases < 1:
        raise BadInputError(f"--max-phrases must be at least 1, got {max_phrases}")
    if not out.name.lower().endswith((".json", ".json.gz")):
        raise BadInputError(f"{out}: this command writes a JSON vocabulary; name the output "
                            ".json or .json.gz")
    docs = read_corpus(resolve_corpus(corpus), text_field=text_field)
    extractor = PhraseExtractor(n_process=resolve_workers(workers))
    with open_run(run, out, workers=workers or None, quiet=quiet) as sharded:
        vocab = extractor_for(sharded, extractor).extract(docs, show_progress=not quiet)
    vocab = vocab.filter(min_df=min_df, max_phrases=max_phrases)
    if not len(vocab):  # an empty vocabulary is of no use to `neighbors` or a cache
        where = f"{len(docs)} document{'s' if len(docs) != 1 else ''}"
        raise BadInputError(f"{corpus}: no phrase found in {where}" + (
            f" with --min-df {min_df} (a phrase must be in that many); lower it"
            if min_df > 1 else ""))
    vocab.to_json(out)
    logger.info("wrote %s: %d phrases from %d documents", out, len(vocab), len(docs))


@command(app, "mentions", out="folder")
@with_config(run=ENGINE_OPTIONS)
def mentions_cmd(
    corpus: CorpusArg,
    out: Annotated[Path, typer.Option(
        "--out", "-o", help="Output folder: mentions/ holds Parquet files with one row per "
                            "occurrence (doc_id, phrase, surface, start, end, source, vector); "
                            "documents/ the document vectors, with --doc-vectors.")],
    model: Annotated[str, typer.Option(
        "--model", "-m", help="Model for the vectors (see `phrasekit models`; each distinct "
                              "phrase is encoded once per worker), or none for no vector "
                              "column.")] = DEFAULT_MODEL,
    doc_vectors: Annotated[bool, typer.Option(
        "--doc-vectors/--no-doc-vectors", help="Also write each document's vector (its "
        "150-word windows encoded and averaged; a second pass over the corpus).")] = False,
    text_field: TextField = "text",
    workers: Workers = 0,
    threads: Threads = None,
    device: Device = "auto",
    quiet: Quiet = False,
    verbose: Verbose = False,
    dtype: Annotated[str, typer.Option(
        help="Number type of the vectors: float32, or float16 for half the size.")] = "float32",
    *,
    run: dict[str, Any],
) -> None:
    """Write every phrase occurrence (noun chunks and named entities) with its document, its
    character span in the text and its vector: one row each, in Parquet files. The corpus is
    streamed shard by shard, so it may be larger than memory.

    Example: phrasekit mentions sample --out mentions/ --dtype float16
    """
    if model != "none":
        check_model_name(model)
    if dtype not in VECTOR_DTYPES:
        raise BadInputError(f"--dtype must be one of {', '.join(VECTOR_DTYPES)}, got {dtype!r}")
    if doc_vectors and model == "none":
        raise BadInputError("--doc-vectors needs a model: give -m MODEL")
    if dtype != "float32" and model == "none":
        raise BadInputError("--dtype sets the vectors' number type, and -m none writes no "
                            "vectors: give -m MODEL or leave --dtype out")
    check_output_folder(out, MENTIONS_KIND)  # a folder of other files: refused before the work
    docs = StreamedCorpus(resolve_corpus(corpus), text_field=text_field)
    total = docs.count()  # every line checked before the long work
    local = run["engine"] == "local"
    with open_run(run, out, workers=resolve_workers(workers) if local else workers or None,
                  quiet=quiet) as sharded:
        engine = sharded.engine if sharded else LocalEngine(resolve_workers(workers))
        counts = write_mentions(out, docs, model=None if model == "none" else model,
                                doc_vectors=doc_vectors, dtype=dtype, engine=engine,
                                store=sharded.store if sharded else None, total=total,
                                show_progress=not quiet)
    typer.echo(f"{counts['mentions']} mentions of {total} documents -> {out / 'mentions'}"
               + (f"; {counts['documents']} document vectors -> {out / 'documents'}"
                  if doc_vectors else ""))


def mine_topics(method: str, path: Path, out: Path, *, model: str | None, n_topics: int | None,
                k_range: tuple[int | None, int | None], min_df: int | None, max_phrases: int | None,
                phrase_cache: Path | None, cache_dir: Path | None, sentences: int,
                grounding: float, ccl: tuple[int, int, str], common: dict[str, Any],
                run: Run | None = None, fit_docs: str | None = None
                ) -> tuple[int, Any, dict[str, Path]]:
    """Run one method with its defaults filled in: (number of topics, model, written paths).
    ``ccl``: (steps, max instances, label view); ``run``: the engine and shard store for the
    sharded stages (None: in-process); ``fit_docs``: the documents method's sample size."""
    from phrasekit.topics import UCTopicModel, run_pntm, run_topics, run_uctopic
    default = {"ccl": CCL_MODEL, "documents": DOCUMENTS_MODEL}.get(method, TOPICS_MODEL)
    common = {**common, "model": model or default}
    if run is not None:
        common.update(sharded_topic_parts(method, common["model"], run))
    if method == "pntm":
        tm, paths = run_pntm(path, out, n_topics=n_topics or 50, min_df=min_df or 6,
                             max_phrases=max_phrases or 75_000, phrase_cache=phrase_cache,
                             cache_dir=cache_dir, n_sentences=sentences, grounding=grounding,
                             **common)
        return tm.n_topics, tm, paths
    if method == "ccl":
        common.pop("workers", None)  # UCTopic parses sentences in-process
        lo, hi = UCTopicModel().k_range
        k_range = (lo if k_range[0] is None else k_range[0],
                   hi if k_range[1] is None else k_range[1])
        tm, paths = run_uctopic(path, out, n_topics=n_topics, k_range=k_range,
                                parse_cache=phrase_cache, ccl_steps=ccl[0],
                                max_instances=ccl[1], label_view=ccl[2], **common)
        return tm.n_topics_, tm, paths
    tm, paths = run_topics(path, out, method=method, n_topics=n_topics, k_min=k_range[0],
                           k_max=k_range[1], min_df=min_df, max_phrases=max_phrases,
                           phrase_cache=phrase_cache, cache_dir=cache_dir,
                           **({} if fit_docs is None else {"fit_docs": (
                               int(fit_docs) if fit_docs.isdigit() else fit_docs)}), **common)
    return tm.n_topics_, tm, paths


TopicsSeed = Annotated[int, typer.Option(
    help="Random seed (clustering, sampling, PNTM initialisation).")]


@command(app, "topics", out="folder", cls=TopicsCommand)
@with_config(run=ENGINE_OPTIONS)
def topics_cmd(
    corpus: Annotated[str, typer.Argument(metavar="CORPUS",
                                          help=f"{_CORPUS} (bundled arXiv abstracts).")],
    out: Annotated[Path, typer.Option(
        "--out", "-o", help="Output folder for topics.json, topics.md and report.html.")],
    method: MethodOpt = "documents",
    model: TopicsModelOpt = None,
    n_topics: Annotated[int | None, typer.Option(
        "-k", "--n-topics", help="Number of topics (documents, clusters: chosen from "
                                 "--k-min..--k-max by default; pntm: default 50).")] = None,
    k_min: Annotated[int | None, typer.Option(
        help="Smallest K tried (default: documents 4, clusters and ccl 5).")] = None,
    k_max: Annotated[int | None, typer.Option(
        help="Largest K tried (default: documents 30, clusters and ccl 25).")] = None,
    min_df: Annotated[int | None, typer.Option(
        help="Keep terms found in at least this many documents (default: documents and "
             "clusters 5, pntm 6).")] = None,
    max_phrases: Annotated[int | None, typer.Option(
        help="At most this many phrases (documents, default 20000; pntm, default 75000) or "
             "terms (clusters, default 5000), most frequent first.")] = None,
    phrase_cache: Annotated[Path | None, typer.Option(
        help="A .json.gz file to reuse extracted phrases between runs.")] = None,
    cache_dir: Annotated[Path | None, typer.Option(
        help="documents, pntm: folder caching document (and pntm's vocabulary) embeddings "
             "between runs (default: phrasekit's cache folder).")] = None,
    cache: VectorCache = True,
    sentences: Annotated[int, typer.Option(
        help="pntm: also read each topic through this many nearest corpus sentences.")] = 0,
    ccl_steps: CclSteps = 150,
    max_instances: MaxInstances = 30_000,
    label_view: SpanView = "span",
    grounding: Annotated[float, typer.Option(
        help="pntm: also rank a topic's terms by how often its documents contain them (0: "
             "by nearness to the topic vector alone).")] = 0.1,
    fit_docs: FitDocs = None,
    time_field: TimeField = None,
    class_field: ClassField = None,
    time_bins: TimeBins = DEFAULT_TIME_BINS,
    csv_safe: CsvSafe = True,
    save_model: SaveModel = None,
    text_field: TextField = "text",
    workers: Workers = 0,
    threads: Threads = None,
    seed: TopicsSeed = 0,
    report: Annotated[bool, typer.Option(
        "--report/--no-report", help="Also write report.html (self-contained page: metrics, "
                                     "topic overview, 2-D map of terms).")] = True,
    device: Device = "auto",
    as_json: SummaryFlag = False,
    quiet: Quiet = False,
    verbose: Verbose = False,
    *,
    run: dict[str, Any],
) -> None:
    """Mine topics described by words and phrases; writes topics.json, topics.md and report.html.

    Examples: phrasekit topics sample --out runs/demo
              phrasekit topics corpus.jsonl --method pntm -k 50 --sentences 5 --out runs/pntm
              phrasekit topics reviews.jsonl --method ccl --out runs/ccl
    """
    given_cache, cache_dir = cache_dir, vector_cache(cache_dir, cache)
    check_topics_options(
        method=method, label_view=label_view, n_topics=n_topics, k_min=k_min, k_max=k_max,
        min_df=min_df, max_phrases=max_phrases, sentences=sentences, grounding=grounding,
        fit_docs=fit_docs, ccl_steps=ccl_steps, max_instances=max_instances, out=out, run=run,
        caches=(phrase_cache, cache_dir), defaults=parameter_defaults(topics_cmd), save=(
            save_model, corpus))
    check_method_options(method, None, {"cache_dir": given_cache}, {"cache_dir": None})
    common = {"quiet": quiet, "text_field": text_field, "random_state": seed, "report": report,
              "workers": resolve_workers(workers), "path": existing_corpus(corpus),
              **slice_options(method, time_field, class_field, time_bins, csv_safe, text_field)}
    t0 = time.perf_counter()
    with open_run(run, out, workers=workers or None, quiet=quiet) as sharded:
        k, tm, paths = mine_topics(
            method, common.pop("path"), out, model=model, n_topics=n_topics, k_range=(k_min, k_max),
            min_df=min_df, max_phrases=max_phrases, phrase_cache=phrase_cache,
            cache_dir=cache_dir, sentences=sentences, grounding=grounding, common=common,
            ccl=(ccl_steps, max_instances, label_view), run=sharded, fit_docs=fit_docs)
    _finish_topics(as_json, time.perf_counter() - t0, k, tm, paths, save_model,
                   {"corpus": corpus, "method": method, "output": out})


def _finish_topics(as_json: bool, secs: float, k: int, tm: Any, paths: dict[str, Path],
                   save_model: Path | None, summary: dict[str, Any]) -> None:
    """The model saved (``--save-model``), then `topics`' last line and, with ``--json``, its
    run summary."""
    from phrasekit.topics import format_timings
    if save_model is not None:
        tm.save(save_model)
    finish_run(as_json, f"{k} topics in {secs:.1f}s ({format_timings(tm.timings_, total=False)}) "
               f"-> {paths.get('report', paths['markdown'])}"
               + (f"; model -> {save_model}" if save_model is not None else ""), {
                   "command": "topics", **summary, "topics": k,
                   "documents": _n_documents(tm), "seconds": round(secs, 3),
                   "timings": {s: round(float(v), 3) for s, v in tm.timings_.items()},
                   "files": {n: str(p) for n, p in paths.items()},
                   "model_folder": None if save_model is None else str(save_model)})


def _n_documents(tm: Any) -> int | None:
    """The documents a fitted topic model read (None where it does not say)."""
    for name in ("doc_ids_", "doc_labels_", "labels_"):
        value = getattr(tm, name, None)
        if value is not None:
            return len(value)
    return None


@command(app, "facets")
def facets_cmd(
    texts: Annotated[list[str], typer.Argument(help="One or more phrases or sentences.")],
    k: Annotated[int | None, typer.Option(
        "-k", help="Facets K: picks the packaged model facets-phrase-kK (or "
                   "facets-sentence-kK with --sentence) when --model is not given "
                   "(default: 3).")] = None,
    model: Annotated[str | None, typer.Option(
        "--model", "-m", help="A facet model folder (from `train facets`) or registered "
                              "name.")] = None,
    sentence: Annotated[bool, typer.Option(
        "--sentence", help="Use the sentence-level model (the default is the phrase "
                           "model).")] = False,
    n: Annotated[int, typer.Option("-n", help="Nearest words listed per facet.")] = 5,
    as_json: JsonFlag = False,
    device: Device = "auto",
    quiet: Quiet = False,
    verbose: Verbose = False,
) -> None:
    """Print each facet's nearest words with cosines for texts: what each facet stands for.

    Example: phrasekit facets "real property" -k 3
             phrasekit facets "the central bank raised interest rates" --sentence -k 10
    """
    from phrasekit.encoders.facets.encoder import NEAREST_VOCAB, FacetEncoder, format_facet_table
    if not 1 <= n <= NEAREST_VOCAB:
        raise BadInputError(f"-n must be in [1, {NEAREST_VOCAB}] (the words searched), got {n}")
    if any(not t.strip() for t in texts):
        raise BadInputError("empty text given")
    if model is not None and (sentence or k is not None):
        raise BadInputError("-k and --sentence pick a packaged facet model; --model names "
                            "one: give either")
    name = model or f"facets-{'sentence' if sentence else 'phrase'}-k{3 if k is None else k}"
    if model is None and name not in available_models():
        raise BadInputError(f"no packaged facet model {name!r}; train one with "
                            f"`phrasekit train facets` and pass --model DIR")
    enc = load(name)
    if not isinstance(enc, FacetEncoder):
        raise BadInputError(f"{name} is not a facet model")
    tables = [enc.describe(t, n=n) for t in texts]
    if as_json:
        typer.echo(json.dumps([{"text": t, "facets": [[{"word": w, "cosine": round(c, 4)}
                                                      for w, c in row] for row in table]}
                               for t, table in zip(texts, tables, strict=True)],
                              ensure_ascii=False, indent=2))
    else:
        typer.echo("\n\n".join(format_facet_table(t, table)
                                for t, table in zip(texts, tables, strict=True)))
