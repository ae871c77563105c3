"""UCTopic topical phrase mining (paper §4.3): topics of phrase *instances* in context.

``UCTopicModel().fit(docs)`` (encoder: the shipped ``uctopic-minilm``) runs these steps:

1. **Phrase instances.** spaCy noun chunks (``PhraseExtractor(entities=False)``: leading
   determiners stripped, single pronouns and stop-word-only chunks removed) located in their
   sentences; sentences of ``min_sentence_words`` .. ``max_sentence_words`` words.
2. **Sample** at most ``max_instances`` instances to encode (at most
   ``max_instances_per_phrase`` per phrase, each phrase's instances in a seeded random order):
   first two instances of every repeated phrase (CCL's positive pairs), then one of every
   phrase seen once, then the remaining instances round-robin (every phrase's third before any
   phrase's fourth); within the first two tiers more frequent phrases go first.
3. **Encode** every sampled instance with the span encoder (mention kept, ``span`` mode).
4. **Choose K** unless ``n_topics`` is given: KMeans for every K in ``k_range`` on a seeded
   sample of ``silhouette_sample`` instances (the paper's 10K), cosine silhouette; the highest
   wins (ties: smaller K).
5. **CCL** (:func:`phrasekit.training.uctopic.ccl.ccl_finetune`, cluster negatives shared across
   the batch) with K clusters fine-tunes the encoder on the instances, unsupervised, and gives
   the topic centroids in the fine-tuned space.
6. **Phrase topics.** An instance's topic distribution ``z_x`` is the softmax over topics of
   its cosine to each centroid divided by ``topic_temperature`` (Eq. 4's nearest centroid is
   its argmax); a phrase's is the mean over its encoded instances, ``z_p`` (the paper's
   context-agnostic phrase topic), and its topic is the argmax.
7. **Rank** the phrases of each topic by ``z_p[topic] * log(1 + n)`` (``n``: the phrase's
   occurrences in the corpus): confidently topical phrases first, frequent ones ahead of
   one-off mentions. Single words and multi-word phrases are ranked together (``topics_``)
   and separately (``topic_words_`` / ``topic_phrases_``).
8. **Place documents** through their phrases: a document's distribution is the mean ``z_p``
   over its phrase occurrences, its topic the argmax (-1 without any known phrase).

The encoder is fine-tuned in place: pass a fresh one (a name or a folder is loaded anew).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import logging
import time
import zlib
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.cluster import KMeans
from sklearn.metrics import silhouette_score
from tqdm.auto import tqdm

from phrasekit.encoders.pooling import l2_normalize
from phrasekit.encoders.span import SpanEncoder
from phrasekit.errors import raise_failed
from phrasekit.eval.entity_clustering import kmeans_labels
from phrasekit.io import Document, atomic_write
from phrasekit.phrases import as_documents
from phrasekit.phrases.extract import (
    DEFAULT_SPACY_MODEL,
    PhraseExtractor,
    load_spacy,
    split_long_text,
)
from phrasekit.registry import load_span
from phrasekit.text import TokenDocs
from phrasekit.topics.core.labels import candidates, name_topics
from phrasekit.training.uctopic.ccl import LABEL_VIEWS, CCLConfig, ccl_finetune
from phrasekit.training.uctopic.data import sentence_mentions

logger = logging.getLogger(__name__)

#: One parsed sentence: (document index, sentence text, [(start, end, phrase key), ...]).
Sentence = tuple[int, str, list[tuple[int, int, str]]]


class UCTopicModel(BaseEstimator):
    """Topical phrases from context-aware span embeddings fine-tuned with CCL.

    Args:
        encoder: a registered name (``"uctopic-minilm"``, the pre-trained span encoder;
            ``"minilm"``), a span model folder (``phrasekit train uctopic``), a backbone folder,
            or a :class:`~phrasekit.encoders.span.SpanEncoder` (fine-tuned in place).
        n_topics: fixed number of topics; None chooses K in ``k_range`` by silhouette.
        k_range: ``(k_min, k_max)`` searched by silhouette.
        silhouette_sample: instances (seeded sample) that score each K.
        max_instances: at most this many phrase instances are encoded and fine-tuned on.
        max_instances_per_phrase: at most this many instances of one phrase.
        ccl_steps, ccl_batch_size, ccl_lr, top_fraction, keep_prob, negatives_per_cluster:
            CCL settings (:class:`~phrasekit.training.uctopic.ccl.CCLConfig`); 0 steps skips the
            fine-tuning (topics are then the KMeans clusters of the pre-trained space).
        label_view: what CCL's KMeans clusters for pseudo-labels: ``span`` (the paper),
            ``context`` or ``both``; on MIT-Movie, where roles show only in context, ``both``
            was the dev choice (README, UCTopic).
        topic_temperature: softmax temperature of the instance topic distributions.
        top_n: phrases listed per topic.
        n_typical: typical documents listed per topic.
        min_doc_phrases: a document needs this many phrase occurrences to be typical.
        min_sentence_words, max_sentence_words: sentences outside this length are skipped.
        spacy_model: spaCy pipeline name (default: phrasekit's).
        parse_cache: a ``.json.gz`` file keeping the parsed instances between runs.
        encode_batch_size: span-encoder batch size.
        random_state: seed of sampling, KMeans and CCL.
    """

    def __init__(
        self,
        encoder: Any = "uctopic-minilm",
        n_topics: int | None = None,
        k_range: tuple[int, int] = (5, 25),
        silhouette_sample: int = 10_000,
        max_instances: int = 30_000,
        max_instances_per_phrase: int = 50,
        ccl_steps: int = 150,
        ccl_batch_size: int = 16,
        ccl_lr: float = 1e-5,
        top_fraction: float = 0.2,
        keep_prob: float = 0.5,
        negatives_per_cluster: int = 1,
        label_view: str = "span",
        topic_temperature: float = 0.05,
        top_n: int = 10,
        n_typical: int = 3,
        min_doc_phrases: int = 2,
        min_sentence_words: int = 3,
        max_sentence_words: int = 80,
        spacy_model: str | None = None,
        parse_cache: str | Path | None = None,
        encode_batch_size: int = 64,
        random_state: int = 0,
    ) -> None:
        self.encoder = encoder
        self.n_topics = n_topics
        self.k_range = k_range
        self.silhouette_sample = silhouette_sample
        self.max_instances = max_instances
        self.max_instances_per_phrase = max_instances_per_phrase
        self.ccl_steps = ccl_steps
        self.ccl_batch_size = ccl_batch_size
        self.ccl_lr = ccl_lr
        self.top_fraction = top_fraction
        self.keep_prob = keep_prob
        self.negatives_per_cluster = negatives_per_cluster
        self.label_view = label_view
        self.topic_temperature = topic_temperature
        self.top_n = top_n
        self.n_typical = n_typical
        self.min_doc_phrases = min_doc_phrases
        self.min_sentence_words = min_sentence_words
        self.max_sentence_words = max_sentence_words
        self.spacy_model = spacy_model
        self.parse_cache = parse_cache
        self.encode_batch_size = encode_batch_size
        self.random_state = random_state

    # ------------------------------------------------------------------ checks
    def check_params(self) -> None:
        """Raise ValueError on nonsense settings, before any long work."""
        k_lo, k_hi = self.k_range
        raise_failed([
            (self.n_topics is None or self.n_topics >= 2, "n_topics must be >= 2"),
            (2 <= k_lo <= k_hi, f"need 2 <= k_min <= k_max, got {self.k_range}"),
            (self.silhouette_sample >= 10, "silhouette_sample must be >= 10"),
            (self.max_instances >= 10, "max_instances must be >= 10"),
            (self.max_instances_per_phrase >= 1, "max_instances_per_phrase must be >= 1"),
            (self.ccl_steps >= 0, "ccl_steps must be >= 0"),
            (self.ccl_batch_size >= 2, "ccl_batch_size must be >= 2"),
            (self.ccl_lr > 0, "ccl_lr must be > 0"),
            (0 < self.top_fraction <= 1, "top_fraction must be in (0, 1]"),
            (0 <= self.keep_prob <= 1, "keep_prob must be in [0, 1]"),
            (self.negatives_per_cluster >= 1, "negatives_per_cluster must be >= 1"),
            (self.label_view in LABEL_VIEWS,
             f"label_view must be one of {LABEL_VIEWS}, got {self.label_view!r}"),
            (self.topic_temperature > 0, "topic_temperature must be > 0"),
            (self.top_n >= 1, "top_n must be >= 1"),
            (self.n_typical >= 0, "n_typical must be >= 0"),
            (self.min_doc_phrases >= 1, "min_doc_phrases must be >= 1"),
            (1 <= self.min_sentence_words <= self.max_sentence_words,
             "need 1 <= min_sentence_words <= max_sentence_words"),
        ])

    def _load_encoder(self) -> Any:
        if isinstance(self.encoder, SpanEncoder):
            return self.encoder
        if isinstance(self.encoder, str | Path):
            return load_span(self.encoder)  # a fresh instance: fine-tuning it touches nothing else
        return SpanEncoder(self.encoder)

    @property
    def encoder_name(self) -> str:
        """A printable name of the encoder."""
        return getattr(self.encoder, "name", None) or str(self.encoder)

    # ------------------------------------------------------------------ fit
    def fit(self, docs: Iterable[Document | str], show_progress: bool = False
            ) -> UCTopicModel:
        """Mine topical phrases of ``docs``; see the module docstring for the steps."""
        self.check_params()
        documents = as_documents(docs)
        if not documents:
            raise ValueError("no documents")
        encoder = self._load_encoder()  # an unknown model fails before parsing
        self.timings_: dict[str, float] = {}
        t0 = time.perf_counter()
        sentences = self._parse(documents, show_progress)
        self.timings_["extraction"] = time.perf_counter() - t0
        occurrences = [(d, key) for d, _, spans in sentences for _, _, key in spans]
        if not occurrences:
            raise ValueError("no noun-chunk phrases found in the documents")
        counts = Counter(key for _, key in occurrences)
        items, keys, surfaces = self._sample(sentences)
        n_phr = len(set(keys))
        if n_phr < 3:
            raise ValueError(f"only {n_phr} distinct phrases found; need at least 3")
        logger.info("UCTopic: %d phrase occurrences of %d phrases in %d sentences; %d "
                    "instances of %d phrases encoded", len(occurrences), len(counts),
                    len(sentences), len(items), n_phr)
        t1 = time.perf_counter()
        emb = encoder.encode_spans(items, mode="span", batch_size=self.encode_batch_size,
                                   show_progress=show_progress)
        self.timings_["encoding"] = time.perf_counter() - t1
        t2 = time.perf_counter()
        k, self.silhouette_ = self._choose_k(emb, show_progress)
        self.timings_["choose_k"] = time.perf_counter() - t2
        t3 = time.perf_counter()
        if self.ccl_steps > 0:
            cfg = CCLConfig(n_clusters=k, top_fraction=self.top_fraction, steps=self.ccl_steps,
                            batch_size=self.ccl_batch_size, lr=self.ccl_lr,
                            keep_prob=self.keep_prob, shared_negatives=True,
                            negatives_per_cluster=self.negatives_per_cluster,
                            label_view=self.label_view, seed=self.random_state, n_init=3,
                            encode_batch_size=self.encode_batch_size,
                            show_progress=show_progress)
            result = ccl_finetune(encoder, items, cfg, keys=keys)
            final, centroids = result.embeddings, result.centroids
            self.ccl_report_ = result.summary()
            self.ccl_report_.pop("history", None)
        else:
            final = emb
            centroids = l2_normalize(kmeans_labels(emb, k, seed=self.random_state,
                                                   n_init=3)[1])
            self.ccl_report_ = {}
        self.timings_["ccl"] = time.perf_counter() - t3
        self._describe(documents, sentences, counts, final, centroids, keys, surfaces)
        self.topic_names_ = name_topics(candidates(self.topics_, self.topic_phrases_),
                                        self.doc_labels_, TokenDocs(d.text for d in documents),
                                        [p for p in self.phrase_surface_ if " " in p])
        return self

    # ------------------------------------------------------------------ steps
    def _parse(self, documents: list[Document], show_progress: bool) -> list[Sentence]:
        """Noun-chunk instances per sentence, read from ``parse_cache`` when it matches."""
        sig = self._parse_signature(documents)
        cache = Path(self.parse_cache) if self.parse_cache else None
        if cache is not None and cache.is_file():
            try:
                with gzip.open(cache, "rt", encoding="utf-8") as fh:
                    data = json.load(fh)
                if data.get("signature") == sig:
                    logger.info("phrase instances read from cache %s", cache)
                    return [(int(d), str(t), [(int(a), int(b), str(k)) for a, b, k in spans])
                            for d, t, spans in data["sentences"]]
                logger.warning("parse cache %s is for other documents or settings; "
                               "re-parsing", cache)
            except (OSError, ValueError, KeyError, TypeError, EOFError, zlib.error) as exc:
                logger.warning("ignoring unreadable parse cache %s (%s)", cache, exc)
        nlp = load_spacy(self.spacy_model or DEFAULT_SPACY_MODEL)
        extractor = PhraseExtractor(spacy_model=nlp, entities=False)
        pieces = [(piece, i) for i, d in enumerate(documents)
                  for piece in split_long_text(d.text, 100_000) if piece.strip()]
        out: list[Sentence] = []
        stream = nlp.pipe(pieces, as_tuples=True, batch_size=32)
        for sdoc, i in tqdm(stream, total=len(pieces), desc="uctopic[spaCy]", unit="doc",
                            disable=not show_progress):
            for text, mentions in sentence_mentions(sdoc, extractor, self.max_sentence_words,
                                                    self.min_sentence_words):
                out.append((i, text, [(s, e, key) for s, e, key, _ in mentions]))
        if cache is not None:
            cache.parent.mkdir(parents=True, exist_ok=True)
            with atomic_write(cache, mode="wb") as raw, gzip.GzipFile(
                    fileobj=raw, mode="wb", mtime=0) as gz:
                gz.write(json.dumps({"signature": sig, "sentences": out}).encode("utf-8"))
        return out

    def _parse_signature(self, documents: list[Document]) -> str:
        h = hashlib.sha256()
        for d in documents:
            h.update(d.id.encode("utf-8", "replace") + b"\0")
            h.update(hashlib.blake2b(d.text.encode("utf-8", "replace"),
                                     digest_size=8).digest())
        h.update(json.dumps([self.spacy_model, self.min_sentence_words,
                             self.max_sentence_words, "noun_chunks-v1"]).encode())
        return h.hexdigest()[:24]

    def _sample(self, sentences: list[Sentence]
                ) -> tuple[list[tuple[str, tuple[int, int]]], list[str], dict[str, str]]:
        """The instances to encode (round-robin over phrases), their keys, and each phrase's
        most frequent surface form."""
        by_key: dict[str, list[tuple[int, int, int]]] = {}
        surface_counts: dict[str, Counter[str]] = {}
        for si, (_, text, spans) in enumerate(sentences):
            for s, e, key in spans:
                by_key.setdefault(key, []).append((si, s, e))
                surface_counts.setdefault(key, Counter())[text[s:e]] += 1
        rng = np.random.default_rng(self.random_state)
        ranked: list[tuple[tuple[int, int, float], str, tuple[int, int, int]]] = []
        for key, occ in by_key.items():
            order = rng.permutation(len(occ))[: self.max_instances_per_phrase]
            for rank, j in enumerate(order):
                if rank < 2:  # tier 0: pairs of repeated phrases; tier 1: phrases seen once
                    prio = (0 if len(occ) > 1 else 1, -len(occ), float(rng.random()))
                else:
                    prio = (2, rank, float(rng.random()))
                ranked.append((prio, key, occ[j]))
        ranked.sort(key=lambda r: r[0])
        chosen = sorted(ranked[: self.max_instances], key=lambda r: r[2])  # corpus order
        items = [(sentences[si][1], (s, e)) for _, _, (si, s, e) in chosen]
        keys = [key for _, key, _ in chosen]
        surfaces = {k: c.most_common(1)[0][0] for k, c in surface_counts.items()}
        return items, keys, surfaces

    def _choose_k(self, emb: np.ndarray, show_progress: bool) -> tuple[int, dict[int, float]]:
        if self.n_topics is not None:
            if self.n_topics > len(emb) - 1:
                raise ValueError(f"n_topics={self.n_topics} needs more than {len(emb)} "
                                 "instances")
            return int(self.n_topics), {}
        x = l2_normalize(emb)
        if len(x) > self.silhouette_sample:
            rng = np.random.default_rng(self.random_state)
            x = x[np.sort(rng.choice(len(x), self.silhouette_sample, replace=False))]
        lo, hi = self.k_range
        ks = [k for k in range(lo, hi + 1) if k <= len(x) - 1]
        if not ks:
            raise ValueError(f"too few instances ({len(x)}) for K in {self.k_range}")
        scores: dict[int, float] = {}
        for k in tqdm(ks, desc="uctopic[K]", unit="K", disable=not show_progress):
            labels = KMeans(n_clusters=k, n_init=3, random_state=self.random_state).fit(x).labels_
            scores[k] = float(silhouette_score(x, labels, metric="cosine")) \
                if len(set(labels)) > 1 else -1.0
            logger.info("K=%d silhouette=%.4f", k, scores[k])
        best = max(ks, key=lambda k: (scores[k], -k))
        return best, scores

    def _describe(self, documents: list[Document], sentences: list[Sentence],
                  counts: Counter[str], emb: np.ndarray, centroids: np.ndarray,
                  keys: list[str], surfaces: dict[str, str]) -> None:
        k = len(centroids)
        logits = l2_normalize(emb) @ l2_normalize(centroids).T / self.topic_temperature
        z = np.exp(logits - logits.max(axis=1, keepdims=True))
        z /= z.sum(axis=1, keepdims=True)
        phrases = sorted(set(keys))
        col = {p: i for i, p in enumerate(phrases)}
        rows = np.asarray([col[key] for key in keys])
        n_inst = np.bincount(rows, minlength=len(phrases)).astype(np.float64)
        zp = np.zeros((len(phrases), k))
        np.add.at(zp, rows, z)
        zp /= n_inst[:, None]
        mean_emb = np.zeros((len(phrases), emb.shape[1]), dtype=np.float32)
        np.add.at(mean_emb, rows, l2_normalize(emb))
        self.phrases_ = phrases
        self.phrase_surface_ = [surfaces[p] for p in phrases]
        self.phrase_counts_ = np.asarray([counts[p] for p in phrases], dtype=np.int64)
        self.phrase_topics_ = zp
        self.labels_ = zp.argmax(axis=1)
        self.embeddings_ = l2_normalize(mean_emb)
        self.term_scores_ = zp.max(axis=1) * np.log1p(self.phrase_counts_)
        self.centroids_ = centroids
        self.n_topics_ = k
        self.n_instances_ = len(keys)
        self.n_occurrences_ = int(sum(counts.values()))
        self.n_sentences_ = len(sentences)
        self.topics_, self.topic_words_, self.topic_phrases_ = [], [], []
        self.topic_sizes_ = np.bincount(self.labels_, minlength=k).tolist()
        for t in range(k):
            members = np.flatnonzero(self.labels_ == t)
            score = zp[members, t] * np.log1p(self.phrase_counts_[members])
            order = members[np.argsort(-score, kind="stable")]
            ranked = [(self.phrase_surface_[i], round(float(zp[i, t] * np.log1p(
                self.phrase_counts_[i])), 4)) for i in order]
            multi = [len(self.phrases_[i].split()) > 1 for i in order]
            self.topics_.append(ranked[: self.top_n])
            self.topic_words_.append([r for r, m in zip(ranked, multi, strict=True)
                                      if not m][: self.top_n])
            self.topic_phrases_.append([r for r, m in zip(ranked, multi, strict=True)
                                        if m][: self.top_n])
        # documents through their phrase occurrences
        n_docs = len(documents)
        doc_dist = np.zeros((n_docs, k))
        doc_n = np.zeros(n_docs, dtype=np.int64)
        for d, _, spans in sentences:
            for _, _, key in spans:
                i = col.get(key)
                if i is not None:
                    doc_dist[d] += zp[i]
                    doc_n[d] += 1
        has = doc_n > 0
        doc_dist[has] /= doc_n[has, None]
        self.doc_ids_ = [d.id for d in documents]
        self.doc_topics_ = doc_dist
        self.doc_n_phrases_ = doc_n
        self.doc_labels_ = np.where(has, doc_dist.argmax(axis=1), -1)
        self.topic_doc_counts_ = np.bincount(self.doc_labels_[has], minlength=k).tolist()
        self.typical_docs_ = []
        for t in range(k):
            cand = np.flatnonzero((self.doc_labels_ == t) & (doc_n >= self.min_doc_phrases))
            best = cand[np.argsort(-doc_dist[cand, t], kind="stable")][: self.n_typical]
            self.typical_docs_.append([(int(d), round(float(doc_dist[d, t]), 4))
                                       for d in best])

    # ------------------------------------------------------------------ reading
    def _check_fitted(self) -> None:
        if not hasattr(self, "topics_"):
            raise RuntimeError("UCTopicModel is not fitted; call fit(docs) first")

    def topic_label(self, topic: int) -> str:
        """A short name (``labels.name_topics``, the rule of every method): a distinctive
        phrase, else two distinctive words; "mixed (...)" for a topic without coherent or
        distinctive terms."""
        self._check_fitted()
        return self.topic_names_[topic].text() or f"topic {topic}"

    def summary(self) -> dict[str, Any]:
        """Key numbers of the fit."""
        self._check_fitted()
        return {
            "encoder": self.encoder_name,
            "n_topics": self.n_topics_,
            "k_chosen_by": "fixed" if self.n_topics is not None else "silhouette",
            "silhouette": {int(k): round(v, 4) for k, v in self.silhouette_.items()},
            "n_docs": len(self.doc_ids_),
            "n_sentences": self.n_sentences_,
            "n_occurrences": self.n_occurrences_,
            "n_phrases": len(self.phrases_),
            "n_instances_encoded": self.n_instances_,
            "n_unassigned": int(np.sum(self.doc_labels_ < 0)),
            "ccl": self.ccl_report_,
            "timings": {k: round(v, 2) for k, v in self.timings_.items()},
        }
