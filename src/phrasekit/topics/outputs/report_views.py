"""The report's views of topics as a whole (BERTopic's ``visualize_*``), as data for the page.

``report.html`` draws them with its own script (``data/report/views.js``) from what this module
computes: the intertopic distance map (topic centres placed by ``project_2d``, circles sized by
share), term bars per topic (from ``topics.json``'s ranked terms, drawn by the page alone),
the topic hierarchy as a dendrogram (``DocumentTopicModel.hierarchical_topics``), topic shares
over time and per class (the slice tables ``--time-field`` / ``--class-field`` write) and a
document map with hover snippets (at most ``MAX_DOC_POINTS`` documents, a seeded sample).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from functools import cache
from importlib import resources
from typing import Any

import numpy as np

from phrasekit.encoders.pooling import l2_normalize
from phrasekit.io import Document, iter_known_documents
from phrasekit.text import snippet
from phrasekit.topics.exploration.explore import fitted_keys
from phrasekit.topics.methods.documents import DocumentTopicModel
from phrasekit.topics.methods.pntm import PNTM

logger = logging.getLogger(__name__)

#: At most this many documents are drawn on the document map (a seeded sample beyond).
MAX_DOC_POINTS = 5_000
#: Characters of a document shown when its point is hovered.
DOC_SNIPPET_CHARS = 160
#: The slice tables the report draws, by their file name (``SliceFields.tables``).
SLICE_VIEWS = {"topics_over_time.csv": "over_time", "topics_per_class.csv": "per_class"}


@cache
def view_assets() -> tuple[str, str]:
    """The views' script and style sheet, shipped as package data (``data/report``)."""
    folder = resources.files("phrasekit") / "data" / "report"
    return ((folder / "views.js").read_text(encoding="utf-8"),
            (folder / "views.css").read_text(encoding="utf-8"))


def doc_labels(model: Any) -> np.ndarray:
    """Each fitted document's topic (-1: none), whatever the model calls it."""
    return np.asarray(model.labels_ if isinstance(model, PNTM) else model.doc_labels_)


# ---------------------------------------------------------------- 2-D maps
def project_2d(X: np.ndarray, random_state: int = 0) -> np.ndarray:
    """2-D coordinates in [0, 1] of the rows of ``X``: t-SNE (cosine) after PCA to at most 50
    dimensions; PCA alone for fewer than 10 distinct rows or one dimension. Identical rows
    share a point (t-SNE is given each distinct row once: ten identical documents had
    crashed it)."""
    X = l2_normalize(np.asarray(X, dtype=np.float64), np.float64)
    if len(X) == 0:
        return np.zeros((0, 2))
    X, where = np.unique(X, axis=0, return_inverse=True)
    return _project_distinct(X, random_state)[where.reshape(-1)]


def _project_distinct(X: np.ndarray, random_state: int) -> np.ndarray:
    """``project_2d`` of distinct unit rows."""
    n = len(X)
    if n < 3:
        return np.array([[0.5, 0.5], [0.25, 0.75]])[:n]
    from sklearn.decomposition import PCA

    dims = min(50, X.shape[1], n - 1)
    Z = PCA(n_components=dims, random_state=random_state).fit_transform(X)
    if n >= 10 and dims >= 2:
        from sklearn.manifold import TSNE

        perplexity = float(min(30.0, max(2.0, (n - 1) / 3)))
        Z = TSNE(n_components=2, perplexity=perplexity, init="pca", metric="cosine",
                 max_iter=500, random_state=random_state).fit_transform(Z)
    Z = Z[:, :2]
    if Z.shape[1] < 2:
        Z = np.hstack([Z, np.zeros((n, 2 - Z.shape[1]))])
    lo, hi = Z.min(axis=0), Z.max(axis=0)
    return (Z - lo) / np.where(hi - lo > 0, hi - lo, 1.0)


def topic_vectors(model: Any) -> np.ndarray:
    """One vector per topic: the document model's cluster centres, PNTM's topic vectors, or
    the mean embedding of a phrase model's terms."""
    if isinstance(model, DocumentTopicModel):
        return np.asarray(model.cluster_centers_, dtype=np.float64)
    if isinstance(model, PNTM):
        return np.asarray(model.components_, dtype=np.float64)
    E, labels = np.asarray(model.embeddings_, dtype=np.float64), np.asarray(model.labels_)
    out = np.zeros((model.n_topics_, E.shape[1]))
    for t in range(model.n_topics_):
        if (labels == t).any():
            out[t] = E[labels == t].mean(axis=0)
    return out


def topic_map(model: Any, random_state: int = 0) -> list[dict[str, Any]]:
    """Each topic's place on the intertopic distance map: ``{"topic", "x", "y"}`` in [0, 1],
    ``project_2d`` of the topic vectors (close topics are near)."""
    xy = project_2d(topic_vectors(model), random_state=random_state)
    return [{"topic": t, "x": round(float(x), 4), "y": round(float(y), 4)}
            for t, (x, y) in enumerate(xy)]


# ---------------------------------------------------------------- hierarchy
def topic_tree(model: Any) -> dict[str, Any]:
    """The dendrogram's joins (``{"rows": hierarchical_topics()}``), or ``{"note": why}`` for
    a method without topic centres or a model loaded without its fit's documents."""
    if not isinstance(model, DocumentTopicModel):
        return {"note": "No hierarchy: it joins the document topics' centres "
                        "(DocumentTopicModel.hierarchical_topics); this method has none."}
    if model.n_topics_ < 2:
        return {"note": "No hierarchy: the run has a single topic."}
    try:
        return {"rows": model.hierarchical_topics()}
    except RuntimeError as exc:  # a model loaded from disk keeps no documents to name nodes
        return {"note": f"No hierarchy: {exc}."}


# ---------------------------------------------------------------- document map
def doc_vectors(model: Any) -> tuple[np.ndarray, np.ndarray, str]:
    """The documents the map can place (positions in the corpus), their vectors and what the
    vectors are: the fitted sample's embeddings for the document model, else topic shares."""
    embedded = getattr(model, "doc_embeddings_", None)
    if isinstance(model, DocumentTopicModel) and embedded is not None:
        index = np.asarray(getattr(model, "sample_index_", np.arange(len(embedded))))
        return index, np.asarray(embedded), "the document embeddings the topics were fitted on"
    shares = np.asarray(model.doc_topics_, dtype=np.float64)
    return np.arange(len(shares)), shares, "each document's topic shares"


def pick_documents(index: np.ndarray, X: np.ndarray, max_points: int, random_state: int
                   ) -> tuple[np.ndarray, np.ndarray]:
    """The documents to draw: those with a vector, at most ``max_points`` (seeded sample, in
    corpus order), and their vectors."""
    keep = np.flatnonzero(np.linalg.norm(X, axis=1) > 0)
    if len(keep) > max_points:
        rng = np.random.default_rng(random_state)
        keep = np.sort(rng.choice(keep, size=max_points, replace=False))
    return index[keep], X[keep]


def document_map(model: Any, docs: Iterable[Document | str],
                 max_points: int = MAX_DOC_POINTS, random_state: int = 0) -> dict[str, Any]:
    """The document map as columns (``x``, ``y``, ``topic``, ``id``, ``text``: a snippet) and
    what it shows (``n_docs``; ``n_placeable``, those with vectors; ``n_shown``; ``sampled``;
    ``basis``); ``docs`` is read once, for the snippets."""
    index, X, basis = doc_vectors(model)
    rows, X = pick_documents(index, X, max_points, random_state)
    xy = project_2d(X, random_state=random_state)
    wanted = {int(r): n for n, r in enumerate(rows)}
    texts = [""] * len(rows)
    for i, doc in iter_known_documents(docs, model.doc_ids_,
                                       "docs are not the documents the model was fitted on",
                                       fitted_keys(model)):
        if i in wanted:
            texts[wanted[i]] = snippet(doc.text, DOC_SNIPPET_CHARS)
    labels = doc_labels(model)
    return {"n_docs": len(model.doc_ids_), "n_placeable": len(index), "n_shown": len(rows),
            "sampled": len(rows) == max_points < len(index), "max_points": max_points,
            "basis": basis, "x": [round(float(v), 4) for v in xy[:, 0]],
            "y": [round(float(v), 4) for v in xy[:, 1]],
            "topic": [int(labels[r]) for r in rows],
            "id": [model.doc_ids_[r] for r in rows], "text": texts}


# ---------------------------------------------------------------- all views
def report_views(model: Any, docs: Iterable[Document | str],
                 tables: dict[str, list[dict[str, Any]]] | None = None,
                 max_doc_points: int = MAX_DOC_POINTS, random_state: int = 0
                 ) -> dict[str, Any]:
    """Everything the page's views draw beyond ``topics.json``: ``topic_map``, ``hierarchy``,
    ``documents`` and, where the run was sliced, ``over_time`` / ``per_class``."""
    views: dict[str, Any] = {
        "topic_map": topic_map(model, random_state),
        "hierarchy": topic_tree(model),
        "documents": document_map(model, docs, max_doc_points, random_state),
    }
    for name, key in SLICE_VIEWS.items():
        if tables and name in tables:
            views[key] = tables[name]
    logger.info("report views: %d topics, %d of %d documents on the map",
                len(views["topic_map"]), views["documents"]["n_shown"],
                views["documents"]["n_docs"])
    return views
