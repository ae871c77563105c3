"""UCTopic on CPU: contrastive pre-training of a span encoder (paper §3.1, §4.1).

``train_uctopic(UCTopicConfig(data_dir=..., out_dir=...))``: every step takes ``batch_size``
pairs (two different sentences with the same mention, built by
:mod:`phrasekit.training.uctopic.data`; no mention twice in a batch, so no pair is a false
negative of another), encodes the anchor with its mention masked (``context`` mode) and the
positive with its mention kept with probability ``keep_prob`` (p = 0.5) and masked otherwise,
and minimises InfoNCE with in-batch negatives at τ = 0.05 (Eq. 2). AdamW; a linear warm-up
then a constant learning rate (the run is bounded by time, not by a planned number of steps);
word embeddings frozen (so the saved deltas stay small); sequences cut at ``max_length``
tokens around the span. UCTopic also keeps LUKE's masked-language-model loss; it is left out
here (MiniLM ships without an MLM head).

The loop is :class:`~phrasekit.training.core.trainer.Trainer`'s: ``checkpoint.safetensors`` every
``checkpoint_every`` steps and at the end, a bit-exact resume when the same config is rerun,
``max_minutes`` over all resumes, ``max_steps`` optional (without it the clock ends the run).
The span encoder is saved to ``out_dir/model`` (:class:`~phrasekit.encoders.span.SpanEncoder`
folder) with ``out_dir/report.json``.

Cluster-assisted contrastive learning (CCL, §3.2) is in
:mod:`phrasekit.training.uctopic.ccl`.
"""

from __future__ import annotations

import hashlib
import logging
import random
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from phrasekit.encoders.span import DEFAULT_MAX_LENGTH, SpanEncoder, SpanModel
from phrasekit.io import write_json
from phrasekit.registry import load_span
from phrasekit.training.core.config import portable_settings
from phrasekit.training.core.losses import InfoNCELoss
from phrasekit.training.core.trainer import Trainer, TrainResult
from phrasekit.training.uctopic.common import (
    Item,
    freeze_word_embeddings,
    in_batch_loss,
    make_optimizer,
    masked_modes,
)
from phrasekit.training.uctopic.config import UCTopicConfig
from phrasekit.training.uctopic.data import PairData, load_pair_data

__all__ = [
    "MODEL_DIR",
    "REPORT",
    "BatchSchedule",
    "PretrainTask",
    "UCTopicConfig",
    "distinct_mention_batches",
    "pretrain_step",
    "train_uctopic",
    "warmup_constant",
]

logger = logging.getLogger(__name__)

MODEL_DIR = "model"
REPORT = "report.json"


def distinct_mention_batches(mentions: np.ndarray, batch_size: int, seed: int, epoch: int
                             ) -> list[np.ndarray]:
    """One epoch of batches (indices into ``mentions``) in a seeded order, no mention twice in
    a batch (a clashing pair waits for the next batch); batches of fewer than 2 are dropped."""
    order = np.random.default_rng([seed, epoch]).permutation(len(mentions))
    pending = deque(order.tolist())
    batches: list[np.ndarray] = []
    while pending:
        batch: list[int] = []
        seen: set[int] = set()
        skipped: list[int] = []
        while pending and len(batch) < batch_size:
            i = pending.popleft()
            m = int(mentions[i])
            if m in seen:
                skipped.append(i)
                if len(skipped) > 4 * batch_size:  # only a few mentions left: stop scanning
                    break
            else:
                batch.append(i)
                seen.add(m)
        pending.extendleft(reversed(skipped))
        if len(batch) < 2:
            break
        batches.append(np.asarray(batch, dtype=np.int64))
    return batches


class BatchSchedule:
    """Step -> batch of pair indices, epoch after epoch, reproducible from the seed."""

    def __init__(self, mentions: np.ndarray, batch_size: int, seed: int) -> None:
        self.mentions, self.batch_size, self.seed = mentions, batch_size, seed
        self._epoch, self._start, self._batches = -1, 0, []

    def __call__(self, step: int) -> np.ndarray:
        if step < self._start:
            self._epoch, self._start, self._batches = -1, 0, []
        while step >= self._start + len(self._batches):
            self._start += len(self._batches)
            self._epoch += 1
            self._batches = distinct_mention_batches(self.mentions, self.batch_size, self.seed,
                                                     self._epoch)
            if not self._batches:
                raise ValueError("no batch of >= 2 distinct mentions can be formed")
        return self._batches[step - self._start]

    @property
    def epoch(self) -> int:
        """The epoch of the last batch returned."""
        return self._epoch


def pretrain_step(model: SpanModel, anchors: Sequence[Item], positives: Sequence[Item],
                  loss_fn: InfoNCELoss, keep_prob: float, rng: random.Random) -> torch.Tensor:
    """InfoNCE of one batch: anchors masked, positives kept w.p. ``keep_prob``; in-batch
    negatives."""
    return in_batch_loss(model, anchors, positives, masked_modes(len(positives), keep_prob, rng),
                         loss_fn)


def warmup_constant(step: int, warmup_steps: int) -> float:
    """Linear warm-up over ``warmup_steps``, then a constant learning rate."""
    return min(1.0, (step + 1) / warmup_steps) if warmup_steps > 0 else 1.0


class PretrainTask:
    """UCTopic pre-training for the Trainer: batches of distinct-mention pairs, InfoNCE."""

    def __init__(self, cfg: UCTopicConfig, encoder: SpanEncoder, data: PairData,
                 callback: Callable[[SpanEncoder, int], dict[str, Any]] | None = None) -> None:
        self.cfg, self.encoder, self.data, self.callback = cfg, encoder, data, callback
        self.model = encoder.model
        self.frozen = freeze_word_embeddings(self.model) if cfg.freeze_embeddings else 0
        self.optimizer = make_optimizer(self.model, cfg.lr, cfg.weight_decay)
        self.loss_fn = InfoNCELoss(cfg.temperature)
        self.schedule = BatchSchedule(data.pairs[:, 0], cfg.batch_size, cfg.seed)
        self._fingerprint = cfg.fingerprint(len(data))
        self._recent: deque[float] = deque(maxlen=cfg.log_every)

    def fingerprint(self) -> str:
        """Settings and data size (see :meth:`UCTopicConfig.fingerprint`)."""
        return self._fingerprint

    def _data_digest(self) -> str:
        if getattr(self, "_digest", None) is None:
            digest = hashlib.sha256(self.data.pairs.astype(np.int64).tobytes())
            for text in (*self.data.sentences, *self.data.mentions):
                digest.update(text.encode("utf-8", "surrogatepass") + b"\0")
            self._digest = digest.hexdigest()[:16]
        return self._digest

    def training_state(self) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
        """Kept in the checkpoint: the digest of the pairs, sentences and mentions trained on."""
        return {"data_digest": self._data_digest()}, {}

    def restore_state(self, meta: dict[str, Any], tensors: dict[str, torch.Tensor]) -> None:
        """A resume on other data of the same size is refused (a checkpoint without a digest,
        written before it was kept, is taken as it is)."""
        if meta.get("data_digest") not in (None, self._data_digest()):
            raise ValueError(f"the checkpoint in the output folder was trained on other data "
                             f"than {self.cfg.data_dir}; use another output folder or the "
                             "data it was trained on")

    def lr_factor(self, step: int) -> float:
        """Warm-up, then constant."""
        return warmup_constant(step, self.cfg.warmup_steps)

    def step_loss(self, step: int, rng: random.Random) -> tuple[torch.Tensor, dict[str, float]]:
        """The InfoNCE loss of step ``step``'s batch of pairs."""
        pairs = [self.data.pair_items(int(i)) for i in self.schedule(step)]
        loss = pretrain_step(self.model, [a for a, _ in pairs], [b for _, b in pairs],
                             self.loss_fn, self.cfg.keep_prob, rng)
        value = float(loss.detach())
        self._recent.append(value)
        if (step + 1) % self.cfg.log_every == 0:
            logger.info("step %d (epoch %d): loss %.4f", step + 1, self.schedule.epoch,
                        float(np.mean(self._recent)))
        return loss, {"loss": value}

    def evaluate(self, step: int) -> dict[str, Any]:
        """The epoch reached and, with a callback, its scores (``eval``) for the history."""
        row: dict[str, Any] = {"epoch": self.schedule.epoch}
        if self.callback is not None:
            self.model.eval()
            row["eval"] = self.callback(self.encoder, step)
        return row


def train_uctopic(cfg: UCTopicConfig,
                  callback: Callable[[SpanEncoder, int], dict[str, Any]] | None = None
                  ) -> dict[str, Any]:
    """Pre-train (or resume) a span encoder on mined pairs; returns the report.

    ``callback(encoder, step)`` runs at every checkpoint (e.g. a dev-split evaluation); what
    it returns is logged in the report's ``evaluations``.
    """
    cfg.validate()
    data = load_pair_data(cfg.data_dir, limit=cfg.max_pairs)
    encoder = load_span(cfg.backbone, max_length=cfg.max_length)
    task = PretrainTask(cfg, encoder, data, callback)
    trainer = Trainer(cfg.out_dir, total_steps=cfg.max_steps, seed=cfg.seed,
                      max_minutes=cfg.max_minutes, checkpoint_every=cfg.checkpoint_every,
                      num_threads=cfg.num_threads, show_progress=cfg.show_progress,
                      desc="uctopic pre-train")
    result = trainer.fit(task)
    encoder.model.eval()
    encoder.model.max_length = DEFAULT_MAX_LENGTH  # inference windows may be longer
    out = Path(cfg.out_dir)
    encoder.save_pretrained(out / MODEL_DIR, extra_config={"training": {
        "method": "uctopic-pretrain", "steps": result.steps, "train_max_length": cfg.max_length,
        "temperature": cfg.temperature, "keep_prob": cfg.keep_prob}})
    report = _report(cfg, task, result)
    write_json(out / REPORT, report)
    logger.info("UCTopic pre-training: %d steps in %.1f min, final loss %s", result.steps,
                result.seconds / 60, report["history"][-1].get("loss") if result.history
                else None)
    return report


def _report(cfg: UCTopicConfig, task: PretrainTask, result: TrainResult) -> dict[str, Any]:
    """The run's report: settings (portable paths), budget, data seen, history, evaluations."""
    steps, seconds, n_pairs = result.steps, result.seconds, len(task.data)
    return {
        "config": portable_settings(cfg, skip=()), "steps": steps,
        "stop_reason": "max_minutes" if result.stopped_by_budget else "max_steps",
        "pairs": n_pairs, "pairs_seen": steps * cfg.batch_size,
        "epochs": round(steps * cfg.batch_size / max(n_pairs, 1), 3),
        "seconds": round(seconds, 1), "seconds_per_step": round(seconds / max(steps, 1), 3),
        "frozen_parameters": task.frozen,
        "history": [{k: v for k, v in row.items() if k != "eval"} for row in result.history],
        "evaluations": [{"step": row["step"], **row["eval"]} for row in result.history
                        if "eval" in row],
        "torch_threads": cfg.num_threads or torch.get_num_threads(),
    }
