"""Guided document topics: seeded topics and zero-shot topics (BERTopic's ``seed_topic_list``
and ``zeroshot_topic_list``), as the clustering step of ``DocumentTopicModel``.

- **Seeded** (``seed_topics=[["interest rate", "inflation"], ...]``): K is chosen as without
  seeds; each seed list is encoded (the mean of its phrases' vectors, centred like the
  documents) and takes one of the K starting centres, the plain k-means centre nearest it; with
  ``seed_pull`` > 0 each document is first moved that share of the way toward the seed it is
  most similar to (when that cosine is positive), as BERTopic nudges embeddings; k-means then
  runs from those centres. The default pull is 0 (the seeds only start the topics): on two
  development corpora with seed lists written from their class names
  (``benchmarks/topics/topics_seed_pull.py``) it was the only pull that lowered NMI on neither, and
  with MiniLM the seeds still hold their topics; with GloVe's weaker vectors a seed needed
  0.25 to keep its topic on its theme.
  The centres kept are the means of the documents' own vectors, so new documents are placed as
  usual. ``seeded_topics_`` lists the topic each seed list became.
- **Zero-shot** (``zero_shot_topics=["economy", "sport", ...]``): the documents are clustered as
  without names (K chosen as usual, raised to the number of names if smaller, or ``n_topics``),
  then the names take whole topics, so a topic is never split between a name and a discovered
  duplicate. Each topic's centre is compared with each name's vector (both centred like the
  documents): a name takes its home topic (the topic most similar to it, when the cosine is
  positive and no other name is more similar to that topic), and every other topic whose
  centre is at least ``zero_shot_min_similarity`` from it and nearer it than to any other
  name. The topics one name takes are merged into one topic labelled by the name; the others
  stay as found. A name that takes no topic is dropped with a warning.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np
from sklearn.cluster import KMeans

from phrasekit.encoders.base import Encoder
from phrasekit.encoders.pooling import l2_normalize
from phrasekit.topics.core.choose_k import kmeans_labels
from phrasekit.topics.core.params import check_share

logger = logging.getLogger(__name__)

def _check_names(name: str, value: Any, nested: bool) -> None:
    """``seed_topics`` (lists of phrases) or ``zero_shot_topics`` (names): non-empty text."""
    if value is None:
        return
    if isinstance(value, str | bytes) or not isinstance(value, Sequence) or not value:
        raise ValueError(f"{name} must be a non-empty list, got {value!r}")
    for item in value:
        texts = item if nested else [item]
        if nested and (isinstance(item, str | bytes) or not isinstance(item, Sequence)
                       or not item):
            raise ValueError(f"{name}: each entry must be a non-empty list of phrases, "
                             f"got {item!r}")
        if any(not isinstance(t, str) or not t.strip() for t in texts):
            raise ValueError(f"{name}: phrases must be non-empty strings, got {item!r}")


def _group_means(X: np.ndarray, labels: np.ndarray, k: int) -> np.ndarray:
    """(k, d) mean of the rows of ``X`` in each group."""
    sums = np.zeros((k, X.shape[1]), dtype=np.float64)
    np.add.at(sums, labels, X)
    return (sums / np.maximum(np.bincount(labels, minlength=k), 1)[:, None]).astype(X.dtype)


def _name_owners(sim: np.ndarray, min_similarity: float) -> np.ndarray:
    """Per topic, the index of the name that takes it, or -1, from the (topics, names) cosines
    of topic centres to names: each topic can go only to its most similar name; a name takes
    its home topic (its most similar, when positive) and any topic at least ``min_similarity``
    from it."""
    nearest = sim.argmax(axis=1)
    top = sim[np.arange(len(sim)), nearest]
    owner = np.where(top >= min_similarity, nearest, -1)
    for j, home in enumerate(sim.argmax(axis=0)):
        if nearest[home] == j and sim[home, j] > 0:
            owner[home] = j
    return owner


class TopicGuide:
    """Mixin of :class:`~phrasekit.topics.DocumentTopicModel`: the clustering step, guided by
    seed phrases or topic names when given."""

    def _check_guidance(self) -> None:
        """Raise ``ValueError`` for bad seed or zero-shot settings."""
        _check_names("seed_topics", self.seed_topics, nested=True)
        _check_names("zero_shot_topics", self.zero_shot_topics, nested=False)
        if self.seed_topics is not None and self.zero_shot_topics is not None:
            raise ValueError("give seed_topics or zero_shot_topics, not both")
        check_share("seed_pull", self.seed_pull, "[0, 1]")
        if self.zero_shot_topics is not None and len(set(self.zero_shot_topics)) < len(
                self.zero_shot_topics):
            raise ValueError("zero_shot_topics has a name twice")
        sim = self.zero_shot_min_similarity
        if isinstance(sim, bool) or not isinstance(sim, int | float) or not -1 <= sim <= 1:
            raise ValueError(f"zero_shot_min_similarity must be in [-1, 1], got {sim!r}")

    def _cluster(self, X: np.ndarray, encoder: Encoder, show_progress: bool
                 ) -> tuple[np.ndarray, np.ndarray, int]:
        """Labels, centres and K of the centred document vectors ``X`` (sets ``k_scores_``,
        and ``seeded_topics_`` or the zero-shot names for ``_name_guided_topics``)."""
        self._guided_names: dict[int, str] = {}
        self._seed_groups: list[int] = []
        if self.zero_shot_topics is not None:
            labels, centres, k = self._zero_shot(X, encoder, show_progress)
        else:
            k, self.k_scores_ = self._choose_k(X, show_progress)
            if self.seed_topics is None:
                labels, centres = kmeans_labels(X, k, self.n_init, self.random_state)
            else:
                labels, centres, k = self._seeded(
                    X, self._guide_vectors(self.seed_topics, encoder), k)
        self._cluster_labels = labels
        return labels, centres, k

    def _guide_vectors(self, groups: Sequence[Sequence[str]], encoder: Encoder) -> np.ndarray:
        """One unit vector per group of phrases: their vectors' mean, centred like the
        documents (the fitted corpus' mean document vector removed)."""
        flat = [p for g in groups for p in g]
        V = np.asarray(encoder.encode(flat), dtype=np.float64)
        owner = np.repeat(np.arange(len(groups)), [len(g) for g in groups])
        means = _group_means(V, owner, len(groups))
        return l2_normalize((means - self.doc_mean_).astype(np.float32))

    def _seeded(self, X: np.ndarray, seeds: np.ndarray, k: int
                ) -> tuple[np.ndarray, np.ndarray, int]:
        """k-means started with one centre per seed (the plain centre nearest it, moved onto
        the seed), on documents pulled ``seed_pull`` of the way toward their most similar seed."""
        from scipy.optimize import linear_sum_assignment

        k = max(k, len(seeds))
        _, plain = kmeans_labels(X, k, self.n_init, self.random_state)
        rows, cols = linear_sum_assignment(-(l2_normalize(plain) @ seeds.T))
        taken = rows[np.argsort(cols)]  # the plain centre each seed replaces, in seed order
        norms = np.linalg.norm(plain[taken], axis=1, keepdims=True)
        init = np.vstack([seeds * norms, np.delete(plain, taken, axis=0)])
        Xn = X.astype(np.float64)
        if self.seed_pull > 0:
            sim = X @ seeds.T
            near, pulled = sim.argmax(axis=1), sim.max(axis=1) > 0
            Xn[pulled] += float(self.seed_pull) * (seeds[near[pulled]] - Xn[pulled])
        km = KMeans(n_clusters=k, init=init.astype(np.float64), n_init=1,
                    random_state=int(self.random_state)).fit(Xn)
        labels = km.labels_.astype(np.int64)
        self._seed_groups = list(range(len(seeds)))
        return labels, _group_means(X, labels, k), k

    def _zero_shot(self, X: np.ndarray, encoder: Encoder, show_progress: bool
                   ) -> tuple[np.ndarray, np.ndarray, int]:
        """Topics found as without names, then named whole (see the module's docstring)."""
        names = list(self.zero_shot_topics)
        k, self.k_scores_ = self._choose_k(X, show_progress)
        k = max(k, min(len(names), int(self.n_distinct_) - 1))
        found, _ = kmeans_labels(X, k, self.n_init, self.random_state)
        sim = l2_normalize(_group_means(X, found, k)) @ \
            self._guide_vectors([[n] for n in names], encoder).T
        owner = _name_owners(sim, float(self.zero_shot_min_similarity))
        used = np.unique(owner[owner >= 0])
        taken = set(used.tolist())
        dropped = [n for i, n in enumerate(names) if i not in taken]
        if dropped:
            logger.warning("zero-shot names that took no topic: %s", ", ".join(dropped))
        group = np.where(owner >= 0, np.searchsorted(used, owner), 0)
        group[owner < 0] = len(used) + np.arange(int((owner < 0).sum()))
        out = group[found]
        k = int(out.max()) + 1
        self._guided_names = {g: names[int(i)] for g, i in enumerate(used.tolist())}
        logger.info("zero-shot: %d names took %d of %d topics (%d of %d documents)", len(used),
                    int((owner >= 0).sum()), len(owner), int(np.isin(out, range(len(used))).sum()),
                    len(X))
        return out, _group_means(X, out, k), k

    def _name_guided_topics(self) -> None:
        """After the fit's renumbering: zero-shot topics take their names as labels, and
        ``seeded_topics_`` lists each seed list's topic."""
        groups = self._cluster_labels
        final = np.zeros(int(groups.max()) + 1, dtype=np.int64)
        final[groups] = np.asarray(self.doc_labels_)[np.asarray(self.doc_labels_) >= 0]
        if self._guided_names:
            self.custom_labels_ = {int(final[g]): n for g, n in self._guided_names.items()}
        self.seeded_topics_ = [int(final[g]) for g in self._seed_groups]
