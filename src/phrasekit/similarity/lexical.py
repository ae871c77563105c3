"""The lexical pair features of the hybrid matcher: each text parsed once (``Parsed``: words,
numbers, years, initials, a trailing qualifier), then the features of all pairs as arrays.

A large join scores millions of (query, candidate) pairs; a Python loop over them costs more
than everything else in the scoring. Here every distinct text becomes a row of sparse word
matrices (idf weights, presence; qualifier words; years), every set comparison a row-wise
product of two such matrices, every equality a comparison of interned ids, and the
Monge-Elkan similarity one Jaro-Winkler call over all word pairs followed by grouped maxima.
The columns are ``features.PAIR_FEATURES`` from ``idf_jaccard`` on.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Sequence
from typing import NamedTuple

import numpy as np
from scipy import sparse

from phrasekit.text import TokenDocs

_WORD = re.compile(r"[^\W_]+")
_YEAR = re.compile(r"\b(1[0-9]{3}|20[0-9]{2})\b")
_ROMAN = re.compile(r"^(?=[ivxlc])c{0,3}(xc|xl|l?x{0,3})(ix|iv|v?i{0,3})$")
#: A trailing qualifier: "Sand Church (Nordland)", "Nevada caucuses, 2012".
_QUALIFIER = re.compile(r"\s*(\(([^)]*)\)|,\s*([^,]*))\s*$")


def normalise(text: str) -> str:
    """Lower case, every run of non-alphanumeric characters one space."""
    return " ".join(_WORD.findall(text.lower()))


def _acronym(words: list[str]) -> str:
    return "".join(w[0] for w in words if not w.isdigit()) if len(words) > 1 else ""


def _numbers(words: list[str]) -> set[str]:
    """Digits and Roman numerals (not a lone "i") among ``words``: "Walter V" is not
    "Walter III"."""
    return {w for w in words
            if w.isdigit() or (w != "i" and not w.strip("ivxlc") and _ROMAN.match(w))}


def split_qualifier(text: str) -> tuple[str, str]:
    """(base, qualifier) of a name: the text before a trailing "(...)" or ", ...", and it."""
    m = _QUALIFIER.search(text)
    if not m or m.start() == 0:
        return text, ""
    return text[: m.start()], m.group(2) if m.group(2) is not None else m.group(3)


class Parsed(NamedTuple):
    """What the lexical features read of one text, parsed once however many pairs it is in
    (a named tuple: cheap to build for the millions of texts of a large join)."""

    norm: str
    words: list[str]
    wordset: frozenset[str]
    numbers: frozenset[str]
    years: frozenset[str]
    acronym: str
    base: str
    qualifier: frozenset[str]

    @classmethod
    def of(cls, text: str) -> Parsed:
        """Parse ``text``."""
        norm = normalise(text)
        words = norm.split()
        base, qual = split_qualifier(text)
        return cls(norm, words, frozenset(words), frozenset(_numbers(words)),
                   frozenset(_YEAR.findall(norm)), _acronym(words),
                   normalise(base) if qual or base != text else norm,
                   frozenset(normalise(qual).split()))


def _interned(values: Sequence[Hashable]) -> np.ndarray:
    """An integer id per value, equal ids for equal values."""
    ids: dict[Hashable, int] = {}
    return np.fromiter((ids.setdefault(v, len(ids)) for v in values), dtype=np.int64,
                       count=len(values))


class _Rows:
    """A sparse presence matrix (texts x vocabulary) of one word set per text."""

    def __init__(self, sets: Sequence[Sequence[str]], vocab: dict[str, int]) -> None:
        lengths = np.fromiter((len(s) for s in sets), dtype=np.int64, count=len(sets))
        cols = np.fromiter((vocab[w] for s in sets for w in s), dtype=np.int64,
                           count=int(lengths.sum()))
        indptr = np.r_[0, np.cumsum(lengths)]
        self.matrix = sparse.csr_matrix((np.ones(len(cols)), cols, indptr),
                                        shape=(len(sets), len(vocab)))
        self.matrix.sum_duplicates()
        self.matrix.data[:] = 1.0

    def shared(self, qi: np.ndarray, ci: np.ndarray, weight: np.ndarray | None = None
               ) -> np.ndarray:
        """Per pair (``qi[k]``, ``ci[k]``): the (weighted) number of words both sets hold."""
        both = self.matrix[qi].multiply(self.matrix[ci]).tocsr()
        if weight is None:
            return np.asarray(both.sum(axis=1), dtype=np.float64).ravel()
        return both @ weight

    def totals(self, weight: np.ndarray | None = None) -> np.ndarray:
        """Per text: the (weighted) size of its set."""
        if weight is None:
            return np.diff(self.matrix.indptr).astype(np.float64)
        return self.matrix @ weight

    def holds(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """Whether text ``rows[k]``'s set holds word ``cols[k]`` (False where ``cols[k]`` < 0)."""
        m = self.matrix
        keys = np.repeat(np.arange(m.shape[0], dtype=np.int64), np.diff(m.indptr))
        keys = keys * m.shape[1] + m.indices
        keys.sort()
        if not len(keys):
            return np.zeros(len(rows), dtype=bool)
        asked = rows * m.shape[1] + np.maximum(cols, 0)
        pos = np.minimum(np.searchsorted(keys, asked), len(keys) - 1)
        return (cols >= 0) & (keys[pos] == asked)


def _overlaps(rows: _Rows, weight: np.ndarray, qi: np.ndarray, ci: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Weighted Jaccard, query cover and candidate cover of the pairs' word sets (each
    denominator 1 where its sum is 0)."""
    shared = rows.shared(qi, ci, weight)
    total = rows.totals(weight)
    sq, sc = total[qi], total[ci]
    union = sq + sc - shared
    one = lambda d: np.where(d > 0, d, 1.0)  # noqa: E731
    return shared / one(union), shared / one(sq), shared / one(sc)


def _ratio(a: np.ndarray, b: np.ndarray, floor: int = 0) -> np.ndarray:
    return np.minimum(a, b) / np.maximum(np.maximum(a, b), floor)


def lexical_features(texts: list[Parsed], qi: np.ndarray, ci: np.ndarray,
                     idf: dict[str, float], unseen: float) -> np.ndarray:
    """The lexical columns (``features.PAIR_FEATURES`` from ``idf_jaccard`` on) of pairs of
    ``texts`` (query ``texts[qi[k]]``, candidate ``texts[ci[k]]``), float32 (n, 19); ``idf``
    weighs words, ``unseen`` is the weight of a word it lacks."""
    from rapidfuzz import fuzz
    from rapidfuzz.process import cpdist

    flat = TokenDocs.of([p.words for p in texts])  # each text's word ids, repeats kept
    vocab = {w: i for i, w in enumerate(flat.words)}
    weight = np.fromiter((idf.get(w, unseen) for w in vocab), dtype=np.float64,
                         count=len(vocab))
    words = _Rows([p.wordset for p in texts], vocab)
    quals = _Rows([p.qualifier for p in texts], vocab)
    n_norm = np.fromiter((max(len(p.norm), 1) for p in texts), dtype=np.float64)
    n_words = np.fromiter((len(p.words) for p in texts), dtype=np.float64)
    norm_id = _interned([p.norm for p in texts])
    num_id, base_id = _interned([p.numbers for p in texts]), _interned([p.base for p in texts])
    has_num = np.fromiter((bool(p.numbers) for p in texts), dtype=bool)
    has_base = np.fromiter((bool(p.base) for p in texts), dtype=bool)
    has_qual = np.fromiter((bool(p.qualifier) for p in texts), dtype=bool)
    acronym = np.fromiter((vocab.get(p.acronym, -1) if len(p.acronym) > 1 else -1
                           for p in texts), dtype=np.int64)
    year_ids = dict.fromkeys(y for p in texts for y in p.years)
    years = _Rows([p.years for p in texts], {y: i for i, y in enumerate(year_ids)})
    has_year = years.totals() > 0

    both_num = has_num[qi] & has_num[ci]
    both_year = has_year[qi] & has_year[ci]
    year_shared = years.shared(qi, ci) > 0
    shared_words = words.shared(qi, ci)
    nq, nc = words.totals()[qi], words.totals()[ci]
    qual = np.where(has_qual[qi] & has_qual[ci], _overlaps(quals, weight, qi, ci)[0], 0.0)
    base_ratio = cpdist([texts[i].base for i in qi], [texts[j].base for j in ci],
                        scorer=fuzz.ratio, dtype=np.float64) / 100.0
    cols = [
        *_overlaps(words, weight, qi, ci),
        _ratio(n_norm[qi], n_norm[ci]),
        _ratio(n_words[qi], n_words[ci], floor=1),
        norm_id[qi] == norm_id[ci],
        both_num & (num_id[qi] == num_id[ci]),
        both_num & (num_id[qi] != num_id[ci]),
        has_num[qi] != has_num[ci],
        words.holds(qi, acronym[ci]) | words.holds(ci, acronym[qi]),
        both_year & year_shared,
        both_year & ~year_shared,
        has_base[qi] & (base_id[qi] == base_id[ci]),
        base_ratio,
        qual,
        has_qual[qi] != has_qual[ci],
        (nq > 0) & (nc > 0) & ((shared_words == nq) | (shared_words == nc)),
        *monge_elkan(flat, qi, ci, weight),
    ]
    return np.column_stack(cols).astype(np.float32)


def _grouped(values: np.ndarray, sizes: np.ndarray, op: np.ufunc) -> np.ndarray:
    """``op`` reduced over consecutive groups of ``sizes`` (every size > 0)."""
    return op.reduceat(values, np.r_[0, np.cumsum(sizes)[:-1]]) if len(sizes) else values[:0]


def monge_elkan(flat: TokenDocs, qi: np.ndarray, ci: np.ndarray, weight: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:
    """IDF-weighted Monge-Elkan similarity of each pair, both ways: each word's best
    Jaro-Winkler match among the other side's words, averaged with the words' weights
    ("Gautier V" ~ "Walter V" word by word); 0 where either side has no word. ``flat``: each
    text's words in order; ``weight``: per word id."""
    from rapidfuzz.distance import JaroWinkler
    from rapidfuzz.process import cpdist

    start = flat.offsets
    lq, lc = np.diff(start)[qi], np.diff(start)[ci]
    out_q, out_c = np.zeros(len(qi)), np.zeros(len(qi))
    live = np.flatnonzero((lq > 0) & (lc > 0))
    lq, lc, sq, sc = lq[live], lc[live], start[qi[live]], start[ci[live]]
    size = lq * lc
    first = np.r_[0, np.cumsum(size)[:-1]]
    local = np.arange(int(size.sum())) - np.repeat(first, size)
    rq, rc = np.repeat(lq, size), np.repeat(lc, size)
    a, b = local // rc, local % rc                    # entries in (pair, query word, cand word)
    ids, names = flat.ids, flat.words
    u, v = ids[np.repeat(sq, size) + a], ids[np.repeat(sc, size) + b]
    sim = cpdist([names[i] for i in u], [names[j] for j in v],
                 scorer=JaroWinkler.normalized_similarity, dtype=np.float32)
    best_for_q = _grouped(sim, np.repeat(lc, lq), np.maximum)        # per (pair, query word)
    by_cand = np.repeat(first, size) + (local % rq) * rc + local // rq  # (pair, cand word, q)
    best_for_c = _grouped(sim[by_cand], np.repeat(lq, lc), np.maximum)
    wq = weight[ids[np.repeat(sq, lq) + _within(lq)]]
    wc = weight[ids[np.repeat(sc, lc) + _within(lc)]]
    out_q[live] = _grouped(best_for_q * wq, lq, np.add) / _grouped(wq, lq, np.add)
    out_c[live] = _grouped(best_for_c * wc, lc, np.add) / _grouped(wc, lc, np.add)
    return out_q, out_c


def _within(sizes: np.ndarray) -> np.ndarray:
    """0..size-1 for each of ``sizes``, concatenated."""
    return np.arange(int(sizes.sum())) - np.repeat(np.r_[0, np.cumsum(sizes)[:-1]], sizes)
