"""Documents x terms weights and the document context of term embeddings (step 4 of
:mod:`phrasekit.topics.methods.model`): phrase embeddings group terms by *kind*; mixing in the
centred vectors of the documents a term occurs in groups them by *subject*."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from phrasekit.encoders.pooling import l2_normalize
from phrasekit.phrases import PhraseVocabulary


def doc_term_counts(vocab: PhraseVocabulary) -> sp.csr_matrix:
    """Sparse documents x terms matrix of occurrence counts."""
    index = {p: i for i, p in enumerate(vocab.phrases)}
    rows, cols, vals = [], [], []
    for d, phrases in enumerate(vocab.doc_phrases):
        for p, c in phrases.items():
            rows.append(d)
            cols.append(index[p])
            vals.append(c)
    return sp.csr_matrix(
        (np.asarray(vals, dtype=np.float64), (rows, cols)), shape=(vocab.n_docs, len(vocab))
    )


def doc_term_weights(vocab: PhraseVocabulary) -> sp.csr_matrix:
    """Sparse documents x terms tf-idf weights ``(1 + log tf) * idf``, with the smoothed
    ``idf = 1 + log((1 + N) / (1 + df))`` (never 0, so even a one-document corpus works)."""
    C = doc_term_counts(vocab)
    C.data = 1.0 + np.log(C.data)
    df = np.asarray(vocab.doc_freq, dtype=np.float64)
    idf = 1.0 + np.log((1.0 + vocab.n_docs) / (1.0 + df))
    return (C @ sp.diags(idf)).tocsr()


def contextualise(
    X: np.ndarray, W: sp.csr_matrix, context_weight: float
) -> tuple[np.ndarray, np.ndarray]:
    """Mix each term's embedding with the context of the documents it occurs in.

    Args:
        X: (terms, d) unit term embeddings.
        W: (docs, terms) non-negative weights of terms in documents.
        context_weight: weight ``w`` of the context in ``(1 - w) * x + w * context``.

    Returns:
        ``(V, specificity)``: the unit mixed vectors, and per term the length of its raw
        context vector (the weighted mean of its documents' centred vectors): near 0 for terms
        spread evenly over the corpus, larger for terms whose documents share a subject.
    """
    D = l2_normalize(W @ X, np.float64)
    has_terms = np.asarray(W.sum(axis=1)).ravel() > 0
    if has_terms.any():
        D[has_terms] -= D[has_terms].mean(axis=0)
    D[~has_terms] = 0.0
    col_mass = np.asarray(W.sum(axis=0)).ravel()
    context = np.asarray(W.T @ D) / np.maximum(col_mass, 1e-12)[:, None]
    specificity = np.linalg.norm(context, axis=1)
    if context_weight <= 0:
        return X.astype(np.float32, copy=True), specificity
    mixed = (1.0 - context_weight) * X + context_weight * l2_normalize(context, np.float64)
    return l2_normalize(mixed, np.float64).astype(np.float32), specificity
