"""A cheap student that places documents in topics fitted by the transformer.

The documents method clusters a sample of the corpus on transformer vectors; every other
document only has to be put in one of those topics, a supervised problem with the sample's
own topics as labels. :class:`TopicStudent` learns it from the sample's words: tf-idf over
words, then complement naive Bayes (Rennie et al., 2003), the text classifier that stays
accurate with few documents per class and uneven classes. Placing a document then costs a
sparse dot product instead of a transformer pass, so the transformer's share of the work is
bounded by the sample (``benchmarks/topics/topics_student.py`` measures its agreement with
transformer placement and its NMI against gold labels; a logistic regression on words and
word pairs placed worse on all three corpora measured there).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

logger = logging.getLogger(__name__)

#: How documents are placed outside the fitted sample: by the student, or by the transformer.
PLACEMENTS = ("student", "encoder")


class TopicStudent:
    """tf-idf (words, sublinear counts) and complement naive Bayes predicting a document's
    topic from its words, trained on the fitted sample's topics.

    ``predict_proba(texts)`` gives (n, K) topic shares summing to 1 for documents with a known
    word, all zero for the others (no word seen in the sample: no evidence for any topic).
    """

    def __init__(self, n_topics: int, alpha: float = 0.3, min_df: int = 2,
                 max_features: int = 200_000) -> None:
        self.n_topics = int(n_topics)
        self.alpha = float(alpha)
        self.min_df = int(min_df)
        self.max_features = int(max_features)

    def fit(self, texts: Sequence[str], labels: np.ndarray) -> TopicStudent:
        """Learn ``labels`` (topic ids, -1 for documents in none) from ``texts``."""
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.naive_bayes import ComplementNB

        labels = np.asarray(labels)
        keep = labels >= 0
        texts = [t for t, k in zip(texts, keep, strict=True) if k]
        self.vectorizer_ = TfidfVectorizer(sublinear_tf=True,
                                           min_df=min(self.min_df, max(1, len(texts) // 50)),
                                           max_features=self.max_features, dtype=np.float32)
        X = self.vectorizer_.fit_transform(texts)
        self.classes_ = np.unique(labels[keep])
        self.fit_topics_, self.topic_map_ = self.n_topics, None
        self.log_prob_ = None
        if len(self.classes_) >= 2:
            nb = ComplementNB(alpha=self.alpha).fit(X, labels[keep])
            self.log_prob_ = nb.feature_log_prob_.astype(np.float32)
        logger.info("topic student: %d documents, %d features, %d topics", X.shape[0],
                    X.shape[1], len(self.classes_))
        return self

    def predict_proba(self, texts: Sequence[str]) -> np.ndarray:
        """(n, K) topic shares of ``texts`` (zero rows for texts with no known word): complement
        naive Bayes' joint log-likelihoods, normalised."""
        X = self.vectorizer_.transform(list(texts))
        out = np.zeros((X.shape[0], self.fit_topics_), dtype=np.float32)
        known = np.asarray(X.getnnz(axis=1) > 0)
        if known.any() and self.log_prob_ is None:
            out[np.ix_(known, self.classes_)] = 1.0
        elif known.any():
            jll = np.asarray(X[known] @ self.log_prob_.T, dtype=np.float64)
            jll = np.exp(jll - jll.max(axis=1, keepdims=True))
            out[np.ix_(known, self.classes_)] = jll / jll.sum(axis=1, keepdims=True)
        if self.topic_map_ is None:
            return out
        merged = np.zeros((X.shape[0], self.n_topics), dtype=np.float32)
        np.add.at(merged.T, self.topic_map_, out.T)
        return merged

    def merge_topics(self, to_new: np.ndarray, n_topics: int) -> None:
        """Topic ``t`` becomes ``to_new[t]`` of ``n_topics``: shares are summed over merged
        topics from now on."""
        to_new = np.asarray(to_new, dtype=np.int64)
        self.topic_map_ = to_new if self.topic_map_ is None else to_new[self.topic_map_]
        self.n_topics = int(n_topics)

    def to_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """What :meth:`from_state` rebuilds the fitted student from: JSON settings and
        arrays (no pickle)."""
        config = {"n_topics": self.n_topics, "fit_topics": self.fit_topics_,
                  "alpha": self.alpha, "min_df": self.min_df,
                  "max_features": self.max_features,
                  "vocabulary": self.vectorizer_.get_feature_names_out().tolist()}
        arrays = {"student.idf": self.vectorizer_.idf_.astype(np.float32),
                  "student.classes": self.classes_.astype(np.int64)}
        if self.log_prob_ is not None:
            arrays["student.log_prob"] = self.log_prob_
        if self.topic_map_ is not None:
            arrays["student.topic_map"] = self.topic_map_
        return config, arrays

    @classmethod
    def from_state(cls, config: dict[str, Any], arrays: dict[str, np.ndarray]) -> TopicStudent:
        """The fitted student :meth:`to_state` describes."""
        from sklearn.feature_extraction.text import TfidfVectorizer

        student = cls(int(config["n_topics"]), float(config["alpha"]), int(config["min_df"]),
                      int(config["max_features"]))
        student.vectorizer_ = TfidfVectorizer(sublinear_tf=True, dtype=np.float32,
                                              vocabulary=list(config["vocabulary"]))
        student.vectorizer_.idf_ = arrays["student.idf"]
        student.classes_ = arrays["student.classes"]
        student.log_prob_ = arrays.get("student.log_prob")
        student.fit_topics_ = int(config["fit_topics"])
        student.topic_map_ = arrays.get("student.topic_map")
        return student
