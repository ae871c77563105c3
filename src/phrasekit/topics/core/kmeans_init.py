"""scikit-learn's k-means++ seeding with its float64 copies made once per fit.

Choosing K runs k-means hundreds of times on small float32 matrices (halves of at most 5,000
documents, 64 principal components). In scikit-learn's k-means++ each new centre's distances
to every document go through ``euclidean_distances``' float32 path, which copies the whole
matrix to float64 and sums its squared rows again for every centre: two thirds of the K
search's time. :func:`fast_kmeans_init` replaces scikit-learn's seeding function, for the
duration of a block, with :func:`kmeans_plusplus`, which makes the same random draws and the
same float64 sums in the same chunks, over copies made once. The seeds, hence the clusters
and K, are identical (tested against scikit-learn's own function).
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Iterator
from typing import Any

import numpy as np
from scipy import sparse
from sklearn.cluster import _kmeans
from sklearn.utils import gen_batches
from sklearn.utils.extmath import row_norms

#: scikit-learn's own seeding, for what :func:`kmeans_plusplus` does not cover.
_SKLEARN_SEEDING = _kmeans._kmeans_plusplus


class _Float32Distances:
    """Squared distances from a few float32 rows to every row of ``Y``, computed as
    scikit-learn's ``_euclidean_distances_upcast`` computes them (float64 chunks of its batch
    size, float32 result), with each chunk of ``Y`` copied and normed once."""

    def __init__(self, Y: np.ndarray) -> None:
        self.Y = Y
        self._chunks: dict[int, list[tuple[slice, np.ndarray, np.ndarray]]] = {}

    def _y_chunks(self, batch_size: int) -> list[tuple[slice, np.ndarray, np.ndarray]]:
        chunks = self._chunks.get(batch_size)
        if chunks is None:
            chunks = []
            for y_slice in gen_batches(len(self.Y), batch_size):
                y64 = self.Y[y_slice, :].astype(np.float64)
                chunks.append((y_slice, y64, row_norms(y64, squared=True)[None, :]))
            self._chunks[batch_size] = chunks
        return chunks

    def __call__(self, X: np.ndarray) -> np.ndarray:
        n_x, n_y, n_features = X.shape[0], self.Y.shape[0], X.shape[1]
        maxmem = max(((n_x + n_y) * n_features + n_x * n_y) / 10, 10 * 2**17)
        tmp = 2 * n_features
        batch_size = max(int((-tmp + math.sqrt(tmp**2 + 4 * maxmem)) / 2), 1)
        out = np.empty((n_x, n_y), dtype=np.float32)
        for x_slice in gen_batches(n_x, batch_size):
            x64 = X[x_slice, :].astype(np.float64)
            xx = row_norms(x64, squared=True)[:, None]
            for y_slice, y64, yy in self._y_chunks(batch_size):
                d = -2 * (x64 @ y64.T)
                d += xx
                d += yy
                out[x_slice, y_slice] = d.astype(np.float32, copy=False)
        np.maximum(out, 0, out=out)
        return out


def kmeans_plusplus(X: Any, n_clusters: int, x_squared_norms: Any, sample_weight: np.ndarray,
                    random_state: np.random.RandomState, n_local_trials: int | None = None
                    ) -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's ``_kmeans_plusplus`` (same arguments, draws and results) for a dense
    float32 ``X``; any other ``X`` goes to scikit-learn's own."""
    if sparse.issparse(X) or X.dtype != np.float32:
        return _SKLEARN_SEEDING(X, n_clusters, x_squared_norms, sample_weight, random_state,
                                n_local_trials)
    n_samples, n_features = X.shape
    centers = np.empty((n_clusters, n_features), dtype=X.dtype)
    if n_local_trials is None:
        n_local_trials = 2 + int(np.log(n_clusters))
    center_id = random_state.choice(n_samples, p=sample_weight / sample_weight.sum())
    indices = np.full(n_clusters, -1, dtype=int)
    centers[0] = X[center_id]
    indices[0] = center_id
    distances = _Float32Distances(X)
    closest_dist_sq = distances(centers[0, np.newaxis])
    current_pot = closest_dist_sq @ sample_weight
    for c in range(1, n_clusters):
        rand_vals = random_state.uniform(size=n_local_trials) * current_pot
        candidate_ids = np.searchsorted(np.cumsum(sample_weight * closest_dist_sq), rand_vals)
        np.clip(candidate_ids, None, closest_dist_sq.size - 1, out=candidate_ids)
        to_candidates = distances(X[candidate_ids])
        np.minimum(closest_dist_sq, to_candidates, out=to_candidates)
        candidates_pot = to_candidates @ sample_weight.reshape(-1, 1)
        best = np.argmin(candidates_pot)
        current_pot = candidates_pot[best]
        closest_dist_sq = to_candidates[best]
        centers[c] = X[candidate_ids[best]]
        indices[c] = candidate_ids[best]
    return centers, indices


@functools.cache
def matches_installed_sklearn() -> bool:
    """Whether :func:`kmeans_plusplus` gives the installed scikit-learn's seeds (checked once
    per process on two small problems): the seeding is scikit-learn's private code, which a
    release may change, and other seeds could choose another K."""
    rng = np.random.default_rng(0)
    try:
        for n, d, k in ((300, 8, 6), (1200, 16, 9)):
            X = rng.normal(size=(n, d)).astype(np.float32)
            w = np.ones(n, dtype=np.float32)
            ours = kmeans_plusplus(X, k, row_norms(X, squared=True), w, np.random.RandomState(1))
            theirs = _SKLEARN_SEEDING(X, k, row_norms(X, squared=True), w,
                                      np.random.RandomState(1))
            if not (np.array_equal(ours[0], theirs[0]) and np.array_equal(ours[1], theirs[1])):
                return False
    except (TypeError, ValueError):  # another signature
        return False
    return True


@contextlib.contextmanager
def fast_kmeans_init() -> Iterator[None]:
    """Inside the block, scikit-learn's k-means seeds with :func:`kmeans_plusplus`, where that
    gives the installed scikit-learn's own seeds (else the block changes nothing)."""
    if not matches_installed_sklearn():
        yield
        return
    _kmeans._kmeans_plusplus = kmeans_plusplus
    try:
        yield
    finally:
        _kmeans._kmeans_plusplus = _SKLEARN_SEEDING
