"""Entity retrieval: a persisted top-k index over a dictionary of names (entities, aliases).

``EntityIndex.build(names, encoder)`` embeds every distinct name once with any phrasekit encoder
and indexes the vectors (exact search, or faiss HNSW for large dictionaries, see
``similarity.index.build_index``); ``query(texts, k)`` returns, per text, the ``k`` best
``(name, id, score)`` triples by cosine.

Entries are ``(name, id)`` pairs; names are stripped of surrounding whitespace. Duplicates:
with explicit ids, several names may share an id (aliases of one entity) and one name may carry
several ids (homonyms) -- all are kept, only repeated identical ``(name, id)`` pairs are dropped.
Without ids, an entry's id is its 0-based position in the input and a repeated name is dropped
(the first occurrence, and its position, is kept). Drops are logged.

A saved index is a directory: ``config.json`` (format, model name, encoder name, count, dim,
index kind and parameters), ``names.jsonl`` (one ``{"name", "id"}`` object per entry, in index
order), ``vectors.npy`` (float32 (count, dim)) and, for the ANN kind, ``index.faiss``. It is
written to a temp folder and renamed into place. ``EntityIndex.load`` re-creates the encoder by
its recorded name (or takes one) and checks it reproduces the stored vector of the first entry.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from phrasekit.artifacts import (
    MANIFEST,
    IntegrityError,
    check_output_folder,
    staged_folder,
    verify_folder,
)
from phrasekit.encoders.base import Encoder, as_text_list, distinct
from phrasekit.errors import check_int
from phrasekit.io import (
    atomic_write,
    input_problem,
    json_loads,
    read_json_object,
    write_json,
)
from phrasekit.lines import inner_cr
from phrasekit.paths import utf8_problem
from phrasekit.registry import JOIN_MODEL, load
from phrasekit.similarity.hybrid import (
    K_EMBED,
    SCORERS,
    LeftSide,
    hybrid_top_k,
    shipped_combiner,
)
from phrasekit.similarity.index import (
    ANN_THRESHOLD,
    INDEX_KINDS,
    ANNIndex,
    SearchIndex,
    VectorIndex,
    build_index,
    check_rows,
    resolve_kind,
)
from phrasekit.tables import (
    NOT_TABLES,
    TableError,
    is_missing,
    load_npy,
    only_column,
    read_table,
)

logger = logging.getLogger(__name__)

FORMAT = 1
#: Searches a persisted index can use (``ivf`` is for one-off searches: a join).
ENTITY_INDEX_KINDS = ("auto", "exact", "ann")
TYPE = "phrasekit.EntityIndex"
CONFIG = "config.json"
NAMES = "names.jsonl"
VECTORS = "vectors.npy"
#: Manifest kind of a saved EntityIndex.
ENTITY_KIND = "entity-index"
# A re-created encoder must reproduce the stored first vector to this cosine (bf16 vs fp32
# encodings of the same model agree to > 0.999; different models are far apart).
PROBE_MIN_COSINE = 0.99

Hit = tuple[str, str, float]


class EntityIndexError(ValueError):
    """An entity dictionary or saved index that cannot be used: empty, malformed, mismatched."""


def read_names(
    path: str | Path, column: str | None = None, id_column: str | None = None,
    what: str = "names file",
) -> tuple[list[str], list[str] | None]:
    """Names (and ids when ``id_column`` is given) from a dictionary file (``what`` it is, for
    the errors: ``"queries file"``).

    ``.csv`` / ``.tsv`` files have a header row; ``column`` names the name column (optional when
    the file has a single column). Any other file is plain text, one name per line, so that
    name i is line i (and row ids stay line numbers). Errors name the file and line: missing
    file, bad encoding, malformed CSV, missing column, an empty name or id cell, a blank line,
    no names at all.
    """
    path = Path(path)
    problem = input_problem(path, what)
    if problem is not None:
        raise EntityIndexError(problem)
    suffix = path.suffix.lower()
    try:
        if suffix in (".parquet", ".pq", *NOT_TABLES):
            raise EntityIndexError(f"{path}: a {what} is plain text (one name per line) or a "
                                   f".csv / .tsv table with a header row, not {suffix}")
        if suffix not in (".csv", ".tsv"):
            if column is not None or id_column is not None:
                raise EntityIndexError(f"{path}: a column (--column, --id-column) needs a .csv "
                                       "or .tsv file with a header row")
            return _read_lines(path, what), None
        return _read_table(path, column, id_column)
    except UnicodeDecodeError as exc:
        raise EntityIndexError(utf8_problem(str(path), exc, path)) from exc


def _read_lines(path: Path, what: str) -> list[str]:
    """One name per line of a text file; a blank line is refused with its number."""
    with open(path, encoding="utf-8-sig", newline="\n") as fh:  # a BOM is no name; \n only
        names = [line.strip() for line in fh]
    while names and not names[-1]:  # blank lines at the end hold no place
        names.pop()
    if not any(names):
        why = "only blank lines" if path.stat().st_size else "empty file"
        raise EntityIndexError(f"{path}: no names ({why}); a {what} holds one name per line")
    if "" in names:
        raise EntityIndexError(f"{path}:{names.index('') + 1}: blank line (every line of a "
                               f"{what} must hold a name)")
    if (problem := inner_cr(names, str(path))) is not None:
        raise EntityIndexError(problem)
    return names


def _read_table(path: Path, column: str | None, id_column: str | None
                ) -> tuple[list[str], list[str] | None]:
    """Name and id columns of a delimited file with a header row (``tables.read_table``:
    the same header, field and encoding checks as every table phrasekit reads)."""
    try:
        table = read_table(path)
        if column is None and len(table.header) != 1:
            raise EntityIndexError(f"{path}: {len(table.header)} columns {table.header}; "
                                   "choose the name column (--column)")
        column = only_column(table, column)
        cols = [(c, table.column(c)) for c in (column, id_column) if c is not None]
    except TableError as exc:
        raise EntityIndexError(str(exc)) from None
    names: list[str] = []
    ids: list[str] = []
    for _, line, row in table.rows:
        values = ["" if is_missing(row[i]) else str(row[i]).strip() for _, i in cols]
        for (name, _), value in zip(cols, values, strict=True):
            if not value:
                raise EntityIndexError(f"{table.where(line)}: empty {name!r} cell")
        names.append(values[0])
        if id_column is not None:
            ids.append(values[1])
    if not names:
        raise EntityIndexError(f"{path}: no names in column {column!r}")
    return names, (ids if id_column is not None else None)


def _id_text(ident: Any, i: int) -> str:
    """An id as stored (text): a missing one (None, NaN, pandas NA) is refused, and a whole
    float (``1.0``, as an integer column with nulls reads) is written as the integer."""
    if is_missing(ident):
        raise EntityIndexError(f"ids[{i}] is missing ({ident!r}); every name needs an id")
    if isinstance(ident, float | np.floating) and float(ident).is_integer():
        return str(int(ident))
    return str(ident).strip()


def _entries(names: Sequence[str], ids: Sequence[Any] | None) -> tuple[list[str], list[str]]:
    """Validated, stripped, de-duplicated ``(names, ids)`` (see the module docstring)."""
    if isinstance(names, str):
        raise TypeError("names must be a list of strings, not a single string")
    names = as_text_list(names, "names")
    if not names:
        raise EntityIndexError("the dictionary is empty: give at least one name")
    if ids is not None:
        ids = as_text_list(ids, "ids")
        if len(ids) != len(names):
            raise EntityIndexError(f"{len(names)} names but {len(ids)} ids")
    out_names: list[str] = []
    out_ids: list[str] = []
    seen: set[Any] = set()
    for i, name in enumerate(names):
        if not isinstance(name, str):
            raise TypeError(f"names[{i}] is {type(name).__name__}, not str: {name!r:.60}")
        name = name.strip()
        if not name:
            raise EntityIndexError(f"names[{i}] is empty or whitespace only")
        ident = str(i) if ids is None else _id_text(ids[i], i)
        if not ident:
            raise EntityIndexError(f"ids[{i}] is empty")
        key = name if ids is None else (name, ident)
        if key in seen:
            continue
        seen.add(key)
        out_names.append(name)
        out_ids.append(ident)
    if len(out_names) < len(names):
        what = "repeated names" if ids is None else "repeated (name, id) pairs"
        logger.info("dropped %d %s (%d entries kept)", len(names) - len(out_names), what,
                    len(out_names))
    return out_names, out_ids


def _model_spec(encoder: Encoder | str) -> tuple[Encoder, str]:
    """The encoder and the name to record for re-loading it (folders as absolute paths)."""
    if isinstance(encoder, Encoder):  # a wrapper (a sharded encoder) names what it wraps
        return encoder, str(getattr(encoder, "model_spec", encoder.name))
    if not isinstance(encoder, str | Path):
        raise TypeError(f"encoder must be a phrasekit Encoder or a model name, got {encoder!r}")
    spec = str(encoder)
    path = Path(spec).expanduser()
    if path.is_dir():
        spec = str(path.resolve())
    return load(spec), spec


def check_index_out(path: str | Path) -> Path:
    """Validate where an EntityIndex will be saved, before the names are embedded."""
    return check_output_folder(path, ENTITY_KIND)


class EntityIndex:
    """A searchable dictionary of names: build, query top-k, save, load."""

    def __init__(
        self,
        names: list[str],
        ids: list[str],
        vectors: np.ndarray,
        index: SearchIndex,
        encoder: Encoder,
        model: str,
    ) -> None:
        if not (len(names) == len(ids) == len(vectors) == len(index)):
            raise EntityIndexError(
                f"inconsistent index: {len(names)} names, {len(ids)} ids, {len(vectors)} vectors, "
                f"{len(index)} indexed"
            )
        self.names = names
        self.ids = ids
        self.vectors = vectors
        self.index = index
        self.encoder = encoder
        self.model = model
        self._left_side: LeftSide | None = None  # the hybrid scorer's n-grams, on first use

    def __len__(self) -> int:
        return len(self.names)

    @property
    def dim(self) -> int:
        """Vector dimension."""
        return self.index.dim

    @property
    def kind(self) -> str:
        """Index kind: ``"exact"`` or ``"ann"``."""
        return self.index.kind

    def __repr__(self) -> str:
        return f"EntityIndex({len(self)} names, model={self.model!r}, {self.index.describe()})"

    @classmethod
    def build(
        cls,
        names: Sequence[str],
        encoder: Encoder | str = JOIN_MODEL,
        ids: Sequence[Any] | None = None,
        index: str = "auto",
        ann_threshold: int = ANN_THRESHOLD,
        batch_size: int | None = None,
        show_progress: bool = False,
    ) -> EntityIndex:
        """Embed ``names`` (each distinct string once) and index them.

        ``encoder`` is an Encoder or a model name for ``phrasekit.load`` (recorded either way,
        for ``load``); ``ids`` optionally gives one id per name (see the module docstring for
        duplicates); ``index`` is one of ``ENTITY_INDEX_KINDS``.
        """
        if index in INDEX_KINDS and index not in ENTITY_INDEX_KINDS:
            raise ValueError(f"an EntityIndex is built once and queried often: index {index!r} "
                             "is for one-off searches (a join); use 'ann' (HNSW answers faster)")
        names, ids = _entries(names, ids)
        kind = resolve_kind(index, len(names), ann_threshold)
        enc, model = _model_spec(encoder)
        uniq, inverse = distinct(names)
        vectors = enc.encode(uniq, batch_size=batch_size, show_progress=show_progress)
        vectors = np.ascontiguousarray(vectors[inverse], dtype=np.float32)
        dead = np.flatnonzero(np.linalg.norm(vectors, axis=1) == 0)
        if len(dead):
            raise EntityIndexError(f"{len(dead)} name(s) get an all-zero vector from {model} "
                                   f"(first: {names[int(dead[0])]!r}); remove them or use "
                                   "another model")
        search_index = build_index(vectors, kind=kind, show_progress=show_progress)
        logger.info("indexed %d names (%d distinct) with %s: %s", len(names), len(uniq), model,
                    search_index.describe())
        return cls(names, ids, vectors, search_index, enc, model)

    def query(
        self, texts: str | Sequence[str], k: int = 5, show_progress: bool = False,
        scorer: str = "hybrid",
    ) -> list[list[Hit]]:
        """The ``k`` best ``(name, id, score)`` per text, best first (one list per text).

        ``scorer="hybrid"`` (default): candidates of the embedding and of character n-grams
        scored by the learned combiner (``similarity.hybrid``): the score is a match
        probability. ``scorer="cosine"``: the embedding's cosine alone.
        """
        check_int("k", k, 1)
        if scorer not in SCORERS:
            raise ValueError(f"scorer must be one of {', '.join(SCORERS)}, got {scorer!r}")
        texts = as_text_list(texts, "texts")  # read once: an iterator is used twice below
        vecs = self.encoder.encode(texts, show_progress=show_progress)
        if len(vecs) == 0:
            return []
        if scorer == "cosine":
            scores, idx = self.index.search(vecs, k=k, show_progress=show_progress)
        else:
            _, emb_ids = self.index.search(vecs, k=max(k, K_EMBED), show_progress=show_progress)
            if self._left_side is None:
                self._left_side = LeftSide.fit(self.names)
            scores, idx = hybrid_top_k(self._left_side, texts, self.vectors, vecs,
                                       emb_ids, k, shipped_combiner(str(self.encoder.name)),
                                       show_progress=show_progress, encode=self.encoder.encode)
        return [
            [(self.names[j], self.ids[j], float(s)) for s, j in zip(row_s, row_i, strict=True)
             if j >= 0]
            for row_s, row_i in zip(scores, idx, strict=True)
        ]

    def config(self) -> dict[str, Any]:
        """The ``config.json`` content."""
        return {
            "format": FORMAT, "type": TYPE, "model": self.model,
            "encoder_name": str(self.encoder.name), "count": len(self), "dim": self.dim,
            "index_kind": self.kind, "index": self.index.params(),
        }

    def save(self, directory: str | Path) -> Path:
        """Write the index to ``directory`` whole or not at all (staged beside it and swapped in
        at once, replacing an earlier EntityIndex), with a manifest ``load`` checks."""
        directory = Path(directory)
        with staged_folder(directory, ENTITY_KIND) as tmp:
            with atomic_write(tmp / NAMES) as fh:
                for name, ident in zip(self.names, self.ids, strict=True):
                    fh.write(json.dumps({"name": name, "id": ident}, ensure_ascii=False) + "\n")
            with atomic_write(tmp / VECTORS, "wb") as fh:
                np.save(fh, self.vectors, allow_pickle=False)
            if isinstance(self.index, ANNIndex):
                self.index._write(tmp)
            write_json(tmp / CONFIG, self.config())
        logger.info("saved %r to %s", self, directory)
        return directory

    @classmethod
    def load(
        cls,
        directory: str | Path,
        encoder: Encoder | str | None = None,
        check_model: bool = True,
        num_threads: int | None = None,
    ) -> EntityIndex:
        """Read a saved index; the encoder is re-created by its recorded name unless given.

        With ``check_model`` (default) a given encoder must carry the recorded encoder name, and
        any encoder must reproduce the stored vector of the first entry; otherwise the query
        vectors would not be comparable with the stored ones.
        """
        directory = Path(directory)
        if not directory.is_dir():
            what = "a file, not an index folder" if directory.exists() else "not found"
            raise EntityIndexError(f"entity index folder {directory}: {what} (`phrasekit "
                                   "index build` writes one)")
        if not (directory / CONFIG).is_file():
            raise EntityIndexError(f"{directory}: no {CONFIG} (not a saved EntityIndex)")
        try:  # every file checked (inside the folder, listed, unchanged) before one is read
            manifest = verify_folder(directory, ENTITY_KIND, required=(CONFIG, NAMES, VECTORS))
        except IntegrityError as exc:
            raise EntityIndexError(str(exc)) from exc
        config = _read_config(directory)
        if config.get("index_kind") == "ann" and "index.faiss" not in manifest["files"]:
            raise EntityIndexError(f"{directory / MANIFEST}: does not list index.faiss")
        count, dim = int(config["count"]), int(config["dim"])
        names, ids = _read_names_file(directory / NAMES, count)
        vpath = directory / VECTORS
        vectors = load_npy(vpath, EntityIndexError)
        if vectors.shape != (count, dim) or vectors.dtype != np.float32:
            raise EntityIndexError(
                f"{vpath}: {vectors.dtype} {vectors.shape}, expected float32 ({count}, {dim})"
            )
        try:
            check_rows(vectors, str(vpath))
        except ValueError as exc:
            raise EntityIndexError(str(exc)) from exc
        kind = config.get("index_kind")
        index: SearchIndex
        if kind == "exact":
            index = VectorIndex(vectors)
        elif kind == "ann":
            try:
                index = ANNIndex._read(directory, dict(config.get("index") or {}))
                index.check_holds(vectors, str(directory / "index.faiss"))
            except (FileNotFoundError, ValueError, TypeError) as exc:
                raise EntityIndexError(str(exc)) from exc
            index.num_threads = num_threads
            if len(index) != count or index.dim != dim:
                raise EntityIndexError(
                    f"{directory}: index.faiss holds {len(index)}x{index.dim}, config says "
                    f"{count}x{dim}"
                )
        else:
            raise EntityIndexError(f"{directory / CONFIG}: unknown index_kind {kind!r}")
        model = str(config["model"])
        if encoder is None:
            try:
                enc = load(model)
            except ValueError as exc:
                raise EntityIndexError(
                    f"{directory} was built with model {model!r}, which phrasekit.load cannot "
                    f"find ({exc}); pass the encoder explicitly"
                ) from exc
        else:
            enc, _ = _model_spec(encoder)
            if check_model and str(enc.name) != config.get("encoder_name"):
                raise EntityIndexError(
                    f"{directory} was built with encoder {config.get('encoder_name')!r} "
                    f"(model {model!r}); got {enc.name!r}"
                )
        if check_model:
            _check_encoder(enc, names, vectors, directory, model)
        return cls(names, ids, vectors, index, enc, model)


def _read_config(directory: Path) -> dict[str, Any]:
    """``config.json`` of a saved EntityIndex, validated."""
    path = directory / CONFIG
    if not path.is_file():
        raise EntityIndexError(f"{directory}: no {CONFIG} (not a saved EntityIndex)")
    config = read_json_object(path, EntityIndexError)
    if config.get("type") != TYPE:
        raise EntityIndexError(f"{path}: not an EntityIndex config")
    if config.get("format") != FORMAT:
        raise EntityIndexError(f"{path}: unsupported format {config.get('format')!r}")
    missing = [k for k in ("model", "count", "dim", "index_kind") if k not in config]
    if missing:
        raise EntityIndexError(f"{path}: missing keys {missing}")
    for key in ("count", "dim"):
        if not isinstance(config[key], int) or isinstance(config[key], bool) or config[key] < 0:
            raise EntityIndexError(f"{path}: {key} must be a non-negative integer, got "
                                   f"{config[key]!r}")
    return config


def _read_names_file(path: Path, count: int) -> tuple[list[str], list[str]]:
    """Names and ids of ``names.jsonl``, checked against the recorded count."""
    if not path.is_file():
        raise EntityIndexError(f"{path.parent}: {NAMES} is missing")
    names: list[str] = []
    ids: list[str] = []
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            try:
                obj = json_loads(line)
                names.append(str(obj["name"]))
                ids.append(str(obj["id"]))
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                raise EntityIndexError(f"{path}:{lineno}: malformed entry ({exc})") from exc
    if len(names) != count:
        raise EntityIndexError(f"{path}: {len(names)} entries, config says {count}")
    return names, ids


def _check_encoder(
    enc: Encoder, names: list[str], vectors: np.ndarray, directory: Path, model: str
) -> None:
    """Fail unless ``enc`` maps the first name with a non-zero vector to (nearly) that vector."""
    nonzero = np.flatnonzero(np.linalg.norm(vectors, axis=1) > 0.5)
    if len(nonzero) == 0:
        return
    name, stored = names[int(nonzero[0])], vectors[int(nonzero[0])]
    vec = enc.encode([name])
    if vec.shape[1] != stored.shape[0]:
        raise EntityIndexError(
            f"{directory} holds {stored.shape[0]}-d vectors from {model!r}; the encoder "
            f"{enc.name!r} gives {vec.shape[1]}-d"
        )
    cos = float(vec[0] @ stored)
    if cos < PROBE_MIN_COSINE:
        raise EntityIndexError(
            f"{directory} was built with {model!r}; the encoder {enc.name!r} does not reproduce "
            f"its vectors (cosine {cos:.3f} on {name!r}); use the same model or check_model=False"
        )
