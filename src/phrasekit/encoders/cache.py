"""Embeddings cached on disk by text, so rebuilding a dataset or refitting a topic model only
encodes texts it has not seen with that encoder."""

from __future__ import annotations

import hashlib
import logging
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from phrasekit.io import atomic_write

logger = logging.getLogger(__name__)


def text_key(text: str) -> bytes:
    """A 16-byte digest of ``text``: what the cache stores instead of the text itself (fixed
    width, so long documents do not blow the file up to n x longest-text)."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _digest(name: str, keys: np.ndarray, embeddings: np.ndarray) -> str:
    """sha256 over a cache's encoder name, keys and embeddings (stored with them, checked at
    read, so a damaged cache is rebuilt instead of handing back wrong vectors)."""
    digest = hashlib.sha256(name.encode("utf-8"))
    digest.update(np.ascontiguousarray(keys).tobytes())
    digest.update(np.ascontiguousarray(embeddings, dtype=np.float32).tobytes())
    return digest.hexdigest()


def _read_cache(cache: Path, name: str) -> tuple[list[bytes], np.ndarray | None]:
    """Keys and embeddings of a cache file written for encoder ``name`` (else nothing: another
    encoder's, unreadable or failing its checksum)."""
    try:
        with np.load(cache, allow_pickle=False) as z:
            if str(z["encoder"]) != name:
                logger.warning("embedding cache %s is for %s, not %s: ignored", cache,
                               z["encoder"], name)
                return [], None
            keys, emb = z["keys"], np.asarray(z["embeddings"], dtype=np.float32)
            ok = "sha256" in z and str(z["sha256"]) == _digest(name, keys, emb)
    except (OSError, ValueError, KeyError, EOFError, zlib.error) as exc:
        logger.warning("embedding cache %s is unreadable (%s): rebuilt", cache, exc)
        return [], None
    if not ok or len(keys) != len(emb):
        logger.warning("embedding cache %s fails its checksum: rebuilt", cache)
        return [], None
    return [bytes(k) for k in keys], emb


def encode_cached(encoder: Any, texts: Sequence[str], cache: str | Path | None = None,
                  show_progress: bool = True, batch_size: int = 256) -> np.ndarray:
    """Embed ``texts`` (unit rows), reusing and extending an ``.npz`` cache of this encoder.

    The cache holds ``encoder`` (name), ``keys`` (a digest per text, ``text_key``) and
    ``embeddings``; a cache written by another encoder is ignored (and replaced). Re-running a
    build then only embeds new texts.
    """
    name = str(getattr(encoder, "name", type(encoder).__name__))
    old_keys: list[bytes] = []
    old_emb = None
    if cache is not None and Path(cache).is_file():
        old_keys, old_emb = _read_cache(Path(cache), name)
    row = {k: i for i, k in enumerate(old_keys)}
    keys = [text_key(t) for t in texts]
    missing_idx: list[int] = []
    seen: set[bytes] = set()
    for i, k in enumerate(keys):
        if k not in row and k not in seen:
            seen.add(k)
            missing_idx.append(i)
    missing = [texts[i] for i in missing_idx]
    logger.info("embeddings: %d cached, %d to encode with %s", len(texts) - len(missing),
                len(missing), name)
    new = encoder.encode(missing, batch_size=batch_size, show_progress=show_progress) \
        if missing else None
    parts = [x for x in (old_emb, new) if x is not None]
    if not parts:
        return np.zeros((0, int(getattr(encoder, "dim", 0))), dtype=np.float32)
    all_emb = np.concatenate(parts).astype(np.float32, copy=False)
    new_keys = [keys[i] for i in missing_idx]
    for k in new_keys:
        row[k] = len(row)
    if cache is not None and missing:
        all_keys = np.asarray(old_keys + new_keys, dtype="S16")
        with atomic_write(cache, "wb") as fh:
            np.savez(fh, encoder=np.asarray(name), keys=all_keys, embeddings=all_emb,
                     sha256=np.asarray(_digest(name, all_keys, all_emb)))
    return all_emb[[row[k] for k in keys]]
