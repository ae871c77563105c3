"""PEARL's architecture settings, apart from its torch modules: the char CNN's shape and the
model's (both saved in a model folder's config.json).

Kept free of torch so that ``phrasekit train pearl --help`` and the training config can read
them without loading the model code (:mod:`phrasekit.encoders.char`,
:mod:`phrasekit.encoders.pearl`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

#: What the type head reads: ``[p; c]`` (the feature vectors) or the final embedding.
TYPE_HEAD_INPUTS = ("features", "output")


@dataclass(frozen=True)
class CharCNNConfig:
    """Shape of the character encoder (saved in the model's config.json)."""

    emb_dim: int = 48
    widths: tuple[int, ...] = (2, 3, 4, 5)
    filters: int = 96
    max_chars: int = 64
    out_linear: bool = False  # a final linear layer, so the output can take any sign (mimicry)

    @property
    def out_dim(self) -> int:
        """Size of the output vector: one max-pooled feature per filter and width."""
        return self.filters * len(self.widths)

    def to_dict(self) -> dict:
        """JSON-friendly form."""
        d = asdict(self)
        d["widths"] = list(self.widths)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> CharCNNConfig:
        """Inverse of ``to_dict``."""
        d = dict(d)
        d["widths"] = tuple(d.get("widths", cls.widths))
        return cls(**d)


@dataclass
class PearlConfig:
    """Everything needed to rebuild a ``PearlModel`` (saved as JSON)."""

    backbone: str = "minilm"
    max_seq_length: int = 32
    use_char: bool = True
    char: CharCNNConfig = field(default_factory=CharCNNConfig)
    types: list[str] = field(default_factory=list)
    type_loss: bool = True
    type_head_on: str = "features"  # "features" ([p; c]) or "output" (the final embedding)
    supersenses: list[str] = field(default_factory=list)  # labels of the supersense head
    delta_rank: int | None = None  # adapter fine-tunes: backbone changes stored at this rank
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.type_head_on not in TYPE_HEAD_INPUTS:
            raise ValueError(f"type_head_on must be one of {TYPE_HEAD_INPUTS}, "
                             f"got {self.type_head_on!r}")

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form."""
        return {
            "backbone": self.backbone, "max_seq_length": self.max_seq_length,
            "use_char": self.use_char, "char": self.char.to_dict(), "types": list(self.types),
            "type_loss": self.type_loss, "type_head_on": self.type_head_on,
            "supersenses": list(self.supersenses), "extra": self.extra,
            **({"delta_rank": self.delta_rank} if self.delta_rank else {}),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PearlConfig:
        """Inverse of ``to_dict``; unknown keys are an error (a newer format)."""
        d = dict(d)
        char = CharCNNConfig.from_dict(d.pop("char", {}))
        known = {"backbone", "max_seq_length", "use_char", "types", "type_loss", "type_head_on",
                 "supersenses", "extra", "delta_rank"}
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"unknown PEARL config keys {sorted(unknown)}")
        return cls(char=char, **d)
