"""Training losses as small modules (sentence-transformers style)."""

from __future__ import annotations

import torch
from torch import nn


class InfoNCELoss(nn.Module):
    """InfoNCE over cosine similarities: each anchor against its positive, the other positives
    of the batch (in-batch negatives) and any extra hard negatives.

    ``forward(anchors (B, d), positives (B, d), negatives (M, d) | None)`` with unit rows;
    target of anchor i is column i of ``[positives; negatives]``.
    """

    def __init__(self, temperature: float = 0.07) -> None:
        super().__init__()
        if temperature <= 0:
            raise ValueError(f"temperature must be > 0, got {temperature}")
        self.temperature = float(temperature)

    def forward(self, anchors: torch.Tensor, positives: torch.Tensor,
                negatives: torch.Tensor | None = None) -> torch.Tensor:
        """Mean cross-entropy of picking the right positive."""
        candidates = positives if negatives is None or len(negatives) == 0 else torch.cat(
            [positives, negatives], dim=0)
        logits = anchors @ candidates.T / self.temperature
        target = torch.arange(len(anchors), device=anchors.device)
        return nn.functional.cross_entropy(logits, target)


class TypeClassificationLoss(nn.Module):
    """Cross-entropy of the phrase-type head; items labelled ``-1`` are ignored."""

    def forward(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """Mean cross-entropy over labelled items (0 when none is labelled)."""
        if not torch.any(labels >= 0):
            return logits.sum() * 0.0
        return nn.functional.cross_entropy(logits, labels, ignore_index=-1)
