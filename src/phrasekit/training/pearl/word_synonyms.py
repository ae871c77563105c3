"""Word synonyms for PEARL's token-level augmentation: WordNet synonyms ranked by GloVe, and
GloVe neighbours that are spelling or inflection variants of the word.

Why only variants from GloVe: inspected samples of 50d neighbours at 0.85 and even 0.90 are
mostly related words, co-hyponyms and antonyms, not synonyms ("happy" -> "feel", "monday" ->
"week", "york" -> "chicago", "grandson" -> "grandfather", "marriage" -> "divorce", "trombone" ->
"saxophone"), and WordNet-based co-hyponym / POS / antonym filters removed only part of them.
"""

from __future__ import annotations

import logging
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from phrasekit.encoders.pooling import l2_normalize
from phrasekit.training.data.sources import Synset, english_stop_words

logger = logging.getLogger(__name__)

#: Prefixes that negate a word: such pairs are never synonyms ("effective"/"ineffective").
_NEGATION_PREFIXES = ("un", "in", "im", "il", "ir", "dis", "non", "non-", "anti", "anti-")
#: British -> American spelling rewrites applied to both words before comparing them.
_SPELLING_RULES: tuple[tuple[str, str], ...] = (
    ("isation", "ization"), ("ise", "ize"), ("yse", "yze"), ("our", "or"), ("ogue", "og"),
    ("tre", "ter"), ("ence", "ense"), ("ae", "e"), ("oe", "e"), ("ll", "l"),
)
#: Inflectional endings: the longer word may add one of these to the shared stem ...
_LONG_SUFFIXES = frozenset({"s", "es", "ed", "d", "ing", "er", "ers", "est", "ies", "ied"})
#: ... while the shorter one ends the stem with one of these.
_SHORT_SUFFIXES = frozenset({"", "e", "y", "s"})
_WORD_RE = re.compile(r"^[a-z]+(?:-[a-z]+)*$")


# ---------------------------------------------------------------------------------- word rules
def negation(a: str, b: str) -> bool:
    """True when one word is the other with a negating prefix ("intentional"/"unintentional")."""
    short, long_ = sorted((a.replace("-", ""), b.replace("-", "")), key=len)
    return any(long_ == p.rstrip("-") + short for p in _NEGATION_PREFIXES)


def _american(word: str) -> str:
    for old, new in _SPELLING_RULES:
        word = word.replace(old, new)
    return word


def spelling_variant(a: str, b: str) -> bool:
    """True for spelling / inflection variants of one word ("colour"/"color", "on-going" /
    "ongoing", "fund"/"funds", "help"/"helping"), not for derived or different words
    ("terror"/"terrorism", "grandson"/"grandfather", "qualitative"/"quantitative")."""
    a2, b2 = a.replace("-", ""), b.replace("-", "")
    if a2 == b2 or _american(a2) == _american(b2):
        return a != b
    if negation(a2, b2):
        return False
    short, long_ = sorted((a2, b2), key=len)
    for cut in range(len(short), 3, -1):
        stem = short[:cut]
        tail_s, tail_l = short[cut:], long_[cut:]
        if not long_.startswith(stem) or tail_s not in _SHORT_SUFFIXES:
            continue
        if tail_l in _LONG_SUFFIXES and (tail_s != "y" or tail_l in ("ies", "ied")):
            return True
    return False


def _usable(word: str) -> bool:
    """A lower-case alphabetic word of >= 3 letters that is not a stop word."""
    return len(word) >= 3 and word not in english_stop_words() and bool(_WORD_RE.match(word))


# ---------------------------------------------------------------------------------- finder
class _SynonymFinder:
    """GloVe unit vectors, the single-word WordNet memberships and the neighbour pool."""

    def __init__(self, synsets: Sequence[Synset], glove: Any, glove_vocab: int,
                 wordnet_min_cos: float, threshold: float, max_per_word: int) -> None:
        self.index: dict[str, int] = glove.index
        vectors = np.asarray(glove.vectors, dtype=np.float32)
        self.unit = l2_normalize(vectors)
        self.member_of: dict[str, list[Synset]] = defaultdict(list)
        for s in synsets:
            for m in s.members:
                if " " not in m:
                    self.member_of[m.lower()].append(s)
        self.inv_vocab = {i: w for w, i in self.index.items()}
        self.pool_idx = np.asarray([i for i in range(min(glove_vocab, len(vectors)))
                                    if _usable(self.inv_vocab.get(i, ""))], dtype=np.int64)
        self.pool_mat = self.unit[self.pool_idx]
        self.n_top = min(20, len(self.pool_idx) - 1)
        self.wordnet_min_cos, self.threshold = wordnet_min_cos, threshold
        self.max_per_word = max_per_word
        self.stats: Counter[str] = Counter()

    def batch(self, words: Sequence[str]) -> dict[str, list[str]]:
        """``{word: synonyms}`` of the words with at least one."""
        sims = self.unit[[self.index[w] for w in words]] @ self.pool_mat.T
        top = np.argpartition(-sims, self.n_top, axis=1)[:, : self.n_top] \
            if self.n_top > 0 else None
        out: dict[str, list[str]] = {}
        for r, w in enumerate(words):
            seen = {w}
            syns = self._from_wordnet(w, seen)
            if top is not None:
                self._add_glove_variants(w, sims[r], top[r], seen, syns)
            if syns:
                out[w] = syns
        return out

    def _from_wordnet(self, w: str, seen: set[str]) -> list[str]:
        """The word's single-word synset co-members, by GloVe cosine, above the floor."""
        scored: list[tuple[float, str]] = []
        for s in self.member_of.get(w, ()):
            for m in s.members:
                ml = m.lower()
                if ml in seen or not _usable(ml) or ml not in self.index:
                    continue
                seen.add(ml)
                cos = float(self.unit[self.index[w]] @ self.unit[self.index[ml]])
                if cos >= self.wordnet_min_cos:
                    scored.append((cos, ml))
                else:
                    self.stats["wordnet_dropped_low_cos"] += 1
        syns = [m for _, m in sorted(scored, key=lambda x: -x[0])][: self.max_per_word]
        self.stats["wordnet"] += len(syns)
        return syns

    def _add_glove_variants(self, w: str, sims: np.ndarray, top: np.ndarray, seen: set[str],
                            syns: list[str]) -> None:
        """Append the nearest GloVe neighbours above the threshold that are variants of ``w``."""
        for j in top[np.argsort(-sims[top])]:
            if len(syns) >= self.max_per_word or sims[j] < self.threshold:
                break
            cand = self.inv_vocab[int(self.pool_idx[j])]
            if cand in seen:
                continue
            seen.add(cand)
            if not spelling_variant(w, cand):
                self.stats["glove_dropped_not_variant"] += 1
                continue
            syns.append(cand)
            self.stats["glove"] += 1


def build_word_synonyms(
    words: Iterable[str],
    synsets: Sequence[Synset],
    glove: Any,
    threshold: float = 0.85,
    max_per_word: int = 8,
    wordnet_min_cos: float = 0.4,
    glove_vocab: int = 100_000,
    batch_size: int = 2048,
    show_progress: bool = True,
) -> tuple[dict[str, list[str]], dict[str, Any]]:
    """``{word: [synonyms]}`` for token-level augmentation, and statistics.

    Per word (lower-case, alphabetic, not a stop word, known to GloVe):

    1. its single-word WordNet synonyms (other members of any synset holding it), ranked by
       GloVe cosine, keeping those with cosine >= ``wordnet_min_cos`` (this drops most rare
       senses: "big" -> "gravid", "bank" -> "rely");
    2. GloVe 6B-50d nearest neighbours (among the ``glove_vocab`` most frequent words) with
       cosine >= ``threshold`` that are spelling or inflection variants of the word
       (:func:`spelling_variant`: "organisation" -> "organization", "colour" ->
       "color", "fund" -> "funds").

    At most ``max_per_word`` synonyms per word (see the module docstring for why GloVe only
    contributes variants).
    """
    finder = _SynonymFinder(synsets, glove, glove_vocab, wordnet_min_cos, threshold,
                            max_per_word)
    queries = sorted({w for w in words if _usable(w) and w in finder.index})
    result: dict[str, list[str]] = {}
    starts = range(0, len(queries), batch_size)
    bar = tqdm(starts, total=len(starts), desc="word synonyms", unit="batch",
               disable=not show_progress, leave=False)
    for start in bar:
        result.update(finder.batch(queries[start : start + batch_size]))
    stats = finder.stats
    info = {
        "query_words": len(queries),
        "words_with_synonyms": len(result),
        "synonyms_total": sum(len(v) for v in result.values()),
        "from_wordnet": stats["wordnet"],
        "wordnet_dropped_low_cos": stats["wordnet_dropped_low_cos"],
        "from_glove": stats["glove"],
        "glove_dropped_not_variant": stats["glove_dropped_not_variant"],
        "glove_threshold": threshold,
        "wordnet_min_cos": wordnet_min_cos,
        "max_per_word": max_per_word,
    }
    return result, info
