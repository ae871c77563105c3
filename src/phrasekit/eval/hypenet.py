"""HypeNet hypernymy detection (Shwartz et al., 2016), unsupervised, as in the multi-facet paper
(Chang et al., §3.3, Table 4).

Data: ``hypenet/dataset_{lex,rnd}/{train,val,test}.tsv``, no header, 3 tab-separated fields
``x``, ``y``, ``label``: ``True`` when ``y`` is a hypernym of ``x`` ("menheniot", "village"),
``False`` otherwise. The files carry only this binary label: HypeNet's negatives (1 positive
to 4 negatives in every split) are term pairs that hold some other relation in its resources
(WordNet, DBpedia, Wikidata, YAGO) or are random pairs of its terms, a few of them reversed
hypernym pairs ("city", "latakia": 77 of the 5,288 negatives of the lexical test split are the
reverse of a positive pair of the lexical split). Terms
may be multi-word (1,799 of the 6,610 lexical test pairs have one). The default is the
**lexical split's test portion** (6,610 pairs, 1,322 positive, no term shared with train/val);
the paper reads the random split (``split="rnd"``: 17,670 test pairs, 3,512 positive).

Metrics (percent), for a score ``s(x, y)`` that is high when ``y`` looks like ``x``'s
hypernym:

- ``auc``: **area under the precision-recall curve** (average precision, scikit-learn's
  ``average_precision_score``) of retrieving the positive pairs among all pairs: the paper's
  "AUC of detecting hypernym among other relations". Its Table 4 values (17.7 for GloVe Avg,
  29.6 for its model, with ~20% positives) are PR-AUC values: cosine of GloVe 6B 50d averages
  gives 17.3 by this definition on the random test split (its ROC AUC is 45.9). We also report
  ``roc_auc``.
- ``direction_acc``: on the positive pairs only, the fraction where the score prefers the
  true direction, ``s(x, y) > s(y, x)`` (ties count 1/2). For Asym, which is antisymmetric,
  that is ``Asym(hyper=y, hypo=x) > 0``. A symmetric score (cosine) cannot tell directions:
  its accuracy is 50 by definition (the paper's "0.5").

Scores:

- Asym (Eq. 7) of a phrase facet model, **signed**: ``Asym(hyper=y, hypo=x) =
  Er(F_u(y), W(x)) - Er(F_u(x), W(y))``, the paper's protocol (one score that is high for
  "related, and y the more general"); see :meth:`FacetEncoder.asym_score`.
- cosine of any encoder (GloVe average, the facet model's Emb): symmetric baselines.

Pairs with a term that has no word in the model's vocabulary get Asym 0 (a tie) and are
counted (``oov_pairs``); cosine gives them 0 too (zero vectors).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from phrasekit.encoders.base import Encoder
from phrasekit.eval.base import embed_unique, percent, require_path

logger = logging.getLogger(__name__)

SPLITS = {"lex": "hypenet/dataset_lex", "rnd": "hypenet/dataset_rnd"}
PARTS = ("train", "val", "test")


@dataclass(frozen=True)
class HypernymPair:
    """One HypeNet row: is ``hyper`` (the file's ``y``) a hypernym of ``hypo`` (``x``)?"""

    hypo: str
    hyper: str
    label: bool


def load_hypenet(data_dir: str | Path, split: str = "lex", part: str = "test"
                 ) -> list[HypernymPair]:
    """The pairs of one HypeNet file in file order (``split`` lex/rnd, ``part``
    train/val/test); raises ValueError naming a malformed line."""
    if split not in SPLITS:
        raise ValueError(f"unknown HypeNet split {split!r}; known: {', '.join(SPLITS)}")
    if part not in PARTS:
        raise ValueError(f"unknown HypeNet part {part!r}; known: {', '.join(PARTS)}")
    path = require_path(Path(data_dir), f"{SPLITS[split]}/{part}.tsv")
    out: list[HypernymPair] = []
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            line = line.rstrip("\n")
            if not line.strip():
                continue
            f = line.split("\t")
            if len(f) != 3 or f[2] not in ("True", "False") or not f[0].strip() \
                    or not f[1].strip():
                raise ValueError(f"{path}:{lineno}: need 'x<TAB>y<TAB>True|False', got {line!r}")
            out.append(HypernymPair(f[0].strip(), f[1].strip(), f[2] == "True"))
    return out


# ---------------------------------------------------------------------------------- metrics
def _check(labels: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    y = np.asarray(labels, dtype=bool)
    s = np.asarray(scores, dtype=np.float64)
    if y.shape != s.shape or y.ndim != 1 or not len(y):
        raise ValueError(f"labels and scores must be equal-length vectors, got {y.shape} and "
                         f"{s.shape}")
    if not np.isfinite(s).all():
        raise ValueError("scores must be finite")
    return y, s


def detection_auc(labels: np.ndarray, scores: np.ndarray) -> float:
    """Area under the precision-recall curve (average precision) of ``scores`` ranking the
    positive ``labels`` first, in percent (needs at least one positive)."""
    from sklearn.metrics import average_precision_score

    y, s = _check(labels, scores)
    if not y.any():
        raise ValueError("need at least one positive pair")
    return percent(average_precision_score(y, s))


def detection_roc_auc(labels: np.ndarray, scores: np.ndarray) -> float:
    """ROC AUC of ``scores`` separating positives from negatives, in percent."""
    from sklearn.metrics import roc_auc_score

    y, s = _check(labels, scores)
    if y.all() or not y.any():
        raise ValueError("need both positive and negative pairs")
    return percent(roc_auc_score(y, s))


def direction_accuracy(forward: np.ndarray, backward: np.ndarray | None = None) -> float:
    """Percent of true hypernym pairs whose score prefers the true direction.

    ``forward[i]`` scores "y is the hypernym of x", ``backward[i]`` the reverse (None: an
    antisymmetric score such as Asym, whose backward score is ``-forward``). Ties earn 1/2.
    """
    f = np.asarray(forward, dtype=np.float64)
    b = -f if backward is None else np.asarray(backward, dtype=np.float64)
    if f.shape != b.shape or f.ndim != 1 or not len(f):
        raise ValueError(f"forward and backward must be equal-length vectors, got {f.shape} "
                         f"and {b.shape}")
    credit = np.where(f > b, 1.0, np.where(f == b, 0.5, 0.0))
    return percent(float(credit.mean()))


def hypernymy_metrics(pairs: list[HypernymPair], scores: np.ndarray,
                      backward: np.ndarray | None = None, symmetric: bool = False
                      ) -> dict[str, float]:
    """``auc`` (PR-AUC), ``roc_auc`` and ``direction_acc`` of a pair score.

    ``scores[i]`` scores "hyper is a hypernym of hypo" for ``pairs[i]``; ``backward`` the
    reversed pairs (None: antisymmetric, i.e. ``-scores``); ``symmetric`` scores cannot tell
    directions (accuracy 50).
    """
    labels = np.array([p.label for p in pairs], dtype=bool)
    scores = np.asarray(scores, dtype=np.float64)
    out = {"auc": detection_auc(labels, scores), "roc_auc": detection_roc_auc(labels, scores)}
    if symmetric:
        out["direction_acc"] = 50.0
    else:
        pos = np.flatnonzero(labels)
        out["direction_acc"] = direction_accuracy(
            scores[pos], None if backward is None else np.asarray(backward)[pos])
    out["pairs"] = float(len(pairs))
    out["positives"] = float(labels.sum())
    return out


# ---------------------------------------------------------------------------------- scores
def cosine_scores(encoder: Encoder, pairs: list[HypernymPair]) -> np.ndarray:
    """cosine(hypo, hyper) of every pair (a symmetric score)."""
    emb = embed_unique(encoder, [p.hypo for p in pairs] + [p.hyper for p in pairs])
    n = len(pairs)
    return np.einsum("nd,nd->n", emb[:n], emb[n:]).astype(np.float64)


def asym_scores(encoder, pairs: list[HypernymPair]) -> tuple[np.ndarray, int]:
    """Signed Asym (Eq. 7), ``Asym(hyper, hypo)``, of every pair with a
    :class:`FacetEncoder`; pairs with a term that has no known word
    get 0. Returns ``(scores, number of such pairs)``."""
    known = [bool(encoder.word_vectors(p.hypo)[0]) and bool(encoder.word_vectors(p.hyper)[0])
             for p in pairs]
    idx = [i for i, k in enumerate(known) if k]
    scores = np.zeros(len(pairs), dtype=np.float64)
    if idx:
        scores[idx] = encoder.asym_score([pairs[i].hypo for i in idx],
                                         [pairs[i].hyper for i in idx])
    oov = len(pairs) - len(idx)
    if oov:
        logger.info("hypenet: %d of %d pairs have a term without a known word (Asym 0)", oov,
                    len(pairs))
    return scores, oov


def evaluate_asym(encoder, pairs: list[HypernymPair]) -> dict[str, float]:
    """Table 4 metrics of the signed Asym score of a phrase facet model."""
    scores, oov = asym_scores(encoder, pairs)
    out = hypernymy_metrics(pairs, scores)
    out["oov_pairs"] = float(oov)
    return out
