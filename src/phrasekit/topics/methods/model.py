"""Phrase-based topics: cluster the frequent words and phrases of a corpus.

``PhraseTopicModel(encoder="minilm").fit(docs)`` runs these steps:

1. **Extract** noun-chunk and named-entity phrases with spaCy (``PhraseExtractor``), or take a
   cached ``PhraseVocabulary``.
2. **Keep the frequent ones** ("terms"): ``min_df`` / ``max_df`` / ``max_phrases`` (ranked by
   document frequency).
3. **Encode** each term (its most frequent surface form) with the encoder: ``X`` (unit rows).
4. **Add document context.** Pure phrase embeddings group terms by *kind* (countries,
   people, vague nouns) rather than by *subject*. So each document gets a vector: the
   unit-length tf-idf weighted mean of its terms' embeddings (weight ``(1 + log tf) * idf``),
   centred on the corpus mean. A term's *context vector* is the weighted mean of the centred
   vectors of the documents it occurs in. The vector clustered is
   ``normalise((1 - w) * X + w * normalise(context))`` with ``w = context_weight`` (0 gives
   plain phrase embeddings). On BBC News this turns clusters like "countries" into "rugby" or
   "world economy" (NMI of documents vs. gold labels 0.27 -> 0.81 at K = 5 with MiniLM).
5. **Set generic terms aside.** The length of a term's context vector (``specificity_``)
   measures how much its documents share a subject: the contexts of terms used everywhere
   ("time", "way", "people") average out to ~0. The ``generic_share`` least specific terms
   are listed in ``generic_terms_`` but take no part in clustering or in placing documents.
6. **Choose K** (unless ``n_topics`` is given): for each K in ``k_range`` run KMeans and score
   the partition by the cosine silhouette on a fixed-seed sample of at most
   ``silhouette_sample`` terms; the highest silhouette wins (ties: smaller K).
7. **Cluster** with KMeans (fixed seed, ``n_init`` restarts) on the unit vectors, each term
   weighted by ``log(1 + df)`` (``weight_by_df``).
8. **Rank terms** within each topic by ``score = cos(term, centre) * log(1 + df)``: closeness to
   the topic's centre (re-normalised mean of its terms), weighted by the log of how many
   documents use the term, so that well-known, central terms lead and very frequent terms do
   not win on frequency alone. Words (one token) and phrases (several tokens) are ranked
   together (``topics_``) and separately (``topic_words_``, ``topic_phrases_``).
9. **Place documents** through their phrases: a document's topic distribution
   (``doc_topics_``) is the share of its term occurrences that fall in each topic, each term
   weighted by tf-idf, ``(1 + log tf) * (1 + log((1 + N) / (1 + df)))``, so that rare,
   specific terms count more than common ones. Its topic (``doc_labels_``) is the argmax, -1
   without any topic term. A topic's typical documents have the highest share among
   documents with at least ``min_doc_phrases`` topic-term occurrences (ties: more
   occurrences, corpus order), skipping repeats of a listed document (same phrase counts).

Topics are numbered by decreasing number of documents. Everything is deterministic for a given
``random_state``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.cluster import KMeans
from sklearn.metrics import silhouette_score
from tqdm.auto import tqdm

from phrasekit.encoders.base import Encoder, known_rows
from phrasekit.encoders.pooling import l2_normalize
from phrasekit.io import Document
from phrasekit.phrases import PhraseExtractor, PhraseVocabulary, as_documents
from phrasekit.registry import as_encoder
from phrasekit.text import TokenDocs
from phrasekit.topics.core.labels import candidates, name_topics
from phrasekit.topics.core.params import (
    TooFewDocumentsError,
    check_extractor,
    check_int,
    check_share,
    check_topics_k,
)
from phrasekit.topics.methods.context import contextualise, doc_term_counts, doc_term_weights

logger = logging.getLogger(__name__)


class PhraseTopicModel(BaseEstimator):
    """Topics as clusters of phrase embeddings, with documents placed through their phrases.

    Args:
        encoder: registered model name (``"minilm"``, ``"glove-50d"``, ...), local model folder,
            or an ``Encoder`` instance.
        n_topics: fixed number of topics; None chooses K in ``k_range`` by silhouette.
        k_range: ``(k_min, k_max)`` inclusive range searched when ``n_topics`` is None (clipped
            to the number of terms minus one).
        k_step: step through ``k_range``.
        min_df: keep terms found in at least this many documents.
        max_df: drop terms found in more than this many documents (int) or share of documents
            (float in (0, 1]); None keeps all.
        max_phrases: keep at most this many terms (highest document frequency first).
        context_weight: weight of the document-context vector mixed into each term's
            embedding (0 = phrase embedding only, 1 = context only).
        generic_share: share of terms, the least topic-specific, set aside as generic (0 keeps
            all).
        top_n: terms listed per topic (words and phrases each).
        n_typical: typical documents listed per topic.
        min_doc_phrases: a document needs this many topic-term occurrences to be listed as
            typical of a topic.
        silhouette_sample: at most this many terms (fixed-seed sample) score each K.
        n_init: KMeans restarts.
        weight_by_df: weight terms by ``log(1 + df)`` in KMeans.
        random_state: seed for KMeans and the silhouette sample.
        extractor: a ``PhraseExtractor`` (default settings when None).
        batch_size: encoder batch size (None: the encoder's default).
    """

    def __init__(
        self,
        encoder: str | Encoder = "minilm",
        n_topics: int | None = None,
        k_range: tuple[int, int] = (5, 25),
        k_step: int = 1,
        min_df: int = 5,
        max_df: float | int | None = 0.5,
        max_phrases: int | None = 5000,
        context_weight: float = 0.5,
        generic_share: float = 0.2,
        top_n: int = 10,
        n_typical: int = 3,
        min_doc_phrases: int = 5,
        silhouette_sample: int = 5000,
        n_init: int = 3,
        weight_by_df: bool = True,
        random_state: int = 0,
        extractor: PhraseExtractor | None = None,
        batch_size: int | None = None,
    ) -> None:
        self.encoder = encoder
        self.n_topics = n_topics
        self.k_range = k_range
        self.k_step = k_step
        self.min_df = min_df
        self.max_df = max_df
        self.max_phrases = max_phrases
        self.context_weight = context_weight
        self.generic_share = generic_share
        self.top_n = top_n
        self.n_typical = n_typical
        self.min_doc_phrases = min_doc_phrases
        self.silhouette_sample = silhouette_sample
        self.n_init = n_init
        self.weight_by_df = weight_by_df
        self.random_state = random_state
        self.extractor = extractor
        self.batch_size = batch_size

    # ------------------------------------------------------------------ validation
    def check_params(self) -> None:
        """Raise ``ValueError``/``TypeError`` for a bad setting (called by ``fit``; cheap, so
        callers can check before reading a corpus)."""

        check_topics_k(self.n_topics, self.k_range)
        check_int("k_step", self.k_step, 1)
        check_int("min_df", self.min_df, 1)
        if self.max_phrases is not None:
            check_int("max_phrases", self.max_phrases, 3)
        check_share("context_weight", self.context_weight, "[0, 1]")
        check_share("generic_share", self.generic_share, "[0, 1)")
        check_int("top_n", self.top_n, 1)
        check_int("n_typical", self.n_typical, 0)
        check_int("min_doc_phrases", self.min_doc_phrases, 1)
        check_int("silhouette_sample", self.silhouette_sample, 10)
        check_int("n_init", self.n_init, 1)
        if self.max_df is not None and isinstance(self.max_df, float) and not 0 < self.max_df <= 1:
            raise ValueError(f"a float max_df must be in (0, 1], got {self.max_df}")
        check_extractor(self.extractor)

    @property
    def encoder_name(self) -> str:
        enc = getattr(self, "encoder_", None) or self.encoder
        return enc.name if isinstance(enc, Encoder) else str(enc)

    # ------------------------------------------------------------------ fit
    def fit(
        self,
        docs: Iterable[Document | str],
        y: Any = None,
        vocabulary: PhraseVocabulary | None = None,
        show_progress: bool = False,
    ) -> PhraseTopicModel:
        """Fit topics on ``docs`` (``Document`` objects or strings).

        ``vocabulary``: a ``PhraseVocabulary`` already extracted from exactly these documents
        (e.g. loaded from a cache) to skip spaCy. Raises ``ValueError`` for an empty corpus, a
        vocabulary of other documents, or too few frequent terms for the requested K.
        """
        del y  # scikit-learn signature
        self.check_params()
        documents = _check_corpus(docs, vocabulary)
        encoder = as_encoder(self.encoder)  # an unknown model name fails before spaCy runs
        timings: dict[str, float] = {}

        t0 = time.perf_counter()
        if vocabulary is None:
            extractor = self.extractor or PhraseExtractor()
            vocabulary = extractor.extract(documents, show_progress=show_progress)
        timings["extraction"] = time.perf_counter() - t0

        vocab = vocabulary.filter(
            min_df=self.min_df, max_df=self.max_df, max_phrases=self.max_phrases
        )
        self._check_enough_terms(len(vocab), vocabulary, "pass the filters")
        t0 = time.perf_counter()
        vocab, X = self._encode_terms(encoder, vocab, vocabulary, show_progress)
        timings["encoding"] = time.perf_counter() - t0

        t0 = time.perf_counter()
        W = doc_term_weights(vocab)
        V, specificity = contextualise(X, W, self.context_weight)
        labels, k, silhouettes = self._cluster(V, specificity, vocab, vocabulary, show_progress)
        timings["clustering"] = time.perf_counter() - t0

        self.encoder_ = encoder
        self.vocabulary_ = vocab
        self.terms_ = vocab.surface
        self.phrase_embeddings_ = X
        self.embeddings_ = V
        self.specificity_ = specificity
        self.silhouette_ = silhouettes
        self.timings_ = timings
        self.doc_ids_ = [d.id for d in documents]
        self._describe(V, labels, k, vocab, W)
        self.topic_names_ = name_topics(candidates(self.topics_, self.topic_phrases_),
                                        self.doc_labels_, TokenDocs(d.text for d in documents),
                                        [p for p in vocab.surface if " " in p])
        logger.info(
            "%d topics from %d terms (%d generic) over %d docs "
            "(extraction %.1fs, encoding %.1fs, clustering %.1fs)", self.n_topics_, len(vocab),
            len(self.generic_terms_), len(documents), timings["extraction"],
            timings["encoding"], timings["clustering"],
        )
        return self

    def _encode_terms(self, encoder: Encoder, vocab: PhraseVocabulary, full: PhraseVocabulary,
                      show_progress: bool) -> tuple[PhraseVocabulary, np.ndarray]:
        """Step 3: unit embeddings of the terms; terms the encoder has no vector for (e.g. no
        word GloVe knows) are dropped from ``vocab``."""
        X = encoder.encode(vocab.surface, batch_size=self.batch_size, show_progress=show_progress)
        known = known_rows(encoder, vocab.surface, X)
        if not known.all():
            logger.info("dropping %d term(s) the encoder has no vector for", int((~known).sum()))
            vocab = vocab.subset([p for p, k in zip(vocab.phrases, known, strict=True) if k])
            X = X[known]
            self._check_enough_terms(len(vocab), full, "have a vector")
        return vocab, X

    def _cluster(self, V: np.ndarray, specificity: np.ndarray, vocab: PhraseVocabulary,
                 full: PhraseVocabulary, show_progress: bool
                 ) -> tuple[np.ndarray, int, dict[int, float]]:
        """Steps 5-7: KMeans label of every term (-1: generic), the K used and the silhouette
        of every K scored."""
        topical = self._topical_mask(specificity, vocab)
        self._check_enough_terms(int(topical.sum()), full, "remain after generic_share")
        idx = np.flatnonzero(topical)
        Vt = V[idx]
        df = np.asarray(vocab.doc_freq, dtype=np.float64)[idx]
        weights = np.log1p(df) if self.weight_by_df else np.ones_like(df)
        if self.n_topics is not None:
            k = self.n_topics
            sub = self._kmeans(Vt, k, weights)
            silhouettes = {k: self._silhouette(Vt, sub)} if len(idx) > k else {}
        else:
            k, sub, silhouettes = self._choose_k(Vt, weights, show_progress)
        labels = np.full(len(vocab), -1, dtype=np.int64)
        labels[idx] = sub
        return labels, k, silhouettes

    def _choose_k(self, X: np.ndarray, weights: np.ndarray, show_progress: bool
                  ) -> tuple[int, np.ndarray, dict[int, float]]:
        """Step 6: the K of ``k_range`` with the highest silhouette (ties: the smaller K), its
        labels, and the silhouette of every K tried."""
        silhouettes: dict[int, float] = {}
        best: tuple[float, int, np.ndarray] | None = None
        ks = self._candidate_ks(len(X))
        for k in tqdm(ks, desc="topics[choose K]", unit="K", disable=not show_progress,
                      leave=False):
            labels_k = self._kmeans(X, k, weights)
            score = self._silhouette(X, labels_k)
            silhouettes[k] = score
            logger.info("K=%d silhouette=%.4f", k, score)
            if best is None or score > best[0] + 1e-12:
                best = (score, k, labels_k)
        assert best is not None
        return best[1], best[2], silhouettes

    def _topical_mask(self, specificity: np.ndarray, vocab: PhraseVocabulary) -> np.ndarray:
        n = len(specificity)
        n_generic = int(self.generic_share * n)
        mask = np.ones(n, dtype=bool)
        if n_generic:
            order = sorted(range(n), key=lambda i: (specificity[i], vocab.phrases[i]))
            mask[order[:n_generic]] = False
        return mask

    def _check_enough_terms(self, n_terms: int, full: PhraseVocabulary, what: str) -> None:
        need = (self.n_topics if self.n_topics is not None else self.k_range[0]) + 1
        if n_terms < need:
            asked = (
                f"n_topics={self.n_topics}"
                if self.n_topics is not None
                else f"k_range={self.k_range}"
            )
            raise ValueError(
                f"only {n_terms} terms {what} (min_df={self.min_df}, max_df={self.max_df}, "
                f"max_phrases={self.max_phrases}, generic_share={self.generic_share}; "
                f"{len(full)} extracted from {full.n_docs} docs), but {asked} needs at least "
                f"{need}: use a larger corpus, lower --min-df (min_df) or fewer topics"
            )

    def _candidate_ks(self, n_terms: int) -> list[int]:
        k_min, k_max = int(self.k_range[0]), int(self.k_range[1])
        cap = n_terms - 1  # silhouette needs 2 <= K <= n - 1
        if k_max > cap:
            logger.warning("k_range %s clipped to k_max=%d (%d terms)", self.k_range, cap, n_terms)
            k_max = cap
        return list(range(k_min, k_max + 1, int(self.k_step)))

    def _kmeans(self, X: np.ndarray, k: int, weights: np.ndarray) -> np.ndarray:
        km = KMeans(n_clusters=k, n_init=self.n_init, random_state=self.random_state)
        return km.fit_predict(X, sample_weight=weights)

    def _silhouette(self, X: np.ndarray, labels: np.ndarray) -> float:
        if len(set(labels.tolist())) < 2:
            return -1.0
        n = X.shape[0]
        if n > self.silhouette_sample:
            rng = np.random.default_rng(self.random_state)
            idx = np.sort(rng.choice(n, size=self.silhouette_sample, replace=False))
            if len(set(labels[idx].tolist())) < 2:
                return -1.0
            return float(silhouette_score(X[idx], labels[idx], metric="cosine"))
        return float(silhouette_score(X, labels, metric="cosine"))

    # ------------------------------------------------------------------ describe topics
    def _describe(
        self, V: np.ndarray, labels: np.ndarray, k: int, vocab: PhraseVocabulary, W: sp.csr_matrix
    ) -> None:
        """Steps 8-9: number the topics, rank their terms and place the documents."""
        member = labels >= 0
        labels, counts, mass = _doc_topic_matrices(labels, k, vocab, W)
        centres, scores = _term_scores(V, labels, k, vocab)
        row_mass = mass.sum(axis=1, keepdims=True)
        shares = np.divide(mass, row_mass, out=np.zeros_like(mass), where=row_mass > 0)
        doc_labels = np.where(row_mass[:, 0] > 0, np.argmax(mass, axis=1), -1)
        totals = counts.sum(axis=1)
        df = np.asarray(vocab.doc_freq, dtype=np.float64)
        generic = sorted(np.flatnonzero(~member).tolist(), key=lambda i: (-df[i], vocab.phrases[i]))
        self.n_topics_ = k
        self.labels_ = labels
        self.cluster_centers_ = centres
        self.term_scores_ = scores
        self.generic_terms_ = [vocab.surface[i] for i in generic]
        self.topics_, self.topic_words_, self.topic_phrases_ = self._ranked_terms(
            labels, scores, k, vocab
        )
        self.topic_sizes_ = [int(x) for x in np.bincount(labels[member], minlength=k)]
        self.topic_doc_counts_ = [
            int(x) for x in np.bincount(doc_labels[doc_labels >= 0], minlength=k)
        ]
        self.doc_topics_ = shares
        self.doc_topic_counts_ = counts.astype(np.int64)
        self.doc_labels_ = doc_labels
        self.doc_n_phrases_ = totals.astype(np.int64)
        self.typical_docs_ = self._typical_docs(shares, counts, totals, vocab)

    def _ranked_terms(self, labels: np.ndarray, scores: np.ndarray, k: int,
                      vocab: PhraseVocabulary) -> tuple[list, list, list]:
        """Per topic, its best ``(surface, score)`` terms: ``2 * top_n`` of all kinds, and
        ``top_n`` words and ``top_n`` phrases (ties: term key order)."""
        surfaces = vocab.surface
        topics, words, phrases = [], [], []
        for t in range(k):
            members = np.flatnonzero(labels == t)
            ranked = sorted(members.tolist(), key=lambda i: (-scores[i], vocab.phrases[i]))
            entry = [(surfaces[i], round(float(scores[i]), 4)) for i in ranked]
            is_word = [vocab.is_word(i) for i in ranked]
            topics.append(entry[: 2 * self.top_n])
            words.append([e for e, w in zip(entry, is_word, strict=True) if w][: self.top_n])
            phrases.append([e for e, w in zip(entry, is_word, strict=True) if not w][: self.top_n])
        return topics, words, phrases

    def _typical_docs(self, shares: np.ndarray, counts: np.ndarray, totals: np.ndarray,
                      vocab: PhraseVocabulary) -> list[list[tuple[int, float]]]:
        """Per topic, up to ``n_typical`` ``(doc, share)`` with the highest share among the
        documents with ``min_doc_phrases`` topic-term occurrences (all placed documents when
        none has), skipping repeats of a listed document (same phrase counts)."""
        eligible_all = np.flatnonzero(totals >= self.min_doc_phrases)
        if eligible_all.size == 0:
            eligible_all = np.flatnonzero(totals > 0)
        typical: list[list[tuple[int, float]]] = []
        for t in range(shares.shape[1]):
            eligible = eligible_all[shares[eligible_all, t] > 0]
            ranked = sorted(eligible.tolist(), key=lambda d: (-shares[d, t], -counts[d, t], d))
            chosen: list[tuple[int, float]] = []
            for d in ranked:
                if len(chosen) >= self.n_typical:
                    break
                if any(vocab.doc_phrases[d] == vocab.doc_phrases[e] for e, _ in chosen):
                    continue
                chosen.append((d, round(float(shares[d, t]), 4)))
            typical.append(chosen)
        return typical

    # ------------------------------------------------------------------ helpers
    def topic_label(self, topic: int) -> str:
        """A short name (``labels.name_topics``, the rule of every method): a distinctive
        phrase, else two distinctive words; "mixed (...)" for a topic without coherent or
        distinctive terms."""
        self._check_fitted()
        return self.topic_names_[topic].text()

    def topic_terms(self, topic: int) -> list[str]:
        """All terms of a topic, best first."""
        self._check_fitted()
        members = np.flatnonzero(self.labels_ == topic)
        ranked = sorted(
            members.tolist(), key=lambda i: (-self.term_scores_[i], self.vocabulary_.phrases[i])
        )
        return [self.terms_[i] for i in ranked]

    def _check_fitted(self) -> None:
        if not hasattr(self, "topics_"):
            raise RuntimeError("this PhraseTopicModel is not fitted yet: call fit(docs) first")

    def summary(self) -> dict[str, Any]:
        """Key numbers of the fit (K, silhouettes, sizes, timings)."""
        self._check_fitted()
        return {
            "n_topics": self.n_topics_,
            "n_terms": len(self.terms_),
            "n_generic": len(self.generic_terms_),
            "n_docs": len(self.doc_ids_),
            "silhouette": {int(k): round(v, 4) for k, v in self.silhouette_.items()},
            "topic_sizes": self.topic_sizes_,
            "timings": {k: round(v, 2) for k, v in self.timings_.items()},
        }


def _check_corpus(docs: Iterable[Document | str], vocabulary: PhraseVocabulary | None
                  ) -> list[Document]:
    """``docs`` as documents; a ``ValueError`` for an empty corpus or a vocabulary extracted
    from other documents."""
    documents = as_documents(docs)
    if not documents:
        raise TooFewDocumentsError("the corpus is empty: no documents to find topics in")
    if all(not d.text.strip() for d in documents):
        raise TooFewDocumentsError("every document of the corpus is empty")
    if vocabulary is not None and vocabulary.doc_ids != [d.id for d in documents]:
        raise ValueError(
            f"the vocabulary was extracted from other documents ({vocabulary.n_docs} docs) "
            f"than the {len(documents)} given; re-extract it or pass the same corpus"
        )
    return documents


def _doc_topic_matrices(labels: np.ndarray, k: int, vocab: PhraseVocabulary, W: sp.csr_matrix
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Term labels and documents x topics matrices of topic-term occurrence counts and tf-idf
    mass, with the topics renumbered by decreasing number of documents (then of terms, then
    old id)."""
    member = labels >= 0
    onehot = sp.csr_matrix(
        (np.ones(int(member.sum())), (np.flatnonzero(member), labels[member])),
        shape=(len(vocab), k),
    )
    counts = np.asarray((doc_term_counts(vocab) @ onehot).todense(), dtype=np.float64)
    mass = np.asarray((W @ onehot).todense(), dtype=np.float64)
    placed = mass.sum(axis=1) > 0
    docs_per_topic = np.bincount(np.argmax(mass, axis=1)[placed], minlength=k)
    terms_per_topic = np.bincount(labels[member], minlength=k)
    order = sorted(range(k), key=lambda t: (-docs_per_topic[t], -terms_per_topic[t], t))
    remap = np.empty(k, dtype=np.int64)
    remap[order] = np.arange(k)
    labels = np.where(member, remap[np.maximum(labels, 0)], -1)
    return labels, counts[:, order], mass[:, order]


def _term_scores(V: np.ndarray, labels: np.ndarray, k: int, vocab: PhraseVocabulary
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Unit topic centres (k, d) and each term's ``cos(term, centre) * log(1 + df)`` (0 for
    generic terms)."""
    centres = l2_normalize(np.stack([V[labels == t].mean(axis=0) for t in range(k)]))
    cos = np.einsum("ij,ij->i", V, centres[np.maximum(labels, 0)])
    df = np.asarray(vocab.doc_freq, dtype=np.float64)
    return centres, np.where(labels >= 0, cos * np.log1p(df), 0.0)
