"""A SubTST model's architecture settings, apart from its torch modules.

Kept free of torch so that ``phrasekit train subtst --help`` (whose options these settings
define) loads without :mod:`phrasekit.encoders.subtst`, which re-exports them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from phrasekit.models.backbones import BACKBONE_LAYERS

#: How token vectors become a sentence vector (Eqs. 5-6).
POOLINGS = ("mean", "max")
#: The pair head: a softmax classifier (paraphrase) or cosine + MSE (graded similarity).
KINDS = ("classification", "regression")


@dataclass
class SubTSTConfig:
    """Architecture of a SubTST model (saved as JSON).

    ``n_topics=0`` gives the baseline without topic features; ``topic_scale`` multiplies the
    topic probabilities (None: k, so a uniform distribution reads as all ones, on the scale of
    the transformer features).
    """

    backbone: str = "minilm"
    kind: str = "classification"
    num_labels: int = 2
    n_topics: int = 80
    topic_trainable: bool = False
    pooling: str = "mean"
    trainable_layers: int = 0
    dropout: float = 0.1
    max_seq_length: int = 64
    topic_scale: float | None = None
    score_scale: float = 5.0
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}")
        if self.pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, got {self.pooling!r}")
        if self.n_topics < 0 or self.n_topics == 1:
            raise ValueError(f"n_topics must be 0 (no topics) or >= 2, got {self.n_topics}")
        layers = BACKBONE_LAYERS.get(self.backbone, 10**9)
        if not 0 <= self.trainable_layers <= layers:
            raise ValueError(f"trainable_layers must be in [0, {layers}] ({self.backbone}'s "
                             f"layers), got {self.trainable_layers}")
        if self.topic_trainable and self.n_topics == 0:
            raise ValueError("topic_trainable trains the topic matrix, and n_topics 0 has none")
        if self.kind == "classification" and self.num_labels < 2:
            raise ValueError(f"classification needs num_labels >= 2, got {self.num_labels}")

    @property
    def variant(self) -> str:
        """Table name in the paper's style, e.g. ``SubTST-mean-train topic`` or ``SBERT-max``."""
        if self.n_topics == 0:
            return f"SBERT-{self.pooling}"
        return f"SubTST-{self.pooling}" + ("-train topic" if self.topic_trainable else "")

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form."""
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SubTSTConfig:
        """Inverse of ``to_dict``; unknown keys are an error (a newer format)."""
        unknown = set(d) - set(cls.__dataclass_fields__)
        if unknown:
            raise ValueError(f"unknown SubTST config keys {sorted(unknown)}")
        return cls(**d)
