"""Phrase-BERT fine-tuning on CPU (Wang et al. 2021, §3.1) and its model folders.

``train_phrase_bert(PhraseBertTrainingConfig(data_dir=..., out_dir=...))``:

1. reads the triplets written by
   :func:`phrasekit.training.phrase_bert.data.build_phrase_bert_dataset` (the first
   ``max_paraphrase`` paraphrase and ``max_context`` context triplets; the paper's ablations
   (§4.2, §5.4) are ``use_context=False``, Phrase-BERT-phrase (paraphrase data only), and
   ``use_paraphrase=False``, Phrase-BERT-context (context data only));
2. cuts every epoch into batches of ``batch_size`` triplets of one kind each (phrase batches
   stay short: phrases are cut at ``phrase_tokens``, contexts at ``context_tokens``) and
   shuffles the batches of both kinds together, all from the seed;
3. embeds the three texts of each triplet by mean pooling the backbone's last layer and
   minimises the triplet loss of Eq. 1, ``max(0, 1 - ||p - p-|| + ||p - p+||)``, with Adam
   (2e-5) and SBERT's schedule: linear warm-up over the first 10% of all epochs' steps, then
   linear decay to zero at their end (:func:`~phrasekit.training.core.trainer.warmup_linear`);
4. runs on :class:`~phrasekit.training.core.trainer.Trainer`: checkpoints every
   ``checkpoint_every`` steps (``checkpoint.safetensors``: weights and Adam moments, no
   pickle), and rerunning with the same ``out_dir`` resumes with the same batches and dropout
   masks (every step's randomness derives from the seed and the step number);
5. averages the fine-tuned backbone with the packaged one, ``alpha * fine-tuned + (1 - alpha)
   * initial`` (PEARL's weight averaging, :mod:`phrasekit.training.core.averaging`; not in the
   Phrase-BERT paper), ``alpha`` chosen among ``alphas`` on the dev splits of
   :class:`~phrasekit.eval.dev.DevScorer` (``alpha=1.0`` keeps the paper's plain fine-tuned
   weights; a fixed ``alpha`` needs no dev data);
6. saves the model folder ``out_dir/model`` and ``out_dir/report.json``.

Why averaging: on CPU-sized data (one epoch of ~20k triplets) the triplet loss with L2
distances pulls the mean-pooled space far from the packaged MiniLM and every variant scored
below it on the benchmark (avg7 50.5-62.5 vs 63.0); interpolating back keeps what the triplets
teach without forgetting the rest.

Normalisation: the paper embeds phrases as the plain mean of BERT's token vectors and Eq. 1
takes Euclidean distances between those vectors — nothing is normalised, and the margin of 1 is
relative to their scale (mean-pooled MiniLM vectors have norms of about 5-7 and pair distances
of about 5-9). We follow it (``normalize=False``); ``normalize=True`` trains on unit vectors
instead. The saved encoder always returns L2-normalised vectors (the phrasekit contract), so
cosine = dot product at inference either way.

CPU choices: the backbone is the packaged all-MiniLM-L6-v2 (not BERT-base), its word
embeddings are frozen by default (``freeze_embeddings``; half of MiniLM's parameters, so the
saved model holds ~22 MB of fp16 deltas instead of ~45 MB), and ``max_steps`` /
``max_minutes`` can stop an epoch early (the schedule stays that of the whole epoch).

Model folder: ``config.json`` (``format`` ``phrasekit-phrase-bert``, the backbone's sha256,
the training report) + ``model.safetensors`` holding the backbone's float16 differences from
the packaged MiniLM (:mod:`phrasekit.encoders.phrase_bert`). ``phrasekit.load``
rebuilds it as a mean-pooling :class:`~phrasekit.encoders.transformer.TransformerEncoder`.
"""

from __future__ import annotations

import logging
import math
import random
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from phrasekit.encoders.phrase_bert import (
    ENCODER_MAX_SEQ_LENGTH,
    PhraseBertModel,
    read_phrase_bert_config,
    save_phrase_bert,
)
from phrasekit.encoders.transformer import TransformerEncoder
from phrasekit.eval.dev import DevScorer
from phrasekit.io import write_json
from phrasekit.models.backbones import backbone_path
from phrasekit.models.folders import WEIGHTS, check_backbone_fingerprint
from phrasekit.models.weights import add_backbone_deltas, load_weights
from phrasekit.settings import data_dir as shared_data_dir
from phrasekit.settings import torch_threads
from phrasekit.training.core.averaging import average_modules, select_alpha, undo_interpolation
from phrasekit.training.core.config import portable_path, portable_settings
from phrasekit.training.core.losses import TripletLoss
from phrasekit.training.core.trainer import Trainer, warmup_linear
from phrasekit.training.phrase_bert.config import PhraseBertTrainingConfig
from phrasekit.training.phrase_bert.data import CONTEXT_FILE, PARAPHRASE_FILE, read_triplets

logger = logging.getLogger(__name__)

KINDS = ("paraphrase", "context")


# ---------------------------------------------------------------------------------- training
def batch_schedule(sizes: dict[str, int], batch_size: int, epochs: int, seed: int
                   ) -> list[tuple[str, np.ndarray]]:
    """Every step's (kind, triplet indices): per epoch, each kind's triplets permuted and cut
    into batches, then the batches of both kinds shuffled together."""
    steps: list[tuple[str, np.ndarray]] = []
    for epoch in range(epochs):
        rng = np.random.default_rng([seed, epoch])
        batches = []
        for kind in KINDS:
            perm = rng.permutation(sizes.get(kind, 0))
            batches.extend((kind, perm[i : i + batch_size])
                           for i in range(0, len(perm), batch_size))
        steps.extend(batches[i] for i in rng.permutation(len(batches)))
    return steps


def load_triplets(cfg: PhraseBertTrainingConfig) -> dict[str, list[dict[str, str]]]:
    """The enabled datasets, cut to ``max_paraphrase`` / ``max_context``; paraphrase triplets
    of the sources in ``source_repeat`` appear that many times (upweighting, e.g., PPDB's
    lexically diverse pairs against the far more numerous WordNet synonyms)."""
    data: dict[str, list[dict[str, str]]] = {}
    for kind, use, name, limit in (
        ("paraphrase", cfg.use_paraphrase, PARAPHRASE_FILE, cfg.max_paraphrase),
        ("context", cfg.use_context, CONTEXT_FILE, cfg.max_context),
    ):
        if not use:
            continue
        rows = read_triplets(Path(cfg.data_dir) / name, limit)
        if kind == "paraphrase" and cfg.source_repeat:
            rows = [r for r in rows for _ in range(cfg.source_repeat.get(r.get("source", ""), 1))]
        if not rows:
            flag = "--no-paraphrase" if kind == "paraphrase" else "--no-context"
            raise ValueError(f"no {kind} triplets in {Path(cfg.data_dir) / name} "
                             f"(max {limit}); rebuild the data or pass {flag}")
        data[kind] = rows
    return data


def _triplet_step(model: PhraseBertModel, cfg: PhraseBertTrainingConfig, kind: str,
                  rows: Sequence[dict[str, str]], loss_fn: TripletLoss) -> torch.Tensor:
    """The triplet loss of one batch (phrases and contexts cut at their own lengths)."""
    anchors = [r["anchor"] for r in rows]
    others = [r["positive"] for r in rows] + [r["negative"] for r in rows]
    b = len(rows)
    if kind == "paraphrase":
        emb = model.embed(anchors + others, cfg.phrase_tokens)
        a, p, n = emb[:b], emb[b : 2 * b], emb[2 * b :]
    else:
        a = model.embed(anchors, cfg.phrase_tokens)
        ctx = model.embed(others, cfg.context_tokens)
        p, n = ctx[:b], ctx[b:]
    if cfg.normalize:
        a, p, n = (nn.functional.normalize(x, dim=-1) for x in (a, p, n))
    return loss_fn(a, p, n)


class PhraseBertTask:
    """Phrase-BERT's model, triplet batches and loss as a
    :class:`~phrasekit.training.core.trainer.TrainingTask`.

    It also clocks each kind of batch (a step runs from its ``step_loss`` to the next one, so
    the backward pass and the update count), to project the minutes of a whole epoch; the
    clock is part of the checkpoint.
    """

    def __init__(self, cfg: PhraseBertTrainingConfig, data: dict[str, list[dict[str, str]]],
                 model: PhraseBertModel) -> None:
        self.cfg, self.data, self.model = cfg, data, model
        self.sizes = {k: len(v) for k, v in data.items()}
        self.schedule = batch_schedule(self.sizes, cfg.batch_size, cfg.epochs, cfg.seed)
        self.optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad],
                                          lr=cfg.lr)
        self.loss_fn = TripletLoss(cfg.margin)
        self.timing: dict[str, list[float]] = {k: [0, 0.0] for k in KINDS}  # [steps, seconds]
        self._running: tuple[str, float] | None = None

    def fingerprint(self) -> str:
        return self.cfg.fingerprint(self.sizes)

    def lr_factor(self, step: int) -> float:
        """SBERT's schedule over every planned step (``max_steps`` does not shorten it)."""
        return warmup_linear(step, len(self.schedule), self.cfg.warmup)

    def step_loss(self, step: int, rng: random.Random) -> tuple[torch.Tensor, dict[str, float]]:
        """The triplet loss of the step's batch (one kind: paraphrase or context)."""
        self._stop_clock()
        kind, idx = self.schedule[step]
        self._running = (kind, time.perf_counter())
        loss = _triplet_step(self.model, self.cfg, kind, [self.data[kind][i] for i in idx],
                             self.loss_fn)
        return loss, {f"loss_{kind}": float(loss.detach())}

    def _stop_clock(self) -> None:
        if self._running is not None:
            kind, t0 = self._running
            self.timing[kind][0] += 1
            self.timing[kind][1] += time.perf_counter() - t0
            self._running = None

    def training_state(self) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
        """The per-kind clock, for the checkpoint."""
        self._stop_clock()
        return {"timing": self.timing}, {}

    def restore_state(self, meta: dict[str, Any], tensors: dict[str, torch.Tensor]) -> None:
        """Inverse of :meth:`training_state`."""
        self.timing = meta.get("timing", self.timing)


def train_phrase_bert(cfg: PhraseBertTrainingConfig) -> dict[str, Any]:
    """Run (or resume) Phrase-BERT training and save ``out_dir/model``.

    Returns the report (also written to ``out_dir/report.json``).
    """
    cfg.validate()
    scorer = _dev_scorer(cfg)  # before training: missing dev data fails now, not after an hour
    with torch_threads(cfg.num_threads):
        data = load_triplets(cfg)
        torch.manual_seed(cfg.seed)
        model = PhraseBertModel(cfg.backbone)
        if cfg.freeze_embeddings:
            model.backbone.embeddings.word_embeddings.weight.requires_grad_(False)
        task = PhraseBertTask(cfg, data, model)
        total = len(task.schedule)
        stop_at = min(total, cfg.max_steps) if cfg.max_steps else total
        logger.info("Phrase-BERT data: %s triplets, %d steps per run (%d planned)", task.sizes,
                    stop_at, total)
        result = Trainer(cfg.out_dir, total_steps=stop_at, seed=cfg.seed,
                         max_minutes=cfg.max_minutes, checkpoint_every=cfg.checkpoint_every,
                         num_threads=cfg.num_threads, show_progress=cfg.show_progress,
                         desc="Phrase-BERT").fit(task)
        return _finish(cfg, model, scorer, task.sizes, result.steps, total, result.seconds,
                       result.history, task.timing)


def _finish(cfg: PhraseBertTrainingConfig, model: PhraseBertModel, scorer: Any,
            sizes: dict[str, int], step: int, total: int, elapsed: float,
            history: list[dict[str, Any]], timing: dict[str, list[float]],
            extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Average with the initial weights (alpha chosen on dev), save the model folder and the
    report (``out_dir/report.json`` names the model folder relative to itself); project the
    minutes of a whole epoch."""
    model.eval()
    out = Path(cfg.out_dir)
    t0 = time.perf_counter()
    best_alpha, dev_table = _average(cfg, model, scorer)
    per_step = {k: round(s / n, 3) for k, (n, s) in timing.items() if n}
    batches = {k: math.ceil(n / cfg.batch_size) * cfg.epochs for k, n in sizes.items()}
    projected = (round(sum(batches[k] * per_step[k] for k in batches) / 60, 1)
                 if all(k in per_step for k in batches) else None)
    training = {"method": "phrase-bert", "settings": portable_settings(cfg), "triplets": sizes,
                "steps": step, "total_steps": total, "complete": step >= total,
                "train_minutes": round(elapsed / 60, 2), "seconds_per_step": per_step,
                "steps_done_per_kind": {k: int(n) for k, (n, _) in timing.items()},
                "steps_per_kind": batches, "projected_epoch_minutes": projected,
                "torch_threads": torch.get_num_threads(), "history": history,
                "alpha": best_alpha, "dev": dev_table,
                "selection_minutes": round((time.perf_counter() - t0) / 60, 2),
                "notes": cfg.notes, **(extra or {})}
    model_dir = save_phrase_bert(model, out / "model", extra_config={"training": training})
    size_mb = sum(f.stat().st_size for f in model_dir.iterdir()) / 2**20
    report = {**training, "model_dir": str(model_dir), "model_mb": round(size_mb, 2)}
    write_json(out / "report.json", {**report, "model_dir": model_dir.name})
    logger.info("saved %s after %d/%d steps (alpha %.2f, %.1f MB)", model_dir, step, total,
                best_alpha, size_mb)
    return report


def recover_finetuned_phrase_bert(model_dir: str | Path
                                  ) -> tuple[PhraseBertTrainingConfig, PhraseBertModel,
                                             dict[str, Any]]:
    """A model folder saved by ``train phrase-bert`` with its fine-tuned backbone restored
    (``theta0 + (theta - theta0) / alpha``); returns its config, the model and the report."""
    path = Path(model_dir)
    config = read_phrase_bert_config(path)
    training = config.get("training")
    if not training or "settings" not in training or "alpha" not in training:
        raise ValueError(f"{path}: no training report in config.json; only models saved by "
                         "`phrasekit train phrase-bert` can be souped")
    known = set(PhraseBertTrainingConfig.__dataclass_fields__)
    settings = {k: v for k, v in training["settings"].items() if k in known}
    settings["alphas"] = tuple(settings.get("alphas") or PhraseBertTrainingConfig.alphas)
    cfg = PhraseBertTrainingConfig(**settings)
    check_backbone_fingerprint(path, config, cfg.backbone)
    model = PhraseBertModel(cfg.backbone)
    initial = {k: v.detach().clone() for k, v in model.state_dict().items()}
    add_backbone_deltas(model.backbone, load_weights(path / WEIGHTS), path / WEIGHTS)
    undo_interpolation(model, initial, {("backbone.",): float(training["alpha"])})
    return cfg, model, training


def soup_phrase_bert(model_dirs: list[str | Path], out_dir: str | Path,
                     dev_data_dir: str | Path | None = None,
                     alphas: tuple[float, ...] | None = None,
                     show_progress: bool = True) -> dict[str, Any]:
    """Average the fine-tuned backbones of Phrase-BERT runs (e.g. two seeds: a uniform model
    soup), then choose the averaging coefficient with the packaged backbone on dev."""
    if len(model_dirs) < 2:
        raise ValueError("a soup needs at least two model folders")
    runs = [recover_finetuned_phrase_bert(d) for d in model_dirs]
    backbones = {cfg.backbone for cfg, _, _ in runs}
    if len(backbones) > 1:
        raise ValueError(f"the runs have different backbones {sorted(backbones)}")
    model = average_modules([m for _, m, _ in runs])
    cfg = replace(runs[0][0], out_dir=str(out_dir), alpha=None,
                  alphas=tuple(alphas or runs[0][0].alphas),
                  dev_data_dir=str(dev_data_dir) if dev_data_dir else None,
                  show_progress=show_progress)
    logger.info("souping %d Phrase-BERT runs: %s", len(runs), ", ".join(map(str, model_dirs)))
    soup_of = [{"model": portable_path(d, parts=2), "alpha": t["alpha"],
                **{k: t["settings"].get(k) for k in ("seed", "use_paraphrase", "use_context")}}
               for d, (_, _, t) in zip(model_dirs, runs, strict=True)]
    return _finish(cfg, model, _dev_scorer(cfg), dict(runs[0][2].get("triplets", {})),
                   sum(int(t["steps"]) for _, _, t in runs),
                   sum(int(t.get("total_steps", t["steps"])) for _, _, t in runs),
                   sum(float(t.get("train_minutes", 0.0)) for _, _, t in runs) * 60, [], {},
                   extra={"method": "phrase-bert soup", "soup_of": soup_of})


def _alphas(cfg: PhraseBertTrainingConfig) -> tuple[float, ...]:
    return (cfg.alpha,) if cfg.alpha is not None else tuple(cfg.alphas)


def _dev_scorer(cfg: PhraseBertTrainingConfig) -> Any:
    """The dev scorer that chooses alpha (None when a single alpha needs no choosing)."""
    if len(_alphas(cfg)) == 1:
        return None
    return DevScorer(Path(cfg.dev_data_dir) if cfg.dev_data_dir else shared_data_dir())


def _average(cfg: PhraseBertTrainingConfig, model: PhraseBertModel, scorer: Any
             ) -> tuple[float, list[dict[str, Any]]]:
    """Interpolate ``model``'s backbone with the packaged one at the dev-best alpha (in place)."""
    # the saved encoder's view of the model (mean pooling); its freshly loaded backbone gives
    # the initial weights, then it scores the trained module in place
    encoder = TransformerEncoder(backbone_path(cfg.backbone), name="phrase-bert (dev)",
                                 max_seq_length=ENCODER_MAX_SEQ_LENGTH)
    initial = {f"backbone.{k}": v for k, v in encoder.model.state_dict().items()}
    encoder.model = model.backbone
    score = None
    if scorer is not None:

        def score(alpha: float) -> dict[str, float]:
            return scorer(encoder)

    return select_alpha(model, initial, _alphas(cfg), score, prefixes=("backbone.",),
                        show_progress=cfg.show_progress)
