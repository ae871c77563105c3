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


def _key(model: DocumentTopicModel, topic: int) -> frozenset[int]:
    return frozenset(np.flatnonzero(np.asarray(model.doc_labels_) == topic).tolist())


def test_merge_joins_exactly_the_given_topics(small_corpus: list[Document]) -> None:
    model = _fit(small_corpus)
    before = _members(model)
    labels = np.asarray(model.doc_labels_)
    placed = np.setdiff1d(np.arange(80), model.sample_index_)
    old_shares = model.student_.predict_proba([small_corpus[i].text for i in placed])
    model.find_topics("quantum field theory")  # its term vectors, kept, must not outlive the merge
    joined = frozenset(np.flatnonzero((labels == 1) | (labels == 3)).tolist())
    names = {_key(model, t): model.topic_label(t) for t in (0, 2, 4)}
    model.merge_topics([[1, 3]])
    after = _members(model)
    # the untouched topics keep their names (issue 68: "labour, government" was renamed)
    assert {_key(model, t): model.topic_label(t) for t in range(4)
            if _key(model, t) in names} == names
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
    back = DocumentTopicModel.load(model.save(tmp_path / "m"))  # reshapes as the fitted one
    tree = model.hierarchical_topics()
    assert back.hierarchical_topics() == tree
    assert len(tree) == 4 and tree[-1]["topics"] == [0, 1, 2, 3, 4]
    assert all(row["label"] and row["label"] != "(no terms)" for row in tree)
    assert [row["distance"] for row in tree] == sorted(row["distance"] for row in tree)
    before = _members(model)
    model.reduce_topics(2)
    back.reduce_topics(2)
    assert model.n_topics_ == back.n_topics_ == 2
    for group in _members(model):  # every new topic is a union of old topics
        assert group == frozenset().union(*(g for g in before if g <= group))
    assert back.doc_labels_.tolist() == model.doc_labels_.tolist()
    assert [back.topic_label(t) for t in range(2)] == [model.topic_label(t) for t in range(2)]
    again = DocumentTopicModel.load(back.save(tmp_path / "m2"))  # a reshaped model, reloaded
    again.merge_topics([[0, 1]])
    assert again.n_topics_ == 1 and sum(again.topic_doc_counts_) == 80


def test_reduce_to_as_many_topics_or_more_warns_and_changes_nothing(
        small_corpus: list[Document], caplog: pytest.LogCaptureFixture) -> None:
    """The README's quick start called reduce_topics(8) on a 7-topic fit: a no-op now."""
    model = _fit(small_corpus)
    labels = model.doc_labels_.copy()
    with caplog.at_level("WARNING", logger="phrasekit.topics.exploration.reshape"):
        assert model.reduce_topics(8) is model
    assert model.n_topics_ == 5 and (model.doc_labels_ == labels).all()
    assert "has 5 topics already" in caplog.text
    with pytest.raises(ValueError, match="integer >= 1"):
        model.reduce_topics(0)
