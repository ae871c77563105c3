"""BERTopic's names on DocumentTopicModel (fit_transform, get_topic_info, get_topic,
get_representative_docs, get_document_info), fit(embeddings=...), progress and the vector
cache by default; on 80 real arXiv abstracts, 30 of them placed outside the fitted sample."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from phrasekit.encoders.cache import encode_documents
from phrasekit.io import Document
from phrasekit.topics import DocumentTopicModel
from phrasekit.topics.core.params import resolve_cache, resolve_progress


def _model(**kwargs) -> DocumentTopicModel:
    settings = {"encoder": "glove-50d", "n_topics": 4, "min_df": 2, "fit_docs": 50, **kwargs}
    return DocumentTopicModel(**settings)


@pytest.fixture(scope="module")
def fitted(small_corpus: list[Document]) -> tuple[DocumentTopicModel, list[int], np.ndarray]:
    model = _model()
    topics, probs = model.fit_transform(small_corpus)
    return model, topics, probs


def test_fit_transform_returns_topics_and_shares(fitted) -> None:
    model, topics, probs = fitted
    assert topics == model.doc_labels_.tolist() and len(topics) == 80
    assert probs.shape == (80, 4)
    placed = np.asarray(topics) >= 0
    assert (probs[placed].argmax(axis=1) == np.asarray(topics)[placed]).all()


def test_get_topic_info_is_a_frame_with_bertopic_columns(fitted,
                                                         small_corpus: list[Document]) -> None:
    model, topics, _ = fitted
    info = model.get_topic_info()
    assert isinstance(info, pd.DataFrame)
    assert list(info.columns) == ["Topic", "Count", "Name", "Representation",
                                  "Representative_Docs"]
    assert info["Count"].sum() == 80 and info["Topic"].tolist() == [0, 1, 2, 3]
    assert info["Name"].tolist() == [model.topic_label(t) for t in range(4)]
    texts = {d.text for d in small_corpus}
    for t, row in info.iterrows():
        assert row["Representation"] == [term for term, _ in model.get_topic(t)]
        assert row["Representative_Docs"] and set(row["Representative_Docs"]) <= texts
        members = {small_corpus[i].text for i in np.flatnonzero(np.asarray(topics) == t)}
        assert set(row["Representative_Docs"]) <= members
    assert len(model.get_topic_info(2)) == 1


def test_get_topic_and_representative_docs(fitted) -> None:
    model, _, _ = fitted
    assert model.get_topic(0) == model.topics_[0][:model.top_n]
    assert len(model.get_topic(0, n=3)) == 3
    assert set(model.get_topics()) == {0, 1, 2, 3}
    docs = model.get_representative_docs()
    assert set(docs) == {0, 1, 2, 3} and docs[1] == model.get_representative_docs(1)
    with pytest.raises(ValueError, match="does not exist"):
        model.get_topic(4)
    # -1, BERTopic's outlier topic, is the documents without words: no terms, no typical
    # documents, so a loop over topic ids holds; a row only where there are such documents
    assert model.get_topic(-1) == [] and model.get_representative_docs(-1) == []
    assert len(model.get_topic_info(-1)) == 0 and list(model.get_topic_info(-1).columns) == [
        "Topic", "Count", "Name", "Representation", "Representative_Docs"]
    with pytest.raises(ValueError, match="does not exist"):
        model.get_topic(-2)


def test_get_document_info_one_row_per_document(fitted, small_corpus: list[Document]) -> None:
    model, topics, probs = fitted
    info = model.get_document_info(small_corpus)
    assert len(info) == 80 and info["Topic"].tolist() == topics
    assert info["Document"].tolist() == [d.text for d in small_corpus]
    assert info["Representative_document"].sum() == sum(len(r) for r in model.typical_docs_)
    np.testing.assert_allclose(info["Probability"], probs.max(axis=1), atol=1e-4)
    with pytest.raises(ValueError, match="the 80 documents"):
        model.get_document_info(small_corpus[:3])


def test_fit_with_precomputed_embeddings(small_corpus: list[Document], glove) -> None:
    """The vectors the fit would compute, given: the same topics, nothing encoded."""
    m = _model(encoder=glove, fit_docs="all")
    X = encode_documents(glove, [d.text for d in small_corpus], m.chunk_size, m.max_chunks,
                         max_words=m.max_words)
    given = m.fit(small_corpus, X)  # BERTopic's order
    own = _model(encoder=glove, fit_docs="all").fit(small_corpus)
    assert given.doc_labels_.tolist() == own.doc_labels_.tolist()
    rest = _model(encoder=glove).fit(small_corpus, embeddings=X)  # 30 placed by their vectors
    assert getattr(rest, "student_", None) is None and (rest.doc_labels_ >= 0).all()
    with pytest.raises(ValueError, match="one row per document"):
        _model(encoder=glove).fit(small_corpus, embeddings=X[:10])
    with pytest.raises(ValueError, match="dimensions"):
        _model(encoder=glove).fit(small_corpus, embeddings=np.ones((80, 7)))


def test_progress_and_cache_defaults(monkeypatch, tmp_path: Path,
                                     small_corpus: list[Document]) -> None:
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    assert resolve_progress(None) is True and resolve_progress(False) is False
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False, raising=False)
    monkeypatch.delitem(sys.modules, "ipykernel", raising=False)
    assert resolve_progress(None) is False
    monkeypatch.setenv("PHRASEKIT_VECTOR_CACHE", str(tmp_path / "vectors"))
    assert resolve_cache("auto") == tmp_path / "vectors" and resolve_cache(None) is None
    assert DocumentTopicModel().cache_dir == "auto"
    _model().fit(small_corpus[:40])
    assert any((tmp_path / "vectors").rglob("*")), "the default fit caches its vectors"


def test_the_verbs_check_their_arguments(fitted, small_corpus: list[Document]) -> None:
    """Documents in another order are not the fitted ones (strings' ids are positions, so
    their texts are compared); n, labels and merge groups must be what they say."""
    import copy

    model = fitted[0]
    with pytest.raises(ValueError, match="not the documents the model was fitted on"):
        model.get_document_info([d.text for d in reversed(small_corpus)])
    with pytest.raises(TypeError, match=r"docs\[0\] is NoneType"):
        model.get_document_info([None] * 80)
    from phrasekit.topics import write_topic_outputs

    with pytest.raises(TypeError, match="docs must be a list of Document objects or strings"):
        write_topic_outputs(model, None, Path(__file__).parent / "never-written")
    with pytest.raises(ValueError, match="n must be at least 0"):
        model.get_topic(0, n=-1)
    with pytest.raises(TypeError, match="n must be an integer"):
        model.get_topic(0, n=1.9)
    other = copy.deepcopy(model)
    with pytest.raises(ValueError, match="topic True does not exist"):
        other.set_topic_labels({True: "Z"})
    with pytest.raises(TypeError, match="labels must be a dict"):
        other.set_topic_labels(["a"])
    for groups, error, message in (("01", TypeError, "groups must be a list of lists"),
                                   ([0, 1], TypeError, "group 0 must be a list"),
                                   ([[]], ValueError, "group 0 is empty"),
                                   ([[0, 1.7]], ValueError, "topic 1.7 does not exist")):
        with pytest.raises(error, match=message):
            other.merge_topics(groups)
    assert other.reduce_topics(1).hierarchical_topics() == []  # one topic: no joins
    with pytest.raises(ValueError, match="random_state must be an integer"):
        _model(random_state=None).fit(small_corpus)


def test_fit_names_bad_embeddings_and_repeated_ids(small_corpus: list[Document]) -> None:
    with pytest.raises(ValueError, match=r"embeddings must be a numeric \(80, dim\) array"):
        _model().fit(small_corpus, embeddings="x")
    docs = [Document(id="1", text=small_corpus[0].text, meta={}),
            *[d.text for d in small_corpus[1:]]]  # a string's id is its position: "1"
    with pytest.raises(ValueError, match="documents 0 and 1 have the same id '1'"):
        _model().fit(docs)
    with pytest.raises(FileNotFoundError, match="no such folder"):
        DocumentTopicModel.load(Path(__file__).parent / "no-such-model")


def test_documents_without_words_are_topic_minus_one(small_corpus: list[Document]) -> None:
    """With documents of no known word, -1 is listed first and read like any topic id."""
    docs = [*small_corpus, *(Document(id=f"z{i}", text="zqxv wqzx", meta={}) for i in range(3))]
    model = _model(fit_docs=200)
    topics, _ = model.fit_transform(docs)
    assert topics[-3:] == [-1, -1, -1]
    info = model.get_topic_info()
    assert info["Topic"].tolist()[0] == -1 and info["Count"].tolist()[0] == 3
    row = model.get_topic_info(-1)
    assert row["Topic"].tolist() == [-1] and row["Count"].tolist() == [3]
    assert all(isinstance(model.get_topic(t), list) for t in info["Topic"])
