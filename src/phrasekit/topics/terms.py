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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import pairwise

import numpy as np
import scipy.sparse as sp

from phrasekit.phrases import PhraseVocabulary
from phrasekit.phrases.keyphrase_candidates import brackets_balanced
from phrasekit.text import TokenDocs, stop_words, tokenize

_HAS_LETTER = re.compile(r"[a-z]")
#: Quote marks a corpus may leave on a span's edges (``LaTeX'', "straight", ‘curly’, «French»).
_EDGE_QUOTES = re.compile(r"""^(?:``|''|["'`‘’“”«»])+\s*|\s*(?:``|''|["'`‘’“”«»])+$""")


def shown_form(text: str) -> str:
    """A phrase as shown to users: without quote marks left on its edges (``The Government
    -> The Government); the text itself when nothing else would remain."""
    return _EDGE_QUOTES.sub("", text).strip() or text
_TWO_LETTERS = re.compile(r"[a-z].*[a-z]")


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


def _presence_of_ids(docs: TokenDocs, keys: list[tuple[str, ...]]) -> sp.csr_matrix:
    """``presence_matrix`` on token ids: one-word terms by an array lookup of every token,
    longer ones tried only where a token starts one of them (``keys``: terms as token tuples;
    an empty one occurs nowhere)."""
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
    starts = np.zeros(len(docs.words), dtype=bool)
    starts[[ids[0] for ids in multi]] = True
    lengths = sorted({len(ids) for ids in multi})
    rows = _SparseRows(binary=True)
    for lo, hi in pairwise(docs.offsets.tolist()):
        seg = docs.ids[lo:hi]
        cols = single[seg]
        found = set(cols[cols >= 0].tolist())
        at = np.flatnonzero(starts[seg]).tolist()
        if at:
            toks = seg.tolist()
            for i in at:
                for n in lengths:
                    j = multi.get(tuple(toks[i : i + n]))
                    if j is not None:
                        found.add(j)
        rows.add(sorted(found))
    return rows.matrix(len(keys), np.float32)


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
