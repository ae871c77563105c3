"""YAGO entity retrieval, *proxy* setting (the YAGO knowledge base is not available offline).

PEARL retrieves each query among the names of the whole YAGO KB (``yago_kb.txt``, missing
here). Proxy protocol: ``yago_retrieval/yago_test_samples.tsv`` (10,000 rows, no header,
``query\\tlabel``, read literally without quote handling); the candidates are the distinct
labels of the file itself; for every query take the candidate with the highest cosine
similarity (first in sorted-label order on ties); correct when that label string equals the
gold label. Main metric ``acc`` (top-1 accuracy, percent). This is a different and much easier
setting than PEARL's (10k instead of millions of candidates): do not compare with the paper.
Quick mode: the first 200 rows, retrieving among their own labels.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

from phrasekit.encoders.base import Encoder
from phrasekit.eval.base import Task, embed_unique, nearest, percent, read_tsv

logger = logging.getLogger(__name__)

FILE = "yago_retrieval/yago_test_samples.tsv"
QUICK_N = 200


def load_yago(data_dir: Path) -> list[tuple[str, str]]:
    """(query, label) pairs in file order."""
    rows = read_tsv(Path(data_dir) / FILE, header=None, min_fields=2, texts=(0, 1))
    return [(r[0], r[1]) for r in rows]


class YagoProxyTask(Task):
    """Top-1 accuracy of query -> label retrieval among the file's own distinct labels (proxy)."""

    name = "yago_proxy"
    main_metric = "acc"
    required = (FILE,)
    description = "YAGO queries retrieved among the 10k test labels (proxy: KB missing)"

    def evaluate(self, encoder: Encoder, data_dir: Path, quick: bool = False) -> dict[str, float]:
        """Nearest-label retrieval for every query."""
        pairs = load_yago(data_dir)
        if quick:
            pairs = pairs[:QUICK_N]
        labels = sorted({p[1] for p in pairs})
        queries = [p[0] for p in pairs]
        emb = embed_unique(encoder, labels + queries)
        best = nearest(emb[len(labels) :], emb[: len(labels)])
        retrieved = np.asarray(labels, dtype=object)[best]
        gold = np.asarray([p[1] for p in pairs], dtype=object)
        logger.info("yago_proxy: %d queries, %d candidate labels", len(pairs), len(labels))
        return {"acc": percent(np.mean(retrieved == gold))}
