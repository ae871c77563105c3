"""Checks that fail fast with one clear message, shared by every layer."""

from __future__ import annotations

from collections.abc import Iterable

#: A condition that must hold and the message of the ``ValueError`` raised when it does not.
Check = tuple[bool, str]


def raise_failed(checks: Iterable[Check]) -> None:
    """Raise ``ValueError`` with the message of the first check that fails."""
    for ok, message in checks:
        if not ok:
            raise ValueError(message)
