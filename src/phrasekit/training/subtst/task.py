"""Training SubTST and its SBERT-style baseline on a sentence-pair task (MSRP, STS-B).

One recipe for every variant so that comparisons are fair: the same frozen backbone features,
the same transfer layer, optimiser, schedule, epochs and seed; the variants differ only in the
topic features (none / frozen / trainable) and the pooling. The epoch with the best dev score
(MSRP: F1 on a fixed 10% of train; STS-B: Spearman on the official dev split) is kept and then
evaluated once on test. Training runs on :class:`~phrasekit.training.core.trainer.Trainer`, one
checkpoint per epoch (``checkpoint_every`` = the steps of an epoch) with the dev scores of that
epoch in its history.
"""

from __future__ import annotations

import json
import logging
import random
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from phrasekit.encoders.subtst import (
    SubTST,
    SubTSTConfig,
    TokenFeatures,
    build_model,
    pad_features,
)
from phrasekit.encoders.subword_lda import SubwordLDA
from phrasekit.eval.pairs import MAIN_METRIC, PairExample, pair_metrics, task_kind
from phrasekit.training.core.checkpoint import checkpoint_folder
from phrasekit.training.core.config import config_hash
from phrasekit.training.core.trainer import Trainer, step_seed, warmup_linear
from phrasekit.training.subtst.config import SubTSTTrainingConfig

logger = logging.getLogger(__name__)


def seed_everything(seed: int) -> None:
    """Seed Python, NumPy and torch."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def fit_lda(texts: list[str], features: TokenFeatures, n_topics: int, seed: int, max_iter: int
            ) -> Any:
    """Sub-word LDA over the training sentences with the backbone's tokenizer."""
    return SubwordLDA(n_topics=n_topics, max_iter=max_iter, seed=seed).fit(
        texts, features.tokenizer)


def _targets(examples: list[PairExample], kind: str, score_scale: float) -> torch.Tensor:
    labels = [e.label for e in examples]
    if kind == "classification":
        return torch.tensor(labels, dtype=torch.int64)
    return torch.tensor(labels, dtype=torch.float32) / score_scale


def predict_examples(model: SubTST, examples: list[PairExample], batch_size: int = 128
                     ) -> np.ndarray:
    """Predicted labels (classification) or scores (regression) for the examples."""
    return model.predict([(e.a, e.b) for e in examples], batch_size=batch_size)


def evaluate(model: SubTST, task: str, examples: list[PairExample]) -> dict[str, float]:
    """Task metrics of ``model`` on ``examples`` (percent)."""
    model.model.eval()
    gold = np.array([e.label for e in examples])
    return pair_metrics(task, gold, predict_examples(model, examples))


class SubTSTTask:
    """One variant's training as a :class:`~phrasekit.training.core.trainer.TrainingTask`.

    Each epoch is a permutation of the training pairs cut into batches (the permutation depends
    on the seed and the epoch only); the Trainer's ``evaluate`` hook scores dev at every epoch's
    end, and the best-on-dev weights are kept here and in every checkpoint.
    """

    def __init__(self, model: SubTST, task: str, data: dict[str, list[PairExample]],
                 training: SubTSTTrainingConfig) -> None:
        net, config = model.model, model.config
        self.subtst, self.model, self.task, self.training = model, net, task, training
        layer_params = [p for n, p in net.named_parameters() if n.startswith("layers.")]
        head_params = [p for n, p in net.named_parameters()
                       if not n.startswith("layers.") and p.requires_grad]
        groups = [{"params": head_params, "lr": training.lr}]
        if layer_params:
            groups.append({"params": layer_params, "lr": training.layer_lr})
        self.optimizer = torch.optim.AdamW(groups, weight_decay=training.weight_decay)
        self.train, self.dev = data["train"], data["dev"]
        self.steps_per_epoch = (len(self.train) + training.batch_size - 1) // training.batch_size
        self.total_steps = self.steps_per_epoch * training.epochs
        self.targets = _targets(self.train, config.kind, config.score_scale)
        self.loss_fn: nn.Module = (nn.CrossEntropyLoss() if config.kind == "classification"
                                   else nn.MSELoss())
        self.metric = MAIN_METRIC[task]
        self.best: dict[str, Any] = {}  # epoch and dev score of the best epoch so far
        self.best_state: dict[str, torch.Tensor] = {}
        self._order: tuple[int, list[int]] = (-1, [])

    def fingerprint(self) -> str:
        return config_hash(self.training, tuple(asdict(self.training)), task=self.task,
                           config=self.subtst.config.to_dict(), n_train=len(self.train))

    def lr_factor(self, step: int) -> float:
        return warmup_linear(step, self.total_steps, self.training.warmup)

    def _epoch_order(self, epoch: int) -> list[int]:
        if self._order[0] != epoch:
            gen = torch.Generator().manual_seed(step_seed(self.training.seed, epoch))
            self._order = (epoch, torch.randperm(len(self.train), generator=gen).tolist())
        return self._order[1]

    def step_loss(self, step: int, rng: random.Random) -> tuple[torch.Tensor, dict[str, float]]:
        """The pair loss (cross-entropy or MSE) of the step's slice of its epoch's order."""
        epoch, offset = divmod(step, self.steps_per_epoch)
        bs = self.training.batch_size
        idx = self._epoch_order(epoch)[offset * bs : (offset + 1) * bs]
        net, features = self.model, self.subtst.features
        fa = pad_features(features.get([self.train[i].a for i in idx]))
        fb = pad_features(features.get([self.train[i].b for i in idx]))
        loss = self.loss_fn(net.score(net.embed(*fa), net.embed(*fb)), self.targets[idx])
        return loss, {"loss": float(loss.detach())}

    def evaluate(self, step: int) -> dict[str, Any]:
        """Dev metrics at the end of an epoch; keeps the weights when they are the best yet."""
        epoch = step // self.steps_per_epoch
        dev = evaluate(self.subtst, self.task, self.dev)
        logger.info("%s seed %d epoch %d: dev %s", self.subtst.config.variant,
                    self.training.seed, epoch, dev)
        if not self.best or dev[self.metric] > self.best["score"]:
            self.best = {"epoch": epoch, "score": dev[self.metric]}
            self.best_state = {k: v.detach().clone() for k, v in self.model.state_dict().items()}
        return {"epoch": epoch, **dev}

    def training_state(self) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
        """The best epoch so far and its weights, for the checkpoint."""
        return {"best": self.best}, {f"best.{k}": v for k, v in self.best_state.items()}

    def restore_state(self, meta: dict[str, Any], tensors: dict[str, torch.Tensor]) -> None:
        """Inverse of :meth:`training_state`."""
        self.best = dict(meta.get("best", {}))
        self.best_state = {k[len("best."):]: v for k, v in tensors.items()
                           if k.startswith("best.")}


def _fit_variant_lda(data: dict[str, list[PairExample]], config: SubTSTConfig,
                     training: SubTSTTrainingConfig, features: TokenFeatures, lda: Any,
                     extra_texts: Sequence[str]) -> tuple[Any, float]:
    """The variant's sub-word LDA (``lda`` when given, none without topics) and the seconds
    spent fitting it."""
    if not config.n_topics:
        return None, 0.0
    if lda is not None:
        return lda, 0.0
    t0 = time.perf_counter()
    texts = list(dict.fromkeys(t for e in data["train"] for t in (e.a, e.b)))
    lda = fit_lda(texts + list(extra_texts), features, config.n_topics, training.seed,
                  training.lda_max_iter)
    return lda, time.perf_counter() - t0


def train_subtst(
    task: str,
    data: dict[str, list[PairExample]],
    config: SubTSTConfig,
    training: SubTSTTrainingConfig | None = None,
    features: TokenFeatures | None = None,
    lda: Any = None,
    show_progress: bool = False,
    lda_extra_texts: Sequence[str] = (),
    out_dir: str | Path | None = None,
) -> tuple[SubTST, dict[str, Any]]:
    """Train one variant; returns the best-on-dev model and a report (dev curve, test, times).

    ``data`` has ``train``, ``dev`` and optionally ``test`` example lists. ``features`` may be a
    shared :class:`TokenFeatures` (its cache is reused across variants and seeds); ``lda`` a
    fitted SubwordLDA (else one is fitted on the training sentences, plus ``lda_extra_texts``
    such as an unlabelled in-domain corpus, with the run's seed). ``out_dir`` keeps the
    checkpoint written at every epoch's end, so an interrupted run resumes; without one the
    run uses a temporary folder.
    """
    training = training or SubTSTTrainingConfig()
    kind = task_kind(task)
    if config.kind != kind:
        raise ValueError(f"task {task} needs kind={kind!r}, config has {config.kind!r}")
    for split in ("train", "dev"):
        if not data.get(split):
            raise ValueError(f"no {split} examples for {task}")
    if config.n_topics and lda is None:  # before the backbone's pass, not after it
        n_texts = len({t for e in data["train"] for t in (e.a, e.b)}) + len(lda_extra_texts)
        if config.n_topics > n_texts:
            raise ValueError(f"--topics {config.n_topics} is more than the {n_texts} distinct "
                             "training texts the topic model is fitted on")
    if features is None:
        features = TokenFeatures(config.backbone, max_seq_length=config.max_seq_length)
    t_start = time.perf_counter()
    features.add([t for split in data.values() for e in split for t in (e.a, e.b)],
                 show_progress=show_progress)
    seconds = {"features": time.perf_counter() - t_start}
    seed_everything(training.seed)
    lda, seconds["lda"] = _fit_variant_lda(data, config, training, features, lda,
                                           lda_extra_texts)
    seed_everything(training.seed)
    model = SubTST(build_model(config, features, lda), features, lda=lda, name=config.variant)
    fit = SubTSTTask(model, task, data, training)
    with checkpoint_folder(out_dir, prefix="subtst-") as where:
        result = Trainer(where, total_steps=fit.total_steps, seed=training.seed,
                         checkpoint_every=fit.steps_per_epoch, show_progress=show_progress,
                         desc=f"train {config.variant} seed {training.seed}").fit(fit)
    seconds["train"] = result.seconds
    model.model.load_state_dict(fit.best_state)
    model.model.eval()
    return model, _report(model, task, data, training, result.history, fit.best["epoch"],
                          seconds)


def _report(model: SubTST, task: str, data: dict[str, list[PairExample]],
            training: SubTSTTrainingConfig, history: list[dict[str, Any]], best_epoch: int,
            seconds: dict[str, float]) -> dict[str, Any]:
    """The run's report (also ``model.training_report``, without the config): the dev curve,
    the best epoch's dev scores, test scores when there is a test split, and the seconds."""
    curve = [{"epoch": row["epoch"], "loss": row["loss"],
              **{k: v for k, v in row.items() if k not in ("step", "epoch", "loss", "minutes")}}
             for row in history]
    report: dict[str, Any] = {
        "task": task, "variant": model.config.variant, "seed": training.seed,
        "config": model.config.to_dict(), "training": asdict(training),
        "n_train": len(data["train"]), "n_dev": len(data["dev"]),
        "best_epoch": best_epoch, "dev": curve[best_epoch - 1], "dev_curve": curve,
        "seconds": {k: round(v, 2) for k, v in seconds.items()},
    }
    if data.get("test"):
        t0 = time.perf_counter()
        report["test"] = evaluate(model, task, data["test"])
        report["seconds"]["test"] = round(time.perf_counter() - t0, 2)
    model.training_report = {k: v for k, v in report.items() if k != "config"}
    return report


def feature_cache_path(cache_dir: str | Path, features: TokenFeatures, task: str) -> Path:
    """Where a task's frozen features are cached for ``features``' backbone and layer."""
    safe = features.key.replace("|", "_").replace("=", "")
    return Path(cache_dir) / f"features-{task}-{safe}.safetensors"


def is_feature_cache(path: Path) -> bool:
    """Whether ``path`` is a feature cache phrasekit wrote, judged by its header alone (its
    metadata names a key, the texts and a checksum), so one damaged further on is still known
    and rebuilt; an empty file holds nothing to lose. Anything else is left alone."""
    try:
        with path.open("rb") as fh:
            head = fh.read(8)
            if not head:
                return True
            size = int.from_bytes(head, "little")
            if len(head) < 8 or size > 1 << 30:
                return False
            meta = json.loads(fh.read(size)).get("__metadata__") or {}
    except (OSError, ValueError, AttributeError):
        return False
    return isinstance(meta, dict) and {"key", "texts", "sha256"} <= set(meta)


def prepare_features(task: str, data: dict[str, list[PairExample]], config: SubTSTConfig,
                     cache_dir: str | Path | None = None, show_progress: bool = False
                     ) -> tuple[TokenFeatures, float]:
    """Frozen features of every sentence of ``data`` (loaded from / saved to ``cache_dir``).

    Returns the features and the seconds spent computing them (0 when all came from the cache).
    """
    try:
        features = TokenFeatures(config.backbone, layer=-config.trainable_layers or None,
                                 max_seq_length=config.max_seq_length)
    except ValueError as exc:  # TokenFeatures' layer is minus the trainable layers
        raise ValueError(f"trainable_layers {config.trainable_layers}: at most the backbone's "
                         f"layers ({exc})") from None
    path = feature_cache_path(cache_dir, features, task) if cache_dir else None
    if path is not None and path.is_file():
        try:
            logger.info("loaded %d cached sentence features from %s", features.load(path), path)
        except ValueError as exc:
            if not is_feature_cache(path):
                raise
            logger.warning("%s: rebuilt", str(exc).removesuffix("; delete it"))
    texts = [t for split in data.values() for e in split for t in (e.a, e.b)]
    before = len(features)
    t0 = time.perf_counter()
    features.add(texts, show_progress=show_progress)
    seconds = time.perf_counter() - t0
    if path is not None and len(features) > before:
        features.save(path)
    return features, seconds
