"""Reshaping fitted document topics: merge given topics, reduce to a number, and the hierarchy
of topics (BERTopic's ``merge_topics``, ``reduce_topics``, ``hierarchical_topics``).

A merged topic is read again from the fitted sample's documents and vectors (its terms, name,
miscellaneous flag and typical documents, as in the fit); documents outside the sample follow
their topic, and the student's shares are summed over the merged topics, so no document is
encoded again. The hierarchy joins topic centres by average cosine linkage and names every
inner node the way a topic is named.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from phrasekit.encoders.pooling import l2_normalize
from phrasekit.topics.core.labels import CANDIDATES, name_topics
from phrasekit.topics.core.reading import rank_terms, topic_term_scores
from phrasekit.topics.core.terms import presence_matrix

logger = logging.getLogger(__name__)


class TopicReshaper:
    """Mixin of :class:`~phrasekit.topics.DocumentTopicModel`."""

    def _check_reshapable(self) -> None:
        self._check_fitted()
        if getattr(self, "token_docs_", None) is None:
            raise RuntimeError("this model keeps no fitted sample (saved by phrasekit before "
                               "format 3, or applied to a corpus): reshape after a fit or "
                               "after loading a model saved since")

    def merge_topics(self, groups: Sequence[Sequence[int]]) -> Any:
        """Merge each group of topics into one (``[[1, 4], [2, 3, 7]]``); topics are then
        renumbered (largest first, miscellaneous last) and read again. Returns ``self``."""
        self._check_reshapable()
        k = self.n_topics_
        group = np.arange(k)
        seen: set[int] = set()
        if isinstance(groups, str | bytes) or not isinstance(groups, Iterable):
            raise TypeError(f"groups must be a list of lists of topic ids (e.g. [[1, 4]]), got "
                            f"{type(groups).__name__}")
        for g, members in enumerate(groups):
            if isinstance(members, str | bytes) or not isinstance(members, Iterable):
                raise TypeError(f"group {g} must be a list of topic ids (e.g. [1, 4]), got "
                                f"{members!r:.40}")
            ids = [self._topic_id(t) for t in members]
            if not ids:
                raise ValueError(f"group {g} is empty")
            if seen & set(ids):
                raise ValueError(f"topic {sorted(seen & set(ids))[0]} is in two groups")
            seen.update(ids)
            group[ids] = min(ids)
        _, compress = np.unique(group, return_inverse=True)
        self._regroup(compress)
        return self

    def reduce_topics(self, n_topics: int) -> Any:
        """Merge the closest topics (average cosine linkage of their centres) until
        ``n_topics`` remain; with ``n_topics`` at or above the current number nothing changes
        (a warning says so). Returns ``self``."""
        from scipy.cluster.hierarchy import fcluster

        self._check_reshapable()
        if isinstance(n_topics, bool) or not isinstance(n_topics, int | np.integer) \
                or n_topics < 1:
            raise ValueError(f"n_topics must be an integer >= 1, got {n_topics!r}")
        if int(n_topics) >= self.n_topics_:
            logger.warning("reduce_topics(%d): the model has %d topics already; nothing to "
                           "merge", n_topics, self.n_topics_)
        else:
            cut = fcluster(self._linkage(), t=int(n_topics), criterion="maxclust")
            self._regroup(np.unique(cut, return_inverse=True)[1])
        return self

    def hierarchical_topics(self) -> list[dict[str, Any]]:
        """The topic tree, one row per inner node from the closest pair up: ``id`` (K + i),
        ``children`` (topic or node ids), ``topics`` (the leaves below), ``distance`` (cosine
        distance of the join) and ``label`` (named from the node's documents as a topic is; the
        root is "all topics")."""
        self._check_reshapable()
        k = self.n_topics_
        if k < 2:  # one topic (after merging or reducing) has no joins to show
            return []
        P = presence_matrix(self.token_docs_, self.vocabulary_.terms, format="csr")
        sample_labels = self._sample_labels()
        leaves: dict[int, list[int]] = {t: [t] for t in range(k)}
        rows = []
        for i, (a, b, dist, _) in enumerate(self._linkage()):
            node = k + i
            leaves[node] = leaves[int(a)] + leaves[int(b)]
            groups = np.where(np.isin(sample_labels, leaves[node]), 0,
                              np.where(sample_labels >= 0, sample_labels + 1, -1))
            rows.append({"id": node, "children": [int(a), int(b)],
                         "topics": sorted(leaves[node]), "distance": round(float(dist), 4),
                         "label": "all topics" if len(leaves[node]) == k
                         else self._name_group(P, groups)})
        return rows

    # ------------------------------------------------------------------ helpers
    def _linkage(self) -> np.ndarray:
        from scipy.cluster.hierarchy import linkage

        centres = l2_normalize(np.asarray(self.cluster_centers_, dtype=np.float64))
        return linkage(centres, method="average", metric="cosine")

    def _sample_labels(self) -> np.ndarray:
        index = getattr(self, "sample_index_", None)
        labels = np.asarray(self.doc_labels_)
        return labels if index is None or len(index) == len(labels) else labels[index]

    def _name_group(self, P: Any, groups: np.ndarray) -> str:
        """The name of the documents ``groups == 0`` against the others (``groups`` 1 + their
        topic), as a topic's."""
        vocab = self.vocabulary_
        inside = np.where(groups > 0, 1, groups)
        scores = topic_term_scores(P, inside, 2)[:1]  # the node against the other topics
        generic = set(self.generic_terms_)
        allowed = np.asarray([s not in generic for s in vocab.surface])
        is_word = np.arange(len(vocab)) < vocab.n_words
        terms = [vocab.surface[j] for mask, n in ((allowed, CANDIDATES),
                                                  (allowed & ~is_word, CANDIDATES // 2))
                 for j in rank_terms(scores, vocab.terms, n, mask)[0]]
        return name_topics([terms] + [[]] * int(groups.max()), groups, self.token_docs_,
                           vocab.surface[vocab.n_words:])[0].text()

    def _regroup(self, compress: np.ndarray) -> None:
        """Refit the description with topic ``t`` of the sample in group ``compress[t]``."""
        k_new = int(compress.max()) + 1
        index = getattr(self, "sample_index_", np.arange(len(self.doc_labels_)))
        full_labels, full_shares = np.asarray(self.doc_labels_), self.doc_topics_
        n_phrases = self.doc_n_phrases_
        old = full_labels[index]
        grouped = np.where(old >= 0, compress[np.maximum(old, 0)], -1)
        counts = np.bincount(old[old >= 0], minlength=self.n_topics_).astype(np.float64)
        centres = np.zeros((k_new, self.cluster_centers_.shape[1]))
        np.add.at(centres, compress, self.cluster_centers_ * counts[:, None])
        centres /= np.maximum(np.bincount(compress, weights=counts, minlength=k_new), 1)[:, None]
        names = getattr(self, "custom_labels_", {})
        old_names = list(self.topic_names_)
        self._term_matrix = None  # find_topics encodes the new topics' terms again
        P = presence_matrix(self.token_docs_, self.vocabulary_.terms, format="csr")
        self._describe(self.doc_embeddings_, grouped, centres.astype(np.float32), k_new,
                       self.vocabulary_, P)
        final = np.zeros(k_new, dtype=np.int64)
        final[grouped[grouped >= 0]] = self.doc_labels_[grouped >= 0]
        to_final = final[compress]
        alone = np.bincount(compress, minlength=k_new) == 1
        self.custom_labels_ = {int(to_final[t]): v for t, v in names.items()
                               if alone[compress[t]]}
        for t in np.flatnonzero(alone[compress]).tolist():  # a topic not merged keeps its name
            self.topic_names_[int(to_final[t])] = old_names[t]
        if len(index) == len(full_labels):
            return
        labels = np.where(full_labels >= 0, to_final[np.maximum(full_labels, 0)], -1)
        shares = np.zeros((len(labels), k_new), dtype=np.float32)
        np.add.at(shares.T, to_final, full_shares.T)
        labels[index], shares[index] = self.doc_labels_, self.doc_topics_
        self.doc_labels_, self.doc_topics_, self.doc_n_phrases_ = labels, shares, n_phrases
        self.topic_doc_counts_ = [int(x) for x in np.bincount(labels[labels >= 0],
                                                              minlength=k_new)]
        self.typical_docs_ = [[(int(index[d]), s) for d, s in row] for row in self.typical_docs_]
        if getattr(self, "student_", None) is not None:
            self.student_.merge_topics(to_final, k_new)


#: What a saved model keeps so that a loaded one reshapes and slices as a fitted one: arrays
#: (name -> attribute, dtype) ...
RESHAPE_ARRAYS = {"doc_embeddings": ("doc_embeddings_", np.float32),
                  "sample_index": ("sample_index_", np.int64),
                  "doc_topics": ("doc_topics_", np.float32),
                  "doc_n_phrases": ("doc_n_phrases_", np.int64),
                  "term_scores": ("term_scores_", np.float32),
                  "specificity": ("specificity_", np.float32)}


def reshape_state(model: Any) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The config entries and arrays a loaded ``model`` needs to reshape and slice: the
    fitted sample's texts and vectors, every document's shares, the term scores and the
    typical documents (with the texts of those outside the sample). Empty for a model without
    them (one ``applied_to`` a corpus)."""
    if getattr(model, "sample_texts_", None) is None or \
            any(getattr(model, attr, None) is None for attr, _ in RESHAPE_ARRAYS.values()):
        return {}, {}
    arrays = {name: np.asarray(getattr(model, attr), dtype)
              for name, (attr, dtype) in RESHAPE_ARRAYS.items()}
    config = {"sample_texts": list(model.sample_texts_),
              "typical_docs": [[[int(d), float(s)] for d, s in row]
                               for row in model.typical_docs_],
              "typical_texts": {str(r): t for r, t in
                                getattr(model, "typical_texts_", {}).items()}}
    return {"reshape": config}, arrays


def restore_reshape_state(model: Any, config: dict[str, Any],
                          arrays: dict[str, np.ndarray]) -> None:
    """Set what :func:`reshape_state` saved (nothing for a model saved without it)."""
    from phrasekit.text import TokenDocs

    saved = config.get("reshape")
    if not saved:
        return
    for name, (attr, dtype) in RESHAPE_ARRAYS.items():
        setattr(model, attr, np.asarray(arrays[name], dtype))
    model.sample_texts_ = [str(t) for t in saved["sample_texts"]]
    model.token_docs_ = TokenDocs(model.sample_texts_)
    model.typical_docs_ = [[(int(d), float(s)) for d, s in row] for row in saved["typical_docs"]]
    model.typical_texts_ = {int(r): str(t) for r, t in saved["typical_texts"].items()}
    if len(model.sample_texts_) != len(model.doc_embeddings_) or \
            len(model.sample_index_) != len(model.sample_texts_):
        raise ValueError(f"{len(model.sample_texts_)} sample texts but "
                         f"{len(model.doc_embeddings_)} sample vectors")
