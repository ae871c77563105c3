"""Embeddings cached on disk by text, so rebuilding a dataset or refitting a topic model only
encodes texts it has not seen with that encoder."""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import re
import zipfile
import zlib
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from phrasekit.encoders.cache_files import (
    is_empty_file,
    legacy_digest,
    prune_marked,
    read_marker,
    write_marked_npz,
)
from phrasekit.encoders.pooling import l2_normalize
from phrasekit.io import atomic_write, writable_target
from phrasekit.paths import same_path
from phrasekit.settings import vector_cache_budget, vector_cache_dir

if TYPE_CHECKING:
    from phrasekit.encoders.base import Encoder

logger = logging.getLogger(__name__)
T = TypeVar("T")


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


def _read_cache(cache: Path, name: str | None
                ) -> tuple[list[bytes], np.ndarray | None, str | None]:
    """Keys, embeddings and encoder name of a cache file written for encoder ``name`` (None:
    any encoder); nothing when it is another encoder's, or a cache file of phrasekit's that is
    damaged (flipped, cut or emptied: it is rebuilt). A file phrasekit did not write (no
    cache marker, and not a verified cache of an earlier version) raises ``ValueError`` naming
    it: a cache replaces only a file phrasekit wrote."""
    writable_target(cache)
    if read_marker(cache) is None and not is_empty_file(cache):
        return _read_legacy(cache, name)
    try:
        with np.load(cache, allow_pickle=False) as z:
            found = str(z["encoder"])
            if name is not None and found != name:
                logger.warning("embedding cache %s is for %s, not %s: rebuilt", cache, found,
                               name)
                return [], None, None
            keys, emb = z["keys"], np.asarray(z["embeddings"], dtype=np.float32)
            ok = str(z["sha256"]) == legacy_digest(found, keys, emb)
    except Exception as exc:  # a marked file is the cache's own: failing to read it is damage
        logger.warning("embedding cache %s is damaged (%s): rebuilt", cache,
                       " ".join(str(exc).split()) or type(exc).__name__)
        return [], None, None
    if not ok or len(keys) != len(emb):
        logger.warning("embedding cache %s fails its checksum: rebuilt", cache)
        return [], None, None
    return stored_keys(keys), emb, found


def check_cache_dir(cache_dir: str | Path | None) -> None:
    """``ValueError`` when a vector cache folder given is an existing file (checked before
    the work whose vectors it would keep)."""
    if cache_dir is not None and str(cache_dir) != "auto" and Path(cache_dir).exists() \
            and not Path(cache_dir).is_dir():
        if same_path(Path(cache_dir), vector_cache_dir()):
            raise ValueError(f"the vector cache folder {cache_dir} is a file, not a folder: "
                             "move it, or set PHRASEKIT_VECTOR_CACHE or PHRASEKIT_CACHE to another "
                             "folder")
        raise ValueError(f"cache_dir {cache_dir} is a file, not a folder")


def check_cache_file(cache: str | Path | None) -> None:
    """Raise ``ValueError`` naming ``cache`` where it is a file phrasekit did not write (a
    cache never replaces one): for commands to check before their long work starts."""
    if cache is None or not os.path.lexists(cache):
        return
    cache = Path(cache)
    writable_target(cache)
    if read_marker(cache) is None and not is_empty_file(cache):
        _read_legacy(cache, None)


#: The arrays an embedding cache ``.npz`` of an earlier version (no marker) holds.
_LEGACY_ARRAYS = {"encoder.npy", "keys.npy", "embeddings.npy", "sha256.npy"}


def _not_ours(cache: Path, why: str) -> ValueError:
    return ValueError(f"{cache}: not an embedding cache written by phrasekit ({why}); not "
                      "replacing it: move it away")


def _read_legacy(cache: Path, name: str | None
                 ) -> tuple[list[bytes], np.ndarray | None, str | None]:
    """A cache file of an earlier version (no marker): taken only when it holds exactly a
    cache's arrays and its checksum verifies (proof that phrasekit wrote it); it is then
    rewritten with a marker. Anything else raises ``ValueError`` naming it."""
    try:
        with zipfile.ZipFile(cache) as zf:
            members = set(zf.namelist())
        if members != _LEGACY_ARRAYS:
            raise _not_ours(cache, "no cache marker; other arrays")
        with np.load(cache, allow_pickle=False) as z:
            found = str(z["encoder"])
            keys, emb = z["keys"], np.asarray(z["embeddings"], dtype=np.float32)
            ok = str(z["sha256"]) == legacy_digest(found, keys, emb) and len(keys) == len(emb)
    except (OSError, KeyError, EOFError, zlib.error, zipfile.BadZipFile,
            NotImplementedError) as exc:
        raise _not_ours(cache, f"no cache marker; {' '.join(str(exc).split())}") from None
    if not ok:
        raise _not_ours(cache, "no cache marker, and its checksum fails")
    if name is not None and found != name:
        logger.warning("embedding cache %s is for %s, not %s: rebuilt", cache, found, name)
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


FINGERPRINT_BYTES = 1 << 20


@functools.lru_cache(maxsize=32)
def _fingerprint(folder: str, stats: tuple[tuple[str, int, int], ...]) -> str:
    digest = hashlib.blake2b(digest_size=8)
    for name, size, _ in stats:
        digest.update(f"{name}:{size};".encode())
        with open(Path(folder) / name, "rb") as fh:
            digest.update(fh.read(FINGERPRINT_BYTES))
            if size > FINGERPRINT_BYTES:
                fh.seek(-FINGERPRINT_BYTES, os.SEEK_END)
                digest.update(fh.read())
    return digest.hexdigest()


def folder_fingerprint(folder: Path) -> str:
    """A short digest of a model folder's ``config.json`` and weight files (names, sizes, first
    and last MiB of each): another folder of the same name, or retrained weights, differ."""
    names = sorted(p.name for p in folder.iterdir() if p.is_file() and (
        p.name == "config.json" or p.suffix in (".safetensors", ".npz", ".json")))
    stats = tuple((n, (st := (folder / n).stat()).st_size, st.st_mtime_ns) for n in names)
    return _fingerprint(str(folder.resolve()), stats)


def encoder_identity(encoder: Any) -> str:
    """What cached vectors are keyed by besides their text: the encoder's name and class, the
    settings that change its vectors (``vector_settings``) and its weights' fingerprint, so
    one model at two precisions, or two folders of one name, never share vectors."""
    parts = [encoder_name(encoder), type(encoder).__name__]
    settings = getattr(encoder, "vector_settings", dict)()
    parts += [f"{k}={v}" for k, v in sorted(settings.items())]
    folder = getattr(encoder, "model_path", None)
    if folder is not None and Path(folder).is_dir():
        parts.append(folder_fingerprint(Path(folder)))
    return " ".join(parts)


def same_space(identity: str, other: str) -> bool:
    """Whether two ``encoder_identity`` strings name one vector space: equal but for the
    runtime (``backend=onnx``), as fp32 on ONNX Runtime and on torch give the same vectors
    (within 1e-6) and ``auto`` picks whichever measures faster on the CPU at hand. The
    precision still counts."""
    def strip(ident: str) -> list[str]:
        return [p for p in str(ident).split() if not p.startswith("backend=")]

    return strip(identity) == strip(other)


def encode_cached(encoder: Any, texts: Sequence[str], cache: str | Path | None = None,
                  show_progress: bool = True, batch_size: int = 256,
                  identity: Callable[[Any], str] = encoder_name,
                  max_bytes: int | None = None, kind: str = "embeddings") -> np.ndarray:
    """Embed ``texts`` (unit rows), reusing and extending an ``.npz`` cache of this encoder.

    The cache holds ``encoder`` (name), ``keys`` (a digest per text, ``text_key``) and
    ``embeddings``; a cache written by another encoder is ignored (and replaced). Re-running a
    build then only embeds new texts. ``encoder`` may also be a function returning the encoder,
    called only when a text is missing: then the cache file is trusted to belong to it (its
    path must tell models apart), so reading cached vectors loads no model. ``identity``:
    what the file is keyed by besides the texts (``encoder_identity`` for settings and
    weights). ``max_bytes``: the most the file may hold; beyond it the rows of these
    ``texts`` are kept, then the newest others. ``kind``: what the file's marker calls it
    (with the encoder's name as its key); a file without the marker is never replaced.
    """
    loader = None if hasattr(encoder, "encode") else encoder
    name = None if loader is not None else identity(encoder)
    old_keys: list[bytes] = []
    old_emb = None
    if cache is not None and os.path.lexists(cache):
        old_keys, old_emb, found = _read_cache(Path(cache), name)
        name = name or found
    row = {k: i for i, k in enumerate(old_keys)}
    keys = [text_key(t) for t in texts]
    missing_idx = _missing(keys, row)
    if missing_idx and loader is not None:
        encoder = loader()
        if name is not None and name != identity(encoder):
            logger.warning("embedding cache %s is for %s, not %s: rebuilt", cache, name,
                           identity(encoder))
            old_keys, old_emb, row = [], None, {}
            missing_idx = _missing(keys, row)
        name = identity(encoder)
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
    wanted = [row[k] for k in keys]
    if cache is not None and missing:
        kept = _bounded_rows(len(row), wanted, all_emb.shape[1], max_bytes)
        all_keys = np.asarray(old_keys + new_keys, dtype=f"S{KEY_BYTES}")[kept]
        try:
            with atomic_write(cache, "wb") as fh:
                write_marked_npz(fh, kind, str(name), encoder=np.asarray(name), keys=all_keys,
                                 embeddings=all_emb[kept],
                                 sha256=np.asarray(legacy_digest(str(name), all_keys,
                                                                 all_emb[kept])))
        except OSError as exc:  # a full disk, a file-size limit: the vectors are still good
            logger.warning("vector cache %s not written (%s); this run goes on without it",
                           cache, exc.strerror or exc)
    return all_emb[wanted]


def _bounded_rows(n: int, wanted: list[int], dim: int, max_bytes: int | None) -> np.ndarray:
    """The rows a cache file keeps: all ``n`` when they fit in ``max_bytes``, else the rows
    just asked for, then the newest others, up to the bound (in the rows' order)."""
    per_row = KEY_BYTES + 4 * dim
    if max_bytes is None or n * per_row <= max_bytes:
        return np.arange(n)
    room = max(0, max_bytes // per_row)
    keep = np.zeros(n, dtype=bool)
    keep[np.asarray(list(dict.fromkeys(wanted))[:room], dtype=np.int64)] = True
    left = room - int(keep.sum())
    if left > 0:
        keep[np.flatnonzero(~keep)[::-1][:left]] = True
    return np.flatnonzero(keep)


def prune_caches(folder: Path, max_bytes: int, keep: Path | None = None) -> list[Path]:
    """Remove the least recently used embedding caches in ``folder`` (files this module
    wrote: ``*.npz`` carrying the cache marker) until they hold at most ``max_bytes``; ``keep``
    is never removed, files without the marker never. Returns the removed files."""
    return prune_marked(folder, max_bytes, keep)


def words_read(size: int, max_chunks: int, max_words: int | None = None) -> int:
    """How many of a document's first words its windows read (``chunk_words``)."""
    return size * max_chunks if max_words is None else min(max_words, size * max_chunks)


def chunk_words(text: str, size: int, max_chunks: int, max_words: int | None = None
                ) -> list[str]:
    """Cut ``text`` into at most ``max_chunks`` windows of ``size`` whitespace words. With
    ``max_words``: its first ``max_words`` words (at most ``size * max_chunks``) in the fewest
    windows of at most ``size`` words, of even length, so a short text stays whole and no
    short tail window stands beside a long one."""
    words = text.split()
    if max_words is None:
        return [" ".join(words[i : i + size]) for i in range(0, len(words), size)][:max_chunks]
    words = words[: words_read(size, max_chunks, max_words)]
    n = -(-len(words) // size)
    return [" ".join(words[i * len(words) // n : (i + 1) * len(words) // n]) for i in range(n)]


def _replaceable(cache: Path) -> bool:
    """Whether the cache may read and replace the file at ``cache`` (nothing there, a marked
    file, an empty one or a verified earlier cache); otherwise it is named in a warning and
    left, and this run's vectors are not cached."""
    if not os.path.lexists(cache) or read_marker(cache) is not None or is_empty_file(cache):
        return True
    try:
        writable_target(cache)
        _read_legacy(cache, None)
    except ValueError as exc:
        logger.warning("%s; vectors not cached this run", exc)
        return False
    return True


def cached_encode(
    encoder: Encoder,
    texts: Sequence[str],
    cache_dir: str | Path | None,
    kind: str,
    show_progress: bool = False,
    batch_size: int | None = None,
) -> np.ndarray:
    """``encoder.encode(texts)`` through the shared text-keyed cache
    (``cache_dir/KIND-ENCODER-HASH.npz``, keyed by ``encoder_identity``; None: no cache).
    In the default folder (``settings.vector_cache_dir``) the files stay within
    ``settings.vector_cache_budget``, the least recently used removed first."""
    sizes = {} if batch_size is None else {"batch_size": batch_size}
    if cache_dir is None:
        return encode_cached(encoder, list(texts), None, show_progress=show_progress, **sizes)
    ident = encoder_identity(encoder)
    safe = re.sub(r"[^A-Za-z0-9@._-]+", "_", str(encoder.name))[:64]
    tag = hashlib.blake2b(ident.encode("utf-8"), digest_size=4).hexdigest()
    cache = Path(cache_dir) / f"{kind}-{safe}-{tag}.npz"
    managed = same_path(Path(cache_dir), vector_cache_dir())
    budget = vector_cache_budget() if managed else None
    if managed:
        try:
            Path(cache_dir).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            logger.warning("vector cache folder %s cannot be made (%s; PHRASEKIT_VECTOR_CACHE "
                           "or PHRASEKIT_CACHE moves it): vectors not cached this run",
                           cache_dir, exc.strerror or exc)
            return encode_cached(encoder, list(texts), None, show_progress=show_progress,
                                 **sizes)
    if not _replaceable(cache):
        return encode_cached(encoder, list(texts), None, show_progress=show_progress, **sizes)
    out = encode_cached(encoder, list(texts), cache, show_progress=show_progress,
                        identity=encoder_identity, max_bytes=budget, kind=kind, **sizes)
    if managed and budget is not None:
        try:
            if cache.exists():
                os.utime(cache)  # most recently used
            prune_caches(Path(cache_dir), budget, keep=cache)
        except OSError as exc:
            logger.warning("vector cache folder %s not pruned (%s)", cache_dir,
                           exc.strerror or exc)
    return out


def _windows(texts: Sequence[str], chunk_size: int, max_chunks: int,
             max_words: int | None = None) -> tuple[list[str], np.ndarray, np.ndarray]:
    """The word windows of ``texts`` (``chunk_words``), each window's document and its
    number of words (its weight in the document's vector)."""
    chunks: list[str] = []
    owner: list[int] = []
    for d, text in enumerate(texts):
        found = chunk_words(text, chunk_size, max_chunks, max_words)
        chunks.extend(found)
        owner.extend([d] * len(found))
    weight = np.fromiter((len(c.split()) for c in chunks), dtype=np.float32, count=len(chunks))
    return chunks, np.asarray(owner, dtype=np.int64), weight


def _pool(n: int, E: np.ndarray, owner: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """(n, dim) unit document vectors: window rows ``E`` averaged by words per owner."""
    out = np.zeros((n, E.shape[1]), dtype=np.float32)
    np.add.at(out, owner, E * weight[:, None])
    return l2_normalize(out)


def encode_documents(
    encoder: Encoder,
    texts: Sequence[str],
    chunk_size: int = 150,
    max_chunks: int = 8,
    cache_dir: str | Path | None = None,
    show_progress: bool = False,
    max_words: int | None = None,
) -> np.ndarray:
    """Unit document vectors: each document's word windows (``chunk_words``) encoded and
    averaged (weighted by words). A document without words gets a zero row (it is then left
    unassigned)."""
    chunks, owner, weight = _windows(texts, chunk_size, max_chunks, max_words)
    if not chunks:
        return np.zeros((len(texts), encoder.dim), dtype=np.float32)
    E = cached_encode(encoder, chunks, cache_dir, "docs", show_progress)
    return _pool(len(texts), E, owner, weight)


def iter_document_vectors(
    encoder: Encoder,
    blocks: Iterable[T],
    texts_of: Callable[[T], Sequence[str]],
    chunk_size: int = 150,
    max_chunks: int = 8,
    show_progress: bool = False,
    total: int | None = None,
    max_words: int | None = None,
) -> Iterator[tuple[T, np.ndarray]]:
    """``encode_documents`` of a stream: each block with its documents' vectors, in order.
    The windows of all blocks go to ``encoder.encode_stream`` as one stream (one worker pool
    for an engine's sharded encoder), and only the blocks still being encoded are held.
    ``texts_of``: a block's texts; ``total``: the number of windows, for the progress bar."""
    pending: deque[tuple[T, int, np.ndarray, np.ndarray]] = deque()

    def windows() -> Iterator[str]:
        for block in blocks:
            texts = texts_of(block)
            chunks, owner, weight = _windows(texts, chunk_size, max_chunks, max_words)
            pending.append((block, len(texts), owner, weight))
            yield from chunks

    buffer: list[np.ndarray] = []

    def ready(final: bool) -> Iterator[tuple[T, np.ndarray]]:
        E = np.concatenate(buffer) if buffer else np.zeros((0, encoder.dim), np.float32)
        start = 0
        while pending and (final or len(pending[0][2]) <= len(E) - start):
            block, n, owner, weight = pending.popleft()
            yield block, _pool(n, E[start:start + len(owner)], owner, weight)
            start += len(owner)
        buffer[:] = [E[start:]]

    for E in encoder.encode_stream(windows(), show_progress=show_progress, total=total):
        buffer.append(E)
        yield from ready(final=False)
    yield from ready(final=True)
