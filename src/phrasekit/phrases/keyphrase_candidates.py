"""Keyphrase candidates: span cleaning, bracket pairing, stemmed grouping keys and
containment suppression (steps 1, 2 and 4 of :mod:`phrasekit.phrases.keyphrases`), and
the checks of its documents and settings."""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from phrasekit.io import LONE_SURROGATE, Document
from phrasekit.phrases.extract import (
    DEFAULT_REJECT_PATTERN,
    HEAD_POS,
    LEADING_STRIP_WORDS,
    as_documents,
)
from phrasekit.phrases.token_table import TokenTable, hashes, pos_ids

#: POS tags that start no keyphrase (stripped from the front of a candidate span).
_LEADING_POS = frozenset({"DET", "PRON", "CCONJ", "SCONJ", "ADP", "PART", "NUM", "SYM", "PUNCT",
                          "SPACE", "AUX", "INTJ", "X"})
_LEADING_TAGS = frozenset({"PRP$", "WP$", "POS"})
_BRACKET_RE = re.compile(r"[()\[\]{}]")
_WORD_RE = re.compile(r"[^\W_]+", re.UNICODE)
REJECT_RE = re.compile(DEFAULT_REJECT_PATTERN)
_OPEN = {"(": ")", "[": "]", "{": "}"}
_CLOSE = {v: k for k, v in _OPEN.items()}

# ---------------------------------------------------------------------------- normalisation
@functools.lru_cache(maxsize=1)
def _stemmer():
    from nltk.stem import PorterStemmer

    return PorterStemmer()


@functools.lru_cache(maxsize=200_000)
def _stem(word: str) -> str:
    return _stemmer().stem(word)


@functools.lru_cache(maxsize=200_000)
def phrase_key(text: str) -> str:
    """The matching form of a phrase: lower-cased word tokens (runs of letters/digits, so
    punctuation-only differences vanish: "anti-spam" = "anti spam"), each Porter-stemmed,
    joined by single spaces. ``""`` when the text has no word characters."""
    return " ".join(_stem(w) for w in _WORD_RE.findall(text.lower()))


def unpaired_brackets(texts: Sequence[str]) -> set[int]:
    """Indices of the texts (tokens) holding a bracket ``()[]{}`` with no partner in the sequence.

    Brackets pair up as nested parentheses do; a closing bracket of the wrong kind is unpaired,
    and so is the opening bracket it fails to close.
    """
    stack: list[tuple[str, int]] = []
    unpaired: set[int] = set()
    for i, text in enumerate(texts):
        for ch in text:
            if ch in _OPEN:
                stack.append((ch, i))
            elif ch in _CLOSE:
                if stack and stack[-1][0] == _CLOSE[ch]:
                    stack.pop()
                else:
                    unpaired.add(i)
    unpaired.update(i for _, i in stack)
    return unpaired


def brackets_balanced(text: str) -> bool:
    """Whether every bracket ``()[]{}`` of ``text`` has its partner, properly nested."""
    return not unpaired_brackets([text])


def suppress_contained(keys: Sequence[str], scores: np.ndarray) -> list[int]:
    """Indices of the candidates kept when, of two whose word sequences (``keys``, words joined
    by single spaces) contain one another, only the higher scored survives; ascending order.

    Greedy by decreasing score (ties: lower index first): a candidate is dropped when its key
    is a contiguous word run of a kept key or holds a kept key as one. Sub-runs are looked up in
    sets, so the cost is linear in the candidates for phrases of a few words.
    """
    inside_kept: set[str] = set()  # every contiguous word run of a kept key
    kept_keys: set[str] = set()
    kept: list[int] = []
    for i in np.argsort(-np.asarray(scores, dtype=float), kind="stable"):
        words = keys[int(i)].split()
        runs = {" ".join(words[a:b]) for a in range(len(words))
                for b in range(a + 1, len(words) + 1)}
        if keys[int(i)] in inside_kept or runs & kept_keys:
            continue
        kept.append(int(i))
        kept_keys.add(keys[int(i)])
        inside_kept.update(runs)
    return sorted(kept)


def char_batches(pieces: Sequence[tuple[str, Any]], max_texts: int, max_chars: int
                 ) -> Iterator[list[tuple[str, Any]]]:
    """``pieces`` (``(text, key)``) in order, in batches of at most ``max_texts`` texts and
    ``max_chars`` characters (a longer text goes alone): spaCy's memory follows a batch's
    characters."""
    batch: list[tuple[str, Any]] = []
    chars = 0
    for piece in pieces:
        if batch and (len(batch) >= max_texts or chars + len(piece[0]) > max_chars):
            yield batch
            batch, chars = [], 0
        batch.append(piece)
        chars += len(piece[0])
    if batch:
        yield batch


# ---------------------------------------------------------------------------- candidates
@dataclass
class DocCandidates:
    """The grouped candidates of one document and what the scores need besides embeddings."""

    phrases: list[str] = field(default_factory=list)
    """Display form of each candidate (lower-cased, first form seen)."""
    keys: list[str] = field(default_factory=list)
    """:func:`phrase_key` of each candidate (distinct within the document)."""
    first: list[int] = field(default_factory=list)
    """Word offset of each candidate's first occurrence in the document."""
    counts: list[int] = field(default_factory=list)
    """Occurrences of each candidate (as a whole span or, with sub-phrases, as a suffix)."""
    windows: list[str] = field(default_factory=list)
    """The text pieces whose mean embedding is the document's embedding."""

    def __len__(self) -> int:
        return len(self.phrases)

    def add(self, phrase: str, key: str, first: int, index: dict[str, int]) -> None:
        j = index.get(key)
        if j is None:
            index[key] = len(self.phrases)
            self.phrases.append(phrase)
            self.keys.append(key)
            self.first.append(first)
            self.counts.append(1)
        else:
            self.counts[j] += 1
            self.first[j] = min(self.first[j], first)


class DocSpans:
    """Span cleaning over one Doc's :class:`~phrasekit.phrases.token_table.TokenTable`: which
    tokens no keyphrase starts with (determiners, pronouns, numbers, punctuation, words such
    as "many"), ends with (punctuation, possessive 's) or ends in (a noun), read per token
    once."""

    def __init__(self, table: TokenTable) -> None:
        self.table = table
        t = table
        self.lead = (np.isin(t.pos, pos_ids(_LEADING_POS)) | t.is_punct | t.is_space
                     | t.like_num | np.isin(t.tag, hashes(_LEADING_TAGS))
                     | np.isin(t.lower, hashes(LEADING_STRIP_WORDS))).tolist()
        self.trail = (t.is_punct | t.is_space | (t.tag == hashes(frozenset({"POS"}))[0])).tolist()
        self.head = np.isin(t.pos, pos_ids(HEAD_POS)).tolist()
        self.space_after = t.space_after.tolist()
        self.word = t.is_word.tolist()
        self.breaks = (t.is_space | t.newline_tokens()).tolist()
        self.plain = (~(t.is_stop | t.like_num)).tolist()

    def clean(self, start: int, end: int) -> tuple[int, int] | None:
        """The span without leading and trailing tokens no keyphrase starts or ends with;
        None when nothing is left or it does not end in a noun."""
        while start < end and self.lead[start]:
            start += 1
        while end > start and self.trail[end - 1]:
            end -= 1
        if start >= end or not self.head[end - 1]:
            return None
        return start, end

    def pieces(self, start: int, end: int) -> list[tuple[int, int]]:
        """The cleaned parts of a span with balanced brackets: cut at every token holding an
        unpaired bracket, each part cleaned again (cleaning can strip a closing bracket)."""
        out: list[tuple[int, int]] = []
        todo = [(start, end)]
        while todo:
            cleaned = self.clean(*todo.pop())
            if cleaned is None:
                continue
            a, b = cleaned
            text = self.table.span_text(a, b)
            cuts = sorted(unpaired_brackets([self.table.token_text(k) for k in range(a, b)])
                          ) if _BRACKET_RE.search(text) else []
            if not cuts:
                out.append(cleaned)
                continue
            bounds = [-1, *cuts, b - a]
            todo.extend((a + x + 1, a + y) for x, y in itertools.pairwise(bounds) if y > x + 1)
        return sorted(out)

    def valid(self, start: int, end: int, max_words: int) -> bool:
        """Whether a span is one line of at most ``max_words`` words (punctuation aside), one
        of them a content word (no stopword or number, with a letter)."""
        n_words = 0
        informative = False
        for k in range(start, end):
            if self.breaks[k]:
                return False
            if not self.word[k]:
                continue
            n_words += 1
            informative = informative or (
                self.plain[k] and any(c.isalpha() for c in self.table.token_text(k)))
        return informative and n_words <= max_words

    def surface(self, start: int, end: int) -> str:
        """The display form: lower-cased, whitespace runs as one space, ’ as '."""
        return " ".join(self.table.span_text(start, end).lower().split()).replace("’", "'")


# ---------------------------------------------------------------------------- validation
def validate_docs(docs: Iterable[Document | str]) -> list[str]:
    """The texts of ``docs`` (strings or Documents); None, non-strings and empty texts raise."""
    documents = as_documents(docs)
    texts = []
    for i, d in enumerate(documents):
        if not isinstance(d.text, str):
            raise TypeError(f"docs[{i}] has no text (got {type(d.text).__name__})")
        if not d.text.strip():
            raise ValueError(f"docs[{i}] is empty or whitespace only; it has no keyphrases")
        if (lone := LONE_SURROGATE.search(d.text)) is not None:
            raise ValueError(f"docs[{i}] holds a lone surrogate (U+{ord(lone[0]):04X}), which "
                             "is not a character; fix the text's decoding")
        texts.append(str(d.text))  # a NumPy string is a str spaCy does not take
    return texts
