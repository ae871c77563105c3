"""LOVE-style pre-training of PEARL's character encoder: mimic the backbone from characters.

PEARL's char path is LOVE (Chen et al. 2022), which is first trained to reproduce pretrained
word vectors from (typo-augmented) spellings and only then joins the phrase encoder. Trained from
scratch alongside the transformer instead, our byte CNN learns surface features that scatter
entity clusters once the projection gives them weight (see the README). This module gives the
CNN the LOVE start: its output is pulled towards the frozen backbone's mean-pooled vector of the
*clean* phrase, from the clean or a char-augmented spelling, with an in-batch InfoNCE term (the
direction) plus a mean-squared error (the scale, so the projection sees the backbone's units).
The steps run on :class:`~phrasekit.training.core.trainer.Trainer` (seeding, checkpoints, history).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from phrasekit.phrases.augment import CharAugment
from phrasekit.training.core.checkpoint import checkpoint_folder
from phrasekit.training.core.config import config_hash
from phrasekit.training.core.losses import InfoNCELoss
from phrasekit.training.core.trainer import Trainer

logger = logging.getLogger(__name__)

#: Steps between the history rows (and checkpoints) of the mimicry.
LOG_EVERY = 250


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


class CharMimicTask:
    """The mimicry as a :class:`~phrasekit.training.core.trainer.TrainingTask`: only the char
    encoder trains, towards fixed backbone targets of a seeded sample of the phrases."""

    def __init__(self, char: nn.Module, phrases: list[str], targets: torch.Tensor,
                 cfg: CharMimicConfig, seed: int) -> None:
        self.model = char
        self.optimizer = torch.optim.Adam(char.parameters(), lr=cfg.lr)
        self.phrases, self.targets, self.cfg, self.seed = phrases, targets, cfg, seed
        self.typo, self.nce = CharAugment(), InfoNCELoss(cfg.temperature)

    def fingerprint(self) -> str:
        return config_hash(self.cfg, tuple(asdict(self.cfg)), seed=self.seed,
                           phrases=len(self.phrases))

    def lr_factor(self, step: int) -> float:
        return 1.0

    def step_loss(self, step: int, rng: random.Random) -> tuple[torch.Tensor, dict[str, float]]:
        """InfoNCE on directions plus MSE on the vectors, for a sample of (typo'd) phrases."""
        cfg = self.cfg
        idx = np.random.default_rng([self.seed, 11, step]).integers(0, len(self.phrases),
                                                                    cfg.batch_size)
        batch = [self.phrases[i] for i in idx]
        if cfg.typo_prob:
            batch = [(self.typo(t, rng) or t) if rng.random() < cfg.typo_prob else t
                     for t in batch]
        pred = self.model.encode_texts(batch)
        target = self.targets[torch.as_tensor(idx)].to(pred.device)
        loss_nce = self.nce(nn.functional.normalize(pred, dim=-1),
                            nn.functional.normalize(target, dim=-1))
        loss = loss_nce + cfg.mse_weight * nn.functional.mse_loss(pred, target)
        return loss, {"nce": float(loss_nce.detach()), "loss": float(loss.detach())}


def pretrain_char(model: Any, texts: Sequence[str], cfg: CharMimicConfig, seed: int = 0,
                  show_progress: bool = True, out_dir: str | Path | None = None
                  ) -> dict[str, Any]:
    """Train ``model.char`` (a CharCNN with a linear output) to mimic the backbone; returns a
    small report (settings, phrase count, loss history, minutes). The backbone, projection and
    heads are not touched. ``out_dir`` keeps the mimicry's own checkpoint, so an interrupted
    mimicry resumes; without one it runs in a temporary folder."""
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
    task = CharMimicTask(char, phrases, targets, cfg, seed)
    with checkpoint_folder(out_dir, prefix="char-mimicry-") as where:
        trainer = Trainer(where, total_steps=cfg.steps, seed=seed,
                          checkpoint_every=LOG_EVERY, show_progress=show_progress,
                          desc="char mimicry")
        result = trainer.fit(task)
    return {"settings": asdict(cfg), "phrases": len(phrases), "history": result.history,
            "minutes": round(result.seconds / 60, 2)}
