"""The settings of a facet training run, apart from the torch training loop.

Kept free of torch so that ``phrasekit train facets --help`` (whose options these settings
define) loads without :mod:`phrasekit.training.facets.task`, which re-exports
:class:`FacetTrainingConfig`.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from phrasekit.encoders.facets.config import METHODS, FacetModelConfig
from phrasekit.encoders.facets.words import WordSpace
from phrasekit.training.core.config import budget_checks, finite_checks, raise_failed


@dataclass
class FacetTrainingConfig:
    """Model size, optimiser, NNSC and budget settings of one run."""

    data_dir: str
    out_dir: str
    n_facets: int = 10
    hidden_dim: int = 50
    n_heads: int = 5
    encoder_layers: int = 3
    decoder_layers: int = 2
    ff_dim: int = 200
    dropout: float = 0.0
    cross_attention: bool = True
    max_len: int = 50
    batch_size: int = 128
    lr: float = 1e-3
    weight_decay: float = 0.01
    warmup_steps: int = 200
    decay_steps: int | None = None
    lam: float = 0.4
    coeff_steps: int = 30
    coeff_method: str = "pgd"
    length_buckets: int = 50
    seed: int = 0
    max_steps: int | None = None
    max_minutes: float | None = 60.0
    checkpoint_every: int = 500
    val_examples: int = 2048
    num_threads: int | None = 1
    show_progress: bool = True
    notes: dict[str, Any] = field(default_factory=dict)

    def validate(self) -> None:
        """Fail fast on nonsense settings and a missing dataset."""
        raise_failed([
            *finite_checks(self),
            *budget_checks(self.batch_size, self.lr, self.max_steps, self.max_minutes,
                           self.checkpoint_every),
            (1 <= self.n_facets <= 256, f"n_facets must be in [1, 256], got {self.n_facets}"),
            (0 <= self.dropout < 1, f"dropout must be in [0, 1), got {self.dropout}"),
            (self.weight_decay >= 0, "weight_decay must be >= 0"),
            (self.warmup_steps >= 0, "warmup_steps must be >= 0"),
            (self.decay_steps is None or self.decay_steps >= 1, "decay_steps must be >= 1"),
            (self.lam >= 0, f"lam must be >= 0, got {self.lam}"),
            (self.coeff_steps >= 1, "coeff_steps must be >= 1"),
            (self.coeff_method in METHODS, f"coeff_method must be one of {METHODS}"),
            (self.val_examples >= 0, "val_examples must be >= 0"),
            (self.length_buckets >= 1, "length_buckets must be >= 1"),
        ])
        if not (Path(self.data_dir) / "meta.json").is_file():
            raise FileNotFoundError(f"{self.data_dir} has no meta.json: build the dataset "
                                    "first (phrasekit.training.facets.data.build_facet_dataset)")

    def model_config(self, granularity: str, word_space: WordSpace) -> FacetModelConfig:
        """The architecture these settings describe."""
        return FacetModelConfig(
            granularity=granularity, n_facets=self.n_facets, word_space=word_space.name,
            word_dim=word_space.dim, hidden_dim=self.hidden_dim, n_heads=self.n_heads,
            encoder_layers=self.encoder_layers, decoder_layers=self.decoder_layers,
            ff_dim=self.ff_dim, dropout=self.dropout, max_len=self.max_len,
            cross_attention=self.cross_attention)

    def fingerprint(self, data_meta: dict[str, Any]) -> str:
        """Hash of what fixes the trajectory (settings and the dataset's content, wherever its
        folder is), for resuming."""
        skip = {"data_dir", "out_dir", "max_steps", "max_minutes", "checkpoint_every",
                "num_threads", "show_progress", "notes", "val_examples"}
        d = {k: v for k, v in asdict(self).items() if k not in skip}
        data = {k: data_meta.get(k) for k in ("examples", "validation", "granularity",
                                               "word_space_fingerprint", "settings")}
        blob = json.dumps({"method": "multi-facet-nnsc", **d, "data": data}, sort_keys=True,
                          default=str)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]
