"""Shards of a corpus job on disk: Parquet files written atomically, keyed by content, and a
manifest of the shards that are complete, so that a job killed mid-way reruns only the rest."""

from __future__ import annotations

import hashlib
import io
import json
import logging
import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from phrasekit.io import atomic_write, json_loads

logger = logging.getLogger(__name__)

MANIFEST = "manifest.json"
FORMAT_NAME = "phrasekit.shards"
FORMAT_VERSION = 1
#: The names a shard folder holds: the manifest, ``<key>.parquet`` shards and the temporary
#: files ``atomic_write`` leaves when a run is killed.
_OWN_NAME = re.compile(r"(manifest\.json|[0-9a-f]{32}\.parquet)"
                       r"|\.(manifest\.json|[0-9a-f]{32}\.parquet)\..+\.tmp")


def _shard_manifest(path: Path) -> dict[str, Any] | None:
    """The shard manifest at ``path``; None where it is unreadable or not a shard store's
    (a user's own ``manifest.json``)."""
    try:
        data = json_loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("format") == FORMAT_NAME else None


def table_bytes(table: pa.Table) -> bytes:
    """``table`` as Arrow IPC stream bytes (how shards travel between driver and workers)."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def bytes_table(data: bytes) -> pa.Table:
    """The table of ``table_bytes``."""
    return pa.ipc.open_stream(pa.py_buffer(data)).read_all()


def shard_key(fingerprint: str, payload: bytes) -> str:
    """A shard's name: a digest of what the stage does (``fingerprint``) and of its input, so
    a shard is reused only for the same input under the same settings."""
    digest = hashlib.blake2b(fingerprint.encode("utf-8"), digest_size=16)
    digest.update(payload)
    return digest.hexdigest()


class ShardStore:
    """A folder of finished shards: ``<key>.parquet`` plus ``manifest.json`` (key -> rows,
    sha256). A shard is written to a temporary file and renamed, then added to the manifest
    (also replaced atomically); only shards in the manifest whose bytes match are read back,
    so a file left by a killed job is never taken for a finished one."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self._done: dict[str, dict[str, Any]] = self._read_manifest()

    def _read_manifest(self) -> dict[str, dict[str, Any]]:
        path = self.folder / MANIFEST
        if not path.is_file():
            return {}
        data = _shard_manifest(path)
        if data is None:  # the user's own file: never replaced by the store's manifest
            raise ValueError(f"{path}: not a phrasekit shard manifest; the shard store would "
                             "replace it: use another folder")
        if data.get("format_version") != FORMAT_VERSION:
            logger.warning("%s is not a readable phrasekit shard manifest of format %d: "
                           "starting over", path, FORMAT_VERSION)
            return {}
        return dict(data.get("shards", {}))

    @staticmethod
    def foreign_files(folder: str | Path) -> list[str]:
        """Names in ``folder`` that no shard store writes (a folder that is not one: a file
        itself, or a folder holding the user's own files)."""
        folder = Path(folder)
        if not folder.exists():
            return []
        if not folder.is_dir():
            return [folder.name]
        return sorted(p.name for p in folder.iterdir() if not _OWN_NAME.fullmatch(p.name)
                      or (p.name == MANIFEST and _shard_manifest(p) is None))

    def remove(self) -> None:
        """Delete the store's own files, then the folder if that leaves it empty."""
        if not self.folder.is_dir():
            return
        for path in self.folder.iterdir():
            if _OWN_NAME.fullmatch(path.name) and path.is_file():
                path.unlink(missing_ok=True)
        try:
            self.folder.rmdir()
        except OSError:
            logger.info("kept %s: it holds other files", self.folder)

    def __len__(self) -> int:
        return len(self._done)

    def __contains__(self, key: object) -> bool:
        return key in self._done

    def get(self, key: str) -> pa.Table | None:
        """The finished shard ``key``, or None (not finished, missing or damaged)."""
        entry = self._done.get(key)
        if entry is None:
            return None
        path = self.folder / f"{key}.parquet"
        try:
            data = path.read_bytes()
        except OSError:
            data = b""
        if hashlib.sha256(data).hexdigest() != entry["sha256"]:
            logger.warning("shard %s does not match its manifest entry: recomputed", path)
            del self._done[key]
            return None
        return pq.read_table(io.BytesIO(data))

    def put(self, key: str, table: pa.Table) -> None:
        """Write shard ``key`` atomically, then record it in the manifest."""
        self.folder.mkdir(parents=True, exist_ok=True)
        buf = io.BytesIO()
        pq.write_table(table, buf)
        data = buf.getvalue()
        with atomic_write(self.folder / f"{key}.parquet", "wb") as fh:
            fh.write(data)
        self._done[key] = {"rows": table.num_rows, "sha256": hashlib.sha256(data).hexdigest()}
        self._write_manifest()

    def _write_manifest(self) -> None:
        data = {"format": FORMAT_NAME, "format_version": FORMAT_VERSION, "shards": self._done}
        with atomic_write(self.folder / MANIFEST) as fh:
            fh.write(json.dumps(data, indent=1, sort_keys=True))
