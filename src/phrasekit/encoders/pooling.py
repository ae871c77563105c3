"""Pooling and normalisation, written once for every encoder.

``mean_pool`` averages token vectors under an attention mask (the sentence-transformers
recipe); ``l2_normalize`` gives unit rows (float32 by default) with zero rows left at zero.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike, DTypeLike

if TYPE_CHECKING:
    import torch


def mean_pool(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of ``hidden`` (batch, seq, dim) over the positions where ``mask`` (batch, seq) is 1."""
    m = mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * m).sum(dim=1) / m.sum(dim=1).clamp(min=1e-9)


def l2_normalize(x: ArrayLike, dtype: DTypeLike = np.float32) -> np.ndarray:
    """L2-normalise the last axis; zero vectors stay zero.

    ``dtype`` is the type computed in and returned: float32 (the encoder contract) unless a
    caller works in another precision (e.g. ``np.float64``; None keeps the input's type).
    """
    x = np.asarray(x, dtype=dtype)
    norms = np.linalg.norm(x, axis=-1, keepdims=True)
    np.maximum(norms, 1e-12, out=norms)
    return x / norms
