"""phrasekit's topic models against BERTopic and LDA, head to head on four labelled corpora.

Corpora (``--corpora``): 20newsgroups, bbc_news, ag_news_test and restaurant_reviews_absa14.
The restaurant sentences are multi-label (a list of aspect categories): every method is fitted
on all 3,841 sentences, and NMI is computed on the sentences with exactly one category.

Methods (``--methods``):

- ``bertopic``: BERTopic 0.17 with the packaged all-MiniLM-L6-v2 (sentence-transformers) as
  embedding model, given the precomputed document vectors below; its default UMAP (seeded,
  ``random_state=--seed``) and HDBSCAN (``min_cluster_size=10``; ``core_dist_n_jobs=1``, which
  changes threads, not results); representation: c-TF-IDF over ``CountVectorizer(
  ngram_range=(1, 3), stop_words="english", min_df=1)``. BERTopic fits that vectorizer on one
  concatenated document per *topic*, so ``min_df`` counts topics: any value above 1 would drop
  every n-gram specific to a single topic. ``--bertopic-min-df`` changes it (and sets
  ``PhraseVectorizer``'s, which otherwise keeps its own default).
- ``bertopic_kbi``: the same with ``KeyBERTInspired()`` as representation model.
- ``bertopic_pk``: the same with phrasekit's naming, ``phrasekit.integrations.
  KeyphraseRepresentation()``, as representation model (each topic's words and phrases by
  phrasekit's term scores); ``bertopic_pk_kp`` with ``KeyphraseRepresentation("minilm",
  keyphrases=True)`` (each topic's keyphrases, the former naming).
- ``bertopic_pv``: ``bertopic`` with ``phrasekit.integrations.PhraseVectorizer()`` as
  vectorizer (c-TF-IDF over phrasekit's phrases and words).
- ``lda``: scikit-learn's online LDA (``phrasekit.topics.LDATopics``), K = 20, 20 passes, over
  phrasekit's word vocabulary (words in more than five documents, at most half of them).
- ``pntm`` / ``pntm50``: phrasekit's PNTM with MiniLM, K = 20 / K = 50, default settings.
- ``pntm_g`` / ``pntm50_g``: the same with ``grounding=GROUNDING`` (topic terms read near the
  topic vector *and* from the topic's documents; same topics and document labels).
- ``clusters``: ``PhraseTopicModel`` (``--method clusters``: clusters of context-mixed
  phrase embeddings, K chosen by silhouette in 5..25).
- ``documents``: ``DocumentTopicModel`` (``--method documents``, the default: k-means on the
  centred document vectors, K chosen in 2..30, topics named by words and phrases).
- ``kmeans``: the reference, not a topic model: scikit-learn ``KMeans`` (``n_init=10``) on the
  same document vectors with the gold number of classes; it lists no terms.

Protocol:

- **Document vectors** are the same for BERTopic and PNTM: phrasekit's ``encode_documents``
  (MiniLM over 150-word windows, at most 8, averaged by words). They, the vocabulary vectors
  PNTM reads topics from and the terms ``clusters`` embeds are computed once per corpus before
  any fit (``OUT/emb/CORPUS/``) and reported apart. Vectors already in the embedding cache of
  ``benchmarks/topics/topic_models.py`` (``--reuse``, default ``runs/topic_models``: its ``cache/``
  ``.npy`` files, named by the pre-``encode_cached`` digest of encoder and texts) are read from
  there, read-only; only the rest is encoded. PNTM and ``clusters`` get the vectors through an
  in-memory lookup encoder, so their fits encode nothing.
- **Phrases** (spaCy noun chunks and entities, needed by PNTM and ``clusters`` only, and
  extracted only when one of them runs) are read from ``REUSE/phrases/CORPUS.json.gz`` when
  that file was extracted from the same documents (never rewritten), else extracted once into
  ``OUT/phrases/``; extraction time is reported apart. ``documents`` runs as shipped: it finds
  its phrases itself (a 300,000-word sample, tagger only), inside its fit time.
- **Each fit runs in a fresh subprocess** with one thread (torch, OMP, MKL, OpenBLAS, numba).
  *fit s* is the wall time of the fit call: BERTopic ``fit_transform`` (UMAP, HDBSCAN,
  c-TF-IDF, representation; numba compilation included); LDA tokenising, word vocabulary and
  fitting; PNTM ``fit`` (tokenising, word + phrase vocabulary, training, reading topics);
  ``clusters`` ``fit``. *RSS before* is the process's resident memory right before that call,
  *peak* the process's peak RSS after it (``getrusage().ru_maxrss``; the worker is forked by
  ``sh`` so that it does not inherit this process's peak). The high-water mark is also reset
  just before the call (``/proc/self/clear_refs``): where the peak of the fit alone (VmHWM)
  is lower than ru_maxrss, because loading came higher, the table shows it in brackets.
- **Scoring** is the same for every method (``phrasekit.topics.outputs.metrics``): each topic's
  top-10 terms are re-tokenised with ``phrasekit.topics.core.terms.tokenize``; NPMI from document
  co-occurrence in that tokenised corpus (a term is present where its tokens occur verbatim; nested
  pairs skipped), diversity = distinct words among all topics' top-10 terms, NMI of each document's
  topic against the gold label with unassigned documents (BERTopic's -1, PNTM's empty documents,
  LDA's documents without a vocabulary word, ``clusters``' documents without a topic phrase) as one
  cluster. BERTopic's topics are ``get_topic(t)`` for ``t != -1``. *absent* is the share of scored
  top-10 terms that occur verbatim in no document (e.g. BERTopic n-grams built across removed stop
  words, "bank england"); every pair with such a term scores NPMI -1.

Nothing is tuned here: every method runs with its defaults and one seed.

How the default topic method is chosen (written before any run of ``documents``; development
corpora only: the five here, with arXiv's ``label``, its 18 archives, as gold classes):

1. Candidates: ``clusters``, ``pntm_g`` and ``documents``.
2. On each corpus a candidate *passes* when it has fewer than 5% unassigned documents, NMI and
   NPMI at least those of BERTopic (c-TF-IDF), and NMI at least 0.9x that of ``kmeans``.
3. The default is the candidate that passes on the most corpora; ties go to the higher mean
   NMI, then the higher mean NPMI. The others stay available by name.
4. Settings of ``documents`` (its K criterion among ``choose_k.CRITERIA``) are compared by the
   lowest, over the five corpora, of NMI / NMI of ``kmeans``, and chosen before step 2.

    python benchmarks/topics/topics_vs_peers.py --out runs/topics_vs_peers \\
        --corpora bbc_news,restaurant_reviews_absa14,ag_news_test,20newsgroups

Resumable: finished runs are kept in ``OUT/runs.json`` (key ``corpus|method``) and skipped.
Writes ``OUT/table.md``, per-run topic lists ``OUT/topics/CORPUS-METHOD.md`` and worker logs
``OUT/logs/``, and prints the Markdown table.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import logging
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

CORPORA = ("bbc_news", "restaurant_reviews_absa14", "ag_news_test", "20newsgroups",
           "arxiv_abstracts_cc0")
METHODS = ("bertopic", "bertopic_kbi", "bertopic_pk", "bertopic_pk_kp", "bertopic_pv", "lda",
           "pntm", "pntm50", "pntm_g", "pntm50_g", "clusters", "documents", "kmeans")
NAMES = {
    "bertopic": "BERTopic (c-TF-IDF 1-3grams)",
    "bertopic_kbi": "BERTopic + KeyBERTInspired",
    "bertopic_pk": "BERTopic + phrasekit naming",
    "bertopic_pk_kp": "BERTopic + phrasekit keyphrases",
    "bertopic_pv": "BERTopic + PhraseVectorizer",
    "lda": "LDA K=20 (sklearn)",
    "pntm": "phrasekit PNTM K=20",
    "pntm50": "phrasekit PNTM K=50",
    "pntm_g": "phrasekit PNTM K=20, grounded",
    "pntm50_g": "phrasekit PNTM K=50, grounded",
    "clusters": "phrasekit clusters (K by silhouette)",
    "documents": "phrasekit documents (default)",
    "kmeans": "k-means, gold K (reference)",
}
PHRASEKIT = ("pntm", "pntm50", "pntm_g", "pntm50_g", "clusters", "documents")
#: Methods fitted on the full spaCy phrase vocabulary that the preparation extracts.
PHRASE_METHODS = ("pntm", "pntm50", "pntm_g", "pntm50_g", "clusters")
BERTOPIC = ("bertopic", "bertopic_kbi", "bertopic_pk", "bertopic_pk_kp", "bertopic_pv")
PNTM_K = {"pntm": 20, "pntm50": 50, "pntm_g": 20, "pntm50_g": 50}
#: PNTM's ``grounding`` for the ``_g`` variants, chosen on the bundled arXiv sample corpus
#: (not one of the four corpora here) by NPMI; see the README.
GROUNDING = 0.1
LDA_K = 20
TOP_N = 10
ONE_THREAD = {
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "NUMBA_NUM_THREADS": "1",
    "TOKENIZERS_PARALLELISM": "false",
}

log = logging.getLogger("topics_vs_peers")


# ---------------------------------------------------------------------- shared helpers
def load_corpus(root: Path, corpus: str) -> tuple[list, list, np.ndarray]:
    """Documents, gold labels of the evaluated documents, and which documents are evaluated
    (all, except for a multi-label corpus: the documents with exactly one label)."""
    from phrasekit.io import read_corpus

    docs = read_corpus(root / corpus)
    raw = [d.meta.get("label") for d in docs]
    if any(lab is None for lab in raw):
        raise SystemExit(f"{corpus}: some documents have no `label`")
    if any(isinstance(lab, list) for lab in raw):
        mask = np.array([isinstance(lab, list) and len(lab) == 1 for lab in raw])
        labels = [lab[0] for lab, m in zip(raw, mask, strict=True) if m]
    else:
        mask = np.ones(len(docs), dtype=bool)
        labels = [str(lab) for lab in raw]
    return docs, labels, mask


def old_cache_file(cache_dir: Path, kind: str, name: str, texts: list[str]) -> Path:
    """Where ``benchmarks/topics/topic_models.py`` cached these texts' vectors before phrasekit
    moved to ``encode_cached`` (``KIND-<sha256(name, texts)[:20]>.npy``)."""
    h = hashlib.sha256(f"{name}\x00\x00".encode())
    for t in texts:
        h.update(t.encode("utf-8", "surrogatepass"))
        h.update(b"\x00")
    return cache_dir / f"{kind}-{h.hexdigest()[:20]}.npy"


def make_lookup_encoder(texts: list[str], vectors: np.ndarray, name: str = "minilm") -> Any:
    """An ``Encoder`` that returns stored vectors (and fails on a text it has none for)."""
    from phrasekit.encoders.base import Encoder, validate_texts

    class LookupEncoder(Encoder):
        def __init__(self) -> None:
            self.name = name
            self.dim = int(vectors.shape[1])
            self.row = {t: i for i, t in enumerate(texts)}
            self.calls = 0

        def _encode_batch(self, batch: Any) -> np.ndarray:
            return vectors[[self.row[t] for t in batch]]

        def encode(self, items: Any, batch_size: int | None = None,
                   show_progress: bool = False) -> np.ndarray:
            items = validate_texts(items)
            self.calls += 1
            missing = [t for t in items if t not in self.row]
            if missing:
                raise KeyError(f"{len(missing)} texts have no stored vector, e.g. "
                               f"{missing[0][:80]!r}")
            if not items:
                return np.zeros((0, self.dim), dtype=np.float32)
            return vectors[[self.row[t] for t in items]]

    return LookupEncoder()


def phrase_vocabulary(docs: list, corpus: str, reuse: Path, out: Path, quiet: bool
                      ) -> tuple[Any, dict]:
    """The spaCy phrase vocabulary of ``docs``: the reused cache when it was extracted from
    these documents (read only), else ``OUT/phrases/CORPUS.json.gz`` (extracted once)."""
    from phrasekit.phrases import PhraseExtractor, PhraseVocabulary
    from phrasekit.topics import load_or_extract_vocabulary

    ids = [d.id for d in docs]
    shared = reuse / "phrases" / f"{corpus}.json.gz"
    if shared.is_file():
        vocab = PhraseVocabulary.from_json(shared)
        if vocab.doc_ids == ids:
            if vocab.params != PhraseExtractor().settings():
                log.warning("%s: phrase cache %s used other extractor settings than today's "
                            "defaults; using it anyway", corpus, shared)
            return vocab, {"phrase_source": str(shared)}
        log.warning("%s: %s holds other documents; not used", corpus, shared)
    own = out / "phrases" / f"{corpus}.json.gz"
    t0 = time.perf_counter()
    vocab = load_or_extract_vocabulary(docs, own, show_progress=not quiet)
    return vocab, {"phrase_source": str(own), "phrase_s": round(time.perf_counter() - t0, 1)}


# ---------------------------------------------------------------------- per-corpus preparation
def prepare(corpus: str, root: Path, out: Path, reuse: Path, quiet: bool,
            with_phrases: bool = True) -> dict:
    """Phrases (``with_phrases``) and every MiniLM vector the fits need, once per corpus
    (``OUT/emb/CORPUS/``); a preparation without phrases is extended when they are asked."""
    from phrasekit.encoders.cache import chunk_words, encode_documents
    from phrasekit.io import write_json
    from phrasekit.text import tokenize
    from phrasekit.topics import PNTM, DocumentTopicModel, PhraseTopicModel
    from phrasekit.topics.core.terms import build_term_vocabulary

    folder = out / "emb" / corpus
    info_path = folder / "prep.json"
    known: dict[str, np.ndarray] = {}
    docs, _, _ = load_corpus(root, corpus)
    pntm, own = PNTM().get_params(), DocumentTopicModel().get_params()
    chunks = [c for d in docs for c in chunk_words(d.text, pntm["chunk_size"], pntm["max_chunks"])]
    windows = [c for d in docs for c in chunk_words(d.text, own["chunk_size"], own["max_chunks"],
                                                     own["max_words"])]  # the documents method's
    if info_path.is_file():
        info = json.loads(info_path.read_text())
        known.update(zip(json.loads((folder / "texts.json").read_text()),
                         np.load(folder / "vectors.npy"), strict=True))
        if (info.get("phrase_source") or not with_phrases) and all(w in known for w in windows):
            return info
    terms: list[str] = []
    cluster_terms: list[str] = []
    info = {"phrase_source": None}
    if with_phrases:
        phrases, info = phrase_vocabulary(docs, corpus, reuse, out, quiet)
        ptm = PhraseTopicModel().get_params()
        token_docs = [tokenize(d.text) for d in docs]
        terms = build_term_vocabulary(token_docs, phrases, pntm["min_df"], pntm["max_df"],
                                      pntm["max_phrases"]).surface
        cluster_terms = phrases.filter(min_df=ptm["min_df"], max_df=ptm["max_df"],
                                       max_phrases=ptm["max_phrases"]).surface
    sources = []
    cache_dir = reuse / "cache"
    kind_docs = f"docs{pntm['chunk_size']}x{pntm['max_chunks']}"
    for kind, texts in ((kind_docs, chunks), ("vocab", terms)):
        path = old_cache_file(cache_dir, kind, "minilm", texts)
        if path.is_file():
            arr = np.load(path, allow_pickle=False)
            if arr.shape == (len(texts), 384):
                known.update(zip(texts, arr, strict=True))
                sources.append(str(path))
    store = list(dict.fromkeys(chunks + windows + terms + cluster_terms))
    missing = [t for t in store if t not in known]
    t0 = time.perf_counter()
    if missing:
        from phrasekit.registry import load

        log.info("%s: encoding %d texts with minilm (%d cached)", corpus, len(missing),
                 len(store) - len(missing))
        new = load("minilm").encode(missing, batch_size=256, show_progress=not quiet)
        known.update(zip(missing, new, strict=True))
    encode_s = time.perf_counter() - t0
    vectors = np.stack([known[t] for t in store]).astype(np.float32)
    lookup = make_lookup_encoder(store, vectors)
    X = encode_documents(lookup, [d.text for d in docs], pntm["chunk_size"],
                         pntm["max_chunks"], cache_dir=None)
    folder.mkdir(parents=True, exist_ok=True)
    np.save(folder / "vectors.npy", vectors, allow_pickle=False)
    np.save(folder / "docs.npy", X, allow_pickle=False)
    (folder / "texts.json").write_text(json.dumps(store, ensure_ascii=False))
    info.update({
        "corpus": corpus, "n_docs": len(docs), "n_chunks": len(chunks), "n_terms": len(terms),
        "n_cluster_terms": len(cluster_terms), "n_texts": len(store),
        "n_encoded": len(missing), "encode_s": round(encode_s, 1), "vector_sources": sources,
    })
    write_json(info_path, info)
    return info


# ---------------------------------------------------------------------- the fit subprocess
def bertopic_model(seed: int, min_df: int | None = None, naming: str = "bertopic") -> Any:
    """BERTopic as the protocol runs it: the packaged MiniLM, seeded UMAP, HDBSCAN with
    ``min_cluster_size=10``, c-TF-IDF over 1-3-grams (``naming``: ``bertopic_kbi`` puts
    KeyBERTInspired on top, ``bertopic_pk*`` phrasekit's KeyphraseRepresentation,
    ``bertopic_pv`` counts with phrasekit's PhraseVectorizer)."""
    from bertopic import BERTopic
    from hdbscan import HDBSCAN
    from sentence_transformers import SentenceTransformer
    from umap import UMAP

    from phrasekit.models.backbones import minilm_path

    return BERTopic(
        embedding_model=SentenceTransformer(str(minilm_path()), device="cpu"),
        umap_model=UMAP(n_neighbors=15, n_components=5, min_dist=0.0, metric="cosine",
                        low_memory=False, random_state=seed),
        hdbscan_model=HDBSCAN(min_cluster_size=10, metric="euclidean",
                              cluster_selection_method="eom", prediction_data=True,
                              core_dist_n_jobs=1),
        vectorizer_model=vectorizer_model(naming, min_df),
        representation_model=representation_model(naming),
        top_n_words=TOP_N,
        verbose=True,
    )


def vectorizer_model(naming: str, min_df: int | None) -> Any:
    """BERTopic's vectorizer for a ``bertopic*`` method (``min_df`` None: the vectorizer's
    default, 1 for the CountVectorizer)."""
    if naming == "bertopic_pv":
        from phrasekit.integrations import PhraseVectorizer

        return PhraseVectorizer() if min_df is None else PhraseVectorizer(min_df=min_df)
    from sklearn.feature_extraction.text import CountVectorizer

    return CountVectorizer(ngram_range=(1, 3), stop_words="english", min_df=min_df or 1)


def representation_model(naming: str) -> Any:
    """BERTopic's representation model for a ``bertopic*`` method (None: c-TF-IDF alone)."""
    if naming == "bertopic_kbi":
        from bertopic.representation import KeyBERTInspired

        return KeyBERTInspired()
    if naming in ("bertopic_pk", "bertopic_pk_kp"):
        from phrasekit.integrations import KeyphraseRepresentation

        if naming == "bertopic_pk_kp":
            return KeyphraseRepresentation("minilm", keyphrases=True)
        return KeyphraseRepresentation()
    return None


def _rss_mb() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux


def _hwm_mb() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def worker(spec_path: str) -> None:
    """Fit one (corpus, method) and write what it found to ``spec["result"]``."""
    spec = json.loads(Path(spec_path).read_text())
    import torch

    torch.set_num_threads(1)
    from phrasekit.io import write_json

    corpus, method, seed = spec["corpus"], spec["method"], spec["seed"]
    folder = Path(spec["emb"])
    docs, _, _ = load_corpus(Path(spec["corpora_dir"]), corpus)
    texts = [d.text for d in docs]
    details: dict[str, Any] = {}

    if method in BERTOPIC:
        embeddings = np.load(folder / "docs.npy")
        model = bertopic_model(seed, spec["bertopic_min_df"], method)

        def fit() -> tuple[list[int], list[list[str]]]:
            labels, _ = model.fit_transform(texts, embeddings=embeddings)
            ids = sorted(t for t in set(labels) if t != -1)
            return list(labels), [[w for w, _ in model.get_topic(t) if w] for t in ids]

    elif method == "lda":
        from phrasekit.text import tokenize
        from phrasekit.topics import LDATopics
        from phrasekit.topics.core.terms import build_term_vocabulary

        def fit() -> tuple[list[int], list[list[str]]]:
            token_docs = [tokenize(t) for t in texts]
            vocab = build_term_vocabulary(token_docs, None)
            model = LDATopics(n_topics=LDA_K, top_n=TOP_N, max_iter=20,
                              random_state=seed).fit(token_docs, vocab)
            details["n_words"] = len(vocab)
            return list(model.labels_), model.topic_keys_

    elif method == "kmeans":
        from sklearn.cluster import KMeans

        embeddings = np.load(folder / "docs.npy")
        gold_k = len(set(load_corpus(Path(spec["corpora_dir"]), corpus)[1]))

        def fit() -> tuple[list[int], list[list[str]]]:
            km = KMeans(n_clusters=gold_k, n_init=10, random_state=seed).fit(embeddings)
            details["k"] = gold_k
            return [int(x) for x in km.labels_], []

    else:
        from phrasekit.phrases import PhraseVocabulary
        from phrasekit.topics import PNTM, DocumentTopicModel, PhraseTopicModel

        phrases = PhraseVocabulary.from_json(spec["phrases"]) if spec["phrases"] else None
        store = json.loads((folder / "texts.json").read_text())
        lookup = make_lookup_encoder(store, np.load(folder / "vectors.npy"))
        del store
        if method in PNTM_K:
            model = PNTM(encoder=lookup, n_topics=PNTM_K[method], top_n=TOP_N, cache_dir=None,
                         grounding=GROUNDING if method.endswith("_g") else 0.0,
                         random_state=seed)

            def fit() -> tuple[list[int], list[list[str]]]:
                model.fit(docs, phrases=phrases)
                details.update({k: round(v, 2) for k, v in model.timings_.items()})
                details["n_terms"] = len(model.term_vocabulary_)
                details["final_hinge"] = round(float(model.final_hinge_), 5)
                return list(model.labels_), model.topic_keys_
        elif method == "documents":
            model = DocumentTopicModel(encoder=lookup, top_n=TOP_N, random_state=seed)

            def fit() -> tuple[list[int], list[list[str]]]:
                model.fit(docs)
                details.update({k: round(v, 2) for k, v in model.timings_.items()})
                details["k_scores"] = {str(k): round(v, 4) for k, v in model.k_scores_.items()}
                details["miscellaneous"] = int(model.miscellaneous_.sum())
                details["labels"] = [model.topic_label(t) for t in range(model.n_topics_)]
                return list(model.doc_labels_), [[s for s, _ in t] for t in model.topics_]
        else:
            model = PhraseTopicModel(encoder=lookup, top_n=TOP_N, random_state=seed)

            def fit() -> tuple[list[int], list[list[str]]]:
                model.fit(docs, vocabulary=phrases)
                details.update({k: round(v, 2) for k, v in model.timings_.items()})
                details["silhouette"] = {str(k): v for k, v in model.summary()["silhouette"]
                                         .items()}
                details["n_terms"] = len(model.terms_)
                return list(model.doc_labels_), [[s for s, _ in t] for t in model.topics_]

    gc.collect()
    setup_peak = _peak_mb()
    before = _rss_mb()
    reset = _reset_peak()
    t0 = time.perf_counter()
    labels, topics = fit()
    fit_s = time.perf_counter() - t0
    peak = _peak_mb()
    fit_peak = _hwm_mb() if reset else float("nan")
    write_json(spec["result"], {
        "labels": [int(x) for x in labels],
        "topics": [[str(w) for w in t] for t in topics],
        "fit_s": round(fit_s, 2),
        "rss_before_mb": round(before, 1),
        "peak_mb": round(peak, 1),
        "fit_peak_mb": round(fit_peak, 1),
        "setup_peak_mb": round(setup_peak, 1),
        "details": details,
    })


def run_worker(spec: dict, out: Path) -> dict:
    """Run ``worker`` in a fresh single-threaded Python process; its output goes to a log."""
    name = f"{spec['corpus']}-{spec['method']}"
    spec_path = out / "logs" / f"{name}.spec.json"
    spec["result"] = str(out / "logs" / f"{name}.result.json")
    spec_path.parent.mkdir(parents=True, exist_ok=True)
    spec_path.write_text(json.dumps(spec, indent=1))
    env = {**os.environ, **ONE_THREAD, "TQDM_DISABLE": "1"}
    with open(out / "logs" / f"{name}.log", "w") as fh:
        # through sh, which forks Python: a process exec'ed directly from this (large) one
        # would start with this one's peak RSS in its ru_maxrss
        cmd = ["sh", "-c", '"$@"; exit $?', "sh", sys.executable, __file__, "--worker",
               str(spec_path)]
        proc = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{name} failed (exit {proc.returncode}); see {fh.name}")
    return json.loads(Path(spec["result"]).read_text())


# ---------------------------------------------------------------------- scoring and tables
def score(found: dict, token_docs: list[list[str]], labels: list, mask: np.ndarray) -> dict:
    """NPMI, diversity, NMI, unassigned share and topic counts of one fit."""
    from phrasekit.text import tokenize
    from phrasekit.topics.core.terms import presence_matrix
    from phrasekit.topics.outputs.metrics import labels_nmi, npmi_coherence, topic_diversity

    keys = []
    for topic in found["topics"]:
        ks = [" ".join(tokenize(t)) for t in topic]
        keys.append(list(dict.fromkeys(k for k in ks if k))[:TOP_N])
    scored = [t for t in keys if t]
    flat = sorted({k for t in scored for k in t})
    df = np.asarray(presence_matrix(token_docs, flat).sum(axis=0)).ravel() if flat else []
    absent = {k for k, c in zip(flat, df, strict=True) if c == 0}
    npmi, per_topic = npmi_coherence(scored, token_docs, top_n=TOP_N) if scored \
        else (None, [])
    doc_labels = np.asarray(found["labels"])
    used = doc_labels[doc_labels >= 0]
    n_scored_terms = sum(len(t) for t in scored)
    return {
        "n_topics": len(found["topics"]),
        "n_topics_used": len(set(used.tolist())),
        "unassigned": float(np.mean(doc_labels < 0)),
        "nmi": labels_nmi(list(doc_labels[mask]), labels),
        "nmi_docs": int(mask.sum()),
        "npmi": npmi,
        "npmi_per_topic": [v if np.isfinite(v) else None for v in per_topic],
        "diversity": topic_diversity(scored, top_n=TOP_N) if scored else None,
        "absent_share": sum(k in absent for t in scored for k in t) / max(n_scored_terms, 1),
        "keys": keys,
    }


def _f(x: float | None, digits: int = 3) -> str:
    return "–" if x is None or not np.isfinite(x) else f"{x:.{digits}f}"


def _phrases(r: dict) -> str:
    """Phrases among the scored top terms: mean per topic, and the share of topics with 3+."""
    per = [sum(" " in k for k in t) for t in r.get("keys", []) if t]
    if not per:
        return "–"
    return f"{np.mean(per):.1f} ({100 * np.mean([n >= 3 for n in per]):.0f}% ≥3)"


def _fit_peak(r: dict) -> str:
    fit = r.get("fit_peak_mb", float("nan"))
    return f" (fit {fit:.0f})" if np.isfinite(fit) and fit < r["peak_mb"] - 1 else ""


def table(runs: dict[str, dict], preps: dict[str, dict]) -> str:
    """Markdown: the results table, the one-off preparation costs, and the verdict."""
    corp = [c for c in CORPORA if any(r["corpus"] == c for r in runs.values())]
    corp += sorted({r["corpus"] for r in runs.values()} - set(corp))
    lines = [
        "| corpus | method | topics | unassigned | NMI | NPMI | diversity | absent | phrases "
        "| fit s | RSS before → peak MB |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in corp:
        for m in METHODS:
            r = runs.get(f"{c}|{m}")
            if r is None:
                continue
            lines.append(
                f"| {c} | {NAMES[m]} | {r['n_topics']} | {100 * r['unassigned']:.1f}% | "
                f"{_f(r['nmi'])} | {_f(r['npmi'])} | {_f(r['diversity'])} | "
                f"{100 * r['absent_share']:.0f}% | {_phrases(r)} | {r['fit_s']:.1f} | "
                f"{r['rss_before_mb']:.0f} → {r['peak_mb']:.0f}{_fit_peak(r)} |"
            )
    notes = []
    for c in corp:
        r = next(r for r in runs.values() if r["corpus"] == c)
        if r["nmi_docs"] != r["n_docs"]:
            notes.append(f"- {c}: NMI over the {r['nmi_docs']} of {r['n_docs']} documents with "
                         f"exactly one gold label; every method was fitted on all {r['n_docs']}.")
    prep = ["", "One-off preparation per corpus (not in *fit s*; shared by the methods named):", "",
            "| corpus | docs | MiniLM texts (chunks + terms) | encoded now | encode s | phrases "
            "(PNTM, clusters) |", "|---|---|---|---|---|---|"]
    for c in corp:
        p = preps.get(c)
        if p is None:
            continue
        ph = (f"{p['phrase_s']:.0f} s" if "phrase_s" in p else
              f"cached ({p['phrase_source']})" if p.get("phrase_source") else "not needed")
        prep.append(f"| {c} | {p['n_docs']} | {p['n_texts']} | {p['n_encoded']} | "
                    f"{p['encode_s']:.1f} | {ph} |")
    return "\n".join([*lines, "", *notes, *prep, "", *verdict(runs, corp)])


CANDIDATES = ("clusters", "pntm_g", "documents")


def verdict(runs: dict[str, dict], corpora: list[str]) -> list[str]:
    """The protocol of the module docstring: per corpus, which candidate passes (< 5%
    unassigned, NMI and NPMI >= BERTopic's, NMI >= 0.9x k-means with gold K), and the
    default it picks."""
    out = ["Protocol check (a candidate passes a corpus with < 5% unassigned, NMI and NPMI >= "
           "BERTopic's, NMI >= 0.9x k-means at gold K):", ""]
    passes: dict[str, int] = {m: 0 for m in CANDIDATES}
    nmis: dict[str, list[float]] = {m: [] for m in CANDIDATES}
    npmis: dict[str, list[float]] = {m: [] for m in CANDIDATES}
    for c in corpora:
        bt, km = runs.get(f"{c}|bertopic"), runs.get(f"{c}|kmeans")
        if bt is None or km is None:
            continue
        parts = []
        for m in CANDIDATES:
            r = runs.get(f"{c}|{m}")
            if r is None:
                continue
            ratio = r["nmi"] / km["nmi"] if km["nmi"] > 0 else float("nan")
            checks = [r["unassigned"] < 0.05, r["nmi"] >= bt["nmi"], r["npmi"] >= bt["npmi"],
                      ratio >= 0.9]
            passes[m] += all(checks)
            nmis[m].append(r["nmi"])
            npmis[m].append(r["npmi"])
            parts.append(f"{m} {'/'.join('✓' if x else '✗' for x in checks)} "
                         f"(NMI {ratio:.2f}x k-means)")
        out.append(f"- {c}: " + "; ".join(parts))
    ranked = sorted((m for m in CANDIDATES if nmis[m]), key=lambda m: (
        -passes[m], -float(np.mean(nmis[m])), -float(np.nanmean(npmis[m]))))
    if ranked:
        out += ["", "Corpora passed: " + ", ".join(
            f"{m} {passes[m]} (mean NMI {np.mean(nmis[m]):.3f}, mean NPMI "
            f"{np.nanmean(npmis[m]):.3f})" for m in ranked) + f" → default: **{ranked[0]}**."]
    return out


def write_topics(path: Path, rec: dict, found: dict) -> None:
    from phrasekit.io import write_text

    labels = np.asarray(found["labels"])
    sizes = np.bincount(labels[labels >= 0], minlength=len(found["topics"])) \
        if (labels >= 0).any() else np.zeros(len(found["topics"]), dtype=int)
    lines = [f"# {rec['corpus']}: {NAMES[rec['method']]}", "",
             f"{rec['n_topics']} topics, unassigned {100 * rec['unassigned']:.1f}%, "
             f"NMI {_f(rec['nmi'])}, NPMI {_f(rec['npmi'])}, diversity {_f(rec['diversity'])}",
             ""]
    for i, (terms, s) in enumerate(zip(found["topics"], rec["npmi_per_topic"], strict=True)):
        size = int(sizes[i]) if i < len(sizes) else 0
        lines.append(f"{i}. ({size} docs, NPMI {_f(s)}) " + ", ".join(terms[:TOP_N]))
    write_text(path, "\n".join(lines) + "\n")


# ---------------------------------------------------------------------- main
def main() -> None:
    """Prepare each corpus, run the missing fits, print the table, write OUT files."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="runs/topics_vs_peers")
    parser.add_argument("--corpora", default=",".join(CORPORA))
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--corpora-dir", default=None)
    parser.add_argument("--reuse", default="runs/topic_models",
                        help="folder of benchmarks/topics/topic_models.py (its cache/ and phrases/ "
                             "are read, never written)")
    parser.add_argument("--bertopic-min-df", type=int, default=None,
                        help="min_df of BERTopic's vectorizer (default: 1 for c-TF-IDF's, "
                             "PhraseVectorizer's own for bertopic_pv)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quiet", action="store_true", help="no progress bars or info logs")
    parser.add_argument("--prep-threads", type=int, default=2,
                        help="torch threads for the one-off encoding (fits always use one)")
    parser.add_argument("--prepare-only", action="store_true",
                        help="extract phrases and encode each corpus, fit nothing")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        logging.basicConfig(level=logging.INFO,
                            format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        worker(args.worker)
        return
    logging.basicConfig(level=logging.WARNING if args.quiet else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for k, v in ONE_THREAD.items():
        os.environ.setdefault(k, v)
    import torch

    torch.set_num_threads(args.prep_threads)
    from phrasekit.io import write_json, write_text
    from phrasekit.settings import corpora_dir
    from phrasekit.text import tokenize

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    runs_path = out / "runs.json"
    runs: dict[str, dict] = json.loads(runs_path.read_text()) if runs_path.is_file() else {}
    root = Path(args.corpora_dir) if args.corpora_dir else corpora_dir()
    reuse = Path(args.reuse)
    methods = args.methods.split(",")
    if unknown := set(methods) - set(METHODS):
        raise SystemExit(f"unknown methods {sorted(unknown)}; choose from {METHODS}")
    preps: dict[str, dict] = {}
    for p in sorted((out / "emb").glob("*/prep.json")):
        preps[p.parent.name] = json.loads(p.read_text())
    for corpus in args.corpora.split(","):
        todo = [m for m in methods if f"{corpus}|{m}" not in runs]
        if not todo:
            continue
        t0 = time.perf_counter()
        preps[corpus] = prepare(corpus, root, out, reuse, args.quiet,
                                with_phrases=any(m in PHRASE_METHODS for m in methods))
        log.info("%s: prepared in %.1fs: %s", corpus, time.perf_counter() - t0,
                 {k: v for k, v in preps[corpus].items() if k != "vector_sources"})
        if args.prepare_only:
            continue
        docs, labels, mask = load_corpus(root, corpus)
        token_docs = [tokenize(d.text) for d in docs]
        for method in todo:
            spec = {"corpus": corpus, "method": method, "seed": args.seed,
                    "corpora_dir": str(root), "emb": str(out / "emb" / corpus),
                    "phrases": preps[corpus]["phrase_source"],
                    "bertopic_min_df": args.bertopic_min_df}
            log.info("%s %s: fitting in a subprocess", corpus, method)
            t1 = time.perf_counter()
            found = run_worker(spec, out)
            rec = {"corpus": corpus, "method": method, "name": NAMES[method],
                   "n_docs": len(docs), "seed": args.seed, **score(found, token_docs, labels,
                                                                   mask)}
            rec.update({k: found[k] for k in ("fit_s", "rss_before_mb", "peak_mb",
                                              "fit_peak_mb", "setup_peak_mb", "details")})
            if method in BERTOPIC:
                rec["bertopic_min_df"] = args.bertopic_min_df
            rec["topics"] = [t[:TOP_N] for t in found["topics"]]
            rec["wall_s"] = round(time.perf_counter() - t1, 1)
            runs[f"{corpus}|{method}"] = rec
            write_json(runs_path, runs)
            write_topics(out / "topics" / f"{corpus}-{method}.md", rec, found)
            log.info("%s %s: %d topics, unassigned %.1f%%, NMI %.3f, NPMI %s, diversity "
                     "%s, fit %.1fs, RSS %.0f -> %.0f MB", corpus, method, rec["n_topics"],
                     100 * rec["unassigned"], rec["nmi"], _f(rec["npmi"]),
                     _f(rec["diversity"]), rec["fit_s"], rec["rss_before_mb"], rec["peak_mb"])
    text = table(runs, preps)
    write_text(out / "table.md", text + "\n")
    print(text)


if __name__ == "__main__":
    main()
