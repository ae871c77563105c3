"""Hybrid matching: candidates from the embedding and from character n-grams, each pair scored
by a small learned combiner into a calibrated match probability.

No single signal wins everywhere: embeddings find aliases, character n-grams find typos and
abbreviations, string ratios and token overlap tell "1998 season" from "1999 season". As in
record-linkage tools (dedupe, Splink), the candidates of both searches are united (blocking),
every pair gets the features of :mod:`phrasekit.similarity.features`, and a logistic regression
trained on labelled joins (``benchmarks/matching/train_hybrid.py``; ``similarity.combiner``) turns
them into the probability that the candidate is the query's match.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
from tqdm.auto import tqdm

from phrasekit.encoders.base import nfc
from phrasekit.similarity.combiner import SCORERS as SCORERS
from phrasekit.similarity.combiner import Combiner
from phrasekit.similarity.combiner import shipped_combiner as shipped_combiner
from phrasekit.similarity.features import (
    CharNgrams,
    pair_features,
    query_context,
    row_dots,
    token_idf,
)
from phrasekit.threads import compute_threads

logger = logging.getLogger(__name__)

#: Candidates per query from each search (the embedding's and the character n-grams').
K_EMBED = 10
K_CHAR = 10
#: Right rows scored at a time (bounds the memory of the candidates' features).
CHUNK = 20_000
#: Unrelated names scored beside a left table of one distinct value, and never returned: the
#: combiner weighs a candidate against the query's other candidates (rank, margin), which such
#: a table lacks, so without them any right value would look like its sure match.
BACKGROUND = ("Lake Victoria", "Johann Sebastian Bach", "Toyota Corolla", "photosynthesis",
              "Mount Kilimanjaro", "Brazilian real", "The Great Gatsby", "Apollo 11",
              "Siemens AG", "Queensland", "red panda", "World Health Organization",
              "Harvard University", "Sydney Opera House", "Premier League", "insulin",
              "Vincent van Gogh", "Boeing 747", "Danube", "Nobel Prize in Physics")


@dataclass
class Candidates:
    """Candidate pairs grouped by query: query and left positions, both cosines, features."""

    query: np.ndarray
    left: np.ndarray
    features: np.ndarray


def _union(emb_ids: np.ndarray, char_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(query, left) pairs of both searches' candidates, each once, sorted by query."""
    n = len(emb_ids)
    q = np.repeat(np.arange(n), emb_ids.shape[1] + char_ids.shape[1])
    left = np.concatenate([emb_ids, char_ids], axis=1).ravel()
    keep = left >= 0
    pairs = np.unique(np.stack([q[keep], left[keep]], axis=1), axis=0)
    return pairs[:, 0], pairs[:, 1]


def find_candidates(
    left_texts: list[str], right_texts: list[str], left_vecs: np.ndarray,
    right_vecs: np.ndarray, emb_ids: np.ndarray, k_char: int = K_CHAR,
    ngrams: CharNgrams | None = None, idf: dict[str, float] | None = None,
) -> Candidates:
    """Unite the embedding's candidates ``emb_ids`` (n_right, k) with the character n-gram
    search's top ``k_char`` and compute every pair's :data:`FEATURES`.

    ``ngrams`` and ``idf`` (fitted on ``left_texts``) may be passed to reuse them across calls.
    """
    ngrams = ngrams if ngrams is not None else CharNgrams().fit(left_texts)
    idf = idf if idf is not None else token_idf(left_texts)
    workers = compute_threads()  # the n-gram search's and rapidfuzz's threads
    right_tfidf = ngrams.transform(right_texts)
    _, char_ids = (ngrams.search(right_tfidf, k_char, workers=workers) if k_char > 0
                   else (None, emb_ids[:, :0]))
    query, left = _union(emb_ids, char_ids)
    emb_cos = np.einsum("ij,ij->i", right_vecs[query], left_vecs[left]).astype(np.float32)
    char_cos = row_dots(right_tfidf[query], ngrams.left_[left])
    q_texts = [right_texts[i] for i in query]
    c_texts = [left_texts[j] for j in left]
    pair = pair_features(q_texts, c_texts, emb_cos, char_cos, idf, workers=workers)
    context = query_context(query, emb_cos, char_cos)
    return Candidates(query, left, np.hstack([pair, context]))


def top_by_probability(
    cands: Candidates, prob: np.ndarray, n_queries: int, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """Each query's ``k`` candidates of highest probability: (probs, left ids), best first;
    -1 / 0 where a query has fewer candidates."""
    ids = np.full((n_queries, k), -1, dtype=np.int64)
    probs = np.zeros((n_queries, k), dtype=np.float32)
    order = np.lexsort((cands.left, -prob, cands.query))
    q_sorted = cands.query[order]
    starts = np.r_[0, np.flatnonzero(np.diff(q_sorted)) + 1]
    pos = np.arange(len(order)) - np.repeat(starts, np.diff(np.r_[starts, len(order)]))
    keep = pos < k
    ids[q_sorted[keep], pos[keep]] = cands.left[order][keep]
    probs[q_sorted[keep], pos[keep]] = prob[order][keep]
    return probs, ids


@dataclass
class LeftSide:
    """What the hybrid scorer learns of the left values once: their distinct texts (a value
    that repeats, such as a homonym's name, is one candidate, scored once for all its rows),
    n-gram tf-idf and word idf."""

    texts: list[str]
    ngrams: CharNgrams
    idf: dict[str, float]
    value_of: np.ndarray  # left row -> its value in ``texts``

    @classmethod
    def fit(cls, texts: list[str]) -> LeftSide:
        """Fit both on the distinct ``texts`` (in Unicode's composed form, as encoders read
        them), numbered in order of first appearance (not sorted, as ``encoders.base.distinct``
        numbers them), so that without repeats value i is row i and nothing is re-mapped."""
        ids: dict[str, int] = {}
        rows = nfc(list(texts))
        value_of = np.fromiter((ids.setdefault(t, len(ids)) for t in rows), np.int64,
                               count=len(rows))
        values = list(ids)
        return cls(values, CharNgrams().fit(values), token_idf(values), value_of)

    def first_rows(self) -> np.ndarray:
        """Each value's first left row."""
        first = np.empty(len(self.texts), dtype=np.int64)
        first[self.value_of[::-1]] = np.arange(len(self.value_of))[::-1]
        return first

    def rows_of(self, probs: np.ndarray, values: np.ndarray, k: int
                ) -> tuple[np.ndarray, np.ndarray]:
        """Each query's ``k`` best (probability, left row) from its best values (``values``:
        (n, k) ids, -1 for none): a repeated value gives each of its rows in order."""
        if len(self.texts) == len(self.value_of):  # no value repeats: value i is row i
            return probs, values
        order = np.argsort(self.value_of, kind="stable")  # rows grouped by value
        counts = np.bincount(self.value_of, minlength=len(self.texts))
        starts = np.cumsum(counts) - counts
        valid = values >= 0
        query = np.repeat(np.arange(len(values)), values.shape[1]).reshape(values.shape)[valid]
        value, prob = values[valid], probs[valid]
        reps = np.minimum(counts[value], k)
        query, prob = np.repeat(query, reps), np.repeat(prob, reps)
        offsets = np.arange(int(reps.sum())) - np.repeat(np.cumsum(reps) - reps, reps)
        rows = order[np.repeat(starts[value], reps) + offsets]
        first = np.r_[0, np.flatnonzero(np.diff(query)) + 1]
        pos = np.arange(len(query)) - np.repeat(first, np.diff(np.r_[first, len(query)]))
        keep = pos < k
        out_p = np.zeros((len(values), k), dtype=np.float32)
        out_r = np.full((len(values), k), -1, dtype=np.int64)
        out_p[query[keep], pos[keep]] = prob[keep]
        out_r[query[keep], pos[keep]] = rows[keep]
        return out_p, out_r


def _with_background(side: LeftSide, value_vecs: np.ndarray, emb_values: np.ndarray,
                     encode: Callable[[list[str]], np.ndarray]
                     ) -> tuple[LeftSide, np.ndarray, np.ndarray]:
    """``side`` of one value padded with :data:`BACKGROUND` names (every query's candidates
    too); the values past the real ones are to be dropped from the results."""
    extra = [t for t in BACKGROUND if t not in side.texts]
    texts = side.texts + extra
    vecs = np.vstack([value_vecs, np.asarray(encode(extra), dtype=value_vecs.dtype)])
    ids = np.arange(len(side.texts), len(texts))
    emb_values = np.hstack([emb_values, np.broadcast_to(ids, (len(emb_values), len(ids)))])
    padded = replace(side, texts=texts, ngrams=CharNgrams().fit(texts), idf=token_idf(texts))
    return padded, vecs, emb_values


def hybrid_top_k(
    left: list[str] | LeftSide, right: list[str], left_vecs: np.ndarray, right_vecs: np.ndarray,
    emb_ids: np.ndarray, k: int, combiner: Combiner, show_progress: bool = False,
    encode: Callable[[list[str]], np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(probabilities, left ids) of each right value's ``k`` most probable matches among the
    embedding's candidates ``emb_ids`` and the character n-grams', in chunks of right rows.
    ``encode`` (the encoder's): a left side of one distinct value is scored beside
    :data:`BACKGROUND` names."""
    if isinstance(left, LeftSide):
        side = left
    else:  # about 40 s for 1M values, before the first chunk's bar
        logger.info("hybrid scoring: character n-grams and word idf of %d left values",
                    len(left))
        side = LeftSide.fit(left)
    right = nfc(list(right))
    repeats = len(side.texts) < len(side.value_of)  # else values are rows: no copy of vectors
    value_vecs = left_vecs[side.first_rows()] if repeats else left_vecs
    emb_values = np.where(emb_ids >= 0, side.value_of[emb_ids.clip(0)], -1) if repeats \
        else emb_ids
    scored = side
    if len(side.texts) == 1 and encode is not None:
        scored, value_vecs, emb_values = _with_background(side, value_vecs, emb_values, encode)
    probs = np.zeros((len(right), k), dtype=np.float32)
    ids = np.full((len(right), k), -1, dtype=np.int64)
    for s in tqdm(range(0, len(right), CHUNK), desc="score[hybrid]", unit="chunk",
                  disable=not show_progress, leave=False):
        e = min(s + CHUNK, len(right))
        cands = find_candidates(scored.texts, right[s:e], value_vecs, right_vecs[s:e],
                                emb_values[s:e], ngrams=scored.ngrams, idf=scored.idf)
        prob = combiner.predict(cands.features)
        if scored is not side:  # the background names are scored, never returned
            real = cands.left < len(side.texts)
            cands = Candidates(cands.query[real], cands.left[real], cands.features[real])
            prob = prob[real]
        probs[s:e], ids[s:e] = side.rows_of(*top_by_probability(cands, prob, e - s, k), k)
    return probs, ids
