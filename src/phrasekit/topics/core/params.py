"""Parameter checks shared by the topic estimators (``check_params`` raises before long work)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

from phrasekit.phrases import PhraseExtractor


class TooFewDocumentsError(ValueError):
    """The corpus cannot fill the topics asked for: none, too few documents with words, or too
    few that differ (the pipeline names the corpus file in front of the message)."""


def check_int(name: str, value: Any, lo: int) -> None:
    """``value`` must be an integer (not a bool) >= ``lo``."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < lo:
        raise ValueError(f"{name} must be an integer >= {lo}, got {value!r}")


def check_share(name: str, value: Any, bounds: str = "[0, 1)") -> None:
    """``value`` must be a number in ``bounds``: ``"[0, 1)"``, ``"[0, 1]"`` or ``"(0, 1]"``."""
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    inside = {"[0, 1)": lambda v: 0.0 <= v < 1.0, "[0, 1]": lambda v: 0.0 <= v <= 1.0,
              "(0, 1]": lambda v: 0.0 < v <= 1.0}[bounds]
    if not ok or not inside(value):
        raise ValueError(f"{name} must be a number in {bounds}, got {value!r}")


def check_topics_k(n_topics: Any, k_range: Any) -> None:
    """A fixed ``n_topics`` (None or >= 2) and a ``(k_min, k_max)`` range with 2 <= k_min <=
    k_max."""
    if n_topics is not None:
        check_int("n_topics", n_topics, 2)
    try:
        k_min, k_max = k_range
    except (TypeError, ValueError) as exc:
        raise ValueError(f"k_range must be a pair (k_min, k_max), got {k_range!r}") from exc
    check_int("k_range[0]", k_min, 2)
    check_int("k_range[1]", k_max, 2)
    if k_min > k_max:
        raise ValueError(f"k_range must have k_min <= k_max, got {k_range!r}")


def check_extractor(extractor: Any) -> None:
    """None or a ``PhraseExtractor``."""
    if extractor is not None and not isinstance(extractor, PhraseExtractor):
        raise TypeError(f"extractor must be a PhraseExtractor, got {type(extractor).__name__}")


def resolve_progress(show_progress: bool | None) -> bool:
    """``show_progress`` as given; None: bars where someone watches (a terminal on stderr, or
    a notebook)."""
    if show_progress is not None:
        return bool(show_progress)
    return "ipykernel" in sys.modules or bool(getattr(sys.stderr, "isatty", lambda: False)())


def resolve_cache(cache_dir: str | Path | None) -> Path | None:
    """The vector cache folder: ``"auto"`` phrasekit's (``settings.vector_cache_dir``), a
    folder as given, None none."""
    from phrasekit.encoders.cache import check_cache_dir
    from phrasekit.settings import vector_cache_dir

    check_cache_dir(cache_dir)
    if cache_dir is None:
        return None
    return vector_cache_dir() if str(cache_dir) == "auto" else Path(cache_dir)


def given_embeddings(embeddings: Any, n_docs: int) -> np.ndarray | None:
    """Precomputed document vectors as float32 rows of unit length (zero rows kept: documents
    without words), checked to be one per document; None as it is."""
    if embeddings is None:
        return None
    try:
        X = np.asarray(embeddings, dtype=np.float32)
    except (TypeError, ValueError):
        raise ValueError(f"embeddings must be a numeric ({n_docs}, dim) array, got "
                         f"{type(embeddings).__name__}") from None
    if X.ndim != 2 or len(X) != n_docs:
        raise ValueError(f"embeddings must be one row per document, ({n_docs}, dim); got "
                         f"shape {X.shape}")
    if not np.isfinite(X).all():
        raise ValueError("embeddings hold NaN or infinite values")
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    return np.divide(X, norms, out=np.zeros_like(X), where=norms > 0)
