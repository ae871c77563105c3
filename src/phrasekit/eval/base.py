"""The benchmark task contract and the helpers every task shares.

A :class:`Task` reads its files from the benchmark data folder (``phrasekit.settings.data_dir``),
embeds what it needs with any :class:`~phrasekit.encoders.base.Encoder` and returns its metrics
in percent (``{"acc": 67.3}``). Tasks are stateless, deterministic (fixed seeds) and offer a
``quick`` mode: a small fixed subset for smoke tests.

Robustness variants: a task with ``supports_noise`` accepts ``noise="typo"`` (constructor
argument or :meth:`Task.with_noise`); it then perturbs the query side of its test data with
:func:`perturb` and is named ``<task>+<noise>`` (e.g. ``bird+typo``). The perturbation of a
string depends only on the string, the noise kind and the seed, never on the model, the order
or quick mode, so every model sees the same noisy strings and drops are comparable.
"""

from __future__ import annotations

import copy
import csv
import hashlib
import logging
import math
import random
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from numpy.typing import DTypeLike

from phrasekit.encoders.base import Encoder, encode_unique
from phrasekit.encoders.pooling import l2_normalize
from phrasekit.paths import csv_reader, utf8_problem
from phrasekit.phrases.augment import typo_noise
from phrasekit.similarity.index import VectorIndex
from phrasekit.text import md_plain

logger = logging.getLogger(__name__)

DATA_HINT = (
    "set PHRASEKIT_DATA to the benchmark data folder (or PHRASEKIT_SHARED to the folder that "
    "holds data/), or give the folder (--data-dir; data_dir in Python)"
)


NOISES: tuple[str, ...] = ("typo",)
"""Known test-side noise kinds: ``typo`` = one random character edit per word w.p. 0.3."""

NOISE_SEED = 13
"""The fixed seed of the benchmark perturbations."""

TYPO_P = 0.3
"""Probability that a word of a perturbed string gets one character edit (``typo`` noise)."""


def check_noise(noise: str | None) -> None:
    """Raise ValueError naming the known kinds if ``noise`` is not None or one of NOISES."""
    if noise is not None and noise not in NOISES:
        raise ValueError(f"unknown noise {noise!r}; known noise kinds: {', '.join(NOISES)}")


def perturb(strings: Sequence[str], noise: str | None, seed: int = NOISE_SEED) -> list[str]:
    """Each string with test-side noise (unchanged for ``noise=None``), deterministically.

    Every string gets its own ``random.Random`` seeded by (seed, noise, string) (SHA-512
    seeding, independent of PYTHONHASHSEED), so a string is always perturbed the same way,
    whichever model, order or subset. ``typo``: :func:`phrasekit.phrases.augment.typo_noise`
    with ``p=TYPO_P``.
    """
    check_noise(noise)
    if noise is None:
        return list(strings)
    return [typo_noise(s, random.Random(f"{seed}\x00{noise}\x00{s}"), p=TYPO_P) for s in strings]


def require_path(data_dir: Path, relative: str, kind: str = "file") -> Path:
    """``data_dir / relative`` if it exists, else a FileNotFoundError naming it and the setting."""
    path = Path(data_dir) / relative
    ok = path.is_dir() if kind == "folder" else path.is_file()
    if not ok:
        raise FileNotFoundError(f"benchmark {kind} not found: {path} ({DATA_HINT})")
    return path


def embed_unique(
    encoder: Encoder, strings: Sequence[str], batch_size: int | None = None
) -> np.ndarray:
    """Embed ``strings`` as an (n, d) matrix aligned with the input, encoding duplicates once.

    This is the per-run cache of the benchmark: a phrase that occurs many times in a task is
    sent to the encoder once. Rows are L2-normalised (zero rows stay zero), so dot = cosine.
    """
    vecs, inverse = encode_unique(encoder, strings, batch_size)
    return vecs[inverse]


def rowwise_cosine(a: np.ndarray, b: np.ndarray, dtype: DTypeLike = np.float32) -> np.ndarray:
    """Cosine of each row of ``a`` with the same row of ``b`` (0 where either row is zero),
    computed in ``dtype``."""
    return np.einsum("ij,ij->i", l2_normalize(a, dtype), l2_normalize(b, dtype))


def nearest(queries: np.ndarray, candidates: np.ndarray, chunk: int = 2048) -> np.ndarray:
    """Index of the most cosine-similar candidate row for every query row (first on ties).

    Same search as ``phrasekit.similarity.VectorIndex`` (and so as the fuzzy-join API).
    """
    index = VectorIndex(l2_normalize(candidates), chunk=chunk)
    return index.search(l2_normalize(queries), k=1)[1][:, 0]


def read_tsv(
    path: Path, header: Sequence[str] | None = None, min_fields: int = 2,
    texts: Sequence[int] = ()
) -> list[list[str]]:
    """Read a tab-separated file literally (no quote handling), checking the header if given.

    Returns the data rows; raises ValueError naming the file and line for short rows and for
    a blank field among ``texts`` (the columns the task embeds).
    """
    rows: list[list[str]] = []
    try:
        with open(path, encoding="utf-8-sig", newline="") as fh:
            reader = csv_reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE)
            for lineno, row in enumerate(reader, start=1):
                if lineno == 1 and header is not None:
                    if [h.strip() for h in row[: len(header)]] != list(header):
                        raise ValueError(f"{path}: expected header {list(header)}, got {row}")
                    continue
                if not row:
                    continue
                if len(row) < min_fields:
                    raise ValueError(f"{path}:{lineno}: expected >= {min_fields} fields, "
                                     f"got {row}")
                blank = next((i for i in texts if not row[i].strip()), None)
                if blank is not None:
                    name = repr(header[blank]) if header is not None else f"{blank + 1}"
                    raise ValueError(f"{path}:{lineno}: field {name} is empty")
                rows.append(row)
    except UnicodeDecodeError as exc:
        raise ValueError(utf8_problem(str(path), exc, path)) from None
    if not rows:
        raise ValueError(f"{path}: no data rows")
    return rows


def numbers(rows: Sequence[Sequence[str]], column: int, path: Path) -> list[float]:
    """Column ``column`` of ``rows`` (``read_tsv``'s) as numbers; a cell that is not one
    raises ``ValueError`` naming the file."""
    out = []
    for row in rows:
        try:
            value = float(row[column])
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            raise ValueError(f"{_line_of(path, row)}: {row[column]!r} is not a finite number "
                             f"(row {row[:3]})")
        out.append(value)
    return out


def _line_of(path: Path, row: Sequence[str]) -> str:
    """``file:line`` of the first line of a tab-separated file that holds ``row`` (read again
    only to place an error); the file alone where none does."""
    with open(path, encoding="utf-8-sig", newline="") as fh:
        for lineno, line in enumerate(fh, start=1):
            if line.rstrip("\r\n").split("\t")[: len(row)] == list(row):
                return f"{path}:{lineno}"
    return str(path)


def pair_correlations(
    encoder: Encoder, triples: Sequence[tuple[str, str, float]]
) -> dict[str, float]:
    """Pearson and Spearman (percent) between cosine(a, b) and the gold score of each triple."""
    n = len(triples)
    emb = embed_unique(encoder, [t[0] for t in triples] + [t[1] for t in triples])
    return correlations(rowwise_cosine(emb[:n], emb[n:]), [t[2] for t in triples])


def correlations(scores: Sequence[float], gold: Sequence[float]) -> dict[str, float]:
    """Pearson and Spearman (percent) between ``scores`` and ``gold``; at least 3 pairs."""
    from scipy.stats import pearsonr, spearmanr

    if len(gold) < 3:
        raise ValueError(f"{len(gold)} scored pairs: a correlation needs at least 3")
    return {
        "pearson": percent(pearsonr(scores, gold).statistic),
        "spearman": percent(spearmanr(scores, gold).statistic),
    }


def stable_rank(*texts: str) -> bytes:
    """A hash of the texts (tab-joined) to sort by: a fixed pseudo-random order that every
    build and run agrees on."""
    return hashlib.blake2b("\t".join(texts).encode("utf-8"), digest_size=8).digest()


def percent(x: float) -> float:
    """A fraction or correlation as a percent rounded to 4 decimals (JSON-friendly float)."""
    return round(float(x) * 100.0, 4)


def std_percent(values: np.ndarray) -> float:
    """Sample standard deviation (ddof=1) of fractions, in percent; 0.0 for a single value."""
    values = np.asarray(values, dtype=np.float64)
    return percent(values.std(ddof=1)) if len(values) > 1 else 0.0


class Task(ABC):
    """One benchmark task: reads its data, embeds it, returns metrics in percent.

    Subclasses set ``name``, ``main_metric`` and ``required`` (paths relative to the data folder
    that must exist; a trailing "/" marks a folder) and implement :meth:`evaluate`.
    """

    name: str = "task"
    main_metric: str = "acc"
    required: tuple[str, ...] = ()
    description: str = ""
    supports_noise: bool = False
    noise: str | None = None

    @property
    def base_name(self) -> str:
        """The task name without its noise suffix (``bird`` for ``bird+typo``)."""
        return self.name.split("+", 1)[0]

    def _set_noise(self, noise: str | None) -> None:
        """Validate ``noise`` and set it with the matching name (``<base>+<noise>``)."""
        check_noise(noise)
        if noise is not None and not self.supports_noise:
            raise ValueError(f"task {self.base_name!r} does not support noise")
        base = self.base_name
        self.noise = noise
        self.name = f"{base}+{noise}" if noise else base

    def with_noise(self, noise: str | None) -> Task:
        """A copy of this task with test-side ``noise`` (ValueError if unsupported or unknown)."""
        task = copy.copy(self)
        task._set_noise(noise)
        return task

    def perturb(self, strings: Sequence[str]) -> list[str]:
        """``strings`` with this task's noise (a plain copy when it has none)."""
        return perturb(strings, self.noise)

    def check_data(self, data_dir: Path) -> None:
        """Raise FileNotFoundError if a required file of this task is missing (before any work)."""
        for rel in self.required:
            kind = "folder" if rel.endswith("/") else "file"
            require_path(Path(data_dir), rel.rstrip("/"), kind)

    def run(self, encoder: Encoder, data_dir: Path, quick: bool = False) -> dict[str, float]:
        """Check the data, then evaluate ``encoder``; metrics are percentages."""
        self.check_data(Path(data_dir))
        return self.evaluate(encoder, Path(data_dir), quick=quick)

    @abstractmethod
    def evaluate(self, encoder: Encoder, data_dir: Path, quick: bool = False) -> dict[str, float]:
        """Compute the metrics (percent) of ``encoder`` on this task."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, main_metric={self.main_metric!r})"


def markdown_table(headers: list[str], rows: list[list[str]]) -> str:
    """A Markdown table; a cell stays one cell (its line breaks flattened, ``|`` escaped: a
    model folder or an alias kind may hold either)."""
    headers = [_cell(h) for h in headers]
    rows = [[_cell(c) for c in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
              for i, h in enumerate(headers)]
    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"
    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(headers), sep, *(line(r) for r in rows)])


def _cell(text: str) -> str:
    return md_plain(str(text)).replace("|", "\\|")
