"""Scores built on facets (§3): SC (Eq. 5), Asym (Eq. 7), word importance (Eq. 6) and the
summary objective (Eq. 8). Plain functions over arrays; :class:`FacetEncoder` wraps them.

Our reading of the (partly garbled) formulas:

- ``F_u(S)``: the K facets of S, each L2-normalised (the paper's ``c_k / ||c_k||``).
- ``Er(A, B)``: Eq. 1's reconstruction error of the rows of B from the rows of A, with
  ``M`` in [0, 1] and λ = 0.4, **averaged over the rows of B** (as the authors' evaluation
  code does), so phrases of different lengths are comparable.
- **SC** (Eq. 5): ``SC(S1, S2) = Er(F_u(S1), F_u(S2)) + Er(F_u(S2), F_u(S1))``, a symmetric
  *distance*; similarity is ``-SC``.
- **Asym** (Eq. 7): ``Asym(hyper, hypo) = Er(F_u(hyper), W(hypo)) - Er(F_u(hypo), W(hyper))``
  with ``W(S)`` the unit word vectors of the words of S. A hyponym's facets (the words that can
  occur around "brown dog") rebuild its hypernym's words ("animal") better than the reverse,
  so Asym > 0 suggests that ``hyper`` really is the hypernym.
- **Word importance** (Eq. 6): ``a = max(0, W(S)^T F_u(S)) 1``: each word's cosines with the
  sentence's K facets, negatives cut to 0, summed over the facets. It multiplies the usual
  word weights (uniform, α / (α + p(w)), SIF) of an averaged sentence embedding.
- **Summary objective** (Eq. 8): ``Σ_{w ∈ D} γ_w max_{s ∈ C(A)} w^T s`` with
  ``γ_w = α / (α + p(w))``, ``C(A)`` the union of the selected sentences' vectors (their K
  unit facets for our model, one average vector for "Sent Emb", their word vectors for
  "W Emb"), maximised greedily one sentence at a time (Kobayashi et al., 2015). A word's
  similarity to the empty set is ``empty_value`` (-1000, the paper's footnote 6).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from phrasekit.encoders.facets.loss import DEFAULT_LAMBDA, reconstruction_error
from phrasekit.encoders.pooling import l2_normalize

#: Steps of the coefficient solver at scoring time (more than in training: it is cheap here).
SCORE_STEPS = 100


def _as_tensor(x: np.ndarray | torch.Tensor) -> torch.Tensor:
    return torch.as_tensor(np.asarray(x, dtype=np.float32)) if not isinstance(
        x, torch.Tensor) else x.float()


def set_error(basis: np.ndarray | torch.Tensor, targets: np.ndarray | torch.Tensor,
              mask: np.ndarray | torch.Tensor | None = None, lam: float = DEFAULT_LAMBDA,
              steps: int = SCORE_STEPS) -> np.ndarray:
    """``Er(basis, targets)`` per pair: (n, K, d) basis rows rebuild (n, N, d) target rows
    (``mask`` (n, N) marks real rows); returns (n,) mean squared errors."""
    b, t = _as_tensor(basis), _as_tensor(targets)
    m = None if mask is None else torch.as_tensor(np.asarray(mask, dtype=bool))
    with torch.no_grad():
        return reconstruction_error(b, t, m, lam=lam, steps=steps, method="pgd").numpy()


def sc_distance(facets_a: np.ndarray, facets_b: np.ndarray, lam: float = DEFAULT_LAMBDA,
                steps: int = SCORE_STEPS) -> np.ndarray:
    """Eq. 5 for aligned pairs of facet sets (n, K, d) (normalised here): symmetric, >= 0."""
    a, b = l2_normalize(facets_a), l2_normalize(facets_b)
    if a.shape != b.shape or a.ndim != 3:
        raise ValueError(f"need two (n, K, d) arrays of one shape, got {a.shape}, {b.shape}")
    return set_error(a, b, lam=lam, steps=steps) + set_error(b, a, lam=lam, steps=steps)


def pad_sets(sets: Sequence[np.ndarray], dim: int) -> tuple[np.ndarray, np.ndarray]:
    """Stack variable-size (N_i, d) sets into (n, N_max, d) with a (n, N_max) mask."""
    n_max = max((len(s) for s in sets), default=0) or 1
    out = np.zeros((len(sets), n_max, dim), dtype=np.float32)
    mask = np.zeros((len(sets), n_max), dtype=bool)
    for i, s in enumerate(sets):
        out[i, : len(s)] = s
        mask[i, : len(s)] = True
    return out, mask


def asym_scores(facets_hypo: np.ndarray, words_hypo: Sequence[np.ndarray],
                facets_hyper: np.ndarray, words_hyper: Sequence[np.ndarray],
                lam: float = DEFAULT_LAMBDA, steps: int = SCORE_STEPS) -> np.ndarray:
    """Eq. 7 per pair: ``Er(F_u(hyper), W(hypo)) - Er(F_u(hypo), W(hyper))``.

    ``facets_*`` are (n, K, d); ``words_*`` the unit word vectors of each phrase (N_i, d).
    Positive when ``hyper`` looks like the hypernym of ``hypo``.
    """
    d = facets_hypo.shape[-1]
    w_hypo, m_hypo = pad_sets(words_hypo, d)
    w_hyper, m_hyper = pad_sets(words_hyper, d)
    down = set_error(l2_normalize(facets_hyper), w_hypo, m_hypo, lam, steps)
    up = set_error(l2_normalize(facets_hypo), w_hyper, m_hyper, lam, steps)
    return down - up


def word_importance(word_vectors: np.ndarray, facets: np.ndarray) -> np.ndarray:
    """Eq. 6: (N,) importance of N words given one text's (K, d) facets."""
    w, f = l2_normalize(word_vectors), l2_normalize(facets)
    if w.ndim != 2 or f.ndim != 2 or w.shape[1] != f.shape[1]:
        raise ValueError(f"need (N, d) words and (K, d) facets, got {w.shape}, {f.shape}")
    return np.maximum(0.0, w @ f.T).sum(axis=1)


def sif_weights(probabilities: np.ndarray, alpha: float = 1e-4) -> np.ndarray:
    """Arora et al.'s word weights ``α / (α + p(w))``."""
    if alpha <= 0:
        raise ValueError(f"alpha must be > 0, got {alpha}")
    return alpha / (alpha + np.asarray(probabilities, dtype=np.float64))


def summary_objective(doc_words: np.ndarray, gamma: np.ndarray, selected: Sequence[np.ndarray],
                      empty_value: float = -1000.0) -> float:
    """Eq. 8's value of a selection: Σ_w γ_w max_{s ∈ C(A)} w^T s (unit rows assumed)."""
    if not selected or not sum(len(s) for s in selected):
        return float(np.sum(gamma) * empty_value)
    c = np.concatenate([np.asarray(s, dtype=np.float32) for s in selected])
    return float(np.sum(gamma * (doc_words @ c.T).max(axis=1)))


def greedy_summary(doc_words: np.ndarray, gamma: np.ndarray,
                   sentence_vectors: Sequence[np.ndarray], n_sentences: int = 3,
                   length_normalize: Sequence[float] | None = None,
                   empty_value: float = -1000.0) -> list[int]:
    """Indices of ``n_sentences`` sentences chosen greedily to maximise Eq. 8.

    Args:
        doc_words: (D, d) unit vectors of the document's words.
        gamma: (D,) word importances α / (α + p(w)).
        sentence_vectors: per sentence its set of unit vectors C(A_t), (k_t, d).
        n_sentences: how many to select (3 in the paper's CNN/DM setting).
        length_normalize: per-sentence divisors of the gain (the paper's "W Emb" divides by
            the sentence length); None: plain gains.
        empty_value: a word's similarity to an empty selection (footnote 6).
    """
    doc_words = np.asarray(doc_words, dtype=np.float32)
    gamma = np.asarray(gamma, dtype=np.float64)
    if doc_words.ndim != 2 or len(gamma) != len(doc_words):
        raise ValueError("doc_words must be (D, d) and gamma (D,)")
    if n_sentences < 1:
        raise ValueError(f"n_sentences must be >= 1, got {n_sentences}")
    n = len(sentence_vectors)
    # each sentence's best similarity to every document word (its max over its vectors)
    reach = np.full((n, len(doc_words)), -np.inf, dtype=np.float64)
    available = np.zeros(n, dtype=bool)
    for i, s in enumerate(sentence_vectors):
        if len(s):
            reach[i] = (doc_words @ np.asarray(s, dtype=np.float32).T).max(axis=1)
            available[i] = True
    divisor = None
    if length_normalize is not None:
        divisor = np.maximum(np.asarray(length_normalize, dtype=np.float64), 1e-12)
    best = np.full(len(doc_words), empty_value, dtype=np.float64)
    chosen: list[int] = []
    for _ in range(min(n_sentences, n)):
        if not available.any():
            break
        base = float(np.sum(gamma * best))
        gains = (np.maximum(best, reach) * gamma).sum(axis=1) - base
        if divisor is not None:
            gains = gains / divisor
        gains[~available] = -np.inf
        top = int(np.argmax(gains))  # the first of tied sentences
        chosen.append(top)
        available[top] = False
        best = np.maximum(best, reach[top])
    return chosen
