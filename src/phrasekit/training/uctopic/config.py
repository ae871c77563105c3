"""The settings of a UCTopic pre-training run, apart from the torch training code.

Kept free of torch so that ``phrasekit train uctopic --help`` (whose options these settings
define) loads without :mod:`phrasekit.training.uctopic.task`, which re-exports
:class:`UCTopicConfig`.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from phrasekit.training.core.config import budget_checks, finite_checks, raise_failed

#: Token positions of the packaged backbones (BERT-style, 512).
MAX_POSITIONS = 512


@dataclass
class UCTopicConfig:
    """Settings of one pre-training run (defaults: the paper's, scaled to a 2-core CPU).

    ``log_every``: steps between running-loss lines in the log (the report's history holds
    the mean loss of every checkpoint interval)."""

    data_dir: str
    out_dir: str
    backbone: str = "minilm"
    seed: int = 0
    batch_size: int = 32
    lr: float = 5e-5
    weight_decay: float = 0.0
    warmup_steps: int = 50
    temperature: float = 0.05
    keep_prob: float = 0.5
    max_length: int = 64
    max_pairs: int | None = None
    freeze_embeddings: bool = True
    max_steps: int | None = None
    max_minutes: float | None = 80.0
    checkpoint_every: int = 100
    log_every: int = 10
    num_threads: int | None = 1
    show_progress: bool = True
    notes: dict[str, Any] = field(default_factory=dict)

    def validate(self) -> None:
        """Fail fast on nonsense settings."""
        raise_failed([
            *finite_checks(self),
            *budget_checks(self.batch_size, self.lr, self.max_steps, self.max_minutes,
                           self.checkpoint_every),
            (self.temperature > 0, f"temperature must be > 0, got {self.temperature}"),
            (0 <= self.keep_prob <= 1, f"keep_prob must be in [0, 1], got {self.keep_prob}"),
            (8 <= self.max_length <= MAX_POSITIONS,
             f"max_length must be in [8, {MAX_POSITIONS}] (the backbone's positions), got "
             f"{self.max_length}"),
            (self.warmup_steps >= 0, "warmup_steps must be >= 0"),
            (self.log_every >= 1, "log_every must be >= 1"),
            (self.max_pairs is None or self.max_pairs >= 2, "max_pairs must be >= 2"),
        ])

    def fingerprint(self, n_pairs: int) -> str:
        """Hash of what fixes the trajectory (so a resume with other settings is refused)."""
        keys = ("backbone", "seed", "batch_size", "lr", "weight_decay", "warmup_steps",
                "temperature", "keep_prob", "max_length", "max_pairs", "freeze_embeddings")
        d = asdict(self)
        blob = json.dumps({"method": "uctopic-pretrain", **{k: d[k] for k in keys},
                           "data": Path(self.data_dir).name, "pairs": n_pairs}, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]
