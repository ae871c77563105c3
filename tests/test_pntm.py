"""PNTM / UNTM, the LDA baselines, the shared term vocabulary and the topic metrics, on the
80 real arXiv abstracts of the fixtures (GloVe as the fast encoder; MiniLM once)."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from phrasekit.cli import app
from phrasekit.io import Document, read_corpus
from phrasekit.phrases import PhraseExtractor, PhraseVocabulary
from phrasekit.text import TokenDocs, tokenize
from phrasekit.topics import PNTM, LDATopics, run_pntm
from phrasekit.topics.core.terms import build_term_vocabulary, count_matrix, presence_matrix
from phrasekit.topics.outputs.metrics import labels_nmi, npmi_coherence, topic_diversity
from phrasekit.topics.pipeline import corpus_sentences

FIXTURE = Path(__file__).parent / "fixtures" / "corpus_small.jsonl"


@pytest.fixture(scope="module")
def docs() -> list[Document]:
    return read_corpus(FIXTURE)


@pytest.fixture(scope="module")
def phrases(docs) -> PhraseVocabulary:
    return PhraseExtractor().extract(docs)


@pytest.fixture(scope="module")
def token_docs(docs) -> list[list[str]]:
    return [tokenize(d.text) for d in docs]


@pytest.fixture(scope="module")
def untm(docs, phrases, glove, tmp_path_factory) -> PNTM:
    cache = tmp_path_factory.mktemp("pntm-cache")
    return PNTM(encoder=glove, n_topics=6, min_df=2, epochs=40, cache_dir=cache).fit(
        docs, phrases=phrases)


# ---------------------------------------------------------------------- terms
def test_tokenize() -> None:
    assert tokenize("The Bank of England\u2019s state-of-the-art rates, 2008!") == [
        "the", "bank", "of", "england", "state-of-the-art", "rates", "2008"]
    assert tokenize("") == []


def test_token_docs_read_back_as_token_lists(docs, token_docs, phrases) -> None:
    compact = TokenDocs(d.text for d in docs)
    assert len(compact) == len(token_docs) and list(compact) == token_docs
    assert compact[3] == token_docs[3] and compact[-1] == token_docs[-1]
    assert compact.ids.dtype == np.int32 and len(compact.ids) == sum(map(len, token_docs))
    with pytest.raises(IndexError):
        compact[len(docs)]
    assert list(TokenDocs(["", "two words", ""])) == [[], ["two", "words"], []]
    assert len(TokenDocs([])) == 0
    vocab = build_term_vocabulary(compact, phrases, min_df=2)
    assert vocab == build_term_vocabulary(token_docs, phrases, min_df=2)
    a, b = (presence_matrix(t, vocab.terms) for t in (compact, token_docs))
    assert a.format == "csc" and a.dtype == np.float32 and (a != b).nnz == 0
    c, d = (count_matrix(t, vocab, phrases=True) for t in (compact, token_docs))
    assert (c != d).nnz == 0 and c.sum() > 0 and a.sum() > 0


def test_term_vocabulary_words_and_verbatim_phrases(token_docs, phrases) -> None:
    vocab = build_term_vocabulary(token_docs, phrases, min_df=2)
    words, phr = vocab.terms[: vocab.n_words], vocab.phrases
    assert words and phr
    assert all(" " not in w for w in words) and all(" " in p for p in phr)
    assert "the" not in words and "of" not in words  # stop words
    # document frequencies are recounted where the phrase occurs verbatim in the tokens
    for i in (0, vocab.n_words):
        key = tuple(vocab.terms[i].split())
        n = len(key)
        df = sum(any(tuple(t[j : j + n]) == key for j in range(len(t))) for t in token_docs)
        assert df == vocab.doc_freq[i] >= 2
    with pytest.raises(ValueError, match="no documents"):
        build_term_vocabulary([], None)


def test_count_matrix_joins_phrases_and_presence_keeps_words() -> None:
    toks = [tokenize("the bank of england raised rates in england"), tokenize("rates fell")]
    from phrasekit.topics.core.terms import TermVocabulary

    vocab = TermVocabulary(terms=["england", "rates", "bank of england"],
                           surface=["England", "rates", "Bank of England"],
                           doc_freq=[1, 2, 1], n_words=2)
    words = count_matrix(toks, vocab, phrases=False).toarray()
    joined = count_matrix(toks, vocab, phrases=True).toarray()
    assert words.tolist() == [[2, 1, 0], [0, 1, 0]]
    assert joined.tolist() == [[1, 1, 1], [0, 1, 0]]  # one "england" went into the phrase
    assert presence_matrix(toks, vocab.terms).toarray().tolist() == [[1, 1, 1], [0, 1, 0]]


# ---------------------------------------------------------------------- metrics
def test_npmi_by_hand() -> None:
    docs = [["a", "b"], ["a", "b"], ["c"], ["a", "c"]]
    mean, per = npmi_coherence([["a", "b"], ["b", "c"]], docs)
    expected = math.log(0.5 / (0.75 * 0.5)) / -math.log(0.5)
    assert per[0] == pytest.approx(expected) and per[1] == -1.0
    assert mean == pytest.approx((expected - 1.0) / 2)
    # nested pairs are skipped: a topic made only of them has no score
    nested, per = npmi_coherence([["b", "a b"]], docs)
    assert math.isnan(per[0]) and math.isnan(nested)
    kept, _ = npmi_coherence([["b", "a b"]], docs, skip_nested=False)
    assert kept == pytest.approx(1.0)


def test_diversity_and_nmi() -> None:
    assert topic_diversity([["bank of england", "england"], ["rates"]]) == pytest.approx(0.8)
    assert topic_diversity([["x", "y"], ["z", "w"]]) == 1.0
    assert labels_nmi([0, 0, 1, 1], ["a", "a", "b", "b"]) == pytest.approx(1.0)
    assert labels_nmi([0, 1, 0, 1], ["a", "a", "b", "b"]) == pytest.approx(0.0)
    with pytest.raises(ValueError, match="labels"):
        labels_nmi([0], ["a", "b"])


# ---------------------------------------------------------------------- PNTM
def test_untm_fit(untm: PNTM, docs) -> None:
    m = untm
    assert m.components_.shape == (6, 50)
    assert m.doc_topics_.shape == (len(docs), 6)
    assert np.allclose(m.doc_topics_.sum(axis=1), 1.0, atol=1e-5)
    assert set(m.labels_.tolist()) <= set(range(6))
    vocab = m.term_vocabulary_
    word_surfaces = set(vocab.surface[: vocab.n_words])
    phrase_surfaces = set(vocab.surface[vocab.n_words :])
    for k in range(6):
        assert len(m.topics_[k]) == m.top_n
        scores = [s for _, s in m.topics_[k]]
        assert scores == sorted(scores, reverse=True)
        keys = m.topic_keys_[k]
        assert all(key in vocab.terms for key in keys)
        # dedupe: no "x" next to "xs"
        assert not any(key + "s" in keys for key in keys)
        assert all(w in word_surfaces for w, _ in m.topic_words_[k])
        assert all(p in phrase_surfaces for p, _ in m.topic_phrases_[k])
    assert m.transform(docs[:3]).shape == (3, 6)
    s = m.summary()
    assert s["n_docs"] == len(docs) and sum(s["topic_sizes"]) == len(docs)


def test_grounding_rereads_terms_from_topic_documents(untm: PNTM, token_docs) -> None:
    m = copy.deepcopy(untm)
    plain, labels = copy.deepcopy(m.topic_keys_), m.labels_.copy()
    log_rate = m.topic_term_rate_
    assert log_rate.shape == (m.n_topics, len(m.term_vocabulary_)) and (log_rate < 0).all()
    # a term's rate is highest in the topic whose documents contain it most often
    P = presence_matrix(token_docs, m.term_vocabulary_.terms).toarray()
    j = int(np.argmax(P.sum(axis=0)))
    rate = (m.doc_topics_ * P[:, [j]]).sum(axis=0) / m.doc_topics_.sum(axis=0)
    assert rate[int(np.argmax(log_rate[:, j]))] >= 0.9 * rate.max()
    m.reread(grounding=1.0)
    assert m.topic_keys_ != plain and np.array_equal(m.labels_, labels)
    grounded, _ = npmi_coherence(m.topic_keys_, token_docs)
    m.reread(grounding=0.0)
    assert m.topic_keys_ == plain
    base, _ = npmi_coherence(plain, token_docs)
    assert grounded > base  # terms of the topic's own documents co-occur more
    with pytest.raises(ValueError, match="grounding"):
        m.reread(grounding=-1)


def test_training_lowers_the_hinge_loss(docs, phrases, glove) -> None:
    short = PNTM(encoder=glove, n_topics=6, min_df=2, epochs=1).fit(docs, phrases=phrases)
    long_ = PNTM(encoder=glove, n_topics=6, min_df=2, epochs=60).fit(docs, phrases=phrases)
    assert long_.final_hinge_ < short.final_hinge_
    again = PNTM(encoder=glove, n_topics=6, min_df=2, epochs=60).fit(docs, phrases=phrases)
    assert np.array_equal(again.components_, long_.components_)  # seeded


def test_embedding_cache_is_reused(untm: PNTM, docs, phrases, glove) -> None:
    cached = list(Path(untm.cache_dir).glob("*.npz"))
    assert {p.name.split("-")[0] for p in cached} == {"docs", "vocab"}
    again = PNTM(encoder=glove, n_topics=6, min_df=2, epochs=40, cache_dir=untm.cache_dir).fit(
        docs, phrases=phrases)
    assert np.array_equal(again.doc_embeddings_, untm.doc_embeddings_)
    assert np.array_equal(again.components_, untm.components_)


@pytest.mark.slow  # about 40 s of MiniLM encoding; run with -m slow
def test_pntm_minilm_separates_archives(docs, phrases, minilm, token_docs) -> None:
    """Topics track the six arXiv archives of the fixture better than word LDA on the same
    vocabulary (the fixture's gold labels; K = 6)."""
    m = PNTM(encoder=minilm, n_topics=6, min_df=2).fit(docs, phrases=phrases)
    labels = [d.meta["label"] for d in docs]
    lda = LDATopics(n_topics=6).fit(token_docs, m.term_vocabulary_)
    assert labels_nmi(m.labels_, labels) > labels_nmi(lda.labels_, labels)
    sents = m.describe_with(corpus_sentences(docs), n=2)
    assert len(sents) == 6 and all(len(t) == 2 for t in sents)


def test_pntm_bad_input(docs, phrases, glove) -> None:
    with pytest.raises(ValueError, match="n_topics"):
        PNTM(encoder=glove, n_topics=1).fit(docs, phrases=phrases)
    with pytest.raises(ValueError, match="empty"):
        PNTM(encoder=glove).fit([])
    with pytest.raises(ValueError, match="other documents"):
        PNTM(encoder=glove, n_topics=3).fit(docs[:5], phrases=phrases)
    with pytest.raises(RuntimeError, match="not fitted"):
        PNTM(encoder=glove).transform(["text"])
    with pytest.raises(ValueError, match="min_df"):
        PNTM(encoder=glove, n_topics=3, min_df=500).fit(docs, phrases=phrases)


def test_corpus_sentences() -> None:
    d = Document("1", "Title line here\nThe first sentence has six words. Second one, also six "
                      "words here! Tiny. and not split here.", {})
    assert corpus_sentences([d]) == ["The first sentence has six words.",
                                     "Second one, also six words here!"]
    assert corpus_sentences([d], min_words=1) == [
        "Title line here", "The first sentence has six words.",
        "Second one, also six words here!", "Tiny. and not split here."]


# ---------------------------------------------------------------------- LDA baselines
def test_lda_and_phrase_lda(token_docs, phrases) -> None:
    vocab = build_term_vocabulary(token_docs, phrases, min_df=2)
    lda = LDATopics(n_topics=4, max_iter=5, top_n=60).fit(token_docs, vocab)
    plda = LDATopics(n_topics=4, phrases=True, max_iter=5, top_n=60).fit(token_docs, vocab)
    assert lda.doc_topics_.shape == (len(token_docs), 4)
    assert all(" " not in t for keys in lda.topic_keys_ for t in keys)
    # phrase-LDA models the phrases as tokens of their own (LDA never sees them)
    n_lda, n_plda = lda.lda_.components_.shape[1], plda.lda_.components_.shape[1]
    assert n_lda <= vocab.n_words < n_plda
    assert any(" " in t for keys in plda.topic_keys_ for t in keys)
    with pytest.raises(ValueError, match="n_topics"):
        LDATopics(n_topics=1).fit(token_docs, vocab)


# ---------------------------------------------------------------------- pipeline + CLI
def test_run_pntm_writes_outputs(tmp_path, glove) -> None:
    model, paths = run_pntm(FIXTURE, tmp_path / "out", model=glove, n_topics=3, min_df=2,
                            quiet=True, n_sentences=2, epochs=10)
    data = json.loads(paths["json"].read_text(encoding="utf-8"))
    assert data["method"] == "pntm" and data["n_topics"] == 3 and len(data["topics"]) == 3
    assert [t["label"] for t in data["topics"]] == [model.topic_label(k) for k in range(3)]
    assert all(len(t["top_sentences"]) == 2 for t in data["topics"])
    assert len(data["doc_topics"]) == 80
    md = paths["markdown"].read_text(encoding="utf-8")
    assert md.startswith("# Topics (PNTM)") and "**Sentences:**" in md


def test_cli_topics_pntm(tmp_path) -> None:
    runner = CliRunner()
    out = tmp_path / "pntm"
    res = runner.invoke(app, ["topics", str(FIXTURE), "--method", "pntm", "-m", "glove-50d",
                              "-k", "3", "--min-df", "2", "--out", str(out), "--quiet"])
    assert res.exit_code == 0, res.output
    assert (out / "topics.json").is_file() and (out / "topics.md").is_file()
    bad = runner.invoke(app, ["topics", str(FIXTURE), "--method", "lsa", "--out", str(out)])
    assert bad.exit_code == 2 and "--method" in bad.output
    bad = runner.invoke(app, ["topics", str(FIXTURE), "--method", "pntm", "--sentences", "-1",
                              "--out", str(tmp_path / "x")])
    assert bad.exit_code == 2 and not (tmp_path / "x").exists()


def test_phrases_are_shown_without_the_corpus_quote_marks() -> None:
    from phrasekit.topics.core.terms import shown_form

    assert shown_form("``The Government") == "The Government"
    assert shown_form("“New York”") == "New York"
    assert shown_form("Smith's car") == "Smith's car" and shown_form("''") == "''"
    docs = [tokenize("the government said ``the government'' would act")] * 3
    vocab = PhraseVocabulary(phrases=["the government"], counts=[6], doc_freq=[3],
                             surface_forms=[{"``The Government": 3}], sources=[{"NP": 3}],
                             doc_ids=["0", "1", "2"],
                             doc_phrases=[{"the government": 2}] * 3)
    terms = build_term_vocabulary(docs, vocab, min_df=2)
    assert terms.surface[terms.index("the government")] == "The Government"


_WORDS = st.sampled_from(["a", "b", "c", "d", "e"])
_TERM_WORDS = st.sampled_from(["a", "b", "c", "d", "e", "f"])  # "f" occurs nowhere


@settings(max_examples=60, deadline=None)
@given(docs=st.lists(st.lists(_WORDS, max_size=12), max_size=8),
       terms=st.lists(st.lists(_TERM_WORDS, min_size=1, max_size=4), max_size=10),
       chunk=st.integers(1, 40))
def test_presence_matches_a_scan_of_every_window(docs, terms, chunk) -> None:
    """Array matching over chunks of ``chunk`` tokens finds exactly the documents where each
    term's words occur contiguously (duplicate terms: the last column wins, as a dict would)."""
    from collections import Counter

    from phrasekit.topics.core.terms import _presence_of_ids, _word_doc_freq

    assert +_word_doc_freq(TokenDocs.of(docs)) == Counter(w for t in docs for w in set(t))
    keys = [tuple(t) for t in terms]
    got = _presence_of_ids(TokenDocs.of(docs), keys, chunk_tokens=chunk).toarray()
    last = {k: j for j, k in enumerate(keys)}
    want = np.zeros((len(docs), len(keys)), dtype=np.float32)
    for i, toks in enumerate(docs):
        for k, j in last.items():
            if any(tuple(toks[s:s + len(k)]) == k for s in range(len(toks))):
                want[i, j] = 1
    assert got.shape == want.shape and (got == want).all()
