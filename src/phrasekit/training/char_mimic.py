"""LOVE-style pre-training of PEARL's character encoder: mimic the backbone from characters.

PEARL's char path is LOVE (Chen et al. 2022), which is first trained to reproduce pretrained
word vectors from (typo-augmented) spellings and only then joins the phrase encoder. Trained from
scratch alongside the transformer instead, our byte CNN learns surface features that scatter
entity clusters once the projection gives them weight (see the README). This module gives the
CNN the LOVE start: its output is pulled towards the frozen backbone's mean-pooled vector of the
*clean* phrase, from the clean or a char-augmented spelling, with an in-batch InfoNCE term (the
direction) plus a mean-squared error (the scale, so the projection sees the backbone's units).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from phrasekit.phrases.augment import CharAugment
from phrasekit.training.losses import InfoNCELoss

logger = logging.getLogger(__name__)


@dataclass
class CharMimicConfig:
    """Settings of the mimicry pre-training (steps = 0 switches it off)."""

    steps: int = 1500
    batch_size: int = 256
    lr: float = 1e-3
    temperature: float = 0.07
    mse_weight: float = 1.0
    typo_prob: float = 0.5
    max_phrases: int = 40_000
    target_batch: int = 256

    def validate(self) -> None:
        """Fail fast on settings that cannot train."""
        if self.steps < 0 or self.batch_size < 2 or self.max_phrases < 2:
            raise ValueError("char mimicry needs steps >= 0, batch_size >= 2, max_phrases >= 2")
        if not 0 <= self.typo_prob <= 1:
            raise ValueError(f"typo_prob must be in [0, 1], got {self.typo_prob}")


@torch.no_grad()
def backbone_targets(model: Any, texts: Sequence[str], batch_size: int = 256,
                     show_progress: bool = True) -> torch.Tensor:
    """The frozen backbone's mean-pooled vectors of ``texts`` (n, hidden), dropout off."""
    was_training = model.training
    model.eval()
    out = []
    for i in tqdm(range(0, len(texts), batch_size), desc="mimicry targets", unit="batch",
                  disable=not show_progress):
        out.append(model.pooled(texts[i : i + batch_size]))
    model.train(was_training)
    return torch.cat(out, dim=0)


def pretrain_char(model: Any, texts: Sequence[str], cfg: CharMimicConfig, seed: int = 0,
                  show_progress: bool = True) -> dict[str, Any]:
    """Train ``model.char`` (a CharCNN with a linear output) to mimic the backbone; returns a
    small report (losses, phrase count). The backbone, projection and head are not touched."""
    cfg.validate()
    char = model.char
    if char is None or char.out is None:
        raise ValueError("char mimicry needs a char encoder with a linear output layer "
                         "(CharCNNConfig(out_linear=True))")
    if cfg.steps == 0:
        return {"steps": 0}
    order = np.random.default_rng([seed, 7]).permutation(len(texts))[: cfg.max_phrases]
    phrases = [texts[i] for i in order]
    targets = backbone_targets(model, phrases, cfg.target_batch, show_progress)
    if targets.shape[1] != char.config.out_dim:
        raise ValueError(f"char output size {char.config.out_dim} != backbone size "
                         f"{targets.shape[1]}")
    typo, nce = CharAugment(), InfoNCELoss(cfg.temperature)
    optimizer = torch.optim.Adam(char.parameters(), lr=cfg.lr)
    char.train()
    history, window = [], []
    for step in tqdm(range(cfg.steps), desc="char mimicry", unit="step",
                     disable=not show_progress):
        rng = random.Random(seed * 1_000_003 + step)
        idx = np.random.default_rng([seed, 11, step]).integers(0, len(phrases), cfg.batch_size)
        batch = [phrases[i] for i in idx]
        if cfg.typo_prob:
            batch = [(typo(t, rng) or t) if rng.random() < cfg.typo_prob else t for t in batch]
        pred = char.encode_texts(batch)
        target = targets[torch.as_tensor(idx)].to(pred.device)
        loss_nce = nce(nn.functional.normalize(pred, dim=-1),
                       nn.functional.normalize(target, dim=-1))
        loss = loss_nce + cfg.mse_weight * nn.functional.mse_loss(pred, target)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        window.append((float(loss_nce.detach()), float(loss.detach())))
        if (step + 1) % 250 == 0 or step + 1 == cfg.steps:
            nce_mean, total = np.mean(window, axis=0)
            history.append({"step": step + 1, "nce": round(float(nce_mean), 4),
                            "loss": round(float(total), 4)})
            window = []
            logger.info("char mimicry step %d: InfoNCE %.4f, total %.4f", step + 1, nce_mean,
                        total)
    return {"settings": asdict(cfg), "phrases": len(phrases), "history": history}
