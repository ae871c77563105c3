"""What every search index shares: the ``SearchIndex`` interface, the row checks and faiss's
lazy import and thread setting (the kinds live in ``similarity.index`` and ``similarity.ivf``)."""

from __future__ import annotations

import contextlib
import logging
import os
from abc import ABC, abstractmethod
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from phrasekit.artifacts import staged_folder
from phrasekit.io import write_json
from phrasekit.threads import compute_threads

logger = logging.getLogger(__name__)

INDEX_FORMAT = 1
INDEX_CONFIG = "index.json"
#: Manifest kind of a saved search index.
INDEX_KIND = "search-index"


def check_rows(vectors: np.ndarray, what: str = "vectors") -> np.ndarray:
    """Refuse rows an index cannot rank: non-finite values or all zeros (no direction), naming
    the first such row; returns ``vectors``."""
    norms = np.linalg.norm(vectors, axis=1) if len(vectors) else np.zeros(0)
    for bad, why in ((~np.isfinite(norms), "non-finite values"), (norms == 0, "all zeros")):
        if bad.any():
            first = int(np.flatnonzero(bad)[0])
            raise ValueError(f"{what}: {int(bad.sum())} row(s) with {why} (first: row {first}); "
                             "an index needs a direction for every entry")
    return vectors


def _as_matrix(x: np.ndarray, name: str, dim: int | None = None) -> np.ndarray:
    """``x`` as a C-contiguous float32 (n, d) array, or a ValueError naming ``name``."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    if x.ndim != 2 or (dim is not None and x.shape[1] != dim):
        want = f"(n, {dim})" if dim is not None else "2-D (n, d)"
        raise ValueError(f"{name} must be {want}, got shape {x.shape}")
    return x


def _faiss() -> Any:
    """Import faiss lazily (a heavy import only ANN users pay for), with a clear message."""
    try:
        import faiss
    except ImportError as exc:  # pragma: no cover - a declared dependency
        raise ImportError("the ANN index needs faiss-cpu (pip install faiss-cpu==1.15.1)") from exc
    return faiss


@contextlib.contextmanager
def faiss_threads(n: int | None) -> Iterator[None]:
    """Run faiss's OpenMP loops on ``n`` threads (None: the job's, ``compute_threads()``),
    then restore."""
    faiss = _faiss()
    n = n if n is not None else compute_threads()
    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(max(1, int(n)))
    try:
        yield
    finally:
        faiss.omp_set_num_threads(before)


class SearchIndex(ABC):
    """The interface shared by the exact and the ANN index (inner product = cosine)."""

    kind: str = "base"

    @property
    @abstractmethod
    def dim(self) -> int:
        """Vector dimension."""

    @abstractmethod
    def __len__(self) -> int:
        """Number of indexed vectors."""

    @abstractmethod
    def add(self, vectors: np.ndarray, show_progress: bool = False) -> None:
        """Append ``vectors`` (n, dim); their ids continue from ``len(self)``."""

    @abstractmethod
    def search(
        self, queries: np.ndarray, k: int = 1, show_progress: bool = False
    ) -> tuple[np.ndarray, np.ndarray]:
        """Top-``k`` items per query row: (scores float32, ids int64) of shape (n, k), best first.

        ``k`` is clipped to ``[1, len(self)]``. An ANN index may find fewer than ``k`` items for a
        query; those slots hold id -1 and score -inf.
        """

    @abstractmethod
    def reconstruct(self, ids: np.ndarray | list[int]) -> np.ndarray:
        """The stored vectors of ``ids`` as a (len(ids), dim) float32 array."""

    @abstractmethod
    def params(self) -> dict[str, Any]:
        """Build / search parameters worth recording (JSON-serialisable)."""

    @abstractmethod
    def _write(self, directory: Path) -> None:
        """Write the data files (not ``index.json``) into an existing ``directory``."""

    def describe(self) -> str:
        """One-line summary, e.g. for logs and benchmark tables."""
        args = " ".join(f"{k}={v}" for k, v in self.params().items())
        return f"{self.kind}({len(self)}x{self.dim}{' ' + args if args else ''})"

    def config(self) -> dict[str, Any]:
        """The ``index.json`` content: format, kind, dim, count and parameters."""
        return {"format": INDEX_FORMAT, "kind": self.kind, "dim": self.dim, "count": len(self),
                "metric": "inner_product", **self.params()}

    def save(self, directory: str | Path) -> None:
        """Save to ``directory`` whole or not at all (staged beside it, swapped in at once, with
        a manifest that ``load_index`` checks)."""
        with staged_folder(directory, INDEX_KIND) as tmp:
            self._write(tmp)
            write_json(tmp / INDEX_CONFIG, self.config())
        logger.info("saved %s to %s", self.describe(), directory)

    def _check_queries(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, int]:
        queries = _as_matrix(queries, "queries", self.dim)
        if len(self) == 0:
            raise ValueError("the index is empty")
        return queries, max(1, min(int(k), len(self)))


class FaissIndex(SearchIndex):
    """What the faiss-backed kinds share: the wrapped index ``_index``, its size, its own
    serialisation when pickled (so it can be sent to worker processes, e.g. a distributed
    join's actors) and ``index.faiss`` on save."""

    _index: Any
    num_threads: int | None
    chunk: int

    def _add_in_chunks(self, vectors: np.ndarray, step: int, desc: str,
                       show_progress: bool) -> None:
        """Add ``vectors`` ``step`` rows at a time (for the progress bar)."""
        with faiss_threads(self.num_threads), tqdm(
            total=len(vectors), desc=desc, unit="vec", disable=not show_progress, leave=False
        ) as bar:
            for s in range(0, len(vectors), step):
                self._index.add(vectors[s : s + step])
                bar.update(len(vectors[s : s + step]))

    def _search_in_chunks(self, queries: np.ndarray, k: int, params: Any, desc: str,
                          show_progress: bool) -> tuple[np.ndarray, np.ndarray]:
        """(scores, ids) of checked ``queries``, ``chunk`` at a time; slots faiss leaves
        empty get id -1 and score -inf."""
        n = len(queries)
        scores = np.empty((n, k), dtype=np.float32)
        ids = np.empty((n, k), dtype=np.int64)
        with faiss_threads(self.num_threads), tqdm(
            total=n, desc=desc, unit="row", disable=not show_progress, leave=False
        ) as bar:
            for s in range(0, n, self.chunk):
                d, i = self._index.search(queries[s : s + self.chunk], k, params=params)
                scores[s : s + self.chunk], ids[s : s + self.chunk] = d, i
                bar.update(len(d))
        missing = ids < 0
        if missing.any():
            scores[missing] = -np.inf
            logger.debug("%s returned fewer than %d items for %d queries", self.kind, k,
                         int(missing.any(axis=1).sum()))
        return scores, ids

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_index"] = _faiss().serialize_index(self._index)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        index = _faiss().deserialize_index(state.pop("_index"))
        self.__dict__.update(state, _index=index)

    @property
    def dim(self) -> int:
        """Vector dimension."""
        return int(self._index.d)

    def __len__(self) -> int:
        return int(self._index.ntotal)

    def _write(self, directory: Path) -> None:
        tmp = directory / ".index.faiss.tmp"
        _faiss().write_index(self._index, str(tmp))
        os.replace(tmp, directory / "index.faiss")

    def reconstruct(self, ids: np.ndarray | list[int]) -> np.ndarray:
        """The stored full vectors of ``ids``."""
        ids = np.asarray(ids, dtype=np.int64).reshape(-1)
        if len(ids) and (ids.min() < 0 or ids.max() >= len(self)):
            raise IndexError(f"ids must be in [0, {len(self)}), got {ids.min()}..{ids.max()}")
        out = np.empty((len(ids), self.dim), dtype=np.float32)
        for row, i in enumerate(ids):
            out[row] = self._index.reconstruct(int(i))
        return out

    @classmethod
    def _read_raw(cls, directory: Path) -> tuple[Any, Path]:
        """The faiss index of ``directory/index.faiss`` as faiss reads it, and its path."""
        path = directory / "index.faiss"
        if not path.is_file():
            raise FileNotFoundError(f"{directory}: {cls.kind} index without index.faiss")
        try:
            return _faiss().read_index(str(path)), path
        except RuntimeError as exc:
            raise ValueError(f"{path}: cannot read the faiss index ({exc})") from exc
