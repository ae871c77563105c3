"""The files of the vector cache: each one carries a marker (its kind and key) as the first
member of its ``.npz``, readable from the file's first bytes even when the rest is damaged, so
the cache replaces, rebuilds and evicts only files it wrote and leaves anything else alone."""

from __future__ import annotations

import hashlib
import json
import logging
import struct
import zipfile
from pathlib import Path
from typing import IO, Any

import numpy as np

logger = logging.getLogger(__name__)

#: The first member of every cache file: ``{"owner": "phrasekit", "kind": ..., "key": ...}``.
MARKER_NAME = "phrasekit-cache.json"
#: How far into a file its marker is looked for (header, name and marker text).
_HEAD_BYTES = 4096
_LOCAL_HEADER = struct.Struct("<4s2B4HL2L2H")


def write_marked_npz(fh: IO[bytes], kind: str, key: str, **arrays: Any) -> None:
    """Write ``arrays`` as an ``.npz`` (uncompressed) whose first member is the marker."""
    marker = json.dumps({"owner": "phrasekit", "kind": kind, "key": key}, ensure_ascii=True)
    with zipfile.ZipFile(fh, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
        zf.writestr(MARKER_NAME, marker.encode("ascii"))
        for name, value in arrays.items():
            with zf.open(f"{name}.npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.asanyarray(value), allow_pickle=False)


def read_marker(path: str | Path) -> dict[str, str] | None:
    """The marker a cache file starts with (``kind`` and ``key``), or None when the file does
    not start as one (another file, an empty one, or a damaged marker). Only the first bytes
    are read, so a cache damaged further on is still known as the cache's."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(_HEAD_BYTES)
    except (OSError, ValueError):
        return None
    if len(head) < _LOCAL_HEADER.size:
        return None
    fields = _LOCAL_HEADER.unpack_from(head)
    sig, method, size, name_len, extra_len = fields[0], fields[4], fields[8], fields[10], \
        fields[11]
    start = _LOCAL_HEADER.size + name_len + extra_len
    if sig != b"PK\x03\x04" or method != zipfile.ZIP_STORED or start + size > len(head):
        return None
    if head[_LOCAL_HEADER.size:_LOCAL_HEADER.size + name_len] != MARKER_NAME.encode():
        return None
    try:
        marker = json.loads(head[start:start + size].decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(marker, dict) or marker.get("owner") != "phrasekit":
        return None
    kind, key = marker.get("kind"), marker.get("key")
    if not isinstance(kind, str) or not isinstance(key, str):
        return None
    return {"kind": kind, "key": key}


def legacy_digest(name: str, keys: np.ndarray, embeddings: np.ndarray) -> str:
    """sha256 over a cache's encoder name, keys and embeddings (stored with them, checked at
    read, so a damaged cache is rebuilt instead of handing back wrong vectors)."""
    digest = hashlib.sha256(name.encode("utf-8"))
    digest.update(np.ascontiguousarray(keys).tobytes())
    digest.update(np.ascontiguousarray(embeddings, dtype=np.float32).tobytes())
    return digest.hexdigest()


def is_empty_file(path: str | Path) -> bool:
    """Whether ``path`` is a regular, empty file (nothing in it to lose by replacing it)."""
    p = Path(path)
    try:
        return p.is_file() and not p.is_symlink() and p.stat().st_size == 0
    except OSError:
        return False


def prune_marked(folder: Path, max_bytes: int, keep: Path | None = None) -> list[Path]:
    """Remove the least recently used cache files in ``folder`` (``*.npz`` that carry the
    marker) until they hold at most ``max_bytes``; ``keep`` is never removed. Unmarked files
    are left, and named in a warning. Returns the removed files."""
    files, foreign = [], []
    for path in sorted(folder.glob("*.npz")):
        if path.is_symlink() or not path.is_file():
            continue
        if read_marker(path) is None:
            foreign.append(path)
            continue
        try:
            stat = path.stat()
        except OSError:
            continue
        files.append((stat.st_mtime_ns, stat.st_size, path))
    if foreign:
        shown = ", ".join(p.name for p in foreign[:3]) + (" ..." if len(foreign) > 3 else "")
        logger.warning("vector cache %s: %d file(s) without phrasekit's cache marker left "
                       "alone and not counted (%s)", folder, len(foreign), shown)
    total = sum(size for _, size, _ in files)
    removed = []
    for _, size, path in sorted(files, key=lambda f: f[0]):
        if total <= max_bytes:
            break
        if keep is not None and path == keep:
            continue
        path.unlink(missing_ok=True)
        total -= size
        removed.append(path)
    if removed:
        logger.info("vector cache %s: removed %d least recently used files to stay under "
                    "%d MB", folder, len(removed), max_bytes >> 20)
    return removed
