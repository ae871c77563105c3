"""Embeddings cached on disk by text, so rebuilding a dataset or refitting a topic model only
encodes texts it has not seen with that encoder."""

from __future__ import annotations

import hashlib
import logging
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


def _read_cache(cache: Path, name: str) -> tuple[list[bytes], np.ndarray | None]:
    """Keys and embeddings of a cache file written for encoder ``name`` (else nothing)."""
    with np.load(cache, allow_pickle=False) as z:
        if str(z["encoder"]) != name:
            logger.warning("embedding cache %s is for %s, not %s: ignored", cache,
                           z["encoder"], name)
            return [], None
        if "keys" in z:
            keys = [bytes(k) for k in z["keys"]]
        else:  # first format: the texts themselves
            keys = [text_key(t) for t in z["texts"].tolist()]
        return keys, np.asarray(z["embeddings"])


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
        with atomic_write(cache, "wb") as fh:
            np.savez(fh, encoder=np.asarray(name),
                     keys=np.asarray(old_keys + new_keys, dtype="S16"), embeddings=all_emb)
    return all_emb[[row[k] for k in keys]]
