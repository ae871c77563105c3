"""A spaCy Doc's token attributes read once into NumPy arrays.

Candidate cleaning and the adjective/noun pattern look at every token several times; each
``doc[i]`` or iteration builds a new spaCy ``Token`` object, which took about a third of the
keyphrase candidate step (12 objects per token of 200 bbc_news articles). A :class:`TokenTable`
is one ``Doc.to_array`` call; token texts are slices of the Doc's text.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np


@functools.cache
def _attrs() -> list[int]:
    """The attributes a table reads, in its column order (spaCy imported on first use)."""
    from spacy import attrs as a

    return [a.IDX, a.LENGTH, a.SPACY, a.POS, a.TAG, a.LOWER, a.ORTH, a.DEP, a.HEAD, a.IS_PUNCT,
            a.IS_SPACE, a.LIKE_NUM, a.IS_STOP]


@functools.cache
def pos_ids(names: frozenset[str]) -> np.ndarray:
    """spaCy's integer ids of the parts of speech ``names`` (for ``np.isin``)."""
    from spacy.parts_of_speech import IDS

    return np.array(sorted(IDS[n] for n in names), dtype=np.uint64)


@functools.cache
def hashes(strings: frozenset[str]) -> np.ndarray:
    """spaCy's ids of ``strings`` as ``TAG``, ``LOWER`` and ``ORTH`` store them: a 64-bit hash,
    or a symbol's small number ("POS" is both a tag and a symbol)."""
    from spacy.strings import get_string_id

    return np.array(sorted(get_string_id(s) for s in strings), dtype=np.uint64)


@dataclass
class TokenTable:
    """One Doc's tokens: character offsets and lengths, trailing space, part of speech, fine
    tag, lower-case and exact form, dependency label (hashes), the head's index and the
    lexical flags, one array each."""

    doc: Any
    idx: np.ndarray
    length: np.ndarray
    space_after: np.ndarray
    pos: np.ndarray
    tag: np.ndarray
    lower: np.ndarray
    orth: np.ndarray
    dep: np.ndarray
    head: np.ndarray
    is_punct: np.ndarray
    is_space: np.ndarray
    like_num: np.ndarray
    is_stop: np.ndarray
    _text: str | None = None

    @classmethod
    def of(cls, doc: Any, text: str | None = None) -> TokenTable:
        """The table of ``doc``; ``text``: the string it was parsed from (``doc.text``, which
        spaCy rebuilds token by token, is read only when it is not given or does not fit)."""
        attrs = _attrs()
        a = doc.to_array(attrs).reshape(len(doc), len(attrs))
        flags = a[:, 9:].astype(bool)
        head = np.arange(len(doc), dtype=np.int64) + a[:, 8].astype(np.int64)  # stored relative
        table = cls(doc, a[:, 0].astype(np.int64), a[:, 1].astype(np.int64),
                    a[:, 2].astype(bool), a[:, 3], a[:, 4], a[:, 5], a[:, 6], a[:, 7], head,
                    flags[:, 0], flags[:, 1], flags[:, 2], flags[:, 3])
        if text is not None and len(doc) and (
            len(text) == int(table.idx[-1] + table.length[-1] + table.space_after[-1])
        ):
            table._text = text
        return table

    def __len__(self) -> int:
        return len(self.idx)

    @property
    def text(self) -> str:
        """The Doc's text."""
        if self._text is None:
            self._text = self.doc.text
        return self._text

    @property
    def is_word(self) -> np.ndarray:
        """Whether each token counts as a word (neither punctuation nor whitespace)."""
        return ~(self.is_punct | self.is_space)

    def token_text(self, i: int) -> str:
        """The text of token ``i``."""
        start = int(self.idx[i])
        return self.text[start : start + int(self.length[i])]

    def span_text(self, start: int, end: int) -> str:
        """The text of tokens ``start`` to ``end`` (exclusive), inner whitespace as written."""
        return self.text[int(self.idx[start]) : int(self.idx[end - 1] + self.length[end - 1])]

    def newline_tokens(self) -> np.ndarray:
        """Whether each token's text holds a line break (looked up once per distinct form)."""
        strings = self.doc.vocab.strings
        forms, inverse = np.unique(self.orth, return_inverse=True)
        return np.array(["\n" in strings[int(h)] for h in forms], dtype=bool)[inverse]


def pattern_runs(table: TokenTable, pattern_pos: frozenset[str]) -> list[tuple[int, int]]:
    """``(start, end)`` of the maximal runs of tokens whose part of speech is in
    ``pattern_pos`` (inner hyphens allowed; no run holds a line break or a space token)."""
    ok = np.isin(table.pos, pos_ids(pattern_pos)).tolist()
    hyphen = (table.orth == hashes(frozenset({"-"}))[0]).tolist()
    blocked = (table.is_space | table.newline_tokens()).tolist()
    runs: list[tuple[int, int]] = []
    start = None
    for i in range(len(table)):
        if (ok[i] or (start is not None and hyphen[i])) and not blocked[i]:
            if start is None:
                start = i
            continue
        if start is not None:
            runs.append((start, i))
            start = None
    if start is not None:
        runs.append((start, len(table)))
    return runs


#: The dependency labels of an English noun chunk's head (spaCy's ``lang/en/syntax_iterators``).
NP_DEPS = frozenset({"oprd", "nsubj", "dobj", "nsubjpass", "pcomp", "pobj", "dative", "appos",
                     "attr", "ROOT"})


def left_edges(head: np.ndarray) -> np.ndarray:
    """Each token's leftmost descendant (itself included), from the head of every token: the
    minimum is passed up one level per round until no token changes."""
    left = np.arange(len(head))
    while True:
        up = left.copy()
        np.minimum.at(up, head, left)
        if np.array_equal(up, left):
            return left
        left = up


def noun_chunks(table: TokenTable) -> list[tuple[int, int]]:
    """``(start, end)`` of the Doc's noun chunks, as ``doc.noun_chunks`` gives them for an
    English pipeline, read from the table's arrays instead of one ``Token`` object per visit
    (spaCy's own iterator, called for other languages, or a Doc without a parse, where it
    raises)."""
    from spacy.lang.en.syntax_iterators import noun_chunks as english

    doc = table.doc
    if doc.vocab.get_noun_chunks is not english or not doc.has_annotation("DEP"):
        return [(span.start, span.end) for span in doc.noun_chunks]
    np_dep = np.isin(table.dep, hashes(NP_DEPS))
    conj = table.dep == hashes(frozenset({"conj"}))[0]
    nominal = np.isin(table.pos, pos_ids(frozenset({"NOUN", "PROPN", "PRON"})))
    head, left = table.head.tolist(), left_edges(table.head).tolist()
    chunks: list[tuple[int, int]] = []
    prev_end = -1
    for i in np.flatnonzero(nominal & (np_dep | conj)).tolist():
        if left[i] <= prev_end:  # no chunk inside another
            continue
        if not np_dep[i]:  # a conjunct is a chunk where the head of its coordination is one
            h = head[i]
            while conj[h] and head[h] < h:
                h = head[h]
            if not np_dep[h]:
                continue
        prev_end = i
        chunks.append((left[i], i + 1))
    return chunks
