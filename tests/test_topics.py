"""Phrase-based topics on a small real corpus (80 arXiv abstracts) with the fast GloVe encoder."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from phrasekit.io import Document
from phrasekit.phrases import PhraseVocabulary
from phrasekit.topics import PhraseTopicModel, json_params, write_topic_outputs

FIXTURE = Path(__file__).parent / "fixtures" / "corpus_small.jsonl"


@pytest.fixture(scope="module")
def docs(small_corpus: list[Document]) -> list[Document]:
    return small_corpus


@pytest.fixture(scope="module")
def vocab(small_corpus_phrases: PhraseVocabulary) -> PhraseVocabulary:
    return small_corpus_phrases


@pytest.fixture(scope="module")
def fixed_model(docs, vocab, glove) -> PhraseTopicModel:
    return PhraseTopicModel(encoder=glove, n_topics=4, min_df=2).fit(docs, vocabulary=vocab)


def test_fixed_k(fixed_model: PhraseTopicModel, docs: list[Document]) -> None:
    m = fixed_model
    assert m.n_topics_ == 4 and len(m.topics_) == 4
    assert m.doc_topics_.shape == (len(docs), 4)
    sums = m.doc_topics_.sum(axis=1)
    assert np.allclose(sums[m.doc_n_phrases_ > 0], 1.0)
    assert set(m.doc_labels_.tolist()) <= {-1, 0, 1, 2, 3}
    # every term is in exactly one topic or set aside as generic (generic_share=0.2)
    assert sum(m.topic_sizes_) + len(m.generic_terms_) == len(m.terms_)
    assert len(m.generic_terms_) == int(0.2 * len(m.terms_))
    assert set(m.generic_terms_) == {
        t for t, lab in zip(m.terms_, m.labels_, strict=True) if lab < 0
    }
    # topics are numbered by decreasing number of documents
    assert m.topic_doc_counts_ == sorted(m.topic_doc_counts_, reverse=True)
    for t in range(4):
        scores = [s for _, s in m.topics_[t]]
        assert scores == sorted(scores, reverse=True)
        assert all(" " not in w for w, _ in m.topic_words_[t])
        assert all(" " in p for p, _ in m.topic_phrases_[t])
        for d, share in m.typical_docs_[t]:
            assert m.doc_n_phrases_[d] >= m.min_doc_phrases
            assert share == pytest.approx(m.doc_topics_[d, t], abs=1e-4)
    assert set(m.silhouette_) == {4}
    assert set(m.timings_) == {"extraction", "encoding", "clustering"}


def test_topics_follow_the_fields(fixed_model: PhraseTopicModel, docs: list[Document]) -> None:
    from sklearn.metrics import normalized_mutual_info_score

    placed = fixed_model.doc_labels_ >= 0
    gold = [d.meta["label"] for d, ok in zip(docs, placed, strict=True) if ok]
    nmi = normalized_mutual_info_score(gold, fixed_model.doc_labels_[placed])
    assert nmi > 0.1


def test_context_and_generic_terms(docs, vocab, glove, fixed_model: PhraseTopicModel) -> None:
    gen = fixed_model.generic_terms_
    assert "paper" in gen or "results" in gen  # used by every field: set aside
    spec = dict(zip(fixed_model.terms_, fixed_model.specificity_, strict=True))
    assert spec["paper"] < spec["boundary conditions"]
    plain = PhraseTopicModel(
        encoder=glove, n_topics=4, min_df=2, context_weight=0.0, generic_share=0.0
    ).fit(docs, vocabulary=vocab)
    assert plain.generic_terms_ == [] and sum(plain.topic_sizes_) == len(plain.terms_)
    assert np.allclose(plain.embeddings_, plain.phrase_embeddings_)
    assert not np.allclose(fixed_model.embeddings_, fixed_model.phrase_embeddings_)


def test_silhouette_selection(docs, vocab, glove) -> None:
    m = PhraseTopicModel(encoder=glove, k_range=(3, 6), min_df=2).fit(docs, vocabulary=vocab)
    assert sorted(m.silhouette_) == [3, 4, 5, 6]
    assert all(-1.0 <= s <= 1.0 for s in m.silhouette_.values())
    assert m.n_topics_ == max(m.silhouette_, key=lambda k: (m.silhouette_[k], -k))


def test_deterministic(docs, vocab, glove, fixed_model: PhraseTopicModel) -> None:
    # second fit runs spaCy itself (no cached vocabulary): same phrases, same topics
    again = PhraseTopicModel(encoder=glove, n_topics=4, min_df=2).fit(docs)
    assert again.terms_ == fixed_model.terms_
    assert again.topics_ == fixed_model.topics_
    assert np.array_equal(again.labels_, fixed_model.labels_)
    assert np.array_equal(again.doc_labels_, fixed_model.doc_labels_)
    assert again.typical_docs_ == fixed_model.typical_docs_


def test_outputs_written(fixed_model: PhraseTopicModel, docs, tmp_path: Path) -> None:
    paths = write_topic_outputs(fixed_model, docs, tmp_path / "out")
    data = json.loads(paths["json"].read_text(encoding="utf-8"))
    assert data["format"] == "phrasekit.topics"
    assert data["n_topics"] == 4 and len(data["topics"]) == 4
    assert data["params"]["encoder"] == "glove-50d" and data["params"]["n_topics"] == 4
    assert data["k_scores"][0]["k"] == 4
    assert len(data["doc_topics"]) == len(docs)
    assert {d["id"] for d in data["doc_topics"]} == {d.id for d in docs}
    topic = data["topics"][0]
    assert topic["top_words"] and topic["top_phrases"] and topic["typical_docs"]
    assert topic["typical_docs"][0]["snippet"]
    md = paths["markdown"].read_text(encoding="utf-8")
    assert md.startswith("# Topics")
    assert md.count("\n## Topic ") == 4
    assert "**Top words:**" in md and "**Top phrases:**" in md
    assert f"`{topic['typical_docs'][0]['id']}`" in md
    assert not list((tmp_path / "out").glob(".*.tmp"))  # atomic writes left no temp files
    with pytest.raises(ValueError, match="not the documents"):
        write_topic_outputs(fixed_model, docs[:10], tmp_path / "bad")


def test_get_params(fixed_model: PhraseTopicModel) -> None:
    params = fixed_model.get_params()
    for key in ("encoder", "min_df", "max_phrases", "k_range", "n_topics", "random_state"):
        assert key in params
    assert json.dumps(json_params(fixed_model))
    assert "n_topics" in fixed_model.summary()


def test_k_range_clipped_to_terms(glove) -> None:
    small = [
        "The central bank raised interest rates.",
        "Football fans filled the stadium.",
        "The new phone has a camera.",
        "Interest rates and the stadium.",
    ]
    m = PhraseTopicModel(encoder=glove, k_range=(2, 50), min_df=1).fit(small)
    n_clustered = len(m.terms_) - len(m.generic_terms_)
    assert max(m.silhouette_) == n_clustered - 1
    assert 2 <= m.n_topics_ <= n_clustered - 1


def test_bad_input(docs, vocab, glove) -> None:
    with pytest.raises(ValueError, match="empty"):
        PhraseTopicModel(encoder=glove).fit([])
    with pytest.raises(ValueError, match="min_df"):
        PhraseTopicModel(encoder=glove, min_df=1000).fit(docs, vocabulary=vocab)
    with pytest.raises(ValueError, match="k_min <= k_max"):
        PhraseTopicModel(encoder=glove, k_range=(8, 3)).fit(docs, vocabulary=vocab)
    with pytest.raises(ValueError, match="generic_share"):
        PhraseTopicModel(encoder=glove, generic_share=1.0).fit(docs, vocabulary=vocab)
    with pytest.raises(ValueError, match="n_topics"):
        PhraseTopicModel(encoder=glove, n_topics=1).fit(docs, vocabulary=vocab)
    with pytest.raises(ValueError, match="other documents"):
        PhraseTopicModel(encoder=glove).fit(docs[:5], vocabulary=vocab)
    with pytest.raises(ValueError, match="unknown model"):
        PhraseTopicModel(encoder="no-such-model").fit(docs)
    with pytest.raises(RuntimeError, match="not fitted"):
        PhraseTopicModel().topic_label(0)


def test_run_topics_with_phrase_cache(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from phrasekit.topics import run_topics

    cache = tmp_path / "phrases.json.gz"
    kwargs = dict(model="glove-50d", n_topics=3, min_df=2, quiet=True, phrase_cache=cache)
    first, paths = run_topics(FIXTURE, tmp_path / "a", **kwargs)
    assert cache.is_file() and paths["markdown"].is_file()
    with caplog.at_level("INFO", logger="phrasekit.phrases.cache"):
        second, _ = run_topics(FIXTURE, tmp_path / "b", **kwargs)
    assert "from cache" in caplog.text
    assert second.topics_ == first.topics_
    a = json.loads((tmp_path / "a" / "topics.json").read_text(encoding="utf-8"))
    b = json.loads((tmp_path / "b" / "topics.json").read_text(encoding="utf-8"))
    assert a["topics"] == b["topics"] and a["doc_topics"] == b["doc_topics"]
    with pytest.raises(ValueError, match="unknown model"):
        run_topics(FIXTURE, tmp_path / "c", model="no-such-model")
    with pytest.raises(ValueError, match="k_min <= k_max"):
        run_topics(FIXTURE, tmp_path / "c", model="glove-50d", k_min=9, k_max=3)


def test_snippet() -> None:
    from phrasekit.topics import snippet

    text = "Ireland 19-13 England\n\nIreland consigned England to their third defeat in a row."
    assert snippet(text, 60) == "Ireland 19-13 England — Ireland consigned England to their…"
    assert snippet("Short text.\nSecond line.") == "Short text. Second line."
    assert len(snippet("word " * 200, 100)) <= 101
