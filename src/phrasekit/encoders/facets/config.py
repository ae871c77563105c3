"""A facet model's settings, apart from its torch code: the architecture and the NNSC solvers.

Kept free of torch so that the training config (and ``phrasekit train facets --help``, whose
options it defines) loads without the model (:mod:`phrasekit.encoders.facets.model`) or the
loss (:mod:`phrasekit.encoders.facets.loss`).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from phrasekit.encoders.facets.words import GLOVE_50D
from phrasekit.errors import raise_failed

#: How the NNSC coefficients are found: accelerated projected gradient or the paper's RMSprop.
METHODS = ("pgd", "rmsprop")


@dataclass
class FacetModelConfig:
    """Architecture of one facet model (defaults: our CPU-sized phrase model, K = 10)."""

    granularity: str = "phrase"
    n_facets: int = 10
    word_space: str = GLOVE_50D
    word_dim: int = 50
    hidden_dim: int = 50
    n_heads: int = 5
    encoder_layers: int = 3
    decoder_layers: int = 2
    ff_dim: int = 200
    dropout: float = 0.0
    max_len: int = 50
    cross_attention: bool = True

    def validate(self) -> None:
        """Fail fast on impossible architectures."""
        raise_failed([
            (self.granularity in ("phrase", "sentence"),
             f"granularity must be 'phrase' or 'sentence', got {self.granularity!r}"),
            (self.n_facets >= 1, f"n_facets (K) must be >= 1, got {self.n_facets}"),
            (self.word_dim >= 1 and self.hidden_dim >= 1, "dimensions must be >= 1"),
            (self.n_heads >= 1 and self.hidden_dim % self.n_heads == 0,
             f"hidden_dim {self.hidden_dim} must be a multiple of n_heads {self.n_heads}"),
            (self.encoder_layers >= 1 and self.decoder_layers >= 1, "need >= 1 layer each"),
            (self.ff_dim >= 1, f"ff_dim must be >= 1, got {self.ff_dim}"),
            (0.0 <= self.dropout < 1.0, f"dropout must be in [0, 1), got {self.dropout}"),
            (self.max_len >= 1, f"max_len must be >= 1, got {self.max_len}"),
        ])

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> FacetModelConfig:
        """Rebuild from ``asdict`` output; unknown keys are an error (a newer format)."""
        known = {f.name for f in fields(cls)}
        extra = sorted(set(d) - known)
        if extra:
            raise ValueError(f"unknown facet model settings {extra}; upgrade phrasekit")
        return cls(**d)
