"""Pair features of the hybrid matcher, and the character n-gram search that finds candidates.

A fuzzy join compares a query (a right value) with candidates (left values). Embeddings catch
paraphrases and aliases; character n-grams catch typos, abbreviations and word order; string
ratios, IDF-weighted token overlap, numbers and initials catch what both miss ("1998 season"
against "1999 season"). :func:`pair_features` computes them all for (query, candidate) pairs,
and :func:`query_context` adds what a candidate is worth among the query's other candidates
(its rank and its margin), as record-linkage tools compare the best candidate with the rest.
:data:`FEATURES` names the columns, in order, that the combiner reads.
"""

from __future__ import annotations

import gc
import math
from collections import Counter
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
from scipy import sparse

from phrasekit.similarity.lexical import Parsed, lexical_features
from phrasekit.similarity.lexical import normalise as normalise
from phrasekit.similarity.lexical import split_qualifier as split_qualifier
from phrasekit.text import TokenDocs

#: Columns of :func:`pair_features` then :func:`query_context`, in order.
PAIR_FEATURES = (
    "emb_cos", "char_cos", "ratio", "token_set", "token_sort", "partial", "jaro_winkler",
    "idf_jaccard", "idf_query_cover", "idf_cand_cover", "len_ratio", "token_len_ratio",
    "exact", "num_agree", "num_conflict", "num_one_side", "initials",
    "year_agree", "year_conflict", "base_exact", "base_ratio", "qual_jaccard", "qual_one_side",
    "contained", "monge_elkan_query", "monge_elkan_cand",
)
CONTEXT_FEATURES = (
    "emb_rank", "char_rank", "emb_gap", "char_gap", "emb_margin", "char_margin", "n_cands",
)
FEATURES = PAIR_FEATURES + CONTEXT_FEATURES


@contextmanager
def paused_gc() -> Iterator[None]:
    """Python's cyclic garbage collector paused: building millions of small containers (the
    parsed texts of a chunk of pairs) otherwise triggers collections that rescan every live
    object, half of the parsing time in a large join. Nothing built here forms a cycle."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@dataclass
class CharNgrams:
    """Character 2-4-gram tf-idf of a join's left values (sublinear tf, idf from the left side).

    ``search`` returns each query's ``k`` left values of highest n-gram cosine: the blocking
    that finds candidates with typos or abbreviations the embedding misses. n-grams in more
    than ``max_df`` of the left values (and more than ``min_df_cap``) are left out of the search
    (not of the cosine): they match nearly everything and make the sparse product dense.
    The searched matrix holds the left values in sorted order (``order_``), so that values
    sharing n-grams sit near each other in memory (1.2-1.45x faster products at 1M names).
    """

    max_df: float = 0.01
    min_df_cap: int = 2000

    def fit(self, left: Sequence[str]) -> CharNgrams:
        """Learn the n-gram vocabulary and idf on ``left``; returns self."""
        from sklearn.feature_extraction.text import TfidfTransformer

        self.word_grams_: dict[str, np.ndarray] = {}
        self.vocabulary_: dict[str, int] = {}
        counts = self._counts(left, grow=True)
        order = np.argsort(np.array(list(self.vocabulary_), dtype=object), kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))  # columns in sorted n-gram order, as scikit-learn's
        self.vocabulary_ = {g: int(rank[i]) for i, g in enumerate(self.vocabulary_)}
        self.word_grams_ = {w: rank[ids] for w, ids in self.word_grams_.items()}
        counts = sparse.csr_matrix((counts.data, rank[counts.indices], counts.indptr),
                                   shape=counts.shape)
        counts.sort_indices()
        self.tfidf_ = TfidfTransformer(sublinear_tf=True)
        self.left_ = self.tfidf_.fit_transform(counts).tocsr()
        df = np.bincount(self.left_.indices, minlength=self.left_.shape[1])
        cap = max(self.min_df_cap, int(self.max_df * self.left_.shape[0]))
        self.search_cols_ = np.flatnonzero(df <= cap)
        self.order_ = np.argsort(np.array(left, dtype=object), kind="stable")
        self.left_t_ = self.left_[self.order_][:, self.search_cols_].T.tocsr()
        return self

    def transform(self, texts: Sequence[str]):  # -> scipy.sparse.csr_matrix
        """Unit-length tf-idf rows of ``texts`` in the left side's vocabulary."""
        counts = self._counts(texts, grow=False)
        counts.sort_indices()
        return self.tfidf_.transform(counts).tocsr()

    def _counts(self, texts: Sequence[str], grow: bool):  # -> scipy.sparse.csr_matrix
        """n-gram counts (float32) of ``texts``: scikit-learn's ``char_wb`` 2-4-grams of the
        lower-cased words, each distinct word's n-grams found once (a million DBpedia names
        hold about 480,000 distinct words), then (texts x words) @ (words x n-grams)."""
        with paused_gc():
            words_of = TokenDocs.of([t.lower().split() for t in texts])
        docs = sparse.csr_matrix((np.ones(len(words_of.ids), np.float32), words_of.ids,
                                  words_of.offsets), shape=(len(words_of), len(words_of.words)))
        grams = [self._grams(w, grow) for w in words_of.words]
        sizes = np.fromiter(map(len, grams), dtype=np.int64, count=len(grams))
        words = sparse.csr_matrix((np.ones(int(sizes.sum()), np.float32),
                                   np.concatenate([np.zeros(0, np.int64), *grams]),
                                   np.r_[0, np.cumsum(sizes)]),
                                  shape=(len(grams), len(self.vocabulary_)))
        return (docs @ words).tocsr()

    def _grams(self, word: str, grow: bool) -> np.ndarray:
        """Column ids of ``word``'s n-grams (repeats kept; unknown ones dropped unless
        ``grow``), cached per word."""
        ids = self.word_grams_.get(word)
        if ids is None:
            vocab = self.vocabulary_
            grams = _char_wb_grams(word)
            if grow:
                ids = np.fromiter((vocab.setdefault(g, len(vocab)) for g in grams), np.int64)
                self.word_grams_[word] = ids
            else:
                ids = np.fromiter((vocab[g] for g in grams if g in vocab), np.int64)
        return ids

    def search(self, queries, k: int, chunk: int = 128, workers: int = 1
               ) -> tuple[np.ndarray, np.ndarray]:
        """Top-``k`` left rows of each query row (tf-idf rows): (scores, ids), best first, -1
        where fewer than ``k`` left values share a searched n-gram with the query. The product
        stays sparse, so memory follows the shared n-grams, not the left table's size; blocks
        of ``chunk`` queries run on ``workers`` threads (scipy's product releases the GIL)."""
        n = queries.shape[0]
        ids = np.full((n, k), -1, dtype=np.int64)
        scores = np.zeros((n, k), dtype=np.float32)
        q_cols = queries[:, self.search_cols_].tocsr()

        def block(s: int) -> None:
            sim = (q_cols[s : s + chunk] @ self.left_t_).tocsr()
            for i in range(sim.shape[0]):
                lo, hi = sim.indptr[i], sim.indptr[i + 1]
                cols, vals = _top_k(self.order_[sim.indices[lo:hi]], sim.data[lo:hi], k)
                ids[s + i, : len(cols)] = cols
                scores[s + i, : len(cols)] = vals

        starts = range(0, n, chunk)
        if workers > 1 and n > chunk:
            with ThreadPoolExecutor(workers) as pool:
                list(pool.map(block, starts))
        else:
            for s in starts:
                block(s)
        return scores, ids


def _char_wb_grams(word: str, low: int = 2, high: int = 4) -> list[str]:
    """The ``low``-``high``-grams of `` word `` (padded with one space each side), as
    scikit-learn's ``char_wb`` analyzer gives them: a padded word no longer than n is one
    n-gram, and no longer ones follow."""
    padded = f" {word} "
    out: list[str] = []
    for n in range(low, high + 1):
        if len(padded) <= n:
            out.append(padded)
            break
        out.extend(padded[i : i + n] for i in range(len(padded) - n + 1))
    return out


def _top_k(cols: np.ndarray, vals: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` highest ``vals`` and their ``cols``, best first; equal values by lowest col
    (also at the cut, so the result does not depend on the order of the input)."""
    if len(vals) > k:
        cut = -np.partition(-vals, k - 1)[k - 1]
        above, tied = np.flatnonzero(vals > cut), np.flatnonzero(vals == cut)
        tied = tied[np.argsort(cols[tied], kind="stable")[: k - len(above)]]
        keep = np.concatenate([above, tied])
        cols, vals = cols[keep], vals[keep]
    order = np.lexsort((cols, -vals))
    return cols[order], vals[order]


def row_dots(a, b) -> np.ndarray:
    """Row-wise dot products of two equally shaped sparse matrices."""
    return np.asarray(a.multiply(b).sum(axis=1), dtype=np.float32).ravel()


def token_idf(left: Sequence[str]) -> dict[str, float]:
    """Smoothed idf of the words of ``left`` (normalised); unseen words get the largest idf."""
    df: Counter[str] = Counter()
    for text in left:
        df.update(set(normalise(text).split()))
    n = len(left)
    return {w: math.log((1 + n) / (1 + c)) + 1.0 for w, c in df.items()}


def _fuzz(queries: list[str], cands: list[str], workers: int) -> np.ndarray:
    """rapidfuzz similarities (0-1) of aligned pairs: ratio, token set, token sort, partial,
    Jaro-Winkler, on lower-cased, punctuation-free strings."""
    from rapidfuzz import fuzz, utils
    from rapidfuzz.distance import JaroWinkler
    from rapidfuzz.process import cpdist

    scorers = (fuzz.ratio, fuzz.token_set_ratio, fuzz.token_sort_ratio, fuzz.partial_ratio,
               JaroWinkler.normalized_similarity)
    out = np.empty((len(queries), len(scorers)), dtype=np.float32)
    for j, scorer in enumerate(scorers):
        vals = cpdist(queries, cands, scorer=scorer, processor=utils.default_process,
                      workers=workers, dtype=np.float32)
        out[:, j] = vals / (1.0 if scorer is JaroWinkler.normalized_similarity else 100.0)
    return out


def pair_features(
    query_texts: Sequence[str], cand_texts: Sequence[str], emb_cos: np.ndarray,
    char_cos: np.ndarray, idf: dict[str, float], workers: int = 1,
) -> np.ndarray:
    """The :data:`PAIR_FEATURES` of aligned (query, candidate) pairs, float32 (n, 26); each
    text is parsed once, the lexical columns computed as arrays (``similarity.lexical``)."""
    n = len(query_texts)
    if n == 0:
        return np.zeros((0, len(PAIR_FEATURES)), dtype=np.float32)
    unseen = max(idf.values(), default=1.0)
    ids: dict[str, int] = {}
    qi = np.fromiter((ids.setdefault(t, len(ids)) for t in query_texts), np.int64, count=n)
    ci = np.fromiter((ids.setdefault(t, len(ids)) for t in cand_texts), np.int64, count=n)
    with paused_gc():
        parsed = [Parsed.of(t) for t in ids]
        lexical = lexical_features(parsed, qi, ci, idf, unseen)
    fuzz_cols = _fuzz(list(query_texts), list(cand_texts), workers)
    return np.column_stack([emb_cos, char_cos, fuzz_cols, lexical]).astype(np.float32)


def _group_rank(group: np.ndarray, score: np.ndarray) -> np.ndarray:
    """1-based rank of each score within its group (best 1, equal scores the same rank;
    ``group`` sorted ascending)."""
    order = np.lexsort((-score, group))
    g, sc = group[order], score[order]
    starts = np.r_[0, np.flatnonzero(np.diff(g)) + 1]
    pos = np.arange(len(order)) - np.repeat(starts, np.diff(np.r_[starts, len(order)]))
    new_value = np.r_[True, (np.diff(g) != 0) | (np.diff(sc) != 0)]
    first = np.maximum.accumulate(np.where(new_value, np.arange(len(order)), 0))
    rank = np.empty(len(order), dtype=np.float32)
    rank[order] = pos[first] + 1
    return rank


def _group_max(group: np.ndarray, score: np.ndarray, starts: np.ndarray) -> np.ndarray:
    return np.maximum.reduceat(score, starts)[np.searchsorted(starts, np.arange(len(group)),
                                                              side="right") - 1]


def query_context(group: np.ndarray, emb_cos: np.ndarray, char_cos: np.ndarray) -> np.ndarray:
    """The :data:`CONTEXT_FEATURES` of pairs grouped by query (``group`` sorted ascending):
    log-rank, gap to the query's best, margin over the best other candidate, and the number
    of candidates, for the embedding and the character cosine."""
    n = len(group)
    if n == 0:
        return np.zeros((0, len(CONTEXT_FEATURES)), dtype=np.float32)
    starts = np.r_[0, np.flatnonzero(np.diff(group)) + 1]
    sizes = np.diff(np.r_[starts, n])
    cols = []
    for score in (emb_cos, char_cos):
        cols.append(np.log(_group_rank(group, score)))
    for score in (emb_cos, char_cos):
        cols.append(score - _group_max(group, score, starts))
    for score in (emb_cos, char_cos):
        best = _group_max(group, score, starts)
        # the best *other* candidate: the second best for the top one, the best for the rest
        masked = np.where(score >= best, -np.inf, score)
        second = _group_max(group, masked, starts)
        ties = np.add.reduceat((score >= best).astype(np.int64), starts)
        ties = np.repeat(ties, sizes)
        other = np.where((score >= best) & (ties == 1), second, best)
        cols.append(np.where(np.isfinite(other), score - other, 1.0))
    cols.append(np.log(np.repeat(sizes, sizes).astype(np.float32)))
    return np.column_stack(cols).astype(np.float32)
