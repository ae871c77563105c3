"""Small helpers shared by the training configs: fail fast on settings that cannot work."""

from __future__ import annotations

from phrasekit.errors import Check, raise_failed

__all__ = ["Check", "budget_checks", "raise_failed"]

def budget_checks(batch_size: int, lr: float, max_steps: int | None,
                  max_minutes: float | None, checkpoint_every: int, min_batch: int = 2,
                  need_budget: bool = True) -> list[Check]:
    """The checks every resumable training loop shares: batch, learning rate, checkpoint
    interval and the step / time budget (``need_budget``: at least one of the two is set)."""
    checks = [
        (batch_size >= min_batch, f"batch_size must be >= {min_batch}, got {batch_size}"),
        (lr > 0, f"lr must be > 0, got {lr}"),
        (checkpoint_every >= 1, "checkpoint_every must be >= 1"),
        (max_steps is None or max_steps >= 1, "max_steps must be >= 1"),
        (max_minutes is None or max_minutes > 0, "max_minutes must be > 0"),
    ]
    if need_budget:
        checks.append((max_steps is not None or max_minutes is not None,
                       "give max_steps or max_minutes (or both): the run would never end"))
    return checks
