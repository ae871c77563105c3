"""Sub-word LDA (SubTST §2): latent topics over a transformer's WordPiece tokens.

Each text is tokenised with the backbone's own tokenizer and becomes a bag of sub-word ids; an
online variational LDA (Hoffman, Bach & Blei 2010, scikit-learn's ``learning_method="online"``)
is fitted over those bags. :meth:`SubwordLDA.token_topics` gives every vocabulary entry its
topic distribution p(topic | sub-word) (the columns of the topic-term matrix, normalised), so a
sentence of N sub-words maps to the k x N matrix M_t of the paper.

Special tokens, punctuation-only pieces and English stop words are left out of the bags: they
carry no topic and would otherwise dominate every topic. Left-out and unseen pieces keep the
prior only, i.e. a uniform distribution (no topical evidence).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from safetensors.numpy import load_file
from safetensors.numpy import save as safetensors_bytes

from phrasekit.encoders.base import validate_texts
from phrasekit.io import atomic_write

logger = logging.getLogger(__name__)

LDA_FILE = "subword_lda.safetensors"
FORMAT = "phrasekit-subword-lda"


def _excluded_token_ids(tokenizer: Any) -> np.ndarray:
    """Ids of special tokens, punctuation/digit-only pieces and English stop words."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS  # slow import: on use

    vocab: dict[str, int] = tokenizer.get_vocab()
    special = set(getattr(tokenizer, "all_special_ids", []) or [])
    out = []
    for piece, idx in vocab.items():
        bare = piece[2:] if piece.startswith("##") else piece
        if (idx in special or (piece.startswith("[") and piece.endswith("]"))
                or not any(ch.isalpha() for ch in bare)
                or (not piece.startswith("##") and piece.lower() in ENGLISH_STOP_WORDS)):
            out.append(idx)
    return np.asarray(sorted(out), dtype=np.int64)


class SubwordLDA:
    """Online LDA over sub-word bags of a tokenizer's vocabulary (scikit-learn estimator style).

    Args:
        n_topics: number of latent topics k (the paper uses 80 for MSRP, after tBERT).
        max_iter: passes over the documents.
        batch_size: documents per online update.
        learning_decay, learning_offset: the online step-size schedule (kappa, tau0).
        doc_topic_prior, topic_word_prior: Dirichlet priors (None: 1/k, as scikit-learn).
        seed: random state of the variational initialisation.
    """

    def __init__(self, n_topics: int = 80, max_iter: int = 10, batch_size: int = 256,
                 learning_decay: float = 0.7, learning_offset: float = 10.0,
                 doc_topic_prior: float | None = None, topic_word_prior: float | None = None,
                 seed: int = 0) -> None:
        if n_topics < 2:
            raise ValueError(f"n_topics must be >= 2, got {n_topics}")
        self.n_topics = int(n_topics)
        self.max_iter = int(max_iter)
        self.batch_size = int(batch_size)
        self.learning_decay = float(learning_decay)
        self.learning_offset = float(learning_offset)
        self.doc_topic_prior = doc_topic_prior
        self.topic_word_prior = topic_word_prior
        self.seed = int(seed)
        self.components_: np.ndarray | None = None
        self.fit_seconds_: float = 0.0
        self.n_documents_: int = 0

    def get_params(self) -> dict[str, Any]:
        """Constructor parameters (scikit-learn convention)."""
        return {k: getattr(self, k) for k in (
            "n_topics", "max_iter", "batch_size", "learning_decay", "learning_offset",
            "doc_topic_prior", "topic_word_prior", "seed")}

    def bags(self, texts: Sequence[str], tokenizer: Any) -> Any:
        """Sparse (n_texts, vocab) count matrix of the texts' topical sub-word ids."""
        vocab_size = len(tokenizer)
        excluded = np.zeros(vocab_size, dtype=bool)
        excluded[_excluded_token_ids(tokenizer)] = True
        rows, cols = [], []
        ids_list = tokenizer(list(texts), add_special_tokens=False, truncation=False)["input_ids"]
        for i, ids in enumerate(ids_list):
            ids = np.asarray(ids, dtype=np.int64)
            ids = ids[~excluded[ids]] if len(ids) else ids
            rows.extend([i] * len(ids))
            cols.extend(ids.tolist())
        data = np.ones(len(rows), dtype=np.float64)
        from scipy.sparse import csr_matrix  # slow import: on use

        return csr_matrix((data, (rows, cols)), shape=(len(ids_list), vocab_size))

    def fit(self, texts: Sequence[str], tokenizer: Any) -> SubwordLDA:
        """Fit the topics on ``texts`` (e.g. every sentence of a task's training split)."""
        from sklearn.decomposition import LatentDirichletAllocation

        texts = validate_texts(texts)
        if len(texts) < self.n_topics:
            raise ValueError(f"need at least n_topics={self.n_topics} texts to fit LDA, "
                             f"got {len(texts)}")
        t0 = time.perf_counter()
        X = self.bags(texts, tokenizer)
        keep = np.asarray(X.sum(axis=1)).ravel() > 0
        lda = LatentDirichletAllocation(
            n_components=self.n_topics, learning_method="online", max_iter=self.max_iter,
            batch_size=self.batch_size, learning_decay=self.learning_decay,
            learning_offset=self.learning_offset, doc_topic_prior=self.doc_topic_prior,
            topic_word_prior=self.topic_word_prior, random_state=self.seed, n_jobs=1,
        )
        lda.fit(X[keep])
        comp = lda.components_.astype(np.float32)
        # the online updates start from random values; a piece never counted has no evidence,
        # so give it exactly the prior (a uniform p(topic | piece))
        unseen = np.asarray(X.sum(axis=0)).ravel() == 0
        comp[:, unseen] = float(lda.topic_word_prior_)
        self.components_ = comp
        self.n_documents_ = int(keep.sum())
        self.fit_seconds_ = time.perf_counter() - t0
        logger.info("sub-word LDA: k=%d over %d documents (%d sub-word types seen) in %.1f s",
                    self.n_topics, self.n_documents_, int((X.sum(axis=0) > 0).sum()),
                    self.fit_seconds_)
        return self

    def _check_fitted(self) -> np.ndarray:
        if self.components_ is None:
            raise RuntimeError("SubwordLDA is not fitted: call fit(texts, tokenizer) first")
        return self.components_

    def token_topics(self) -> np.ndarray:
        """(vocab, k) float32: p(topic | sub-word), each row summing to 1."""
        comp = self._check_fitted().astype(np.float64)
        cols = comp / comp.sum(axis=0, keepdims=True)
        return cols.T.astype(np.float32)

    def top_tokens(self, tokenizer: Any, n: int = 10) -> list[list[str]]:
        """The ``n`` most probable sub-words of each topic (for inspection)."""
        comp = self._check_fitted()
        inv = {i: t for t, i in tokenizer.get_vocab().items()}
        return [[inv.get(int(j), "?") for j in np.argsort(-row)[:n]] for row in comp]

    def state(self) -> tuple[dict[str, np.ndarray], dict[str, str]]:
        """Tensors and string metadata for saving inside a model file."""
        meta = {"format": FORMAT, "n_documents": str(self.n_documents_),
                **{k: repr(v) for k, v in self.get_params().items()}}
        return {"lda.components": self._check_fitted()}, meta

    @classmethod
    def from_components(cls, components: np.ndarray, **params: Any) -> SubwordLDA:
        """Rebuild a fitted model from its (k, vocab) topic-term matrix."""
        comp = np.asarray(components, dtype=np.float32)
        if comp.ndim != 2 or comp.shape[0] < 2 or not np.all(np.isfinite(comp)) or comp.min() < 0:
            raise ValueError(f"invalid LDA components of shape {comp.shape}")
        model = cls(n_topics=comp.shape[0], **params)
        model.components_ = comp
        return model

    def save(self, path: str | Path) -> None:
        """Write the topic-term matrix to a safetensors file atomically."""
        tensors, meta = self.state()
        with atomic_write(Path(path), mode="wb") as fh:
            fh.write(safetensors_bytes(tensors, metadata=meta))

    @classmethod
    def load(cls, path: str | Path) -> SubwordLDA:
        """Read a matrix written by :meth:`save`."""
        tensors = load_file(str(path))
        if "lda.components" not in tensors:
            raise ValueError(f"{path} holds no sub-word LDA (missing 'lda.components')")
        return cls.from_components(tensors["lda.components"])
