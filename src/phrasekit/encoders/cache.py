"""Embeddings cached on disk by text, so rebuilding a dataset or refitting a topic model only
encodes texts it has not seen with that encoder."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from phrasekit.io import atomic_write

logger = logging.getLogger(__name__)


def encode_cached(encoder: Any, texts: Sequence[str], cache: str | Path | None = None,
                  show_progress: bool = True, batch_size: int = 256) -> np.ndarray:
    """Embed ``texts`` (unit rows), reusing and extending an ``.npz`` cache of this encoder.

    The cache holds ``encoder`` (name), ``texts`` and ``embeddings``; a cache written by
    another encoder is ignored (and replaced). Re-running a build then only embeds new texts.
    """
    name = str(getattr(encoder, "name", type(encoder).__name__))
    old_texts: list[str] = []
    old_emb = None
    if cache is not None and Path(cache).is_file():
        with np.load(cache, allow_pickle=False) as z:
            if str(z["encoder"]) == name:
                old_texts, old_emb = z["texts"].tolist(), np.asarray(z["embeddings"])
            else:
                logger.warning("embedding cache %s is for %s, not %s: ignored", cache,
                               z["encoder"], name)
    row = {t: i for i, t in enumerate(old_texts)}
    missing = list(dict.fromkeys(t for t in texts if t not in row))
    logger.info("embeddings: %d cached, %d to encode with %s", len(texts) - len(missing),
                len(missing), name)
    new = encoder.encode(missing, batch_size=batch_size, show_progress=show_progress) \
        if missing else None
    parts = [x for x in (old_emb, new) if x is not None]
    if not parts:
        return np.zeros((0, int(getattr(encoder, "dim", 0))), dtype=np.float32)
    all_emb = np.concatenate(parts).astype(np.float32, copy=False)
    for t in missing:
        row[t] = len(row)
    if cache is not None and missing:
        with atomic_write(cache, "wb") as fh:
            np.savez(fh, encoder=np.asarray(name), texts=np.asarray(old_texts + missing),
                     embeddings=all_emb)
    return all_emb[[row[t] for t in texts]]
