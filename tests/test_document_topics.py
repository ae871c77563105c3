"""Document topics (the default `topics` method) on 80 real arXiv abstracts of six archives."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
import scipy.sparse as sp

from phrasekit.encoders.cache import encode_documents
from phrasekit.encoders.pooling import l2_normalize
from phrasekit.io import Document, StreamedCorpus
from phrasekit.phrases import PhraseVocabulary
from phrasekit.text import TokenDocs, tokenize
from phrasekit.topics import DocumentTopicModel, write_topic_outputs
from phrasekit.topics.core.choose_k import best_k, choose_k, fast_ari, stability_scores
from phrasekit.topics.core.reading import rank_terms, term_specificity, topic_term_scores
from phrasekit.topics.core.terms import presence_matrix
from phrasekit.topics.outputs.markdown import topics_to_markdown
from phrasekit.topics.outputs.metrics import labels_nmi
from phrasekit.topics.outputs.output import topics_to_dict


@pytest.fixture(scope="module")
def docs(small_corpus: list[Document]) -> list[Document]:
    return small_corpus


@pytest.fixture(scope="module")
def model(docs: list[Document], small_corpus_phrases: PhraseVocabulary) -> DocumentTopicModel:
    return DocumentTopicModel(encoder="minilm", n_topics=6, min_df=2).fit(
        docs, vocabulary=small_corpus_phrases)


def test_documents_are_partitioned(model: DocumentTopicModel, docs: list[Document]) -> None:
    m = model
    assert m.n_topics_ == 6 and m.k_scores_ == {}
    assert (m.doc_labels_ >= 0).all()  # every document with words has a topic
    assert np.allclose(m.doc_topics_.sum(axis=1), 1.0, atol=1e-5)
    assert (m.doc_topics_.argmax(axis=1) == m.doc_labels_).all()
    assert sum(m.topic_doc_counts_) == len(docs)
    real = [c for c, misc in zip(m.topic_doc_counts_, m.miscellaneous_, strict=True) if not misc]
    assert real == sorted(real, reverse=True)
    assert list(m.miscellaneous_) == sorted(m.miscellaneous_)  # miscellaneous topics last
    # MiniLM's document vectors find the archives: far above a random partition
    labels = [d.meta["label"] for d in docs]
    assert labels_nmi(list(m.doc_labels_), labels) > 0.4
    rng = np.random.default_rng(0)
    assert labels_nmi(list(rng.integers(0, 6, len(docs))), labels) < 0.2


def test_topic_terms(model: DocumentTopicModel) -> None:
    m = model
    generic = set(m.generic_terms_)
    assert len(generic) == int(m.generic_share * len(m.terms_))
    for t in range(m.n_topics_):
        scores = [s for _, s in m.topics_[t]]
        assert scores == sorted(scores, reverse=True) and all(s > 0 for s in scores)
        assert all(" " not in w for w, _ in m.topic_words_[t])
        assert all(len(tokenize(p)) > 1 for p, _ in m.topic_phrases_[t])
        assert not generic & {w for w, _ in m.topics_[t]}
        assert m.topic_label(t)
        assert len(m.typical_docs_[t]) == min(m.n_typical, m.topic_doc_counts_[t])
        assert all(m.doc_labels_[d] == t for d, _ in m.typical_docs_[t])


def test_transform_matches_fit(model: DocumentTopicModel, docs: list[Document]) -> None:
    shares = model.transform(docs[:10])
    assert (shares.argmax(axis=1) == model.doc_labels_[:10]).all()


def test_outputs(model: DocumentTopicModel, docs: list[Document], tmp_path: Path) -> None:
    paths = write_topic_outputs(model, docs, tmp_path / "out", report=True)
    data = json.loads(paths["json"].read_text(encoding="utf-8"))
    assert data["method"] == "documents" and data["k_chosen_by"] == "fixed"
    assert [t["label"] for t in data["topics"]] == [model.topic_label(t) for t in range(6)]
    assert all(isinstance(t["miscellaneous"], bool) for t in data["topics"])
    assert "Document clusters" in paths["report"].read_text(encoding="utf-8")
    assert "## Topic 0: " in paths["markdown"].read_text(encoding="utf-8")
    table = pq.read_table(paths["doc_topics"]).to_pylist()  # the flat form of doc_topics
    assert [(r["id"], r["topic"]) for r in table] == [(r["id"], r["topic"])
                                                      for r in data["doc_topics"]]
    for flat, nested in zip(table, data["doc_topics"], strict=True):
        assert abs(flat["share"] - nested["share"]) < 1e-4
        assert all(abs(flat[f"topic_{t}"] - share) < 1e-4
                   for t, share in ((int(t), s) for t, s in nested["distribution"].items()))


def test_topics_json_is_the_same_whatever_the_vector_cache(model: DocumentTopicModel,
                                                           docs: list[Document],
                                                           tmp_path: Path) -> None:
    """The vector cache's folder (a path of this machine) is not written into topics.json."""
    written = []
    for cache in ("cache-a", "cache-b"):
        model.cache_dir = str(tmp_path / cache)
        paths = write_topic_outputs(model, docs, tmp_path / f"out-{cache}")
        data = json.loads(paths["json"].read_text(encoding="utf-8"))
        data.pop("timings_s", None)
        written.append(data)
    model.cache_dir = None
    assert "cache_dir" not in written[0]["params"] and written[0]["params"]["n_topics"] == 6
    assert written[0] == written[1]


def test_k_chosen_from_range(docs: list[Document], small_corpus_phrases: PhraseVocabulary,
                             glove) -> None:
    m = DocumentTopicModel(encoder=glove, k_range=(2, 5), min_df=2).fit(
        docs, vocabulary=small_corpus_phrases)
    assert sorted(m.k_scores_) == [2, 3, 4, 5]
    assert m.n_topics_ == best_k(m.k_scores_, "stability", m.k_tolerance)
    # the reader is told how K was read off the curve (not the most stable K by default)
    data = topics_to_dict(m, docs)
    assert data["k_chosen_by"] == "stability"
    assert data["k_rule"] == "the largest K at least 90% as stable as the most stable K"
    assert "K is the largest K at least 90% as stable" in topics_to_markdown(data)
    # a document id is text: it cannot close its code span, add lines or carry HTML
    hostile = ["a`<img src=x onerror=alert(1)>", "x\n\n# heading\n<script>alert(1)</script>",
               "``", "\u202eevil"]
    docs_of = [t["typical_docs"] for t in data["topics"]]
    for i, doc in enumerate(d for row in docs_of for d in row):
        doc["id"] = hostile[i % len(hostile)]
    md = topics_to_markdown(data)
    assert "\n# heading" not in md and "\u202e" not in md
    assert "``a`<img src=x onerror=alert(1)>``" in md and "``` `` ```" in md


def test_best_k_rules() -> None:
    scores = {2: 0.9, 3: 0.5, 4: 0.85, 5: 0.6}
    assert best_k(scores, "stability") == 2
    assert best_k(scores, "stability", tolerance=0.1) == 4  # 0.85 >= 0.9 * 0.9
    assert best_k({2: 0.9, 3: 0.895}, "stability") == 3  # within STABILITY_TIE: finer
    assert best_k({2: 0.2, 3: 0.2, 4: 0.1}, "silhouette") == 2


def test_choose_k_finds_separated_groups() -> None:
    rng = np.random.default_rng(0)
    centres = rng.normal(size=(4, 16)) * 5
    X = np.vstack([c + rng.normal(size=(60, 16)) for c in centres])
    for criterion in ("stability", "silhouette"):
        k, scores = choose_k(X, range(2, 8), criterion)
        assert k == 4, (criterion, scores)


def test_stability_does_not_score_a_k_of_one_or_two_documents_a_topic() -> None:
    """30 documents scored K = 29 (halves of all 30 documents, singletons that agree) at 1.0
    and chose it; only K with about 6 documents a topic are scored now."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 16))
    k, scores = choose_k(X, range(4, 30), "stability")
    assert max(scores) == 5 and k <= 5
    assert choose_k(X[:12], range(4, 30), "stability")[1].keys() == {4}  # k_min kept


def test_fast_ari_is_scikit_learns() -> None:
    from sklearn.metrics import adjusted_rand_score

    rng = np.random.default_rng(0)
    cases = [(rng.integers(0, ka, n), rng.integers(0, kb, n))
             for n, ka, kb in [(10, 2, 3), (500, 7, 5), (2000, 30, 30), (6, 6, 6), (4, 1, 4)]]
    cases += [(np.zeros(6, int), np.zeros(6, int)), (np.arange(6), np.arange(6)),
              (np.zeros(6, int), np.arange(6))]
    for a, b in cases:
        assert fast_ari(a, b) == pytest.approx(adjusted_rand_score(a, b), abs=1e-12)


def test_stability_adds_pairs_only_where_they_can_move_k(caplog: pytest.LogCaptureFixture
                                                         ) -> None:
    """The K near the floor get the added pairs, continuing their own draws (so their scores
    are those of all the pairs drawn at once); a K far below keeps the first pass's."""
    rng = np.random.default_rng(0)
    centres = rng.normal(size=(4, 16)) * 5
    X = np.vstack([c + rng.normal(size=(60, 16)) for c in centres])
    few = stability_scores(X, range(2, 8), n_pairs=4, more_pairs=0)
    many = stability_scores(X, range(2, 8), n_pairs=12, more_pairs=0)
    with caplog.at_level("INFO", logger="phrasekit.topics.core.choose_k"):
        both = stability_scores(X, range(2, 8), n_pairs=4, more_pairs=8)
    pairs = {int(m.split()[0][2:]): int(m.split("(")[1].split()[0])
             for m in (r.getMessage() for r in caplog.records) if "stability" in m}
    added = sorted(k for k, n in pairs.items() if n == 12)
    assert 4 in added and 7 not in added, pairs
    assert set(pairs.values()) == {4, 12}
    for k, v in both.items():
        assert v == pytest.approx(many[k] if k in added else few[k]), k
    assert best_k(both, "stability") == 4
    caplog.clear()
    with caplog.at_level("INFO", logger="phrasekit.topics.core.choose_k"):
        stability_scores(X, range(2, 5), n_pairs=1, more_pairs=2)  # no standard error yet
    assert [m.endswith("(3 pairs)") for m in (r.getMessage() for r in caplog.records)
            if "stability" in m] == [True] * 3


def test_stability_runs_on_principal_components() -> None:
    """In 384 dimensions with the groups in a 3-d subspace, the stability step on 64
    principal components finds the 4 groups, as on all dimensions."""
    rng = np.random.default_rng(1)
    basis = np.linalg.qr(rng.normal(size=(384, 3)))[0].T
    centres = rng.normal(size=(4, 3)) * 4
    X = np.vstack([(c + rng.normal(size=(80, 3))) @ basis + 0.05 * rng.normal(size=(80, 384))
                   for c in centres]).astype(np.float32)
    for dims in (64, None):
        scores = stability_scores(X, range(2, 8), dims=dims)
        assert best_k(scores, "stability") == 4, (dims, scores)


def test_reading_functions() -> None:
    # six documents in two groups; term 0 in group A only, term 1 everywhere, term 2 in one doc
    P = sp.csr_matrix(np.array([[1, 1, 1], [1, 1, 0], [1, 1, 0], [0, 1, 0], [0, 1, 0],
                                [0, 1, 0]], dtype=np.float32))
    X = np.array([[1, 0], [1, 0], [1, 0], [-1, 0], [-1, 0], [-1, 0]], dtype=np.float64)
    spec = term_specificity(P, X)
    assert spec[0] > 0.5 and abs(spec[1]) < 1e-9
    S = topic_term_scores(P, np.array([0, 0, 0, 1, 1, 1]), 2)
    assert S[0, 0] > 0 and S[1, 0] == 0 and S[0, 1] == 0 and S[1, 1] == 0
    keys = ["instanton liquid density", "instanton liquid", "phones", "phone", "liquid"]
    ranked = rank_terms(np.array([[5.0, 4.0, 3.0, 2.0, 1.0]]), keys, 10)
    assert [keys[j] for j in ranked[0]] == ["instanton liquid density", "phones", "liquid"]


def test_bad_settings() -> None:
    for bad in ({"k_range": (5, 2)}, {"k_criterion": "elbow"}, {"generic_share": 1.0},
                {"n_topics": 1}, {"max_df": 0}):
        with pytest.raises(ValueError):
            DocumentTopicModel(**bad).check_params()
    with pytest.raises(RuntimeError, match="not fitted"):
        DocumentTopicModel().topic_label(0)


@pytest.fixture(scope="module")
def sampled(docs: list[Document], glove) -> DocumentTopicModel:
    """Fitted on a sample of 50 of the 80 documents; the other 30 placed by the student."""
    return DocumentTopicModel(encoder=glove, n_topics=4, min_df=2, fit_docs=50).fit(docs)


@pytest.fixture(scope="module")
def sampled_encoder(docs: list[Document], glove) -> DocumentTopicModel:
    """The same sample; the other 30 encoded and placed in their nearest topic."""
    return DocumentTopicModel(encoder=glove, n_topics=4, min_df=2, fit_docs=50,
                              placement="encoder").fit(docs)


def test_a_corpus_within_the_sample_is_placed_as_the_encoder_places_it(
        docs: list[Document], glove) -> None:
    student, encoder = (DocumentTopicModel(encoder=glove, n_topics=4, min_df=2, placement=p)
                        .fit(docs[:40]) for p in ("student", "encoder"))
    assert (student.doc_labels_ == encoder.doc_labels_).all()
    assert np.array_equal(student.doc_topics_, encoder.doc_topics_)
    assert student.topics_ == encoder.topics_ and not hasattr(student, "student_")


def test_the_student_places_the_rest_of_a_sampled_corpus(
        sampled: DocumentTopicModel, sampled_encoder: DocumentTopicModel) -> None:

    index = sampled.sample_index_
    assert sampled.topics_ == sampled_encoder.topics_  # the same sample, vectors and topics
    assert (sampled.doc_labels_[index] == sampled_encoder.doc_labels_[index]).all()
    rest = np.setdiff1d(np.arange(len(sampled.doc_ids_)), index)
    shares, labels = sampled.doc_topics_[rest], sampled.doc_labels_[rest]
    assert np.allclose(shares.sum(axis=1), 1, atol=1e-5) and (shares.argmax(1) == labels).all()
    assert sampled.topic_doc_counts_ == np.bincount(sampled.doc_labels_, minlength=4).tolist()
    assert {d for t in sampled.typical_docs_ for d, _ in t} <= set(index.tolist())


def test_the_student_agrees_with_the_encoder_where_words_tell_topics_apart(glove) -> None:
    """Four subjects with their own words: the student, trained on a 60-document sample,
    places the other 60 as the transformer-free encoder does."""
    from sklearn.metrics import adjusted_rand_score

    pools = [["football", "goal", "striker", "league", "coach", "match", "season", "stadium"],
             ["bank", "stocks", "inflation", "interest", "market", "bonds", "investor", "rate"],
             ["planet", "orbit", "telescope", "galaxy", "astronaut", "rocket", "star", "moon"],
             ["recipe", "oven", "flour", "butter", "sauce", "garlic", "bake", "soup"]]
    rng = np.random.default_rng(0)
    docs = [Document(id=str(i), text=" ".join(rng.choice(pools[i % 4], size=12)), meta={})
            for i in range(120)]
    student, encoder = (DocumentTopicModel(encoder=glove, n_topics=4, min_df=2, fit_docs=60,
                                           placement=p).fit(docs)
                        for p in ("student", "encoder"))
    rest = np.setdiff1d(np.arange(120), student.sample_index_)
    assert adjusted_rand_score(encoder.doc_labels_[rest], student.doc_labels_[rest]) == 1.0


def test_a_sample_is_fitted_and_every_document_placed(sampled_encoder: DocumentTopicModel,
                                                       docs: list[Document], glove) -> None:
    m, index = sampled_encoder, sampled_encoder.sample_index_
    assert len(index) == 50 == len(set(index.tolist())) and list(index) == sorted(index)
    assert m.doc_ids_ == [d.id for d in docs] and len(m.doc_embeddings_) == 50
    # the topics are those of the sample fitted alone
    alone = DocumentTopicModel(encoder=glove, n_topics=4, min_df=2).fit(
        [docs[i] for i in index])
    assert alone.topics_ == m.topics_ and len(alone.sample_index_) == 50
    assert (alone.doc_labels_ == m.doc_labels_[index]).all()
    # the others are placed as transform places new documents, with their term counts
    rest = np.setdiff1d(np.arange(len(docs)), index)
    shares = m.transform([docs[i] for i in rest])
    assert (shares.argmax(axis=1) == m.doc_labels_[rest]).all()
    assert np.allclose(shares, m.doc_topics_[rest], atol=1e-6)
    P = presence_matrix(TokenDocs(docs[i].text for i in rest), m.vocabulary_.terms)
    assert (np.asarray(P.sum(axis=1)).ravel() == m.doc_n_phrases_[rest]).all()
    assert m.topic_doc_counts_ == np.bincount(m.doc_labels_, minlength=4).tolist()
    # typical documents: the nearest to the centre among all members, sample or not
    X = encode_documents(glove, [d.text for d in docs], m.chunk_size, m.max_chunks,
                         max_words=m.max_words)
    d2 = ((l2_normalize(X - m.doc_mean_)[:, None, :] - m.cluster_centers_[None]) ** 2).sum(-1)
    for t, typical in enumerate(m.typical_docs_):
        members = np.flatnonzero(m.doc_labels_ == t)
        assert np.allclose(sorted(d2[[d for d, _ in typical], t]),
                           np.sort(d2[members, t])[: m.n_typical], atol=1e-5)


def test_a_streamed_corpus_gives_the_same_topics_and_files(
        sampled: DocumentTopicModel, docs: list[Document], glove, tmp_path: Path) -> None:
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps({"id": d.id, "text": d.text}) + "\n" for d in docs),
                    encoding="utf-8")
    corpus = StreamedCorpus(path)
    m = DocumentTopicModel(encoder=glove, n_topics=4, min_df=2, fit_docs=50).fit(corpus)
    assert m.topics_ == sampled.topics_ and (m.doc_labels_ == sampled.doc_labels_).all()
    paths = write_topic_outputs(m, corpus, tmp_path / "out", report=True)
    data = json.loads(paths["json"].read_text(encoding="utf-8"))
    whole = topics_to_dict(sampled, docs)
    assert {**data, "timings_s": None} == {**whole, "timings_s": None}
    assert data["n_docs"] == 80 and data["n_fit_docs"] == 50 and len(data["doc_topics"]) == 80
    assert "fitted on a seeded sample of 50 documents" in paths["markdown"].read_text("utf-8")
    assert '"metric_docs":50' in paths["report"].read_text("utf-8")  # NPMI etc. of the sample
    with pytest.raises(ValueError, match="document 80 differs or is missing"):
        topics_to_dict(m, docs[:79])


def test_the_report_of_a_sampled_fit_does_not_read_the_corpus(
        sampled: DocumentTopicModel, docs: list[Document], tmp_path: Path) -> None:
    """Its metrics come from the sample's tokens, so a corpus larger than memory is not
    read into it: the report streams it once, only for the document map's snippets."""
    from phrasekit.topics.outputs.report import write_report

    class Streamed:
        passes = 0

        def __iter__(self):
            Streamed.passes += 1
            yield from docs

    path = write_report(sampled, Streamed(), topics_to_dict(sampled, docs), tmp_path / "r.html")
    page = path.read_text("utf-8")
    assert '"metric_docs":50' in page and Streamed.passes == 1


def test_a_corpus_that_changes_between_passes_is_refused(docs: list[Document], glove) -> None:
    """The documents outside the sample are read in a second pass; a corpus whose file
    changed in between raises rather than placing other documents."""

    class Changing:
        passes = 0

        def __iter__(self):  # a generator: a pass counts once it reads
            self.passes += 1
            yield from docs if self.passes == 1 else docs[:60] + docs[61:]

    with pytest.raises(ValueError, match=r"corpus changed while it was read.*document 61"):
        DocumentTopicModel(encoder=glove, n_topics=4, min_df=2, fit_docs=50).fit(Changing())


def test_fit_docs_all_encodes_every_document(docs: list[Document], glove) -> None:
    m = DocumentTopicModel(encoder=glove, n_topics=4, min_df=2, fit_docs="all").fit(docs)
    assert len(m.sample_index_) == len(docs) and getattr(m, "student_", None) is None
    with pytest.raises(ValueError, match="fit_docs"):
        DocumentTopicModel(fit_docs="most").check_params()
