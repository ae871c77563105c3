"""Words, phrases and verbatim matching shared by the topic models and their metrics.

Every topic model compared in phrasekit (PNTM, UNTM, LDA, phrase-LDA) reads topics from one
``TermVocabulary`` built here, and the automatic metrics decide whether a term occurs in a
document with the same tokenizer, so numbers are comparable across models:

- a *word* is a lower-cased token of ``tokenize`` that is not a stop word, has a letter, and
  occurs in more than ``min_df - 1`` documents (PNTM's "document frequency > 5" by default);
- a *phrase* is a multi-word key of a ``PhraseVocabulary`` (spaCy noun chunks and entities),
  tokenized the same way and counted where it occurs *verbatim* in a document's tokens; a
  phrase shown with an unpaired bracket ("sl(2", a span cut inside a formula) or with fewer
  than two tokens of two letters ("N=4", "km/s") is left out.
"""

from __future__ import annotations

import re
from array import array
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import pairwise

import numpy as np
import scipy.sparse as sp

from phrasekit.phrases import PhraseVocabulary
from phrasekit.phrases.keyphrase_candidates import brackets_balanced
from phrasekit.text import TokenDocs, stop_words, tokenize

_HAS_LETTER = re.compile(r"[^\W\d_]")  # a letter of any script
#: Quote marks a corpus may leave on a span's edges (``LaTeX'', "straight", ‘curly’, «French»).
_EDGE_QUOTES = re.compile(r"""^(?:``|''|["'`‘’“”«»])+\s*|\s*(?:``|''|["'`‘’“”«»])+$""")


def shown_form(text: str) -> str:
    """A phrase as shown to users: without quote marks left on its edges (``The Government
    -> The Government); the text itself when nothing else would remain."""
    return _EDGE_QUOTES.sub("", text).strip() or text
_TWO_LETTERS = re.compile(r"[^\W\d_].*[^\W\d_]")


def _wordy(tokens: Sequence[str]) -> bool:
    """Whether a phrase has two tokens with two letters or more: "n 4" (from "N=4"), "km s"
    and "i e" are symbols, units or abbreviations split by the tokenizer, not phrases."""
    return sum(1 for t in tokens if _TWO_LETTERS.search(t)) >= 2

@dataclass
class TermVocabulary:
    """The terms topics are read from: words first, then phrases, in parallel lists.

    Attributes:
        terms: term keys (a phrase key is its tokens joined by one space).
        surface: what to show users (a phrase's most frequent original spelling).
        doc_freq: number of documents the term occurs in verbatim.
        n_words: the first ``n_words`` terms are words, the rest phrases.
    """

    terms: list[str]
    surface: list[str]
    doc_freq: list[int]
    n_words: int
    _index: dict[str, int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if not len(self.terms) == len(self.surface) == len(self.doc_freq):
            raise ValueError("terms, surface and doc_freq must have the same length")
        self._index = {t: i for i, t in enumerate(self.terms)}

    def __len__(self) -> int:
        return len(self.terms)

    def index(self, term: str) -> int:
        return self._index[term]

    @property
    def phrases(self) -> list[str]:
        return self.terms[self.n_words :]

    @property
    def max_len(self) -> int:
        """Tokens in the longest term."""
        return max((len(t.split()) for t in self.terms), default=1)


def build_term_vocabulary(
    token_docs: Sequence[Sequence[str]],
    phrases: PhraseVocabulary | None = None,
    min_df: int = 6,
    max_df: float = 0.5,
    max_phrases: int = 75_000,
    max_words: int | None = None,
) -> TermVocabulary:
    """Words and phrases of a tokenized corpus.

    Args:
        token_docs: ``tokenize`` output per document.
        phrases: spaCy phrases of the same documents (None: words only).
        min_df: keep terms in at least this many documents (6 = PNTM's "more than five").
        max_df: drop words in more than this share of documents (corpus-wide filler);
            phrases are never dropped for it.
        max_phrases: keep at most this many phrases, most frequent first (PNTM caps at 75k).
        max_words: keep at most this many words, most frequent first (None: all).
    """
    if not token_docs:
        raise ValueError("no documents: cannot build a vocabulary")
    if min_df < 1 or not 0.0 < max_df <= 1.0:
        raise ValueError(f"min_df must be >= 1 and max_df in (0, 1], got {min_df}, {max_df}")
    token_docs = TokenDocs.of(token_docs)
    n = len(token_docs)
    stops = stop_words()
    df = _word_doc_freq(token_docs)
    words = [
        w
        for w, c in df.items()
        if c >= min_df
        and c <= max_df * n
        and w not in stops
        and len(w) > 1
        and _HAS_LETTER.search(w)
    ]
    words.sort(key=lambda w: (-df[w], w))
    if max_words is not None:
        words = words[:max_words]
    terms, surface, freqs = list(words), list(words), [df[w] for w in words]
    n_words = len(terms)
    if phrases is not None and len(phrases):
        candidates: dict[tuple[str, ...], str] = {}
        surf = phrases.surface
        for key, shown in zip(phrases.phrases, surf, strict=True):
            toks = tuple(tokenize(key))
            if len(toks) < 2 or all(t in stops for t in toks) or toks in candidates \
                    or not brackets_balanced(shown) or not _wordy(toks):
                continue
            candidates[toks] = shown
        matched = count_phrases(token_docs, candidates.keys())
        kept = [p for p, c in matched.items() if c >= min_df]
        kept.sort(key=lambda p: (-matched[p], p))
        seen = set(terms)
        for p in kept[:max_phrases]:
            key = " ".join(p)
            if key in seen:
                continue
            seen.add(key)
            terms.append(key)
            surface.append(shown_form(candidates[p]))
            freqs.append(matched[p])
    return TermVocabulary(terms=terms, surface=surface, doc_freq=freqs, n_words=n_words)


def count_phrases(
    token_docs: Sequence[Sequence[str]], phrases: Iterable[tuple[str, ...]]
) -> dict[tuple[str, ...], int]:
    """Document frequency of each phrase (a token tuple) where it occurs verbatim."""
    wanted = list(dict.fromkeys(phrases))
    if not wanted:
        return {}
    df = np.asarray(presence_matrix(token_docs, [" ".join(p) for p in wanted]).sum(axis=0))
    return {p: int(c) for p, c in zip(wanted, df.ravel(), strict=True)}


def presence_matrix(token_docs: Sequence[Sequence[str]], terms: Sequence[str],
                    format: str = "csc") -> sp.spmatrix:
    """Binary documents x terms matrix (in scipy ``format``): 1 where the term's tokens occur
    contiguously.

    Unlike ``count_matrix`` nothing is consumed: "bank of england" and "england" are both
    present in a document that mentions the Bank of England.
    """
    keys = [tuple(t.split()) for t in terms]
    return _presence_of_ids(TokenDocs.of(token_docs), keys).asformat(format)


def _word_doc_freq(docs: TokenDocs) -> Counter[str]:
    """In how many documents each token occurs."""
    counts = np.zeros(len(docs.words), dtype=np.int64)
    for lo, hi in pairwise(docs.offsets.tolist()):
        counts[np.unique(docs.ids[lo:hi])] += 1
    return Counter(dict(zip(docs.words, counts.tolist(), strict=True)))


def _doc_chunks(docs: TokenDocs, chunk_tokens: int = 1 << 19
                ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray, int]]:
    """Whole documents, about ``chunk_tokens`` tokens at a time: their token ids, each token's
    document (counted from the chunk's first), the end of that document in the chunk, and how
    many documents the chunk holds (empty ones included)."""
    offsets = docs.offsets
    d0 = 0
    while d0 < len(docs):
        d1 = int(np.searchsorted(offsets, offsets[d0] + chunk_tokens, "right")) - 1
        d1 = min(max(d0 + 1, d1), len(docs))
        doc = np.repeat(np.arange(d1 - d0), np.diff(offsets[d0:d1 + 1]))
        yield (docs.ids[offsets[d0]:offsets[d1]].astype(np.int64), doc,
               (offsets[d0 + 1:d1 + 1] - offsets[d0])[doc], d1 - d0)
        d0 = d1


def _presence_of_ids(docs: TokenDocs, keys: list[tuple[str, ...]],
                     chunk_tokens: int = 1 << 19) -> sp.csr_matrix:
    """``presence_matrix`` on token ids, in array operations over chunks of about
    ``chunk_tokens`` tokens (whole documents): one-word terms by a lookup of every token,
    longer ones by hashing each window of their length that starts with a term's first word,
    every hit checked token by token (``keys``: terms as token tuples; an empty one occurs
    nowhere). Memory stays bounded by the chunk, and time linear in the corpus."""
    word_id = {w: i for i, w in enumerate(docs.words)}
    single = np.full(len(docs.words), -1, dtype=np.int64)
    multi: dict[tuple[int, ...], int] = {}
    for j, key in enumerate(keys):
        ids = tuple(word_id.get(w, -1) for w in key)
        if -1 in ids or not ids:
            continue  # a word the corpus never uses: the term occurs nowhere
        if len(ids) == 1:
            single[ids[0]] = j
        else:
            multi[ids] = j
    tables = [_NgramTable(n, [(k, j) for k, j in multi.items() if len(k) == n], len(docs.words))
              for n in sorted({len(k) for k in multi})]
    indptr, indices = [np.zeros(1, dtype=np.int64)], []
    for seg, doc, end, n_docs in _doc_chunks(docs, chunk_tokens):
        found = single[seg] >= 0
        hits = [(doc[found], single[seg][found]), *(t.find(seg, doc, end) for t in tables)]
        code = np.unique(np.concatenate([d * len(keys) + c for d, c in hits]))
        indices.append(code % max(len(keys), 1))
        counts = np.bincount(code // max(len(keys), 1), minlength=n_docs)
        indptr.append(indptr[-1][-1] + np.cumsum(counts))
    cols = np.concatenate(indices) if indices else np.zeros(0, dtype=np.int64)
    return sp.csr_matrix((np.ones(len(cols), dtype=np.float32), cols.astype(np.int32),
                          np.concatenate(indptr)), shape=(len(docs), len(keys)))


class _NgramTable:
    """The terms of one length ``n`` as token-id rows sorted by a 64-bit polynomial hash, to
    find every window of a token array that equals one of them."""

    def __init__(self, n: int, terms: list[tuple[tuple[int, ...], int]], n_words: int) -> None:
        self.n = n
        keys = np.asarray([k for k, _ in terms], dtype=np.int64).reshape(-1, n)
        self.first = np.zeros(n_words, dtype=bool)
        self.first[keys[:, 0]] = True
        for base in (1_000_003, 998_244_353, 2_147_483_647):  # another, on a hash collision
            hashes = self._hash(keys, base)
            order = np.argsort(hashes, kind="stable")
            if len(np.unique(hashes)) == len(hashes):
                break
        else:  # pragma: no cover - three 64-bit collisions among the terms
            raise RuntimeError("could not hash the terms apart")
        self.base, self.hashes = base, hashes[order]
        self.keys, self.columns = keys[order], np.asarray([j for _, j in terms])[order]

    @staticmethod
    def _hash(windows: np.ndarray, base: int) -> np.ndarray:
        h = np.zeros(len(windows), dtype=np.uint64)
        for t in range(windows.shape[1]):  # wraps around modulo 2**64, on purpose
            h = h * np.uint64(base) + (windows[:, t] + 1).astype(np.uint64)
        return h

    def find(self, seg: np.ndarray, doc: np.ndarray, end: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray]:
        """(document, column) of every window of ``seg`` equal to a term, within a document
        (``doc``, ``end``: each token's document and where that document ends)."""
        at = np.flatnonzero(self.first[seg] & (np.arange(len(seg)) + self.n <= end))
        windows = seg[at[:, None] + np.arange(self.n)]
        h = self._hash(windows, self.base)
        row = np.minimum(np.searchsorted(self.hashes, h), len(self.hashes) - 1)
        ok = (self.hashes[row] == h) & (self.keys[row] == windows).all(axis=1)
        return doc[at[ok]], self.columns[row[ok]]


class _SparseRows:
    """A CSR matrix built row by row in typed arrays (4 bytes per index, 8 per value), not in
    Python lists of int objects, which cost ~10x more on a large corpus. ``binary``: every
    stored value is 1 and none is kept."""

    def __init__(self, binary: bool = False) -> None:
        self.indices, self.indptr = array("i"), array("q", [0])
        self.data = None if binary else array("d")

    def add(self, columns: Iterable[int], values: Iterable[float] = ()) -> None:
        """Append one row: its columns in increasing order (and their values)."""
        self.indices.extend(columns)
        if self.data is not None:
            self.data.extend(values)
        self.indptr.append(len(self.indices))

    def matrix(self, n_cols: int, dtype: type = np.float64) -> sp.csr_matrix:
        """The rows added so far as an (n_rows, n_cols) CSR matrix."""
        indices = np.frombuffer(self.indices, dtype=np.int32) if self.indices \
            else np.zeros(0, dtype=np.int32)
        data = np.ones(len(indices), dtype=dtype) if self.data is None else \
            np.asarray(self.data, dtype=dtype)
        indptr = np.frombuffer(self.indptr, dtype=np.int64)
        return sp.csr_matrix((data, indices, indptr), shape=(len(indptr) - 1, n_cols))


def count_matrix(
    token_docs: Sequence[Sequence[str]], vocab: TermVocabulary, phrases: bool
) -> sp.csr_matrix:
    """Sparse documents x terms counts for LDA.

    ``phrases=False``: word counts (phrase columns stay 0). ``phrases=True``: phrases are
    joined into single tokens first (greedy, longest match left to right), so the words
    inside a matched phrase are not counted again (phrase-LDA's input).
    """
    index = {tuple(t.split()): i for i, t in enumerate(vocab.terms)}
    phrase_lengths = sorted(
        {len(t.split()) for t in vocab.phrases}, reverse=True
    ) if phrases else []
    rows = _SparseRows()
    for toks in token_docs:
        counts: Counter[int] = Counter()
        i = 0
        while i < len(toks):
            for n in phrase_lengths:
                j = index.get(tuple(toks[i : i + n])) if i + n <= len(toks) else None
                if j is not None and j >= vocab.n_words:
                    counts[j] += 1
                    i += n
                    break
            else:
                j = index.get((toks[i],))
                if j is not None and j < vocab.n_words:
                    counts[j] += 1
                i += 1
        cols = sorted(counts)
        rows.add(cols, [counts[j] for j in cols])
    return rows.matrix(len(vocab))
