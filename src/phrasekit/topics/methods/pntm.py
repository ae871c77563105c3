"""PNTM: the phrase-based neural topic model of Phrase-BERT (Wang et al., 2021, §6.1).

A document vector ``x`` (the encoder's embedding; long documents are cut into word windows
whose embeddings are averaged) is scored against ``K`` topic embeddings, the rows of ``R``:
``t = softmax(R x)``, and reconstructed as ``x~ = R^T t``. Training minimises the hinge loss of
Eq. 2 against ``N`` random other documents ``z``, ``sum_i max(0, 1 - x~.x + x~.z_i)`` (the
dictionary-learning autoencoder of Iyyer et al. 2016, which the paper's equation follows), plus
the orthogonality penalty ``||R R^T - I||`` that keeps topics apart. A topic is read as the
vocabulary entries (words and phrases, optionally sentences) with the largest inner product with
its row of ``R`` (``R L^T``). With ``glove-50d`` as the encoder this is UNTM, the paper's unigram
baseline.

Three departures from the paper, each a parameter (``center=False, init="random",
temperature=1, df_weight=0`` is the paper's model), chosen on bbc_news with K = 20 (NPMI first;
see the README): mean-centring of the embeddings, topics seeded from k-means++ documents, a
softmax temperature of 0.1 for phrasekit's unit-length vectors, and a light document-frequency
prior when reading topics, without which the nearest entries are rare one-off phrases.

Embeddings of documents and of the vocabulary are cached on disk (``cache_dir``), keyed by
encoder and text, so refitting with another K encodes nothing.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from sklearn.base import BaseEstimator
from tqdm.auto import tqdm

from phrasekit.encoders.base import Encoder
from phrasekit.encoders.cache import cached_encode, encode_documents
from phrasekit.encoders.pooling import l2_normalize
from phrasekit.io import Document
from phrasekit.phrases import PhraseExtractor, PhraseVocabulary, as_documents
from phrasekit.registry import as_encoder
from phrasekit.text import TokenDocs
from phrasekit.topics.core.labels import candidates, name_topics
from phrasekit.topics.core.params import TooFewDocumentsError
from phrasekit.topics.core.terms import build_term_vocabulary, presence_matrix

logger = logging.getLogger(__name__)


class PNTM(BaseEstimator):
    """Phrase-based neural topic model (scikit-learn style: ``fit``, ``transform``, ``topics_``).

    Args:
        encoder: registered model name, model folder or ``Encoder`` (``glove-50d`` = UNTM).
        n_topics: number of topics K.
        n_negatives: random negative documents per document (N in Eq. 2).
        ortho_weight: weight of the orthogonality penalty ``||R R^T - I||_F``.
        epochs, batch_size, lr: Adam training of ``R`` over the cached document vectors.
        min_df, max_df, max_phrases: the vocabulary (see ``terms.build_term_vocabulary``).
        top_n: terms listed per topic.
        dedupe: skip a term whose key equals an already listed one up to a final "s"
            ("mobile phone" after "mobile phones"), so topic lists do not repeat themselves.
        chunk_size, max_chunks: document windows (words) for encoding long documents.
        cache_dir: where document and vocabulary embeddings are cached (None: no cache).
        extractor: ``PhraseExtractor`` for the phrases (default settings when None).
        center: subtract the corpus mean from document vectors (then re-normalise) and the
            vocabulary mean from term vectors before training and reading. Transformer
            embeddings share a large common component (anisotropy), so without it random
            orthogonal topic rows point away from every document and stay there.
        init: ``"docs"`` starts ``R`` from k-means++ seeds among the (centred) documents,
            ``"random"`` from Gaussian rows (the paper's setting).
        temperature: ``t = softmax(R x / temperature)``. The paper's unnormalised 768-d BERT
            vectors give peaked distributions at 1; phrasekit's unit vectors need a lower
            temperature, or every document mixes all topics almost evenly and ``R`` barely
            learns.
        df_weight: rank terms by ``R_k . l_j + df_weight * log(df_j)``; 0 is the paper's plain
            inner product, which favours rare, very specific phrases.
        grounding: add ``grounding * log(rate_kj)`` to term ``j``'s score for topic ``k``,
            where ``rate_kj`` is the share of topic ``k``'s documents (weighted by their topic
            shares, smoothed) that contain ``j``. 0 (default) is the paper's pure embedding
            reading; > 0 grounds the listed terms in the documents the topic covers, so they
            co-occur more (higher NPMI) while staying near the topic vector (a lift instead of
            a rate was tried: it favours rare terms and lowered NPMI). Only the reading
            changes: topics, document distributions and labels do not.
        random_state: seed of ``R``'s initialisation, negatives and batch order.
    """

    def __init__(
        self,
        encoder: str | Encoder = "minilm",
        n_topics: int = 50,
        n_negatives: int = 5,
        ortho_weight: float = 1.0,
        epochs: int = 100,
        batch_size: int = 256,
        lr: float = 1e-2,
        min_df: int = 6,
        max_df: float = 0.5,
        max_phrases: int = 75_000,
        top_n: int = 10,
        dedupe: bool = True,
        chunk_size: int = 150,
        max_chunks: int = 8,
        cache_dir: str | Path | None = None,
        extractor: PhraseExtractor | None = None,
        center: bool = True,
        init: str = "docs",
        temperature: float = 0.1,
        df_weight: float = 0.05,
        grounding: float = 0.0,
        random_state: int = 0,
    ) -> None:
        self.encoder = encoder
        self.n_topics = n_topics
        self.n_negatives = n_negatives
        self.ortho_weight = ortho_weight
        self.epochs = epochs
        self.batch_size = batch_size
        self.lr = lr
        self.min_df = min_df
        self.max_df = max_df
        self.max_phrases = max_phrases
        self.top_n = top_n
        self.dedupe = dedupe
        self.chunk_size = chunk_size
        self.max_chunks = max_chunks
        self.cache_dir = cache_dir
        self.extractor = extractor
        self.center = center
        self.init = init
        self.temperature = temperature
        self.df_weight = df_weight
        self.grounding = grounding
        self.random_state = random_state

    # ------------------------------------------------------------------ validation
    def check_params(self) -> None:
        """Raise ``ValueError`` for settings that cannot work (before any long work)."""
        for name in ("n_topics", "n_negatives", "epochs", "batch_size", "min_df", "top_n",
                     "chunk_size", "max_chunks"):
            value = getattr(self, name)
            if not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if self.n_topics < 2:
            raise ValueError(f"n_topics must be at least 2, got {self.n_topics}")
        if self.ortho_weight < 0 or self.lr <= 0 or self.temperature <= 0:
            raise ValueError("ortho_weight must be >= 0, lr and temperature > 0")
        if not 0.0 < self.max_df <= 1.0:
            raise ValueError(f"max_df must be in (0, 1], got {self.max_df}")
        if self.init not in ("docs", "random"):
            raise ValueError(f"init must be 'docs' or 'random', got {self.init!r}")
        if self.df_weight < 0:
            raise ValueError(f"df_weight must be >= 0, got {self.df_weight}")
        if not isinstance(self.grounding, (int, float)) or self.grounding < 0:
            raise ValueError(f"grounding must be a number >= 0, got {self.grounding!r}")

    # ------------------------------------------------------------------ fitting
    def fit(
        self,
        docs: Iterable[Document | str],
        y: Any = None,
        phrases: PhraseVocabulary | None = None,
        show_progress: bool = False,
    ) -> PNTM:
        """Fit topics on ``docs``; ``phrases``: a ``PhraseVocabulary`` of exactly these
        documents (e.g. from a cache) to skip spaCy."""
        del y
        self.check_params()
        documents = as_documents(docs)
        if not documents:
            raise TooFewDocumentsError("the corpus is empty: no documents to find topics in")
        texts = [d.text for d in documents]
        if not any(t.split() for t in texts):
            raise TooFewDocumentsError("every document of the corpus is empty")
        if phrases is not None and phrases.doc_ids != [d.id for d in documents]:
            raise ValueError("the phrase vocabulary was extracted from other documents")
        encoder = as_encoder(self.encoder)
        timings: dict[str, float] = {}
        t0 = time.perf_counter()
        if phrases is None:
            extractor = self.extractor or PhraseExtractor()
            phrases = extractor.extract(documents, show_progress=show_progress)
        timings["extraction"] = time.perf_counter() - t0

        t0 = time.perf_counter()
        token_docs = TokenDocs(texts)
        vocab = build_term_vocabulary(
            token_docs, phrases, self.min_df, self.max_df, self.max_phrases
        )
        if len(vocab) < self.top_n:
            raise ValueError(
                f"only {len(vocab)} terms occur in at least {self.min_df} documents; lower "
                "--min-df (min_df) or give a larger corpus"
            )
        timings["vocabulary"] = time.perf_counter() - t0

        t0 = time.perf_counter()
        X = encode_documents(encoder, texts, self.chunk_size, self.max_chunks, self.cache_dir,
                             show_progress)
        timings["encode_docs"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        L = cached_encode(encoder, vocab.surface, self.cache_dir, "vocab", show_progress)
        timings["encode_vocab"] = time.perf_counter() - t0

        has_text = np.linalg.norm(X, axis=1) > 0
        self.doc_mean_ = X[has_text].mean(axis=0) if self.center and has_text.any() else None
        known = np.linalg.norm(L, axis=1) > 0.5
        self.term_mean_ = L[known].mean(axis=0) if self.center and known.any() else None
        X = self._prepare_docs(X)
        t0 = time.perf_counter()
        self.components_ = self._train(X, show_progress)
        timings["train"] = time.perf_counter() - t0

        self.encoder_ = encoder
        self.term_vocabulary_ = vocab
        self.term_embeddings_ = L
        self.doc_ids_ = [d.id for d in documents]
        self.doc_embeddings_ = X
        self.token_docs_ = token_docs  # the report's metrics reuse it
        self.doc_topics_ = self._distribution(X)
        self.labels_ = np.where(has_text, self.doc_topics_.argmax(1), -1)
        self.timings_ = timings
        t0 = time.perf_counter()
        self.topic_term_rate_ = self._topic_term_rate(presence_matrix(token_docs, vocab.terms))
        self._read_topics()
        self.topic_names_ = name_topics(candidates(self.topics_, self.topic_phrases_), self.labels_,
                                        token_docs, vocab.surface[vocab.n_words:])
        timings["read"] = time.perf_counter() - t0
        logger.info("PNTM: %d topics, %d terms (%d phrases), %d docs (%s)", self.n_topics,
                    len(vocab), len(vocab.phrases), len(texts),
                    ", ".join(f"{k} {v:.1f}s" for k, v in timings.items()))
        return self

    def _train(self, X: np.ndarray, show_progress: bool) -> np.ndarray:
        gen = torch.Generator().manual_seed(int(self.random_state))
        d = X.shape[1]
        valid = np.flatnonzero(np.linalg.norm(X, axis=1) > 0)
        if len(valid) < 2:
            raise ValueError("need at least two non-empty documents to train PNTM")
        Xt = torch.from_numpy(np.ascontiguousarray(X[valid], dtype=np.float32))
        if self.init == "docs":
            from sklearn.cluster import kmeans_plusplus

            seeds, _ = kmeans_plusplus(X[valid], self.n_topics,
                                       random_state=int(self.random_state))
            R0 = torch.nn.functional.normalize(torch.from_numpy(seeds.astype(np.float32)), dim=1)
        else:
            R0 = torch.randn(self.n_topics, d, generator=gen) / d**0.5
        R = torch.nn.Parameter(R0)
        opt = torch.optim.Adam([R], lr=self.lr)
        eye = torch.eye(self.n_topics)
        m = len(valid)
        bar = tqdm(range(self.epochs), desc="pntm[train]", unit="epoch",
                   disable=not show_progress, leave=False)
        for _ in bar:
            order = torch.randperm(m, generator=gen)
            total = 0.0
            for s in range(0, m, self.batch_size):
                idx = order[s : s + self.batch_size]
                x = Xt[idx]
                neg = Xt[torch.randint(0, m, (len(idx), self.n_negatives), generator=gen)]
                t = torch.softmax(x @ R.T / self.temperature, dim=1)
                recon = t @ R
                pos = (recon * x).sum(1, keepdim=True)
                negs = torch.einsum("bd,bnd->bn", recon, neg)
                hinge = torch.clamp(1.0 - pos + negs, min=0).sum(1).mean()
                ortho = torch.linalg.matrix_norm(R @ R.T - eye)
                loss = hinge + self.ortho_weight * ortho
                opt.zero_grad()
                loss.backward()
                opt.step()
                total += float(hinge.detach()) * len(idx)
            bar.set_postfix(hinge=f"{total / m:.4f}")
        self.final_hinge_ = total / m
        return R.detach().numpy().copy()

    def _prepare_docs(self, X: np.ndarray) -> np.ndarray:
        """Centre (when fitted with ``center``) and re-normalise document vectors."""
        if getattr(self, "doc_mean_", None) is None:
            return X
        keep = np.linalg.norm(X, axis=1, keepdims=True) > 0
        return l2_normalize(np.where(keep, X - self.doc_mean_, 0.0))

    def _prepare_terms(self, L: np.ndarray) -> np.ndarray:
        """Centre term vectors (kept unnormalised: terms near the mean are generic)."""
        if getattr(self, "term_mean_", None) is None:
            return L
        return (L - self.term_mean_).astype(np.float32)

    def _topic_term_rate(self, P: Any) -> np.ndarray:
        """(K, V) ``log`` of the smoothed share of each topic's documents (soft counts by
        topic share) that contain each term; ``P``: binary docs x terms."""
        theta = self.doc_topics_.astype(np.float64)
        in_topic = np.asarray((P.T @ theta).T, dtype=np.float64)
        size = theta.sum(axis=0)[:, None]
        return np.log((in_topic + 0.5) / (size + 1.0)).astype(np.float32)

    def _distribution(self, X: np.ndarray) -> np.ndarray:
        logits = X @ self.components_.T / self.temperature
        logits -= logits.max(axis=1, keepdims=True)
        e = np.exp(logits)
        return (e / e.sum(axis=1, keepdims=True)).astype(np.float32)

    def _nearest(self, E: np.ndarray, keys: Sequence[str], n: int, dedupe: bool,
                 bonus: np.ndarray | None = None) -> list[list[tuple[int, float]]]:
        """Per topic, the ``n`` rows of ``E`` with the largest inner product (``R L^T``),
        plus a per-row ``bonus`` when given."""
        scores = self.components_ @ E.T
        if bonus is not None:
            scores = scores + (bonus if bonus.ndim == 2 else bonus[None, :])
        out = []
        for k in range(self.n_topics):
            picked: list[tuple[int, float]] = []
            seen: set[str] = set()
            for j in np.argsort(-scores[k], kind="stable"):
                key = keys[j]
                stem = key[:-1] if key.endswith("s") else key
                if dedupe and (key in seen or stem in seen):
                    continue
                seen.update({key, stem})
                picked.append((int(j), round(float(scores[k, j]), 4)))
                if len(picked) >= n:
                    break
            out.append(picked)
        return out

    def _read_topics(self) -> None:
        vocab = self.term_vocabulary_
        raw = self.term_embeddings_
        known = np.linalg.norm(raw, axis=1) > 0.5  # static encoders give 0 rows for OOV terms
        idx = np.flatnonzero(known)
        L = self._prepare_terms(raw)
        bonus = self.term_bonus()

        def read(sel: np.ndarray) -> tuple[list[list[tuple[str, float]]], list[list[str]]]:
            if not len(sel):
                return [[] for _ in range(self.n_topics)], [[] for _ in range(self.n_topics)]
            keys = [vocab.terms[i] for i in sel]
            near = self._nearest(L[sel], keys, self.top_n, self.dedupe,
                                 None if bonus is None else bonus[..., sel])
            shown = [[(vocab.surface[sel[j]], s) for j, s in t] for t in near]
            return shown, [[keys[j] for j, _ in t] for t in near]

        self.topics_, self.topic_keys_ = read(idx)
        self.topic_words_, _ = read(idx[idx < vocab.n_words])
        self.topic_phrases_, _ = read(idx[idx >= vocab.n_words])

    def term_bonus(self) -> np.ndarray | None:
        """What is added to ``R_k . l_j`` when ranking terms: ``df_weight * log(df_j)``
        (shape (V,)) plus, with ``grounding``, ``grounding * log rate_kj`` (shape (K, V))."""
        vocab = self.term_vocabulary_
        bonus: np.ndarray | None = None
        if self.df_weight:
            bonus = self.df_weight * np.log(np.asarray(vocab.doc_freq, dtype=np.float64))
        if self.grounding:
            grounded = self.grounding * self.topic_term_rate_.astype(np.float64)
            bonus = grounded if bonus is None else grounded + bonus[None, :]
        return bonus

    def reread(self, grounding: float | None = None, df_weight: float | None = None) -> PNTM:
        """Read the topics' terms again with other ``grounding`` / ``df_weight`` (no refit)."""
        self._check_fitted()
        if grounding is not None:
            self.grounding = grounding
        if df_weight is not None:
            self.df_weight = df_weight
        self.check_params()
        self._read_topics()
        return self

    # ------------------------------------------------------------------ use
    def _check_fitted(self) -> None:
        if not hasattr(self, "components_"):
            raise RuntimeError("this PNTM is not fitted yet: call fit(docs) first")

    def transform(self, docs: Iterable[Document | str], show_progress: bool = False
                  ) -> np.ndarray:
        """Topic distributions ``softmax(R x)`` of new documents, (n_docs, K)."""
        self._check_fitted()
        texts = [d.text for d in as_documents(docs)]
        X = encode_documents(self.encoder_, texts, self.chunk_size, self.max_chunks, None,
                             show_progress)
        return self._distribution(self._prepare_docs(X))

    def describe_with(self, texts: Sequence[str], n: int = 5, show_progress: bool = False
                      ) -> list[list[tuple[str, float]]]:
        """Read every topic through arbitrary texts, e.g. sentences (paper appendix A.4):
        the ``n`` texts nearest to each topic embedding."""
        self._check_fitted()
        uniq = list(dict.fromkeys(t for t in texts if t.strip()))
        if not uniq:
            raise ValueError("no non-empty texts to describe topics with")
        E = cached_encode(self.encoder_, uniq, self.cache_dir, "texts", show_progress)
        if self.center:  # texts have a mean of their own (longer than terms, shorter than docs)
            E = E - E.mean(axis=0)
        return [[(uniq[j], s) for j, s in t] for t in self._nearest(E, uniq, n, dedupe=False)]

    def topic_label(self, topic: int) -> str:
        """A short name (``labels.name_topics``, the rule of every method): a distinctive
        phrase, else two distinctive words; "mixed (...)" for a topic without coherent or
        distinctive terms."""
        self._check_fitted()
        return self.topic_names_[topic].text()

    def summary(self) -> dict[str, Any]:
        """Key numbers of the fit."""
        self._check_fitted()
        sizes = np.bincount(self.labels_[self.labels_ >= 0], minlength=self.n_topics)
        return {
            "n_topics": self.n_topics,
            "encoder": self.encoder_.name,
            "n_terms": len(self.term_vocabulary_),
            "n_phrases": len(self.term_vocabulary_.phrases),
            "n_docs": len(self.doc_ids_),
            "n_unassigned": int((self.labels_ < 0).sum()),
            "topic_sizes": [int(s) for s in sizes],
            "final_hinge": round(float(self.final_hinge_), 5),
            "timings": {k: round(v, 2) for k, v in self.timings_.items()},
        }

