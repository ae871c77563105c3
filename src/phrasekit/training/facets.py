"""Training a facet model on CPU: AdamW over the NNSC loss, resumable, with a time budget.

``train_facets(FacetTrainingConfig(data_dir=..., out_dir=...))``:

1. reads a dataset built by ``build_facet_dataset`` (its granularity
   decides the model's) and checks it was written against the same word space;
2. walks through the training examples in seeded random batches of similar input lengths
   (every epoch a fresh permutation from ``(seed, epoch)``, see :func:`epoch_batches`); each
   step embeds the inputs, predicts K facets and
   minimises Eq. 2 (:func:`~.nnsc_loss`) with the negative word sets taken
   from the batch rolled by a random shift drawn from ``(seed, step)``;
   Dropout is off by default: the model underfits (validation and training losses agree in
   our runs, as the paper also observed of its models) and on a CPU the dropout masks cost
   about 30% of a step;
3. AdamW (``lr``, ``weight_decay``), linear warm-up over ``warmup_steps``, then constant, or a
   linear decay to 10% over ``decay_steps`` when given; gradients clipped to norm 1;
4. every ``checkpoint_every`` steps: the validation loss on a fixed subset of the held-out
   examples (fixed shift, no dropout) and ``OUT/checkpoint.safetensors`` (weights + AdamW
   moments, no pickle). Rerunning with the same ``out_dir`` resumes with the same batches,
   shifts and dropout masks (all derive from the seed and the step number);
5. stops at ``max_steps`` or after ``max_minutes`` of training (counted across resumes) and
   writes ``OUT/model`` (the model folder, loadable with ``phrasekit.load``) and
   ``OUT/report.json``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm

from phrasekit.encoders.facets.loss import METHODS, nnsc_loss
from phrasekit.encoders.facets.model import (
    FacetModel,
    FacetModelConfig,
    make_batch,
    save_facet_model,
)
from phrasekit.encoders.facets.words import WordSpace, load_word_space
from phrasekit.io import write_json
from phrasekit.training.checkpoint import CHECKPOINT, load_checkpoint, save_checkpoint
from phrasekit.training.config import budget_checks, raise_failed
from phrasekit.training.facets_data import FacetDataset

logger = logging.getLogger(__name__)


@dataclass
class FacetTrainingConfig:
    """Model size, optimiser, NNSC and budget settings of one run."""

    data_dir: str
    out_dir: str
    n_facets: int = 10
    hidden_dim: int = 50
    n_heads: int = 5
    encoder_layers: int = 3
    decoder_layers: int = 2
    ff_dim: int = 200
    dropout: float = 0.0
    cross_attention: bool = True
    max_len: int = 50
    batch_size: int = 128
    lr: float = 1e-3
    weight_decay: float = 0.01
    warmup_steps: int = 200
    decay_steps: int | None = None
    lam: float = 0.4
    coeff_steps: int = 30
    coeff_method: str = "pgd"
    length_buckets: int = 50
    seed: int = 0
    max_steps: int | None = None
    max_minutes: float | None = 60.0
    checkpoint_every: int = 500
    val_examples: int = 2048
    num_threads: int | None = 1
    show_progress: bool = True
    notes: dict[str, Any] = field(default_factory=dict)

    def validate(self) -> None:
        """Fail fast on nonsense settings and a missing dataset."""
        raise_failed([
            *budget_checks(self.batch_size, self.lr, self.max_steps, self.max_minutes,
                           self.checkpoint_every),
            (self.weight_decay >= 0, "weight_decay must be >= 0"),
            (self.warmup_steps >= 0, "warmup_steps must be >= 0"),
            (self.decay_steps is None or self.decay_steps >= 1, "decay_steps must be >= 1"),
            (self.lam >= 0, f"lam must be >= 0, got {self.lam}"),
            (self.coeff_steps >= 1, "coeff_steps must be >= 1"),
            (self.coeff_method in METHODS, f"coeff_method must be one of {METHODS}"),
            (self.val_examples >= 0, "val_examples must be >= 0"),
            (self.length_buckets >= 1, "length_buckets must be >= 1"),
        ])
        if not (Path(self.data_dir) / "meta.json").is_file():
            raise FileNotFoundError(f"{self.data_dir} has no meta.json: build the dataset "
                                    "first (phrasekit.training.facets_data.build_facet_dataset)")

    def model_config(self, granularity: str, word_space: WordSpace) -> FacetModelConfig:
        """The architecture these settings describe."""
        return FacetModelConfig(
            granularity=granularity, n_facets=self.n_facets, word_space=word_space.name,
            word_dim=word_space.dim, hidden_dim=self.hidden_dim, n_heads=self.n_heads,
            encoder_layers=self.encoder_layers, decoder_layers=self.decoder_layers,
            ff_dim=self.ff_dim, dropout=self.dropout, max_len=self.max_len,
            cross_attention=self.cross_attention)

    def fingerprint(self, data_meta: dict[str, Any]) -> str:
        """Hash of what fixes the trajectory (settings and the dataset), for resuming."""
        skip = {"out_dir", "max_steps", "max_minutes", "checkpoint_every", "num_threads",
                "show_progress", "notes", "val_examples"}
        d = {k: v for k, v in asdict(self).items() if k not in skip}
        data = {k: data_meta.get(k) for k in ("examples", "validation", "granularity",
                                               "word_space_fingerprint", "settings")}
        blob = json.dumps({**d, "data": data}, sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


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


def negative_shift(seed: int, step: int, batch: int) -> int:
    """The batch roll that picks each example's negative word set at ``step``."""
    return int(np.random.default_rng([seed, step, 1]).integers(1, batch))


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


def train_facets(cfg: FacetTrainingConfig) -> dict[str, Any]:
    """Train (or resume) one facet model; returns the report (also ``OUT/report.json``)."""
    cfg.validate()
    if cfg.num_threads:
        torch.set_num_threads(int(cfg.num_threads))
    out = Path(cfg.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    dataset = FacetDataset.load(cfg.data_dir)
    word_space = load_word_space(dataset.meta.get("word_space", "glove-6b-50d"))
    if dataset.meta.get("word_space_fingerprint") != word_space.fingerprint:
        raise ValueError(f"{cfg.data_dir} was built against another word table; rebuild it")
    granularity = str(dataset.meta["granularity"])
    # validation: a fixed random subset, so that neighbours in it (whose word sets serve as
    # each other's negatives) are unrelated examples, not occurrences of one phrase
    train_idx, val_idx = dataset.indices("train"), dataset.indices("val")
    val_idx = np.random.default_rng([cfg.seed, 7]).permutation(val_idx)[: cfg.val_examples]
    if len(train_idx) < cfg.batch_size:
        raise ValueError(f"{len(train_idx)} training examples: fewer than one batch of "
                         f"{cfg.batch_size}")
    steps_per_epoch = len(train_idx) // cfg.batch_size
    logger.info("%s facet data: %d train / %d validation examples, %d steps per epoch",
                granularity, len(train_idx), len(val_idx), steps_per_epoch)

    torch.manual_seed(cfg.seed)
    model = FacetModel(cfg.model_config(granularity, word_space), word_space.vectors)
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    make = BatchMaker(dataset, word_space, cfg.max_len)
    fingerprint = cfg.fingerprint(dataset.meta)
    ckpt = out / CHECKPOINT
    start, elapsed, val_s = 0, 0.0, 0.0
    history: list[dict[str, Any]] = []
    if ckpt.is_file():
        meta = load_checkpoint(ckpt, model, optimizer)
        if meta.get("fingerprint") != fingerprint:
            raise ValueError(f"{ckpt} was written with other settings or data; use another "
                             "out_dir or delete the checkpoint")
        start, elapsed = int(meta["step"]), float(meta["elapsed_s"])
        val_s = float(meta.get("validation_s", 0.0))
        history = meta.get("history", [])
        logger.info("resuming from step %d (%.1f min already spent)", start, elapsed / 60)
    if not history and len(val_idx) >= 2:
        history.append({"step": start, "minutes": 0.0, **{
            f"val_{k}": v for k, v in evaluate_loss(model, make, val_idx, cfg.batch_size, cfg.lam,
                                                    cfg.coeff_steps, cfg.coeff_method).items()}})

    def checkpoint(step: int) -> None:
        save_checkpoint(ckpt, model, optimizer, {
            "step": step, "elapsed_s": elapsed, "validation_s": val_s, "fingerprint": fingerprint,
            "history": history})

    stop_at = cfg.max_steps if cfg.max_steps else None
    t0 = time.perf_counter()
    step = start
    window: dict[str, list[float]] = {"loss": [], "positive": [], "negative": []}
    order_epoch, order = -1, np.zeros((0, cfg.batch_size), dtype=np.int64)
    train_lengths = (dataset.input_offsets[train_idx + 1] - dataset.input_offsets[train_idx])
    bar = tqdm(total=stop_at, initial=start, desc=f"facets[{granularity} K={cfg.n_facets}]",
               unit="step", disable=not cfg.show_progress)
    while stop_at is None or step < stop_at:
        if cfg.max_minutes and elapsed + time.perf_counter() - t0 > cfg.max_minutes * 60:
            logger.info("time budget of %.1f min reached at step %d", cfg.max_minutes, step)
            break
        epoch, pos = divmod(step, steps_per_epoch)
        if epoch != order_epoch:
            order = epoch_batches(train_lengths, cfg.batch_size, cfg.seed, epoch,
                                  cfg.length_buckets)
            order_epoch = epoch
        idx = train_idx[order[pos]]
        torch.manual_seed(cfg.seed * 1_000_003 + step)  # dropout: same masks after a resume
        for group in optimizer.param_groups:
            group["lr"] = cfg.lr * lr_factor(step, cfg.warmup_steps, cfg.decay_steps)
        batch, targets, mask = make(idx)
        res = nnsc_loss(model(batch).facets, targets, mask,
                        shift=negative_shift(cfg.seed, step, len(idx)), lam=cfg.lam,
                        steps=cfg.coeff_steps, method=cfg.coeff_method)
        optimizer.zero_grad(set_to_none=True)
        res["loss"].backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        step += 1
        for k in window:
            window[k].append(float(res[k].detach()))
        bar.update(1)
        bar.set_postfix(loss=f"{window['loss'][-1]:.4f}")
        if step % cfg.checkpoint_every == 0:
            now = time.perf_counter()
            elapsed += now - t0
            t0 = now
            history.append(_history_entry(step, elapsed, window, model, make, val_idx, cfg))
            val_s += time.perf_counter() - t0
            elapsed += time.perf_counter() - t0  # validation time counts against the budget
            t0 = time.perf_counter()
            window = {k: [] for k in window}
            checkpoint(step)
            logger.info("step %d: %s", step, history[-1])
    bar.close()
    elapsed += time.perf_counter() - t0
    if step > start and (not history or history[-1]["step"] != step):
        history.append(_history_entry(step, elapsed, window, model, make, val_idx, cfg))
        checkpoint(step)
    return _finish(cfg, model, dataset, word_space, step, steps_per_epoch, elapsed, val_s,
                   history, fingerprint)


def _history_entry(step: int, elapsed: float, window: dict[str, list[float]], model: FacetModel,
                   make: BatchMaker, val_idx: np.ndarray, cfg: FacetTrainingConfig
                   ) -> dict[str, Any]:
    entry: dict[str, Any] = {"step": step, "minutes": round(elapsed / 60, 2)}
    entry.update({f"train_{k}": round(float(np.mean(v)), 5) for k, v in window.items() if v})
    if len(val_idx) >= 2:
        val = evaluate_loss(model, make, val_idx, cfg.batch_size, cfg.lam, cfg.coeff_steps,
                            cfg.coeff_method)
        entry.update({f"val_{k}": v for k, v in val.items()})
    return entry


def _finish(cfg: FacetTrainingConfig, model: FacetModel, dataset: FacetDataset,
            word_space: WordSpace, step: int, steps_per_epoch: int, elapsed: float,
            val_s: float, history: list[dict[str, Any]], fingerprint: str) -> dict[str, Any]:
    """Save the model folder and the report."""
    model.eval()
    out = Path(cfg.out_dir)
    settings = {k: v for k, v in asdict(cfg).items() if k not in ("show_progress", "notes")}
    n_params = sum(p.numel() for p in model.parameters() if p.requires_grad)
    training = {
        "method": "multi-facet-nnsc", "granularity": dataset.meta["granularity"],
        "settings": settings, "fingerprint": fingerprint, "steps": step,
        "epochs": round(step / max(1, steps_per_epoch), 3),
        "examples_seen": step * cfg.batch_size, "train_minutes": round(elapsed / 60, 2),
        "validation_minutes": round(val_s / 60, 2),
        "steps_per_second": round(step / (elapsed - val_s), 2) if elapsed > val_s else None,
        "trainable_parameters": int(n_params), "torch_threads": torch.get_num_threads(),
        "data": {k: dataset.meta.get(k) for k in ("examples", "validation", "corpora")},
        "history": history, "notes": cfg.notes,
    }
    model_dir = save_facet_model(model, out / "model", word_space, dataset.word_counts,
                                 extra_config={"training": training})
    report = {**training, "model_dir": str(model_dir)}
    write_json(out / "report.json", report)
    logger.info("saved %s after %d steps (%.1f min)", model_dir, step, elapsed / 60)
    return report
