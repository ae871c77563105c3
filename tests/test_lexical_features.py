"""The hybrid matcher's lexical pair features, computed as arrays, against their per-pair
definitions written out plainly here (the reference), on real names and on edge cases."""

from __future__ import annotations

import csv
import gc
from pathlib import Path

import numpy as np
from rapidfuzz import fuzz
from rapidfuzz.distance import JaroWinkler

from phrasekit.similarity.features import (
    PAIR_FEATURES,
    Parsed,
    pair_features,
    paused_gc,
    token_idf,
)

TABLE = Path(__file__).parent / "fixtures" / "eval" / "autofj" / "Galaxy"


def _overlap(qs, cs, weight):
    shared = sum(weight[w] for w in qs & cs)
    union = sum(weight[w] for w in qs | cs) or 1.0
    return (shared / union, shared / (sum(weight[w] for w in qs) or 1.0),
            shared / (sum(weight[w] for w in cs) or 1.0))


def _monge_elkan(q, c, weight):
    if not q.words or not c.words:
        return [0.0, 0.0]
    sim = np.array([[JaroWinkler.normalized_similarity(a, b) for b in c.words]
                    for a in q.words])
    wq = np.array([weight[w] for w in q.words])
    wc = np.array([weight[w] for w in c.words])
    return [sim.max(axis=1) @ wq / wq.sum(), sim.max(axis=0) @ wc / wc.sum()]


def _reference(q_text: str, c_text: str, idf: dict[str, float]) -> list[float]:
    """The lexical columns of one pair, by their definitions."""
    q, c = Parsed.of(q_text), Parsed.of(c_text)
    unseen = max(idf.values())
    weight = {w: idf.get(w, unseen) for w in (*q.words, *c.words)}
    qs, cs = q.wordset, c.wordset
    lq, lc = max(len(q.norm), 1), max(len(c.norm), 1)
    both, years = bool(q.numbers and c.numbers), bool(q.years and c.years)
    initials = ((len(c.acronym) > 1 and c.acronym in qs)
                or (len(q.acronym) > 1 and q.acronym in cs))
    qual = (_overlap(q.qualifier, c.qualifier, weight)[0]
            if q.qualifier and c.qualifier else 0.0)
    return [
        *_overlap(qs, cs, weight), min(lq, lc) / max(lq, lc),
        min(len(q.words), len(c.words)) / max(len(q.words), len(c.words), 1),
        q.norm == c.norm, both and q.numbers == c.numbers, both and q.numbers != c.numbers,
        bool(q.numbers) != bool(c.numbers), initials, years and bool(q.years & c.years),
        years and not q.years & c.years, bool(q.base) and q.base == c.base,
        fuzz.ratio(q.base, c.base) / 100.0, qual, bool(q.qualifier) != bool(c.qualifier),
        bool(qs) and bool(cs) and (qs <= cs or cs <= qs), *_monge_elkan(q, c, weight),
    ]


def _check(queries: list[str], cands: list[str], idf: dict[str, float]) -> None:
    got = pair_features(queries, cands, np.zeros(len(queries)), np.zeros(len(queries)), idf)
    first = PAIR_FEATURES.index("idf_jaccard")
    want = np.array([_reference(q, c, idf) for q, c in zip(queries, cands, strict=True)],
                    dtype=np.float32)
    assert got.shape[1] - first == want.shape[1]
    bad = np.argwhere(~np.isclose(got[:, first:], want, rtol=0, atol=1e-6))
    assert not len(bad), [(queries[i], cands[i], PAIR_FEATURES[first + j]) for i, j in bad[:5]]


def test_lexical_features_equal_their_definitions_on_real_names():
    with (TABLE / "left.csv").open(encoding="utf-8", newline="") as fh:
        left = [row["title"] for row in csv.DictReader(fh)]
    rng = np.random.default_rng(0)
    queries, cands = [], []
    for i, name in enumerate(left[:120]):
        noisy = name.upper() if i % 3 == 0 else name.replace("a", "e")[::-1 if i % 7 else 1]
        for j in rng.choice(len(left), 4, replace=False):
            queries.append(noisy)
            cands.append(left[j])
        queries.append(noisy)
        cands.append(name)
    _check(queries, cands, token_idf(left))


def test_lexical_features_equal_their_definitions_on_edge_cases():
    idf = token_idf(["Bank of England", "1998 FIFA World Cup", "Sand Church (Nordland)"])
    pairs = [
        ("", "Bank of England"), ("!!!", "..."), ("BoE", "Bank of England"),
        ("Bank of England", "BoE"), ("Walter V", "Walter III"), ("Walter V", "walter v"),
        ("Nevada caucuses, 2012", "Nevada caucuses, 2008"), ("1998 FIFA World Cup", "1998"),
        ("Sand Church (Nordland)", "Sand Church (Troms)"), ("Sand Church", "Sand Church (x)"),
        ("(Nordland)", "Nordland"), ("the the the", "the"), ("Zürich 1999", "zurich 1999"),
        ("II", "ii"), ("i", "I"), ("civic", "civic centre"), ("a b c", "abc"),
    ]
    _check([q for q, _ in pairs], [c for _, c in pairs], idf)


def test_paused_gc_restores_the_collector():
    assert gc.isenabled()
    with paused_gc():
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with paused_gc():
            pass
        assert not gc.isenabled()  # a collector the caller had paused stays paused
    finally:
        gc.enable()
