"""``phrasekit`` command line: thin wrappers over the Python API.

Exit codes: 0 success, 2 bad input (unknown model, missing file, malformed data), 1 other errors.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from phrasekit.registry import DEFAULT_MODEL

app = typer.Typer(
    name="phrasekit",
    help="Phrase embeddings, phrase benchmark and phrase-based topic mining (offline, CPU).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
logger = logging.getLogger("phrasekit")

Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="Only warnings and results; no progress bars.")]
Verbose = Annotated[bool, typer.Option("--verbose", "-v", help="Debug logging.")]
ModelOpt = Annotated[str, typer.Option("--model", "-m", help="Model name (see `phrasekit models`) or folder.")]


class BadInputError(Exception):
    """Raised by commands for user errors that should exit with code 2."""


def _setup_logging(quiet: bool, verbose: bool = False) -> None:
    level = logging.WARNING if quiet else (logging.DEBUG if verbose else logging.INFO)
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s",
                        datefmt="%H:%M:%S", force=True)
    for noisy in ("transformers", "sentence_transformers", "urllib3", "filelock", "httpx"):
        logging.getLogger(noisy).setLevel(logging.WARNING if not verbose else logging.INFO)
    try:  # the weights-loading bar of transformers is noise for a CLI user
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    except ImportError:  # pragma: no cover
        pass


def _run(fn: Callable[[], Any]) -> Any:
    """Run a command body, mapping user errors to exit code 2 with a one-line message."""
    from phrasekit.io import CorpusError
    from phrasekit.settings import SharedDataMissingError

    try:
        return fn()
    except (BadInputError, ValueError, TypeError, FileNotFoundError, CorpusError,
            SharedDataMissingError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(code=2) from None
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        raise typer.Exit(code=130) from None


@app.command("models")
def models_cmd(quiet: Quiet = False) -> None:
    """List the model names `phrasekit.load` knows.

    Example: phrasekit models
    """
    _setup_logging(quiet)
    from phrasekit.registry import available_models

    for name, desc in available_models().items():
        typer.echo(f"{name:<14} {desc}")


@app.command("quantize")
def quantize_cmd(
    model_dir: Annotated[Path, typer.Argument(help="A PEARL, Phrase-BERT or UCTopic model folder (float16 backbone deltas).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for the int8 copy.")],
    quiet: Quiet = False,
) -> None:
    """Copy a fine-tuned model folder with its backbone deltas stored as int8 (half the size).

    Example: phrasekit quantize runs/pearl/model --out runs/pearl/model-int8
    """
    _setup_logging(quiet)

    def body() -> None:
        from phrasekit.models.folders import quantize_model_folder

        sizes = quantize_model_folder(model_dir, out)
        typer.echo(f"{model_dir} ({sizes['source_mb']} MB) -> {out} ({sizes['int8_mb']} MB)")

    _run(body)


@app.command("encode")
def encode_cmd(
    input_file: Annotated[Path, typer.Argument(help="Text file, one phrase per line (UTF-8).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Output .npy file (float32, n x d).")],
    model: ModelOpt = DEFAULT_MODEL,
    batch_size: Annotated[int, typer.Option(help="Texts per batch.")] = 128,
    precision: Annotated[str, typer.Option(help="fp32, bf16 or int8 (transformer models).")] = "fp32",
    quiet: Quiet = False,
    verbose: Verbose = False,
) -> None:
    """Embed phrases (one per line) and save an L2-normalised float32 matrix.

    Example: phrasekit encode phrases.txt --out phrases.npy --model minilm
    """
    _setup_logging(quiet, verbose)

    def body() -> None:
        import numpy as np

        from phrasekit.io import atomic_write
        from phrasekit.registry import load

        if not input_file.is_file():
            raise BadInputError(f"input file not found: {input_file}")
        try:
            lines = input_file.read_text(encoding="utf-8").splitlines()
        except UnicodeDecodeError as exc:
            raise BadInputError(f"{input_file}: not valid UTF-8 ({exc})") from exc
        phrases = [ln.strip() for ln in lines if ln.strip()]
        if not phrases:
            raise BadInputError(f"{input_file}: no phrases (empty file)")
        kwargs = {"precision": precision} if precision != "fp32" else {}
        encoder = load(model, **kwargs)
        vecs = encoder.encode(phrases, batch_size=batch_size, show_progress=not quiet)
        with atomic_write(out, "wb") as fh:
            np.save(fh, vecs)
        logger.info("wrote %s: %d x %d", out, *vecs.shape)

    _run(body)


@app.command("eval")
def eval_cmd(
    model: Annotated[list[str], typer.Option("--model", "-m", help="Model name; repeat for several rows.")],
    tasks: Annotated[str | None, typer.Option(help="Comma-separated tasks (default: all).")] = None,
    quick: Annotated[bool, typer.Option(help="Small deterministic subset of every task.")] = False,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write all metrics as JSON.")] = None,
    data_dir: Annotated[Path | None, typer.Option(help="Benchmark data folder (else PHRASEKIT_DATA / shared/data).")] = None,
    threads: Annotated[int | None, typer.Option(help="torch threads for the run (default: torch's own).")] = None,
    timings: Annotated[bool, typer.Option(help="Also print seconds per task.")] = True,
    noise: Annotated[str | None, typer.Option(help="Test-side noise for robustness: `typo` (seeded; bird and autofj only, the default tasks then).")] = None,
    quiet: Quiet = False,
    verbose: Verbose = False,
) -> None:
    """Run the phrase benchmark and print one table (rows: models, columns: tasks, avg7).

    Example: phrasekit eval --model minilm --model minilm@bf16 --json runs/eval.json
    Typo robustness: phrasekit eval --model minilm --tasks bird,autofj --noise typo
    """
    _setup_logging(quiet, verbose)

    def body() -> None:
        from phrasekit.eval.runner import format_table, run_benchmark

        task_list = [t.strip() for t in tasks.split(",") if t.strip()] if tasks else None
        result = run_benchmark(model, tasks=task_list, data_dir=data_dir, quick=quick,
                               json_path=json_out, show_progress=not quiet,
                               num_threads=threads, noise=noise)
        typer.echo(format_table(result, timings=timings))

    _run(body)


@app.command("phrases")
def phrases_cmd(
    corpus: Annotated[str, typer.Argument(help="JSONL(.gz) / text corpus, a folder with documents.jsonl, or `sample`.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Output JSON vocabulary (.json or .json.gz).")],
    min_df: Annotated[int, typer.Option(help="Keep phrases in at least this many documents.")] = 2,
    max_phrases: Annotated[int | None, typer.Option(help="Keep at most this many (most frequent).")] = None,
    text_field: Annotated[str, typer.Option(help="JSONL field holding the text.")] = "text",
    quiet: Quiet = False,
    verbose: Verbose = False,
) -> None:
    """Extract noun chunks and named entities with counts, document frequencies and surface forms.

    Example: phrasekit phrases sample --out phrases.json.gz --min-df 3
    """
    _setup_logging(quiet, verbose)

    def body() -> None:
        from phrasekit.datasets import resolve_corpus
        from phrasekit.io import read_corpus
        from phrasekit.phrases import PhraseExtractor

        if min_df < 1:
            raise BadInputError(f"--min-df must be at least 1, got {min_df}")
        docs = read_corpus(resolve_corpus(corpus), text_field=text_field)
        vocab = PhraseExtractor().extract(docs, show_progress=not quiet)
        vocab = vocab.filter(min_df=min_df, max_phrases=max_phrases)
        vocab.to_json(out)
        logger.info("wrote %s: %d phrases from %d documents", out, len(vocab), len(docs))

    _run(body)


@app.command("topics")
def topics_cmd(
    corpus: Annotated[str, typer.Argument(help="JSONL(.gz) / text corpus, a folder with documents.jsonl, or `sample` (bundled arXiv abstracts).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Output folder for topics.json, topics.md and report.html.")],
    method: Annotated[str, typer.Option(help="`clusters` (phrase-embedding clusters, K by silhouette), `pntm` (Phrase-BERT's neural topic model; UNTM with -m glove-50d) or `ccl` (UCTopic: noun-chunk instances in context, CCL fine-tuning; -m also takes a span model folder from `train uctopic`).")] = "clusters",
    model: Annotated[str | None, typer.Option("--model", "-m", help="Model name (see `phrasekit models`) or folder; default minilm (clusters, pntm) or uctopic-minilm (ccl).")] = None,
    n_topics: Annotated[int | None, typer.Option("-k", "--n-topics", help="Number of topics (clusters: default chosen by silhouette; pntm: default 50).")] = None,
    k_min: Annotated[int, typer.Option(help="Smallest K tried by silhouette (clusters).")] = 5,
    k_max: Annotated[int, typer.Option(help="Largest K tried by silhouette (clusters).")] = 25,
    min_df: Annotated[int | None, typer.Option(help="Keep terms found in at least this many documents (default: clusters 5, pntm 6).")] = None,
    max_phrases: Annotated[int | None, typer.Option(help="At most this many terms (clusters, default 5000) or phrases (pntm, default 75000), most frequent first.")] = None,
    phrase_cache: Annotated[Path | None, typer.Option(help="A .json.gz file to reuse extracted phrases between runs.")] = None,
    cache_dir: Annotated[Path | None, typer.Option(help="pntm: folder caching document and vocabulary embeddings between runs.")] = None,
    sentences: Annotated[int, typer.Option(help="pntm: also read each topic through this many nearest corpus sentences.")] = 0,
    ccl_steps: Annotated[int, typer.Option(help="ccl: CCL fine-tuning steps (0: topics are KMeans clusters of the encoder's space).")] = 150,
    max_instances: Annotated[int, typer.Option(help="ccl: at most this many phrase instances encoded and fine-tuned on.")] = 30_000,
    label_view: Annotated[str, typer.Option(help="ccl: what CCL's KMeans clusters for pseudo-labels: span (the paper), context (mention masked) or both.")] = "span",
    grounding: Annotated[float, typer.Option(help="pntm: also rank a topic's terms by how often its documents contain them (0: nearest terms only, as in the paper; 0.1, the default here, was chosen on the bundled sample corpus — see the README).")] = 0.1,
    text_field: Annotated[str, typer.Option(help="JSONL field holding the text.")] = "text",
    seed: Annotated[int, typer.Option(help="Random seed (clustering, sampling, PNTM initialisation).")] = 0,
    report: Annotated[bool, typer.Option("--report/--no-report", help="Also write report.html (self-contained page: metrics, topic overview, 2-D map of terms).")] = True,
    quiet: Quiet = False,
    verbose: Verbose = False,
) -> None:
    """Mine topics described by words and phrases; writes topics.json, topics.md and report.html.

    Examples: phrasekit topics sample --out runs/demo
              phrasekit topics corpus.jsonl --method pntm -k 50 --sentences 5 --out runs/pntm
              phrasekit topics reviews.jsonl --method ccl --out runs/ccl
    """
    _setup_logging(quiet, verbose)

    def body() -> None:
        from phrasekit.datasets import resolve_corpus
        from phrasekit.topics import format_timings, run_pntm, run_topics, run_uctopic

        if method not in ("clusters", "pntm", "ccl"):
            raise BadInputError(f"--method must be `clusters`, `pntm` or `ccl`, got {method!r}")
        if ccl_steps < 0 or max_instances < 10:
            raise BadInputError("need --ccl-steps >= 0 and --max-instances >= 10")
        from phrasekit.training.uctopic import LABEL_VIEWS

        if label_view not in LABEL_VIEWS:
            raise BadInputError(f"--label-view must be one of {', '.join(LABEL_VIEWS)}, "
                                f"got {label_view!r}")
        if k_min < 2 or k_max < k_min:
            raise BadInputError(f"need 2 <= --k-min <= --k-max, got {k_min}..{k_max}")
        if n_topics is not None and n_topics < 2:
            raise BadInputError(f"-k must be at least 2, got {n_topics}")
        if min_df is not None and min_df < 1:
            raise BadInputError(f"--min-df must be at least 1, got {min_df}")
        if sentences < 0:
            raise BadInputError(f"--sentences must be >= 0, got {sentences}")
        if grounding < 0:
            raise BadInputError(f"--grounding must be >= 0, got {grounding}")
        if out.exists() and not out.is_dir():
            raise BadInputError(f"--out {out} exists and is not a folder")
        encoder = model or ("uctopic-minilm" if method == "ccl" else "minilm")
        path = resolve_corpus(corpus)
        if not path.exists():
            raise BadInputError(f"corpus not found: {corpus}")
        t0 = time.perf_counter()
        if method == "pntm":
            tm, paths = run_pntm(path, out, model=encoder, n_topics=n_topics or 50,
                                 min_df=min_df or 6, max_phrases=max_phrases or 75_000,
                                 quiet=quiet, phrase_cache=phrase_cache, cache_dir=cache_dir,
                                 n_sentences=sentences, text_field=text_field, random_state=seed,
                                 report=report, grounding=grounding)
            k = tm.n_topics
        elif method == "ccl":
            tm, paths = run_uctopic(path, out, model=encoder, n_topics=n_topics,
                                    k_range=(k_min, k_max), ccl_steps=ccl_steps,
                                    max_instances=max_instances, label_view=label_view,
                                    quiet=quiet,
                                    parse_cache=phrase_cache, text_field=text_field,
                                    random_state=seed, report=report)
            k = tm.n_topics_
        else:
            tm, paths = run_topics(path, out, model=encoder, n_topics=n_topics, k_min=k_min,
                                   k_max=k_max, min_df=min_df or 5,
                                   max_phrases=max_phrases or 5000, quiet=quiet,
                                   phrase_cache=phrase_cache, text_field=text_field,
                                   random_state=seed, report=report)
            k = tm.n_topics_
        secs = time.perf_counter() - t0
        shown = paths.get("report", paths["markdown"])
        typer.echo(f"{k} topics in {secs:.1f}s ({format_timings(tm.timings_)}) -> {shown}")

    _run(body)


@app.command("neighbors")
def neighbors_cmd(
    query: Annotated[str, typer.Argument(help="The phrase whose nearest neighbours to list.")],
    vocab: Annotated[Path, typer.Option("--vocab", help="Vocabulary: text file (one entry per line) or a PhraseVocabulary JSON(.gz) from `phrasekit phrases`.")],
    k: Annotated[int, typer.Option("-k", help="Neighbours to list.")] = 10,
    model: ModelOpt = DEFAULT_MODEL,
    max_vocab: Annotated[int | None, typer.Option(help="Use only the first N vocabulary entries (a JSON vocabulary is ranked by document frequency).")] = None,
    quiet: Quiet = False,
    verbose: Verbose = False,
) -> None:
    """Nearest neighbours of a phrase in a vocabulary by cosine (the phrase itself excluded).

    Example: phrasekit neighbors "natural language processing" --vocab phrases.json.gz -k 10 --model minilm
    """
    _setup_logging(quiet, verbose)

    def body() -> None:
        from phrasekit.eval.lexical_diversity import nearest_neighbors, read_vocabulary_file
        from phrasekit.registry import check_model_name, load

        if k < 1:
            raise BadInputError(f"-k must be at least 1, got {k}")
        if not query.strip():
            raise BadInputError("the query is empty")
        if max_vocab is not None and max_vocab < 1:
            raise BadInputError(f"--max-vocab must be at least 1, got {max_vocab}")
        check_model_name(model)
        texts = read_vocabulary_file(vocab, max_entries=max_vocab)
        hits = nearest_neighbors(load(model), query, texts, k=k, show_progress=not quiet)
        typer.echo("rank\tneighbor\tcosine")
        for rank, (text, score) in enumerate(hits, start=1):
            typer.echo(f"{rank}\t{text}\t{score:.4f}")

    _run(body)


@app.command("keyphrases")
def keyphrases_cmd(
    corpus: Annotated[str, typer.Argument(help="JSONL(.gz) / text corpus, a folder with documents.jsonl, or `sample`.")],
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Output JSONL file (one {id, keyphrases: [{phrase, score}]} per document); default: stdout.")] = None,
    top_n: Annotated[int, typer.Option("-n", "--top-n", help="Keyphrases per document.")] = 10,
    model: ModelOpt = "minilm",
    diversity: Annotated[float | None, typer.Option(help="MMR diversity in [0, 1] (0: plain ranking; default: the dev-tuned value).")] = None,
    candidates: Annotated[str | None, typer.Option(help="Candidate spans: noun_chunks, pos (adjective/noun runs) or both (default: the dev-tuned kind).")] = None,
    text_field: Annotated[str, typer.Option(help="JSONL field holding the text.")] = "text",
    split: Annotated[str | None, typer.Option(help="Only documents whose `split` field equals this (e.g. `dev` for Inspec).")] = None,
    gold_field: Annotated[str | None, typer.Option(help="Score against this field's gold keyphrases (e.g. `keyphrases` for Inspec): P/R/F1 at 5 and 10, stemmed exact match.")] = None,
    threads: Annotated[int | None, typer.Option(help="torch threads (default: torch's own).")] = None,
    quiet: Quiet = False,
    verbose: Verbose = False,
) -> None:
    """Keyphrases per document: noun phrases ranked by embedding similarity to the document.

    Example: phrasekit keyphrases sample --out keyphrases.jsonl -n 10
    Inspec dev score: phrasekit keyphrases ../shared/corpora/inspec --split dev --gold-field keyphrases --out dev.jsonl
    """
    _setup_logging(quiet, verbose)

    def body() -> None:
        import json

        from phrasekit.datasets import resolve_corpus
        from phrasekit.eval.keyphrases import (
            DEFAULT_KS,
            format_metrics,
            gold_of,
            score_keyphrases,
        )
        from phrasekit.io import atomic_write, read_corpus
        from phrasekit.phrases.keyphrases import KeyphraseExtractor

        if threads is not None:
            if threads < 1:
                raise BadInputError(f"--threads must be at least 1, got {threads}")
            import torch

            torch.set_num_threads(threads)
        options: dict[str, Any] = {"encoder": model, "top_n": top_n}
        if diversity is not None:
            options["diversity"] = diversity
        if candidates is not None:
            options["candidates"] = candidates
        extractor = KeyphraseExtractor(**options)  # validates before the corpus is read
        docs = read_corpus(resolve_corpus(corpus), text_field=text_field)
        if split is not None:
            present = sorted({str(d.meta.get("split")) for d in docs})
            docs = [d for d in docs if d.meta.get("split") == split]
            if not docs:
                raise BadInputError(f"no document has split {split!r} (splits present: "
                                    f"{', '.join(present)})")
        for d in docs:
            if not d.text.strip():
                raise BadInputError(f"document {d.id!r} has an empty {text_field!r}")
        golds = gold_of(docs, gold_field) if gold_field is not None else None
        if golds is not None:  # score at 5 and 10 even when fewer are written
            extractor = extractor.set_params(top_n=max(top_n, *DEFAULT_KS))
        t0 = time.perf_counter()
        results = extractor.extract(docs, show_progress=not quiet)
        secs = time.perf_counter() - t0
        lines = [json.dumps({"id": d.id, "keyphrases": [{"phrase": p, "score": round(s, 6)}
                                                          for p, s in r[:top_n]]},
                            ensure_ascii=False) for d, r in zip(docs, results, strict=True)]
        if out is None:
            typer.echo("\n".join(lines))
        else:
            with atomic_write(out) as fh:
                fh.write("".join(line + "\n" for line in lines))
            typer.echo(f"{len(docs)} documents in {secs:.1f}s -> {out}")
        if golds is not None:
            metrics = score_keyphrases([[p for p, _ in r] for r in results], golds)
            typer.echo(f"{gold_field}: {format_metrics(metrics)}", err=out is None)

    _run(body)


train_app = typer.Typer(help="Train phrasekit's models (CPU, resumable).", no_args_is_help=True)
app.add_typer(train_app, name="train")


@train_app.command("pearl-data")
def train_pearl_data_cmd(
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for the PEARL training dataset.")],
    shared: Annotated[Path | None, typer.Option(help="The shared folder (data/ + corpora/); else PHRASEKIT_SHARED.")] = None,
    quiet: Quiet = False,
    verbose: Verbose = False,
) -> None:
    """Build PEARL's training data: typed phrases, paraphrases, synonyms, hard negatives.

    Example: phrasekit train pearl-data --out runs/pearl-data --shared ../shared
    """
    _setup_logging(quiet, verbose)

    def body() -> None:
        from phrasekit.training.pearl_data import build_pearl_dataset

        report = build_pearl_dataset(out, shared_dir=shared, show_progress=not quiet)
        typer.echo(f"PEARL dataset -> {out} ({report['phrases']} phrases)")

    _run(body)


CliffGuardOpt = Annotated[float | None, typer.Option(help="PEARL: choose alpha below this fraction (e.g. 0.5) of the smallest alpha at which CoNLL or BC5CDR dev NMI halves (the dev 'cliff'); 0 = off; default: the run's own setting.")]


@train_app.command("pearl-reaverage")
def train_pearl_reaverage_cmd(
    model: Annotated[Path, typer.Option("--model", "-m", help="A PEARL model folder saved by `train pearl` (e.g. OUT/model).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Run folder for the re-averaged model (OUT/model, OUT/report.json).")],
    alphas: Annotated[str | None, typer.Option(help="Comma-separated backbone coefficients (default: the run's own grid).")] = None,
    proj_alphas: Annotated[str | None, typer.Option(help="Comma-separated projection (char path) coefficients, chosen jointly (default: tied to the backbone's).")] = None,
    cliff_guard: CliffGuardOpt = None,
    shared: Annotated[Path | None, typer.Option(help="The shared folder (its data/ has the dev splits); else PHRASEKIT_SHARED.")] = None,
    quiet: Quiet = False,
    verbose: Verbose = False,
) -> None:
    """Choose a trained PEARL model's weight-averaging coefficients again on the dev splits.

    The fine-tuned weights are recovered from the saved (averaged) ones, so no checkpoint is
    needed. Example: phrasekit train pearl-reaverage -m runs/pearl/model -o runs/pearl-re
    --proj-alphas 0,0.25,0.5,1
    """
    _setup_logging(quiet, verbose)

    def body() -> None:
        from phrasekit.training.pearl import reaverage_pearl

        report = reaverage_pearl(model, out, dev_data_dir=Path(shared) / "data" if shared else None,
                                 alphas=_float_list(alphas, "--alphas"),
                                 proj_alphas=_float_list(proj_alphas, "--proj-alphas"),
                                 show_progress=not quiet, cliff_margin=cliff_guard)
        typer.echo(f"PEARL re-averaged: alpha {report['alpha']} (projection "
                   f"{report['alpha_proj']}) -> {report['model_dir']}")

    _run(body)


@train_app.command("soup")
def train_soup_cmd(
    models: Annotated[list[Path], typer.Argument(help="Two or more PEARL or Phrase-BERT model folders (OUT/model) of one recipe.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Run folder for the soup (OUT/model, OUT/report.json).")],
    alphas: Annotated[str | None, typer.Option(help="Comma-separated averaging coefficients with the initial weights (default: the runs' grid).")] = None,
    proj_alphas: Annotated[str | None, typer.Option(help="PEARL only: comma-separated projection coefficients, chosen jointly (default: tied).")] = None,
    cliff_guard: CliffGuardOpt = None,
    shared: Annotated[Path | None, typer.Option(help="The shared folder (its data/ has the dev splits); else PHRASEKIT_SHARED.")] = None,
    quiet: Quiet = False,
    verbose: Verbose = False,
) -> None:
    """Average the fine-tuned weights of several runs (a model soup), then choose the averaging
    coefficient with the initial weights on the dev splits.

    Example: phrasekit train soup runs/pb/model runs/pb-seed1/model -o runs/pb-soup
    (PEARL runs must share --seed and differ in --data-seed.)
    """
    _setup_logging(quiet, verbose)

    def body() -> None:
        from phrasekit.training.soup import soup_models

        report = soup_models(models, out, dev_data_dir=Path(shared) / "data" if shared else None,
                             alphas=_float_list(alphas, "--alphas"),
                             proj_alphas=_float_list(proj_alphas, "--proj-alphas"),
                             show_progress=not quiet, cliff_margin=cliff_guard)
        typer.echo(f"soup of {len(models)} runs: alpha {report['alpha']}, "
                   f"{report['model_mb']} MB -> {report['model_dir']}")

    _run(body)


def _float_list(text: str | None, option: str) -> tuple[float, ...] | None:
    """``"0,0.5,1"`` -> (0.0, 0.5, 1.0); None stays None; anything else is a clear error."""
    if text is None:
        return None
    try:
        values = tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise typer.BadParameter(f"{option} takes comma-separated numbers, got {text!r}") from None
    if not values:
        raise typer.BadParameter(f"{option} is empty")
    return values


@train_app.command("pearl")
def train_pearl_cmd(
    out: Annotated[Path, typer.Option("--out", "-o", help="Run folder: checkpoint, report.json, model/.")],
    data: Annotated[Path | None, typer.Option(help="Dataset from `train pearl-data` (default: OUT/data, built if missing).")] = None,
    max_steps: Annotated[int, typer.Option(help="Training steps (800 = the shipped model).")] = 800,
    max_minutes: Annotated[float | None, typer.Option(help="Stop (and checkpoint) after this many minutes.")] = None,
    batch_size: Annotated[int, typer.Option(help="Anchors per step.")] = 64,
    hard_negatives: Annotated[int, typer.Option(help="Mined hard negatives per anchor.")] = 2,
    memory_size: Annotated[int, typer.Option(
        help="Cross-batch memory: the last N candidate embeddings serve as extra negatives "
             "(0 = off).")] = 0,
    lr: Annotated[float, typer.Option(help="Backbone learning rate (Adam).")] = 3e-5,
    char_encoder: Annotated[bool, typer.Option(help="Use the character CNN.")] = True,
    char_pretrain_steps: Annotated[int, typer.Option(help="LOVE-style pre-training steps of the char CNN (mimic the backbone) before fine-tuning; 0 = off.")] = 0,
    lr_char: Annotated[float | None, typer.Option(help="Char CNN learning rate (default: that of the new modules, 1e-3).")] = None,
    type_loss: Annotated[bool, typer.Option(help="Phrase-type classification loss.")] = True,
    type_weight: Annotated[float, typer.Option(help="Weight of the type loss next to InfoNCE.")] = 1.0,
    preserve_weight: Annotated[float, typer.Option(help="Weight of a term keeping in-batch cosines near the initial model's; 0 = off.")] = 0.0,
    length_weight: Annotated[float, typer.Option(help="Weight of a term charging for length information beyond the initial model's (keeps entity clusters from splitting by length); 0 = off.")] = 0.0,
    supersense_weight: Annotated[float, typer.Option(help="Weight of a second auxiliary head predicting the WordNet noun supersense of a noun phrase's head (noun.substance, noun.state, noun.person, ...) from the output embedding; needs data/wordnet; 0 = off (the recipe before stop 23).")] = 1.0,
    type_head_on: Annotated[str, typer.Option(help="What the type head reads: output (the final embedding, so the type loss shapes the space users search; the shipped model) or features (the [phrase; char] vectors, the recipe before).")] = "output",
    char_aug: Annotated[bool, typer.Option(help="Character-level augmentation.")] = True,
    token_aug: Annotated[bool, typer.Option(help="Token-level augmentation.")] = True,
    phrase_aug: Annotated[bool, typer.Option(help="Phrase-level (paraphrase) augmentation.")] = True,
    alpha: Annotated[float | None, typer.Option(help="Fixed weight-averaging coefficient of the backbone (default: chosen on dev splits).")] = None,
    alpha_proj: Annotated[float | None, typer.Option(help="Fixed averaging coefficient of the projection, i.e. the char path (default: chosen on dev jointly with --alpha; tied to a fixed --alpha).")] = None,
    alphas: Annotated[str | None, typer.Option(help="Comma-separated averaging coefficients tried on dev (default: 0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.85,1).")] = None,
    cliff_guard: Annotated[float, typer.Option(help="Choose alpha below this fraction of the smallest alpha at which CoNLL or BC5CDR dev NMI halves (the dev 'cliff'); 0 = off.")] = 0.5,
    seed: Annotated[int, typer.Option(help="Random seed of the initial weights (char CNN, projection, type heads).")] = 0,
    data_seed: Annotated[int, typer.Option(help="Seed of the batch order, augmentation and dropout only (1 = the shipped model): runs that share --seed start from the same weights and can be averaged (`train soup`).")] = 1,
    threads: Annotated[int | None, typer.Option(help="torch threads.")] = None,
    shared: Annotated[Path | None, typer.Option(help="The shared folder (data/ + corpora/); else PHRASEKIT_SHARED.")] = None,
    quiet: Quiet = False,
    verbose: Verbose = False,
) -> None:
    """Train PEARL (resumes from OUT/checkpoint.safetensors when present); model in OUT/model.

    Example: phrasekit train pearl --out runs/pearl   (the shipped pearl-minilm recipe)
    """
    _setup_logging(quiet, verbose)

    def body() -> None:
        from phrasekit.settings import shared_dir
        from phrasekit.training.pearl import PearlTrainingConfig, train_pearl
        from phrasekit.training.pearl_data import build_pearl_dataset

        root = Path(shared) if shared else shared_dir()
        data_dir = data or out / "data"
        if data is None and not (data_dir / "phrases.jsonl.gz").is_file():
            build_pearl_dataset(data_dir, shared_dir=root, show_progress=not quiet)
        cfg = PearlTrainingConfig(
            data_dir=str(data_dir), out_dir=str(out), max_steps=max_steps,
            max_minutes=max_minutes, batch_size=batch_size, hard_negatives=hard_negatives,
            memory_size=memory_size,
            lr=lr, use_char=char_encoder, use_type=type_loss, char_aug=char_aug,
            char_pretrain_steps=char_pretrain_steps, lr_char=lr_char, type_head_on=type_head_on,
            type_weight=type_weight, preserve_weight=preserve_weight,
            length_weight=length_weight, supersense_weight=supersense_weight,
            wordnet_dir=str(root / "data" / "wordnet") if supersense_weight > 0 else None,
            token_aug=token_aug, phrase_aug=phrase_aug, alpha=alpha, alpha_proj=alpha_proj,
            alphas=_float_list(alphas, "--alphas") or PearlTrainingConfig.alphas,
            cliff_margin=cliff_guard, seed=seed, data_seed=data_seed, num_threads=threads,
            dev_data_dir=str(root / "data"), show_progress=not quiet)
        report = train_pearl(cfg)
        typer.echo(f"PEARL: {report['steps']} steps in {report['train_minutes']} min, "
                   f"alpha {report['alpha']} (projection {report['alpha_proj']}), "
                   f"{report['model_mb']} MB -> {report['model_dir']}")

    _run(body)


@train_app.command("subtst")
def train_subtst_cmd(
    task: Annotated[str, typer.Option(help="Pair task: msrp (paraphrase, softmax head) or stsb (graded, cosine + MSE).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Model folder to write (config.json, model.safetensors, report.json).")],
    topics: Annotated[int, typer.Option(help="Sub-word LDA topics k; 0 trains the SBERT-style baseline without topics.")] = 80,
    pooling: Annotated[str, typer.Option(help="mean or max pooling.")] = "mean",
    train_topics: Annotated[bool, typer.Option("--train-topics/--freeze-topics", help="Fine-tune the topic table or keep the LDA's.")] = False,
    trainable_layers: Annotated[int, typer.Option(help="Top backbone layers fine-tuned (0: backbone frozen, features cached).")] = 0,
    epochs: Annotated[int, typer.Option(help="Epochs; the best on dev is kept.")] = 8,
    batch_size: Annotated[int, typer.Option(help="Pairs per step.")] = 32,
    lr: Annotated[float, typer.Option(help="AdamW learning rate of the transfer layer, topics and head.")] = 1e-3,
    seed: Annotated[int, typer.Option(help="Random seed (training order, initialisation, LDA).")] = 0,
    cache_dir: Annotated[Path | None, typer.Option(help="Cache of frozen backbone features, reused across runs.")] = None,
    data_dir: Annotated[Path | None, typer.Option(help="Benchmark data folder (else PHRASEKIT_DATA / PHRASEKIT_SHARED).")] = None,
    lda_corpus: Annotated[str | None, typer.Option(help="Unlabelled corpus (JSONL / text / folder) added to the LDA's documents.")] = None,
    quiet: Quiet = False,
    verbose: Verbose = False,
) -> None:
    """Train SubTST (sub-word LDA topics + bi-encoder) or its baseline on MSRP / STS-B.

    Example: phrasekit train subtst --task msrp --pooling mean --train-topics --out runs/subtst-msrp
    """
    _setup_logging(quiet, verbose)

    def body() -> None:
        from phrasekit.datasets import resolve_corpus
        from phrasekit.encoders.subtst import SubTSTConfig
        from phrasekit.eval.pairs import load_pair_task, task_kind
        from phrasekit.io import read_corpus, write_json
        from phrasekit.settings import data_dir as default_data_dir
        from phrasekit.training.subtst import SubTSTTrainingConfig, prepare_features, train_subtst

        config = SubTSTConfig(kind=task_kind(task), n_topics=topics, topic_trainable=train_topics,
                              pooling=pooling, trainable_layers=trainable_layers)
        training = SubTSTTrainingConfig(epochs=epochs, batch_size=batch_size, lr=lr, seed=seed)
        data = load_pair_task(task, data_dir or default_data_dir())
        extra = [d.text for d in read_corpus(resolve_corpus(lda_corpus))] if lda_corpus else []
        features, _ = prepare_features(task, data, config, cache_dir, show_progress=not quiet)
        model, report = train_subtst(task, data, config, training, features=features,
                                     show_progress=not quiet, lda_extra_texts=extra)
        model.save_pretrained(out)
        write_json(out / "report.json", report)
        test = ", ".join(f"{k} {v:.2f}" for k, v in report.get("test", {}).items())
        typer.echo(f"{config.variant} on {task}: best epoch {report['best_epoch']}, test {test}, "
                   f"train {report['seconds']['train']:.0f} s -> {out}")

    _run(body)


@train_app.command("phrase-bert-data")
def train_phrase_bert_data_cmd(
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for the Phrase-BERT triplets (paraphrase + context) and report.json.")],
    shared: Annotated[Path | None, typer.Option(help="The shared folder (data/ + corpora/); else PHRASEKIT_SHARED.")] = None,
    max_paraphrase: Annotated[int, typer.Option(help="Paraphrase triplets kept (PPDB train + WordNet; 0: none).")] = 100_000,
    max_context: Annotated[int, typer.Option(help="Phrase-in-context triplets kept, most frequent phrases first (0: none).")] = 30_000,
    max_words: Annotated[int, typer.Option(help="Corpus words sampled for the contexts (spaCy pass).")] = 400_000,
    corpus: Annotated[list[str] | None, typer.Option(help="Context corpus (name under shared/corpora or a path); repeat. Default: bbc_news, 20newsgroups, arxiv_abstracts_cc0.")] = None,
    phrase_vocab: Annotated[list[str] | None, typer.Option(help="CORPUS=FILE: a cached `phrasekit phrases` vocabulary whose multi-word phrases replace the spaCy pass for that corpus; repeat.")] = None,
    context_tokens: Annotated[int, typer.Option(help="WordPiece tokens per context window (mask included).")] = 120,
    drop_binomials: Annotated[bool, typer.Option(help="Leave out WordNet's Latin binomials ('Ursus horribilis'), ~45% of its triplets.")] = False,
    labelled_ppdb: Annotated[bool, typer.Option(help="Also make triplets from the judged pairs of the PPDB train splits (a labelled paraphrase as p+, a labelled non-paraphrase as p-; sources ppdb:labelled, ppdb_filtered:labelled).")] = False,
    seed: Annotated[int, typer.Option(help="Random seed (sampling, negatives, order).")] = 0,
    quiet: Quiet = False,
    verbose: Verbose = False,
) -> None:
    """Build Phrase-BERT's triplets: lexically diverse paraphrases and phrases in masked contexts.

    Example: phrasekit train phrase-bert-data --out runs/phrase-bert-data
    """
    _setup_logging(quiet, verbose)

    def body() -> None:
        from phrasekit.training.phrase_bert_data import build_phrase_bert_dataset

        vocabs: dict[str, str] = {}
        for item in phrase_vocab or []:
            name, sep, path = item.partition("=")
            if not sep or not name.strip() or not path.strip():
                raise BadInputError(f"--phrase-vocab expects CORPUS=FILE, got {item!r}")
            vocabs[name.strip()] = path.strip()
        report = build_phrase_bert_dataset(
            out, shared_dir=shared, max_paraphrase=max_paraphrase, max_context=max_context,
            max_words=max_words, corpora=corpus or None, phrase_vocabs=vocabs,
            context_tokens=context_tokens, drop_binomials=drop_binomials,
            labelled_ppdb=labelled_ppdb, seed=seed,
            show_progress=not quiet)
        removed = report["test_string_filter"]
        typer.echo(f"Phrase-BERT data -> {out}: {report['paraphrase_triplets']} paraphrase and "
                   f"{report['context_triplets']} context triplets (test strings removed: "
                   f"{removed['removed_paraphrase_pairs']} pairs, "
                   f"{removed['removed_context_phrases']} context phrases)")

    _run(body)


def _source_repeats(specs: list[str]) -> dict[str, int]:
    """``["ppdb=10", ...]`` -> ``{"ppdb": 10}``, with a clear error for anything else."""
    from phrasekit.training.phrase_bert_data import LABELLED_SOURCES, PARAPHRASE_SOURCES

    known = PARAPHRASE_SOURCES + LABELLED_SOURCES
    out: dict[str, int] = {}
    for spec in specs:
        name, sep, count = spec.partition("=")
        if not sep or name not in known or not count.isdigit() or int(count) < 1:
            raise typer.BadParameter(f"--repeat-source takes SOURCE=N with SOURCE one of "
                                     f"{', '.join(known)} and N >= 1, got {spec!r}")
        out[name] = int(count)
    return out


@train_app.command("phrase-bert")
def train_phrase_bert_cmd(
    out: Annotated[Path, typer.Option("--out", "-o", help="Run folder: checkpoint, report.json, model/.")],
    data: Annotated[Path | None, typer.Option(help="Triplets from `train phrase-bert-data` (default: OUT/data, built with the defaults if missing).")] = None,
    max_paraphrase: Annotated[int | None, typer.Option(help="Use the first N paraphrase triplets (default: all).")] = None,
    max_context: Annotated[int | None, typer.Option(help="Use the first N context triplets (default: all).")] = None,
    no_paraphrase: Annotated[bool, typer.Option("--no-paraphrase", help="Context triplets only (the paper's Phrase-BERT-context ablation).")] = False,
    repeat_source: Annotated[list[str] | None, typer.Option(help="SOURCE=N: repeat that source's paraphrase triplets N times per epoch (e.g. ppdb=10; repeatable).")] = None,
    no_context: Annotated[bool, typer.Option("--no-context", help="Paraphrase triplets only (the paper's Phrase-BERT-phrase ablation).")] = False,
    max_steps: Annotated[int | None, typer.Option(help="Stop after this many steps (the schedule stays that of the whole epoch).")] = None,
    max_minutes: Annotated[float | None, typer.Option(help="Stop (and checkpoint) after this many minutes.")] = None,
    batch_size: Annotated[int, typer.Option(help="Triplets per step.")] = 16,
    lr: Annotated[float, typer.Option(help="Adam learning rate (10% linear warm-up, then linear decay).")] = 2e-5,
    margin: Annotated[float, typer.Option(help="Triplet-loss margin.")] = 1.0,
    normalize: Annotated[bool, typer.Option(help="Triplet loss on unit vectors (the paper uses raw mean-pooled vectors).")] = False,
    checkpoint_every: Annotated[int, typer.Option(help="Steps between checkpoints.")] = 100,
    alpha: Annotated[float | None, typer.Option(help="Fixed weight-averaging coefficient with the packaged MiniLM (1.0: the paper's plain fine-tuned weights; default: chosen on dev splits).")] = None,
    seed: Annotated[int, typer.Option(help="Random seed.")] = 0,
    threads: Annotated[int | None, typer.Option(help="torch threads.")] = None,
    shared: Annotated[Path | None, typer.Option(help="The shared folder (data/ + corpora/); else PHRASEKIT_SHARED.")] = None,
    quiet: Quiet = False,
    verbose: Verbose = False,
) -> None:
    """Fine-tune MiniLM as Phrase-BERT (triplet loss, 1 epoch; resumes from OUT/checkpoint.safetensors).

    Example: phrasekit train phrase-bert --out runs/phrase-bert-minilm --data runs/phrase-bert-data --max-context 20000 --threads 2
    """
    _setup_logging(quiet, verbose)

    def body() -> None:
        from phrasekit.training.phrase_bert import PhraseBertTrainingConfig, train_phrase_bert
        from phrasekit.training.phrase_bert_data import CONTEXT_FILE, build_phrase_bert_dataset

        if no_paraphrase and no_context:
            raise BadInputError("--no-paraphrase and --no-context together leave nothing to train on")
        data_dir = data or out / "data"
        if data is None and not (data_dir / CONTEXT_FILE).is_file():
            build_phrase_bert_dataset(data_dir, shared_dir=shared, show_progress=not quiet)
        cfg = PhraseBertTrainingConfig(
            data_dir=str(data_dir), out_dir=str(out), batch_size=batch_size, lr=lr,
            margin=margin, normalize=normalize, use_paraphrase=not no_paraphrase,
            use_context=not no_context, max_paraphrase=max_paraphrase, max_context=max_context,
            max_steps=max_steps, max_minutes=max_minutes, checkpoint_every=checkpoint_every,
            alpha=alpha, seed=seed, num_threads=threads, show_progress=not quiet,
            dev_data_dir=str(Path(shared) / "data") if shared else None,
            source_repeat=_source_repeats(repeat_source or []))
        report = train_phrase_bert(cfg)
        per_step = ", ".join(f"{k} {v:.2f}" for k, v in report["seconds_per_step"].items())
        typer.echo(f"Phrase-BERT: {report['steps']}/{report['total_steps']} steps in "
                   f"{report['train_minutes']} min (s/step: {per_step or '-'}), "
                   f"alpha {report['alpha']}, {report['model_mb']} MB -> {report['model_dir']}")

    _run(body)


@app.command("facets")
def facets_cmd(
    texts: Annotated[list[str], typer.Argument(help="One or more phrases or sentences.")],
    k: Annotated[int, typer.Option("-k", help="Facets K: picks the packaged model facets-phrase-kK (or facets-sentence-kK with --sentence) when --model is not given.")] = 3,
    model: Annotated[str | None, typer.Option("--model", "-m", help="A facet model folder (from `train facets`) or registered name.")] = None,
    sentence: Annotated[bool, typer.Option("--sentence", help="Use the sentence-level model (the default is the phrase model).")] = False,
    n: Annotated[int, typer.Option("-n", help="Nearest words listed per facet.")] = 5,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of the table.")] = False,
    quiet: Quiet = False,
    verbose: Verbose = False,
) -> None:
    """Print each facet's nearest words with cosines (the paper's Table 1) for texts.

    Example: phrasekit facets "real property" -k 3
             phrasekit facets "the central bank raised interest rates" --sentence -k 10
    """
    _setup_logging(quiet, verbose)

    def body() -> None:
        import json

        from phrasekit.encoders.facets.encoder import FacetEncoder, format_facet_table
        from phrasekit.registry import available_models, load

        if n < 1:
            raise BadInputError(f"-n must be at least 1, got {n}")
        if any(not t.strip() for t in texts):
            raise BadInputError("empty text given")
        name = model or f"facets-{'sentence' if sentence else 'phrase'}-k{k}"
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

    _run(body)


@train_app.command("facets-data")
def train_facets_data_cmd(
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for the dataset (reused and extended on a rerun).")],
    granularity: Annotated[str, typer.Option(help="`phrase` (noun phrases -> words within 5 on each side) or `sentence` (-> words of the previous and next sentence).")] = "phrase",
    corpus: Annotated[list[str] | None, typer.Option("--corpus", help="Corpus folder name under the shared corpora (repeatable; default: all usable ones).")] = None,
    max_docs: Annotated[int | None, typer.Option(help="At most this many documents per corpus.")] = None,
    seed: Annotated[int, typer.Option(help="Random seed (sub-sampling, validation split).")] = 0,
    quiet: Quiet = False,
    verbose: Verbose = False,
) -> None:
    """Build a multi-facet training set (input words -> co-occurring words) from the shared corpora.

    Example: phrasekit train facets-data --granularity sentence --out runs/facets/data-sentence
    """
    _setup_logging(quiet, verbose)

    def body() -> None:
        from phrasekit.training.facets_data import (
            FacetDataConfig,
            build_facet_dataset,
            corpus_specs,
        )

        extra = {"corpora": corpus_specs(corpus)} if corpus else {}
        cfg = FacetDataConfig(out_dir=str(out), granularity=granularity, max_docs=max_docs,
                              seed=seed, show_progress=not quiet, **extra)
        cfg.validate()
        data = build_facet_dataset(cfg)
        typer.echo(f"{granularity} facet dataset: {len(data.indices('train'))} train / "
                   f"{len(data.indices('val'))} validation examples -> {out}")

    _run(body)


@train_app.command("facets")
def train_facets_cmd(
    data: Annotated[Path, typer.Option("--data", help="A dataset folder from `train facets-data`.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Run folder: checkpoint, report.json and the model/ folder.")],
    k: Annotated[int, typer.Option("-k", help="Number of facets K (the paper uses 1, 3, 10).")] = 10,
    minutes: Annotated[float, typer.Option(help="Wall-clock budget; rerunning resumes from the checkpoint.")] = 60.0,
    max_steps: Annotated[int | None, typer.Option(help="Stop after this many steps.")] = None,
    batch_size: Annotated[int, typer.Option(help="Examples per step.")] = 128,
    lr: Annotated[float, typer.Option(help="AdamW learning rate.")] = 1e-3,
    dropout: Annotated[float, typer.Option(help="Dropout in the transformer layers.")] = 0.0,
    threads: Annotated[int, typer.Option(help="torch threads.")] = 1,
    seed: Annotated[int, typer.Option(help="Random seed.")] = 0,
    quiet: Quiet = False,
    verbose: Verbose = False,
) -> None:
    """Train a multi-facet codebook model with the NNSC loss on CPU (resumable).

    Example: phrasekit train facets --data runs/facets/data-phrase -k 10 --minutes 60 --out runs/facets/phrase-k10
    """
    _setup_logging(quiet, verbose)

    def body() -> None:
        from phrasekit.training.facets import FacetTrainingConfig, train_facets

        if not data.is_dir():
            raise BadInputError(f"--data {data} is not a folder")
        cfg = FacetTrainingConfig(data_dir=str(data), out_dir=str(out), n_facets=k,
                                  max_minutes=minutes, max_steps=max_steps,
                                  batch_size=batch_size, lr=lr, dropout=dropout,
                                  num_threads=threads, seed=seed)
        cfg.validate()
        report = train_facets(cfg)
        last = (report.get("history") or [{}])[-1]
        typer.echo(f"facets K={k}: {report['steps']} steps ({report['epochs']} epochs, "
                   f"{report['train_minutes']} min), validation loss "
                   f"{last.get('val_loss', '?')} -> {report['model_dir']}")

    _run(body)


@train_app.command("uctopic-data")
def train_uctopic_data_cmd(
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for the same-mention sentence pairs (reused on a rerun).")],
    corpus: Annotated[list[str] | None, typer.Option("--corpus", help="Corpus folder name under the shared corpora (repeatable; default: the PEARL training corpora).")] = None,
    shared: Annotated[Path | None, typer.Option(help="The shared folder (data/ + corpora/); else PHRASEKIT_SHARED.")] = None,
    max_words: Annotated[int, typer.Option(help="Words of text sampled from the corpora (spaCy time grows with it).")] = 600_000,
    seed: Annotated[int, typer.Option(help="Random seed (sampling).")] = 0,
    quiet: Quiet = False,
    verbose: Verbose = False,
) -> None:
    """Mine UCTopic's pre-training pairs: two sentences that mention the same noun phrase / entity.

    Example: phrasekit train uctopic-data --out runs/uctopic/data
    """
    _setup_logging(quiet, verbose)

    def body() -> None:
        from phrasekit.training.uctopic_data import build_uctopic_dataset

        report = build_uctopic_dataset(out, corpora=corpus, shared_dir=shared,
                                       max_words=max_words, seed=seed, show_progress=not quiet)
        typer.echo(f"{report['counts']['pairs']} pairs -> {out}")

    _run(body)


@train_app.command("uctopic")
def train_uctopic_cmd(
    data: Annotated[Path, typer.Option("--data", help="A pair folder from `train uctopic-data`.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Run folder: checkpoint, report.json and the model/ span-encoder folder.")],
    batch_size: Annotated[int, typer.Option(help="Pairs per step (in-batch negatives).")] = 32,
    lr: Annotated[float, typer.Option(help="AdamW learning rate.")] = 5e-5,
    minutes: Annotated[float, typer.Option(help="Training-time budget, counted across resumes.")] = 80.0,
    max_steps: Annotated[int | None, typer.Option(help="Stop after this many steps.")] = None,
    max_length: Annotated[int, typer.Option(help="Tokens per sentence (centred on the mention).")] = 64,
    keep_prob: Annotated[float, typer.Option(help="Probability that the positive keeps its mention unmasked.")] = 0.5,
    temperature: Annotated[float, typer.Option(help="InfoNCE temperature.")] = 0.05,
    threads: Annotated[int, typer.Option(help="torch threads.")] = 1,
    seed: Annotated[int, typer.Option(help="Random seed.")] = 0,
    quiet: Quiet = False,
    verbose: Verbose = False,
) -> None:
    """UCTopic contrastive pre-training of the span encoder on CPU (resumable).

    Example: phrasekit train uctopic --data runs/uctopic/data --out runs/uctopic/pretrain --minutes 80
    """
    _setup_logging(quiet, verbose)

    def body() -> None:
        from phrasekit.training.uctopic import UCTopicConfig, train_uctopic

        if not data.is_dir():
            raise BadInputError(f"--data {data} is not a folder")
        cfg = UCTopicConfig(data_dir=str(data), out_dir=str(out), batch_size=batch_size, lr=lr,
                            max_minutes=minutes, max_steps=max_steps, max_length=max_length,
                            keep_prob=keep_prob, temperature=temperature, num_threads=threads,
                            seed=seed, show_progress=not quiet)
        cfg.validate()
        report = train_uctopic(cfg)
        typer.echo(f"UCTopic pre-training: {report.get('steps', '?')} steps -> {out / 'model'}")

    _run(body)


@app.command("pairs")
def pairs_cmd(
    model: Annotated[str, typer.Option("--model", "-m", help="A trained pair model folder (e.g. from `train subtst`).")],
    input: Annotated[Path, typer.Argument(help="Tab-separated file: sentence A, sentence B per line (no header).")],
    output: Annotated[Path | None, typer.Option("--output", "-o", help="TSV to write (A, B, score); default stdout.")] = None,
    quiet: Quiet = False,
) -> None:
    """Score sentence pairs with a SubTST model: P(paraphrase) or the predicted similarity.

    Example: phrasekit pairs -m runs/subtst-mrpc pairs.tsv -o scored.tsv
    """
    _setup_logging(quiet)

    def body() -> None:
        import csv
        import io

        from phrasekit.io import atomic_write
        from phrasekit.models.folders import SUBTST_FORMAT, model_folder_format
        from phrasekit.registry import load

        if model_folder_format(model) != SUBTST_FORMAT:
            raise BadInputError(f"{model} is not a SubTST model folder (train one with "
                                "`phrasekit train subtst`)")
        try:
            with open(input, encoding="utf-8-sig", newline="") as fh:
                rows = [r for r in csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE) if r]
        except UnicodeDecodeError as exc:
            raise BadInputError(f"{input}: not valid UTF-8 ({exc})") from None
        for i, r in enumerate(rows, start=1):
            if len(r) < 2 or not r[0].strip() or not r[1].strip():
                raise BadInputError(f"{input}:{i}: expected two non-empty tab-separated sentences")
        encoder = load(model)
        pairs = [(r[0], r[1]) for r in rows]
        scores = encoder.predict(pairs, proba=True)
        if encoder.config.kind == "classification":
            scores = scores[:, 1]
        buf = io.StringIO()
        writer = csv.writer(buf, delimiter="\t", lineterminator="\n")
        for (a, b), s in zip(pairs, scores, strict=True):
            writer.writerow([a, b, f"{float(s):.4f}"])
        if output is None:
            typer.echo(buf.getvalue(), nl=False)
        else:
            with atomic_write(output) as fh:
                fh.write(buf.getvalue())
            typer.echo(f"{len(pairs)} pairs scored -> {output}")

    _run(body)


@app.command("join")
def join_cmd(
    left: Annotated[Path, typer.Argument(help="Left (reference) CSV with a header row.")],
    right: Annotated[Path, typer.Argument(help="Right CSV whose rows are matched to left rows.")],
    left_on: Annotated[str, typer.Option(help="Column of the left CSV to match on.")],
    right_on: Annotated[str, typer.Option(help="Column of the right CSV to match on.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Output CSV of matches.")],
    model: ModelOpt = DEFAULT_MODEL,
    k: Annotated[int, typer.Option("-k", help="Candidates kept per right row.")] = 1,
    threshold: Annotated[float | None, typer.Option(help="Drop candidates under this cosine.")] = None,
    one_to_one: Annotated[bool, typer.Option(help="Each left and right row in at most one match (greedy by score).")] = False,
    skip_empty: Annotated[bool, typer.Option(help="Skip rows whose join cell is empty instead of failing.")] = False,
    index: Annotated[str, typer.Option(help="Search: exact, ann (faiss HNSW) or auto (ann from 100,000 left and 40,000 right rows).")] = "auto",
    quiet: Quiet = False,
    verbose: Verbose = False,
) -> None:
    """Fuzzy-join two CSV tables by embedding similarity of one column each.

    Example: phrasekit join left.csv right.csv --left-on title --right-on title --out matches.csv
    """
    _setup_logging(quiet, verbose)

    def body() -> None:
        from phrasekit.registry import check_model_name, load
        from phrasekit.similarity.index import INDEX_KINDS
        from phrasekit.similarity.join import fuzzy_join, read_column, write_matches

        check_model_name(model)
        if index not in INDEX_KINDS:
            raise BadInputError(f"--index must be one of {', '.join(INDEX_KINDS)}, got {index!r}")
        left_vals = read_column(left, left_on, skip_empty=skip_empty)
        right_vals = read_column(right, right_on, skip_empty=skip_empty)
        matches = fuzzy_join(left_vals, right_vals, load(model), k=k, threshold=threshold,
                             one_to_one=one_to_one, show_progress=not quiet, index=index)
        write_matches(out, matches)
        typer.echo(f"{len(matches)} matches for {len(right_vals)} right rows -> {out}")

    _run(body)


index_app = typer.Typer(help="Entity retrieval: a persisted top-k index over a dictionary of names.",
                        no_args_is_help=True)
app.add_typer(index_app, name="index")


@index_app.command("build")
def index_build_cmd(
    names_file: Annotated[Path, typer.Argument(help="Names: .txt (one per line) or .csv/.tsv with a header row.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Output folder (replaced if it holds an earlier index).")],
    model: ModelOpt = DEFAULT_MODEL,
    column: Annotated[str | None, typer.Option(help="Name column of a .csv/.tsv (optional for one column).")] = None,
    id_column: Annotated[str | None, typer.Option(help="Id column of a .csv/.tsv (default: row number).")] = None,
    index: Annotated[str, typer.Option(help="Search: exact, ann (faiss HNSW) or auto (ann from 100,000 names).")] = "auto",
    quiet: Quiet = False,
    verbose: Verbose = False,
) -> None:
    """Embed a dictionary of names and save a searchable index folder.

    Example: phrasekit index build entities.csv --column name --id-column id --out runs/entities
    """
    _setup_logging(quiet, verbose)

    def body() -> None:
        from phrasekit.registry import check_model_name
        from phrasekit.similarity.index import INDEX_KINDS
        from phrasekit.similarity.retrieval import EntityIndex, read_names

        check_model_name(model)
        if index not in INDEX_KINDS:
            raise BadInputError(f"--index must be one of {', '.join(INDEX_KINDS)}, got {index!r}")
        names, ids = read_names(names_file, column=column, id_column=id_column)
        ent = EntityIndex.build(names, model, ids=ids, index=index, show_progress=not quiet)
        ent.save(out)
        typer.echo(f"indexed {len(ent)} names ({ent.kind}, {ent.dim}d, {ent.model}) -> {out}")

    _run(body)


@index_app.command("query")
def index_query_cmd(
    directory: Annotated[Path, typer.Argument(help="Folder written by `phrasekit index build`.")],
    texts: Annotated[list[str] | None, typer.Argument(help="Query texts.")] = None,
    k: Annotated[int, typer.Option("-k", help="Results per query.")] = 5,
    queries: Annotated[Path | None, typer.Option(help="Queries file: .txt (one per line) or .csv/.tsv (with --column).")] = None,
    column: Annotated[str | None, typer.Option(help="Query column of a .csv/.tsv queries file.")] = None,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Write results as CSV (query_row, query, rank, name, id, score) instead of printing.")] = None,
    quiet: Quiet = False,
    verbose: Verbose = False,
) -> None:
    """Top-k names for each query text (tab-separated on stdout, or CSV with --out).

    Example: phrasekit index query runs/entities "new york city" "NYC" -k 3
    """
    _setup_logging(quiet, verbose)

    def body() -> None:
        import csv

        from phrasekit.io import atomic_write
        from phrasekit.similarity.retrieval import EntityIndex, read_names

        if k < 1:
            raise BadInputError(f"-k must be at least 1, got {k}")
        items = list(texts or [])
        if queries is not None:
            items += read_names(queries, column=column)[0]
        if not items:
            raise BadInputError("give query texts or --queries FILE")
        ent = EntityIndex.load(directory)
        results = ent.query(items, k=k, show_progress=not quiet)
        rows = [(i, q, rank, name, ident, f"{score:.6f}")
                for i, (q, hits) in enumerate(zip(items, results, strict=True))
                for rank, (name, ident, score) in enumerate(hits, start=1)]
        header = ("query_row", "query", "rank", "name", "id", "score")
        if out is None:
            typer.echo("\t".join(header[1:]))
            for row in rows:
                typer.echo("\t".join(str(x) for x in row[1:]))
            return
        with atomic_write(out, newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow(header)
            writer.writerows(rows)
        typer.echo(f"{len(rows)} results for {len(items)} queries -> {out}")

    _run(body)


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
