"""Choosing the number of clusters K for k-means on document vectors.

Two criteria, each a score per K (higher is better) computed on the same vectors:

- ``"stability"``: k-means is run on ``n_pairs`` pairs of random half-size samples of the
  documents (``STABILITY_INITS`` initialisations each, different seeds); both models label
  every document, and the score is the mean adjusted Rand index between the two labelings.
  A K that matches real groups is found again from other samples and seeds; a K that cuts a
  group in arbitrary places is not. (ARI is corrected for chance, so random labelings score 0
  at every K.)
- ``"silhouette"``: the mean cosine silhouette of the full k-means partition, on a fixed-seed
  sample of documents.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
import sklearn
from sklearn.cluster import KMeans
from sklearn.decomposition import PCA
from sklearn.metrics import adjusted_rand_score, silhouette_score
from tqdm.auto import tqdm

logger = logging.getLogger(__name__)

CRITERIA = ("stability", "silhouette")
#: Pairs of halves per K. Each pair is one noisy draw: with 4, the K picked on a corpus moved
#: with the seed (bbc_news: K = 5 to 13 across four seeds at tolerance 0.1); with 8 it held
#: within 5 to 7 (``benchmarks/topics/topics_k_choice.py``).
STABILITY_PAIRS = 8
#: k-means initialisations per half. With one, a half's k-means sometimes stops in a poor
#: local optimum, and which half does is chaotic: vectors within 0.007 in cosine (int8 against
#: fp32) or another seed move K. Three held K on the development corpora (bbc_news 6/6/6
#: where one gave 5/6/6, ag_news_test 4/4/4 where one gave 4/7/4, seeds 0-2) but, with the
#: first-200-words windows, chose K 6 on the tests' 80 arXiv abstracts, where MiniLM's seeded
#: biology topic then gathered cs abstracts (docs/methods/topics.md); one stays the default.
STABILITY_INITS = 1
#: Stability scores this close to the best count as ties.
STABILITY_TIE = 0.01
#: Principal components the stability k-means run on (the final clustering uses the full
#: vectors): on the five development corpora, the clustering stage ran 3.6-6.7x faster and
#: K held on three; bbc_news 7 -> 6 and 20newsgroups 9 -> 12 both raised NMI
#: (``benchmarks/topics/topics_k_dims.py``).
STABILITY_DIMS = 64


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
            km = KMeans(n_clusters=k, n_init=STABILITY_INITS,
                        random_state=int(rng.integers(2**31 - 1)))
            models.append(km.fit(X[idx]))
        scores.append(adjusted_rand_score(models[0].predict(X), models[1].predict(X)))
    return float(np.mean(scores))


def stability_scores(X: np.ndarray, ks: Sequence[int], seed: int = 0,
                     n_pairs: int = STABILITY_PAIRS, max_docs: int = 5000,
                     dims: int | None = STABILITY_DIMS, show_progress: bool = False
                     ) -> dict[int, float]:
    """Per K, the stability of k-means on ``X`` (see the module docstring); at most
    ``max_docs`` documents (fixed-seed sample) take part, projected on their ``dims``
    principal components (None: all of ``X``)."""
    rng = np.random.default_rng(seed)
    if len(X) > max_docs:
        X = X[np.sort(rng.choice(len(X), size=max_docs, replace=False))]
    if dims is not None and min(X.shape) > dims:
        X = PCA(dims, random_state=seed).fit_transform(X).astype(np.float32)
    scores: dict[int, float] = {}
    # hundreds of small fits: scikit-learn's argument checks took 15% of the time (the
    # vectors are finite and the arguments ours); the scores are the same
    with sklearn.config_context(skip_parameter_validation=True, assume_finite=True):
        for k in tqdm(list(ks), desc="topics[choose K]", unit="K",
                      disable=not show_progress, leave=False):
            scores[k] = _pair_agreement(X, k, np.random.default_rng([seed, k]), n_pairs)
            logger.info("K=%d stability %.4f", k, scores[k])
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
             tolerance: float = 0.0, show_progress: bool = False
             ) -> tuple[int, dict[int, float]]:
    """The K of ``ks`` that ``best_k`` picks from the ``criterion`` scores, and every score."""
    if criterion not in CRITERIA:
        raise ValueError(f"k criterion must be one of {CRITERIA}, got {criterion!r}")
    ks = sorted(set(int(k) for k in ks))
    if not ks:
        raise ValueError("no K to choose from")
    fn = stability_scores if criterion == "stability" else silhouette_scores
    scores = fn(X, ks, seed=seed, show_progress=show_progress)
    return best_k(scores, criterion, tolerance), scores


def best_k(scores: dict[int, float], criterion: str, tolerance: float = 0.0) -> int:
    """The K picked from per-K scores. Stability: the largest K scoring at least
    ``(1 - tolerance)`` of the best score (or within ``STABILITY_TIE`` of it): merging two
    clean groups is about as reproducible as keeping them apart, so among about equally
    stable partitions the finer one is kept. Silhouette: the best score (ties: smaller K)."""
    if criterion == "stability":
        top = max(scores.values())
        floor = min(top - STABILITY_TIE, top * (1.0 - tolerance))
        return max(k for k, v in scores.items() if v >= floor)
    return max(scores, key=lambda k: (scores[k], -k))
