"""The encoder contract shared by every phrasekit encoder.

``encode(texts, batch_size=..., show_progress=...) -> np.ndarray`` of shape ``(n, d)``, float32,
unit rows (GloVe gives a text with no known word a hashed direction of its own, and
``known_rows`` tells such rows apart), in input order, ``(0, d)`` for empty input. Inputs are
validated up front so that a bad item fails before any long work starts.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import re
import unicodedata
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from phrasekit.encoders.allocator import keep_freed_memory
from phrasekit.encoders.pooling import l2_normalize
from phrasekit.errors import check_int
from phrasekit.io import LONE_SURROGATE
from phrasekit.settings import torch_threads
from phrasekit.threads import SMALL_JOB_CHARS

logger = logging.getLogger(__name__)


def small_job_threads(items: Sequence[str]) -> int | None:
    """One thread for a small job (a query, a few phrases: at most ``SMALL_JOB_CHARS``
    characters), where more threads cost more than they give; None otherwise."""
    return 1 if sum(map(len, items)) <= SMALL_JOB_CHARS else None


def validate_texts(texts: str | Iterable[str], start: int = 0) -> list[str]:
    """Return ``texts`` as a list of non-empty strings or raise naming the first bad index
    (counted from ``start``, for a chunk of a longer stream).

    A single string is accepted and treated as a list of one.
    """
    if isinstance(texts, str):
        texts = [texts]
    elif texts is None:
        raise TypeError("texts must be a list of strings, got None")
    elif callable(getattr(texts, "to_pylist", None)):  # a pyarrow Array or ChunkedArray
        texts = texts.to_pylist()
    elif isinstance(texts, bytes | bytearray):
        raise TypeError("texts must be str, not bytes: decode them first (e.g. .decode('utf-8'))")
    try:
        items = list(texts)
    except TypeError as exc:
        kind = type(texts).__name__
        raise TypeError(f"texts must be an iterable of strings, got {kind}") from exc
    for i, t in enumerate(items, start=start):
        if t is None:
            raise TypeError(f"texts[{i}] is None; every item must be a non-empty string")
        if not isinstance(t, str):
            raise TypeError(f"texts[{i}] is {type(t).__name__}, not str: {t!r:.60}")
        if not t.strip():
            raise ValueError(f"texts[{i}] is empty or whitespace only; cannot embed it")
        if (lone := LONE_SURROGATE.search(t)) is not None:
            raise ValueError(f"texts[{i}] holds a lone surrogate (U+{ord(lone[0]):04X}), which "
                             "is not a character; fix the text's decoding")
    return nfc(items)


def nfc(texts: list[str]) -> list[str]:
    """The texts in Unicode's composed form (NFC), so that "é" typed as one character or as
    "e" and a combining accent is one text to every model and character feature."""
    return [t if unicodedata.is_normalized("NFC", t) else unicodedata.normalize("NFC", t)
            for t in texts]


def text_chunks(texts: str | Iterable[str], size: int) -> Iterator[list[str]]:
    """``texts`` read lazily in validated lists of up to ``size`` (an error names the item's
    index in the whole stream), so a long stream is never held whole."""
    if size < 1:
        raise ValueError(f"chunk size must be at least 1, got {size}")
    if isinstance(texts, str | bytes | bytearray) or not isinstance(texts, Iterable):
        texts = validate_texts(texts)  # one string is a list of one; other kinds raise
    source = iter(texts)
    start = 0
    while chunk := list(itertools.islice(source, size)):
        yield validate_texts(chunk, start=start)
        start += len(chunk)


def check_finite(vectors: np.ndarray, name: str) -> np.ndarray:
    """Return ``vectors`` if every value is finite, else raise naming the first bad row: a
    model with damaged weights must fail, not hand back NaN rows."""
    bad = ~np.isfinite(vectors).all(axis=1) if vectors.ndim == 2 else ~np.isfinite(vectors)
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        raise ValueError(f"model {name} produced non-finite vectors for {int(bad.sum())} of "
                         f"{len(vectors)} texts (first: row {first}); its weights may be "
                         "damaged")
    return vectors


DEVICES = ("auto", "cpu", "cuda")


def check_device(device: str | None = None) -> str:
    """``device`` (None: ``PHRASEKIT_DEVICE``, else ``auto``) normalised and checked for its
    form only: ``auto``, ``cpu``, ``cuda`` or ``cuda:N`` (no torch import)."""
    name = (device or os.environ.get("PHRASEKIT_DEVICE") or "auto").strip().lower()
    if name in ("auto", "cpu") or re.fullmatch(r"cuda(:\d+)?", name):
        return name
    raise ValueError(f"device must be one of {', '.join(DEVICES)} (or cuda:N), got {name!r}")


def resolve_device(device: str | None = None) -> str:
    """The torch device an encoder runs on (see :func:`check_device`): ``auto`` is ``cuda``
    when torch sees a CUDA device and ``cpu`` otherwise, as sentence-transformers chooses;
    ``cuda`` (or ``cuda:N``) without one raises ``ValueError``. Torch is imported only when a
    GPU is asked for or ``auto`` must look for one."""
    name = check_device(device)
    if name == "cpu":
        return name
    import torch

    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if not torch.cuda.is_available():
        raise ValueError(f"device {name!r}: torch sees no CUDA device here (CPU-only torch, or "
                         "no GPU); use --device cpu or auto")
    return name


def check_gpu_request(device: str | None = None) -> None:
    """Fail before any work when ``device`` names a CUDA device that is not there; ``auto``
    and ``cpu`` need no check (and no torch import)."""
    if check_device(device).startswith("cuda"):
        resolve_device(device)


#: sentence-transformers ``encode`` keywords taken with only their default value.
_ST_FIXED = {"output_value": "sentence_embedding", "precision": "float32", "prompt": None,
             "prompt_name": None, "device": None, "truncate_dim": None}


def _sentence_transformers_options(show_progress: bool, options: dict[str, Any]
                                   ) -> tuple[bool, bool]:
    """(show progress, return a tensor) from sentence-transformers' ``encode`` keywords;
    ``TypeError`` for an unknown keyword, ``ValueError`` for a value phrasekit cannot give."""
    options = dict(options)
    bar = options.pop("show_progress_bar", None)
    as_tensor = bool(options.pop("convert_to_tensor", False))
    options.pop("convert_to_numpy", None)
    options.pop("normalize_embeddings", None)  # phrasekit's rows are always unit length
    for key, value in options.items():
        if key not in _ST_FIXED:
            raise TypeError(f"encode() got an unexpected keyword argument {key!r}")
        if value != _ST_FIXED[key]:
            raise ValueError(f"encode(): {key}={value!r} is not supported (only "
                             f"{_ST_FIXED[key]!r})")
    return bool(show_progress or bar), as_tensor


class Encoder(ABC):
    """Base class: subclasses implement ``_encode_batch`` and set ``dim`` and ``name``.

    ``encode`` handles validation, length-sorted batching (so batches carry little padding),
    order restoration, normalisation and the progress bar.
    """

    name: str = "encoder"
    dim: int = 0
    default_batch_size: int = 64
    #: torch intra-op threads while this encoder works (None: leave torch's setting alone).
    num_threads: int | None = None
    #: the folder the weights were read from, if any (cached vectors are keyed by its files).
    model_path: Path | None = None
    #: the torch device the encoder's modules are on (see :meth:`to`).
    device: str = "cpu"
    #: on the CPU, the most tokens one batch holds (counted by the encoder's tokenizer where
    #: it has one, else estimated from characters; None: no cap).
    tokens_per_batch: int | None = None
    #: True where batches may run side by side on several threads (a forward pass that keeps
    #: no state; see :data:`SIDE_BY_SIDE_MAX_THREADS`).
    side_by_side: bool = False

    def torch_modules(self) -> list[Any]:
        """The torch modules :meth:`to` moves (none: the encoder runs on the CPU only)."""
        return []

    def runs_torch(self) -> bool:
        """True where encoding computes with torch (its threads and allocator settings)."""
        return bool(self.torch_modules())

    def to(self, device: str | None = "auto") -> Encoder:
        """Run on ``device`` (``auto``, ``cpu``, ``cuda``; see :func:`resolve_device`) and
        return ``self``. An encoder without torch modules (GloVe, character n-grams) stays on
        the CPU."""
        modules = self.torch_modules()
        if not modules:
            if check_device(device).startswith("cuda"):
                logger.info("%s has no GPU path: it runs on the CPU", self.name)
            return self
        target = resolve_device(device)
        for module in modules:
            module.to(target)
        if target != self.device:
            logger.info("%s runs on %s", self.name, target)
        self.device = target
        return self

    def vector_settings(self) -> dict[str, object]:
        """The settings besides the weights that change this encoder's vectors (precision,
        tokens kept): cached vectors are keyed by them."""
        return {k: v for k in ("precision", "max_seq_length")
                if (v := getattr(self, k, None)) is not None}

    @contextlib.contextmanager
    def token_limit(self, tokens: int | None) -> Iterator[Encoder]:
        """Inside the block, each text is cut to its first ``tokens`` subword tokens, where
        this encoder cuts at a ``max_seq_length`` above that (cached vectors are keyed by the
        limit in force); None, or a limit at or above the encoder's own, changes nothing."""
        own = getattr(self, "max_seq_length", None)
        if tokens is None or not isinstance(own, int) or tokens >= own:
            yield self
            return
        check_int("tokens", tokens, 1)
        self.max_seq_length = int(tokens)
        try:
            yield self
        finally:
            self.max_seq_length = own

    @abstractmethod
    def _encode_batch(self, texts: Sequence[str]) -> np.ndarray:
        """Embed one batch of validated strings; rows need not be normalised."""

    def _sort_key(self, text: str) -> int:
        """Length proxy used to group similar-length texts into one batch."""
        return len(text)

    def _token_counts(self, items: Sequence[str]) -> list[int] | None:
        """Each text's tokens, where this encoder reads subword tokens (:func:`token_counts`):
        batches grouped by them carry no padding. None: group by :meth:`_sort_key`."""
        return None

    def encode(
        self,
        texts: str | Iterable[str],
        batch_size: int | None = None,
        show_progress: bool = False,
        **st_options: Any,
    ) -> Any:
        """Embed ``texts`` into an (n, dim) float32 array of unit-length rows, in input order.

        The keywords code written for sentence-transformers passes are taken too
        (``show_progress_bar``, ``convert_to_numpy``, ``convert_to_tensor``,
        ``normalize_embeddings``: rows are unit whatever it says), so a phrasekit encoder drops
        into that code; ``convert_to_tensor=True`` returns a torch tensor."""
        show_progress, as_tensor = _sentence_transformers_options(show_progress, st_options)
        if batch_size is not None:
            check_int("batch_size", batch_size, 1)
        items = validate_texts(texts)
        out = self._encode_all(items, batch_size, show_progress)
        if as_tensor:
            import torch

            return torch.from_numpy(out)
        return out

    def get_sentence_embedding_dimension(self) -> int:
        """The vector size (sentence-transformers' name for ``dim``)."""
        return int(self.dim)

    def _encode_all(self, items: list[str], batch_size: int | None, show_progress: bool
                    ) -> np.ndarray:
        """``encode`` of validated texts: batches of similar length, unit rows in order."""
        out = np.empty((len(items), self.dim), dtype=np.float32)
        uses_torch = self.runs_torch()
        if self.device == "cpu" and uses_torch:
            keep_freed_memory()  # activations reuse freed heap instead of fresh pages
        small = None if getattr(self, "backend", "torch") == "onnx" else small_job_threads(items)
        # (an ONNX session keeps its count; an encoder without torch never imports it)
        with torch_threads((self.num_threads or small) if uses_torch else None):
            workers = self._side_by_side_workers() if uses_torch else 1
            batches = self._batches(items, batch_size, f"encode[{self.name}]", show_progress)
            for idx in batches:
                out[idx] = l2_normalize(self._encode_batch([items[i] for i in idx]))
                if workers > 1:
                    self._encode_side_by_side(items, batches, out, workers)
        return check_finite(out, self.name)

    def _side_by_side_workers(self) -> int:
        """Threads for batches side by side: torch's count, where this encoder allows it and
        the count is one measured (:data:`SIDE_BY_SIDE_MAX_THREADS`); else 1."""
        if not self.side_by_side or self.device != "cpu":
            return 1
        import torch

        n = int(torch.get_num_threads())
        return n if n <= SIDE_BY_SIDE_MAX_THREADS else 1

    def _encode_side_by_side(self, items: list[str], batches: Iterator[list[int]],
                             out: np.ndarray, workers: int) -> None:
        """Encode the remaining ``batches`` on ``workers`` threads, one torch thread each
        (the first batch ran alone, so the tokenizer's settings are already set)."""
        from concurrent.futures import Future, ThreadPoolExecutor

        def work(idx: list[int]) -> None:
            out[idx] = l2_normalize(self._encode_batch([items[i] for i in idx]))

        pending: list[Future] = []
        with torch_threads(1), ThreadPoolExecutor(workers) as pool:
            for idx in batches:
                pending.append(pool.submit(work, idx))
                if len(pending) >= 2 * workers:  # bounded: the progress bar stays near truth
                    pending.pop(0).result()
            for future in pending:
                future.result()

    def encode_stream(self, texts: Iterable[str], chunk_size: int = 4096,
                      batch_size: int | None = None, show_progress: bool = False,
                      total: int | None = None) -> Iterator[np.ndarray]:
        """Embed a stream of texts chunk by chunk, yielding each chunk's rows (as ``encode``
        gives them) in input order: memory holds one chunk, not the corpus. ``total``: the
        number of texts, for the progress bar."""
        check_int("chunk_size", chunk_size, 1)
        with tqdm(total=total, desc=f"encode[{self.name}]", unit="text",
                  disable=not show_progress, leave=False) as bar:
            for chunk in text_chunks(texts, chunk_size):
                yield self.encode(chunk, batch_size=batch_size)
                bar.update(len(chunk))

    def _batches(self, items: Sequence[str], batch_size: int | None, desc: str,
                 show_progress: bool) -> Iterator[list[int]]:
        """Indices of ``items`` in batches of similar length (longest first), so that a batch
        carries little padding; the caller writes each batch's rows back at these indices.
        On the CPU a batch of long texts holds at most ``tokens_per_batch`` tokens."""
        bs = int(self.default_batch_size if batch_size is None else batch_size)
        if bs <= 0:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        tokens = self._token_counts(items)
        keys = tokens if tokens is not None else [self._sort_key(t) for t in items]
        order = sorted(range(len(items)), key=keys.__getitem__, reverse=True)
        with tqdm(total=len(items), desc=desc, unit="text", disable=not show_progress,
                  leave=False) as bar:
            start = 0
            while start < len(order):
                first = order[start]
                size = self._batch_len(items[first], bs, tokens[first] if tokens else None)
                yield order[start : start + size]
                bar.update(min(size, len(order) - start))
                start += size

    def _batch_len(self, longest: str, batch_size: int, tokens: int | None = None) -> int:
        """Texts in a batch whose longest text is ``longest`` (of ``tokens`` tokens, else
        estimated from its characters): ``batch_size``, or fewer where the batch would pass
        ``tokens_per_batch`` tokens on the CPU (large activations leave the CPU caches: 8
        windows of 150 words ran 2x faster than 256 in bf16)."""
        if self.tokens_per_batch is None or self.device != "cpu":
            return batch_size
        if tokens is None:
            tokens = len(longest) // CHARS_PER_WORD_PIECE + 2
        cap = getattr(self, "max_seq_length", None)
        if cap:
            tokens = min(tokens, int(cap))
        return max(1, min(batch_size, self.tokens_per_batch // tokens))

    def similarity(self, a: Iterable[str], b: Iterable[str]) -> np.ndarray:
        """Cosine similarity matrix between two lists of strings."""
        return self.encode(a) @ self.encode(b).T

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, dim={self.dim})"


#: Characters per word piece, on average, in English text: a token count estimated unread.
CHARS_PER_WORD_PIECE = 4
#: Batches run side by side, one torch thread each, where the encoder allows it
#: (``side_by_side``) and the job has 2 to this many threads; one after another on all of
#: them otherwise. On 2 cores side by side encoded names, sentences and 150-word windows
#: 0.99-1.47x as fast (benchmarks/speed/batch_threads.py): an operator on one batch leaves a
#: thread idle at every step. Larger thread counts are unmeasured, so they keep the operators'.
SIDE_BY_SIDE_MAX_THREADS = 4

#: Characters a text keeps per token its model reads (a word piece is a few characters).
CHARS_PER_TOKEN = 64


def cap_chars(texts: Sequence[str], max_tokens: int) -> list[str]:
    """``texts`` cut to ``max_tokens * CHARS_PER_TOKEN`` characters before tokenizing: a
    tokenizer reads a whole text before truncating it (a megabyte line cost gigabytes), and
    the tokens kept are the same for any text without kilobytes of blank space."""
    cap = int(max_tokens) * CHARS_PER_TOKEN
    return [t[:cap] for t in texts]


#: characters read per token when counting a text's tokens for batching: a text whose first
#: ``max_length * 8`` characters give fewer tokens (long words) is only grouped as shorter.
CHARS_TO_COUNT = 8


def token_counts(tokenizer: Any, texts: Sequence[str], max_length: int) -> list[int]:
    """The tokens (special ones included) each text gives ``tokenizer`` when cut to
    ``max_length``: one batched call of the fast tokenizer. Batches grouped by characters
    held 1.7x the real tokens of 1,000 bbc_news articles' 36,938 keyphrase candidates."""
    if not texts:
        return []
    cut = max_length * CHARS_TO_COUNT  # a longer text is cut to max_length tokens either way
    enc = tokenizer([t[:cut] for t in texts], truncation=True, max_length=max_length,
                    return_attention_mask=False, return_token_type_ids=False)
    return [len(ids) for ids in enc["input_ids"]]


def known_rows(encoder: object, texts: Sequence[str], vectors: np.ndarray) -> np.ndarray:
    """Which of ``texts`` the encoder has something to go on for: its ``known(texts)`` where it
    has one (static word vectors), else the rows that are not all-zero."""
    known = getattr(encoder, "known", None)
    if callable(known):
        return np.asarray(known(texts), dtype=bool)
    return np.linalg.norm(vectors, axis=1) > 0.5


def encode_unique(
    encoder: Encoder, strings: Sequence[str], batch_size: int | None = None,
    show_progress: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Embed each distinct string once: ``(vectors of the sorted uniques, inverse index)``.

    ``vectors[inverse]`` is aligned with ``strings``. Use this form when the (n, d) expansion
    would be large (e.g. the 4096-d ``string`` encoder on many pairs).
    """
    items = list(strings)
    if not items:
        return np.zeros((0, encoder.dim), dtype=np.float32), np.zeros(0, dtype=np.int64)
    uniq, inverse = distinct(items)
    vecs = encoder.encode(uniq, batch_size=batch_size, show_progress=show_progress)
    logger.debug("encoded %d unique of %d strings with %s", len(uniq), len(items), encoder.name)
    return l2_normalize(vecs), inverse


def as_text_list(texts: Any, name: str) -> list[Any]:
    """``texts`` read once into a list (one string is a list of one); ``None`` or a value
    that is not a collection raises ``TypeError`` naming ``name``. The items are checked by
    ``encode``."""
    if isinstance(texts, str):
        return [texts]
    if texts is None or isinstance(texts, bytes) or not isinstance(texts, Iterable):
        raise TypeError(f"{name} must be a list of texts, got {type(texts).__name__}")
    if callable(getattr(texts, "to_pylist", None)):  # a pyarrow Array or ChunkedArray
        return texts.to_pylist()
    return list(texts)


def distinct(items: Sequence[str]) -> tuple[list[str], np.ndarray]:
    """The sorted distinct strings of ``items`` and each item's position among them. Python
    strings, not NumPy's fixed-width ones, which drop trailing NUL characters (so "a\\x00"
    and "a" would be encoded as one text)."""
    uniq = sorted(set(items))
    where = {s: i for i, s in enumerate(uniq)}
    return uniq, np.fromiter((where[s] for s in items), dtype=np.int64, count=len(items))
