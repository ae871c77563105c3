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


class TripletLoss(nn.Module):
    """Phrase-BERT's triplet loss (Eq. 1): ``max(0, margin - ||a - n|| + ||a - p||)``, batch mean.

    ``forward(anchors, positives, negatives)``, each ``(B, d)``; ``||.||`` is the Euclidean
    distance between the rows as given (the caller decides whether they are normalised).
    """

    def __init__(self, margin: float = 1.0) -> None:
        super().__init__()
        if margin <= 0:
            raise ValueError(f"margin must be > 0, got {margin}")
        self.margin = float(margin)

    def forward(self, anchors: torch.Tensor, positives: torch.Tensor,
                negatives: torch.Tensor) -> torch.Tensor:
        """Mean hinge over the batch of (distance to positive - distance to negative + margin)."""
        if not anchors.shape == positives.shape == negatives.shape:
            raise ValueError(f"shapes differ: {tuple(anchors.shape)}, {tuple(positives.shape)}, "
                             f"{tuple(negatives.shape)}")
        d_pos = torch.linalg.vector_norm(anchors - positives, dim=-1)
        d_neg = torch.linalg.vector_norm(anchors - negatives, dim=-1)
        return torch.relu(self.margin - d_neg + d_pos).mean()
