"""Choosing the number of clusters K for k-means on document vectors.

Two criteria, each a score per K (higher is better) computed on the same vectors:

- ``"stability"``: k-means is run on ``n_pairs`` pairs of random half-size samples of the
  documents (``STABILITY_INITS`` initialisations each, different seeds); both models label
  every document, and the score is the mean adjusted Rand index between the two labelings.
  A K that matches real groups is found again from other samples and seeds; a K that cuts a
  group in arbitrary places is not. (ARI is corrected for chance, so random labelings score 0
  at every K.) The choice is sequential: every K gets ``n_pairs`` pairs, then each K that
  could still reach the choice's floor (its mean within ``STABILITY_SE`` standard errors of
  it) gets ``more_pairs`` more, so the pairs go where they decide K.
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
from sklearn.metrics import silhouette_score
from tqdm.auto import tqdm

from phrasekit.topics.core.kmeans_init import fast_kmeans_init

logger = logging.getLogger(__name__)

CRITERIA = ("stability", "silhouette")
#: Pairs of halves per K in the first pass. Each pair is one noisy draw, and on a flat curve
#: the K that crosses the floor is a draw: with 8 pairs alone K moved with the criterion's seed
#: (20newsgroups 9-26 over seeds 0-4) and int8 documents chose fp32's K in 5 of 25 fits.
STABILITY_PAIRS = 8
#: Pairs added to each K that may still reach the floor: as 32 pairs for every K (the same K in
#: 70 of 75 fits) at about half the cost. Over seeds 0-4 fp32's K then spans 6-7 on arXiv and
#: bbc_news (5-8 with 8 pairs), and int8 and bf16 documents keep the mean NMI within 0.013 of
#: fp32 on the five development corpora (8 pairs: 0.024; docs/methods/topics.md, "A steadier K").
STABILITY_MORE_PAIRS = 24
#: A K gets the added pairs where its mean plus this many standard errors reaches the floor.
STABILITY_SE = 3.0
#: k-means initialisations per half. With one, a half's k-means sometimes stops in a poor
#: local optimum, and which half does is chaotic: vectors within 0.007 in cosine (int8 against
#: fp32) or another seed move K. Three held K on the development corpora (bbc_news 6/6/6
#: where one gave 5/6/6, ag_news_test 4/4/4 where one gave 4/7/4, seeds 0-2) but, with the
#: first-200-words windows, chose K 6 on the tests' 80 arXiv abstracts, where MiniLM's seeded
#: biology topic then gathered cs abstracts (docs/methods/topics.md); one stays the default.
STABILITY_INITS = 1
#: Documents per topic at least for a K to be scored by stability (about 3 in each half
#: sample). Above it the halves' clusters are one or two documents each and agree for that
#: reason alone: 30 abstracts scored K = 29 at 1.0 against about 0.3 for K 4-27.
STABILITY_MIN_DOCS = 6
#: Stability scores this close to the best count as ties.
STABILITY_TIE = 0.01
#: Principal components the stability k-means run on (the final clustering uses the full
#: vectors): on the five development corpora, the clustering stage ran 3.6-6.7x faster and
#: K held on three; bbc_news 7 -> 6 and 20newsgroups 9 -> 12 both raised NMI
#: (``benchmarks/topics/topics_k_dims.py``).
STABILITY_DIMS = 64


def kmeans_labels(X: np.ndarray, k: int, n_init: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """KMeans labels and centres of the rows of ``X``."""
    with fast_kmeans_init():
        km = KMeans(n_clusters=k, n_init=n_init, random_state=seed).fit(X)
    return km.labels_.astype(np.int64), km.cluster_centers_


def fast_ari(a: np.ndarray, b: np.ndarray) -> float:
    """The adjusted Rand index of two labelings by non-negative integers, from a dense
    contingency table: scikit-learn's builds a sparse one (3 ms a pair on 2,000 documents,
    an eighth of the pairs' time). Equal to ``adjusted_rand_score`` (tested)."""
    a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)

    def same(counts: np.ndarray) -> float:  # pairs of documents sharing a cell
        c = counts.astype(np.float64)
        return float((c * (c - 1)).sum() / 2)

    pairs = same(np.bincount(a * (int(b.max()) + 1) + b))
    row_pairs, col_pairs = same(np.bincount(a)), same(np.bincount(b))
    n = float(len(a))
    expected = row_pairs * col_pairs / (n * (n - 1) / 2)
    top = (row_pairs + col_pairs) / 2
    return 1.0 if top == expected else (pairs - expected) / (top - expected)


def _pair_aris(X: np.ndarray, k: int, rng: np.random.Generator, n_pairs: int) -> list[float]:
    """ARIs between labelings of all of ``X`` by k-means fitted on two random halves."""
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
        scores.append(fast_ari(models[0].predict(X), models[1].predict(X)))
    return scores


def stability_scores(X: np.ndarray, ks: Sequence[int], seed: int = 0,
                     n_pairs: int = STABILITY_PAIRS, max_docs: int = 5000,
                     dims: int | None = STABILITY_DIMS, show_progress: bool = False,
                     tolerance: float = 0.0, more_pairs: int = STABILITY_MORE_PAIRS
                     ) -> dict[int, float]:
    """Per K, the stability of k-means on ``X`` (see the module docstring); at most
    ``max_docs`` documents (fixed-seed sample) take part, projected on their ``dims``
    principal components (None: all of ``X``). ``tolerance``: the floor ``best_k`` will
    apply, which decides the K that get ``more_pairs``."""
    rng = np.random.default_rng(seed)
    if len(X) > max_docs:
        X = X[np.sort(rng.choice(len(X), size=max_docs, replace=False))]
    if dims is not None and min(X.shape) > dims:
        X = PCA(dims, random_state=seed).fit_transform(X).astype(np.float32)
    ks = list(ks)
    # each K's own stream of halves and seeds: its added pairs continue it, so a K's score
    # is the same as with all its pairs drawn at once
    streams = {k: np.random.default_rng([seed, k]) for k in ks}
    aris: dict[int, list[float]] = {}
    # hundreds of small fits: scikit-learn's argument checks took 15% of the time (the
    # vectors are finite and the arguments ours), and its seeding a third (the same seeds
    # from copies made once: kmeans_init.py); the scores are the same
    with sklearn.config_context(skip_parameter_validation=True, assume_finite=True), \
            fast_kmeans_init():
        for k in tqdm(ks, desc="topics[choose K]", unit="K", disable=not show_progress,
                      leave=False):
            aris[k] = _pair_aris(X, k, streams[k], n_pairs)
        undecided = _undecided(aris, tolerance) if more_pairs > 0 else []
        for k in tqdm(undecided, desc="topics[choose K, more pairs]", unit="K",
                      disable=not show_progress, leave=False):
            aris[k] += _pair_aris(X, k, streams[k], more_pairs)
    scores = {k: float(np.mean(v)) for k, v in aris.items()}
    for k in ks:
        logger.info("K=%d stability %.4f (%d pairs)", k, scores[k], len(aris[k]))
    return scores


def _undecided(aris: dict[int, list[float]], tolerance: float) -> list[int]:
    """The K whose mean ARI is within ``STABILITY_SE`` standard errors of the stability
    floor (or above it): more pairs may move them across it. One pair has no standard error:
    every K then gets more."""
    means = {k: float(np.mean(v)) for k, v in aris.items()}
    floor = stability_floor(means, tolerance)

    def reach(v: list[float]) -> float:
        return STABILITY_SE * float(np.std(v, ddof=1)) / np.sqrt(len(v)) if len(v) > 1 \
            else np.inf

    return [k for k, v in aris.items() if means[k] + reach(v) >= floor]


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
    if criterion == "stability":
        most = len(X) // STABILITY_MIN_DOCS
        if ks[-1] > most:
            logger.info("K above %d not scored: %d documents give fewer than %d per topic",
                        max(most, ks[0]), len(X), STABILITY_MIN_DOCS)
            ks = [k for k in ks if k <= most] or ks[:1]
        scores = stability_scores(X, ks, seed=seed, show_progress=show_progress,
                                  tolerance=tolerance)
    else:
        scores = silhouette_scores(X, ks, seed=seed, show_progress=show_progress)
    return best_k(scores, criterion, tolerance), scores


def best_k(scores: dict[int, float], criterion: str, tolerance: float = 0.0) -> int:
    """The K picked from per-K scores. Stability: the largest K scoring at least
    ``(1 - tolerance)`` of the best score (or within ``STABILITY_TIE`` of it): merging two
    clean groups is about as reproducible as keeping them apart, so among about equally
    stable partitions the finer one is kept. Silhouette: the best score (ties: smaller K)."""
    if criterion == "stability":
        floor = stability_floor(scores, tolerance)
        return max(k for k, v in scores.items() if v >= floor)
    return max(scores, key=lambda k: (scores[k], -k))


def stability_floor(scores: dict[int, float], tolerance: float) -> float:
    """The least stability score ``best_k`` accepts: ``(1 - tolerance)`` of the best, or
    ``STABILITY_TIE`` below it, whichever is lower."""
    top = max(scores.values())
    return min(top - STABILITY_TIE, top * (1.0 - tolerance))
