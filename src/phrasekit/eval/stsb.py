"""STS Benchmark test set: Spearman correlation of cosine similarity with the gold score.

Protocol (SentEval / sentence-transformers style, unsupervised): ``stsb/sts-test.csv`` — 1,379
rows, no header, **tab-separated** despite the name; only the first 7 fields are read (some
lines carry extra trailing source columns) and quotes are not special. Fields: genre, filename,
year, id, score (0-5), sentence1, sentence2. Score cosine(sentence1, sentence2); main metric
``spearman`` (Spearman rho, percent), also ``pearson``. Quick mode: the first 100 rows.
"""

from __future__ import annotations

import logging
from pathlib import Path

from phrasekit.encoders.base import Encoder
from phrasekit.eval.base import Task, numbers, pair_correlations, read_tsv

logger = logging.getLogger(__name__)

FILE = "stsb/sts-test.csv"
QUICK_N = 100


def load_stsb(path: Path) -> list[tuple[str, str, float]]:
    """(sentence1, sentence2, score) from an STS-B split file, first 7 fields only."""
    rows = read_tsv(path, header=None, min_fields=7, texts=(5, 6))
    return [(r[5], r[6], score) for r, score in zip(rows, numbers(rows, 4, path), strict=True)]


class STSBTask(Task):
    """Spearman rho between cosine(sentence1, sentence2) and the STS-B test scores."""

    name = "stsb"
    main_metric = "spearman"
    required = (FILE,)
    description = "STS-B test, Spearman of cosine vs score"

    def evaluate(self, encoder: Encoder, data_dir: Path, quick: bool = False) -> dict[str, float]:
        """Correlate cosine similarities with the gold scores."""
        triples = load_stsb(Path(data_dir) / FILE)
        if quick:
            triples = triples[:QUICK_N]
        return pair_correlations(encoder, triples)
