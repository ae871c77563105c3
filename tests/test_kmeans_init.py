"""k-means++ seeding with its float64 copies made once: the same seeds, draws and clusters as
scikit-learn's own seeding, and scikit-learn's function back after the block."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
from sklearn.cluster import KMeans, _kmeans
from sklearn.utils.extmath import row_norms

from phrasekit.topics.core import choose_k
from phrasekit.topics.core.choose_k import stability_scores
from phrasekit.topics.core.kmeans_init import _SKLEARN_SEEDING, fast_kmeans_init, kmeans_plusplus


@pytest.mark.parametrize(("n", "d", "k"), [(10, 3, 9), (300, 8, 4), (2500, 64, 20),
                                           (700, 384, 12)])
def test_seeds_and_draws_equal_scikit_learns(n: int, d: int, k: int) -> None:
    rng = np.random.default_rng(n + k)
    for seed in range(3):
        X = rng.normal(size=(n, d)).astype(np.float32)
        X -= X.mean(axis=0)  # as KMeans.fit hands it over
        w = np.ones(n, dtype=np.float32)
        ours, theirs = np.random.RandomState(seed), np.random.RandomState(seed)
        got = kmeans_plusplus(X, k, row_norms(X, squared=True), w, ours)
        want = _SKLEARN_SEEDING(X, k, row_norms(X, squared=True), w, theirs)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
        assert ours.uniform() == theirs.uniform()  # the generator left in the same state


def test_other_inputs_go_to_scikit_learns_seeding() -> None:
    X = np.random.default_rng(0).normal(size=(60, 4))  # float64
    w = np.ones(60)
    got = kmeans_plusplus(X, 3, row_norms(X, squared=True), w, np.random.RandomState(1))
    want = _SKLEARN_SEEDING(X, 3, row_norms(X, squared=True), w, np.random.RandomState(1))
    np.testing.assert_array_equal(got[0], want[0])


def test_kmeans_and_stability_are_unchanged_and_the_seeding_restored(
        monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(2)
    centres = rng.normal(size=(5, 32))
    X = (centres[rng.integers(0, 5, 600)] + rng.normal(scale=1.5, size=(600, 32))
         ).astype(np.float32)
    plain = KMeans(5, n_init=1, random_state=3).fit(X)
    with fast_kmeans_init():
        assert _kmeans._kmeans_plusplus is kmeans_plusplus
        fast = KMeans(5, n_init=1, random_state=3).fit(X)
    assert _kmeans._kmeans_plusplus is _SKLEARN_SEEDING
    np.testing.assert_array_equal(plain.cluster_centers_, fast.cluster_centers_)
    np.testing.assert_array_equal(plain.labels_, fast.labels_)
    scores = stability_scores(X, [3, 5, 7], n_pairs=3, more_pairs=2)
    monkeypatch.setattr(choose_k, "fast_kmeans_init", contextlib.nullcontext)
    assert stability_scores(X, [3, 5, 7], n_pairs=3, more_pairs=2) == scores


def test_a_scikit_learn_with_other_seeds_keeps_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    from phrasekit.topics.core import kmeans_init

    assert kmeans_init.matches_installed_sklearn()

    def other(X, n_clusters, x_squared_norms, sample_weight, random_state, n_local_trials=None):
        return _SKLEARN_SEEDING(X, n_clusters, x_squared_norms, sample_weight, random_state,
                                n_local_trials=1)  # draws other seeds

    kmeans_init.matches_installed_sklearn.cache_clear()
    monkeypatch.setattr(kmeans_init, "_SKLEARN_SEEDING", other)
    monkeypatch.setattr(_kmeans, "_kmeans_plusplus", other)
    try:
        assert not kmeans_init.matches_installed_sklearn()
        with fast_kmeans_init():
            assert _kmeans._kmeans_plusplus is other
    finally:
        kmeans_init.matches_installed_sklearn.cache_clear()
