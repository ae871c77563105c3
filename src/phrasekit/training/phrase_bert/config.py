"""The settings of a Phrase-BERT run, apart from the torch training code.

Kept free of torch so that ``phrasekit train phrase-bert --help`` (whose options these
settings define) loads without :mod:`phrasekit.training.phrase_bert.task`, which re-exports
:class:`PhraseBertTrainingConfig`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from phrasekit.training.core.config import (
    budget_checks,
    config_hash,
    finite_checks,
    raise_failed,
    require_files,
)
from phrasekit.training.phrase_bert.data import CONTEXT_FILE, PARAPHRASE_FILE

#: The settings that fix a run's trajectory (with the data sizes): a checkpoint resumes only
#: under the same values.
_TRAJECTORY = ("data_dir", "backbone", "seed", "batch_size", "lr", "warmup", "epochs", "margin",
               "normalize", "use_paraphrase", "use_context", "max_paraphrase", "max_context",
               "source_repeat", "phrase_tokens", "context_tokens", "freeze_embeddings")


@dataclass
class PhraseBertTrainingConfig:
    """Hyper-parameters of one Phrase-BERT run (defaults: the paper's, on MiniLM)."""

    data_dir: str
    out_dir: str
    backbone: str = "minilm"
    seed: int = 0
    batch_size: int = 16
    lr: float = 2e-5
    warmup: float = 0.1
    epochs: int = 1
    margin: float = 1.0
    normalize: bool = False
    use_paraphrase: bool = True
    use_context: bool = True
    max_paraphrase: int | None = None
    max_context: int | None = None
    # paraphrase triplets of a source repeated N times per epoch, e.g. {"ppdb": 10}
    source_repeat: dict[str, int] = field(default_factory=dict)
    phrase_tokens: int = 16
    context_tokens: int = 128
    freeze_embeddings: bool = True
    max_steps: int | None = None
    max_minutes: float | None = None
    checkpoint_every: int = 100
    alphas: tuple[float, ...] = (0.3, 0.4, 0.5, 0.6, 0.7, 0.85, 1.0)
    alpha: float | None = None
    dev_data_dir: str | None = None
    num_threads: int | None = None
    show_progress: bool = True
    notes: dict[str, Any] = field(default_factory=dict)

    def fingerprint(self, sizes: dict[str, int]) -> str:
        """Hash of what fixes the training trajectory (settings and data sizes), for resuming."""
        return config_hash(self, _TRAJECTORY, sizes=sizes)

    def validate(self, check_data: bool = True) -> None:
        """Fail fast on nonsense settings and (``check_data``) a missing dataset: the
        settings are checked before a dataset is built for them."""
        if not (self.use_paraphrase or self.use_context):
            raise ValueError("both datasets are disabled (--no-paraphrase and --no-context)")
        raise_failed([
            *finite_checks(self),
            *budget_checks(self.batch_size, self.lr, self.max_steps, self.max_minutes,
                           self.checkpoint_every, min_batch=1, need_budget=False),
            (self.margin > 0, f"margin must be > 0, got {self.margin}"),
            (0 <= self.warmup < 1, f"warmup must be in [0, 1), got {self.warmup}"),
            (self.epochs >= 1, f"epochs must be >= 1, got {self.epochs}"),
            (self.phrase_tokens >= 4, f"phrase_tokens must be >= 4, got {self.phrase_tokens}"),
            (self.context_tokens >= 8,
             f"context_tokens must be >= 8, got {self.context_tokens}"),
            (self.max_paraphrase is None or self.max_paraphrase >= 0,
             "max_paraphrase must be >= 0"),
            (self.max_context is None or self.max_context >= 0, "max_context must be >= 0"),
            (all(isinstance(n, int) and n >= 1 for n in self.source_repeat.values()),
             f"source_repeat counts must be integers >= 1, got {self.source_repeat}"),
            (self.alpha is None or 0 <= self.alpha <= 1,
             f"alpha must be in [0, 1], got {self.alpha}"),
            (bool(self.alphas) and all(0 <= a <= 1 for a in self.alphas),
             f"alphas must be a non-empty list of values in [0, 1], got {self.alphas}"),
            (self.use_paraphrase or not self.source_repeat,
             "source_repeat repeats paraphrase sources, and use_paraphrase is off"),
            (self.use_paraphrase or self.max_paraphrase is None,
             "max_paraphrase limits the paraphrase triplets, and use_paraphrase is off"),
            (self.use_context or self.max_context is None,
             "max_context limits the context triplets, and use_context is off"),
            ((self.use_paraphrase and self.max_paraphrase != 0)
             or (self.use_context and self.max_context != 0),
             "max_paraphrase and max_context leave no triplet to train on"),
        ])
        if not check_data:
            return
        require_files(self.data_dir, tuple(
            name for use, name in ((self.use_paraphrase, PARAPHRASE_FILE),
                                   (self.use_context, CONTEXT_FILE)) if use),
            "phrasekit train phrase-bert-data --out DIR")
