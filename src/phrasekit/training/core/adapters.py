"""Low-rank adapters (LoRA, Hu et al. 2021) for fine-tuning a large backbone on a CPU.

Every linear layer of the transformer blocks gets a trainable update ``scale * B @ A`` of rank
``r`` beside its frozen weight (``B`` starts at zero, so the adapted model equals the backbone);
everything else in the backbone stays frozen. After training, :func:`merge_adapters` folds the
updates into the weights, leaving a plain backbone whose changes are exactly of rank ``r``: the
model folder then stores them as low-rank factors (:func:`phrasekit.models.weights.backbone_deltas`)
and every later step (weight averaging, soups, export) sees an ordinary model.
"""

from __future__ import annotations

import logging
import math

import torch
from torch import nn

logger = logging.getLogger(__name__)


class LowRankLinear(nn.Module):
    """``base(x) + scale * (x @ A.T) @ B.T`` with ``base`` frozen and ``A``, ``B`` trainable."""

    def __init__(self, base: nn.Linear, rank: int, alpha: float) -> None:
        super().__init__()
        self.base = base
        self.base.requires_grad_(False)
        self.scale = alpha / rank
        self.lora_a = nn.Parameter(torch.empty(rank, base.in_features))
        self.lora_b = nn.Parameter(torch.zeros(base.out_features, rank))
        nn.init.kaiming_uniform_(self.lora_a, a=math.sqrt(5))  # as nn.Linear initialises

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        update = (x @ self.lora_a.t().to(x.dtype)) @ self.lora_b.t().to(x.dtype)
        return self.base(x) + self.scale * update

    def merged(self) -> nn.Linear:
        """The base layer with the update added to its weight (in place)."""
        with torch.no_grad():
            self.base.weight += self.scale * (self.lora_b @ self.lora_a)
        return self.base


def _is_target(name: str) -> bool:
    """Inside a transformer block (``encoder.layer.N``), not the pooler or the embeddings."""
    return ".layer." in f".{name}"


def _replace(root: nn.Module, name: str, module: nn.Module) -> None:
    """Put ``module`` where ``root``'s submodule ``name`` is."""
    parent_name, _, child = name.rpartition(".")
    setattr(root.get_submodule(parent_name) if parent_name else root, child, module)


def add_adapters(backbone: nn.Module, rank: int, alpha: float | None = None) -> int:
    """Freeze ``backbone`` and put a rank-``rank`` adapter beside each of its block linears
    (``alpha`` defaults to ``2 * rank``); returns how many layers got one."""
    if rank <= 0:
        raise ValueError(f"adapter rank must be > 0, got {rank}")
    backbone.requires_grad_(False)
    targets = [(name, module) for name, module in backbone.named_modules()
               if isinstance(module, nn.Linear) and _is_target(name)]
    if not targets:
        raise ValueError(f"{type(backbone).__name__}: no transformer-block linear layers to "
                         "put adapters on")
    for name, module in targets:
        _replace(backbone, name, LowRankLinear(module, rank, float(alpha or 2 * rank)))
    trainable = sum(p.numel() for p in backbone.parameters() if p.requires_grad)
    logger.info("adapters of rank %d on %d linear layers: %d trainable backbone parameters",
                rank, len(targets), trainable)
    return len(targets)


def merge_adapters(backbone: nn.Module) -> int:
    """Fold every adapter into its base layer's weight and put the plain layer back; returns
    how many were merged. The merged backbone has no trainable adapter parameters left."""
    found = [(name, module) for name, module in backbone.named_modules()
             if isinstance(module, LowRankLinear)]
    for name, module in found:
        _replace(backbone, name, module.merged())
    return len(found)
