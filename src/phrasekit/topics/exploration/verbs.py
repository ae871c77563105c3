"""BERTopic's everyday names on fitted document topics: ``fit_transform``, ``get_topic``,
``get_topics``, ``get_topic_info``, ``get_representative_docs`` and ``get_document_info``.

Tables come back as a pandas DataFrame (else Polars, else Arrow: the first installed, through
narwhals) with BERTopic's column names, so code written for BERTopic reads them as they are.
``Name`` is phrasekit's topic label (``topic_label``), not BERTopic's ``0_word_word`` key.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from phrasekit.errors import check_int
from phrasekit.io import Document, iter_known_documents
from phrasekit.topics.exploration.explore import fitted_keys

#: Label of documents without words (BERTopic's outlier topic, -1).
UNASSIGNED = "unassigned (no words)"


def as_frame(columns: dict[str, list[Any]]) -> Any:
    """``columns`` as a native data frame: pandas, else Polars, else a ``pyarrow.Table``."""
    import narwhals.stable.v2 as nw

    for backend in ("pandas", "polars", "pyarrow"):
        if importlib.util.find_spec(backend) is not None:
            return nw.from_dict(columns, backend=backend).to_native()
    raise ImportError("get_topic_info and get_document_info need pandas, Polars or pyarrow")


class TopicVerbs:
    """Mixin of :class:`~phrasekit.topics.DocumentTopicModel`: BERTopic's reading verbs."""

    def fit_transform(self, docs: Iterable[Document | str],
                      embeddings: np.ndarray | None = None, y: Any = None,
                      show_progress: bool | None = None) -> tuple[list[int], np.ndarray]:
        """Fit on ``docs`` (as ``fit``; arguments in BERTopic's order) and return each
        document's topic (-1: no words) and its topic shares, (n_docs, K), as BERTopic's
        ``fit_transform``."""
        self.fit(docs, embeddings, y, show_progress=show_progress)
        return [int(t) for t in self.doc_labels_], np.asarray(self.doc_topics_)

    def get_topic(self, topic: int, n: int | None = None) -> list[tuple[str, float]]:
        """The topic's ``n`` (default ``top_n``) best terms, words and phrases, with scores;
        none for -1, the documents without words (a row in ``get_topic_info`` where there
        are any)."""
        self._check_fitted()
        if n is not None:
            check_int("n", n, 0)
        if _is_unassigned(topic):
            return []
        t = self._topic_id(topic)
        return list(self.topics_[t][: self.top_n if n is None else int(n)])

    def get_topics(self) -> dict[int, list[tuple[str, float]]]:
        """Every topic's best terms with scores (``get_topic`` of each)."""
        self._check_fitted()
        return {t: self.get_topic(t) for t in range(self.n_topics_)}

    def get_representative_docs(self, topic: int | None = None
                                ) -> list[str] | dict[int, list[str]]:
        """The texts of a topic's typical documents (nearest its centre, ``n_typical``); of
        every topic as ``{topic: texts}`` when ``topic`` is None."""
        self._check_fitted()
        if topic is None:
            return {t: self.get_representative_docs(t) for t in range(self.n_topics_)}
        if _is_unassigned(topic):
            return []
        t = self._topic_id(topic)
        texts = (self._doc_text(d) for d, _ in self.typical_docs_[t])
        return [text for text in texts if text is not None]

    def get_topic_info(self, topic: int | None = None) -> Any:
        """One row per topic (and one for documents without words, topic -1, if any):
        ``Topic``, ``Count`` (documents), ``Name`` (the label), ``Representation`` (best
        terms) and ``Representative_Docs``; only ``topic``'s row when given."""
        self._check_fitted()
        unassigned = _is_unassigned(topic)
        topics = list(range(self.n_topics_)) if topic is None \
            else [] if unassigned else [self._topic_id(topic)]
        rows: dict[str, list[Any]] = {"Topic": [], "Count": [], "Name": [],
                                      "Representation": [], "Representative_Docs": []}
        n_unassigned = int((np.asarray(self.doc_labels_) < 0).sum())
        if n_unassigned and (topic is None or unassigned):  # -1 exists only with such documents
            for key, value in zip(rows, (-1, n_unassigned, UNASSIGNED, [], []), strict=True):
                rows[key].append(value)
        for t in topics:
            rows["Topic"].append(t)
            rows["Count"].append(int(self.topic_doc_counts_[t]))
            rows["Name"].append(self.topic_label(t))
            rows["Representation"].append([term for term, _ in self.get_topic(t)])
            rows["Representative_Docs"].append(self.get_representative_docs(t))
        return as_frame(rows)

    def get_document_info(self, docs: Sequence[Document | str]) -> Any:
        """One row per fitted document, in order: ``Document`` (its text), ``Topic``,
        ``Name``, ``Representation``, ``Representative_document`` (one of its topic's
        typical documents) and ``Probability`` (its share of that topic). ``docs``: the
        documents the model was fitted on."""
        self._check_fitted()
        if hasattr(docs, "__len__") and len(docs) != len(self.doc_labels_):
            raise ValueError(f"give the {len(self.doc_labels_)} documents the model was fitted "
                             f"on, got {len(docs)}")
        texts = [d.text for _, d in iter_known_documents(
            docs, self.doc_ids_, "docs are not the documents the model was fitted on",
            fitted_keys(self))]
        labels = np.asarray(self.doc_labels_)
        shares = np.asarray(self.doc_topics_)
        typical = {d for row in self.typical_docs_ for d, _ in row}
        names = [self.topic_label(t) for t in range(self.n_topics_)]
        terms = [[term for term, _ in self.get_topic(t)] for t in range(self.n_topics_)]
        return as_frame({
            "Document": texts,
            "Topic": [int(t) for t in labels],
            "Name": [names[t] if t >= 0 else UNASSIGNED for t in labels],
            "Representation": [terms[t] if t >= 0 else [] for t in labels],
            "Representative_document": [i in typical for i in range(len(texts))],
            "Probability": [round(float(shares[i, t]), 4) if t >= 0 else 0.0
                            for i, t in enumerate(labels)],
        })

    # ------------------------------------------------------------------ helpers
    def _topic_id(self, topic: Any) -> int:
        if isinstance(topic, bool) or not isinstance(topic, int | np.integer) \
                or not 0 <= int(topic) < self.n_topics_:
            raise ValueError(f"topic {topic!r} does not exist (topics 0..{self.n_topics_ - 1})")
        return int(topic)

    def _doc_text(self, row: int) -> str | None:
        """The text of fitted document ``row`` where the model keeps it (the fitted sample,
        and typical documents outside it), else None."""
        texts = getattr(self, "sample_texts_", None)
        if texts is not None:
            index = np.asarray(getattr(self, "sample_index_", np.arange(len(texts))))
            pos = int(np.searchsorted(index, row))
            if pos < len(index) and index[pos] == row:
                return texts[pos]
        return getattr(self, "typical_texts_", {}).get(int(row))


def _is_unassigned(topic: Any) -> bool:
    """Whether ``topic`` is -1, BERTopic's outlier topic: here the documents without words."""
    return isinstance(topic, int | np.integer) and not isinstance(topic, bool) and topic == -1
