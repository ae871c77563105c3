"""Phrase and sentence similarity with multi-facet models (Chang et al., Tables 2 and 3).

**Phrases** (Table 2): BiRD (Pearson r of a similarity with the relatedness score, all 3,345
pairs), Turney (5) and Turney (10) (accuracy, the 2,180 items of ``turney2012/turney.txt``, the
constituent unigrams excluded, tie credit 1/#tied): the data loaders and the tie-aware
accuracy of :mod:`phrasekit.eval.bird` / :mod:`phrasekit.eval.turney`. Two scores of a phrase
model: **Emb** (cosine of ``FacetEncoder.encode``, i.e. the existing tasks run on the encoder)
and **SC** (-SC, Eq. 5, of every (query, candidate) pair; :func:`bird_sc`, :func:`turney_sc`).

**Sentences** (Table 3): STS-B Pearson r on dev and test, over all pairs ("All") and over the
pairs whose gold score is below the split's median ("Low", the paper's STSB Low). Sentence
vectors are weighted averages of the raw GloVe vectors of a sentence's known words (stop words
included, unknown words dropped; the word space's tokenizer):

- ``avg``: uniform weights (GloVe Avg);
- ``prob_avg``: ``α / (α + p(w))``, α = 1e-4 (Arora et al.'s weights, GloVe Prob_avg);
- ``sif``: ``prob_avg``, then the projection on the first principal component (first right
  singular vector, uncentred, as Arora et al.'s TruncatedSVD) of the **train split's**
  sentence vectors (both sides, built the same way) is removed (GloVe SIF†).

With a sentence facet model each word's weight is further multiplied by its importance (Eq. 6,
``Σ_k max(0, cos(w, F_u(S)_k))``): **Ours Avg / Prob_avg / SIF†**. Ours **SC**: -SC (Eq. 5)
of the two sentences' facets. p(w): by default the word space's Zipf estimate from GloVe's
frequency rank (:meth:`WordSpace.zipf_probabilities`), the same for every row, so the GloVe
baselines do not depend on any trained model.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from phrasekit.encoders.facets.scores import sif_weights, word_importance
from phrasekit.eval.base import correlations, percent, rowwise_cosine
from phrasekit.eval.bird import BirdTask, load_bird
from phrasekit.eval.pairs import load_pair_task
from phrasekit.eval.turney import TurneyItem, TurneyTask, load_turney, tie_aware_accuracy

logger = logging.getLogger(__name__)

ALPHA = 1e-4
SCHEMES = ("avg", "prob_avg", "sif")
STS_SPLITS = ("dev", "test")

PairScore = Callable[[list[str], list[str]], np.ndarray]


# ---------------------------------------------------------------------------------- phrases
def bird_sc(encoder, data_dir: str | Path) -> dict[str, float]:
    """Pearson / Spearman (percent) of -SC (Eq. 5) with BiRD's relatedness, all pairs."""
    triples = load_bird(Path(data_dir))
    sims = encoder.sc_similarity([t[0] for t in triples], [t[1] for t in triples])
    return correlations(sims, [t[2] for t in triples])


def turney_pair_scores(score: PairScore, items: Sequence[TurneyItem], with_reversed: bool
                       ) -> np.ndarray:
    """``score`` of (bigram, each of the 5 candidates) [+ (reversed bigram, candidates)] of
    every item: (n, 5) or (n, 10), the correct pair in column 0."""
    n = len(items)
    left = [it.bigram for it in items for _ in range(5)]
    right = [c for it in items for c in it.candidates]
    if with_reversed:
        left += [it.reversed_bigram for it in items for _ in range(5)]
        right += right[: 5 * n]
    s = np.asarray(score(left, right), dtype=np.float64)
    forward = s[: 5 * n].reshape(n, 5)
    if not with_reversed:
        return forward
    return np.concatenate([forward, s[5 * n :].reshape(n, 5)], axis=1)


def turney_sc(encoder, data_dir: str | Path) -> dict[str, float]:
    """Turney (5) and Turney (10) accuracy (percent) of -SC (Eq. 5)."""
    items = load_turney(Path(data_dir))
    s10 = turney_pair_scores(encoder.sc_similarity, items, with_reversed=True)
    return {"turney5": percent(tie_aware_accuracy(s10[:, :5])),
            "turney10": percent(tie_aware_accuracy(s10))}


def phrase_similarity(encoder, data_dir: str | Path, score: str = "emb") -> dict[str, float]:
    """Table 2's row of an encoder: ``turney5``, ``turney10`` (accuracy) and ``bird``
    (Pearson), all in percent; ``score`` ``emb`` (cosine, any encoder) or ``sc`` (-SC, a
    facet model)."""
    data_dir = Path(data_dir)
    if score == "emb":
        return {"turney5": TurneyTask().evaluate(encoder, data_dir)["acc"],
                "turney10": TurneyTask(with_reversed=True).evaluate(encoder, data_dir)["acc"],
                "bird": BirdTask().evaluate(encoder, data_dir)["pearson"]}
    if score == "sc":
        return {**turney_sc(encoder, data_dir), "bird": bird_sc(encoder, data_dir)["pearson"]}
    raise ValueError(f"score must be 'emb' or 'sc', got {score!r}")


# ---------------------------------------------------------------------------------- sentences
class WeightedAverager:
    """Weighted averages of a word space's raw vectors (GloVe Avg / Prob_avg / SIF), optionally
    times the Eq. 6 importance from a sentence facet model.

    Args:
        word_space: the :class:`~phrasekit.encoders.facets.words.WordSpace` (GloVe 6B 50d).
        probabilities: p(w) per word-space word (None: Zipf's estimate from the rank).
        alpha: α of ``α / (α + p(w))``.
    """

    def __init__(self, word_space, probabilities: np.ndarray | None = None,
                 alpha: float = ALPHA) -> None:
        self.word_space = word_space
        p = word_space.zipf_probabilities() if probabilities is None else probabilities
        self.sif = sif_weights(np.asarray(p, dtype=np.float64), alpha)
        self.alpha = alpha

    def ids(self, text: str) -> list[int]:
        """Word-space ids of the known words of ``text`` (stop words kept)."""
        return self.word_space.text_ids(text, unknown=None)

    def weights(self, ids: Sequence[int], scheme: str) -> np.ndarray:
        """The base weight of each word: 1 (``avg``) or ``α / (α + p(w))`` (the others)."""
        if scheme not in SCHEMES:
            raise ValueError(f"scheme must be one of {SCHEMES}, got {scheme!r}")
        if scheme == "avg":
            return np.ones(len(ids), dtype=np.float64)
        return self.sif[np.asarray(ids, dtype=np.int64)]

    def embed(self, texts: Sequence[str], scheme: str, facet_encoder=None) -> np.ndarray:
        """(n, d) weighted averages (before any principal-component removal); zero rows for
        texts without a known word (or with all weights 0)."""
        ws = self.word_space
        out = np.zeros((len(texts), ws.dim), dtype=np.float64)
        facets = None
        if facet_encoder is not None:
            if facet_encoder.word_space.fingerprint != ws.fingerprint:
                raise ValueError("the facet model predicts into another word space")
            uniq = list(dict.fromkeys(texts))
            pos = {t: i for i, t in enumerate(uniq)}
            f_uniq = facet_encoder.facets(uniq)
            facets = [f_uniq[pos[t]] for t in texts]
        for row, text in enumerate(texts):
            ids = self.ids(text)
            if not ids:
                continue
            w = self.weights(ids, scheme)
            if facets is not None:
                w = w * word_importance(ws.unit[ids], facets[row])
            total = w.sum()
            if total > 0:
                out[row] = (w[:, None] * ws.vectors[ids]).sum(axis=0) / total
        return out


def first_component(vectors: np.ndarray) -> np.ndarray:
    """The first right singular vector (unit, uncentred) of (n, d) ``vectors``."""
    x = np.asarray(vectors, dtype=np.float64)
    if x.ndim != 2 or not len(x):
        raise ValueError(f"need a non-empty (n, d) matrix, got shape {x.shape}")
    _, _, vt = np.linalg.svd(x, full_matrices=False)
    return vt[0]


def remove_component(vectors: np.ndarray, u: np.ndarray) -> np.ndarray:
    """``vectors`` minus their projection on the unit vector ``u``."""
    x = np.asarray(vectors, dtype=np.float64)
    return x - np.outer(x @ u, u)


def pearson_all_low(sims: np.ndarray, gold: np.ndarray) -> dict[str, float]:
    """Pearson r (percent) over all pairs and over the pairs whose gold score is below the
    median gold score ("Low")."""
    from scipy.stats import pearsonr

    sims = np.asarray(sims, dtype=np.float64)
    gold = np.asarray(gold, dtype=np.float64)
    low = gold < np.median(gold)
    return {"all": percent(pearsonr(sims, gold).statistic),
            "low": percent(pearsonr(sims[low], gold[low]).statistic)}


def load_stsb_splits(data_dir: str | Path) -> dict[str, tuple[list[str], list[str], np.ndarray]]:
    """``{split: (sentences1, sentences2, gold)}`` for train / dev / test (STS-B loader of
    :mod:`phrasekit.eval.pairs`)."""
    data = load_pair_task("stsb", data_dir)
    return {split: ([e.a for e in ex], [e.b for e in ex],
                    np.array([e.label for e in ex], dtype=np.float64))
            for split, ex in data.items()}


def stsb_weighted(averager: WeightedAverager, data: dict, scheme: str, facet_encoder=None
                  ) -> dict[str, float]:
    """``{dev_all, dev_low, test_all, test_low}`` of one weighting ``scheme`` (with Eq. 6
    importance when ``facet_encoder`` is given); ``data`` from :func:`load_stsb_splits`."""
    u = None
    if scheme == "sif":
        a, b, _ = data["train"]
        u = first_component(averager.embed(list(a) + list(b), scheme, facet_encoder))
    out: dict[str, float] = {}
    for split in STS_SPLITS:
        a, b, gold = data[split]
        va = averager.embed(a, scheme, facet_encoder)
        vb = averager.embed(b, scheme, facet_encoder)
        if u is not None:
            va, vb = remove_component(va, u), remove_component(vb, u)
        r = pearson_all_low(rowwise_cosine(va, vb, np.float64), gold)
        out[f"{split}_all"], out[f"{split}_low"] = r["all"], r["low"]
    return out


def stsb_sc(facet_encoder, data: dict) -> dict[str, float]:
    """``{dev_all, dev_low, test_all, test_low}`` of -SC (Eq. 5) between the sentences."""
    out: dict[str, float] = {}
    for split in STS_SPLITS:
        a, b, gold = data[split]
        r = pearson_all_low(facet_encoder.sc_similarity(a, b), gold)
        out[f"{split}_all"], out[f"{split}_low"] = r["all"], r["low"]
    return out
