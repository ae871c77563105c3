"""One call per ``phrasekit topics --method``: read a corpus, fit, write the outputs."""

from __future__ import annotations

import logging
import random
import re
import time
from pathlib import Path
from typing import Any

from phrasekit.encoders.base import Encoder
from phrasekit.io import Document, StreamedCorpus, read_corpus
from phrasekit.phrases.cache import check_phrase_cache, load_or_extract_vocabulary
from phrasekit.phrases.extract import PhraseExtractor
from phrasekit.registry import as_encoder
from phrasekit.topics.exploration.slices import read_slice_fields
from phrasekit.topics.methods.documents import DocumentTopicModel, TooFewDocumentsError
from phrasekit.topics.methods.model import PhraseTopicModel
from phrasekit.topics.methods.pntm import PNTM
from phrasekit.topics.methods.uctopic import UCTopicModel
from phrasekit.topics.outputs.output import (
    check_topics_out,
    write_pntm_outputs,
    write_topic_outputs,
    write_uctopic_outputs,
)

logger = logging.getLogger(__name__)


#: ``phrasekit topics --method`` names of the two models ``run_topics`` fits.
TOPIC_MODELS = {"documents": DocumentTopicModel, "clusters": PhraseTopicModel}


def run_topics(
    corpus: str | Path,
    out_dir: str | Path,
    model: str | Encoder = "minilm",
    method: str = "documents",
    n_topics: int | None = None,
    k_min: int | None = None,
    k_max: int | None = None,
    min_df: int | None = None,
    max_phrases: int | None = None,
    quiet: bool = False,
    phrase_cache: str | Path | None = None,
    cache_dir: str | Path | None = None,
    text_field: str = "text",
    id_field: str = "id",
    report: bool = True,
    workers: int = 1,
    extractor: PhraseExtractor | None = None,
    time_field: str | None = None,
    class_field: str | None = None,
    time_bins: str | int = "month",
    csv_safe: bool = True,
    **model_kwargs: Any,
) -> tuple[DocumentTopicModel | PhraseTopicModel, dict[str, Path]]:
    """Read ``corpus``, fit a ``DocumentTopicModel`` (``method="documents"``) or a
    ``PhraseTopicModel`` (``"clusters"``) and write ``topics.json`` / ``topics.md`` (and
    ``report.html`` with ``report``) into ``out_dir``. Parameters are checked before any long
    work starts; None keeps the model's default.

    ``phrase_cache``: a ``.json(.gz)`` file reusing extracted phrases between runs;
    ``cache_dir`` (documents): a folder caching document vectors between runs.
    ``workers``: spaCy processes for phrase extraction. ``extractor``: the phrase extractor
    (None: the method's own, with ``workers`` processes).
    ``time_field`` / ``class_field`` (documents): fields slicing the topics (``slices``), written
    to topics_over_time.csv / topics_per_class.csv (``csv_safe``: formula-like cells as text).
    Extra keyword arguments go to the model. Returns the model and the paths written.
    """
    if method not in TOPIC_MODELS:
        raise ValueError(f"method must be one of {sorted(TOPIC_MODELS)}, got {method!r}")
    cls = TOPIC_MODELS[method]
    given = {"n_topics": n_topics, "min_df": min_df, "max_phrases": max_phrases}
    kwargs = {k: v for k, v in given.items() if v is not None}
    if k_min is not None or k_max is not None:
        lo, hi = cls().k_range
        kwargs["k_range"] = (lo if k_min is None else k_min, hi if k_max is None else k_max)
    if method == "documents":
        kwargs["cache_dir"] = None if cache_dir is None else str(cache_dir)
        kwargs["n_jobs"] = workers
    elif workers > 1 and extractor is None:
        extractor = PhraseExtractor(n_process=workers)
    if extractor is not None:
        kwargs["extractor"] = extractor
    estimator = cls(encoder=model, **kwargs, **model_kwargs)
    estimator.check_params()
    estimator.set_params(encoder=as_encoder(model))  # an unknown name fails before long work
    check_topics_out(out_dir, caches=(phrase_cache, cache_dir))
    check_phrase_cache(phrase_cache)
    docs: list[Document] | StreamedCorpus
    if method == "documents" and phrase_cache is None:
        docs = StreamedCorpus(Path(corpus), text_field, id_field)  # read once per pass
    else:
        docs = read_corpus(corpus, text_field=text_field, id_field=id_field)
        logger.info("read %d documents from %s", len(docs), corpus)
    _check_read_options(method, time_field or class_field, k_max, docs, corpus)
    fields = read_slice_fields(docs, corpus, time_field, class_field, time_bins)
    vocabulary = None
    t0 = time.perf_counter()
    if phrase_cache is not None:
        extractor = estimator.phrase_extractor() if method == "documents" \
            else estimator.extractor
        vocabulary = load_or_extract_vocabulary(docs, phrase_cache, extractor, not quiet)
    extraction_s = time.perf_counter() - t0
    _fit(estimator, docs, corpus, vocabulary, quiet)
    if vocabulary is not None:
        estimator.timings_["extraction"] = extraction_s
    name = "document topics" if method == "documents" else "phrase clusters"
    paths = write_topic_outputs(estimator, docs, out_dir, report=report, csv_safe=csv_safe,
                                title=_title(corpus, name), tables=fields.tables(estimator))
    return estimator, paths


def apply_topics(
    model_dir: str | Path,
    corpus: str | Path,
    out_dir: str | Path,
    encoder: str | Encoder | None = None,
    cache_dir: str | Path | None = None,
    text_field: str = "text",
    id_field: str = "id",
    report: bool = True,
    quiet: bool = False,
    placement: str = "fit",
) -> tuple[DocumentTopicModel, dict[str, Path]]:
    """Place ``corpus`` in the topics of a saved ``DocumentTopicModel`` (no refit; placed as
    the fit placed documents, or every one encoded with ``placement="encoder"``: see
    ``applied_to``) and write the outputs ``run_topics`` writes. ``encoder``: the encoder to
    place with (default the saved one; another is refused). Returns the model applied to the
    corpus and the paths written."""
    check_topics_out(out_dir, caches=(cache_dir,))
    docs = read_corpus(corpus, text_field=text_field, id_field=id_field)  # bad input first
    logger.info("read %d documents from %s", len(docs), corpus)
    fitted = DocumentTopicModel.load(model_dir, encoder=encoder)
    applied = fitted.applied_to(docs, cache_dir=cache_dir, show_progress=not quiet,
                                placement=placement)
    paths = write_topic_outputs(applied, docs, out_dir, report=report,
                                title=_title(corpus, "document topics of a saved model"))
    return applied, paths


def _check_read_options(method: str, sliced: str | None, k_max: int | None, docs: Any,
                        corpus: str | Path) -> None:
    """Settings checked once the corpus is open, before the fit: slices (``sliced``: a time or
    class field) only for the documents method, and a ``k_max`` given above the corpus'
    documents (a range of that many K would be searched one K at a time; the default range is
    cut to the corpus)."""
    if sliced and method != "documents":
        raise ValueError(f"time and class fields slice the documents method, not {method}")
    if k_max is None:
        return
    n = docs.count() if isinstance(docs, StreamedCorpus) else len(docs)
    if k_max > n:
        raise TooFewDocumentsError(f"{corpus}: k_max {k_max} is above the corpus' {n} "
                                   "documents: give a smaller k_max")


def _fit(estimator: Any, docs: Any, corpus: str | Path, vocabulary: Any, quiet: bool) -> None:
    """``estimator.fit``; a corpus too small for its topics is named in the error."""
    try:
        estimator.fit(docs, vocabulary=vocabulary, show_progress=not quiet)
    except TooFewDocumentsError as exc:
        raise TooFewDocumentsError(f"{corpus}: {exc}") from None


def _title(corpus: str | Path, method: str) -> str:
    """A report title: the corpus' name (its folder for ``documents.jsonl``) and the method."""
    path = Path(corpus)
    name = path.parent.name if path.name.startswith("documents.") else path.name
    for suffix in (".gz", ".jsonl", ".json", ".txt"):
        name = name.removesuffix(suffix)
    return f"Topics of {name or 'corpus'} ({method})"


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])")


def corpus_sentences(
    docs: list[Document], min_words: int = 6, max_words: int = 60, max_sentences: int = 20_000,
    seed: int = 0,
) -> list[str]:
    """Sentences of the corpus for reading topics through sentences (a simple punctuation
    split; lines are kept apart), de-duplicated, at most ``max_sentences`` (seeded sample)."""
    found: dict[str, None] = {}
    for d in docs:
        for line in d.text.splitlines():
            for s in _SENTENCE_END.split(line.strip()):
                s = " ".join(s.split())
                if min_words <= len(s.split()) <= max_words:
                    found[s] = None
    sentences = list(found)
    if len(sentences) > max_sentences:
        rng = random.Random(seed)
        sentences = sorted(rng.sample(sentences, max_sentences), key=sentences.index)
    return sentences


def run_pntm(
    corpus: str | Path,
    out_dir: str | Path,
    model: str | Encoder = "minilm",
    n_topics: int = 50,
    min_df: int = 6,
    max_phrases: int = 75_000,
    quiet: bool = False,
    phrase_cache: str | Path | None = None,
    cache_dir: str | Path | None = None,
    n_sentences: int = 0,
    text_field: str = "text",
    id_field: str = "id",
    report: bool = True,
    workers: int = 1,
    extractor: PhraseExtractor | None = None,
    **model_kwargs: Any,
) -> tuple[PNTM, dict[str, Path]]:
    """Read ``corpus``, fit ``PNTM`` and write ``topics.json`` / ``topics.md`` (and
    ``report.html`` with ``report``).

    ``n_sentences`` > 0 also reads every topic through its nearest corpus sentences.
    ``cache_dir`` keeps document and vocabulary embeddings between runs. ``extractor``: the
    phrase extractor (None: spaCy's noun chunks and entities with ``workers`` processes).
    """
    extractor = extractor or PhraseExtractor(n_process=workers)
    estimator = PNTM(encoder=model, n_topics=n_topics, min_df=min_df, max_phrases=max_phrases,
                     cache_dir=cache_dir, extractor=extractor, **model_kwargs)
    estimator.check_params()
    if n_sentences < 0:
        raise ValueError(f"n_sentences must be >= 0, got {n_sentences}")
    estimator.set_params(encoder=as_encoder(model))  # an unknown name fails before long work
    check_topics_out(out_dir, caches=(phrase_cache, cache_dir))
    check_phrase_cache(phrase_cache)
    docs = read_corpus(corpus, text_field=text_field, id_field=id_field)
    logger.info("read %d documents from %s", len(docs), corpus)
    phrases = load_or_extract_vocabulary(docs, phrase_cache, extractor,
                                         show_progress=not quiet) \
        if phrase_cache is not None else None
    estimator.fit(docs, phrases=phrases, show_progress=not quiet)
    sentences = None
    if n_sentences:
        sentences = estimator.describe_with(
            corpus_sentences(docs, seed=estimator.random_state), n=n_sentences,
            show_progress=not quiet)
    paths = write_pntm_outputs(estimator, docs, out_dir, sentences, report=report,
                               title=_title(corpus, "PNTM"))
    return estimator, paths


def run_uctopic(
    corpus: str | Path,
    out_dir: str | Path,
    model: str | Path = "uctopic-minilm",
    quiet: bool = False,
    text_field: str = "text",
    id_field: str = "id",
    report: bool = True,
    **model_kwargs: Any,
) -> tuple[UCTopicModel, dict[str, Path]]:
    """Read ``corpus``, mine topical phrases with ``UCTopicModel`` (CCL) and write
    ``topics.json`` / ``topics.md`` (and ``report.html``). ``model``: a span model folder or a
    backbone; extra keyword arguments go to ``UCTopicModel``."""
    estimator = UCTopicModel(encoder=model, **model_kwargs)
    estimator.check_params()
    estimator.set_params(encoder=estimator._load_encoder())  # a bad model fails before parsing
    check_topics_out(out_dir, caches=(estimator.parse_cache,))
    docs = read_corpus(corpus, text_field=text_field, id_field=id_field)
    logger.info("read %d documents from %s", len(docs), corpus)
    estimator.fit(docs, show_progress=not quiet)
    paths = write_uctopic_outputs(estimator, docs, out_dir, report=report,
                                  title=_title(corpus, "UCTopic"))
    return estimator, paths
