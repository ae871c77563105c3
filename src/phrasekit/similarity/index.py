"""Exact cosine top-k search over L2-normalised vectors, in query chunks to bound memory."""

from __future__ import annotations

import numpy as np
from tqdm.auto import tqdm


class VectorIndex:
    """Exact inner-product (= cosine for unit rows) search.

    ``search(queries, k)`` returns ``(scores, ids)`` of shape (n_queries, k), best first; ties
    keep the lower id first. Queries are processed ``chunk`` at a time so the score matrix never
    exceeds ``chunk`` x n_items.
    """

    def __init__(self, vectors: np.ndarray, chunk: int = 1024) -> None:
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.ndim != 2:
            raise ValueError(f"vectors must be 2-D (n, d), got shape {vectors.shape}")
        self.vectors = vectors
        self.chunk = int(chunk)

    def __len__(self) -> int:
        return len(self.vectors)

    def search(
        self, queries: np.ndarray, k: int = 1, show_progress: bool = False
    ) -> tuple[np.ndarray, np.ndarray]:
        """Top-``k`` items for each query row: (scores float32, ids int64), best first."""
        queries = np.asarray(queries, dtype=np.float32)
        if queries.ndim != 2 or queries.shape[1] != self.vectors.shape[1]:
            raise ValueError(
                f"queries must be (n, {self.vectors.shape[1]}), got shape {queries.shape}"
            )
        if len(self) == 0:
            raise ValueError("the index is empty")
        k = max(1, min(int(k), len(self)))
        n = len(queries)
        scores = np.empty((n, k), dtype=np.float32)
        ids = np.empty((n, k), dtype=np.int64)
        starts = range(0, n, self.chunk)
        for s in tqdm(starts, desc="search", unit="chunk", disable=not show_progress, leave=False):
            sim = queries[s : s + self.chunk] @ self.vectors.T
            if k == 1:  # argmax: the first best item on ties, like a plain nearest neighbour
                best = np.argmax(sim, axis=1)
                ids[s : s + self.chunk, 0] = best
                scores[s : s + self.chunk, 0] = sim[np.arange(len(sim)), best]
                continue
            if k < sim.shape[1]:
                part = np.argpartition(-sim, k - 1, axis=1)[:, :k]
            else:
                part = np.broadcast_to(np.arange(sim.shape[1]), sim.shape).copy()
            part_scores = np.take_along_axis(sim, part, axis=1)
            # sort by score desc, then id asc (stable tie-break)
            order = np.lexsort((part, -part_scores), axis=1)
            ids[s : s + self.chunk] = np.take_along_axis(part, order, axis=1)
            scores[s : s + self.chunk] = np.take_along_axis(part_scores, order, axis=1)
        return scores, ids
