"""Every phrase occurrence of a corpus as one table, and optionally every document's vector,
written as Parquet files by a streaming job: the corpus is read shard by shard, each shard is
extracted (and encoded) by an engine worker, and its rows are appended to the output as it
comes back, so the driver holds the shards in flight, never the corpus or its rows.

``OUT/mentions/mentions-NNNNN.parquet``, one row per mention:

- ``doc_id``; ``phrase``: the normalised key (as in a :class:`~phrasekit.phrases.PhraseVocabulary`);
  ``surface``: as written, whitespace folded; ``start``, ``end``: character offsets in the
  document's text; ``source``: ``NOUN_CHUNK`` or the entity label;
- ``vector`` (with a model): the phrase's unit vector, each distinct surface form encoded once
  per worker (a bounded cache keeps recent ones across shards).

``OUT/documents/documents-NNNNN.parquet`` (with ``doc_vectors``): ``doc_id``, ``words`` and
``vector``, the document's word windows encoded and averaged by words
(``encoders.cache.encode_documents``, what the topic models embed; zero for no words).

The folder is written whole or not at all (``OUT/manifest.json`` last); each subfolder reads
as one dataset in any Parquet reader (pandas, Polars, DuckDB, Spark, Ray Data).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from itertools import islice
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from phrasekit.artifacts import staged_folder
from phrasekit.encoders.base import Encoder
from phrasekit.encoders.cache import encode_documents
from phrasekit.encoders.pooling import l2_normalize
from phrasekit.io import Document
from phrasekit.phrases.extract import PhraseExtractor
from phrasekit.pipeline.engines import Engine, LocalEngine, Stage, iter_stage
from phrasekit.pipeline.shards import ShardStore
from phrasekit.pipeline.stages import ExtractStage, ModelStage
from phrasekit.registry import load
from phrasekit.tables import VECTOR_DTYPES, matrix_column

logger = logging.getLogger(__name__)

#: Manifest kind of a mentions folder.
MENTIONS_KIND = "mentions"
#: Rows per Parquet file.
ROWS_PER_FILE = 100_000
#: Documents per shard.
SHARD_DOCS = 256
#: Distinct surface forms a worker keeps vectors of across shards.
SURFACE_CACHE = 50_000


class _VectorStage(ModelStage):
    """A model stage whose vectors are stored as ``dtype``."""

    def __init__(self, model: str | Path | Encoder | None, dtype: str,
                 load_options: dict[str, Any], encoder: Encoder | None = None) -> None:
        if dtype not in VECTOR_DTYPES:
            raise ValueError(f"dtype must be one of {', '.join(VECTOR_DTYPES)}, got {dtype!r}")
        super().__init__(model, encoder, **load_options)
        self.dtype = dtype

    def vector_fingerprint(self) -> str:
        """The model's fingerprint and the stored dtype ("none" without a model: no vectors,
        so the dtype does not change the output)."""
        return "none" if self.model is None else f"{self.model_fingerprint()}|{self.dtype}"


class MentionStage(_VectorStage):
    """``id, text`` -> one row per phrase occurrence, with the phrase's vector when a model
    is given (the module's ``mentions`` table)."""

    name = "mentions"

    def __init__(self, params: dict[str, Any], model: str | Path | Encoder | None = None,
                 dtype: str = "float32", encoder: Encoder | None = None,
                 **load_options: Any) -> None:
        super().__init__(model, dtype, load_options, encoder)
        self.extract = ExtractStage(params)
        self.cache: dict[str, np.ndarray] = {}

    def fingerprint(self) -> str:
        return f"mentions|{self.extract.fingerprint()}|{self.vector_fingerprint()}"

    def setup(self) -> None:
        self.extract.setup()
        super().setup()

    def vectors(self, surfaces: list[str]) -> np.ndarray:
        """Unit vectors of ``surfaces``: new distinct forms encoded, recent ones reused."""
        assert self.encoder is not None
        new = [s for s in dict.fromkeys(surfaces) if s not in self.cache]
        if new:
            self.cache.update(zip(new, l2_normalize(self.encoder.encode(new)), strict=True))
        out = np.stack([self.cache[s] for s in surfaces]) if surfaces \
            else np.zeros((0, self.encoder.dim), np.float32)
        for stale in list(islice(self.cache, max(0, len(self.cache) - SURFACE_CACHE))):
            del self.cache[stale]  # oldest first (dicts keep insertion order)
        return out.astype(self.dtype)

    def __call__(self, table: pa.Table) -> pa.Table:
        found = self.extract(table)
        ids = table.column("id").to_pylist()
        cols = {"doc_id": pa.array([ids[d] for d in found.column("doc").to_pylist()],
                                   type=pa.string()),
                "phrase": found.column("key"), "surface": found.column("surface"),
                "start": found.column("start"), "end": found.column("end"),
                "source": found.column("source")}
        if self.encoder is not None:
            cols["vector"] = matrix_column(self.vectors(found.column("surface").to_pylist()))
        return pa.table(cols)


class DocumentStage(_VectorStage):
    """``id, text`` -> ``doc_id``, ``words``, ``vector``: each document's vector (its word
    windows encoded and averaged by words; zero for a document without words)."""

    name = "documents"

    def __init__(self, model: str | Path | Encoder, dtype: str = "float32",
                 chunk_size: int = 150, max_chunks: int = 8, encoder: Encoder | None = None,
                 **load_options: Any) -> None:
        super().__init__(model, dtype, load_options, encoder)
        self.chunk_size = int(chunk_size)
        self.max_chunks = int(max_chunks)

    def fingerprint(self) -> str:
        return f"documents|{self.vector_fingerprint()}|{self.chunk_size}|{self.max_chunks}"

    def __call__(self, table: pa.Table) -> pa.Table:
        assert self.encoder is not None, "setup() first"
        texts = table.column("text").to_pylist()
        X = encode_documents(self.encoder, texts, self.chunk_size, self.max_chunks)
        return pa.table({"doc_id": table.column("id").cast(pa.string()),
                         "words": pa.array([len(t.split()) for t in texts], type=pa.int32()),
                         "vector": matrix_column(X.astype(self.dtype))})


class ParquetParts:
    """Tables appended to ``folder/NAME-NNNNN.parquet`` files of at most ``rows_per_file``
    rows each (at least one file, empty when nothing was written)."""

    def __init__(self, folder: Path, name: str, rows_per_file: int = ROWS_PER_FILE) -> None:
        if rows_per_file < 1:
            raise ValueError(f"rows_per_file must be at least 1, got {rows_per_file}")
        folder.mkdir(parents=True, exist_ok=True)
        self.folder, self.name, self.rows_per_file = folder, name, int(rows_per_file)
        self.files = self.rows = self._in_file = 0
        self._writer: pq.ParquetWriter | None = None
        self._schema: pa.Schema | None = None

    def write(self, table: pa.Table) -> None:
        self._schema = self._schema or table.schema
        while table.num_rows:
            if self._writer is None or self._in_file == self.rows_per_file:
                self._open(table.schema)
            assert self._writer is not None
            part = table.slice(0, self.rows_per_file - self._in_file)
            self._writer.write_table(part)
            self._in_file += part.num_rows
            self.rows += part.num_rows
            table = table.slice(part.num_rows)

    def _open(self, schema: pa.Schema) -> None:
        if self._writer is not None:
            self._writer.close()
        path = self.folder / f"{self.name}-{self.files:05d}.parquet"
        self._writer = pq.ParquetWriter(path, schema)
        self.files += 1
        self._in_file = 0

    def close(self) -> None:
        """Finish the last file (an empty one when only empty tables came)."""
        if self._writer is None:
            if self._schema is None:
                raise ValueError(f"{self.name}: no table to write (no documents?)")
            self._open(self._schema)
        assert self._writer is not None
        self._writer.close()


def _shards(documents: Iterable[Document], size: int) -> Iterator[pa.Table]:
    """``id, text`` tables of ``size`` documents, read from ``documents`` as they are taken."""
    docs = iter(documents)
    while batch := list(islice(docs, size)):
        yield pa.table({"id": [d.id for d in batch], "text": [d.text for d in batch]})


def write_mentions(out_dir: str | Path, documents: Iterable[Document],
                   extractor: PhraseExtractor | None = None,
                   model: str | Path | Encoder | None = None, doc_vectors: bool = False,
                   dtype: str = "float32", engine: Engine | None = None,
                   store: ShardStore | None = None, total: int | None = None,
                   rows_per_file: int = ROWS_PER_FILE, shard_docs: int = SHARD_DOCS,
                   show_progress: bool = False) -> dict[str, Any]:
    """Write the mentions (and, with ``doc_vectors`` and a ``model``, the document vectors) of
    ``documents`` to ``out_dir`` as the module describes; ``documents`` is read once per table,
    so give a re-iterable collection when ``doc_vectors`` is on. ``engine`` (default: this
    process) runs the shards; ``store`` keeps finished ones for a rerun; ``total``: the
    number of documents, for the progress bar. Returns counts of what was written."""
    if doc_vectors and model is None:
        raise ValueError("document vectors need a model")
    if doc_vectors and iter(documents) is documents:
        raise TypeError("doc_vectors reads the documents twice: give a list or another "
                        "re-iterable collection, not an iterator")
    engine = engine or LocalEngine()
    params = (extractor or PhraseExtractor()).settings()
    # in this process, one model serves both stages
    here = load(model) if engine.in_process and isinstance(model, (str, Path)) else None
    stages: list[Stage] = [MentionStage(params, model, dtype, encoder=here)]
    if doc_vectors:
        stages.append(DocumentStage(model, dtype, encoder=here))  # type: ignore[arg-type]
    shards = None if total is None else -(-total // shard_docs)
    counts: dict[str, Any] = {}
    with staged_folder(out_dir, MENTIONS_KIND) as tmp:
        for stage in stages:
            parts = ParquetParts(tmp / stage.name, stage.name, rows_per_file)
            for table in iter_stage(stage, _shards(documents, shard_docs), engine, store,
                                    show_progress, shards):
                parts.write(table)
            parts.close()
            counts[stage.name] = parts.rows
            counts[f"{stage.name}_files"] = parts.files
    logger.info("wrote %s to %s", ", ".join(f"{v} {k}" for k, v in counts.items()), out_dir)
    return counts

