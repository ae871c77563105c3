"""The pipeline's stages: extract phrases, encode texts, pick keyphrases, search an index.
Each maps one shard (an Arrow table) to one output table; rows of a shard are independent, so
a corpus cut into shards and put back together gives what one pass over it gives."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from phrasekit.encoders.base import Encoder
from phrasekit.io import Document
from phrasekit.phrases.extract import PhraseExtractor
from phrasekit.phrases.keyphrases import KeyphraseExtractor
from phrasekit.pipeline.engines import Stage
from phrasekit.registry import load
from phrasekit.similarity.index import SearchIndex
from phrasekit.tables import column_matrix, matrix_column


def model_fingerprint(model: str | Path | Encoder, options: dict[str, Any]) -> str:
    """What identifies a model's output: its name (a folder: its resolved path and the
    modification time of its config) and the load options."""
    if isinstance(model, Encoder):
        name = f"{type(model).__name__}:{model.name}"
    else:
        path = Path(str(model)).expanduser()
        config = path / "config.json"
        name = f"{path.resolve()}@{config.stat().st_mtime_ns}" if config.is_file() \
            else str(model)
    return json.dumps([name, options], sort_keys=True)


class ModelStage(Stage):
    """A stage with a model (None: without one), loaded once per worker by name or folder (or
    sent as an ``Encoder`` object). ``encoder``: the model already loaded in this process,
    used as is by an in-process engine (the fingerprint still comes from ``model``)."""

    def __init__(self, model: str | Path | Encoder | None, encoder: Encoder | None = None,
                 **load_options: Any) -> None:
        self.model = model
        self.load_options = load_options
        self.encoder = encoder or (model if isinstance(model, Encoder) else None)

    def model_fingerprint(self) -> str:
        return "none" if self.model is None else model_fingerprint(self.model,
                                                                   self.load_options)

    def setup(self) -> None:
        if self.model is not None and self.encoder is None:
            self.encoder = load(self.model, **self.load_options)


class EncodeStage(ModelStage):
    """``text`` -> ``vector``: the model's embedding of each text."""

    name = "encode"

    def __init__(self, model: str | Path | Encoder, batch_size: int | None = None,
                 encoder: Encoder | None = None, **load_options: Any) -> None:
        super().__init__(model, encoder, **load_options)
        self.batch_size = batch_size

    def fingerprint(self) -> str:
        return "encode|" + self.model_fingerprint()

    def __call__(self, table: pa.Table) -> pa.Table:
        assert self.encoder is not None, "setup() first"
        vecs = self.encoder.encode(table.column("text").to_pylist(), batch_size=self.batch_size)
        return pa.table({"vector": matrix_column(vecs)})


class SettingsStage(Stage):
    """A stage whose worker object is rebuilt on each worker from JSON-ready settings (an
    extractor's ``settings()``), so nothing but settings travels to the workers."""

    #: builds the worker object from the settings
    factory: Any = None
    #: settings that do not change the output (and are not passed on)
    ignored: tuple[str, ...] = ("n_process", "batch_size")

    def __init__(self, params: dict[str, Any]) -> None:
        self.params = {k: v for k, v in params.items() if k not in self.ignored}
        self.worker: Any = None

    def fingerprint(self) -> str:
        return f"{self.name}|" + json.dumps(self.params, sort_keys=True)

    def setup(self) -> None:
        self.worker = type(self).factory(**self.params)


class ExtractStage(SettingsStage):
    """``id, text`` -> one row per phrase occurrence: ``doc`` (row in the shard), ``start``,
    ``end`` (character offsets in the text), ``key``, ``surface``, ``source``, in text order
    (``PhraseExtractor.mentions``)."""

    name = "mentions"
    factory = PhraseExtractor
    columns = ("start", "end", "key", "surface", "source")

    def __call__(self, table: pa.Table) -> pa.Table:
        assert self.worker is not None, "setup() first"
        docs = [Document(id=str(i), text=t, meta={}) for i, t in
                zip(table.column("id").to_pylist(), table.column("text").to_pylist(),
                    strict=True)]
        rows = [(d, *m) for d, found in enumerate(self.worker.mentions(docs)) for m in found]
        names = ("doc", *self.columns)
        cols = list(zip(*rows, strict=True)) if rows else [[] for _ in names]
        types = (pa.int32(), pa.int32(), pa.int32(), pa.string(), pa.string(), pa.string())
        return pa.table({n: pa.array(c, type=t) for n, c, t in zip(names, cols, types,
                                                                    strict=True)})


class KeyphraseStage(SettingsStage):
    """``text`` -> ``doc`` (row in the shard), ``rank``, ``phrase``, ``score``: each
    document's keyphrases (documents are ranked apart, so shards do not change them)."""

    name = "keyphrases"
    factory = KeyphraseExtractor
    ignored = ("n_process",)  # its batch_size is the encoder's, kept as given

    def __call__(self, table: pa.Table) -> pa.Table:
        assert self.worker is not None, "setup() first"
        found = self.worker.extract(table.column("text").to_pylist())
        rows = [(d, r, p, float(s)) for d, ranked in enumerate(found)
                for r, (p, s) in enumerate(ranked)]
        return pa.table({
            "doc": pa.array([r[0] for r in rows], type=pa.int32()),
            "rank": pa.array([r[1] for r in rows], type=pa.int32()),
            "phrase": pa.array([r[2] for r in rows], type=pa.string()),
            "score": pa.array([r[3] for r in rows], type=pa.float64()),
        })


class SearchStage(Stage):
    """``vector`` -> ``scores``, ``ids`` (top ``k``): the index is built once on the driver
    and sent to every worker with the stage."""

    name = "search"

    def __init__(self, index: SearchIndex, k: int, vectors: np.ndarray) -> None:
        self.index = index
        self.k = int(k)
        digest = hashlib.blake2b(np.ascontiguousarray(vectors, np.float32).tobytes(),
                                 digest_size=16).hexdigest()
        self._fingerprint = f"search|{index.kind}|{self.k}|{digest}"

    def fingerprint(self) -> str:
        return self._fingerprint

    def __call__(self, table: pa.Table) -> pa.Table:
        queries = column_matrix(table.column("vector"), self.index.dim)
        scores, ids = self.index.search(queries, k=self.k)
        return pa.table({"scores": matrix_column(scores.astype(np.float32)),
                         "ids": matrix_column(ids.astype(np.int64))})
