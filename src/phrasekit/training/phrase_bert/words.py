"""Phrase-BERT's word rules: content words, lexical diversity of positives, corrupted negatives.

A positive must share no content word with its anchor (the paper's "no non-stopword tokens that
also occur in p"), where variants count as shared (:func:`lexically_disjoint`); a negative is
the anchor with one content word swapped for a random vocabulary word (:func:`corrupt_phrase`).
"""

from __future__ import annotations

import difflib
import logging
import random
import re
from collections.abc import Sequence
from typing import Any

from phrasekit.training.data.sources import english_stop_words

logger = logging.getLogger(__name__)

_VOCAB_WORD_RE = re.compile(r"^[a-z]{3,}(?:-[a-z]+)*$")


def content_word(token: str, stop_words: frozenset[str] | None = None) -> str | None:
    """The lower-cased word of a whitespace token when it is a non-stopword, else None.

    Outer punctuation is ignored ("(bank," -> "bank"); a token without a letter is no word.
    """
    word = token.lower().replace("’", "'").strip(".,;:!?\"'()[]{}")
    if not word or not any(c.isalpha() for c in word):
        return None
    stops = stop_words if stop_words is not None else english_stop_words()
    return None if word in stops else word


def content_words(text: str, stop_words: frozenset[str] | None = None) -> list[str]:
    """The non-stopwords of ``text`` (whitespace tokens), lower-cased, in order."""
    stops = stop_words if stop_words is not None else english_stop_words()
    return [w for w in (content_word(t, stops) for t in text.split()) if w]


def _same_word(a: str, b: str) -> bool:
    """Equal, one (>= 4 letters) inside the other ("sedge"/"nutsedge"), sharing their first
    min(5, shorter length) >= 4 letters ("thank"/"thanking"), or spelling variants (same first
    letter, difflib ratio >= 0.8: "cappella"/"capella")."""
    if a == b or (len(a) >= 4 and a in b) or (len(b) >= 4 and b in a):
        return True
    k = min(5, len(a), len(b))
    if k >= 4 and a[:k] == b[:k]:
        return True
    return k >= 4 and a[0] == b[0] and difflib.SequenceMatcher(None, a, b).ratio() >= 0.8


def lexically_disjoint(a: str, b: str, stop_words: frozenset[str] | None = None) -> bool:
    """True when both texts have a content word and none of ``a``'s is (a variant of) one of
    ``b``'s (:func:`_same_word`) — the paper's constraint on positives ("no non-stopword tokens
    that also occur in p")."""
    stops = stop_words if stop_words is not None else english_stop_words()
    wa, wb = content_words(a, stops), content_words(b, stops)
    if not wa or not wb:
        return False
    return not any(_same_word(x, y) for x in wa for y in wb)


def corrupt_phrase(text: str, vocabulary: Sequence[str], rng: random.Random,
                   stop_words: frozenset[str] | None = None,
                   avoid: frozenset[str] = frozenset()) -> str | None:
    """``text`` with one random non-stopword token replaced by a random vocabulary word.

    The replacement is a different word, not a stopword and not in ``avoid`` (e.g. the words
    of the positive); a capitalised token gets a capitalised replacement. None when ``text``
    has no non-stopword or no replacement is found.
    """
    stops = stop_words if stop_words is not None else english_stop_words()
    tokens = text.split()
    slots = [i for i, t in enumerate(tokens) if content_word(t, stops)]
    if not slots or not vocabulary:
        return None
    i = rng.choice(slots)
    old = content_word(tokens[i], stops)
    for _ in range(20):
        new = rng.choice(vocabulary)
        if new != old and new not in stops and new not in avoid:
            break
    else:
        return None
    tokens[i] = new.capitalize() if tokens[i][:1].isupper() else new
    return " ".join(tokens)


def word_vocabulary(tokenizer: Any) -> list[str]:
    """The backbone tokenizer's whole-word entries of >= 3 letters that are not stopwords,
    sorted: the "vocabulary" negatives draw their replacement word from (as in the paper)."""
    stops = english_stop_words()
    return sorted(w for w in tokenizer.get_vocab() if _VOCAB_WORD_RE.match(w) and w not in stops)
