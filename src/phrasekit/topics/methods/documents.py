"""Document topics: k-means on document embeddings, named by their words and phrases.

``DocumentTopicModel().fit(docs)`` (``phrasekit topics --method documents``,
the default) runs these steps:

1. **Embed documents**: the encoder over word windows of each document, averaged by words
   (``encoders.cache.encode_documents``), then centred on the corpus mean and re-normalised, which
   removes the component all transformer embeddings share.
2. **Choose K** (unless ``n_topics`` is given) by the stability of k-means across random
   halves of the corpus (``choose_k``): the largest K at least 90% as stable as the most
   stable one, so a corpus with a finer level of real groups gets it; every K's score is
   kept (``k_scores_``) and drawn in the report.
3. **Cluster** the documents with k-means: every non-empty document gets a topic.
4. **Build the vocabulary**: words and spaCy noun phrases in at least ``min_df`` documents
   (``terms.build_term_vocabulary``), found verbatim in each document. spaCy only has to
   find which phrases the corpus uses, so it reads a seeded sample of documents holding
   ``phrase_words`` words; every phrase is then counted in every document.
5. **Set generic terms aside** before reading any topic: ``reading.term_specificity`` says how
   far a term's documents sit from the corpus centre, corrected for chance. The
   ``generic_share`` least specific terms (boilerplate such as "results" or "et al", units,
   citation debris) are listed in ``generic_terms_`` and name no topic.
6. **Name topics** by ``p_in * log(p_in / p_all)`` (``reading.topic_term_scores``): terms
   frequent in the topic's documents and rarer elsewhere. Words and phrases are ranked
   together (``topics_``) and apart (``topic_words_``, ``topic_phrases_``); a short
   ``topic_label`` (``labels.name_topics``, the rule of every method) is a distinctive
   phrase, else two distinctive words, and a topic without coherent or distinctive terms is
   flagged "mixed" (``topic_names_``).
7. **Flag miscellaneous topics**: a topic whose own best terms, generic ones included, are
   mostly generic is a group of documents about nothing in particular; it is marked
   (``miscellaneous_``), labelled "miscellaneous" and listed after the real topics.

Topics are numbered real ones first, by decreasing number of documents. Deterministic for a
given ``random_state``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator

from phrasekit.encoders.base import Encoder
from phrasekit.encoders.cache import encode_documents
from phrasekit.encoders.pooling import l2_normalize
from phrasekit.io import Document
from phrasekit.phrases import PhraseExtractor, PhraseVocabulary, as_documents, sample_by_words
from phrasekit.registry import DOCUMENTS_MODEL, as_encoder
from phrasekit.text import TokenDocs
from phrasekit.threads import choose_threads, limited_threads, parse_threads
from phrasekit.topics.core.choose_k import CRITERIA, choose_k
from phrasekit.topics.core.labels import candidates, name_topics
from phrasekit.topics.core.params import (
    TooFewDocumentsError,
    check_extractor,
    check_int,
    check_share,
    check_topics_k,
    given_embeddings,
    resolve_cache,
    resolve_progress,
)
from phrasekit.topics.core.placement import (
    shares_of,
    sq_distances,
    warn_unassigned,
    without_unknown,
)
from phrasekit.topics.core.reading import rank_terms, term_specificity, topic_term_scores
from phrasekit.topics.core.student import PLACEMENTS, TopicStudent
from phrasekit.topics.core.terms import build_term_vocabulary, presence_matrix
from phrasekit.topics.exploration.explore import TopicExplorer, sample_keys
from phrasekit.topics.exploration.guided import TopicGuide
from phrasekit.topics.exploration.reshape import TopicReshaper
from phrasekit.topics.exploration.slices import TopicSlicer
from phrasekit.topics.exploration.verbs import TopicVerbs
from phrasekit.topics.methods.placing import TopicPlacer
from phrasekit.topics.methods.sampling import sample_corpus

logger = logging.getLogger(__name__)

#: ``fit_docs="auto"``: the transformer encodes a seeded sample of this many documents (the
#: rest are placed by the student; chosen on the development corpora, docs/methods/topics.md
#: "Large corpora") ...
FIT_DOCS = 2_000
#: ... or more, to hold this many words (5 s of MiniLM in bf16 on two cores), ...
FIT_WORDS = 60_000
#: ... or, in a large corpus, this share of its documents up to ``FIT_DOCS_MAX``.
FIT_SHARE = 0.2
FIT_DOCS_MAX = 4_000
#: ``fit_docs="all"``: every document is encoded.
ALL_DOCS = 2**62


class DocumentTopicModel(TopicVerbs, TopicExplorer, TopicPlacer, TopicReshaper, TopicSlicer,
                         TopicGuide, BaseEstimator):
    """Topics as k-means clusters of document embeddings, named by words and phrases.

    Args:
        encoder: registered model name, local model folder or ``Encoder`` (default
            ``minilm@auto``: MiniLM in bf16 where the CPU computes it natively, as the CLI).
        n_topics: fixed number of topics; None chooses K in ``k_range`` by ``k_criterion``.
        k_range: ``(k_min, k_max)`` searched when ``n_topics`` is None.
        k_criterion: ``"stability"`` or ``"silhouette"`` (see ``topics.core.choose_k``).
        k_tolerance: with stability, the largest K scoring at least ``1 - k_tolerance`` of
            the best K's score is chosen (``choose_k.best_k``).
        min_df, max_df, max_phrases: the term vocabulary (``terms.build_term_vocabulary``).
        generic_share: share of terms, the least specific, that name no topic.
        misc_share: a topic is miscellaneous when more than this share of its best
            ``top_n`` terms (generic ones included) are generic.
        top_n: terms listed per topic (words and phrases each).
        n_typical: typical documents listed per topic (nearest its centre).
        chunk_size, max_chunks, max_words: a document is encoded as its first ``max_words``
            words (at most ``chunk_size * max_chunks``; None: all of those, in windows of
            ``chunk_size``) in the fewest windows of at most ``chunk_size`` words, of even
            length, averaged by words: a document of up to 150 words is one window, a longer
            one's first 200 words two of about 100. That kept mean NMI (seeds 0-2) within
            0.02 of two 150-word windows, or above, on the five development corpora and
            encodes 27% less of bbc_news (``benchmarks/topics/topics_windows.py``).
        n_init: k-means restarts for the final partition.
        random_state: seed of k-means and of K's choice.
        cache_dir: where document vectors are cached between runs: ``"auto"`` (default, as
            the CLI) phrasekit's vector cache (``settings.vector_cache_dir``), a folder, or
            None for no cache.
        n_jobs: spaCy worker processes for the phrases.
        phrase_words: spaCy reads a seeded sample of documents holding about this many
            words (None: every document); phrases are counted in all of them. 100,000 left
            NMI and NPMI as 150,000 and 300,000 did on the five development corpora, and every
            topic's top 20 terms but for one in 20newsgroups, with a third less spaCy time
            (``benchmarks/topics/topics_settings.py``); a larger sample finds rarer phrases.
        extractor: ``PhraseExtractor`` for the phrases (None: ``phrase_extractor()``).
        fit_docs: at most this many documents (a seeded sample of a larger corpus) are
            encoded, clustered and read for terms; every other one is then placed in a topic
            in a streaming pass, so memory and transformer time follow the sample. ``"auto"``
            (default): ``FIT_DOCS`` documents, or more in a corpus of short texts, enough to
            hold ``FIT_WORDS`` words (short texts cost little to encode and each say little to
            the student), or ``FIT_SHARE`` of a large corpus up to ``FIT_DOCS_MAX`` (more
            documents hold more and finer topics); ``"all"``: every document is encoded.
        placement: how documents outside the sample are placed: ``"student"`` (tf-idf and
            complement naive Bayes trained on the sample's topics, ``topics.core.student``; no
            transformer pass) or ``"encoder"`` (encoded, then their nearest topic).
        seed_topics: lists of seed phrases, each starting one topic at its vector (``guided``).
        seed_pull: share of the way each document is moved toward its most similar seed before
            k-means (BERTopic's nudge). 0 (default) only starts the topics at the seeds: the
            only pull that lowered NMI on neither of two development corpora
            (``benchmarks/topics/topics_seed_pull.py``; 0.25 cost 0.009-0.046). Weak vectors (GloVe)
            may need 0.25 for a seed to hold its topic.
        zero_shot_topics, zero_shot_min_similarity: topic names. Topics are found as
            without names, then each name takes its home topic and the topics whose centre is
            at least this cosine from it, merged into one topic (``guided``; 0.1 chosen on
            bbc_news).
        threads: threads the fit computes on (torch, OpenMP, BLAS), restored afterwards:
            ``"auto"`` (``PHRASEKIT_THREADS``, else the CPU cores free now:
            :mod:`phrasekit.threads`), a number, or None to leave the libraries' settings.
    """

    #: a model pickled before ``max_words`` reads windows of ``chunk_size`` words, as then
    max_words: int | None = None

    def __init__(
        self,
        encoder: str | Encoder = DOCUMENTS_MODEL,
        n_topics: int | None = None,
        k_range: tuple[int, int] = (4, 30),
        k_criterion: str = "stability",
        k_tolerance: float = 0.1,
        min_df: int = 5,
        max_df: float = 0.5,
        max_phrases: int = 20_000,
        generic_share: float = 0.1,
        misc_share: float = 0.5,
        top_n: int = 10,
        n_typical: int = 3,
        chunk_size: int = 150,
        max_chunks: int = 2,
        max_words: int | None = 200,
        n_init: int = 5,
        random_state: int = 0,
        cache_dir: str | None = "auto",
        phrase_words: int | None = 100_000,
        n_jobs: int = 1,
        extractor: PhraseExtractor | None = None,
        fit_docs: int | str = "auto",
        placement: str = "student",
        seed_topics: list[list[str]] | None = None,
        seed_pull: float = 0.0,
        zero_shot_topics: list[str] | None = None,
        zero_shot_min_similarity: float = 0.1,
        threads: int | str | None = "auto",
    ) -> None:
        self.encoder = encoder
        self.n_topics = n_topics
        self.k_range = k_range
        self.k_criterion = k_criterion
        self.k_tolerance = k_tolerance
        self.min_df = min_df
        self.max_df = max_df
        self.max_phrases = max_phrases
        self.generic_share = generic_share
        self.misc_share = misc_share
        self.top_n = top_n
        self.n_typical = n_typical
        self.chunk_size = chunk_size
        self.max_chunks = max_chunks
        self.max_words = max_words
        self.n_init = n_init
        self.random_state = random_state
        self.cache_dir = cache_dir
        self.phrase_words = phrase_words
        self.n_jobs = n_jobs
        self.extractor = extractor
        self.fit_docs = fit_docs
        self.placement = placement
        self.seed_topics = seed_topics
        self.seed_pull = seed_pull
        self.zero_shot_topics = zero_shot_topics
        self.zero_shot_min_similarity = zero_shot_min_similarity
        self.threads = threads

    # ------------------------------------------------------------------ validation
    def check_params(self) -> None:
        """Raise ``ValueError`` for a bad setting (cheap: callers check before reading)."""

        check_topics_k(self.n_topics, self.k_range)
        if self.k_criterion not in CRITERIA:
            raise ValueError(f"k_criterion must be one of {CRITERIA}, got {self.k_criterion!r}")
        for name in ("min_df", "top_n", "chunk_size", "max_chunks", "n_init", "max_phrases",
                     "n_jobs"):
            check_int(name, getattr(self, name), 1)
        if self.fit_docs not in ("auto", "all"):
            check_int("fit_docs", self.fit_docs, 1)
        check_int("n_typical", self.n_typical, 0)
        check_int("random_state", self.random_state, 0)
        for name in ("phrase_words", "max_words"):
            if getattr(self, name) is not None:
                check_int(name, getattr(self, name), 1)
        check_share("max_df", self.max_df, "(0, 1]")
        for name in ("generic_share", "misc_share", "k_tolerance"):
            check_share(name, getattr(self, name), "[0, 1)")
        check_extractor(self.extractor)
        if self.threads is not None:
            parse_threads(self.threads, "threads")
        if self.placement not in PLACEMENTS:
            raise ValueError(f"placement must be one of {PLACEMENTS}, got {self.placement!r}")
        self._check_guidance()

    def phrase_extractor(self) -> PhraseExtractor:
        """The extractor used: ``extractor``, or noun phrases from POS patterns (no parser,
        no NER: topics are named by recurring phrases, which the tagger finds as well)."""
        return self.extractor or PhraseExtractor(chunker="pos", entities=False,
                                                 n_process=int(self.n_jobs))

    @property
    def encoder_name(self) -> str:
        enc = getattr(self, "encoder_", None) or self.encoder
        return enc.name if isinstance(enc, Encoder) else str(enc)

    # ------------------------------------------------------------------ fit
    def fit(self, docs: Iterable[Document | str], embeddings: np.ndarray | None = None,
            y: Any = None, vocabulary: PhraseVocabulary | None = None,
            show_progress: bool | None = None) -> DocumentTopicModel:
        """Fit topics on ``docs``: documents or strings, in a list or in a re-iterable corpus
        read afresh on each pass (``io.StreamedCorpus``, for corpora larger than memory). At
        most ``fit_docs`` of them (a seeded sample when there are more) are clustered and read
        for terms; the others are then assigned to their nearest topic (``doc_embeddings_``
        and ``token_docs_`` hold the sample, at ``sample_index_``). ``vocabulary``: spaCy
        phrases already extracted from exactly these documents (e.g. a cache). ``embeddings``:
        one vector per document, in order, from ``encoder`` (BERTopic's precomputed
        embeddings): used instead of encoding, and to place the documents outside the sample.
        ``show_progress``: None shows bars in a terminal or notebook."""
        del y
        self.check_params()
        with limited_threads(None if self.threads is None else choose_threads(self.threads)):
            return self._fit(docs, vocabulary, resolve_progress(show_progress), embeddings)

    def _fit(self, docs: Iterable[Document | str], vocabulary: PhraseVocabulary | None,
             show_progress: bool, embeddings: np.ndarray | None) -> DocumentTopicModel:
        """``fit``'s steps, on the threads it set."""
        if isinstance(docs, str | bytes) or iter(docs) is docs:
            docs = as_documents(docs)  # an iterator is read more than once
        auto = self.fit_docs == "auto"
        size = {"all": ALL_DOCS, "auto": FIT_DOCS}.get(self.fit_docs, self.fit_docs)
        ids, sample, index = sample_corpus(
            docs, int(size), int(self.random_state), min_words=FIT_WORDS if auto else 0,
            share=FIT_SHARE if auto else 0.0, max_share_docs=FIT_DOCS_MAX)
        if len(set(ids)) < len(ids):  # outputs are keyed by id
            seen: dict[str, int] = {}
            for i, d in enumerate(ids):
                if seen.setdefault(d, i) != i:
                    raise ValueError(f"documents {seen[d]} and {i} have the same id {d!r}; "
                                     "every document needs its own id")
        if vocabulary is not None and vocabulary.doc_ids != ids:
            raise ValueError(
                f"the vocabulary was extracted from other documents ({vocabulary.n_docs} docs) "
                f"than the {len(ids)} given; re-extract it or pass the same corpus")
        given = given_embeddings(embeddings, len(ids))
        self._fit_sample(sample, vocabulary, show_progress,
                         None if given is None else given[index])
        self.sample_keys_ = sample_keys(sample)
        self._name_guided_topics()
        self.doc_ids_ = ids
        self.sample_index_ = index
        if len(index) < len(ids):
            t0 = time.perf_counter()
            if self.placement == "student" and given is None:
                self.student_ = TopicStudent(self.n_topics_).fit(
                    [d.text for d in sample], self.doc_labels_)
            self._assign_rest(docs, show_progress, given)
            self.timings_["assigning"] = time.perf_counter() - t0
        warn_unassigned(self.doc_labels_, "topics")
        logger.info("%d topics (%d miscellaneous) over %d docs (fitted on %d) from %d terms "
                    "(%s)", self.n_topics_, int(self.miscellaneous_.sum()), len(ids),
                    len(index), len(self.terms_),
                    ", ".join(f"{n} {s:.1f}s" for n, s in self.timings_.items()))
        return self

    def _fit_sample(self, documents: list[Document], vocabulary: PhraseVocabulary | None,
                    show_progress: bool, X: np.ndarray | None = None) -> None:
        """Steps 1-7 on ``documents`` (all of the corpus, or its sample); ``X``: their given
        vectors (None: encoded)."""
        texts = [d.text for d in documents]
        if not any(t.split() for t in texts):
            raise TooFewDocumentsError("the corpus is empty: no documents with words to find "
                                       "topics in")
        encoder = as_encoder(self.encoder)
        timings: dict[str, float] = {}

        t0 = time.perf_counter()
        if X is None:
            X = without_unknown(encoder, encode_documents(
                encoder, texts, self.chunk_size, self.max_chunks, resolve_cache(self.cache_dir),
                show_progress, self.max_words), texts, self.chunk_size, self.max_chunks,
                self.max_words)
        elif X.shape[1] != encoder.dim:
            raise ValueError(f"embeddings have {X.shape[1]} dimensions; the encoder "
                             f"{encoder.name} gives {encoder.dim} (give the encoder that made "
                             "them)")
        timings["encoding"] = time.perf_counter() - t0
        used = np.linalg.norm(X, axis=1) > 0
        self.doc_mean_ = X[used].mean(axis=0) if used.any() else np.zeros(X.shape[1], X.dtype)
        Xc = np.zeros_like(X)
        Xc[used] = l2_normalize(X[used] - self.doc_mean_)
        n_used = int(used.sum())
        self.n_distinct_ = len(np.unique(np.round(Xc[used], 5), axis=0))
        need = self.n_topics or self.k_range[0]
        if n_used < need + 1:
            raise TooFewDocumentsError(
                f"only {n_used} documents have words: too few for {need} topics (give a "
                "larger corpus, or fewer topics: -k / --k-min)")
        if self.n_distinct_ < need + 1:  # identical documents cannot fill K distinct topics
            raise TooFewDocumentsError(
                f"only {self.n_distinct_} of the {n_used} documents differ: too few for "
                f"{need} topics (give a corpus of more distinct documents, or fewer topics "
                "with -k / --k-min)")

        t0 = time.perf_counter()
        labels_used, centres, k = self._cluster(Xc[used], encoder, show_progress)
        timings["clustering"] = time.perf_counter() - t0

        t0 = time.perf_counter()
        if vocabulary is None:
            sample = sample_by_words(documents, self.phrase_words, int(self.random_state))
            vocabulary = self.phrase_extractor().extract(sample, show_progress=show_progress)
        timings["extraction"] = time.perf_counter() - t0

        t0 = time.perf_counter()
        token_docs = TokenDocs(texts)
        vocab = build_term_vocabulary(token_docs, vocabulary, self.min_df, self.max_df,
                                      self.max_phrases)
        if len(vocab) < self.top_n:
            raise ValueError(f"only {len(vocab)} terms occur in at least {self.min_df} "
                             "documents; lower --min-df (min_df) or give a larger corpus")
        P = presence_matrix(token_docs, vocab.terms, format="csr")
        labels = np.full(len(texts), -1, dtype=np.int64)
        labels[used] = labels_used
        self.token_docs_ = token_docs  # the labels and the report's metrics read it
        self._describe(Xc, labels, centres, k, vocab, P)
        timings["reading"] = time.perf_counter() - t0

        self.encoder_ = encoder
        self.doc_embeddings_ = Xc
        self.sample_texts_ = texts
        self.timings_ = timings

    def _choose_k(self, X: np.ndarray, show_progress: bool) -> tuple[int, dict[int, float]]:
        if self.n_topics is not None:
            return int(self.n_topics), {}
        k_min, k_max = int(self.k_range[0]), min(int(self.k_range[1]), self.n_distinct_ - 1)
        return choose_k(X, range(k_min, max(k_min, k_max) + 1), self.k_criterion,
                        seed=int(self.random_state), tolerance=float(self.k_tolerance),
                        show_progress=show_progress)

    # ------------------------------------------------------------------ describe
    def _describe(self, Xc: np.ndarray, labels: np.ndarray, centres: np.ndarray, k: int,
                  vocab: Any, P: Any) -> None:
        """Steps 5-7: generic terms, topic terms, miscellaneous topics, numbering, shares."""
        specificity = term_specificity(P, Xc)
        n_generic = int(self.generic_share * len(vocab))
        generic = np.zeros(len(vocab), dtype=bool)
        generic[np.argsort(specificity, kind="stable")[:n_generic]] = True
        scores = topic_term_scores(P, labels, k)
        with_generic = rank_terms(scores, vocab.terms, self.top_n)
        misc = np.array([bool(r) and generic[r].mean() > self.misc_share for r in with_generic])
        sizes = np.bincount(labels[labels >= 0], minlength=k)
        order = sorted(range(k), key=lambda t: (bool(misc[t]), -sizes[t], t))
        remap = np.empty(k, dtype=np.int64)
        remap[order] = np.arange(k)
        labels = np.where(labels >= 0, remap[np.maximum(labels, 0)], -1)
        centres, scores, misc = centres[order], scores[order], misc[order]

        d2 = sq_distances(Xc, centres)
        shares = shares_of(d2)
        shares[labels < 0] = 0.0

        self.n_topics_ = k
        self.doc_labels_ = labels
        self.doc_topics_ = shares.astype(np.float32)
        self.cluster_centers_ = centres
        self.vocabulary_ = vocab
        self.terms_ = vocab.surface
        self.specificity_ = specificity
        self.generic_terms_ = [vocab.surface[i] for i in sorted(
            np.flatnonzero(generic).tolist(), key=lambda i: (-vocab.doc_freq[i], vocab.terms[i]))]
        self.term_scores_ = scores
        self.miscellaneous_ = misc
        self.doc_n_phrases_ = np.asarray(P.sum(axis=1)).ravel().astype(np.int64)
        self.topic_doc_counts_ = [int(x) for x in np.bincount(labels[labels >= 0], minlength=k)]
        self.topic_sizes_ = [int(x) for x in (scores > 0).sum(axis=1)]
        self._read_terms(scores, ~generic)
        self.topic_names_ = name_topics(candidates(self.topics_, self.topic_phrases_), labels,
                                        self.token_docs_, vocab.surface[vocab.n_words:])
        self.typical_docs_ = self._typical_docs(d2, labels)  # d2: centres already in order

    def _read_terms(self, scores: np.ndarray, allowed: np.ndarray) -> None:
        vocab = self.vocabulary_
        is_word = np.arange(len(vocab)) < vocab.n_words

        def read(mask: np.ndarray, n: int) -> list[list[tuple[str, float]]]:
            ranked = rank_terms(scores, vocab.terms, n, allowed & mask)
            return [[(vocab.surface[j], round(float(scores[t, j]), 4)) for j in r]
                    for t, r in enumerate(ranked)]

        self.topics_ = read(np.ones(len(vocab), dtype=bool), 2 * self.top_n)
        self.topic_words_ = read(is_word, self.top_n)
        self.topic_phrases_ = read(~is_word, self.top_n)

    def _typical_docs(self, d2: np.ndarray, labels: np.ndarray
                      ) -> list[list[tuple[int, float]]]:
        """Per topic, its ``n_typical`` documents nearest the centre, with their share."""
        out = []
        for t in range(d2.shape[1]):
            members = np.flatnonzero(labels == t)
            best = members[np.argsort(d2[members, t], kind="stable")][: self.n_typical]
            out.append([(int(d), round(float(self.doc_topics_[d, t]), 4)) for d in best])
        return out

    # ------------------------------------------------------------------ use
    def _check_fitted(self) -> None:
        if not hasattr(self, "topics_"):
            raise RuntimeError("this DocumentTopicModel is not fitted yet: call fit(docs) first")

    def topic_label(self, topic: int) -> str:
        """A short name: the name ``set_topic_labels`` gave, else the one ``labels.name_topics``
        gave (a distinctive phrase, else two distinctive words; never boilerplate, a unit, a
        citation fragment or a verb); "miscellaneous (...)" or "mixed (...)" when flagged."""
        self._check_fitted()
        if topic in getattr(self, "custom_labels_", {}):
            return self.custom_labels_[topic]
        return self.topic_names_[topic].text(bool(self.miscellaneous_[topic]))

    def transform(self, docs: Iterable[Document | str], show_progress: bool | None = None
                  ) -> np.ndarray:
        """Topic shares of new documents, (n_docs, K)."""
        self._check_fitted()
        texts = [d.text for d in as_documents(docs)]
        X = encode_documents(self.encoder_, texts, self.chunk_size, self.max_chunks, None,
                             resolve_progress(show_progress), self.max_words)
        _, _, shares = self._place(without_unknown(self.encoder_, X, texts, self.chunk_size,
                                                   self.max_chunks, self.max_words))
        warn_unassigned(np.where(shares.any(axis=1), 0, -1), "transform")
        return shares

    def summary(self) -> dict[str, Any]:
        """Key numbers of the fit."""
        self._check_fitted()
        return {
            "n_topics": self.n_topics_,
            "n_miscellaneous": int(self.miscellaneous_.sum()),
            "n_terms": len(self.terms_),
            "n_generic": len(self.generic_terms_),
            "n_docs": len(self.doc_ids_),
            "n_unassigned": int((self.doc_labels_ < 0).sum()),
            "k_scores": {int(k): round(v, 4) for k, v in self.k_scores_.items()},
            "topic_sizes": self.topic_doc_counts_,
            "timings": {k: round(v, 2) for k, v in self.timings_.items()},
        }
