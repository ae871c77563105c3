"""Small helpers shared by the training configs: fail fast on settings that cannot work, and
record settings and folders in saved reports without machine-specific paths."""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

from phrasekit.errors import Check, raise_failed

__all__ = ["Check", "budget_checks", "config_hash", "finite_checks", "portable_path",
           "portable_settings", "raise_failed", "require_files"]


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


def finite_checks(cfg: Any) -> list[Check]:
    """Every number setting of a config dataclass is finite: an infinite temperature or
    margin would train to the end and fail only when the model is saved."""
    return [(math.isfinite(v), f"{f.name} must be a finite number, got {v}")
            for f in fields(cfg) if isinstance(v := getattr(cfg, f.name), float)]


def require_files(data_dir: str | Path, names: tuple[str, ...], build: str) -> None:
    """The dataset folder holds every file of ``names`` (FileNotFoundError naming the first
    missing one and ``build``, the command that makes them)."""
    if Path(data_dir).exists() and not Path(data_dir).is_dir():
        raise NotADirectoryError(f"--data {data_dir} is a file, not a dataset folder ({build} "
                                 "makes one)")
    for name in names:
        if not (Path(data_dir) / name).is_file():
            raise FileNotFoundError(f"{Path(data_dir) / name} missing: build the dataset first "
                                    f"({build})")


def config_hash(cfg: Any, keys: tuple[str, ...], **extra: Any) -> str:
    """Short hash of the config fields ``keys`` (and ``extra`` values): the fingerprint that
    a checkpoint is checked against before a run resumes from it."""
    d = asdict(cfg)
    blob = json.dumps({**{k: d[k] for k in keys}, **extra}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def portable_path(path: str | Path | None, parts: int = 1) -> str | None:
    """``path`` as a saved report records it: a relative path as given, an absolute one by its
    last ``parts`` components only (reports and model configs hold no machine's folders)."""
    if path is None:
        return None
    p = Path(path)
    return str(p) if not p.is_absolute() else "/".join(p.parts[-parts:])


def portable_settings(cfg: Any, skip: tuple[str, ...] = ("show_progress", "notes")
                      ) -> dict[str, Any]:
    """A training config as saved with its model: every ``*_dir`` folder and ``*_file`` made
    portable (:func:`portable_path`), the fields in ``skip`` left out."""
    return {k: portable_path(v) if k.endswith(("_dir", "_file")) else v
            for k, v in asdict(cfg).items() if k not in skip}
