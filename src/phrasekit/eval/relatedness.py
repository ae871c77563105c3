"""Entity relatedness: are names of entities that a corpus mentions together nearer each other
than names of entities it never mentions together?

Reads ``related.tsv.gz`` (header ``left right label split``; label 1 = related, 0 = random),
written beside the alias file by ``phrasekit train pearl-data --related-corpus DIR``
(:mod:`phrasekit.training.pearl.related`). Related pairs are named entities that co-occur in
documents far more than chance (normalised PMI) and share no content word, so surface
matching cannot find them; random pairs never co-occur and share no word either. The score is
the ROC-AUC (percent) of cosine over related against random pairs of one split.

Why: alias retrieval rewards surface and alias knowledge and pulls a model away from what an
entity is about; the held-out entity-relatedness sets measure the latter, and this term lets
dev selection see it.
"""

from __future__ import annotations

import csv
import gzip
import itertools
import logging
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS
from sklearn.metrics import roc_auc_score

from phrasekit.encoders.base import Encoder
from phrasekit.eval.base import embed_unique, percent, rowwise_cosine, stable_rank
from phrasekit.paths import csv_reader

logger = logging.getLogger(__name__)

RELATED_FILE = "related.tsv.gz"
RELATED_COLUMNS = ["left", "right", "label", "split"]
_WORD = re.compile(r"[^\W\d_]{3,}")


def content_words(text: str) -> frozenset[str]:
    """Lower-cased alphabetic words of three or more letters, stop words left out."""
    return frozenset(w for w in _WORD.findall(text.lower()) if w not in ENGLISH_STOP_WORDS)


def split_of(left: str, right: str) -> str:
    """dev or test, by a hash of the pair (half each; every build agrees)."""
    return "dev" if stable_rank(left, right)[0] < 128 else "test"


@dataclass
class CooccurrencePairs:
    """Related (co-occurring) and random entity pairs from each document's entity names.

    An entity counts when it occurs in at least ``min_docs`` documents; a related pair
    co-occurs in at least ``min_together`` and is among the ``n_related`` of highest
    normalised PMI (ties by a hash); every random pair of the same entities never co-occurs.
    """

    n_related: int = 4000
    min_docs: int = 4
    min_together: int = 3
    seed: int = 0
    counts: dict[str, int] = field(default_factory=dict)

    def __call__(self, docs: Sequence[Sequence[str]]) -> list[tuple[str, str, int]]:
        """(left, right, label) rows: related first, then as many random pairs."""
        df = Counter(e for doc in docs for e in set(doc))
        entities = sorted(e for e, c in df.items() if c >= self.min_docs and content_words(e))
        words = {e: content_words(e) for e in entities}
        together: Counter[tuple[str, str]] = Counter()
        for doc in docs:
            kept = sorted({e for e in doc if e in words})
            together.update(itertools.combinations(kept, 2))
        n = len(docs)
        scored = [(self._npmi(c, df[a], df[b], n), stable_rank(a, b), a, b)
                  for (a, b), c in together.items()
                  if c >= self.min_together and not words[a] & words[b]]
        scored.sort(key=lambda t: (-t[0], t[1]))
        related = [(a, b) for _, _, a, b in scored[: self.n_related]]
        random = self._random_pairs(entities, words, together, len(related))
        self.counts = {"documents": n, "entities": len(entities),
                       "candidate_pairs": len(scored), "related": len(related),
                       "random": len(random)}
        return [(a, b, 1) for a, b in related] + [(a, b, 0) for a, b in random]

    @staticmethod
    def _npmi(together: int, df_a: int, df_b: int, n: int) -> float:
        p = together / n
        return float(np.log(p * n * n / (df_a * df_b)) / -np.log(p)) if p < 1 else 1.0

    def _random_pairs(self, entities: list[str], words: dict[str, frozenset[str]],
                      together: Counter[tuple[str, str]], k: int) -> list[tuple[str, str]]:
        rng = np.random.default_rng(self.seed)
        out: set[tuple[str, str]] = set()
        for _ in range(100 * k):
            if len(out) == k or len(entities) < 2:
                break
            a, b = sorted(entities[i] for i in rng.choice(len(entities), 2, replace=False))
            if (a, b) not in together and not words[a] & words[b]:
                out.add((a, b))
        return sorted(out, key=lambda p: stable_rank(*p))


def related_file(path: str | Path) -> Path:
    """The relatedness file itself, or ``related.tsv.gz`` beside an alias file or inside a
    PEARL data folder."""
    path = Path(path)
    if path.is_dir():
        return path / RELATED_FILE
    return path if path.name == RELATED_FILE else path.parent / RELATED_FILE


def read_related(path: str | Path, split: str) -> tuple[list[str], list[str], np.ndarray]:
    """(left, right, labels) of one split; a malformed file raises ValueError."""
    path = related_file(path)
    left, right, labels = [], [], []
    with gzip.open(path, "rt", encoding="utf-8", newline="") as fh:
        reader = csv_reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE)
        if next(reader, None) != RELATED_COLUMNS:
            raise ValueError(f"{path}:1: expected the header {' '.join(RELATED_COLUMNS)} "
                             "(build it with `phrasekit train pearl-data --related-corpus`)")
        for line_no, row in enumerate(reader, start=2):
            if len(row) != 4 or row[2] not in ("0", "1"):
                raise ValueError(f"{path}:{line_no}: expected left, right, 0 or 1 and a split, "
                                 f"got {row!r}")
            if row[3] == split:
                left.append(row[0])
                right.append(row[1])
                labels.append(int(row[2]))
    y = np.asarray(labels)
    if y.min(initial=1) == 1 or y.max(initial=0) == 0:
        raise ValueError(f"{path}: the {split!r} split needs related and random pairs")
    return left, right, y


@dataclass
class RelatednessScorer:
    """Loads one split once; ``__call__(encoder)`` returns ``related_<split>`` (ROC-AUC, %)."""

    path: Path
    split: str = "dev"

    def __post_init__(self) -> None:
        self.path = related_file(self.path)
        self.left, self.right, self.labels = read_related(self.path, self.split)
        logger.info("relatedness %s: %d related, %d random pairs", self.split,
                    int(self.labels.sum()), int((1 - self.labels).sum()))

    def strings(self) -> list[str]:
        """Every string of the split (so training data can be checked against them)."""
        return self.left + self.right

    def __call__(self, encoder: Encoder) -> dict[str, float]:
        """ROC-AUC in percent of cosine, related pairs against random ones."""
        n = len(self.left)
        emb = embed_unique(encoder, self.left + self.right)
        cos = rowwise_cosine(emb[:n], emb[n:])
        return {f"related_{self.split}": percent(roc_auc_score(self.labels, cos))}
