"""Word tokens shared by topic terms, their metrics and the multi-facet word space.

One tokenizer everywhere, so that a term counted by a topic model and by a metric is the same.
"""

from __future__ import annotations

import re
from functools import lru_cache

_TOKEN_RE = re.compile(r"[a-z0-9]+(?:['\-][a-z0-9]+)*")


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens (hyphen / apostrophe compounds kept, possessive ``'s`` cut)."""
    text = text.lower().replace("\u2019", "'")
    out = []
    for tok in _TOKEN_RE.findall(text):
        if tok.endswith("'s"):
            tok = tok[:-2]
        if tok:
            out.append(tok)
    return out


@lru_cache(maxsize=1)
def stop_words() -> frozenset[str]:
    """spaCy's English stop words (the same list as the n-gram helper)."""
    from spacy.lang.en.stop_words import STOP_WORDS

    return frozenset(w.lower().replace("\u2019", "'") for w in STOP_WORDS)
