"""Drop-in sharded versions of phrasekit's corpus components: an ``Encoder`` and a
``PhraseExtractor`` whose work is cut into shards and run by an engine (this process or a Ray
cluster), with finished shards kept in a store for resuming. Topic models, keyphrases and the
fuzzy join take them unchanged, so every engine gives the local engine's results."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from phrasekit.encoders.base import Encoder, check_finite, text_chunks
from phrasekit.io import Document
from phrasekit.phrases.extract import Mention, PhraseExtractor
from phrasekit.phrases.keyphrases import Keyphrases
from phrasekit.pipeline.engines import Engine, iter_stage, run_stage
from phrasekit.pipeline.shards import ShardStore
from phrasekit.pipeline.stages import EncodeStage, ExtractStage, KeyphraseStage, SearchStage
from phrasekit.registry import load
from phrasekit.similarity.index import SearchIndex
from phrasekit.tables import column_matrix, matrix_column

logger = logging.getLogger(__name__)

#: Texts per encoding shard and documents per extraction shard: large enough that a worker's
#: per-shard overhead is small, small enough that a lost worker costs little to redo.
ENCODE_SHARD = 2048
EXTRACT_SHARD = 256


def _chunks(n: int, size: int) -> list[slice]:
    return [slice(s, min(s + size, n)) for s in range(0, n, size)]


def _gather(n: int, slices: list[slice], outs: list[pa.Table], columns: tuple[str, ...]
            ) -> list[list[tuple]]:
    """Per input row, the output rows of its shard that name it in their ``doc`` column
    (its row in the shard), as tuples of ``columns``, in output order."""
    found: list[list[tuple]] = [[] for _ in range(n)]
    for s, table in zip(slices, outs, strict=True):
        docs = table.column("doc").to_pylist()
        values = zip(*(table.column(c).to_pylist() for c in columns), strict=True)
        for d, row in zip(docs, values, strict=True):
            found[s.start + d].append(row)
    return found


def _store(store: ShardStore | str | Path | None) -> ShardStore | None:
    return store if store is None or isinstance(store, ShardStore) else ShardStore(store)


class ShardedEncoder(Encoder):
    """``model``'s encoder with ``encode`` cut into shards of ``shard_size`` texts, each
    encoded by an engine worker that loads the model once. Same name and dimension as the
    model, vectors equal to its own up to float rounding."""

    def __init__(self, model: str | Path | Encoder, engine: Engine,
                 store: ShardStore | str | Path | None = None,
                 shard_size: int = ENCODE_SHARD, **load_options: Any) -> None:
        if shard_size < 1:
            raise ValueError(f"shard_size must be at least 1, got {shard_size}")
        self.local = model if isinstance(model, Encoder) else load(model, **load_options)
        self.model = model
        self.engine = engine
        self.store = _store(store)
        self.shard_size = int(shard_size)
        self.load_options = load_options
        self.name = self.local.name
        self.dim = self.local.dim
        path = Path(str(model)).expanduser()
        #: what an index records to load the model again (as for a model given by name)
        self.model_spec = self.name if isinstance(model, Encoder) \
            else str(path.resolve()) if path.is_dir() else str(model)

    def _encode_batch(self, texts: Sequence[str]) -> np.ndarray:
        return self.encode(texts)

    def _encode_all(self, items: list[str], batch_size: int | None, show_progress: bool
                    ) -> np.ndarray:
        """Embed ``items`` shard by shard through the engine (unit rows, input order)."""
        if not items:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.concatenate(list(self.encode_stream(
            items, batch_size=batch_size, show_progress=show_progress, total=len(items))))

    def encode_stream(self, texts: Iterable[str], chunk_size: int | None = None,
                      batch_size: int | None = None, show_progress: bool = False,
                      total: int | None = None) -> Iterator[np.ndarray]:
        """Embed a stream of texts, one shard of ``shard_size`` texts at a time (``chunk_size``
        is the shard size here), yielding each shard's rows in input order as the engine
        returns them: the driver holds the shards in flight, not the corpus."""
        here = self.local if self.engine.in_process else None
        stage = EncodeStage(self.model, batch_size=batch_size, encoder=here,
                            **self.load_options)
        inputs = (pa.table({"text": chunk}) for chunk in text_chunks(texts, self.shard_size))
        shards = None if total is None else -(-total // self.shard_size)
        for table in iter_stage(stage, inputs, self.engine, self.store, show_progress, shards):
            yield check_finite(column_matrix(table.column("vector"), self.dim), self.name)

    def __repr__(self) -> str:
        return f"ShardedEncoder({self.name!r}, engine={self.engine.name})"


class ShardedExtractor(PhraseExtractor):
    """A ``PhraseExtractor`` whose spaCy pass runs shard by shard (``shard_size`` documents)
    on an engine's workers; the vocabulary is counted on the driver from the occurrences, in
    document order, so it equals the one-process result."""

    def __init__(self, engine: Engine, store: ShardStore | str | Path | None = None,
                 shard_size: int = EXTRACT_SHARD, **params: Any) -> None:
        super().__init__(**params)
        if not isinstance(self.spacy_model, str):
            raise TypeError("a sharded extractor loads spaCy by name on each worker; give "
                            "spacy_model as a string")
        self.engine = engine
        self.store = _store(store)
        self.shard_size = int(shard_size)

    @classmethod
    def like(cls, extractor: PhraseExtractor, engine: Engine,
             store: ShardStore | str | Path | None = None, **kwargs: Any) -> ShardedExtractor:
        """A sharded extractor with ``extractor``'s settings."""
        return cls(engine, store, **kwargs, **extractor.settings())

    def _parse(self, documents: Sequence[Document], show_progress: bool, positions: bool
               ) -> list[list[Any]]:
        """The spaCy pass of ``mentions`` and ``occurrences``, shard by shard on the engine."""
        stage = ExtractStage(self.settings())
        slices = _chunks(len(documents), self.shard_size)
        inputs = (pa.table({"id": [d.id for d in documents[s]],
                            "text": [d.text for d in documents[s]]}) for s in slices)
        outs = run_stage(stage, inputs, self.engine, self.store, show_progress)
        found: list[list[Mention]] = _gather(len(documents), slices, outs, ExtractStage.columns)
        return found if positions else [[m[2:] for m in f] for f in found]


def sharded_keyphrases(params: dict[str, Any], texts: Sequence[str], engine: Engine,
                       store: ShardStore | str | Path | None = None,
                       shard_size: int = EXTRACT_SHARD, show_progress: bool = False
                       ) -> list[Keyphrases]:
    """``KeyphraseExtractor(**params).extract(texts)`` run shard by shard on ``engine``."""
    slices = _chunks(len(texts), shard_size)
    inputs = (pa.table({"text": list(texts[s])}) for s in slices)
    outs = run_stage(KeyphraseStage(params), inputs, engine, _store(store), show_progress)
    return _gather(len(texts), slices, outs, ("phrase", "score"))


class ShardedSearch:
    """A search function for ``fuzzy_join(search=...)``: the index is sent once to every
    engine worker, and the queries are answered shard by shard."""

    def __init__(self, engine: Engine, store: ShardStore | str | Path | None = None,
                 shard_size: int = ENCODE_SHARD, show_progress: bool = False) -> None:
        self.engine = engine
        self.store = _store(store)
        self.shard_size = int(shard_size)
        self.show_progress = show_progress

    def __call__(self, index: SearchIndex, vectors: np.ndarray, queries: np.ndarray, k: int
                 ) -> tuple[np.ndarray, np.ndarray]:
        stage = SearchStage(index, k, vectors)
        inputs = (pa.table({"vector": matrix_column(queries[s].astype(np.float32))})
                  for s in _chunks(len(queries), self.shard_size))
        outs = run_stage(stage, inputs, self.engine, self.store, self.show_progress)
        scores = np.concatenate([column_matrix(t.column("scores"), k) for t in outs])
        ids = np.concatenate([column_matrix(t.column("ids"), k) for t in outs])
        return scores, ids
