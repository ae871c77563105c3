"""Choosing the number of clusters K for k-means on document vectors.

Two criteria, each a score per K (higher is better) computed on the same vectors:

- ``"stability"``: k-means is run on ``n_pairs`` pairs of random half-size subsamples (one
  initialisation each, different seeds); both models label every document, and the score is
  the mean adjusted Rand index between the two labelings, minus the same index expected when
  the data has no cluster structure at that K (the documents' vectors with their coordinates
  permuted independently, which keeps each dimension's spread and removes the groups). A K
  that matches real groups is found again from other samples and seeds; a K that cuts a group
  in arbitrary places is not. The subtraction removes the advantage small K has by chance.
- ``"silhouette"``: the mean cosine silhouette of the full k-means partition, on a fixed-seed
  sample of documents.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
from sklearn.cluster import KMeans
from sklearn.metrics import adjusted_rand_score, silhouette_score
from tqdm.auto import tqdm

logger = logging.getLogger(__name__)

CRITERIA = ("stability", "silhouette")


def kmeans_labels(X: np.ndarray, k: int, n_init: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """KMeans labels and centres of the rows of ``X``."""
    km = KMeans(n_clusters=k, n_init=n_init, random_state=seed).fit(X)
    return km.labels_.astype(np.int64), km.cluster_centers_


def _pair_agreement(X: np.ndarray, k: int, rng: np.random.Generator, n_pairs: int) -> float:
    """Mean ARI between labelings of all of ``X`` by k-means fitted on two random halves."""
    n = len(X)
    half = max(k + 1, n // 2)
    scores = []
    for _ in range(n_pairs):
        models = []
        for _side in range(2):
            idx = rng.choice(n, size=min(half, n), replace=False)
            km = KMeans(n_clusters=k, n_init=1, random_state=int(rng.integers(2**31 - 1)))
            models.append(km.fit(X[idx]))
        scores.append(adjusted_rand_score(models[0].predict(X), models[1].predict(X)))
    return float(np.mean(scores))


def stability_scores(X: np.ndarray, ks: Sequence[int], seed: int = 0, n_pairs: int = 3,
                     max_docs: int = 5000, show_progress: bool = False) -> dict[int, float]:
    """Per K, ``stability(X) - stability(null)`` (see the module docstring); at most
    ``max_docs`` documents (fixed-seed sample) take part."""
    rng = np.random.default_rng(seed)
    if len(X) > max_docs:
        X = X[np.sort(rng.choice(len(X), size=max_docs, replace=False))]
    null = np.column_stack([rng.permutation(col) for col in X.T])
    scores: dict[int, float] = {}
    for k in tqdm(list(ks), desc="topics[choose K]", unit="K", disable=not show_progress,
                  leave=False):
        real = _pair_agreement(X, k, np.random.default_rng([seed, k, 0]), n_pairs)
        base = _pair_agreement(null, k, np.random.default_rng([seed, k, 1]), n_pairs)
        scores[k] = real - base
        logger.info("K=%d stability %.4f (null %.4f)", k, real, base)
    return scores


def silhouette_scores(X: np.ndarray, ks: Sequence[int], seed: int = 0, n_init: int = 3,
                      max_docs: int = 5000, show_progress: bool = False) -> dict[int, float]:
    """Per K, the cosine silhouette of k-means on ``X`` (scored on at most ``max_docs``)."""
    rng = np.random.default_rng(seed)
    sample = np.sort(rng.choice(len(X), size=min(max_docs, len(X)), replace=False))
    scores: dict[int, float] = {}
    for k in tqdm(list(ks), desc="topics[choose K]", unit="K", disable=not show_progress,
                  leave=False):
        labels, _ = kmeans_labels(X, k, n_init, seed)
        ok = len(set(labels[sample].tolist())) > 1
        scores[k] = float(silhouette_score(X[sample], labels[sample], metric="cosine")) \
            if ok else -1.0
        logger.info("K=%d silhouette %.4f", k, scores[k])
    return scores


def choose_k(X: np.ndarray, ks: Sequence[int], criterion: str = "stability", seed: int = 0,
             show_progress: bool = False) -> tuple[int, dict[int, float]]:
    """The K of ``ks`` with the best ``criterion`` score (ties: the smaller K) and every
    score."""
    if criterion not in CRITERIA:
        raise ValueError(f"k criterion must be one of {CRITERIA}, got {criterion!r}")
    ks = sorted(set(int(k) for k in ks))
    if not ks:
        raise ValueError("no K to choose from")
    fn = stability_scores if criterion == "stability" else silhouette_scores
    scores = fn(X, ks, seed=seed, show_progress=show_progress)
    best = max(ks, key=lambda k: (scores[k], -k))
    return best, scores
