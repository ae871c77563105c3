"""Training a facet model on CPU: AdamW over the NNSC loss, resumable, with a time budget.

``train_facets(FacetTrainingConfig(data_dir=..., out_dir=...))``:

1. reads a dataset built by ``build_facet_dataset`` (its granularity
   decides the model's) and checks it was written against the same word space;
2. walks through the training examples in seeded random batches of similar input lengths
   (every epoch a fresh permutation from ``(seed, epoch)``, see :func:`epoch_batches`); each
   step embeds the inputs, predicts K facets and minimises Eq. 2 (:func:`~.nnsc_loss`) with
   the negative word sets taken from the batch rolled by a random shift drawn from the step's
   generator. Dropout is off by default: the model underfits (validation and training losses
   agree in our runs, as the paper also observed of its models) and on a CPU the dropout masks
   cost about 30% of a step;
3. AdamW (``lr``, ``weight_decay``), linear warm-up over ``warmup_steps``, then constant, or a
   linear decay to 10% over ``decay_steps`` when given; gradients clipped to norm 1;
4. the loop is :class:`~phrasekit.training.core.trainer.Trainer`'s: every ``checkpoint_every``
   steps the validation loss on a fixed subset of the held-out examples (fixed shift, no
   dropout) and ``OUT/checkpoint.safetensors``; rerunning with the same ``out_dir`` resumes
   bit-exactly (batches, shifts and dropout masks derive from the seed and the step number);
5. stops at ``max_steps`` or after ``max_minutes`` of training (counted across resumes) and
   writes ``OUT/model`` (the model folder, loadable with ``phrasekit.load``) and
   ``OUT/report.json``.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from phrasekit.encoders.facets.loss import nnsc_loss
from phrasekit.encoders.facets.model import FacetModel, make_batch, save_facet_model
from phrasekit.encoders.facets.words import WordSpace, load_word_space
from phrasekit.io import write_json
from phrasekit.settings import torch_threads
from phrasekit.training.core.config import portable_settings
from phrasekit.training.core.trainer import Trainer, TrainResult
from phrasekit.training.facets.config import FacetTrainingConfig
from phrasekit.training.facets.data import FacetDataset

logger = logging.getLogger(__name__)

MODEL_DIR = "model"


class BatchMaker:
    """Turns example indices into model inputs and unit target vectors with a mask."""

    def __init__(self, dataset: FacetDataset, word_space: WordSpace, max_len: int) -> None:
        self.dataset = dataset
        self.unit = torch.from_numpy(word_space.unit)
        self.max_len = max_len

    def __call__(self, idx: Sequence[int]) -> tuple[Any, torch.Tensor, torch.Tensor]:
        ds = self.dataset
        batch = make_batch([ds.input_ids(i).tolist() for i in idx], self.max_len)
        targets = [ds.target_ids(i) for i in idx]
        n = max(len(t) for t in targets)
        ids = torch.zeros(len(idx), n, dtype=torch.long)
        mask = torch.zeros(len(idx), n, dtype=torch.bool)
        for row, t in enumerate(targets):
            ids[row, : len(t)] = torch.from_numpy(t.astype(np.int64))
            mask[row, : len(t)] = True
        return batch, self.unit[ids], mask


def epoch_batches(lengths: np.ndarray, batch_size: int, seed: int, epoch: int,
                  buckets: int = 50) -> np.ndarray:
    """One epoch's batches, (steps, batch_size) positions into the training examples.

    A seeded permutation of the examples (the incomplete last batch dropped) is cut into
    chunks of ``buckets`` batches; each chunk is sorted by input length before it is cut into
    batches, and the batches are then shuffled. Batches hold similar lengths (little padding:
    sentences run from 3 to 50 words) while their content stays random. ``buckets=1`` gives
    plain random batches.
    """
    rng = np.random.default_rng([seed, epoch])
    steps = len(lengths) // batch_size
    perm = rng.permutation(len(lengths))[: steps * batch_size]
    if buckets > 1:
        size = buckets * batch_size
        perm = np.concatenate([chunk[np.argsort(lengths[chunk], kind="stable")]
                               for chunk in np.split(perm, range(size, len(perm), size))])
    batches = perm.reshape(steps, batch_size)
    return batches[rng.permutation(steps)]


def lr_factor(step: int, warmup: int, decay: int | None) -> float:
    """Linear warm-up to 1 over ``warmup`` steps, then 1, or a linear decay to 0.1 over
    ``decay`` steps (counted from the start)."""
    if warmup and step < warmup:
        return (step + 1) / warmup
    if decay:
        return max(0.1, 1.0 - 0.9 * min(1.0, step / decay))
    return 1.0


@torch.no_grad()
def evaluate_loss(model: FacetModel, make: BatchMaker, indices: np.ndarray, batch_size: int,
                  lam: float, coeff_steps: int, coeff_method: str) -> dict[str, float]:
    """Mean NNSC loss (and its two errors) over ``indices`` with dropout off and shift 1."""
    was_training = model.training
    model.eval()
    sums = {"loss": 0.0, "positive": 0.0, "negative": 0.0}
    n = 0
    for start in range(0, len(indices), batch_size):
        idx = indices[start : start + batch_size]
        if len(idx) < 2:
            break
        batch, targets, mask = make(idx)
        out = model(batch)
        res = nnsc_loss(out.facets, targets, mask, shift=1, lam=lam, steps=coeff_steps,
                        method=coeff_method)
        for k in sums:
            sums[k] += float(res[k]) * len(idx)
        n += len(idx)
    model.train(was_training)
    return {k: round(v / max(n, 1), 5) for k, v in sums.items()}



class FacetTask:
    """The facet model's steps for the Trainer: length-bucketed epochs, NNSC loss, and the
    validation loss at every checkpoint (its time kept apart in ``validation_s``)."""

    def __init__(self, cfg: FacetTrainingConfig, dataset: FacetDataset,
                 word_space: WordSpace) -> None:
        self.cfg, self.dataset = cfg, dataset
        # validation: a fixed random subset, so that neighbours in it (whose word sets serve as
        # each other's negatives) are unrelated examples, not occurrences of one phrase
        self.train_idx = dataset.indices("train")
        self.val_idx = np.random.default_rng([cfg.seed, 7]).permutation(
            dataset.indices("val"))[: cfg.val_examples]
        if len(self.train_idx) < cfg.batch_size:
            raise ValueError(f"{len(self.train_idx)} training examples: fewer than one batch "
                             f"of {cfg.batch_size}")
        self.steps_per_epoch = len(self.train_idx) // cfg.batch_size
        offsets = dataset.input_offsets
        self.train_lengths = offsets[self.train_idx + 1] - offsets[self.train_idx]
        torch.manual_seed(cfg.seed)
        self.model = FacetModel(cfg.model_config(str(dataset.meta["granularity"]), word_space),
                                word_space.vectors)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=cfg.lr,
                                           weight_decay=cfg.weight_decay)
        self.make = BatchMaker(dataset, word_space, cfg.max_len)
        self._fingerprint = cfg.fingerprint(dataset.meta)
        self._epoch, self._order = -1, np.zeros((0, cfg.batch_size), dtype=np.int64)
        self.validation_s = 0.0
        self.initial: dict[str, Any] | None = None  # validation before the first step

    def fingerprint(self) -> str:
        """Settings and dataset (see :meth:`FacetTrainingConfig.fingerprint`)."""
        return self._fingerprint

    def lr_factor(self, step: int) -> float:
        """Warm-up, then constant or a linear decay (:func:`lr_factor`)."""
        return lr_factor(step, self.cfg.warmup_steps, self.cfg.decay_steps)

    def step_loss(self, step: int, rng: random.Random) -> tuple[torch.Tensor, dict[str, float]]:
        """The NNSC loss of step ``step``'s batch (the epoch's order fixed by seed and epoch)."""
        cfg = self.cfg
        epoch, pos = divmod(step, self.steps_per_epoch)
        if epoch != self._epoch:
            self._order = epoch_batches(self.train_lengths, cfg.batch_size, cfg.seed, epoch,
                                        cfg.length_buckets)
            self._epoch = epoch
        idx = self.train_idx[self._order[pos]]
        batch, targets, mask = self.make(idx)
        res = nnsc_loss(self.model(batch).facets, targets, mask,
                        shift=rng.randint(1, len(idx) - 1), lam=cfg.lam,
                        steps=cfg.coeff_steps, method=cfg.coeff_method)
        return res["loss"], {f"train_{k}": float(res[k].detach())
                             for k in ("loss", "positive", "negative")}

    def validation(self) -> dict[str, float]:
        """``val_loss``, ``val_positive``, ``val_negative`` on the held-out subset (none when
        it has fewer than 2 examples)."""
        if len(self.val_idx) < 2:
            return {}
        cfg = self.cfg
        val = evaluate_loss(self.model, self.make, self.val_idx, cfg.batch_size, cfg.lam,
                            cfg.coeff_steps, cfg.coeff_method)
        return {f"val_{k}": v for k, v in val.items()}

    def evaluate(self, step: int) -> dict[str, Any]:
        """The validation losses of the checkpoint at ``step``."""
        t0 = time.perf_counter()
        row = self.validation()
        self.validation_s += time.perf_counter() - t0
        return row

    def training_state(self) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
        """Validation time and the step-0 validation, kept in the checkpoint."""
        return {"validation_s": self.validation_s, "initial": self.initial}, {}

    def restore_state(self, meta: dict[str, Any], extra: dict[str, torch.Tensor]) -> None:
        """Inverse of :meth:`training_state`."""
        self.validation_s = float(meta.get("validation_s", 0.0))
        self.initial = meta.get("initial")


def train_facets(cfg: FacetTrainingConfig) -> dict[str, Any]:
    """Train (or resume) one facet model; returns the report (also ``OUT/report.json``)."""
    cfg.validate()
    dataset = FacetDataset.load(cfg.data_dir)
    word_space = load_word_space(dataset.meta.get("word_space", "glove-6b-50d"))
    if dataset.meta.get("word_space_fingerprint") != word_space.fingerprint:
        raise ValueError(f"{cfg.data_dir} was built against another word table; rebuild it")
    task = FacetTask(cfg, dataset, word_space)
    logger.info("%s facet data: %d train / %d validation examples, %d steps per epoch",
                dataset.meta["granularity"], len(task.train_idx), len(task.val_idx),
                task.steps_per_epoch)
    trainer = Trainer(cfg.out_dir, total_steps=cfg.max_steps, seed=cfg.seed,
                      max_minutes=cfg.max_minutes, checkpoint_every=cfg.checkpoint_every,
                      num_threads=cfg.num_threads, show_progress=cfg.show_progress,
                      desc=f"facets[{dataset.meta['granularity']} K={cfg.n_facets}]",
                      clip_grad_norm=1.0)
    if not trainer.checkpoint_path.is_file():
        with torch_threads(cfg.num_threads):
            val = task.validation()
        task.initial = {"step": 0, "minutes": 0.0, **val} if val else None
    result = trainer.fit(task)
    return _finish(cfg, task, word_space, result)


def _finish(cfg: FacetTrainingConfig, task: FacetTask, word_space: WordSpace,
            result: TrainResult) -> dict[str, Any]:
    """Save the model folder and the report (whose ``model_dir`` is relative to its folder
    in report.json)."""
    model, dataset, step = task.model, task.dataset, result.steps
    model.eval()
    out = Path(cfg.out_dir)
    train_s = result.seconds
    n_params = sum(p.numel() for p in model.parameters() if p.requires_grad)
    training = {
        "method": "multi-facet-nnsc", "granularity": dataset.meta["granularity"],
        "settings": portable_settings(cfg),
        "fingerprint": task.fingerprint(), "steps": step,
        "epochs": round(step / max(1, task.steps_per_epoch), 3),
        "examples_seen": step * cfg.batch_size, "train_minutes": round(train_s / 60, 2),
        "validation_minutes": round(task.validation_s / 60, 2),
        "steps_per_second": round(step / train_s, 2) if train_s > 0 else None,
        "trainable_parameters": int(n_params),
        "torch_threads": cfg.num_threads or torch.get_num_threads(),
        "data": {k: dataset.meta.get(k) for k in ("examples", "validation", "corpora")},
        "history": ([task.initial] if task.initial else []) + result.history,
        "notes": cfg.notes,
    }
    model_dir = save_facet_model(model, out / MODEL_DIR, word_space, dataset.word_counts,
                                 extra_config={"training": training})
    write_json(out / "report.json", {**training, "model_dir": MODEL_DIR})
    logger.info("saved %s after %d steps (%.1f min)", model_dir, step, train_s / 60)
    return {**training, "model_dir": str(model_dir)}
