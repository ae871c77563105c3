"""What UCTopic's pre-training and its cluster-assisted fine-tuning (CCL) share: the span
instance type, mention keys, masking of positives, frozen word embeddings, the optimizer and
the in-batch contrastive loss."""

from __future__ import annotations

import random
from collections.abc import Sequence

import torch
from torch import nn

from phrasekit.encoders.span import SpanModel
from phrasekit.training.core.losses import InfoNCELoss

#: One span instance: (sentence, start, end) in characters.
Item = tuple[str, int, int]


def freeze_word_embeddings(model: SpanModel) -> int:
    """Freeze the backbone's input word embeddings (so the saved deltas stay small); returns
    how many parameters were frozen."""
    emb = model.backbone.get_input_embeddings()
    n = 0
    for p in emb.parameters():
        p.requires_grad_(False)
        n += p.numel()
    return n


def make_optimizer(model: nn.Module, lr: float, weight_decay: float) -> torch.optim.AdamW:
    """AdamW over the trainable parameters."""
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise ValueError("the model has no trainable parameters")
    return torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay)


def mention_key(text: str) -> str:
    """Normalised mention text (lower-cased, whitespace folded): instances with equal keys are
    the same phrase (UCTopic's second assumption)."""
    return " ".join(text.replace("’", "'").lower().split())


def masked_modes(n: int, keep_prob: float, rng: random.Random) -> list[str]:
    """``span`` (mention kept) with probability ``keep_prob``, else ``context`` (masked)."""
    return ["span" if rng.random() < keep_prob else "context" for _ in range(n)]


def in_batch_loss(model: SpanModel, anchors: Sequence[Item], positives: Sequence[Item],
                  positive_modes: Sequence[str], loss_fn: InfoNCELoss) -> torch.Tensor:
    """InfoNCE with in-batch negatives: anchors masked (``context``), positives encoded in
    ``positive_modes``; anchors and positives go through one forward pass."""
    b = len(anchors)
    emb = model.embed([*anchors, *positives], ["context"] * b + list(positive_modes))
    return loss_fn(emb[:b], emb[b:])
