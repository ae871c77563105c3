"""A cheap, spaCy-free frequent n-gram helper (a baseline and a quick look at a corpus)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from phrasekit.io import Document

_WORD_RE = re.compile(r"[^\W\d_]+(?:[-'][^\W\d_]+)*", re.UNICODE)


def _stop_words() -> frozenset[str]:
    from spacy.lang.en.stop_words import STOP_WORDS

    return frozenset(STOP_WORDS)


def frequent_ngrams(
    docs: Iterable[Document | str],
    n_range: tuple[int, int] = (2, 3),
    min_count: int = 5,
    min_df: int = 2,
    lowercase: bool = True,
    max_results: int | None = None,
) -> list[tuple[str, int, int]]:
    """Frequent word n-grams as ``(ngram, count, doc_freq)``, most frequent first.

    Words are alphabetic tokens (hyphen/apostrophe compounds kept); an n-gram never crosses a
    line break or punctuation, and may not start or end with a stop word ("of the", "in a" are
    dropped, "bank of england" is kept). Ties are broken by doc_freq, then alphabetically.
    """
    lo, hi = n_range
    if not 1 <= lo <= hi:
        raise ValueError(f"n_range must satisfy 1 <= min <= max, got {n_range}")
    stop = _stop_words()
    counts: Counter[str] = Counter()
    dfs: Counter[str] = Counter()
    for d in docs:
        text = d.text if isinstance(d, Document) else d
        if lowercase:
            text = text.lower()
        seen: set[str] = set()
        # segments without punctuation or line breaks
        for segment in re.split(r"[^\w\s'-]|\n", text):
            words = _WORD_RE.findall(segment)
            for n in range(lo, hi + 1):
                for i in range(len(words) - n + 1):
                    gram = words[i : i + n]
                    if gram[0].lower() in stop or gram[-1].lower() in stop:
                        continue
                    key = " ".join(gram)
                    counts[key] += 1
                    seen.add(key)
        dfs.update(seen)
    rows = [(g, c, dfs[g]) for g, c in counts.items() if c >= min_count and dfs[g] >= min_df]
    rows.sort(key=lambda r: (-r[1], -r[2], r[0]))
    return rows[:max_results] if max_results is not None else rows
