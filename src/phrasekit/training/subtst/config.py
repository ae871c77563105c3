"""SubTST's optimisation settings, apart from the torch training code.

Kept free of torch so that ``phrasekit train subtst --help`` (whose options these settings
define) loads without :mod:`phrasekit.training.subtst.task`, which re-exports
:class:`SubTSTTrainingConfig`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class SubTSTTrainingConfig:
    """Optimisation settings (shared by all variants of a comparison)."""

    epochs: int = 8
    batch_size: int = 32
    lr: float = 1e-3
    layer_lr: float = 2e-5
    weight_decay: float = 0.01
    warmup: float = 0.1
    seed: int = 0
    lda_max_iter: int = 10

    def __post_init__(self) -> None:
        if self.epochs < 1 or self.batch_size < 1:
            raise ValueError("epochs and batch_size must be >= 1")
        if not 0.0 <= self.warmup < 1.0:
            raise ValueError(f"warmup must be in [0, 1), got {self.warmup}")
