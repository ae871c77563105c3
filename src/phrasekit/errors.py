"""Checks that fail fast with one clear message, shared by every layer."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

#: A condition that must hold and the message of the ``ValueError`` raised when it does not.
Check = tuple[bool, str]


def raise_failed(checks: Iterable[Check]) -> None:
    """Raise ``ValueError`` with the message of the first check that fails."""
    for ok, message in checks:
        if not ok:
            raise ValueError(message)


def check_int(name: str, value: Any, minimum: int) -> None:
    """An integer setting of at least ``minimum`` (TypeError / ValueError naming it)."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value}")


def check_float(name: str, value: Any, lo: float, hi: float | None) -> None:
    """A finite number setting in ``[lo, hi]`` (TypeError / ValueError naming it)."""
    if isinstance(value, bool) or not isinstance(value, int | float | np.floating | np.integer):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    if not np.isfinite(value) or value < lo or (hi is not None and value > hi):
        bound = f"[{lo}, {hi}]" if hi is not None else f">= {lo}"
        raise ValueError(f"{name} must be {bound}, got {value}")
