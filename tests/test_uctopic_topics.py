"""UCTopic topical phrase mining: CCL (pseudo-labels, label views, short fine-tuning runs),
``UCTopicModel`` and ``topics --method ccl`` on the 80-abstract fixture corpus, and the
appendix-B.2 metrics (informativeness, word diversity) on known answers."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from phrasekit.cli import app
from phrasekit.encoders.span import SpanEncoder
from phrasekit.io import read_corpus
from phrasekit.text import TokenDocs, tokenize
from phrasekit.topics import UCTopicModel, write_uctopic_outputs
from phrasekit.topics.outputs.metrics import phrase_informativeness, word_diversity, word_tfidf
from phrasekit.training.uctopic.ccl import (
    CCLConfig,
    assign_topics,
    ccl_finetune,
    label_view_embeddings,
    pseudo_label,
)

torch.set_num_threads(1)
CORPUS = Path(__file__).parent / "fixtures" / "corpus_small.jsonl"


def test_word_diversity_known_answers():
    mean, per = word_diversity([["good food", "great food"], ["a b", "c"], []])
    assert per[0] == pytest.approx(3 / 4) and per[1] == 1.0 and math.isnan(per[2])
    assert mean == pytest.approx((0.75 + 1.0) / 2)
    assert word_diversity([["x y z"] * 20], top_n=2)[0] == pytest.approx(3 / 6)


def test_phrase_informativeness_known_answers():
    docs = [["red", "wine", "red", "cheese"], ["red", "wine"], ["blue", "cheese"]]
    mean, per = phrase_informativeness([["red wine", "nowhere"], ["cheese"]], docs)
    from sklearn.feature_extraction.text import TfidfVectorizer

    vec = TfidfVectorizer(analyzer=lambda t: t)
    T = vec.fit_transform(docs).toarray()
    c = vec.vocabulary_
    red_wine = np.mean([T[0, [c["red"], c["wine"]]].mean(), T[1, [c["red"], c["wine"]]].mean()])
    cheese = np.mean([T[0, c["cheese"]], T[2, c["cheese"]]])
    assert per == pytest.approx([red_wine, cheese])  # "nowhere" occurs nowhere: skipped
    assert mean == pytest.approx((red_wine + cheese) / 2)
    with pytest.raises(ValueError, match="no documents"):
        phrase_informativeness([["a"]], [])


def test_word_tfidf_equals_scikit_learn_columns(small_corpus):
    from sklearn.feature_extraction.text import TfidfVectorizer

    docs = TokenDocs(d.text for d in small_corpus)
    vec = TfidfVectorizer(analyzer=lambda t: t)
    full = vec.fit_transform(docs)
    words = docs.words[::40]
    got = word_tfidf(docs, words, chunk=7).toarray()  # chunks of 7 documents: two passes
    want = full[:, [vec.vocabulary_[w] for w in words]].toarray()
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
    assert np.count_nonzero(got) > len(words)


def test_pseudo_labels_on_toy_clusters():
    rng = np.random.default_rng(0)
    centres = np.eye(3, 8, dtype=np.float32)
    emb = np.concatenate([centres[c] + rng.normal(0, 0.05, (20, 8)) for c in range(3)])
    keys = [f"m{c}-{i % 5}" for c in range(3) for i in range(20)]
    keys[0] = "m1-0"  # one outlier instance of a cluster-1 mention sits in cluster 0
    half = pseudo_label(emb, keys, 3, top_fraction=0.5, seed=0)
    assert half.selected.sum() == 30 and all(
        half.selected[half.clusters == c].sum() == 10 for c in range(3))
    sim = np.einsum("ij,ij->i", emb / np.linalg.norm(emb, axis=1, keepdims=True),
                    half.centroids[half.clusters])
    for c in range(3):  # the selected instances are the closest of their cluster
        members = half.clusters == c
        assert sim[members & half.selected].min() >= sim[members & ~half.selected].max()
    assert all(half.labels[i] == half.mention_labels[k] for i, k in enumerate(keys)
               if k in half.mention_labels)
    pl = pseudo_label(emb, keys, 3, top_fraction=1.0, seed=0)
    block = [int(np.bincount(pl.clusters[c * 20:(c + 1) * 20]).argmax()) for c in range(3)]
    assert len(set(block)) == 3  # the toy clusters are recovered
    assert pl.clusters[0] == block[0] and pl.mention_labels["m1-0"] == block[1]  # majority
    assert (pl.labels >= 0).all() and pl.labels[0] == block[1]
    np.testing.assert_array_equal(assign_topics(emb, pl.centroids), pl.clusters)
    with pytest.raises(ValueError, match="top_fraction"):
        pseudo_label(emb, keys, 3, top_fraction=0)


def test_ccl_finetune_smoke(monkeypatch):
    def no_checkpoint(*args, **kwargs):
        raise AssertionError("CCL runs in memory: no checkpoint is written")

    monkeypatch.setattr("phrasekit.training.core.trainer.save_checkpoint", no_checkpoint)
    enc = SpanEncoder("minilm", max_length=32)
    sents = [("Paris is lovely in spring .", "Paris"), ("We flew to Paris again .", "Paris"),
             ("Berlin has many parks .", "Berlin"), ("Rome was not built in a day .", "Rome"),
             ("Apple sold more phones .", "Apple"), ("Shares of Apple fell .", "Apple"),
             ("Google hired engineers .", "Google"), ("Microsoft released Windows .",
                                                      "Microsoft")]
    items = [(s, (s.index(m), s.index(m) + len(m))) for s, m in sents]
    seen = []
    res = ccl_finetune(enc, items, CCLConfig(n_clusters=2, top_fraction=0.5, steps=2,
                                             batch_size=3, show_progress=False, n_init=2,
                                             eval_every=1),
                       callback=lambda e, s: seen.append(s) or {"ok": 1.0})
    assert len(res.history) == 2 and seen == [0, 1, 2]
    assert res.topics.shape == (8,) and res.centroids.shape == (2, 384)
    assert enc.model.max_length == 32 and not enc.model.training
    s = res.summary()
    assert s["labelled_mentions"] >= 2 and s["seconds"]["steps"] == 2
    assert res.embeddings.shape == (8, 384)
    np.testing.assert_array_equal(res.topics, assign_topics(res.embeddings, res.centroids))
    shared = ccl_finetune(enc, items, CCLConfig(n_clusters=2, top_fraction=0.5, steps=1,
                                                batch_size=3, shared_negatives=True,
                                                negatives_per_cluster=2, show_progress=False,
                                                n_init=2, singleton_positives=True))
    assert len(shared.history) == 1 and np.isfinite(shared.history[0]["loss"])
    inb = ccl_finetune(enc, items, CCLConfig(n_clusters=2, steps=1, batch_size=4,
                                             negatives="in-batch", show_progress=False))
    assert inb.pseudo is None and len(inb.history) == 1
    with pytest.raises(ValueError, match="negatives"):
        CCLConfig(n_clusters=2, negatives="random").validate()
    both = ccl_finetune(enc, items, CCLConfig(n_clusters=2, top_fraction=0.5, steps=0,
                                              label_view="both", show_progress=False, n_init=2))
    assert both.pseudo.centroids.shape == (2, 768)  # clustered on [span; context]
    assert both.centroids.shape == (2, 384)  # topics live in the span space
    with pytest.raises(ValueError, match="label_view"):
        CCLConfig(n_clusters=2, label_view="mention").validate()


def test_label_view_embeddings_are_unit_halves():
    enc = SpanEncoder("minilm", max_length=32)
    rows = [("Paris is lovely .", 0, 5), ("Apple sold phones .", 0, 5)]
    both = label_view_embeddings(enc, rows, "both", 8, False)
    ctx = label_view_embeddings(enc, rows, "context", 8, False)
    assert both.shape == (2, 768)
    np.testing.assert_allclose(np.linalg.norm(both[:, :384], axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(both[:, 384:], ctx / np.linalg.norm(ctx, axis=1, keepdims=True),
                               atol=1e-5)


@pytest.fixture(scope="module")
def fitted():
    docs = read_corpus(CORPUS)
    # a fresh encoder: CCL fine-tunes it in place (never the session's shared MiniLM)
    model = UCTopicModel(encoder=SpanEncoder("minilm"),
                         k_range=(3, 4), max_instances=600, ccl_steps=2, ccl_batch_size=4,
                         silhouette_sample=300, random_state=0)
    return model.fit(docs), docs


def test_uctopic_model_fit(fitted):
    model, docs = fitted
    assert model.n_topics_ in (3, 4) and set(model.silhouette_) == {3, 4}
    assert model.n_topics_ == max((3, 4), key=lambda k: (model.silhouette_[k], -k))
    assert model.n_instances_ <= 600 and len(model.phrases_) <= model.n_instances_
    zp = model.phrase_topics_
    np.testing.assert_allclose(zp.sum(axis=1), 1.0, atol=1e-6)
    np.testing.assert_array_equal(model.labels_, zp.argmax(axis=1))
    for t, ranked in enumerate(model.topics_):  # ranked by z_p[t] * log(1 + count)
        scores = [s for _, s in ranked]
        assert scores == sorted(scores, reverse=True) and len(ranked) <= 10
        assert all(len(tokenize(w)) >= 1 for w, _ in ranked)
        assert all(len(tokenize(p)) > 1 for p, _ in model.topic_phrases_[t])
        assert all(len(tokenize(w)) == 1 for w, _ in model.topic_words_[t])
    assert len(model.doc_labels_) == len(docs) and model.doc_labels_.max() < model.n_topics_
    has = model.doc_n_phrases_ > 0
    np.testing.assert_allclose(model.doc_topics_[has].sum(axis=1), 1.0, atol=1e-6)
    assert (model.doc_labels_[~has] == -1).all()
    assert sum(model.topic_doc_counts_) == int(has.sum())
    assert model.ccl_report_["seconds"]["steps"] == 2
    pronouns = {"it", "we", "they", "i", "you", "he", "she", "this", "which"}
    assert not pronouns & set(model.phrases_)


def test_uctopic_outputs(fitted, tmp_path):
    model, docs = fitted
    paths = write_uctopic_outputs(model, docs, tmp_path, report=True)
    data = json.loads(paths["json"].read_text())
    assert data["method"] == "ccl" and data["n_topics"] == model.n_topics_
    assert len(data["doc_topics"]) == len(docs) and len(data["topics"]) == model.n_topics_
    md = paths["markdown"].read_text()
    assert md.startswith("# Topics (UCTopic)") and "Silhouette" in md
    html = paths["report"].read_text()
    assert "UCTopic" in html and "informativeness" in html
    with pytest.raises(ValueError, match="not the documents"):
        write_uctopic_outputs(model, docs[:5], tmp_path)


def test_uctopic_bad_input():
    with pytest.raises(ValueError, match="top_fraction"):
        UCTopicModel(top_fraction=0).check_params()
    with pytest.raises(ValueError, match="label_view"):
        UCTopicModel(label_view="mention").check_params()
    with pytest.raises(ValueError, match="no documents"):
        UCTopicModel().fit([])
    with pytest.raises(ValueError, match="no noun-chunk"):
        UCTopicModel(ccl_steps=0).fit(["!!!", "???"])


def test_cli_topics_ccl(tmp_path):
    out = tmp_path / "ccl"
    res = CliRunner().invoke(app, ["topics", str(CORPUS), "--method", "ccl", "-k", "3",
                                   "--ccl-steps", "1", "--max-instances", "300", "--out",
                                   str(out), "--no-report", "-q"])
    assert res.exit_code == 0, res.output
    assert "3 topics" in res.output and (out / "topics.json").is_file()
    res = CliRunner().invoke(app, ["topics", str(CORPUS), "--method", "ccl",
                                   "--max-instances", "5", "--out", str(out), "-q"])
    assert res.exit_code == 2 and "max-instances" in res.output
