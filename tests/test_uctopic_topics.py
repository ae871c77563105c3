"""UCTopic topical phrase mining (``UCTopicModel``, ``topics --method ccl``) on the 80-abstract
fixture corpus, and the appendix-B.2 metrics (informativeness, word diversity) on known
answers."""

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
from phrasekit.text import tokenize
from phrasekit.topics import UCTopicModel, write_uctopic_outputs
from phrasekit.topics.metrics import phrase_informativeness, word_diversity

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
