"""Every phrase occurrence of a corpus as one table, written as Parquet files.

One row per mention: ``doc_id``, ``phrase`` (the normalised key, as in a
:class:`~phrasekit.phrases.PhraseVocabulary`), ``surface`` (as written, whitespace folded),
``start`` and ``end`` (character offsets in the document's text), ``source`` (``NOUN_CHUNK``
or the entity label) and, when an encoder is given, ``vector``: the phrase's embedding, unit
length, encoded once per distinct surface form. The folder is written whole or not at all;
its manifest is ``_manifest.json``, a name Parquet readers skip, so any of them (pandas,
Polars, DuckDB, Spark, Ray Data) reads the folder as one dataset.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from phrasekit.artifacts import DATASET_MANIFEST, staged_folder
from phrasekit.encoders.base import Encoder, encode_unique
from phrasekit.io import VECTOR_DTYPES, matrix_column
from phrasekit.phrases.extract import Mention

logger = logging.getLogger(__name__)

#: Manifest kind of a mentions folder.
MENTIONS_KIND = "mentions"
#: Rows per Parquet file.
ROWS_PER_FILE = 100_000
COLUMNS = ("doc_id", "phrase", "surface", "start", "end", "source")


def write_mentions(out_dir: str | Path, doc_ids: Sequence[str],
                   mentions: Sequence[Sequence[Mention]], encoder: Encoder | None = None,
                   dtype: str = "float32", rows_per_file: int = ROWS_PER_FILE,
                   show_progress: bool = False) -> dict[str, Any]:
    """Write the mentions of each document (``mentions[i]`` those of ``doc_ids[i]``, from
    ``PhraseExtractor.mentions``) to ``out_dir/mentions-NNNNN.parquet``, with vectors from
    ``encoder`` when given (stored as ``dtype``). Returns counts of what was written."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if dtype not in VECTOR_DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(VECTOR_DTYPES)}, got {dtype!r}")
    if len(doc_ids) != len(mentions) or rows_per_file < 1:
        raise ValueError(f"{len(doc_ids)} document ids for {len(mentions)} mention lists "
                         f"(rows_per_file {rows_per_file})")
    rows = [(doc_ids[i], m[2], m[3], m[0], m[1], m[4])
            for i, found in enumerate(mentions) for m in found]
    vectors = None
    if encoder is not None:  # each distinct surface form encoded once
        unique, inverse = encode_unique(encoder, [r[2] for r in rows],
                                        show_progress=show_progress)
        vectors = unique.astype(dtype)[inverse]
    types = (pa.string(), pa.string(), pa.string(), pa.int32(), pa.int32(), pa.string())
    files = 0
    with staged_folder(out_dir, MENTIONS_KIND, manifest=DATASET_MANIFEST) as tmp:
        for lo in range(0, max(len(rows), 1), rows_per_file):  # an empty corpus: one file
            part = rows[lo:lo + rows_per_file]
            cols = list(zip(*part, strict=True)) if part else [[] for _ in COLUMNS]
            table = {n: pa.array(c, type=t) for n, c, t in zip(COLUMNS, cols, types, strict=True)}
            if vectors is not None:
                table["vector"] = matrix_column(vectors[lo:lo + rows_per_file])
            pq.write_table(pa.table(table), tmp / f"mentions-{files:05d}.parquet")
            files += 1
    logger.info("wrote %d mentions of %d documents to %s (%d files)", len(rows), len(doc_ids),
                out_dir, files)
    return {"mentions": len(rows), "documents": len(doc_ids), "files": files,
            "dim": None if vectors is None else int(vectors.shape[1])}
