"""Write fitted topic models (``DocumentTopicModel``, ``PhraseTopicModel``, ``PNTM``,
``UCTopicModel``) as ``topics.json`` (machine-readable) and ``topics.md`` (for people), as one
set."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from phrasekit.artifacts import check_output_folder, staged_folder
from phrasekit.encoders.base import Encoder
from phrasekit.io import Document, iter_known_documents, write_json, write_text
from phrasekit.phrases import PhraseExtractor, as_documents
from phrasekit.tables import write_parquet
from phrasekit.text import snippet
from phrasekit.topics.exploration.explore import fitted_keys
from phrasekit.topics.exploration.slices import write_slice_csv
from phrasekit.topics.methods.documents import DocumentTopicModel
from phrasekit.topics.methods.model import PhraseTopicModel
from phrasekit.topics.methods.pntm import PNTM
from phrasekit.topics.methods.uctopic import UCTopicModel
from phrasekit.topics.outputs.markdown import (
    pntm_to_markdown,
    topics_to_markdown,
    uctopic_to_markdown,
)
from phrasekit.topics.outputs.report import write_report

logger = logging.getLogger(__name__)

FORMAT_NAME = "phrasekit.topics"
FORMAT_VERSION = 2

#: How many generic terms (most frequent first) topics.json / topics.md list.
N_GENERIC_LISTED = 30


def _typical_texts(model: DocumentTopicModel | PhraseTopicModel,
                   docs: Iterable[Document | str]) -> dict[int, str]:
    """The texts of the model's typical documents, from one pass over ``docs``, which must be
    the documents the model was fitted on (checked id by id; a corpus is never held whole)."""
    wanted = {d for topic in model.typical_docs_ for d, _ in topic}
    return {i: doc.text for i, doc in iter_known_documents(
        docs, model.doc_ids_, "docs are not the documents the model was fitted on",
        fitted_keys(model)) if i in wanted}


def ranked_terms(model: Any, topic: int) -> dict[str, list[dict[str, Any]]]:
    """A topic's ranked ``top_terms`` / ``top_words`` / ``top_phrases`` as JSON-ready lists
    (any model with ``topics_``, ``topic_words_`` and ``topic_phrases_``)."""
    return {key: [{"term": w, "score": s} for w, s in ranked[topic]] for key, ranked in (
        ("top_terms", model.topics_), ("top_words", model.topic_words_),
        ("top_phrases", model.topic_phrases_))}


def k_curve(model: DocumentTopicModel | PhraseTopicModel) -> tuple[str, dict[int, float]]:
    """How K was chosen (``"fixed"`` or the criterion) and the score of every K tried."""
    if isinstance(model, DocumentTopicModel):
        criterion, scores = model.k_criterion, model.k_scores_
    else:
        criterion, scores = "silhouette", model.silhouette_
    return ("fixed" if model.n_topics is not None else criterion), scores


def k_rule(model: DocumentTopicModel | PhraseTopicModel) -> str:
    """How the chosen K was read off its curve, in words (empty when K was fixed)."""
    chosen_by, _ = k_curve(model)
    tolerance = float(getattr(model, "k_tolerance", 0.0))
    if chosen_by == "stability" and tolerance > 0:
        return f"the largest K at least {1 - tolerance:.0%} as stable as the most stable K"
    return {"stability": "the most stable K", "silhouette": "the best silhouette"}.get(
        chosen_by, "")


def topics_to_dict(
    model: DocumentTopicModel | PhraseTopicModel, docs: Iterable[Document | str],
    snippet_chars: int = 240,
) -> dict[str, Any]:
    """Everything ``topics.json`` holds, as a JSON-ready dict."""
    return {**topics_head(model, docs, snippet_chars), "doc_topics": list(doc_topic_rows(model))}


def topics_head(
    model: DocumentTopicModel | PhraseTopicModel, docs: Iterable[Document | str],
    snippet_chars: int = 240,
) -> dict[str, Any]:
    """``topics.json`` without its last key, ``doc_topics`` (``doc_topic_rows``)."""
    model._check_fitted()
    texts = _typical_texts(model, docs)
    vocab = model.vocabulary_
    misc = getattr(model, "miscellaneous_", np.zeros(model.n_topics_, dtype=bool))
    chosen_by, scores = k_curve(model)
    topics = []
    for t in range(model.n_topics_):
        topics.append(
            {
                "id": t,
                "label": model.topic_label(t),
                "miscellaneous": bool(misc[t]),
                "mixed": model.topic_names_[t].mixed,
                "n_terms": model.topic_sizes_[t],
                "n_docs": model.topic_doc_counts_[t],
                **ranked_terms(model, t),
                "typical_docs": [
                    {
                        "id": model.doc_ids_[d],
                        "share": share,
                        "n_phrases": int(model.doc_n_phrases_[d]),
                        "snippet": snippet(texts[d], snippet_chars),
                    }
                    for d, share in model.typical_docs_[t]
                ],
            }
        )
    return {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "method": "documents" if isinstance(model, DocumentTopicModel) else "clusters",
        "params": json_params(model),
        "encoder": model.encoder_name,
        "n_docs": len(model.doc_ids_),
        "n_fit_docs": getattr(model, "n_fit_docs_", None)
        or len(getattr(model, "sample_index_", model.doc_ids_)),
        "n_terms": len(model.terms_),
        "n_words": vocab.n_words,
        "n_phrases": len(vocab) - vocab.n_words,
        "n_generic": len(model.generic_terms_),
        "n_topics": model.n_topics_,
        "k_chosen_by": chosen_by,
        "k_rule": k_rule(model),
        "k_scores": [{"k": int(k), "score": round(v, 5)} for k, v in sorted(scores.items())],
        "timings_s": {k: round(v, 3) for k, v in model.timings_.items()},
        "generic_terms": model.generic_terms_[:N_GENERIC_LISTED],
        "topics": topics,
    }


def doc_topic_rows(model: DocumentTopicModel | PhraseTopicModel) -> Iterator[dict[str, Any]]:
    """``topics.json``'s ``doc_topics``: one row per document, made as they are read."""
    for d, doc_id in enumerate(model.doc_ids_):
        label = int(model.doc_labels_[d])
        row = model.doc_topics_[d]
        yield {
            "id": doc_id,
            "topic": label if label >= 0 else None,
            "share": round(float(row[label]), 4) if label >= 0 else 0.0,
            "n_phrases": int(model.doc_n_phrases_[d]),
            "distribution": {str(t): round(float(s), 4) for t, s in enumerate(row) if s > 0},
        }


def write_topic_outputs(
    model: DocumentTopicModel | PhraseTopicModel,
    docs: Iterable[Document | str],
    out_dir: str | Path,
    snippet_chars: int = 240,
    report: bool = False,
    title: str | None = None,
    tables: dict[str, list[dict[str, Any]]] | None = None,
    csv_safe: bool = True,
) -> dict[str, Path]:
    """Write ``topics.json`` and ``topics.md`` (and ``report.html`` with ``report``) into
    ``out_dir`` (created if needed), each atomically. ``docs`` must be the documents the model
    was fitted on (for the snippets). ``tables``: slice tables (``SliceFields.tables``) written
    as CSV files of those names in the same set (formula-like cells made text unless
    ``csv_safe`` is False).

    ``doc_topics.parquet`` (:func:`doc_topics_table`) holds the documents' topics as a table.

    Returns ``{"json": path, "markdown": path, "doc_topics": path[, "report": path][, csv name:
    path]}``.
    """
    data = topics_head(model, docs, snippet_chars=snippet_chars)
    return _write_set(out_dir, data, topics_to_markdown(data), model, docs, report, title,
                      rows=("doc_topics", doc_topic_rows(model)), tables=tables,
                      doc_table=doc_topics_table(model), csv_safe=csv_safe)


def doc_topics_table(model: DocumentTopicModel | PhraseTopicModel) -> Any:
    """``doc_topics.parquet``, ``topics.json``'s ``doc_topics`` as a flat table: one row per
    document with ``id``, ``topic`` (null: none), ``share``, ``n_phrases`` and its share of
    each topic as ``topic_0`` ... ``topic_{K-1}``."""
    import pyarrow as pa

    labels = np.asarray(model.doc_labels_, dtype=np.int64)
    shares = np.asarray(model.doc_topics_, dtype=np.float32).reshape(len(labels), -1)
    best = shares[np.arange(len(labels)), np.maximum(labels, 0)] if shares.size else \
        np.zeros(len(labels), np.float32)
    columns = {"id": pa.array(model.doc_ids_, pa.string()),
               "topic": pa.array(labels, mask=labels < 0),
               "share": pa.array(np.where(labels >= 0, best, 0.0).astype(np.float32)),
               "n_phrases": pa.array(np.asarray(model.doc_n_phrases_, dtype=np.int64))}
    columns.update({f"topic_{t}": pa.array(shares[:, t]) for t in range(shares.shape[1])})
    return pa.table(columns)


#: Manifest kind of a topic output set, and the files one holds.
TOPICS_KIND = "topics"
TOPIC_FILES = ("topics.json", "topics.md", "report.html", "doc_topics.parquet")


def check_topics_out(out_dir: str | Path, caches: Iterable[str | Path | None] = ()) -> Path:
    """Validate a topics output folder before long work (absent, empty or an earlier set); no
    cache may live inside it, since the folder is replaced as a whole."""
    out = Path(out_dir).absolute()
    for cache in caches:
        if cache is not None and Path(cache).absolute().is_relative_to(out):
            raise ValueError(f"cache {cache} is inside the output folder {out_dir}, which is "
                             "replaced as a whole; keep caches outside it")
    return check_output_folder(out_dir, TOPICS_KIND)


def _write_set(out_dir: str | Path, data: dict[str, Any], markdown: str, model: Any,
               documents: Iterable[Document | str], report: bool, title: str | None,
               rows: tuple[str, Iterable[Any]] | None = None,
               tables: dict[str, list[dict[str, Any]]] | None = None,
               doc_table: Any = None, csv_safe: bool = True) -> dict[str, Path]:
    """Write ``topics.json`` (``rows``: its last key, streamed), ``topics.md`` (and
    ``report.html``, ``doc_topics.parquet`` from ``doc_table``) as one set: built beside
    ``out_dir`` and swapped in at once, so a crash leaves the old set or the new, never a
    mix."""
    out = Path(out_dir)
    paths = {"json": out / "topics.json", "markdown": out / "topics.md"}
    if report:
        paths["report"] = out / "report.html"
    paths.update({name: out / name for name in tables or {}})
    if doc_table is not None:
        paths["doc_topics"] = out / "doc_topics.parquet"
    with staged_folder(out, TOPICS_KIND) as tmp:
        if doc_table is not None:
            write_parquet(tmp / "doc_topics.parquet", doc_table)
        for name, table in (tables or {}).items():
            write_slice_csv(tmp / name, table, csv_safe)
        write_json(tmp / "topics.json", data, rows=rows)
        write_text(tmp / "topics.md", markdown)
        if report:
            write_report(model, documents, data, tmp / "report.html", title=title, tables=tables)
    logger.info("wrote %s", ", ".join(str(p) for p in paths.values()))
    return paths


# ---------------------------------------------------------------------- PNTM
def pntm_to_dict(
    model: PNTM,
    docs: Iterable[Document | str],
    sentences: list[list[tuple[str, float]]] | None = None,
    n_typical: int = 3,
    snippet_chars: int = 240,
) -> dict[str, Any]:
    """Everything ``topics.json`` holds for a fitted ``PNTM`` (``sentences``: the output of
    ``model.describe_with`` to read topics through sentences as well)."""
    model._check_fitted()
    documents = as_documents(docs)
    if [d.id for d in documents] != model.doc_ids_:
        raise ValueError("docs are not the documents the model was fitted on")
    shares = model.doc_topics_
    topics = []
    for k in range(model.n_topics):
        members = np.flatnonzero(model.labels_ == k)
        best = members[np.argsort(-shares[members, k], kind="stable")][:n_typical]
        topics.append(
            {
                "id": k,
                "label": model.topic_label(k),
                "mixed": model.topic_names_[k].mixed,
                "n_docs": len(members),
                **ranked_terms(model, k),
                "top_sentences": [{"text": t, "score": s} for t, s in (sentences or [[]] *
                                                                       model.n_topics)[k]],
                "typical_docs": [
                    {"id": model.doc_ids_[d], "share": round(float(shares[d, k]), 4),
                     "snippet": snippet(documents[d].text, snippet_chars)}
                    for d in best
                ],
            }
        )
    summary = model.summary()
    return {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "method": "pntm",
        "params": {k: (v.name if isinstance(v, Encoder) else v)
                   for k, v in model.get_params(deep=False).items()
                   if k not in ("extractor", "cache_dir")},
        **summary,
        "timings_s": summary.pop("timings"),
        "topics": topics,
        "doc_topics": [
            {"id": doc_id, "topic": int(model.labels_[d]) if model.labels_[d] >= 0 else None,
             "share": round(float(shares[d].max()), 4)}
            for d, doc_id in enumerate(model.doc_ids_)
        ],
    }


def write_pntm_outputs(
    model: PNTM,
    docs: Iterable[Document | str],
    out_dir: str | Path,
    sentences: list[list[tuple[str, float]]] | None = None,
    report: bool = False,
    title: str | None = None,
) -> dict[str, Path]:
    """Write ``topics.json`` and ``topics.md`` (and ``report.html`` with ``report``) of a
    fitted ``PNTM`` into ``out_dir``."""
    documents = as_documents(docs)
    data = pntm_to_dict(model, documents, sentences)
    return _write_set(out_dir, data, pntm_to_markdown(data), model, documents, report, title)


# ---------------------------------------------------------------------- UCTopic
def uctopic_to_dict(model: UCTopicModel, docs: Iterable[Document | str],
                    snippet_chars: int = 240) -> dict[str, Any]:
    """Everything ``topics.json`` holds for a fitted ``UCTopicModel`` (same layout as PNTM's:
    ranked phrases per topic, typical documents, every document's topic)."""
    model._check_fitted()
    documents = as_documents(docs)
    if [d.id for d in documents] != model.doc_ids_:
        raise ValueError("docs are not the documents the model was fitted on")
    topics = []
    for t in range(model.n_topics_):
        topics.append({
            "id": t,
            "label": model.topic_label(t),
            "mixed": model.topic_names_[t].mixed,
            "n_docs": model.topic_doc_counts_[t],
            "n_terms": model.topic_sizes_[t],
            **ranked_terms(model, t),
            "typical_docs": [
                {"id": model.doc_ids_[d], "share": share,
                 "snippet": snippet(documents[d].text, snippet_chars)}
                for d, share in model.typical_docs_[t]],
        })
    summary = model.summary()
    return {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "method": "ccl",
        "params": {k: (str(v) if isinstance(v, Path) else getattr(v, "name", v))
                   for k, v in model.get_params(deep=False).items()},
        **summary,
        "n_terms": len(model.phrases_),
        "timings_s": summary.pop("timings"),
        "topics": topics,
        "doc_topics": [
            {"id": doc_id, "topic": int(label) if label >= 0 else None,
             "share": round(float(model.doc_topics_[d].max()), 4),
             "n_phrases": int(model.doc_n_phrases_[d])}
            for d, (doc_id, label) in enumerate(zip(model.doc_ids_, model.doc_labels_,
                                                    strict=True))],
    }


def write_uctopic_outputs(model: UCTopicModel, docs: Iterable[Document | str],
                          out_dir: str | Path, report: bool = False, title: str | None = None
                          ) -> dict[str, Path]:
    """Write ``topics.json`` and ``topics.md`` (and ``report.html`` with ``report``) of a
    fitted ``UCTopicModel`` into ``out_dir``."""
    documents = as_documents(docs)
    data = uctopic_to_dict(model, documents)
    return _write_set(out_dir, data, uctopic_to_markdown(data), model, documents, report, title)


def json_params(model: Any) -> dict[str, Any]:
    """``get_params()`` made JSON-ready (encoder and extractor given by name / settings), without
    ``cache_dir``: where vectors are cached is a path of this machine, not a setting of the
    topics, and the same run with another cache must write the same ``topics.json``."""
    out: dict[str, Any] = {}
    for key, value in model.get_params(deep=False).items():
        if key == "cache_dir":
            continue
        if isinstance(value, Encoder):
            value = value.name
        elif isinstance(value, PhraseExtractor):
            value = value.settings()
        elif value is None and key == "extractor":
            default = getattr(model, "phrase_extractor", PhraseExtractor)
            value = default().settings()
        elif isinstance(value, tuple):
            value = list(value)
        elif isinstance(value, np.integer):
            value = int(value)
        out[key] = value
    return out
