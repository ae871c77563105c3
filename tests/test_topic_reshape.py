"""Reshaping fitted document topics (merge, reduce, hierarchy) on 80 real arXiv abstracts,
with 30 of them placed by the student."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from phrasekit.io import Document
from phrasekit.topics import DocumentTopicModel


def _fit(docs: list[Document]) -> DocumentTopicModel:
    return DocumentTopicModel(encoder="glove-50d", n_topics=5, min_df=2, fit_docs=50).fit(docs)


def _members(model: DocumentTopicModel) -> set[frozenset[int]]:
    labels = np.asarray(model.doc_labels_)
    return {frozenset(np.flatnonzero(labels == t).tolist()) for t in range(model.n_topics_)}


def test_merge_joins_exactly_the_given_topics(small_corpus: list[Document]) -> None:
    model = _fit(small_corpus)
    before = _members(model)
    labels = np.asarray(model.doc_labels_)
    placed = np.setdiff1d(np.arange(80), model.sample_index_)
    old_shares = model.student_.predict_proba([small_corpus[i].text for i in placed])
    model.find_topics("quantum field theory")  # its term vectors, kept, must not outlive the merge
    joined = frozenset(np.flatnonzero((labels == 1) | (labels == 3)).tolist())
    model.merge_topics([[1, 3]])
    after = _members(model)
    assert model.n_topics_ == 4 and len(model.topics_) == 4
    assert joined in after
    assert after - {joined} == before - {frozenset(np.flatnonzero(labels == t).tolist())
                                         for t in (1, 3)}
    assert (np.asarray(model.doc_labels_) >= 0).all()
    shares = model.student_.predict_proba([small_corpus[i].text for i in placed])
    assert shares.shape == (len(placed), 4)  # the merged topic's share is the sum of its two
    np.testing.assert_allclose(np.sort(shares.sum(axis=1)), np.sort(old_shares.sum(axis=1)),
                               atol=1e-5)
    np.testing.assert_allclose(model.doc_topics_[placed], shares, atol=1e-5)
    merged = np.asarray(model.doc_labels_)[placed[np.isin(labels[placed], (1, 3))]]
    assert len(set(merged.tolist())) <= 1
    assert sum(model.topic_doc_counts_) == 80
    hits = [model.find_topics(model.topics_[t][0][0], k=1)[0][0] for t in range(4)]
    assert max(hits) < 4  # searched among the merged topics, not the fitted ones
    with pytest.raises(ValueError, match="does not exist"):
        model.merge_topics([[0, 9]])


def test_reduce_and_hierarchy(small_corpus: list[Document], tmp_path: Path) -> None:
    model = _fit(small_corpus)
    tree = model.hierarchical_topics()
    assert len(tree) == 4 and tree[-1]["topics"] == [0, 1, 2, 3, 4]
    assert all(row["label"] and row["label"] != "(no terms)" for row in tree)
    assert [row["distance"] for row in tree] == sorted(row["distance"] for row in tree)
    before = _members(model)
    model.reduce_topics(2)
    assert model.n_topics_ == 2
    for group in _members(model):  # every new topic is a union of old topics
        assert group == frozenset().union(*(g for g in before if g <= group))
    back = DocumentTopicModel.load(model.save(tmp_path / "m"))
    assert back.n_topics_ == 2
    with pytest.raises(RuntimeError, match="after load"):
        back.reduce_topics(1)
