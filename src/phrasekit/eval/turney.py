"""Turney (2012) bigram -> unigram multiple choice, in the 5- and 10-candidate settings.

Data: ``turney2012/turney.txt``, 2,180 lines of 8 fields separated by ``" | "``: (1) query
bigram, (2) correct unigram, (3-4) the bigram's own two words, (5-8) four distractor unigrams.

``turney`` (Turney (5), Phrase-BERT / PEARL / Yu & Dredze 2015): the constituents (3-4) are
excluded; the candidates are the correct unigram and the 4 distractors; an item is correct when
cosine(bigram, correct) is the highest of the 5. Metric ``acc`` in percent.

``turney10`` (Turney (10), multi-facet paper §3.1): 5 more negative pairs pair the *reversed*
bigram ("w2 w1") with the same 5 unigrams; an item is correct when (bigram, correct unigram)
scores highest of all 10 pairs, so an order-blind encoder can reach at most half of Turney (5).

Ties: scores within ``TIE_TOL`` of the maximum are tied and the correct pair earns 1/#tied
(the expected accuracy of random tie-breaking). This matters for order-insensitive encoders
(GloVe average, character n-grams), where bigram and reversed bigram embed identically; it
reproduces the paper's halving (Word2Vec avg 39.6 -> 19.8). Quick mode: the first 100 items.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from phrasekit.encoders.base import Encoder
from phrasekit.eval.base import Task, embed_unique, percent

logger = logging.getLogger(__name__)

FILE = "turney2012/turney.txt"
QUICK_N = 100
TIE_TOL = 1e-6


@dataclass(frozen=True)
class TurneyItem:
    """One question: the bigram, its correct unigram and the four distractors."""

    bigram: str
    correct: str
    constituents: tuple[str, str]
    distractors: tuple[str, str, str, str]

    @property
    def reversed_bigram(self) -> str:
        """The bigram with its two words swapped ("w2 w1")."""
        return " ".join(reversed(self.bigram.split()))

    @property
    def candidates(self) -> tuple[str, ...]:
        """The 5 unigram candidates, the correct one first."""
        return (self.correct, *self.distractors)


def load_turney(data_dir: Path) -> list[TurneyItem]:
    """The Turney items in file order; raises ValueError naming a malformed line."""
    path = Path(data_dir) / FILE
    items: list[TurneyItem] = []
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            line = line.strip()
            if not line:
                continue
            f = [x.strip() for x in line.split(" | ")]
            if len(f) != 8:
                raise ValueError(f"{path}:{lineno}: need 8 ' | '-separated fields, got {len(f)}")
            if not all(f):
                raise ValueError(f"{path}:{lineno}: field {f.index('') + 1} is empty")
            items.append(TurneyItem(f[0], f[1], (f[2], f[3]), (f[4], f[5], f[6], f[7])))
    if not items:
        raise ValueError(f"{path}: no items")
    return items


def tie_aware_accuracy(scores: np.ndarray, target: int = 0, tol: float = TIE_TOL) -> float:
    """Mean credit of column ``target``: 1/#tied when it is (tied) highest in its row, else 0."""
    best = scores.max(axis=1, keepdims=True)
    tied = scores >= best - tol
    credit = np.where(tied[:, target], 1.0 / tied.sum(axis=1), 0.0)
    return float(credit.mean()) if len(credit) else float("nan")


def turney_scores(encoder: Encoder, items: list[TurneyItem], with_reversed: bool) -> np.ndarray:
    """Cosines of (bigram, 5 candidates) [+ (reversed bigram, 5 candidates)]: (n, 5) or (n, 10)."""
    n = len(items)
    queries = [it.bigram for it in items]
    if with_reversed:
        queries += [it.reversed_bigram for it in items]
    cands = [c for it in items for c in it.candidates]
    emb = embed_unique(encoder, queries + cands)
    q = emb[: len(queries)]
    c = emb[len(queries) :].reshape(n, 5, -1)
    scores = np.einsum("nd,nkd->nk", q[:n], c)
    if with_reversed:
        scores = np.concatenate([scores, np.einsum("nd,nkd->nk", q[n:], c)], axis=1)
    return scores


class TurneyTask(Task):
    """Turney (5) or, with ``with_reversed``, Turney (10) accuracy (constituents excluded)."""

    main_metric = "acc"
    required = (FILE,)

    def __init__(self, with_reversed: bool = False) -> None:
        self.with_reversed = with_reversed
        self.name = "turney10" if with_reversed else "turney"
        self.description = (
            "Turney (10): bigram vs reversed bigram x 5 unigrams" if with_reversed
            else "Turney (5): correct unigram among 5 candidates"
        )

    def evaluate(self, encoder: Encoder, data_dir: Path, quick: bool = False) -> dict[str, float]:
        """Accuracy of picking (bigram, correct unigram) as the most similar pair."""
        items = load_turney(data_dir)
        if quick:
            items = items[:QUICK_N]
        scores = turney_scores(encoder, items, self.with_reversed)
        best = scores.max(axis=1, keepdims=True)
        n_ties = int(((scores >= best - TIE_TOL).sum(axis=1) > 1).sum())
        if n_ties:
            logger.info("%s: %d of %d items have tied top scores (credit split)", self.name,
                        n_ties, len(items))
        return {"acc": percent(tie_aware_accuracy(scores))}
