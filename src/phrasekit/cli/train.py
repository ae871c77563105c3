"""The `train` commands: PEARL, Phrase-BERT, SubTST, multi-facet and UCTopic models and data.

The hyper-parameter options come from the training configs (``train_options``); the options
written out here are the command line's own (folders, repeatable lists, --quiet). The trainers
(torch, scikit-learn) are imported when their command runs, so that `train --help` and each
`train <method> --help` start without them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from phrasekit.artifacts import check_output_folder, check_own_names
from phrasekit.cli import train_options as opts
from phrasekit.cli.common import BadInputError, Quiet, Verbose, command, existing_corpus
from phrasekit.cli.options import parse_list, with_config
from phrasekit.datasets import resolve_corpus
from phrasekit.encoders.subtst_config import SubTSTConfig
from phrasekit.eval.aliases import alias_file
from phrasekit.eval.pairs import load_pair_task, task_kind
from phrasekit.io import read_corpus
from phrasekit.models.folders import MODEL_KIND
from phrasekit.settings import data_dir as default_data_dir
from phrasekit.settings import shared_dir
from phrasekit.training.facets.config import FacetTrainingConfig
from phrasekit.training.facets.data import OUTPUT_NAMES as FACET_DATA_NAMES
from phrasekit.training.facets.data import FacetDataConfig, build_facet_dataset, corpus_specs
from phrasekit.training.pearl.config import PearlTrainingConfig
from phrasekit.training.pearl.redirects import (
    ALIAS_FILE,
    ALIAS_REPORT,
    build_alias_dataset,
    check_redirects,
)
from phrasekit.training.phrase_bert.config import PhraseBertTrainingConfig
from phrasekit.training.phrase_bert.data import (
    CONTEXT_FILE,
    LABELLED_SOURCES,
    PARAPHRASE_SOURCES,
    build_phrase_bert_dataset,
)
from phrasekit.training.phrase_bert.data import OUTPUT_FILES as PHRASE_BERT_FILES
from phrasekit.training.subtst.config import SubTSTTrainingConfig
from phrasekit.training.uctopic.config import UCTopicConfig
from phrasekit.training.uctopic.data import OUTPUT_NAMES as UCTOPIC_NAMES
from phrasekit.training.uctopic.data import build_uctopic_dataset

app = typer.Typer(help="Train phrasekit's models (CPU, resumable).", no_args_is_help=True)

RunOut = Annotated[Path, typer.Option(
    "--out", "-o", help="Run folder: checkpoint, report.json, model/.")]
Shared = Annotated[Path | None, typer.Option(
    help="The shared folder (data/ + corpora/); else PHRASEKIT_SHARED.")]
DevShared = Annotated[Path | None, typer.Option(
    help="The shared folder (its data/ has the dev splits); else PHRASEKIT_SHARED.")]
CliffGuard = Annotated[float | None, typer.Option(
    help=f"PEARL: choose {opts.CLIFF_GUARD}; default: the run's own setting.")]
Settings = dict[str, Any]


def _dev_data(shared: Path | None) -> Path | None:
    return Path(shared) / "data" if shared else None


@command(app, "pearl-data", out="folder")
def train_pearl_data_cmd(
    out: Annotated[Path, typer.Option(
        "--out", "-o", help="Folder for the PEARL training dataset.")],
    redirects: Annotated[Path | None, typer.Option(
        help="DBpedia redirects TSV (../shared/tools/dbpedia_redirects.py): also write the "
             "filtered, classified and split real aliases (aliases.tsv.gz).")] = None,
    related_corpus: Annotated[Path | None, typer.Option(
        help="A corpus (e.g. ../shared/corpora/bbc_news): also write entity-relatedness dev "
             "and test pairs from its co-occurring named entities (related.tsv.gz).")] = None,
    aliases_only: Annotated[bool, typer.Option(
        help="With --redirects or --related-corpus: write only those files into OUT (the "
             "rest untouched).")] = False,
    shared: Shared = None,
    quiet: Quiet = False,
    verbose: Verbose = False,
) -> None:
    """Build PEARL's training data: typed phrases, paraphrases, synonyms, hard negatives, real
    aliases from DBpedia redirects, and entity-relatedness pairs for dev selection.

    Example: phrasekit train pearl-data --out runs/pearl-data --shared ../shared \\
               --redirects redirects.tsv.gz --related-corpus ../shared/corpora/bbc_news
    """
    from phrasekit.eval.relatedness import RELATED_FILE
    from phrasekit.training.pearl.data import OUTPUT_FILES, build_pearl_dataset
    from phrasekit.training.pearl.related import RELATED_REPORT

    check_own_names(out, {*OUTPUT_FILES, ALIAS_FILE, ALIAS_REPORT, RELATED_FILE,
                          RELATED_REPORT}, "`train pearl-data`")
    if aliases_only and redirects is None and related_corpus is None:
        raise BadInputError("--aliases-only needs --redirects FILE or --related-corpus DIR")
    if redirects is not None:
        check_redirects(redirects)  # before the long build
    if related_corpus is not None:
        related_corpus = existing_corpus(str(related_corpus))
    root = Path(shared) if shared else shared_dir()
    if not aliases_only:
        report = build_pearl_dataset(out, shared_dir=root, show_progress=not quiet)
        typer.echo(f"PEARL dataset -> {out} ({report['phrases']} phrases)")
    if redirects is not None:
        aliases = build_alias_dataset(redirects, out, root / "data")
        splits = ", ".join(f"{s} {n}" for s, n in aliases["canonicals"].items())
        typer.echo(f"aliases -> {out / ALIAS_FILE} ({aliases['pairs']} pairs; canonicals "
                   f"{splits}; counts in {ALIAS_REPORT})")
    if related_corpus is not None:
        from phrasekit.training.pearl.related import build_related_dataset

        related = build_related_dataset(related_corpus, out, root / "data",
                                        show_progress=not quiet)
        counts = ", ".join(f"{k} {n}" for k, n in related["pairs_per_split"].items())
        typer.echo(f"relatedness -> {out / 'related.tsv.gz'} ({counts}; counts in "
                   f"{RELATED_REPORT})")


@command(app, "pearl-reaverage", out="run")
def train_pearl_reaverage_cmd(
    model: Annotated[Path, typer.Option(
        "--model", "-m", help="A PEARL model folder saved by `train pearl` (e.g. OUT/model).")],
    out: Annotated[Path, typer.Option(
        "--out", "-o", help="Run folder for the re-averaged model (OUT/model, "
                            "OUT/report.json).")],
    alphas: Annotated[str | None, typer.Option(
        help="Comma-separated backbone coefficients (default: the run's own grid).")] = None,
    proj_alphas: Annotated[str | None, typer.Option(
        help="Comma-separated projection (char path) coefficients, chosen jointly (default: "
             "tied to the backbone's).")] = None,
    cliff_guard: CliffGuard = None,
    aliases: Annotated[Path | None, typer.Option(
        help="Alias file (`train pearl-data --redirects`): its dev split joins the dev score "
             "(default: the run's own, if any).")] = None,
    shared: DevShared = None,
    quiet: Quiet = False,
    verbose: Verbose = False,
) -> None:
    """Choose a trained PEARL model's weight-averaging coefficients again on the dev splits.

    The fine-tuned weights are recovered from the saved (averaged) ones, so no checkpoint is
    needed.

    Example: phrasekit train pearl-reaverage -m runs/pearl/model -o runs/pearl-re \\
               --proj-alphas 0,0.25,0.5,1
    """
    from phrasekit.training.pearl.averaging import reaverage_pearl

    if aliases is not None and not alias_file(aliases).is_file():
        raise BadInputError(f"--aliases {aliases}: no alias file there (give aliases.tsv.gz "
                            "or the PEARL data folder that holds it)")
    report = reaverage_pearl(model, out, dev_data_dir=_dev_data(shared),
                             alphas=parse_list(alphas, "--alphas"),
                             proj_alphas=parse_list(proj_alphas, "--proj-alphas"),
                             show_progress=not quiet, cliff_margin=cliff_guard,
                             aliases=alias_file(aliases) if aliases else None)
    typer.echo(f"PEARL re-averaged: alpha {report['alpha']} (projection "
               f"{report['alpha_proj']}) -> {report['model_dir']}")


@command(app, "soup", out="run")
def train_soup_cmd(
    models: Annotated[list[Path], typer.Argument(
        help="Two or more PEARL or Phrase-BERT model folders (OUT/model) of one recipe.")],
    out: Annotated[Path, typer.Option(
        "--out", "-o", help="Run folder for the soup (OUT/model, OUT/report.json).")],
    alphas: Annotated[str | None, typer.Option(
        help="Comma-separated averaging coefficients with the initial weights (default: the "
             "runs' grid).")] = None,
    proj_alphas: Annotated[str | None, typer.Option(
        help="PEARL only: comma-separated projection coefficients, chosen jointly (default: "
             "tied).")] = None,
    cliff_guard: CliffGuard = None,
    shared: DevShared = None,
    quiet: Quiet = False,
    verbose: Verbose = False,
) -> None:
    """Average the fine-tuned weights of several runs (a model soup), then choose the averaging
    coefficient with the initial weights on the dev splits.

    Example: phrasekit train soup runs/pb/model runs/pb-seed1/model -o runs/pb-soup
    (PEARL runs must share --seed and differ in --data-seed.)
    """
    from phrasekit.training.soups.soup import soup_models

    report = soup_models(models, out, dev_data_dir=_dev_data(shared),
                         alphas=parse_list(alphas, "--alphas"),
                         proj_alphas=parse_list(proj_alphas, "--proj-alphas"),
                         show_progress=not quiet, cliff_margin=cliff_guard)
    typer.echo(f"soup of {len(models)} runs: alpha {report['alpha']}, "
               f"{report['model_mb']} MB -> {report['model_dir']}")


@command(app, "pearl", out="run")
@with_config(settings=opts.PEARL)
def train_pearl_cmd(
    out: RunOut,
    data: Annotated[Path | None, typer.Option(
        help="Dataset from `train pearl-data` (default: OUT/data, built if missing).")] = None,
    shared: Shared = None,
    quiet: Quiet = False,
    verbose: Verbose = False,
    *,
    settings: Settings,
) -> None:
    """Train PEARL (resumes from OUT/checkpoint.safetensors when present); model in OUT/model.

    Example: phrasekit train pearl --out runs/pearl   (the shipped pearl-minilm recipe)
    """
    from phrasekit.training.pearl.data import build_pearl_dataset
    from phrasekit.training.pearl.task import train_pearl

    root = Path(shared) if shared else shared_dir()
    data_dir = data or out / "data"
    wordnet = root / "data" / "wordnet" if settings.get("supersense_weight") else None
    cfg = PearlTrainingConfig(data_dir=str(data_dir), out_dir=str(out), **settings,
                              wordnet_dir=str(wordnet) if wordnet else None,
                              dev_data_dir=str(root / "data"), show_progress=not quiet)
    cfg.validate(check_data=False)  # the settings, before a dataset is built for them
    if data is None and not (data_dir / "phrases.jsonl.gz").is_file():
        build_pearl_dataset(data_dir, shared_dir=root, show_progress=not quiet)
    report = train_pearl(cfg)
    typer.echo(f"PEARL: {report['steps']} steps in {report['train_minutes']} min, "
               f"alpha {report['alpha']} (projection {report['alpha_proj']}), "
               f"{report['model_mb']} MB -> {report['model_dir']}")


@command(app, "subtst", out="folder")
@with_config(model_settings=opts.SUBTST_MODEL, training=opts.SUBTST_TRAINING)
def train_subtst_cmd(
    task: Annotated[str, typer.Option(
        help="Pair task: msrp (paraphrase, softmax head) or stsb (graded, cosine + MSE).")],
    out: Annotated[Path, typer.Option(
        "--out", "-o", help="Model folder to write (config.json, model.safetensors, "
                            "report.json).")],
    cache_dir: Annotated[Path | None, typer.Option(
        help="Cache of frozen backbone features, reused across runs.")] = None,
    data_dir: Annotated[Path | None, typer.Option(
        help="Benchmark data folder (else PHRASEKIT_DATA / PHRASEKIT_SHARED).")] = None,
    lda_corpus: Annotated[str | None, typer.Option(
        help="Unlabelled corpus (JSONL / text / folder) added to the LDA's documents.")] = None,
    quiet: Quiet = False,
    verbose: Verbose = False,
    *,
    model_settings: Settings,
    training: Settings,
) -> None:
    """Train SubTST (sub-word LDA topics + bi-encoder) or its baseline on MSRP / STS-B.

    Example: phrasekit train subtst --task msrp --pooling mean --train-topics --out runs/subtst-msrp
    """
    from phrasekit.training.subtst.task import prepare_features, train_subtst

    check_output_folder(out, MODEL_KIND)  # a folder of the user's: refused before training
    config = SubTSTConfig(kind=task_kind(task), **model_settings)
    if lda_corpus is not None and not config.n_topics:
        raise BadInputError("--lda-corpus adds documents to the topics' LDA, and --topics 0 "
                            "trains none")
    optimisation = SubTSTTrainingConfig(**training)
    data = load_pair_task(task, data_dir or default_data_dir())
    extra = [d.text for d in read_corpus(resolve_corpus(lda_corpus))] if lda_corpus else []
    features, _ = prepare_features(task, data, config, cache_dir, show_progress=not quiet)
    model, report = train_subtst(task, data, config, optimisation, features=features,
                                 show_progress=not quiet, lda_extra_texts=extra)
    model.save_pretrained(out, report=report)
    test = ", ".join(f"{k} {v:.2f}" for k, v in report.get("test", {}).items())
    typer.echo(f"{config.variant} on {task}: best epoch {report['best_epoch']}, test {test}, "
               f"train {report['seconds']['train']:.0f} s -> {out}")


def _phrase_vocabs(items: list[str]) -> dict[str, str]:
    """``["bbc_news=FILE", ...]`` -> ``{"bbc_news": "FILE"}``, with a clear error otherwise."""
    vocabs: dict[str, str] = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep or not name.strip() or not path.strip():
            raise BadInputError(f"--phrase-vocab expects CORPUS=FILE, got {item!r}")
        vocabs[name.strip()] = path.strip()
    return vocabs


@command(app, "phrase-bert-data", out="folder")
@with_config(settings=opts.PHRASE_BERT_DATA)
def train_phrase_bert_data_cmd(
    out: Annotated[Path, typer.Option(
        "--out", "-o", help="Folder for the Phrase-BERT triplets (paraphrase + context) and "
                            "report.json.")],
    shared: Shared = None,
    corpus: Annotated[list[str] | None, typer.Option(
        help="Context corpus (name under shared/corpora or a path); repeat. Default: bbc_news, "
             "20newsgroups, arxiv_abstracts_cc0.")] = None,
    phrase_vocab: Annotated[list[str] | None, typer.Option(
        help="CORPUS=FILE: a cached `phrasekit phrases` vocabulary whose multi-word phrases "
             "replace the spaCy pass for that corpus; repeat.")] = None,
    quiet: Quiet = False,
    verbose: Verbose = False,
    *,
    settings: Settings,
) -> None:
    """Build Phrase-BERT's triplets: lexically diverse paraphrases and phrases in masked contexts.

    Example: phrasekit train phrase-bert-data --out runs/phrase-bert-data
    """
    check_own_names(out, set(PHRASE_BERT_FILES), "`train phrase-bert-data`")
    report = build_phrase_bert_dataset(
        out, shared_dir=shared, corpora=corpus or None,
        phrase_vocabs=_phrase_vocabs(phrase_vocab or []), **settings, show_progress=not quiet)
    removed = report["test_string_filter"]
    typer.echo(f"Phrase-BERT data -> {out}: {report['paraphrase_triplets']} paraphrase and "
               f"{report['context_triplets']} context triplets (test strings removed: "
               f"{removed['removed_paraphrase_pairs']} pairs, "
               f"{removed['removed_context_phrases']} context phrases)")


def _source_repeats(specs: list[str]) -> dict[str, int]:
    """``["ppdb=10", ...]`` -> ``{"ppdb": 10}``, with a clear error for anything else."""
    known = PARAPHRASE_SOURCES + LABELLED_SOURCES
    out: dict[str, int] = {}
    for spec in specs:
        name, sep, count = spec.partition("=")
        if not sep or name not in known or not count.isdigit() or int(count) < 1:
            raise typer.BadParameter(f"--repeat-source takes SOURCE=N with SOURCE one of "
                                     f"{', '.join(known)} and N >= 1, got {spec!r}")
        out[name] = int(count)
    return out


@command(app, "phrase-bert", out="run")
@with_config(settings=opts.PHRASE_BERT)
def train_phrase_bert_cmd(
    out: RunOut,
    data: Annotated[Path | None, typer.Option(
        help="Triplets from `train phrase-bert-data` (default: OUT/data, built with the "
             "defaults if missing).")] = None,
    repeat_source: Annotated[list[str] | None, typer.Option(
        help="SOURCE=N: repeat that source's paraphrase triplets N times per epoch (e.g. "
             "ppdb=10; repeatable).")] = None,
    shared: Shared = None,
    quiet: Quiet = False,
    verbose: Verbose = False,
    *,
    settings: Settings,
) -> None:
    """Fine-tune MiniLM as Phrase-BERT (triplet loss, 1 epoch; resumes from
    OUT/checkpoint.safetensors).

    Example: phrasekit train phrase-bert --out runs/phrase-bert-minilm \\
               --data runs/phrase-bert-data --max-context 20000 --threads 2
    """
    from phrasekit.training.phrase_bert.task import train_phrase_bert

    if not (settings["use_paraphrase"] or settings["use_context"]):
        raise BadInputError("--no-paraphrase and --no-context together leave nothing to "
                            "train on")
    data_dir = data or out / "data"
    cfg = PhraseBertTrainingConfig(
        data_dir=str(data_dir), out_dir=str(out), **settings, show_progress=not quiet,
        dev_data_dir=str(_dev_data(shared)) if shared else None,
        source_repeat=_source_repeats(repeat_source or []))
    cfg.validate(check_data=False)  # the settings, before a dataset is built for them
    if data is None and not (data_dir / CONTEXT_FILE).is_file():
        build_phrase_bert_dataset(data_dir, shared_dir=shared, show_progress=not quiet)
    report = train_phrase_bert(cfg)
    per_step = ", ".join(f"{k} {v:.2f}" for k, v in report["seconds_per_step"].items())
    typer.echo(f"Phrase-BERT: {report['steps']}/{report['total_steps']} steps in "
               f"{report['train_minutes']} min (s/step: {per_step or '-'}), "
               f"alpha {report['alpha']}, {report['model_mb']} MB -> {report['model_dir']}")


@command(app, "facets-data", out="folder")
@with_config(settings=opts.FACETS_DATA)
def train_facets_data_cmd(
    out: Annotated[Path, typer.Option(
        "--out", "-o", help="Folder for the dataset (reused and extended on a rerun).")],
    corpus: Annotated[list[str] | None, typer.Option(
        "--corpus", help="Corpus folder name under the shared corpora (repeatable; default: "
                         "all usable ones).")] = None,
    quiet: Quiet = False,
    verbose: Verbose = False,
    *,
    settings: Settings,
) -> None:
    """Build a multi-facet training set (input words -> co-occurring words) from the shared corpora.

    Example: phrasekit train facets-data --granularity sentence --out runs/facets/data-sentence
    """
    check_own_names(out, set(FACET_DATA_NAMES), "`train facets-data`")
    extra = {"corpora": corpus_specs(corpus)} if corpus else {}
    cfg = FacetDataConfig(out_dir=str(out), **settings, show_progress=not quiet, **extra)
    cfg.validate()
    data = build_facet_dataset(cfg)
    typer.echo(f"{cfg.granularity} facet dataset: {len(data.indices('train'))} train / "
               f"{len(data.indices('val'))} validation examples -> {out}")


@command(app, "facets", out="run")
@with_config(settings=opts.FACETS)
def train_facets_cmd(
    data: Annotated[Path, typer.Option(
        "--data", help="A dataset folder from `train facets-data`.")],
    out: Annotated[Path, typer.Option(
        "--out", "-o", help="Run folder: checkpoint, report.json and the model/ folder.")],
    quiet: Quiet = False,
    verbose: Verbose = False,
    *,
    settings: Settings,
) -> None:
    """Train a multi-facet codebook model with the NNSC loss on CPU (resumable).

    Example: phrasekit train facets --data runs/facets/data-phrase -k 10 --minutes 60 \\
               --out runs/facets/phrase-k10
    """
    from phrasekit.training.facets.task import train_facets

    if not data.is_dir():
        raise BadInputError(f"--data {data} is not a folder")
    cfg = FacetTrainingConfig(data_dir=str(data), out_dir=str(out), **settings,
                              show_progress=not quiet)
    cfg.validate()
    report = train_facets(cfg)
    last = (report.get("history") or [{}])[-1]
    typer.echo(f"facets K={cfg.n_facets}: {report['steps']} steps ({report['epochs']} epochs, "
               f"{report['train_minutes']} min), validation loss "
               f"{last.get('val_loss', '?')} -> {report['model_dir']}")


@command(app, "uctopic-data", out="folder")
@with_config(settings=opts.UCTOPIC_DATA)
def train_uctopic_data_cmd(
    out: Annotated[Path, typer.Option(
        "--out", "-o", help="Folder for the same-mention sentence pairs (reused on a rerun).")],
    corpus: Annotated[list[str] | None, typer.Option(
        "--corpus", help="Corpus folder name under the shared corpora (repeatable; default: "
                         "the PEARL training corpora).")] = None,
    shared: Shared = None,
    quiet: Quiet = False,
    verbose: Verbose = False,
    *,
    settings: Settings,
) -> None:
    """Mine UCTopic's pre-training pairs: two sentences that mention the same noun phrase / entity.

    Example: phrasekit train uctopic-data --out runs/uctopic/data
    """
    check_own_names(out, set(UCTOPIC_NAMES), "`train uctopic-data`")
    report = build_uctopic_dataset(out, corpora=corpus, shared_dir=shared, **settings,
                                   show_progress=not quiet)
    typer.echo(f"{report['counts']['pairs']} pairs -> {out}")


@command(app, "uctopic", out="run")
@with_config(settings=opts.UCTOPIC)
def train_uctopic_cmd(
    data: Annotated[Path, typer.Option("--data", help="A pair folder from `train uctopic-data`.")],
    out: Annotated[Path, typer.Option(
        "--out", "-o", help="Run folder: checkpoint, report.json and the model/ span-encoder "
                            "folder.")],
    quiet: Quiet = False,
    verbose: Verbose = False,
    *,
    settings: Settings,
) -> None:
    """UCTopic contrastive pre-training of the span encoder on CPU (resumable).

    Example: phrasekit train uctopic --data runs/uctopic/data --out runs/uctopic/pretrain \\
               --minutes 80
    """
    from phrasekit.training.uctopic.task import train_uctopic

    if not data.is_dir():
        raise BadInputError(f"--data {data} is not a folder")
    cfg = UCTopicConfig(data_dir=str(data), out_dir=str(out), **settings,
                        show_progress=not quiet)
    cfg.validate()
    report = train_uctopic(cfg)
    typer.echo(f"UCTopic pre-training: {report.get('steps', '?')} steps -> {out / 'model'}")
