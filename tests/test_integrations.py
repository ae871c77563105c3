"""phrasekit in KeyBERT and BERTopic: embedding backends, the keyphrase representation model and
the phrase vectorizer, run with the real packages on the bundled sample (skipped without the
optional `bench` extra)."""

from __future__ import annotations

import numpy as np
import pytest

import phrasekit
from phrasekit.datasets import sample_corpus_path
from phrasekit.io import read_corpus

keybert = pytest.importorskip("keybert", reason="keybert is not installed (phrasekit[bench])")
bertopic = pytest.importorskip("bertopic", reason="bertopic is not installed (phrasekit[bench])")

MODEL = "glove-50d"  # small and fast; any phrasekit model works the same way


@pytest.fixture(scope="module")
def docs() -> list[str]:
    return [d.text for d in read_corpus(sample_corpus_path())[:60]]


def test_keybert_backend_embeds_with_phrasekit(docs: list[str]) -> None:
    from keybert import KeyBERT

    from phrasekit.integrations import KeyBERTBackend

    backend = KeyBERTBackend(MODEL)
    np.testing.assert_allclose(backend.embed(docs[:3]), phrasekit.load(MODEL).encode(docs[:3]),
                               atol=1e-6)
    keywords = KeyBERT(model=backend).extract_keywords(docs[0], top_n=5)
    assert len(keywords) == 5 and all(kw.lower() in docs[0].lower() for kw, _ in keywords)


def test_bertopic_with_phrasekit_backend_vectorizer_and_naming(docs: list[str]) -> None:
    from bertopic import BERTopic
    from sklearn.cluster import KMeans
    from sklearn.decomposition import PCA

    from phrasekit.integrations import BERTopicBackend, KeyphraseRepresentation, PhraseVectorizer

    model = BERTopic(embedding_model=BERTopicBackend(phrasekit.load(MODEL)),
                     umap_model=PCA(5, random_state=0),
                     hdbscan_model=KMeans(3, random_state=0, n_init=3),
                     vectorizer_model=PhraseVectorizer(),
                     representation_model=KeyphraseRepresentation(top_n=5, min_df=2))
    topics, _ = model.fit_transform(docs)
    assert sorted(set(topics)) == [0, 1, 2]
    vocabulary = set(model.vectorizer_model.get_feature_names_out())
    assert any(" " in term for term in vocabulary)  # c-TF-IDF counted phrases
    for topic in range(3):
        names = [term for term, _ in model.get_topic(topic)]
        assert 1 <= len(names) <= 5
        members = " ".join(d for d, t in zip(docs, topics, strict=True) if t == topic).lower()
        assert all(name.lower() in members for name in names)  # terms of the topic's own text


def test_keyphrase_option_names_topics_by_keyphrases(docs: list[str]) -> None:
    from bertopic import BERTopic
    from sklearn.cluster import KMeans
    from sklearn.decomposition import PCA

    from phrasekit.integrations import BERTopicBackend, KeyphraseRepresentation

    model = BERTopic(embedding_model=BERTopicBackend(MODEL), umap_model=PCA(5, random_state=0),
                     hdbscan_model=KMeans(2, random_state=0, n_init=3),
                     representation_model=KeyphraseRepresentation(MODEL, top_n=3,
                                                                  keyphrases=True))
    topics, _ = model.fit_transform(docs[:30])
    for topic in set(topics):
        members = " ".join(d for d, t in zip(docs, topics, strict=False) if t == topic).lower()
        assert all(name in members for name, _ in model.get_topic(topic))


def test_keyphrase_option_leaves_a_topic_of_blank_documents_its_words(docs: list[str]) -> None:
    """A topic holding only blank documents raised "docs[1] is empty" inside BERTopic's fit;
    it keeps its c-TF-IDF words, as a topic without terms does."""
    import pandas as pd

    from phrasekit.integrations import KeyphraseRepresentation

    frame = pd.DataFrame({"Document": [*docs[:6], "", " "], "Topic": [0] * 6 + [1, 1]})
    words = {0: [("model", 0.5)], 1: [("blank", 0.1)]}
    named = KeyphraseRepresentation(MODEL, top_n=3, keyphrases=True).extract_topics(
        None, frame, None, words)
    assert named[1] == [("blank", 0.1)] and len(named[0]) == 3


def test_backends_need_their_library(monkeypatch) -> None:
    import sys

    from phrasekit import integrations

    integrations._lazy_class.cache_clear()
    monkeypatch.setitem(sys.modules, "keybert.backend", None)
    try:
        with pytest.raises(ImportError, match=r"KeyBERTBackend needs keybert"):
            integrations.KeyBERTBackend(MODEL)
    finally:
        integrations._lazy_class.cache_clear()


def _fitted(docs: list[str]):
    """A small BERTopic with every phrasekit plug-in, fitted."""
    from bertopic import BERTopic
    from sklearn.cluster import KMeans
    from sklearn.decomposition import PCA

    from phrasekit.integrations import BERTopicBackend, KeyphraseRepresentation, PhraseVectorizer

    model = BERTopic(embedding_model=BERTopicBackend(MODEL), umap_model=PCA(5, random_state=0),
                     hdbscan_model=KMeans(3, random_state=0, n_init=3),
                     vectorizer_model=PhraseVectorizer(),
                     representation_model=KeyphraseRepresentation(top_n=5, min_df=2))
    model.fit_transform(docs)
    return model


@pytest.mark.parametrize("serialization", ["safetensors", "pickle"])
def test_every_plugin_round_trips_through_bertopic_save(docs: list[str], tmp_path,
                                                        serialization: str) -> None:
    """BERTopic's own save and load, safetensors with the c-TF-IDF and pickle, and
    ``save_topic_model``: same topics, and the loaded model still places and counts."""
    from bertopic import BERTopic

    from phrasekit.integrations import BERTopicBackend, save_topic_model

    model = _fitted(docs)
    plain, ours = tmp_path / "plain", tmp_path / "ours"
    model.save(str(plain), serialization=serialization, save_ctfidf=True)
    save_topic_model(model, ours, serialization=serialization, save_ctfidf=True)
    for path in (plain, ours):
        back = BERTopic.load(str(path), embedding_model=BERTopicBackend(MODEL))
        assert {t: [tuple(w) for w in ws] for t, ws in back.get_topics().items()} == \
            model.get_topics()  # (JSON gives lists)
        assert list(back.transform(docs[:5])[0]) == list(model.transform(docs[:5])[0])
        counted = back.vectorizer_model.transform(docs[:5])
        names = back.vectorizer_model.get_feature_names_out()
        assert counted.shape == (5, len(names)) and counted.sum() > 0
        assert any(" " in name for name, n in zip(names, counted.sum(axis=0).A1,
                                                   strict=True) if n)  # phrases counted


def test_a_failed_save_leaves_nothing(docs: list[str], tmp_path) -> None:
    from phrasekit.integrations import save_topic_model

    model = _fitted(docs[:30])

    def broken_save(path: str, serialization: str = "pickle", **kwargs: object) -> None:
        from pathlib import Path

        target = Path(path) if serialization == "pickle" else Path(path, "config.json")
        target.write_text("{}")  # half written, then it fails
        raise KeyError("tokenizer")

    model.save = broken_save
    with pytest.raises(KeyError):
        save_topic_model(model, tmp_path / "m", serialization="safetensors")
    with pytest.raises(KeyError):
        save_topic_model(model, tmp_path / "m.pickle", serialization="pickle")
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    with pytest.raises(ValueError, match="serialization must be one of pickle, safetensors"):
        save_topic_model(model, tmp_path / "j", serialization="json")  # BERTopic writes nothing
    (tmp_path / "d").mkdir()
    with pytest.raises(ValueError, match="is a folder, and a pickle save is one file"):
        save_topic_model(model, tmp_path / "d", serialization="pickle")
    from bertopic import BERTopic

    with pytest.raises(ValueError, match="not fitted"):
        save_topic_model(BERTopic(), tmp_path / "u", serialization="safetensors")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d"]
    assert not any((tmp_path / "d").iterdir())


def test_plugins_refuse_bad_settings_and_take_blank_and_missing_documents(docs: list[str]
                                                                           ) -> None:
    """A string is one document (not its characters); a blank document gets a zero row, as
    KeyBERT's own backends give it no keywords; a missing one does not become "None"."""
    import pandas as pd

    from phrasekit.integrations import KeyBERTBackend, KeyphraseRepresentation

    backend = KeyBERTBackend(MODEL)
    assert backend.embed("neural networks").shape == (1, 50)
    rows = backend.embed([docs[0], "   "])
    assert np.linalg.norm(rows[0]) > 0.99 and not rows[1].any()
    for setting in ({"max_df": 0}, {"top_n": -1}, {"min_df": -3}):
        with pytest.raises(ValueError, match=next(iter(setting))):
            KeyphraseRepresentation(**setting)
    frame = pd.DataFrame({"Document": [None, *docs[1:]], "Topic": [i % 2 for i in range(60)]})
    named = KeyphraseRepresentation(min_df=2).extract_topics(
        None, frame, None, {0: [("x", 1.0)], 1: [("y", 1.0)]})
    assert all(len(terms) == 10 and "none" not in dict(terms) for terms in named.values())
