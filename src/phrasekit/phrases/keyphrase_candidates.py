"""Keyphrase candidates: span cleaning, bracket pairing, stemmed grouping keys and
containment suppression (steps 1, 2 and 4 of :mod:`phrasekit.phrases.keyphrases`), and
the checks of its documents and settings."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from phrasekit.io import LONE_SURROGATE, Document
from phrasekit.phrases.extract import DEFAULT_REJECT_PATTERN, LEADING_STRIP_WORDS, as_documents

#: POS tags that start no keyphrase (stripped from the front of a candidate span).
_LEADING_POS = frozenset({"DET", "PRON", "CCONJ", "SCONJ", "ADP", "PART", "NUM", "SYM", "PUNCT",
                          "SPACE", "AUX", "INTJ", "X"})
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


def strip_leading(tok) -> bool:
    return (
        tok.pos_ in _LEADING_POS
        or tok.is_punct
        or tok.is_space
        or tok.like_num
        or tok.tag_ in ("PRP$", "WP$", "POS")
        or tok.lower_ in LEADING_STRIP_WORDS
    )


def is_content(tok) -> bool:
    return not (tok.is_stop or tok.like_num) and any(c.isalpha() for c in tok.text)


def surface(tokens: Sequence[Any]) -> str:
    text = "".join(t.text_with_ws for t in tokens[:-1]) + tokens[-1].text
    return " ".join(text.lower().split()).replace("’", "'")


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
