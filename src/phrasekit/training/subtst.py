"""Training SubTST and its SBERT-style baseline on a sentence-pair task (MSRP, STS-B).

One recipe for every variant so that comparisons are fair: the same frozen backbone features,
the same transfer layer, optimiser, schedule, epochs and seed; the variants differ only in the
topic features (none / frozen / trainable) and the pooling. The epoch with the best dev score
(MSRP: F1 on a fixed 10% of train; STS-B: Spearman on the official dev split) is kept and then
evaluated once on test.
"""

from __future__ import annotations

import copy
import logging
import random
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from phrasekit.encoders.subtst import (
    SubTST,
    SubTSTConfig,
    TokenFeatures,
    build_model,
    pad_features,
)
from phrasekit.eval.pairs import MAIN_METRIC, PairExample, pair_metrics, task_kind

logger = logging.getLogger(__name__)


@dataclass
class SubTSTTrainingConfig:
    """Optimisation settings (shared by all variants of a comparison)."""

    epochs: int = 8
    batch_size: int = 32
    lr: float = 1e-3
    layer_lr: float = 2e-5
    weight_decay: float = 0.01
    warmup: float = 0.1
    seed: int = 0
    lda_max_iter: int = 10

    def __post_init__(self) -> None:
        if self.epochs < 1 or self.batch_size < 1:
            raise ValueError("epochs and batch_size must be >= 1")
        if not 0.0 <= self.warmup < 1.0:
            raise ValueError(f"warmup must be in [0, 1), got {self.warmup}")


def seed_everything(seed: int) -> None:
    """Seed Python, NumPy and torch."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def fit_lda(texts: list[str], features: TokenFeatures, n_topics: int, seed: int, max_iter: int
            ) -> Any:
    """Sub-word LDA over the training sentences with the backbone's tokenizer."""
    from phrasekit.encoders.subword_lda import SubwordLDA

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


def train_subtst(
    task: str,
    data: dict[str, list[PairExample]],
    config: SubTSTConfig,
    training: SubTSTTrainingConfig | None = None,
    features: TokenFeatures | None = None,
    lda: Any = None,
    show_progress: bool = False,
    lda_extra_texts: Sequence[str] = (),
) -> tuple[SubTST, dict[str, Any]]:
    """Train one variant; returns the best-on-dev model and a report (dev curve, test, times).

    ``data`` has ``train``, ``dev`` and optionally ``test`` example lists. ``features`` may be a
    shared :class:`TokenFeatures` (its cache is reused across variants and seeds); ``lda`` a
    fitted SubwordLDA (else one is fitted on the training sentences, plus ``lda_extra_texts``
    such as an unlabelled in-domain corpus, with the run's seed).
    """
    training = training or SubTSTTrainingConfig()
    kind = task_kind(task)
    if config.kind != kind:
        raise ValueError(f"task {task} needs kind={kind!r}, config has {config.kind!r}")
    for split in ("train", "dev"):
        if not data.get(split):
            raise ValueError(f"no {split} examples for {task}")
    if features is None:
        features = TokenFeatures(config.backbone, max_seq_length=config.max_seq_length)
    t_start = time.perf_counter()
    all_texts = [t for split in data.values() for e in split for t in (e.a, e.b)]
    features.add(all_texts, show_progress=show_progress)
    t_features = time.perf_counter() - t_start

    seed_everything(training.seed)
    t_lda = 0.0
    if config.n_topics and lda is None:
        t0 = time.perf_counter()
        texts = list(dict.fromkeys(t for e in data["train"] for t in (e.a, e.b)))
        lda = fit_lda(texts + list(lda_extra_texts), features, config.n_topics, training.seed,
                      training.lda_max_iter)
        t_lda = time.perf_counter() - t0
    seed_everything(training.seed)
    net = build_model(config, features, lda if config.n_topics else None)
    model = SubTST(net, features, lda=lda if config.n_topics else None, name=config.variant)

    layer_params = [p for n, p in net.named_parameters() if n.startswith("layers.")]
    head_params = [p for n, p in net.named_parameters()
                   if not n.startswith("layers.") and p.requires_grad]
    groups = [{"params": head_params, "lr": training.lr}]
    if layer_params:
        groups.append({"params": layer_params, "lr": training.layer_lr})
    optimizer = torch.optim.AdamW(groups, weight_decay=training.weight_decay)
    train = data["train"]
    steps_per_epoch = (len(train) + training.batch_size - 1) // training.batch_size
    total = steps_per_epoch * training.epochs
    warm = max(1, int(total * training.warmup))
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min((s + 1) / warm, max(0.0, (total - s) / max(1, total - warm))))
    targets = _targets(train, kind, config.score_scale)
    loss_fn: nn.Module = nn.CrossEntropyLoss() if kind == "classification" else nn.MSELoss()
    gen = torch.Generator().manual_seed(training.seed)
    metric = MAIN_METRIC[task]
    best: tuple[float, int, dict[str, torch.Tensor]] | None = None
    curve: list[dict[str, Any]] = []
    t_train0 = time.perf_counter()
    bar = tqdm(total=total, desc=f"train {config.variant} seed {training.seed}", unit="step",
               disable=not show_progress, leave=False)
    for epoch in range(1, training.epochs + 1):
        net.train()
        order = torch.randperm(len(train), generator=gen).tolist()
        losses = []
        for s in range(0, len(order), training.batch_size):
            idx = order[s : s + training.batch_size]
            fa = pad_features(features.get([train[i].a for i in idx]))
            fb = pad_features(features.get([train[i].b for i in idx]))
            out = net.score(net.embed(*fa), net.embed(*fb))
            loss = loss_fn(out, targets[idx])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            scheduler.step()
            losses.append(loss.item())
            bar.update(1)
        net.eval()
        dev = evaluate(model, task, data["dev"])
        curve.append({"epoch": epoch, "loss": round(float(np.mean(losses)), 5), **dev})
        logger.info("%s seed %d epoch %d: loss %.4f dev %s", config.variant, training.seed,
                    epoch, np.mean(losses), dev)
        if best is None or dev[metric] > best[0]:
            best = (dev[metric], epoch, copy.deepcopy(net.state_dict()))
    bar.close()
    t_train = time.perf_counter() - t_train0
    assert best is not None
    net.load_state_dict(best[2])
    net.eval()
    report: dict[str, Any] = {
        "task": task, "variant": config.variant, "seed": training.seed,
        "config": config.to_dict(), "training": asdict(training),
        "n_train": len(train), "n_dev": len(data["dev"]),
        "best_epoch": best[1], "dev": curve[best[1] - 1], "dev_curve": curve,
        "seconds": {"features": round(t_features, 2), "lda": round(t_lda, 2),
                    "train": round(t_train, 2)},
    }
    if data.get("test"):
        t0 = time.perf_counter()
        report["test"] = evaluate(model, task, data["test"])
        report["seconds"]["test"] = round(time.perf_counter() - t0, 2)
    model.training_report = {k: v for k, v in report.items() if k != "config"}
    return model, report


def feature_cache_path(cache_dir: str | Path, features: TokenFeatures, task: str) -> Path:
    """Where a task's frozen features are cached for ``features``' backbone and layer."""
    safe = features.key.replace("|", "_").replace("=", "")
    return Path(cache_dir) / f"features-{task}-{safe}.safetensors"


def prepare_features(task: str, data: dict[str, list[PairExample]], config: SubTSTConfig,
                     cache_dir: str | Path | None = None, show_progress: bool = False
                     ) -> tuple[TokenFeatures, float]:
    """Frozen features of every sentence of ``data`` (loaded from / saved to ``cache_dir``).

    Returns the features and the seconds spent computing them (0 when all came from the cache).
    """
    features = TokenFeatures(config.backbone, layer=-config.trainable_layers or None,
                             max_seq_length=config.max_seq_length)
    path = feature_cache_path(cache_dir, features, task) if cache_dir else None
    if path is not None and path.is_file():
        logger.info("loaded %d cached sentence features from %s", features.load(path), path)
    texts = [t for split in data.values() for e in split for t in (e.a, e.b)]
    before = len(features)
    t0 = time.perf_counter()
    features.add(texts, show_progress=show_progress)
    seconds = time.perf_counter() - t0
    if path is not None and len(features) > before:
        features.save(path)
    return features, seconds
