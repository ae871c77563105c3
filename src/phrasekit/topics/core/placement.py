"""Placing documents in fitted topics: shares from distances to the topic centres, and the
documents with no word the model knows left unassigned (topic -1, zero shares) instead of
placed by a vector that says nothing about their meaning, counted in a warning."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from phrasekit.encoders.cache import words_read
from phrasekit.encoders.pooling import l2_normalize

logger = logging.getLogger(__name__)

#: Softmax temperature turning squared distances to the topic centres into shares.
SHARE_TEMPERATURE = 0.05
#: Documents per block when the documents outside the fitted sample are assigned.
ASSIGN_BLOCK = 2048


def sq_distances(X: np.ndarray, centres: np.ndarray) -> np.ndarray:
    """(n, k) squared Euclidean distances, without the (n, k, d) intermediate."""
    d2 = (X**2).sum(axis=1)[:, None] - 2.0 * X @ centres.T + (centres**2).sum(axis=1)[None, :]
    return np.maximum(d2, 0.0)


def shares_of(d2: np.ndarray) -> np.ndarray:
    """Topic shares from squared distances to the centres: a softmax at ``SHARE_TEMPERATURE``."""
    e = np.exp(-(d2 - d2.min(axis=1, keepdims=True)) / SHARE_TEMPERATURE)
    return e / e.sum(axis=1, keepdims=True)


def place(X: np.ndarray, mean: np.ndarray, centres: np.ndarray
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Document vectors ``X`` against fitted topics (centred by ``mean``): which have words,
    squared distances to ``centres``, and topic shares (zero for a document without words)."""
    used = np.linalg.norm(X, axis=1) > 0
    Xc = np.zeros_like(X)
    Xc[used] = l2_normalize(X[used] - mean)
    d2 = sq_distances(Xc, centres)
    return used, d2, np.where(used[:, None], shares_of(d2), 0.0)


def unknown_mask(encoder: Any, texts: Sequence[str], chunk_size: int, max_chunks: int,
                 max_words: int | None = None) -> np.ndarray:
    """Which of ``texts`` have no word the encoder knows within the windows it reads (an
    encoder without ``known``, such as a transformer reading subwords, knows every word)."""
    known = getattr(encoder, "known", None)
    if known is None or not len(texts):
        return np.zeros(len(texts), dtype=bool)
    limit = words_read(chunk_size, max_chunks, max_words)
    read = [" ".join(t.split()[:limit]) for t in texts]
    return ~np.asarray(known(read), dtype=bool)


def without_unknown(encoder: Any, X: np.ndarray, texts: Sequence[str], chunk_size: int,
                    max_chunks: int, max_words: int | None = None) -> np.ndarray:
    """``X`` with the rows of documents without a known word set to zero (unassigned)."""
    unknown = unknown_mask(encoder, texts, chunk_size, max_chunks, max_words)
    if unknown.any():
        X = X.copy()
        X[unknown] = 0.0
    return X


def warn_unassigned(labels: np.ndarray, what: str) -> None:
    """A warning counting the documents ``what`` left in no topic (label -1)."""
    n = int((np.asarray(labels) < 0).sum())
    if n:
        logger.warning("%s: %d of %d documents have no word the model knows (or no words): "
                       "left unassigned (topic -1, zero shares)", what, n, len(labels))
