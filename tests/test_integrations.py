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
                     representation_model=KeyphraseRepresentation(MODEL, top_n=5))
    topics, _ = model.fit_transform(docs)
    assert sorted(set(topics)) == [0, 1, 2]
    vocabulary = set(model.vectorizer_model.get_feature_names_out())
    assert any(" " in term for term in vocabulary)  # c-TF-IDF counted phrases
    for topic in range(3):
        names = [term for term, _ in model.get_topic(topic)]
        assert 1 <= len(names) <= 5
        members = " ".join(d for d, t in zip(docs, topics, strict=True) if t == topic).lower()
        assert all(name in members for name in names)  # keyphrases of the topic's own text


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
