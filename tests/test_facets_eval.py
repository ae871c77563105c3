"""Evaluation of multi-facet models: HypeNet metrics, BBC summarization (sentences, budgets,
selection, ROUGE), weighted sentence averages / SIF, SC scoring of Turney pairs, and the shared
data loaders.

Hand-made cases check the metric code; an untrained (randomly initialised) facet model over the
packaged GloVe checks the plumbing that needs facets without training one.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from phrasekit.encoders.facets.encoder import FacetEncoder
from phrasekit.encoders.facets.model import FacetModel, FacetModelConfig
from phrasekit.encoders.facets.words import load_word_space
from phrasekit.eval import facet_similarity as fs
from phrasekit.eval import hypenet as hn
from phrasekit.eval import summarization as sm
from phrasekit.eval.turney import TurneyItem, tie_aware_accuracy


@pytest.fixture(scope="module")
def ws():
    return load_word_space()


@pytest.fixture(scope="module")
def random_encoder(ws) -> FacetEncoder:
    torch.manual_seed(0)
    cfg = FacetModelConfig(n_facets=3, encoder_layers=1, decoder_layers=1)
    return FacetEncoder(FacetModel(cfg, ws.vectors), ws, name="random")


# ------------------------------------------------------------------------------ HypeNet
def _pairs(labels):
    return [hn.HypernymPair(f"x{i}", f"y{i}", bool(v)) for i, v in enumerate(labels)]


def test_detection_auc_is_average_precision():
    labels = np.array([1, 0, 1, 0, 0], dtype=bool)
    assert hn.detection_auc(labels, [5, 4, 3, 2, 1]) == pytest.approx(100 * (1 + 2 / 3) / 2)
    assert hn.detection_auc(labels, [9, 1, 8, 2, 3]) == 100.0
    assert hn.detection_roc_auc(labels, [9, 1, 8, 2, 3]) == 100.0
    assert hn.detection_roc_auc(labels, [1, 9, 2, 8, 7]) == 0.0
    with pytest.raises(ValueError, match="positive"):
        hn.detection_auc(np.zeros(3, bool), [1, 2, 3])
    with pytest.raises(ValueError, match="equal-length"):
        hn.detection_auc(labels, [1, 2])
    with pytest.raises(ValueError, match="finite"):
        hn.detection_auc(labels, [1, 2, np.nan, 0, 0])


def test_direction_accuracy_and_metrics():
    assert hn.direction_accuracy([0.3, -0.1, 0.0, 2.0]) == pytest.approx(62.5)  # tie = 1/2
    assert hn.direction_accuracy([1.0, 1.0], backward=[0.5, 2.0]) == 50.0
    pairs = _pairs([1, 0, 1, 0])
    m = hn.hypernymy_metrics(pairs, np.array([0.5, 0.2, -0.1, -0.3]))
    assert m["direction_acc"] == 50.0 and m["positives"] == 2 and m["pairs"] == 4
    assert m["auc"] == pytest.approx(100 * (1 + 2 / 3) / 2)
    sym = hn.hypernymy_metrics(pairs, np.array([0.9, 0.1, 0.8, 0.2]), symmetric=True)
    assert sym["direction_acc"] == 50.0 and sym["auc"] == 100.0


def test_load_hypenet_file(tmp_path):
    d = tmp_path / "hypenet" / "dataset_lex"
    d.mkdir(parents=True)
    (d / "test.tsv").write_text("oak\ttree\tTrue\ntree\toak\tFalse\n\n", encoding="utf-8")
    pairs = hn.load_hypenet(tmp_path)
    assert pairs == [hn.HypernymPair("oak", "tree", True), hn.HypernymPair("tree", "oak", False)]
    (d / "val.tsv").write_text("oak\ttree\tmaybe\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"val\.tsv:1"):
        hn.load_hypenet(tmp_path, part="val")
    with pytest.raises(ValueError, match="split"):
        hn.load_hypenet(tmp_path, split="random")
    with pytest.raises(FileNotFoundError, match=r"train\.tsv"):
        hn.load_hypenet(tmp_path, part="train")


def test_asym_scores_are_antisymmetric_and_skip_unknown_terms(random_encoder):
    pairs = [hn.HypernymPair("oak", "tree", True), hn.HypernymPair("brown dog", "animal", True),
             hn.HypernymPair("xqzzyv", "animal", False)]
    fwd, oov = hn.asym_scores(random_encoder, pairs)
    back, _ = hn.asym_scores(random_encoder, [hn.HypernymPair(p.hyper, p.hypo, p.label)
                                              for p in pairs])
    assert oov == 1 and fwd[2] == 0.0
    assert np.allclose(fwd, -back, atol=1e-5)
    m = hn.evaluate_asym(random_encoder, pairs)
    assert m["oov_pairs"] == 1 and 0 <= m["direction_acc"] <= 100
    cos = hn.cosine_scores(random_encoder, pairs)
    assert cos.shape == (3,) and np.all(np.abs(cos) <= 1 + 1e-6)


# ------------------------------------------------------------------------------ summarization
def test_split_article_cuts_like_the_references():
    body = ('First line. Second "quoted!" said he. Mr. Jones left.\n\n'
            'It was in Wham! through 1986. "Why?" said Ann.\nTitle-like line\n\n')
    assert sm.split_article(body) == [
        "First line.", 'Second "quoted!"', "said he.", "Mr.", "Jones left.", "It was in Wham!",
        "through 1986.", '"Why?"', "said Ann.", "Title-like line"]
    assert sm.split_article("Prices rose 1.5% to $1.13bn. Then fell.") == [
        "Prices rose 1.5% to $1.13bn.", "Then fell."]


def test_align_reference_and_budget():
    sents = ["A b.", "C d.", "E f.", "G h."]
    units, unaligned = sm.align_reference(sents, ["E f.", "A  b. C d.", "not there."])
    assert units == (0, 1, 2) and unaligned == 1
    art = sm.Article("x/1", tuple(sents), ("E f.",), units, unaligned)
    assert art.budget == 4  # 3 covered sentences + 1 unaligned span
    assert sm.budget_of(art, "ref") == 4 and sm.budget_of(art, 3) == 3
    assert sm.budget_of(art, 10) == 4  # never more than the article has
    with pytest.raises(ValueError, match="budget"):
        sm.budget_of(art, 0)


def test_lead_and_random_selection():
    assert sm.lead_selection(10, 3) == [0, 1, 2]
    assert sm.lead_selection(2, 3) == [0, 1]
    a = sm.random_selection(20, 5, sm.article_rng("business/001"))
    b = sm.random_selection(20, 5, sm.article_rng("business/001"))
    c = sm.random_selection(20, 5, sm.article_rng("business/002"))
    assert a == b and a == sorted(a) and len(set(a)) == 5 and a != c
    arts = [sm.Article(f"x/{i}", tuple(f"S{j}." for j in range(6)), ("S0.",), (0,))
            for i in range(3)]
    assert sm.select_all(arts, "lead", 3) == [[0, 1, 2]] * 3
    assert sm.select_all(arts, "lead", "ref") == [[0]] * 3
    with pytest.raises(ValueError, match="Eq8Selector"):
        sm.select_all(arts, "sent_emb", 3)


def test_rouge_wrapper_hand_values():
    r = sm.rouge_f1(["the cat sat", "dogs bark loudly", "a b c"],
                    ["the cat ran", "dogs bark loudly", "x y z"])
    assert r["rouge1"] == pytest.approx([2 / 3, 1.0, 0.0])
    assert r["rouge2"] == pytest.approx([0.5, 1.0, 0.0])
    with pytest.raises(ValueError, match="references"):
        sm.rouge_f1(["a"], [])
    art = sm.Article("x/1", ("The cat sat.", "Dogs bark."), ("Dogs bark.",), (1,))
    s = sm.score_selections([art, art], [[1], [0]])
    assert s["r1"] == pytest.approx(50.0) and s["len"] == 2.5 and s["articles"] == 2


def test_eq8_selection_prefers_the_covering_sentence(ws):
    sents = ["apple banana.", "car truck.", "apple banana car truck."]
    sel = sm.Eq8Selector(ws)
    u = {w: ws.unit[ws.index[w]] for w in ("apple", "banana", "car", "truck")}
    facets = np.stack([np.stack([u["apple"], u["banana"], u["apple"], u["banana"]]),
                       np.stack([u["car"], u["truck"], u["car"], u["truck"]]),
                       np.stack([u["apple"], u["banana"], u["car"], u["truck"]])])
    assert sel.select(sents, 1, "facets", facets) == [2]
    assert len(sel.select(sents, 2, "facets", facets)) == 2
    assert sel.select(sents, 1, "sent_emb") in ([0], [1], [2])
    # W Emb divides the gain by the length: a short sentence can win
    assert len(sel.select(sents, 2, "w_emb")) == 2
    with pytest.raises(ValueError, match="facets"):
        sel.select(sents, 1, "facets", facets[:2])


def test_sentence_facets_per_article(random_encoder):
    arts = [sm.Article("a/1", ("One cat.", "Two dogs."), ("One cat.",), (0,)),
            sm.Article("a/2", ("Two dogs.",), ("Two dogs.",), (0,))]
    f = sm.sentence_facets(random_encoder, arts)
    assert f[0].shape == (2, 3, 50) and f[1].shape == (1, 3, 50)
    assert np.allclose(f[0][1], f[1][0])


# ------------------------------------------------------------------------------ similarity
def test_weighted_averages(ws, random_encoder):
    av = fs.WeightedAverager(ws)
    one = av.embed(["cat"], "avg")[0]
    assert np.allclose(one, ws.vectors[ws.index["cat"]])
    two = av.embed(["the cat", "qqxzv"], "prob_avg")
    w = av.weights([ws.index["the"], ws.index["cat"]], "prob_avg")
    assert w[0] < w[1]  # "the" is more frequent: a smaller α / (α + p(w))
    expected = (w[0] * ws.vectors[ws.index["the"]] + w[1] * ws.vectors[ws.index["cat"]]) / w.sum()
    assert np.allclose(two[0], expected) and not two[1].any()
    imp = av.embed(["the cat sat"], "avg", random_encoder)
    assert imp.shape == (1, 50) and np.isfinite(imp).all()
    with pytest.raises(ValueError, match="scheme"):
        av.weights([1], "tfidf")


def test_first_component_removal_and_low_half():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 5)) * 0.1 + np.array([3.0, 0, 0, 0, 0])
    u = fs.first_component(x)
    assert abs(abs(u[0]) - 1) < 1e-2
    y = fs.remove_component(x, u)
    assert np.allclose(y @ u, 0, atol=1e-9)
    gold = np.array([0.0, 1, 2, 3, 4, 5])
    r = fs.pearson_all_low(np.array([0.0, 2, 1, 3, 4, 5]), gold)
    assert r["all"] > r["low"] and r["low"] == pytest.approx(50.0)


def test_turney_pair_scores_layout(random_encoder):
    items = [TurneyItem("heart attack", "infarction", ("heart", "attack"),
                        ("cat", "road", "blue", "song")),
             TurneyItem("hard disk", "drive", ("hard", "disk"), ("apple", "sea", "run", "tax"))]
    calls = []

    def score(a, b):
        calls.append((list(a), list(b)))
        return np.array([1.0 if (x, y) in {("heart attack", "infarction"), ("hard disk", "drive")}
                         else 0.0 for x, y in zip(a, b, strict=True)])

    s = fs.turney_pair_scores(score, items, with_reversed=True)
    assert s.shape == (2, 10) and tie_aware_accuracy(s) == 1.0
    assert calls[0][0][10] == "attack heart" and calls[0][1][10] == "infarction"
    assert fs.turney_pair_scores(score, items, with_reversed=False).shape == (2, 5)
    sc = fs.turney_pair_scores(random_encoder.sc_similarity, items, with_reversed=True)
    assert sc.shape == (2, 10) and np.all(sc <= 0)


# ------------------------------------------------------------------------------ shared data
@pytest.mark.shared
def test_shared_hypenet(shared_data):
    lex = hn.load_hypenet(shared_data)
    assert len(lex) == 6610 and sum(p.label for p in lex) == 1322
    assert lex[0] == hn.HypernymPair("menheniot", "village", True)
    assert len(hn.load_hypenet(shared_data, "rnd")) == 17670


@pytest.mark.shared
def test_shared_bbc_summaries(shared_data):
    assert len(sm.load_duplicates(shared_data)) == 98
    arts = sm.load_bbc_summaries(shared_data, limit=5)
    assert [a.id for a in arts][:2] == ["business/001", "business/002"]
    first = arts[0]
    assert first.sentences[0].startswith("Quarterly profits at US media giant TimeWarner")
    assert not any(s.startswith("Ad sales boost") for s in first.sentences)  # no title
    assert all(0 <= i < len(a.sentences) for a in arts for i in a.reference_units)
    assert all(a.unaligned == 0 and a.budget == len(a.reference_units) for a in arts)
    assert 0 in first.reference_units  # the lead sentence is in business/001's summary


@pytest.mark.shared
def test_shared_stsb_splits(shared_data):
    data = fs.load_stsb_splits(shared_data)
    assert {k: len(v[2]) for k, v in data.items()} == {"train": 5749, "dev": 1500,
                                                       "test": 1379}
