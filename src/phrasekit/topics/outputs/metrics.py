"""Automatic topic-quality metrics: NPMI coherence, topic diversity, NMI against gold labels.

- **NPMI** (Bouma 2009; Lau et al. 2014) of each topic's top-n terms from *document*
  co-occurrence in the corpus itself: a term is present in a document when its tokens occur
  there contiguously (``terms.presence_matrix``). A pair that never co-occurs scores -1. Pairs
  where one term is nested in the other ("deutsche" / "deutsche boerse") are skipped: they
  co-occur by construction and would inflate the score of any model that mixes a phrase with
  its own words. A topic's score is the mean over its remaining pairs; the model's the mean
  over topics.
- **Topic diversity** (Dieng et al. 2020): distinct *words* among the top-25 terms of all
  topics divided by the number of words there, so a phrase counts with its words ("bank of
  england" and "england" share one).
- **NMI** between each document's top topic and its gold label (scikit-learn, arithmetic
  normalisation); documents a model leaves unassigned (topic -1) form one cluster of their own.
- **Phrase informativeness** (UCTopic appendix B.2): a phrase's tf-idf in a document is the
  mean tf-idf of its words there (so length does not count); averaged over the documents that
  contain the phrase verbatim, then over a topic's top-10 phrases, then over topics.
- **Word diversity** (UCTopic appendix B.2): distinct words / words among one topic's top-10
  phrases ("good food", "great food" -> 3/4), averaged over topics. Unlike topic diversity it
  measures repetition *inside* a topic.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import sparse
from sklearn.metrics import normalized_mutual_info_score

from phrasekit.text import TokenDocs
from phrasekit.topics.core.terms import presence_matrix


def _nested(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    short, long_ = (a, b) if len(a) <= len(b) else (b, a)
    n = len(short)
    return any(long_[i : i + n] == short for i in range(len(long_) - n + 1))


def npmi_coherence(
    topics: Sequence[Sequence[str]],
    token_docs: Sequence[Sequence[str]],
    top_n: int = 10,
    skip_nested: bool = True,
) -> tuple[float, list[float]]:
    """Mean NPMI of the top-``top_n`` terms of every topic, and the per-topic scores.

    ``topics``: per topic, term keys (lower-cased tokens joined by spaces), best first.
    A topic without any scorable pair gets NaN and is left out of the mean.
    """
    if not token_docs:
        raise ValueError("no documents to compute co-occurrence from")
    tops = [list(dict.fromkeys(t))[:top_n] for t in topics]
    vocab = sorted({w for t in tops for w in t})
    col = {w: j for j, w in enumerate(vocab)}
    P = presence_matrix(token_docs, vocab)
    n_docs = float(P.shape[0])
    df = np.asarray(P.sum(axis=0)).ravel()
    co = (P.T @ P).toarray()
    scores = []
    for terms in tops:
        vals = []
        for a in range(len(terms)):
            for b in range(a + 1, len(terms)):
                ta, tb = terms[a], terms[b]
                if skip_nested and _nested(tuple(ta.split()), tuple(tb.split())):
                    continue
                i, j = col[ta], col[tb]
                vals.append(_npmi(co[i, j], df[i], df[j], n_docs))
        scores.append(float(np.mean(vals)) if vals else float("nan"))
    finite = [s for s in scores if np.isfinite(s)]
    return (float(np.mean(finite)) if finite else float("nan")), scores


def _npmi(n_ij: float, n_i: float, n_j: float, n: float) -> float:
    if n_ij <= 0 or n_i <= 0 or n_j <= 0:
        return -1.0
    p_ij = n_ij / n
    if p_ij >= 1.0:
        return 1.0
    pmi = np.log(p_ij / ((n_i / n) * (n_j / n)))
    return float(pmi / -np.log(p_ij))


def topic_diversity(topics: Sequence[Sequence[str]], top_n: int = 25) -> float:
    """Distinct words / words among the top-``top_n`` terms of all topics (1 = no overlap)."""
    words = [w for t in topics for term in list(t)[:top_n] for w in term.split()]
    return len(set(words)) / len(words) if words else float("nan")


def _doc_word_counts(docs: TokenDocs, lo: int, hi: int
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct (document, word id) pairs of documents ``lo:hi`` with their counts."""
    lengths = np.diff(docs.offsets[lo:hi + 1])
    doc = np.repeat(np.arange(lo, hi, dtype=np.int64), lengths)
    keys, counts = np.unique(doc * len(docs.words) + docs.ids[docs.offsets[lo]:docs.offsets[hi]],
                             return_counts=True)
    return keys // len(docs.words), keys % len(docs.words), counts


def word_tfidf(docs: TokenDocs, words: Sequence[str], chunk: int = 20_000) -> sparse.csr_matrix:
    """The columns for ``words`` of scikit-learn's tf-idf matrix of ``docs`` (raw counts,
    smoothed idf, rows L2-normalised over every word), from the token ids ``chunk`` documents
    at a time: the full document-word matrix, which a large corpus cannot afford, is never
    built."""
    n, index = len(docs), {w: i for i, w in enumerate(docs.words)}
    wanted = np.full(len(docs.words), -1, dtype=np.int64)
    for j, w in enumerate(words):
        wanted[index[w]] = j
    spans = [(lo, min(lo + chunk, n)) for lo in range(0, n, chunk)]
    df = np.zeros(len(docs.words), dtype=np.int64)
    for lo, hi in spans:
        df += np.bincount(_doc_word_counts(docs, lo, hi)[1], minlength=len(docs.words))
    idf = np.log((1 + n) / (1 + df)) + 1.0
    rows, cols, vals = [], [], []
    for lo, hi in spans:
        doc, word, counts = _doc_word_counts(docs, lo, hi)
        value = counts * idf[word]
        norm = np.sqrt(np.bincount(doc - lo, value**2, minlength=hi - lo))
        keep = wanted[word] >= 0
        rows.append(doc[keep])
        cols.append(wanted[word[keep]])
        vals.append(value[keep] / norm[doc[keep] - lo])
    return sparse.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                             shape=(n, len(words)))


def phrase_informativeness(
    topics: Sequence[Sequence[str]], token_docs: Sequence[Sequence[str]], top_n: int = 10
) -> tuple[float, list[float]]:
    """Mean word tf-idf of the top-``top_n`` phrases of every topic (UCTopic B.2), and the
    per-topic scores. tf-idf: scikit-learn's (raw counts, smoothed idf, L2-normalised rows)
    over ``token_docs``. A phrase found in no document is skipped; a topic without any
    scorable phrase gets NaN and is left out of the mean."""
    if not token_docs:
        raise ValueError("no documents to compute tf-idf from")
    docs = TokenDocs.of(token_docs)
    tops = [list(dict.fromkeys(t))[:top_n] for t in topics]
    terms = sorted({p for t in tops for p in t if p})
    known = set(docs.words)
    words = sorted({w for term in terms for w in term.split() if w in known})
    word_col = {w: j for j, w in enumerate(words)}
    T = word_tfidf(docs, words)
    P = presence_matrix(docs, terms)
    value: dict[str, float] = {}
    for j, term in enumerate(terms):
        found = P[:, j].nonzero()[0]
        cols = [word_col[w] for w in term.split() if w in word_col]
        if len(found) and cols:
            value[term] = float(T[found][:, cols].toarray().mean())
    scores = []
    for t in tops:
        vals = [value[p] for p in t if p in value]
        scores.append(float(np.mean(vals)) if vals else float("nan"))
    finite = [s for s in scores if np.isfinite(s)]
    return (float(np.mean(finite)) if finite else float("nan")), scores


def word_diversity(topics: Sequence[Sequence[str]], top_n: int = 10) -> tuple[float, list[float]]:
    """Distinct words / words among each topic's top-``top_n`` phrases (UCTopic B.2), the mean
    over topics and the per-topic values (NaN for an empty topic, left out of the mean)."""
    scores = []
    for t in topics:
        words = [w for term in list(t)[:top_n] for w in term.split()]
        scores.append(len(set(words)) / len(words) if words else float("nan"))
    finite = [s for s in scores if np.isfinite(s)]
    return (float(np.mean(finite)) if finite else float("nan")), scores


def labels_nmi(doc_topics: Sequence[int], labels: Sequence[object]) -> float:
    """NMI between documents' top topics (-1 = unassigned, one cluster) and gold labels."""
    if len(doc_topics) != len(labels):
        raise ValueError(f"{len(doc_topics)} topic assignments but {len(labels)} labels")
    return float(normalized_mutual_info_score([str(x) for x in labels], list(doc_topics)))
