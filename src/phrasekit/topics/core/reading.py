"""Reading groups of documents as topics: which words and phrases name each group.

Used by ``DocumentTopicModel``; every function works on a binary documents x terms matrix
``P`` (``terms.presence_matrix``: a term is present where its tokens occur verbatim).

- ``term_specificity``: a corpus-level score computed *before* any clustering: how far the
  documents using a term sit, on average, from the corpus centre in the encoder's space.
  Boilerplate ("et al", "results", "this paper"), units and citation debris occur in documents
  of every subject, so their documents average out near the centre.
- ``topic_term_scores``: how much a term marks a group, ``p_in * log(p_in / p_all)`` (a term's
  share of the group's documents against its share of all documents; the per-term part of the
  KL divergence between the two), a document-level c-TF-IDF.
- ``rank_terms``: the best terms of each group, with near-repeats skipped.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp


def term_specificity(P: sp.spmatrix, X: np.ndarray) -> np.ndarray:
    """Per term, the share of the documents' spread that the mean of its documents moves away
    from the corpus centre, corrected for chance: ``(||m_j||^2 - e_j) / s2``.

    ``X`` holds centred document vectors (zero rows for empty documents), ``m_j`` is the mean
    of the vectors of the ``df_j`` documents containing term ``j`` and ``s2`` the mean squared
    norm of a document vector. The mean of ``df`` of the ``N`` documents drawn at random has
    an expected squared norm of ``e = s2 / df * (N - df) / (N - 1)``, which is subtracted so
    that rare terms do not look specific by chance. 0 for a term in every document (and about
    0 for one spread evenly), up to 1 for a term whose documents coincide.
    """
    P = sp.csc_matrix(P, dtype=np.float64)
    df = np.asarray(P.sum(axis=0)).ravel()
    used = np.linalg.norm(X, axis=1) > 0
    s2 = float(np.mean(np.sum(X[used] ** 2, axis=1))) if used.any() else 1.0
    s2 = s2 if s2 > 0 else 1.0
    n = max(int(used.sum()), 2)
    df = np.clip(df, 1.0, n)
    M = np.asarray(P.T @ X.astype(np.float64)) / df[:, None]
    chance = s2 / df * (n - df) / (n - 1)
    return (np.sum(M**2, axis=1) - chance) / s2


def topic_term_scores(P: sp.spmatrix, labels: np.ndarray, k: int) -> np.ndarray:
    """(k, V) scores ``p_in * log(p_in / p_all)``, 0 where a term is no more frequent in the
    group than in the corpus; ``labels``: each document's group, -1 for none."""
    P = sp.csr_matrix(P, dtype=np.float64)
    member = labels >= 0
    onehot = sp.csr_matrix(
        (np.ones(int(member.sum())), (labels[member], np.flatnonzero(member))),
        shape=(k, P.shape[0]),
    )
    inside = np.asarray((onehot @ P).todense())
    sizes = np.maximum(np.bincount(labels[member], minlength=k), 1)[:, None]
    p_in = inside / sizes
    p_all = np.asarray(P.sum(axis=0)).ravel() / max(int(member.sum()), 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        gain = p_in * np.log(p_in / np.maximum(p_all, 1e-12)[None, :])
    return np.where((p_in > p_all[None, :]) & np.isfinite(gain), gain, 0.0)


def _stem(key: str) -> str:
    return key[:-1] if key.endswith("s") else key


def rank_terms(scores: np.ndarray, keys: Sequence[str], n: int,
               allowed: np.ndarray | None = None) -> list[list[int]]:
    """Per row of ``scores`` (k, V), the indices of its ``n`` best positive-scoring terms
    (ties: key order), skipping a term that repeats a listed one up to a final "s" ("mobile
    phone" after "mobile phones") or a phrase inside a listed phrase ("instanton liquid"
    after "instanton liquid density"). ``allowed``: a boolean mask of terms that may be listed."""
    key_rank = np.empty(len(keys), dtype=np.int64)
    key_rank[np.argsort(np.asarray(keys, dtype=object), kind="stable")] = np.arange(len(keys))
    out = []
    for row in scores:
        cand = np.flatnonzero(row > 0) if allowed is None else np.flatnonzero((row > 0) & allowed)
        cand = cand[np.lexsort((key_rank[cand], -row[cand]))]
        picked: list[int] = []
        seen: set[str] = set()
        phrases: list[str] = []
        for j in cand.tolist():
            key = keys[j]
            padded = f" {key} "
            if key in seen or _stem(key) in seen or (
                    " " in key and any(padded in f" {p} " for p in phrases)):
                continue
            seen.update({key, _stem(key)})
            if " " in key:
                phrases.append(key)
            picked.append(j)
            if len(picked) >= n:
                break
        out.append(picked)
    return out
