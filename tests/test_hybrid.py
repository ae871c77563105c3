"""The hybrid matcher: pair features, character n-gram blocking, the combiner's JSON round trip,
and the hybrid scorer as the default of the join, the index query and the CLI."""

from __future__ import annotations

import csv
import inspect
import json
import logging
import re
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from phrasekit.cli import app
from phrasekit.encoders import CharNgramEncoder
from phrasekit.similarity import EntityIndex, fuzzy_join, read_column
from phrasekit.similarity.features import (
    FEATURES,
    PAIR_FEATURES,
    CharNgrams,
    pair_features,
    query_context,
    token_idf,
)
from phrasekit.similarity.hybrid import Combiner, shipped_combiner
from phrasekit.similarity.join import default_threshold

TABLE = Path(__file__).parent / "fixtures" / "eval" / "autofj" / "Galaxy"


def _feature(rows: np.ndarray, name: str) -> np.ndarray:
    return rows[:, PAIR_FEATURES.index(name)]


def test_pair_features_numbers_initials_and_overlap():
    idf = token_idf(["1998 FIFA World Cup", "1999 FIFA World Cup", "Bank of England"])
    q = ["1998 FIFA World Cup", "1998 FIFA World Cup", "BoE", "bank of england"]
    c = ["1998 FIFA World Cup", "1999 FIFA World Cup", "Bank of England", "Bank of England"]
    rows = pair_features(q, c, np.zeros(4), np.zeros(4), idf)
    assert rows.shape == (4, len(PAIR_FEATURES)) and rows.dtype == np.float32
    assert _feature(rows, "num_agree").tolist() == [1, 0, 0, 0]
    assert _feature(rows, "num_conflict").tolist() == [0, 1, 0, 0]
    assert _feature(rows, "exact").tolist() == [1, 0, 0, 1]   # case and punctuation aside
    assert _feature(rows, "initials")[2] == 1                # "boe" = B(ank) o(f) E(ngland)
    assert _feature(rows, "idf_jaccard")[0] == pytest.approx(1.0)
    assert 0 < _feature(rows, "idf_jaccard")[1] < 1
    assert (rows[:, 2:7] >= 0).all() and (rows[:, 2:7] <= 1).all()  # rapidfuzz scaled to 0-1
    roman = pair_features(["Walter V", "Walter V", "Civic Centre"], ["Walter III", "Walter v",
                          "Civic Center"], np.zeros(3), np.zeros(3), idf)
    assert _feature(roman, "num_conflict").tolist() == [1, 0, 0]  # "civic" is no numeral
    assert _feature(roman, "num_agree").tolist() == [0, 1, 0]


def test_query_context_ranks_gaps_and_margins():
    group = np.array([0, 0, 0, 1])
    emb = np.array([0.9, 0.5, 0.7, 0.3], dtype=np.float32)
    char = np.array([0.1, 0.8, 0.2, 0.6], dtype=np.float32)
    ctx = query_context(group, emb, char)
    names = ("emb_rank", "char_rank", "emb_gap", "char_gap", "emb_margin", "char_margin",
             "n_cands")
    col = {n: ctx[:, i] for i, n in enumerate(names)}
    assert np.exp(col["emb_rank"]).round().tolist() == [1, 3, 2, 1]
    assert np.allclose(col["emb_gap"], [0, -0.4, -0.2, 0])
    assert np.allclose(col["emb_margin"], [0.2, -0.4, -0.2, 1.0])  # a lone candidate: 1
    assert np.allclose(col["char_margin"][:3], [-0.7, 0.6, -0.6])
    assert np.exp(col["n_cands"]).round().tolist() == [3, 3, 3, 1]


def test_char_ngram_search_finds_typos_the_left_side_holds():
    left = ["Andromeda Galaxy", "Triangulum Galaxy", "Whirlpool Galaxy", "Milky Way"]
    ngrams = CharNgrams().fit(left)
    scores, ids = ngrams.search(ngrams.transform(["Andromeda Galxay", "Whirlpol galaxy"]), k=2)
    assert ids[:, 0].tolist() == [0, 2] and (scores[:, 0] > scores[:, 1]).all()
    _, none = ngrams.search(ngrams.transform(["qqq"]), k=2)
    assert none.tolist() == [[-1, -1]]   # no shared n-gram: no candidate


def _galaxy_titles() -> list[str]:
    with (TABLE / "left.csv").open(encoding="utf-8", newline="") as fh:
        return [row["title"] for row in csv.DictReader(fh)]


def test_char_ngram_search_on_threads_equals_one_thread():
    left = _galaxy_titles()
    ngrams = CharNgrams().fit(left)
    queries = ngrams.transform([t[::-1] for t in left[:40]] + left[40:90])
    one = ngrams.search(queries, k=5, chunk=7)
    two = ngrams.search(queries, k=5, chunk=7, workers=2)
    assert all(np.array_equal(a, b) for a, b in zip(one, two, strict=True))


def test_char_ngram_search_equals_a_dense_search_ties_by_lowest_row():
    titles = _galaxy_titles()
    left = [t for t in titles[:60] for _ in range(3)]  # each title thrice: ties at every cut
    rng = np.random.default_rng(1)
    left = [left[i] for i in rng.permutation(len(left))]
    ngrams = CharNgrams(max_df=1.0, min_df_cap=len(left)).fit(left)
    queries = ngrams.transform([*titles[:60][::-1], "Andromeda galxy", "qqq"])
    scores, ids = ngrams.search(queries, k=4, chunk=5)
    dense = (queries @ ngrams.left_.T).toarray()
    for row, (got_ids, got_scores) in enumerate(zip(ids, scores, strict=True)):
        hits = np.flatnonzero(dense[row] > 0)
        want = hits[np.lexsort((hits, -dense[row][hits].round(5)))][:4]
        assert got_ids[: len(want)].tolist() == want.tolist(), row
        assert np.allclose(got_scores[: len(want)], dense[row][want], atol=1e-6)
        assert (got_ids[len(want):] == -1).all()


def test_compiled_tree_walk_equals_the_numpy_walk_on_real_pairs():
    left = _galaxy_titles()
    n = 24
    queries = [t.replace("Galaxy", "galaxy") for t in left[:n // 3] for _ in range(3)]
    cands = [left[(i * 7) % len(left)] for i in range(n)]
    cos = np.linspace(0.2, 0.95, n, dtype=np.float32)
    pair = pair_features(queries, cands, cos, cos[::-1].copy(), token_idf(left))
    x = np.hstack([pair, query_context(np.arange(n) // 3, cos, cos[::-1].copy())])
    comb = shipped_combiner("pearl-minilm")
    fast = comb.predict(x)
    assert comb._compiled, "this scikit-learn's compiled tree walk was not used"
    reference = 1 / (1 + np.exp(-comb._tree_sum(x.astype(np.float64))))
    assert np.allclose(fast, reference, atol=1e-6) and fast.std() > 0.05


def test_logistic_combiner_round_trip_and_damage_named(tmp_path):
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    rng = np.random.default_rng(0)
    x = rng.normal(size=(300, len(FEATURES))).astype(np.float32)
    y = (x[:, 0] + 0.5 * x[:, 3] > 0).astype(int)
    fitted = make_pipeline(StandardScaler(), LogisticRegression()).fit(x, y)
    comb = Combiner.from_estimator(fitted, "m", 0.42, {"pairs": 300})
    path = tmp_path / "c.json"
    comb.save(path)
    back = Combiner.load(path)
    assert np.allclose(back.predict(x), fitted.predict_proba(x)[:, 1], atol=1e-5)
    assert back.threshold == 0.42 and back.kind == "logistic"
    data = json.loads(path.read_text())
    data["params"]["scale"][3] = 0
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=r"c\.json: field 'params\.scale'"):
        Combiner.load(path)
    data["features"] = data["features"][:-1]
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="field 'features'"):
        Combiner.load(path)


def test_tree_combiner_reproduces_scikit_learn_and_refuses_damage(tmp_path):
    from safetensors.numpy import load_file, save_file
    from sklearn.ensemble import HistGradientBoostingClassifier

    rng = np.random.default_rng(1)
    x = rng.normal(size=(400, len(FEATURES)))
    y = ((x[:, 0] > 0.2) ^ (x[:, 5] * x[:, 1] > 0)).astype(int)
    fitted = HistGradientBoostingClassifier(max_iter=30, random_state=0).fit(x, y)
    comb = Combiner.from_estimator(fitted, "m", 0.5)
    assert np.allclose(comb.predict(x), fitted.predict_proba(x)[:, 1], atol=1e-5)
    path = tmp_path / "t.json"
    comb.save(path)
    back = Combiner.load(path)
    assert back.kind == "trees"
    assert np.allclose(back.predict(x), fitted.predict_proba(x)[:, 1], atol=1e-5)
    arrays = load_file(str(path.with_suffix(".safetensors")))
    arrays["left"][0] = 0  # the root's left child is itself: a walk that never ends
    save_file(arrays, str(path.with_suffix(".safetensors")))
    with pytest.raises(ValueError, match="inconsistent"):
        Combiner.load(path)
    path.with_suffix(".safetensors").write_bytes(b"junk")
    with pytest.raises(ValueError, match="cannot be read"):
        Combiner.load(path)


def test_shipped_combiner_is_trained_and_calibrated_to_a_probability(caplog):
    comb = shipped_combiner("pearl-minilm")
    assert comb.model == "pearl-minilm" and 0 < comb.threshold < 1
    assert comb.info["pairs"] > 10_000 and "dev half" in comb.info["trained_on"]
    shipped_combiner.cache_clear()
    with caplog.at_level(logging.WARNING):
        other = shipped_combiner("no-such-model")
    assert "no hybrid combiner was trained" in caplog.text and other.model == "pearl-minilm"
    caplog.clear()
    with caplog.at_level(logging.WARNING):  # the same weights at another precision
        for name in ("pearl-minilm@bf16", "pearl-minilm@int8"):
            assert shipped_combiner(name).threshold == comb.threshold
    assert not caplog.text
    assert default_threshold("pearl-minilm@bf16", "cosine") == \
        default_threshold("pearl-minilm", "cosine") is not None


def test_hybrid_is_the_default_scorer_everywhere():
    assert inspect.signature(fuzzy_join).parameters["scorer"].default == "hybrid"
    assert inspect.signature(EntityIndex.query).parameters["scorer"].default == "hybrid"
    helptext = " ".join(re.sub("[│╭╮╰╯─]", " ",
                               CliRunner().invoke(app, ["join", "--help"]).output).split())
    assert "--scorer <str> hybrid:" in helptext and "alone. [default: hybrid]" in helptext
    assert f"hybrid {shipped_combiner('pearl-minilm').threshold:.2f}" in helptext


def test_hybrid_join_returns_probabilities_and_beats_a_typo():
    enc = CharNgramEncoder()
    left = read_column(TABLE / "left.csv", "title")
    right = [(0, "Andromeda Galxy"), (1, "M31"), (2, "Triangulum galaxy")]
    matches = fuzzy_join(left, right, enc, k=2)
    assert all(0.0 <= m.score <= 1.0 for m in matches)
    top = {m.right_row: m for m in matches if m.rank == 1}
    assert top[0].left_value == "Andromeda Galaxy" and top[0].score > 0.5
    cos = fuzzy_join(left, right, enc, k=1, scorer="cosine")
    assert {m.right_row: m.left_value for m in cos}[0] == "Andromeda Galaxy"
    with pytest.raises(ValueError, match="probability"):
        fuzzy_join(left, right, enc, threshold=-0.5)
    with pytest.raises(ValueError, match="scorer must be"):
        fuzzy_join(left, right, enc, scorer="magic")


def test_index_query_hybrid_and_cosine(minilm):
    names = [v for _, v in read_column(TABLE / "left.csv", "title")]
    ent = EntityIndex.build(names, minilm)
    hyb = ent.query(["Andromeda Galxy"], k=3)[0]
    assert hyb[0][0] == "Andromeda Galaxy" and 0 <= hyb[-1][2] <= hyb[0][2] <= 1
    cos = ent.query(["Andromeda Galxy"], k=3, scorer="cosine")[0]
    assert len(cos) == 3 and cos[0][2] <= 1.0


def test_join_cli_scorer_and_threshold_scale(tmp_path):
    out = tmp_path / "m.csv"
    base = ["join", str(TABLE / "left.csv"), str(TABLE / "right.csv"), "--left-on", "title",
            "--right-on", "title", "--out", str(out), "--model", "minilm", "--quiet"]
    res = CliRunner().invoke(app, base)
    assert res.exit_code == 0, res.output
    thr = default_threshold("minilm", "hybrid")
    scores = [float(r["score"]) for r in csv.DictReader(out.open(encoding="utf-8"))]
    assert scores and min(scores) >= thr and f"hybrid, threshold {thr:g}" in res.output
    bad = CliRunner().invoke(app, [*base, "--threshold", "-0.2"])
    assert bad.exit_code == 2 and "match probability in [0, 1]" in bad.output
    assert CliRunner().invoke(app, [*base, "--scorer", "cosine", "--threshold", "-0.2"]
                              ).exit_code == 0
    bad = CliRunner().invoke(app, [*base, "--scorer", "nope"])
    assert bad.exit_code == 2 and "--scorer must be one of hybrid, cosine" in bad.output


def test_char_ngrams_equal_scikit_learns_char_wb_tfidf():
    from sklearn.feature_extraction.text import TfidfVectorizer

    left = [*_galaxy_titles(), "", "a", "ab", "  Two   spaces\tand tab ", "Zürich ÉCOLE", "aaaa"]
    queries = ["Andromeda Galxay", "", "qqq", "zürich", "a b", "NGC 224  (M31)"]
    ours = CharNgrams().fit(left)
    ref = TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 4), sublinear_tf=True,
                          dtype=np.float32)
    want = ref.fit_transform(left)
    assert ours.vocabulary_ == ref.vocabulary_
    for got, expected in ((ours.left_, want), (ours.transform(queries), ref.transform(queries))):
        assert got.dtype == expected.dtype == np.float32
        assert abs(got - expected).max() <= 1e-7


def test_repeated_left_values_share_one_score(minilm):
    once = fuzzy_join(["Los Angeles", "Rome"], ["Los Angeles CA"], minilm, threshold=None)
    twice = fuzzy_join(["Rome", "Los Angeles", "Los Angeles"], ["Los Angeles CA"], minilm,
                       k=3, threshold=None)
    assert [(m.left_row, m.rank) for m in twice] == [(1, 1), (2, 2), (0, 3)]
    assert twice[0].score == twice[1].score == pytest.approx(once[0].score, abs=1e-5)
    homonyms = EntityIndex.build(["Los Angeles", "Los Angeles", "Rome"], minilm,
                                 ids=["city", "county", "r"]).query(["Los Angeles CA"], k=2)[0]
    assert [i for _, i, _ in homonyms] == ["city", "county"]
    assert homonyms[0][2] == homonyms[1][2] == pytest.approx(once[0].score, abs=1e-5)


def test_a_one_value_left_table_is_weighed_against_unrelated_names(minilm):
    matches = fuzzy_join(["Paris"], ["Tokyo", "banana bread", "Paris, France"], minilm,
                         threshold=None)
    score = {m.right_value: m.score for m in matches}
    assert score["Paris, France"] > 0.5 > max(score["Tokyo"], score["banana bread"])
    assert {m.left_value for m in matches} == {"Paris"}  # the background names never return
    kept = fuzzy_join(["Paris"], ["Tokyo", "Paris, France"], minilm)  # the default threshold
    assert [m.right_value for m in kept] == ["Paris, France"]
