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
from dataclasses import dataclass

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
    """What the hybrid scorer learns of the left values once: n-gram tf-idf and word idf."""

    texts: list[str]
    ngrams: CharNgrams
    idf: dict[str, float]

    @classmethod
    def fit(cls, texts: list[str]) -> LeftSide:
        """Fit both on ``texts`` (in Unicode's composed form, as encoders read them)."""
        texts = nfc(list(texts))
        return cls(texts, CharNgrams().fit(texts), token_idf(texts))


def hybrid_top_k(
    left: list[str] | LeftSide, right: list[str], left_vecs: np.ndarray, right_vecs: np.ndarray,
    emb_ids: np.ndarray, k: int, combiner: Combiner, show_progress: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """(probabilities, left ids) of each right value's ``k`` most probable matches among the
    embedding's candidates ``emb_ids`` and the character n-grams', in chunks of right rows."""
    if isinstance(left, LeftSide):
        side = left
    else:  # about 40 s for 1M values, before the first chunk's bar
        logger.info("hybrid scoring: character n-grams and word idf of %d left values",
                    len(left))
        side = LeftSide.fit(left)
    right = nfc(list(right))
    probs = np.zeros((len(right), k), dtype=np.float32)
    ids = np.full((len(right), k), -1, dtype=np.int64)
    for s in tqdm(range(0, len(right), CHUNK), desc="score[hybrid]", unit="chunk",
                  disable=not show_progress, leave=False):
        e = min(s + CHUNK, len(right))
        cands = find_candidates(side.texts, right[s:e], left_vecs, right_vecs[s:e],
                                emb_ids[s:e], ngrams=side.ngrams, idf=side.idf)
        probs[s:e], ids[s:e] = top_by_probability(cands, combiner.predict(cands.features),
                                                  e - s, k)
    return probs, ids
