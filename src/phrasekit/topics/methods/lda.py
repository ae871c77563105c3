"""LDA baselines on phrasekit's term vocabulary: word LDA and phrase-LDA.

Phrase-LDA (the paper's pLDA baseline; Mimno 2015) is plain LDA over documents in which every
vocabulary phrase is joined into a single token (greedy longest match), so a topic's top terms
mix words and phrases. Both use scikit-learn's variational LDA (Blei et al. 2003; online
updates of Hoffman et al. 2010) on the same ``TermVocabulary`` PNTM reads its topics from.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.decomposition import LatentDirichletAllocation

from phrasekit.topics.core.terms import TermVocabulary, count_matrix

logger = logging.getLogger(__name__)


class LDATopics(BaseEstimator):
    """LDA (``phrases=False``) or phrase-LDA (``phrases=True``) over a ``TermVocabulary``.

    Args:
        n_topics: number of topics K.
        phrases: join vocabulary phrases into single tokens before counting.
        max_iter: passes over the corpus.
        learning_method: scikit-learn's ``"online"`` (mini-batch) or ``"batch"``.
        top_n: terms listed per topic.
        random_state: seed.
        n_jobs: worker processes for the E-step.
    """

    def __init__(
        self,
        n_topics: int = 50,
        phrases: bool = False,
        max_iter: int = 20,
        learning_method: str = "online",
        top_n: int = 10,
        random_state: int = 0,
        n_jobs: int | None = None,
    ) -> None:
        self.n_topics = n_topics
        self.phrases = phrases
        self.max_iter = max_iter
        self.learning_method = learning_method
        self.top_n = top_n
        self.random_state = random_state
        self.n_jobs = n_jobs

    def fit(self, token_docs: Sequence[Sequence[str]], vocab: TermVocabulary, y: Any = None
            ) -> LDATopics:
        """Fit on tokenized documents (``terms.tokenize``) with ``vocab``'s terms."""
        del y
        if self.n_topics < 2:
            raise ValueError(f"n_topics must be at least 2, got {self.n_topics}")
        t0 = time.perf_counter()
        C = count_matrix(token_docs, vocab, phrases=self.phrases)
        used = np.flatnonzero(np.asarray(C.sum(axis=0)).ravel() > 0)
        if len(used) < self.top_n:
            raise ValueError(f"only {len(used)} vocabulary terms occur in the documents")
        C = C[:, used]
        self.count_seconds_ = time.perf_counter() - t0
        self.lda_ = LatentDirichletAllocation(
            n_components=self.n_topics,
            max_iter=self.max_iter,
            learning_method=self.learning_method,
            random_state=self.random_state,
            n_jobs=self.n_jobs,
        )
        self.doc_topics_ = self.lda_.fit_transform(C).astype(np.float32)
        empty = np.asarray(C.sum(axis=1)).ravel() == 0
        self.labels_ = np.where(empty, -1, self.doc_topics_.argmax(axis=1))
        comp = self.lda_.components_ / self.lda_.components_.sum(axis=1, keepdims=True)
        self.topic_keys_, self.topics_ = [], []
        for k in range(self.n_topics):
            best = np.argsort(-comp[k], kind="stable")[: self.top_n]
            self.topic_keys_.append([vocab.terms[used[j]] for j in best])
            self.topics_.append(
                [(vocab.surface[used[j]], round(float(comp[k, j]), 5)) for j in best]
            )
        self.fit_seconds_ = time.perf_counter() - t0
        logger.info("%s: %d topics over %d terms in %.1fs",
                    "phrase-LDA" if self.phrases else "LDA", self.n_topics, len(used),
                    self.fit_seconds_)
        return self
