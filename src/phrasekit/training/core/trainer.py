"""The one training loop every method runs on: budget, seeding, checkpoints, schedule, history.

A method supplies a :class:`TrainingTask`: its model and optimizer, a fingerprint of the
settings that fix the trajectory, the learning-rate factor of each step, and ``step_loss``,
which draws step ``step``'s batch (from ``rng`` and the step number only) and returns its loss.
:class:`Trainer` does the rest, the same way for PEARL, Phrase-BERT, UCTopic (pre-training and
CCL), the multi-facet model and SubTST:

- **budget**: ``total_steps`` and an optional ``max_minutes`` (time spent before a resume
  counts; ``total_steps=None`` runs until the clock stops it); a run stopped by the clock keeps
  its progress;
- **seeding**: before step ``s`` Python's and torch's generators are seeded from
  ``(seed, s)``, so batches and dropout masks depend on the step alone and a resumed run takes
  exactly the path of an uninterrupted one (bit-exact, tested);
- **checkpoints**: every ``checkpoint_every`` steps and at the end, ``checkpoint.safetensors``
  (weights, Adam moments, the task's extra state; no pickle), written atomically; a checkpoint
  written with other settings is refused; ``out_dir=None`` keeps no checkpoint (a short
  in-memory run: nothing is written and nothing resumed, history and ``evaluate`` still run);
- **schedule**: each parameter group's ``lr`` is its initial ``lr`` times ``lr_factor(step)``
  (:func:`warmup_linear` is the usual one);
- **history**: the mean of every logged loss over each checkpoint interval, the minutes spent,
  and whatever ``task.evaluate`` reports there; a tqdm bar shows the running losses
  (``show_progress=False`` for ``--quiet``);
- **threads**: torch's intra-op threads are set for the run only (``num_threads``).
"""

from __future__ import annotations

import itertools
import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from phrasekit.artifacts import check_run_folder
from phrasekit.encoders.allocator import keep_freed_memory
from phrasekit.settings import torch_threads
from phrasekit.training.core.checkpoint import CHECKPOINT, load_checkpoint, save_checkpoint

logger = logging.getLogger(__name__)

#: Multiplier that keeps the per-step seeds of nearby runs and steps apart.
SEED_STRIDE = 1_000_003


def step_seed(seed: int, step: int) -> int:
    """The seed of step ``step`` of a run seeded ``seed`` (batches and dropout derive from it)."""
    return seed * SEED_STRIDE + step


def warmup_linear(step: int, total: int, warmup: float) -> float:
    """Linear warm-up over the first ``warmup`` share of ``total`` steps, then linear decay to
    zero at ``total`` (the BERT / sentence-transformers schedule)."""
    warm = max(1, int(total * warmup))
    if step < warm:
        return (step + 1) / warm
    return max(0.0, (total - step) / max(1, total - warm))


class TrainingTask(Protocol):
    """What a method supplies to :class:`Trainer`."""

    model: nn.Module
    optimizer: torch.optim.Optimizer

    def fingerprint(self) -> str:
        """Hash of the settings and data that fix the trajectory (checked on resume)."""

    def lr_factor(self, step: int) -> float:
        """Multiplier of every group's initial learning rate at ``step``."""

    def step_loss(self, step: int, rng: random.Random) -> tuple[torch.Tensor, dict[str, float]]:
        """Draw step ``step``'s batch and return (loss to minimise, losses to log)."""


@dataclass
class TrainResult:
    """What a run did: steps done, seconds spent (resumed time included), history rows."""

    steps: int
    seconds: float
    history: list[dict[str, Any]] = field(default_factory=list)
    stopped_by_budget: bool = False


@dataclass
class Trainer:
    """Runs (or resumes) a :class:`TrainingTask` in ``out_dir``; see the module docstring."""

    out_dir: str | Path | None
    total_steps: int | None
    seed: int = 0
    max_minutes: float | None = None
    checkpoint_every: int = 100
    num_threads: int | None = None
    show_progress: bool = True
    desc: str = "train"
    clip_grad_norm: float | None = None

    @property
    def checkpoint_path(self) -> Path | None:
        """Where the resumable state is kept (None: the run keeps none)."""
        return None if self.out_dir is None else Path(self.out_dir) / CHECKPOINT

    def fit(self, task: TrainingTask) -> TrainResult:
        """Train from step 0, or from the checkpoint in ``out_dir``, to the budget's end."""
        if self.total_steps is None and not self.max_minutes:
            raise ValueError("give total_steps or max_minutes: the run would never end")
        made = None
        if self.out_dir is not None:
            check_run_folder(self.out_dir, option="out_dir")  # before any step, not after
            made = None if Path(self.out_dir).exists() else Path(self.out_dir)
            Path(self.out_dir).mkdir(parents=True, exist_ok=True)
        for group in task.optimizer.param_groups:
            group.setdefault("base_lr", group["lr"])
        keep_freed_memory()  # each step's activations reuse the heap, not fresh pages
        try:
            with torch_threads(self.num_threads):
                start, result = self._resume(task)
                return self._loop(task, start, result)
        except BaseException:
            if made is not None and not any(made.iterdir()):
                made.rmdir()  # a run that failed before its first checkpoint leaves nothing
            raise

    # ---- internals ---------------------------------------------------------------------------
    def _resume(self, task: TrainingTask) -> tuple[int, TrainResult]:
        path = self.checkpoint_path
        if path is None or not path.is_file():
            return 0, TrainResult(0, 0.0)
        extra: dict[str, torch.Tensor] = {}
        meta = load_checkpoint(path, task.model, task.optimizer, extra=extra)
        if meta.get("fingerprint") != task.fingerprint():
            raise ValueError(f"{path} was written with different settings; use another "
                             "output folder or delete the checkpoint")
        restore: Callable[[dict[str, Any], dict[str, torch.Tensor]], None] | None = getattr(
            task, "restore_state", None)
        if restore is not None:
            restore(meta.get("task", {}), extra)
        step, seconds = int(meta["step"]), float(meta["elapsed_s"])
        if self.total_steps is not None and step > self.total_steps:
            raise ValueError(f"{path} is at step {step}, past the {self.total_steps} steps asked "
                             "for; raise the step budget or use another output folder")
        logger.info("resuming from step %d (%.1f min already spent)", step, seconds / 60)
        return step, TrainResult(step, seconds, list(meta.get("history", [])))

    def _save(self, task: TrainingTask, result: TrainResult) -> None:
        if self.checkpoint_path is None:
            return
        state: Callable[[], tuple[dict[str, Any], dict[str, torch.Tensor]]] | None = getattr(
            task, "training_state", None)
        meta, tensors = state() if state is not None else ({}, {})
        save_checkpoint(self.checkpoint_path, task.model, task.optimizer, {
            "step": result.steps, "elapsed_s": result.seconds,
            "fingerprint": task.fingerprint(), "history": result.history, "task": meta},
            extra=tensors or None)

    def _over_budget(self, result: TrainResult, t0: float) -> bool:
        spent = result.seconds + time.perf_counter() - t0
        return bool(self.max_minutes) and spent > self.max_minutes * 60

    def _loop(self, task: TrainingTask, start: int, result: TrainResult) -> TrainResult:
        bar = tqdm(total=self.total_steps, initial=start, desc=self.desc, unit="step",
                   disable=not self.show_progress)
        window: dict[str, list[float]] = {}
        t0 = time.perf_counter()
        task.model.train()
        steps = itertools.count(start) if self.total_steps is None else range(
            start, self.total_steps)
        for step in steps:
            if self._over_budget(result, t0):
                logger.info("time budget of %.1f min reached at step %d", self.max_minutes, step)
                result.stopped_by_budget = True
                break
            logged = self._step(task, step)
            for key, value in logged.items():
                window.setdefault(key, []).append(value)
            result.steps = step + 1
            bar.update(1)
            bar.set_postfix({k: f"{v:.4f}" for k, v in logged.items()})
            if result.steps % self.checkpoint_every == 0 or result.steps == self.total_steps:
                t0 = self._checkpoint(task, result, window, t0)
                window = {}
        bar.close()
        if result.stopped_by_budget and window:  # keep the progress of the partial interval
            t0 = self._checkpoint(task, result, window, t0)
        result.seconds += time.perf_counter() - t0
        return result

    def _step(self, task: TrainingTask, step: int) -> dict[str, float]:
        seed = step_seed(self.seed, step)
        rng = random.Random(seed)
        torch.manual_seed(seed)  # dropout: the same masks after a resume
        for group in task.optimizer.param_groups:
            group["lr"] = group["base_lr"] * task.lr_factor(step)
        loss, logged = task.step_loss(step, rng)
        _check_finite(step, "loss", loss)
        task.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if self.clip_grad_norm:
            norm = nn.utils.clip_grad_norm_(task.model.parameters(), self.clip_grad_norm)
            _check_finite(step, "gradient norm", norm)
        task.optimizer.step()
        return logged

    def _checkpoint(self, task: TrainingTask, result: TrainResult,
                    window: dict[str, list[float]], t0: float) -> float:
        now = time.perf_counter()
        result.seconds += now - t0
        row: dict[str, Any] = {"step": result.steps}
        row.update({k: round(float(np.mean(v)), 4) for k, v in window.items() if v})
        evaluate: Callable[[int], dict[str, Any]] | None = getattr(task, "evaluate", None)
        if evaluate is not None:
            row.update(evaluate(result.steps))
            task.model.train()
        row["minutes"] = round(result.seconds / 60, 2)
        result.history.append(row)
        self._save(task, result)
        logger.info("step %d: %s", result.steps,
                    ", ".join(f"{k} {v}" for k, v in row.items() if k != "step"))
        return time.perf_counter()


def _check_finite(step: int, what: str, value: torch.Tensor) -> None:
    """Stop before a non-finite value reaches the weights (a run that diverged is not saved
    further: its last checkpoint, if any, holds finite weights)."""
    if not bool(torch.isfinite(value).all()):
        raise ValueError(f"training diverged at step {step + 1}: the {what} is "
                         f"{float(value.detach())}; lower the learning rate or check the loss's "
                         "settings (temperature, margin)")
