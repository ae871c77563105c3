"""Top-k cosine search over L2-normalised vectors: exact (numpy) or approximate (faiss).

Every kind shares one small interface (``add``, ``search(queries, k, show_progress)`` returning
``(scores, ids)`` best first, ``reconstruct``, ``save``) so callers switch by a name:
``build_index(vectors, kind="auto"|"exact"|"ann"|"ivf")``. ``"auto"`` picks exact search below
``ANN_THRESHOLD`` indexed vectors and an approximate one from there on: an HNSW graph
(``"ann"``) for an index built once and queried often, inverted lists of fast-scan codes
(``"ivf"``, :mod:`phrasekit.similarity.ivf`, about 6x cheaper to build) for a one-off search of
known size (a join), which keeps exact search where it has too few queries
(``ANN_MIN_QUERIES``) to repay any build (see the measurements at the constants). An index
saves to a directory as ``index.json`` (kind, dim, count, parameters) plus ``vectors.npy``
(exact) or ``index.faiss`` (via ``faiss.write_index``) -- never pickle -- and
``load_index(directory)`` reads every kind back.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from phrasekit.artifacts import verify_folder
from phrasekit.io import atomic_write, read_json_object
from phrasekit.similarity.ivf import MIN_VECTORS as IVF_MIN_VECTORS
from phrasekit.similarity.ivf import IVFIndex, ivf_fits, ivf_lists, ivf_probes
from phrasekit.similarity.search_base import INDEX_CONFIG as INDEX_CONFIG
from phrasekit.similarity.search_base import INDEX_FORMAT as INDEX_FORMAT
from phrasekit.similarity.search_base import INDEX_KIND as INDEX_KIND
from phrasekit.similarity.search_base import FaissIndex, _as_matrix, _faiss
from phrasekit.similarity.search_base import SearchIndex as SearchIndex
from phrasekit.similarity.search_base import check_rows as check_rows
from phrasekit.similarity.search_base import faiss_threads as faiss_threads
from phrasekit.tables import load_npy

logger = logging.getLogger(__name__)

INDEX_KINDS = ("auto", "exact", "ann", "ivf")


# Measured with benchmarks/matching/join_ann.py and a size sweep on 2 (busy) CPU cores,
# all-MiniLM-L6-v2 vectors (384d) of real AutoFJ titles, k=10, HNSW M=32 / efConstruction=80 /
# efSearch=128:
#   indexed n   exact, 10k queries   HNSW build + 10k queries   HNSW recall@10
#      10,000        3.4 s              5.6 s + 5.5 s              0.996
#      30,000        9.9 s             20.9 s + 8.3 s              0.990
#     100,000       29.7 s             84.0 s + 9.9 s              0.984
# Exact search costs ~3e-8 s per (query, item) pair (one BLAS matmul); building the graph costs
# ~0.8 ms per vector and an HNSW query ~1 ms. So HNSW answers a query ~3x faster than exact
# search from ~100k items on (worth it for an index that is built once and queried often), but
# a one-off search (a join) only repays the build with roughly 40k+ queries.
ANN_THRESHOLD = 100_000
ANN_MIN_QUERIES = 40_000
#: Scores exact search computes at a time (256 MB of float32): memory bounded at any size.
SEARCH_CELLS = 64 * 2**20
# HNSW defaults, from the same measurement (100k items, 10k queries; tie-aware recall@10 vs
# exact): M=32/efC=40/efS=64 0.968 (build 48 s); M=32/efC=80/efS=64 0.975, efS=128 0.984
# (build 72 s, 10k queries 3.6 s / 6.3 s); M=32/efC=200/efS=128 0.994 (build 171 s);
# M=16/efC=80/efS=128 0.980. IVF-Flat was worse at equal time (nlist=1024, nprobe=64: 0.959
# in 21 s build + 21 s search), so HNSW it is.
DEFAULT_M = 32
DEFAULT_EF_CONSTRUCTION = 80
DEFAULT_EF_SEARCH = 128
#: Bounds on HNSW parameters read from a config (faiss takes C ints; more only costs memory).
MAX_M, MAX_EF, MAX_DIM = 512, 100_000, 65_536


class VectorIndex(SearchIndex):
    """Exact inner-product (= cosine for unit rows) search.

    ``search(queries, k)`` returns ``(scores, ids)`` of shape (n_queries, k), best first; ties
    keep the lower id first. Queries are processed ``chunk`` at a time so the score matrix never
    exceeds ``chunk`` x n_items.
    """

    kind = "exact"

    def __init__(self, vectors: np.ndarray, chunk: int = 1024) -> None:
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.ndim != 2:
            raise ValueError(f"vectors must be 2-D (n, d), got shape {vectors.shape}")
        self.vectors = check_rows(vectors)
        self.chunk = int(chunk)

    @property
    def dim(self) -> int:
        """Vector dimension."""
        return int(self.vectors.shape[1])

    def __len__(self) -> int:
        return len(self.vectors)

    def add(self, vectors: np.ndarray, show_progress: bool = False) -> None:
        """Append ``vectors`` (n, dim); their ids continue from ``len(self)``."""
        vectors = check_rows(_as_matrix(vectors, "vectors", self.dim))
        self.vectors = np.concatenate([self.vectors, vectors]) if len(self) else vectors

    def search(
        self, queries: np.ndarray, k: int = 1, show_progress: bool = False
    ) -> tuple[np.ndarray, np.ndarray]:
        """Top-``k`` items for each query row: (scores float32, ids int64), best first."""
        queries = np.asarray(queries, dtype=np.float32)
        if queries.ndim != 2 or queries.shape[1] != self.vectors.shape[1]:
            raise ValueError(
                f"queries must be (n, {self.vectors.shape[1]}), got shape {queries.shape}"
            )
        queries, k = self._check_queries(queries, k)
        n = len(queries)
        scores = np.empty((n, k), dtype=np.float32)
        ids = np.empty((n, k), dtype=np.int64)
        step = max(1, min(self.chunk, SEARCH_CELLS // max(1, len(self.vectors))))
        with tqdm(total=n, desc="search[exact]", unit="row", disable=not show_progress,
                  leave=False) as bar:
            for s in range(0, n, step):
                sim = queries[s : s + step] @ self.vectors.T
                bar.update(len(sim))
                if k == 1:  # argmax: the first best item on ties, like a plain nearest neighbour
                    best = np.argmax(sim, axis=1)
                    ids[s : s + step, 0] = best
                    scores[s : s + step, 0] = sim[np.arange(len(sim)), best]
                    continue
                if k < sim.shape[1]:
                    part = np.argpartition(-sim, k - 1, axis=1)[:, :k]
                else:
                    part = np.broadcast_to(np.arange(sim.shape[1]), sim.shape).copy()
                part_scores = np.take_along_axis(sim, part, axis=1)
                # sort by score desc, then id asc (stable tie-break)
                order = np.lexsort((part, -part_scores), axis=1)
                ids[s : s + step] = np.take_along_axis(part, order, axis=1)
                scores[s : s + step] = np.take_along_axis(part_scores, order, axis=1)
        return scores, ids

    def reconstruct(self, ids: np.ndarray | list[int]) -> np.ndarray:
        """The stored vectors of ``ids``."""
        return self.vectors[np.asarray(ids, dtype=np.int64)]

    def params(self) -> dict[str, Any]:
        """Query chunk size."""
        return {"chunk": self.chunk}

    def _write(self, directory: Path) -> None:
        with atomic_write(directory / "vectors.npy", "wb") as fh:
            np.save(fh, self.vectors, allow_pickle=False)

    @classmethod
    def _read(cls, directory: Path, config: dict[str, Any]) -> VectorIndex:
        path = directory / "vectors.npy"
        if not path.is_file():
            raise FileNotFoundError(f"{directory}: exact index without vectors.npy")
        vectors = load_npy(path)
        return cls(vectors, chunk=int(config.get("chunk", 1024)))


class ANNIndex(FaissIndex):
    """Approximate search on a faiss HNSW graph over inner product (``IndexHNSWFlat``).

    The graph stores the full float32 vectors, so returned scores are exact cosines; only the
    candidate set is approximate. ``m`` (links per node) and ``ef_construction`` trade build
    time for recall; ``ef_search`` (raised to ``k`` when smaller) trades query speed for recall.
    ``num_threads`` sets faiss's OpenMP threads (None: the job's, ``threads.compute_threads()``).
    """

    kind = "ann"

    def __init__(
        self,
        dim: int,
        m: int = DEFAULT_M,
        ef_construction: int = DEFAULT_EF_CONSTRUCTION,
        ef_search: int = DEFAULT_EF_SEARCH,
        num_threads: int | None = None,
        chunk: int = 2048,
    ) -> None:
        if not (1 <= dim <= MAX_DIM and 2 <= m <= MAX_M and 1 <= ef_construction <= MAX_EF
                and 1 <= ef_search <= MAX_EF):
            raise ValueError(
                f"need 1 <= dim <= {MAX_DIM}, 2 <= m <= {MAX_M}, 1 <= ef_construction, ef_search "
                f"<= {MAX_EF}; got dim={dim}, m={m}, ef_construction={ef_construction}, "
                f"ef_search={ef_search}"
            )
        faiss = _faiss()
        self._index = faiss.IndexHNSWFlat(int(dim), int(m), faiss.METRIC_INNER_PRODUCT)
        self._index.hnsw.efConstruction = int(ef_construction)
        self._index.hnsw.efSearch = int(ef_search)
        self.m = int(m)
        self.ef_search = int(ef_search)
        self.num_threads = num_threads
        self.chunk = int(chunk)

    @property
    def ef_construction(self) -> int:
        """HNSW efConstruction used for vectors added from now on."""
        return int(self._index.hnsw.efConstruction)

    def add(self, vectors: np.ndarray, show_progress: bool = False) -> None:
        """Insert ``vectors`` into the graph (in chunks, for the progress bar)."""
        vectors = check_rows(_as_matrix(vectors, "vectors", self.dim))
        self._add_in_chunks(vectors, max(self.chunk * 4, 1), "index[hnsw]", show_progress)

    def search(
        self, queries: np.ndarray, k: int = 1, show_progress: bool = False
    ) -> tuple[np.ndarray, np.ndarray]:
        """Approximate top-``k`` per query row: (scores float32, ids int64), best first."""
        faiss = _faiss()
        queries, k = self._check_queries(queries, k)
        params = faiss.SearchParametersHNSW()
        params.efSearch = max(self.ef_search, k)
        return self._search_in_chunks(queries, k, params, "search[hnsw]", show_progress)

    def check_holds(self, vectors: np.ndarray, where: str, sample: int = 64) -> None:
        """Raise ``ValueError`` unless the graph stores ``vectors`` (a sample of rows read back
        and searched for: each must find itself), so a swapped or stale graph is refused."""
        if len(self) != len(vectors):
            raise ValueError(f"{where}: the graph holds {len(self)} vectors, not {len(vectors)}")
        ids = np.unique(np.linspace(0, len(vectors) - 1, min(sample, len(vectors))).astype(int))
        if not len(ids):
            return
        stored = self.reconstruct(ids)
        scores, _ = self.search(vectors[ids], k=1)
        if not np.array_equal(stored, vectors[ids]) or not np.all(scores[:, 0] >= 0.999):
            raise ValueError(f"{where}: the graph does not hold the saved vectors (a swapped, "
                             "stale or edited index.faiss); build the index again")

    def params(self) -> dict[str, Any]:
        """HNSW parameters."""
        return {"m": self.m, "ef_construction": self.ef_construction, "ef_search": self.ef_search}

    @classmethod
    def _read(cls, directory: Path, config: dict[str, Any]) -> ANNIndex:
        faiss = _faiss()
        raw, path = cls._read_raw(directory)
        is_ip = getattr(raw, "metric_type", None) == faiss.METRIC_INNER_PRODUCT
        if not isinstance(raw, faiss.IndexHNSWFlat) or not is_ip:
            raise ValueError(f"{path}: expected an inner-product IndexHNSWFlat, got {type(raw)}")
        try:
            index = cls(int(raw.d), m=int(config.get("m", DEFAULT_M)),
                        ef_search=int(config.get("ef_search", DEFAULT_EF_SEARCH)))
        except (TypeError, ValueError, OverflowError) as exc:
            raise ValueError(f"{directory}: bad search parameters in its config ({exc})") from None
        index._index = raw
        raw.hnsw.efSearch = index.ef_search
        return index


def load_index(directory: str | Path, num_threads: int | None = None) -> SearchIndex:
    """Read an index saved by ``SearchIndex.save``, checked against its manifest and
    index.json."""
    directory = Path(directory)
    if not directory.is_dir():
        raise FileNotFoundError(f"index directory not found: {directory}")
    cfg_path = directory / INDEX_CONFIG
    if not cfg_path.is_file():
        raise FileNotFoundError(f"{directory}: no {INDEX_CONFIG} (not a saved phrasekit index)")
    manifest = verify_folder(directory, INDEX_KIND, required=(INDEX_CONFIG,))
    config = read_json_object(cfg_path)
    if config.get("kind") in ("ann", "ivf") and "index.faiss" not in manifest["files"]:
        raise ValueError(f"{directory}: its manifest does not list index.faiss")
    if config.get("format") != INDEX_FORMAT:
        raise ValueError(f"{cfg_path}: unsupported index format {config.get('format')!r}")
    kind = config.get("kind")
    index: SearchIndex
    if kind == "exact":
        index = VectorIndex._read(directory, config)
    elif kind in ("ann", "ivf"):
        index = (ANNIndex if kind == "ann" else IVFIndex)._read(directory, config)
        index.num_threads = num_threads
    else:
        raise ValueError(f"{cfg_path}: unknown index kind {kind!r}")
    if len(index) != config.get("count") or index.dim != config.get("dim"):
        raise ValueError(
            f"{directory}: index holds {len(index)}x{index.dim} vectors but {INDEX_CONFIG} says "
            f"{config.get('count')}x{config.get('dim')}"
        )
    return index


def resolve_kind(
    kind: str,
    n_items: int,
    ann_threshold: int = ANN_THRESHOLD,
    n_queries: int | None = None,
    min_queries: int = ANN_MIN_QUERIES,
    dim: int | None = None,
) -> str:
    """``"exact"``, ``"ann"`` or ``"ivf"`` for ``kind``.

    ``"auto"`` is exact search below ``ann_threshold`` indexed items. From there on it is
    ``"ann"`` (HNSW) for an index queried again and again (``n_queries`` None), and for a
    one-off search of ``n_queries`` either exact (fewer than ``min_queries``: cheaper than any
    build) or ``"ivf"``, which builds about 6x faster than the graph (``"ann"`` where the
    vectors' ``dim`` does not split into fast-scan codes).
    """
    if kind not in INDEX_KINDS:
        raise ValueError(f"index kind must be one of {', '.join(INDEX_KINDS)}; got {kind!r}")
    if kind == "ivf" and n_items < IVF_MIN_VECTORS:
        raise ValueError(f"index 'ivf' needs at least {IVF_MIN_VECTORS:,} indexed vectors, got "
                         f"{n_items:,} (exact search is quick at that size)")
    if kind != "auto":
        return kind
    if n_items < ann_threshold or (n_queries is not None and n_queries < min_queries):
        return "exact"
    if n_queries is not None and (dim is None or ivf_fits(dim)):
        return "ivf" if n_items >= IVF_MIN_VECTORS else "exact"
    return "ann"


def build_index(
    vectors: np.ndarray,
    kind: str = "auto",
    ann_threshold: int = ANN_THRESHOLD,
    *,
    n_queries: int | None = None,
    m: int = DEFAULT_M,
    ef_construction: int = DEFAULT_EF_CONSTRUCTION,
    ef_search: int = DEFAULT_EF_SEARCH,
    num_threads: int | None = None,
    show_progress: bool = False,
) -> SearchIndex:
    """Index ``vectors`` (unit rows) exactly, with HNSW or with IVF; ``"auto"`` picks by size.

    ``n_queries`` (the number of queries of a one-off search, e.g. a join) lets ``"auto"`` pick
    exact search or the cheaper-to-build IVF (see ``resolve_kind``). HNSW parameters apply to
    the HNSW index only; IVF takes ``ivf_lists(n)`` cells and reads ``ivf_probes`` of them.
    """
    vectors = _as_matrix(vectors, "vectors")
    chosen = resolve_kind(kind, len(vectors), ann_threshold, n_queries=n_queries,
                          dim=vectors.shape[1])
    if chosen == "exact":
        return VectorIndex(vectors)
    index: SearchIndex
    if chosen == "ivf":
        nlist = ivf_lists(len(vectors))
        index = IVFIndex(vectors.shape[1], nlist=nlist, nprobe=ivf_probes(nlist, len(vectors)),
                         num_threads=num_threads)
    else:
        index = ANNIndex(vectors.shape[1], m=m, ef_construction=ef_construction,
                         ef_search=ef_search, num_threads=num_threads)
    index.add(vectors, show_progress=show_progress)
    logger.info("built %s", index.describe())
    return index
