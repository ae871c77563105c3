"""Approximate search that builds in seconds: for one-off searches of large tables (a join).

faiss's inverted lists (IVF, ``nlist`` k-means cells) hold 4-bit product-quantised codes that
are scanned with SIMD lookups ("fast scan", 4 dimensions a code); each query reads the
``nprobe`` nearest cells and its best ``refine`` codes are re-ranked on the full float32
vectors, so the scores returned are exact cosines and only the candidate set is approximate.
An HNSW graph answers a query faster but costs ~0.26 ms a vector to build; this index costs
k-means on a sample plus encoding (1M ``pearl-minilm`` vectors: 42 s against HNSW's 261 s,
recall@10 0.983 against 0.958; docs/matching.md), which is what a one-off search pays for.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Any

import numpy as np

from phrasekit.similarity.search_base import (
    FaissIndex,
    _as_matrix,
    _faiss,
    check_rows,
    faiss_threads,
)

logger = logging.getLogger(__name__)

#: Candidates re-ranked on the full vectors per query (at least ``k``), and the most a
#: saved config may ask (each costs memory per query).
DEFAULT_REFINE, MAX_REFINE = 100, 10_000
#: Cells read per query where not given: ``nlist // PROBE_DIVISOR`` (a quarter).
PROBE_DIVISOR = 4
#: Codes a query of ``build_index`` scans: a quarter of the cells from 1M vectors, a half up
#: to 500,000 (where the scan is cheap; recall@10 on 100,000 names 0.987 vs 0.962 at a
#: quarter), in between as many cells as this many codes fill.
SCAN_CODES = 250_000
#: Widest vectors coded: dense embeddings; hashed character n-gram vectors (4,096 wide, sparse)
#: lose their neighbours in 4-d codes (recall@10 0.82 on 100,000 names), so they keep HNSW.
MAX_CODED_DIM = 1_024
#: k-means training rows per cell (faiss asks for at least 39).
TRAIN_PER_LIST = 64
MIN_LISTS, MAX_LISTS = 16, 16_384
#: Fewest indexed vectors: the codes' 16-centroid codebooks train on 624 rows or more, and
#: below this exact search is quick anyway.
MIN_VECTORS = 1_000


def ivf_lists(n: int) -> int:
    """Cells for ``n`` vectors: the power of two nearest ``sqrt(n)`` (1,024 for 1M), clipped to
    [``MIN_LISTS``, ``MAX_LISTS``] and to at most one cell per 39 vectors."""
    target = 2 ** round(np.log2(max(n, 1)) / 2)
    most = 2 ** int(np.log2(max(n // 39, 1)))
    return int(max(1, min(MAX_LISTS, most, max(MIN_LISTS, target))))


def ivf_probes(nlist: int, n: int) -> int:
    """Cells read per query for ``n`` vectors in ``nlist`` cells: ``SCAN_CODES`` codes' worth,
    between a quarter and a half of the cells."""
    share = max(0.25, min(0.5, SCAN_CODES / max(n, 1)))
    return max(1, min(nlist, math.ceil(nlist * share)))


def ivf_fits(dim: int) -> bool:
    """Whether ``auto`` may code vectors of ``dim``: 4-dimensional codes of an even count (fast
    scan's layout; the index takes no other) and a dense embedding's width (``MAX_CODED_DIM``)."""
    return dim % 8 == 0 and dim <= MAX_CODED_DIM


class IVFIndex(FaissIndex):
    """Inverted lists of fast-scan PQ codes with an exact re-rank (``IndexRefineFlat``).

    ``nlist`` cells (``ivf_lists(n)`` for n vectors), ``nprobe`` read per query (default a
    quarter), ``refine`` candidates re-ranked exactly. The first ``add`` trains the cells and
    codes on a seeded sample of its vectors. ``num_threads`` as for the HNSW index.
    """

    kind = "ivf"

    def __init__(self, dim: int, nlist: int, nprobe: int | None = None,
                 refine: int = DEFAULT_REFINE, num_threads: int | None = None,
                 chunk: int = 4096, seed: int = 0) -> None:
        nprobe = max(1, nlist // PROBE_DIVISOR) if nprobe is None else nprobe
        if not (dim % 8 == 0 and 1 <= nlist <= MAX_LISTS and 1 <= nprobe <= nlist
                and 1 <= refine <= MAX_REFINE):
            raise ValueError(f"need a dimension divisible by 8, 1 <= nlist <= {MAX_LISTS}, "
                             f"1 <= nprobe <= nlist, 1 <= refine <= {MAX_REFINE}; got dim={dim}, "
                             f"nlist={nlist}, nprobe={nprobe}, refine={refine}")
        faiss = _faiss()
        self._index = faiss.index_factory(int(dim), f"IVF{int(nlist)},PQ{dim // 4}x4fs,RFlat",
                                          faiss.METRIC_INNER_PRODUCT)
        self.nlist, self.nprobe, self.refine = int(nlist), int(nprobe), int(refine)
        self.num_threads, self.chunk, self.seed = num_threads, int(chunk), int(seed)

    def add(self, vectors: np.ndarray, show_progress: bool = False) -> None:
        """Add ``vectors`` (training the cells and codes on a sample of them first, once)."""
        vectors = check_rows(_as_matrix(vectors, "vectors", self.dim))
        with faiss_threads(self.num_threads):
            if not self._index.is_trained:
                if len(vectors) < self.nlist:
                    raise ValueError(f"an IVF index of {self.nlist} cells needs at least "
                                     f"{self.nlist} vectors to train on, got {len(vectors)}")
                n_train = min(len(vectors), TRAIN_PER_LIST * self.nlist)
                rows = np.random.default_rng(self.seed).choice(len(vectors), n_train,
                                                               replace=False)
                self._index.train(vectors[np.sort(rows)])
        self._add_in_chunks(vectors, max(self.chunk * 16, 1), "index[ivf]", show_progress)

    def search(
        self, queries: np.ndarray, k: int = 1, show_progress: bool = False
    ) -> tuple[np.ndarray, np.ndarray]:
        """Approximate top-``k`` per query row: (exact cosines float32, ids int64), best first."""
        faiss = _faiss()
        queries, k = self._check_queries(queries, k)
        params = faiss.IndexRefineSearchParameters(
            k_factor=max(1.0, self.refine / k),
            base_index_params=faiss.SearchParametersIVF(nprobe=self.nprobe))
        return self._search_in_chunks(queries, k, params, "search[ivf]", show_progress)

    def params(self) -> dict[str, Any]:
        """IVF parameters."""
        return {"nlist": self.nlist, "nprobe": self.nprobe, "refine": self.refine}

    @classmethod
    def _read(cls, directory: Path, config: dict[str, Any]) -> IVFIndex:
        faiss = _faiss()
        raw, path = cls._read_raw(directory)
        base = faiss.downcast_index(raw.base_index) if isinstance(raw, faiss.IndexRefine) else None
        if (not isinstance(base, faiss.IndexIVFPQFastScan)
                or raw.metric_type != faiss.METRIC_INNER_PRODUCT):
            raise ValueError(f"{path}: expected an inner-product IVF-PQ fast-scan index with a "
                             f"flat re-rank, got {type(raw)}")
        try:
            index = cls(int(raw.d), nlist=int(base.nlist),
                        nprobe=int(config.get("nprobe", max(1, base.nlist // PROBE_DIVISOR))),
                        refine=int(config.get("refine", DEFAULT_REFINE)))
        except (TypeError, ValueError, OverflowError) as exc:
            raise ValueError(f"{directory}: bad search parameters in its config ({exc})") from None
        index._index = raw
        return index
