"""Embeddings cached on disk by text, so rebuilding a dataset or refitting a topic model only
encodes texts it has not seen with that encoder."""

from __future__ import annotations

import hashlib
import logging
import re
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from phrasekit.encoders.pooling import l2_normalize
from phrasekit.io import atomic_write

if TYPE_CHECKING:
    from phrasekit.encoders.base import Encoder

logger = logging.getLogger(__name__)


KEY_BYTES = 16


def text_key(text: str) -> bytes:
    """A 16-byte digest of ``text``: what the cache stores instead of the text itself (fixed
    width, so long documents do not blow the file up to n x longest-text)."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"),
                           digest_size=KEY_BYTES).digest()


def stored_keys(keys: np.ndarray) -> list[bytes]:
    """The digests of a cache's ``keys`` array. NumPy drops the trailing NUL bytes of an
    ``S16`` item when it is read, so they are put back: without them one digest in 256 would
    never match and its text would be encoded again on every run."""
    return [bytes(k).ljust(KEY_BYTES, b"\0") for k in keys]


def _digest(name: str, keys: np.ndarray, embeddings: np.ndarray) -> str:
    """sha256 over a cache's encoder name, keys and embeddings (stored with them, checked at
    read, so a damaged cache is rebuilt instead of handing back wrong vectors)."""
    digest = hashlib.sha256(name.encode("utf-8"))
    digest.update(np.ascontiguousarray(keys).tobytes())
    digest.update(np.ascontiguousarray(embeddings, dtype=np.float32).tobytes())
    return digest.hexdigest()


def _read_cache(cache: Path, name: str | None
                ) -> tuple[list[bytes], np.ndarray | None, str | None]:
    """Keys, embeddings and encoder name of a cache file written for encoder ``name`` (None:
    any encoder); nothing when it is another encoder's, unreadable or fails its checksum."""
    try:
        with np.load(cache, allow_pickle=False) as z:
            found = str(z["encoder"])
            if name is not None and found != name:
                logger.warning("embedding cache %s is for %s, not %s: ignored", cache, found,
                               name)
                return [], None, None
            keys, emb = z["keys"], np.asarray(z["embeddings"], dtype=np.float32)
            ok = "sha256" in z and str(z["sha256"]) == _digest(found, keys, emb)
    except (OSError, ValueError, KeyError, EOFError, zlib.error) as exc:
        logger.warning("embedding cache %s is unreadable (%s): rebuilt", cache, exc)
        return [], None, None
    if not ok or len(keys) != len(emb):
        logger.warning("embedding cache %s fails its checksum: rebuilt", cache)
        return [], None, None
    return stored_keys(keys), emb, found


def _missing(keys: list[bytes], row: dict[bytes, int]) -> list[int]:
    """Indexes of the first occurrence of each key that ``row`` lacks."""
    seen: set[bytes] = set()
    out: list[int] = []
    for i, k in enumerate(keys):
        if k not in row and k not in seen:
            seen.add(k)
            out.append(i)
    return out


def encoder_name(encoder: Any) -> str:
    """The name a cache is written under: the encoder's ``name``, else its class name."""
    return str(getattr(encoder, "name", type(encoder).__name__))


def encode_cached(encoder: Any, texts: Sequence[str], cache: str | Path | None = None,
                  show_progress: bool = True, batch_size: int = 256) -> np.ndarray:
    """Embed ``texts`` (unit rows), reusing and extending an ``.npz`` cache of this encoder.

    The cache holds ``encoder`` (name), ``keys`` (a digest per text, ``text_key``) and
    ``embeddings``; a cache written by another encoder is ignored (and replaced). Re-running a
    build then only embeds new texts. ``encoder`` may also be a function returning the encoder,
    called only when a text is missing: then the cache file is trusted to belong to it (its
    path must tell models apart), so reading cached vectors loads no model.
    """
    loader = None if hasattr(encoder, "encode") else encoder
    name = None if loader is not None else encoder_name(encoder)
    old_keys: list[bytes] = []
    old_emb = None
    if cache is not None and Path(cache).is_file():
        old_keys, old_emb, found = _read_cache(Path(cache), name)
        name = name or found
    row = {k: i for i, k in enumerate(old_keys)}
    keys = [text_key(t) for t in texts]
    missing_idx = _missing(keys, row)
    if missing_idx and loader is not None:
        encoder = loader()
        if name is not None and name != encoder_name(encoder):
            logger.warning("embedding cache %s is for %s, not %s: rebuilt", cache, name,
                           encoder_name(encoder))
            old_keys, old_emb, row = [], None, {}
            missing_idx = _missing(keys, row)
        name = encoder_name(encoder)
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
        all_keys = np.asarray(old_keys + new_keys, dtype=f"S{KEY_BYTES}")
        with atomic_write(cache, "wb") as fh:
            np.savez(fh, encoder=np.asarray(name), keys=all_keys, embeddings=all_emb,
                     sha256=np.asarray(_digest(str(name), all_keys, all_emb)))
    return all_emb[[row[k] for k in keys]]


def chunk_words(text: str, size: int, max_chunks: int) -> list[str]:
    """Cut ``text`` into at most ``max_chunks`` windows of ``size`` whitespace words."""
    words = text.split()
    return [" ".join(words[i : i + size]) for i in range(0, len(words), size)][:max_chunks]


def cached_encode(
    encoder: Encoder,
    texts: Sequence[str],
    cache_dir: str | Path | None,
    kind: str,
    show_progress: bool = False,
) -> np.ndarray:
    """``encoder.encode(texts)`` through the shared text-keyed cache
    (``cache_dir/KIND-ENCODER.npz``; None: no cache)."""
    safe = re.sub(r"[^A-Za-z0-9@._-]+", "_", str(encoder.name))
    cache = None if cache_dir is None else Path(cache_dir) / f"{kind}-{safe}.npz"
    return encode_cached(encoder, list(texts), cache, show_progress=show_progress)


def encode_documents(
    encoder: Encoder,
    texts: Sequence[str],
    chunk_size: int = 150,
    max_chunks: int = 8,
    cache_dir: str | Path | None = None,
    show_progress: bool = False,
) -> np.ndarray:
    """Unit document vectors: each document's word windows encoded and averaged (weighted by
    words). A document without words gets a zero row (it is then left unassigned)."""
    chunks: list[str] = []
    owner: list[int] = []
    weight: list[float] = []
    for d, text in enumerate(texts):
        for c in chunk_words(text, chunk_size, max_chunks):
            chunks.append(c)
            owner.append(d)
            weight.append(float(len(c.split())))
    out = np.zeros((len(texts), encoder.dim), dtype=np.float32)
    if not chunks:
        return out
    E = cached_encode(encoder, chunks, cache_dir, "docs", show_progress)
    np.add.at(out, np.asarray(owner), E * np.asarray(weight, dtype=np.float32)[:, None])
    return l2_normalize(out)
