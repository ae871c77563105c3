"""UCTopic on CPU: contrastive pre-training of a span encoder and cluster-assisted fine-tuning.

Pre-training (``train_uctopic(UCTopicConfig(data_dir=..., out_dir=...))``, paper §3.1, §4.1):
every step takes ``batch_size`` pairs (two different sentences with the same mention, built by
:mod:`phrasekit.training.uctopic_data`; no mention twice in a batch, so no pair is a false
negative of another), encodes the anchor with its mention masked (``context`` mode) and the
positive with its mention kept with probability ``keep_prob`` (p = 0.5) and masked otherwise,
and minimises InfoNCE with in-batch negatives at τ = 0.05 (Eq. 2). AdamW; a linear warm-up
then a constant learning rate (the run is bounded by time, not by a planned number of steps);
word embeddings frozen (so the saved deltas stay small); sequences cut at ``max_length``
tokens around the span. UCTopic also keeps LUKE's masked-language-model loss; it is left out
here (MiniLM ships without an MLM head). ``checkpoint.safetensors`` (weights + AdamW moments,
no pickle) every ``checkpoint_every`` steps and at the end; rerunning the same config resumes
with the same batches and masks (every step's randomness derives from the seed and the step
number); ``max_minutes`` bounds the total time over all resumes. The span encoder is saved to
``out_dir/model`` (:class:`~phrasekit.encoders.span.SpanEncoder` folder) with
``out_dir/report.json``.

Cluster-assisted contrastive learning (``ccl_finetune(encoder, items, CCLConfig(...))``,
§3.2, unsupervised):

1. embed every instance (``span`` mode) and run KMeans with ``n_clusters`` (seeded,
   ``n_init``); cluster centroids are the topic representations;
2. pseudo-label the ``top_fraction`` (t) of instances closest (cosine) to their centroid -- per
   cluster by default, so that every cluster is represented -- and give every mention the
   majority cluster of its selected instances (ties: the cluster whose votes are closer);
   all instances of a labelled mention carry its label;
3. each step samples ``batch_size`` anchors among labelled instances whose mention occurs
   in another sentence; the positive is such an instance. (``singleton_positives`` also lets
   a mention seen once be an anchor, its positive being its own sentence with the mention
   kept; off by default: the masked and unmasked copies of one sentence teach the encoder
   to recognise sentences, which dropped CoNLL-2003 NMI from 0.365 to 0.10 in 150 steps.)
   For every other cluster c_j,
   ``negatives_per_cluster`` mentions of c_j are drawn and one instance of each is a negative
   (Eq. 3). With ``shared_negatives`` the batch draws ``negatives_per_cluster`` instances per
   cluster once and every anchor uses those of the clusters other than its own: the same
   estimate of Eq. 3's denominator at k·n instead of b·(k-1)·n encoded negatives per step,
   which is what makes k ≈ 20 topics affordable on a CPU. The anchor is masked; positives and
   negatives keep their mention with probability ``keep_prob``. ``negatives="in-batch"`` is
   the paper's "w/ In-B." ablation: no clustering, the other positives of the batch are the
   negatives;
4. afterwards the topic of an instance is its nearest centroid (Eq. 4); the centroids are
   re-estimated in the fine-tuned space as the normalised means of the pseudo-labelled
   instances of each cluster.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from phrasekit.encoders.pooling import l2_normalize
from phrasekit.encoders.span import DEFAULT_MAX_LENGTH, SpanEncoder, SpanModel, validate_spans
from phrasekit.io import write_json
from phrasekit.registry import load_span
from phrasekit.training.checkpoint import CHECKPOINT, load_checkpoint, save_checkpoint
from phrasekit.training.config import budget_checks, raise_failed
from phrasekit.training.losses import InfoNCELoss

logger = logging.getLogger(__name__)

MODEL_DIR = "model"
REPORT = "report.json"

Item = tuple[str, int, int]


# ---------------------------------------------------------------------------------- shared
def freeze_word_embeddings(model: SpanModel) -> int:
    """Freeze the backbone's input word embeddings; returns how many parameters were frozen."""
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


def masked_modes(n: int, keep_prob: float, rng: np.random.Generator) -> list[str]:
    """``span`` (mention kept) with probability ``keep_prob``, else ``context`` (masked)."""
    return ["span" if keep else "context" for keep in rng.random(n) < keep_prob]


def _warmup_factor(step: int, warmup_steps: int) -> float:
    return min(1.0, (step + 1) / warmup_steps) if warmup_steps > 0 else 1.0


# ---------------------------------------------------------------------------------- pre-training
@dataclass
class UCTopicConfig:
    """Settings of one pre-training run (defaults: the paper's, scaled to a 2-core CPU)."""

    data_dir: str
    out_dir: str
    backbone: str = "minilm"
    seed: int = 0
    batch_size: int = 32
    lr: float = 5e-5
    weight_decay: float = 0.0
    warmup_steps: int = 50
    temperature: float = 0.05
    keep_prob: float = 0.5
    max_length: int = 64
    max_pairs: int | None = None
    freeze_embeddings: bool = True
    max_steps: int | None = None
    max_minutes: float | None = 80.0
    checkpoint_every: int = 100
    log_every: int = 10
    num_threads: int | None = 1
    show_progress: bool = True
    notes: dict[str, Any] = field(default_factory=dict)

    def validate(self) -> None:
        """Fail fast on nonsense settings."""
        raise_failed([
            *budget_checks(self.batch_size, self.lr, self.max_steps, self.max_minutes,
                           self.checkpoint_every),
            (self.temperature > 0, f"temperature must be > 0, got {self.temperature}"),
            (0 <= self.keep_prob <= 1, f"keep_prob must be in [0, 1], got {self.keep_prob}"),
            (self.max_length >= 8, f"max_length must be >= 8, got {self.max_length}"),
            (self.warmup_steps >= 0, "warmup_steps must be >= 0"),
            (self.log_every >= 1, "log_every must be >= 1"),
            (self.max_pairs is None or self.max_pairs >= 2, "max_pairs must be >= 2"),
        ])

    def fingerprint(self, n_pairs: int) -> str:
        """Hash of what fixes the trajectory (so a resume with other settings is refused)."""
        keys = ("data_dir", "backbone", "seed", "batch_size", "lr", "weight_decay",
                "warmup_steps", "temperature", "keep_prob", "max_length", "max_pairs",
                "freeze_embeddings")
        d = asdict(self)
        blob = json.dumps({**{k: d[k] for k in keys}, "pairs": n_pairs}, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


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
                  loss_fn: InfoNCELoss, keep_prob: float, rng: np.random.Generator
                  ) -> torch.Tensor:
    """InfoNCE of one batch: anchors masked, positives kept w.p. ``keep_prob``; in-batch
    negatives. Anchors and positives go through one forward pass."""
    b = len(anchors)
    modes = ["context"] * b + masked_modes(b, keep_prob, rng)
    emb = model.embed([*anchors, *positives], modes)
    return loss_fn(emb[:b], emb[b:])


def train_uctopic(cfg: UCTopicConfig,
                  callback: Callable[[SpanEncoder, int], dict[str, Any]] | None = None
                  ) -> dict[str, Any]:
    """Pre-train (or resume) a span encoder on mined pairs; returns the report.

    ``callback(encoder, step)`` runs after every checkpoint (e.g. a dev-split evaluation);
    what it returns is logged in the report's ``evaluations``.
    """
    from phrasekit.training.uctopic_data import load_pair_data

    cfg.validate()
    if cfg.num_threads:
        torch.set_num_threads(int(cfg.num_threads))
    out = Path(cfg.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    data = load_pair_data(cfg.data_dir, limit=cfg.max_pairs)
    encoder = load_span(cfg.backbone, max_length=cfg.max_length)
    model = encoder.model
    frozen = freeze_word_embeddings(model) if cfg.freeze_embeddings else 0
    optimizer = make_optimizer(model, cfg.lr, cfg.weight_decay)
    loss_fn = InfoNCELoss(cfg.temperature)
    fingerprint = cfg.fingerprint(len(data))
    step, elapsed, history, evaluations = 0, 0.0, [], []
    ckpt = out / CHECKPOINT
    if ckpt.is_file():
        meta = load_checkpoint(ckpt, model, optimizer)
        if meta.get("fingerprint") != fingerprint:
            raise ValueError(f"{ckpt} belongs to a run with other settings or data; use "
                             "another out_dir or delete the checkpoint")
        step, elapsed = int(meta["step"]), float(meta["elapsed"])
        history, evaluations = list(meta.get("history", [])), list(meta.get("evaluations", []))
        logger.info("resuming UCTopic pre-training at step %d (%.1f min done)", step,
                    elapsed / 60)
    schedule = BatchSchedule(data.pairs[:, 0], cfg.batch_size, cfg.seed)
    budget = cfg.max_minutes * 60 if cfg.max_minutes else float("inf")
    limit = cfg.max_steps if cfg.max_steps is not None else None
    t_start = time.time() - elapsed
    bar = tqdm(total=limit, initial=step, desc="uctopic pre-train", unit="step",
               disable=not cfg.show_progress)
    running: list[float] = []

    def checkpoint(final: bool = False) -> None:
        meta = {"step": step, "elapsed": time.time() - t_start, "fingerprint": fingerprint,
                "history": history, "evaluations": evaluations, "final": final}
        save_checkpoint(ckpt, model, optimizer, meta)
        if callback is not None:
            model.eval()
            evaluations.append({"step": step, **callback(encoder, step)})
            meta["evaluations"] = evaluations
            save_checkpoint(ckpt, model, optimizer, meta)

    stop_reason = "max_steps"
    while limit is None or step < limit:
        if time.time() - t_start >= budget:
            stop_reason = "max_minutes"
            break
        model.train()
        idx = schedule(step)
        rng = np.random.default_rng([cfg.seed, step, 1])
        torch.manual_seed(cfg.seed * 1_000_003 + step)
        pairs = [data.pair_items(int(i)) for i in idx]
        for group in optimizer.param_groups:
            group["lr"] = cfg.lr * _warmup_factor(step, cfg.warmup_steps)
        loss = pretrain_step(model, [a for a, _ in pairs], [b for _, b in pairs], loss_fn,
                             cfg.keep_prob, rng)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        step += 1
        value = loss.item()
        running.append(value)
        if step % cfg.log_every == 0:
            history.append({"step": step, "loss": round(float(np.mean(running)), 5),
                            "epoch": schedule.epoch,
                            "minutes": round((time.time() - t_start) / 60, 2)})
            running = []
        bar.update(1)
        bar.set_postfix(loss=f"{value:.3f}", epoch=schedule.epoch)
        if step % cfg.checkpoint_every == 0:
            checkpoint()
    bar.close()
    if running:
        history.append({"step": step, "loss": round(float(np.mean(running)), 5),
                        "epoch": schedule.epoch,
                        "minutes": round((time.time() - t_start) / 60, 2)})
    checkpoint(final=True)
    seconds = time.time() - t_start
    model.eval()
    model.max_length = DEFAULT_MAX_LENGTH  # inference windows may be longer than training's
    report = {
        "config": asdict(cfg), "steps": step, "stop_reason": stop_reason,
        "pairs": len(data), "pairs_seen": step * cfg.batch_size,
        "epochs": round(step * cfg.batch_size / max(len(data), 1), 3),
        "seconds": round(seconds, 1), "seconds_per_step": round(seconds / max(step, 1), 3),
        "frozen_parameters": frozen, "history": history, "evaluations": evaluations,
        "torch_threads": torch.get_num_threads(),
    }
    encoder.save_pretrained(out / MODEL_DIR, extra_config={"training": {
        "method": "uctopic-pretrain", "steps": step, "train_max_length": cfg.max_length,
        "temperature": cfg.temperature, "keep_prob": cfg.keep_prob}})
    write_json(out / REPORT, report)
    logger.info("UCTopic pre-training: %d steps in %.1f min, final loss %s", step,
                seconds / 60, history[-1]["loss"] if history else None)
    return report


# ---------------------------------------------------------------------------------- CCL
@dataclass
class PseudoLabels:
    """KMeans clusters of the instances and the confident pseudo-labels derived from them."""

    clusters: np.ndarray  # (n,) KMeans cluster of every instance
    centroids: np.ndarray  # (k, d) unit rows
    selected: np.ndarray  # (n,) bool: among the top fraction closest to their centroid
    mention_labels: dict[str, int]  # mention key -> majority cluster of its selected instances
    labels: np.ndarray  # (n,) pseudo-label of every instance (-1: mention unlabelled)


def pseudo_label(emb: np.ndarray, keys: Sequence[str], n_clusters: int, top_fraction: float,
                 seed: int = 0, n_init: int = 10, per_cluster: bool = True) -> PseudoLabels:
    """UCTopic §3.2 pseudo-labels: KMeans, the ``top_fraction`` closest instances (cosine to
    their centroid; per cluster or overall), then a majority vote per mention key."""
    from phrasekit.eval.entity_clustering import kmeans_labels

    if not 0 < top_fraction <= 1:
        raise ValueError(f"top_fraction must be in (0, 1], got {top_fraction}")
    if len(keys) != len(emb):
        raise ValueError(f"{len(emb)} embeddings but {len(keys)} mention keys")
    x = l2_normalize(emb)
    clusters, centroids = kmeans_labels(x, n_clusters, seed=seed, n_init=n_init)
    centroids = l2_normalize(centroids)
    sim = np.einsum("ij,ij->i", x, centroids[clusters])
    selected = np.zeros(len(x), dtype=bool)
    groups = [np.flatnonzero(clusters == c) for c in range(n_clusters)] if per_cluster else [
        np.arange(len(x))]
    for members in groups:
        if len(members) == 0:
            continue
        take = max(1, round(top_fraction * len(members)))
        best = members[np.argsort(-sim[members], kind="stable")[:take]]
        selected[best] = True
    votes: dict[str, Counter[int]] = {}
    closeness: dict[str, Counter[int]] = {}
    for i in np.flatnonzero(selected):
        votes.setdefault(keys[i], Counter())[int(clusters[i])] += 1
        closeness.setdefault(keys[i], Counter())[int(clusters[i])] += float(sim[i])
    mention_labels = {
        k: max(v, key=lambda c, k=k, v=v: (v[c], closeness[k][c] / v[c], -c))
        for k, v in votes.items()}
    labels = np.asarray([mention_labels.get(k, -1) for k in keys], dtype=np.int64)
    return PseudoLabels(clusters, centroids, selected, mention_labels, labels)


def assign_topics(emb: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """Eq. 4: the topic of each row is its most cosine-similar centroid."""
    return np.argmax(l2_normalize(emb) @ l2_normalize(centroids).T, axis=1)


LABEL_VIEWS = ("span", "context", "both")


def label_view_embeddings(encoder: SpanEncoder, rows: Sequence[Item], view: str,
                          batch_size: int, show_progress: bool) -> np.ndarray:
    """The vectors CCL clusters for its pseudo-labels: ``span`` (the mention in its sentence,
    the paper's choice), ``context`` (the mention masked: what the sentence says about it), or
    ``both`` (the two unit vectors concatenated, so each view weighs the same)."""
    items = [(s, (a, b)) for s, a, b in rows]
    views = ("span", "context") if view == "both" else (view,)
    parts = [encoder.encode_spans(items, mode=v, batch_size=batch_size,
                                  show_progress=show_progress) for v in views]
    return parts[0] if len(parts) == 1 else np.hstack([l2_normalize(p) for p in parts])


@dataclass
class CCLConfig:
    """Settings of one CCL fine-tuning run (paper §4.2: lr 1e-5, t in {5, 10, 20, 50}%)."""

    n_clusters: int
    top_fraction: float = 0.2
    steps: int = 200
    batch_size: int = 16
    lr: float = 1e-5
    weight_decay: float = 0.0
    temperature: float = 0.05
    keep_prob: float = 0.5
    negatives: str = "cluster"
    negatives_per_cluster: int = 1
    shared_negatives: bool = False
    singleton_positives: bool = False
    per_cluster_selection: bool = True
    label_view: str = "span"
    max_length: int = 64
    freeze_embeddings: bool = True
    seed: int = 0
    n_init: int = 10
    max_minutes: float | None = None
    eval_every: int = 0
    encode_batch_size: int = 64
    show_progress: bool = True

    def validate(self) -> None:
        """Fail fast on nonsense settings."""
        raise_failed([
            (self.n_clusters >= 2, f"n_clusters must be >= 2, got {self.n_clusters}"),
            (0 < self.top_fraction <= 1, "top_fraction must be in (0, 1]"),
            (self.steps >= 0, "steps must be >= 0"),
            (self.batch_size >= 2, "batch_size must be >= 2"),
            (self.lr > 0, "lr must be > 0"),
            (self.temperature > 0, "temperature must be > 0"),
            (0 <= self.keep_prob <= 1, "keep_prob must be in [0, 1]"),
            (self.negatives in ("cluster", "in-batch"),
             f"negatives must be 'cluster' or 'in-batch', got {self.negatives!r}"),
            (self.negatives_per_cluster >= 1, "negatives_per_cluster must be >= 1"),
            (self.label_view in LABEL_VIEWS,
             f"label_view must be one of {LABEL_VIEWS}, got {self.label_view!r}"),
            (self.max_length >= 8, "max_length must be >= 8"),
            (self.eval_every >= 0, "eval_every must be >= 0"),
        ])


@dataclass
class CCLResult:
    """What CCL leaves besides the fine-tuned encoder (changed in place)."""

    pseudo: PseudoLabels | None
    centroids: np.ndarray | None  # topic representations in the fine-tuned space
    topics: np.ndarray | None  # Eq. 4 topic of every instance after fine-tuning
    embeddings: np.ndarray | None  # span embeddings of the instances after fine-tuning
    history: list[dict[str, Any]]
    evaluations: list[dict[str, Any]]
    seconds: dict[str, float]

    def summary(self) -> dict[str, Any]:
        """JSON-ready report (no arrays)."""
        out: dict[str, Any] = {"history": self.history, "evaluations": self.evaluations,
                               "seconds": self.seconds}
        if self.pseudo is not None:
            out.update(selected=int(self.pseudo.selected.sum()),
                       labelled_mentions=len(self.pseudo.mention_labels),
                       labelled_instances=int((self.pseudo.labels >= 0).sum()),
                       cluster_sizes=np.bincount(self.pseudo.clusters).tolist())
        return out


class _InstanceIndex:
    """Instances grouped by mention key and sentence, for sampling positives and negatives."""

    def __init__(self, items: Sequence[Item], keys: Sequence[str]) -> None:
        self.by_key: dict[str, list[int]] = {}
        for i, k in enumerate(keys):
            self.by_key.setdefault(k, []).append(i)
        self.items, self.keys = items, keys

    def has_positive(self, i: int) -> bool:
        """Whether the mention of instance ``i`` also occurs in another sentence."""
        return any(self.items[j][0] != self.items[i][0] for j in self.by_key[self.keys[i]])

    def positive(self, i: int, rng: np.random.Generator) -> int | None:
        """Another instance of the same mention in a different sentence, or None."""
        others = [j for j in self.by_key[self.keys[i]] if self.items[j][0] != self.items[i][0]]
        return int(others[rng.integers(len(others))]) if others else None


def ccl_finetune(encoder: SpanEncoder, items: Sequence[tuple[str, tuple[int, int]]],
                 cfg: CCLConfig, keys: Sequence[str] | None = None,
                 callback: Callable[[SpanEncoder, int], dict[str, Any]] | None = None
                 ) -> CCLResult:
    """Fine-tune ``encoder`` in place on unlabeled instances with CCL (or in-batch negatives).

    ``items``: ``(sentence, (start, end))`` instances of the target data; ``keys``: the mention
    key of each (default :func:`mention_key` of the mention text). ``callback(encoder, step)``
    runs every ``eval_every`` steps and at the end; its results go to ``evaluations``.
    """
    cfg.validate()
    rows = validate_spans(items)
    if keys is None:
        keys = [mention_key(s[a:b]) for s, a, b in rows]
    if len(keys) != len(rows):
        raise ValueError(f"{len(rows)} items but {len(keys)} keys")
    model = encoder.model
    saved_length = model.max_length
    timings: dict[str, float] = {}
    pseudo = None
    t0 = time.time()
    if cfg.negatives == "cluster":
        emb = label_view_embeddings(encoder, rows, cfg.label_view, cfg.encode_batch_size,
                                    cfg.show_progress)
        timings["encode"] = round(time.time() - t0, 1)
        t1 = time.time()
        pseudo = pseudo_label(emb, keys, cfg.n_clusters, cfg.top_fraction, seed=cfg.seed,
                              n_init=cfg.n_init, per_cluster=cfg.per_cluster_selection)
        timings["kmeans"] = round(time.time() - t1, 1)
        pool = np.flatnonzero(pseudo.labels >= 0)
        logger.info("CCL: %d of %d instances selected, %d mentions labelled, %d instances "
                    "in the training pool", pseudo.selected.sum(), len(rows),
                    len(pseudo.mention_labels), len(pool))
        by_cluster: list[list[str]] = [[] for _ in range(cfg.n_clusters)]
        for k, c in sorted(pseudo.mention_labels.items()):
            by_cluster[c].append(k)
        if sum(1 for ms in by_cluster if ms) < 2:
            raise ValueError("CCL needs pseudo-labelled mentions in at least 2 clusters")
    else:
        pool = np.arange(len(rows))
        by_cluster = []
    index = _InstanceIndex(rows, keys)
    if not cfg.singleton_positives:
        pool = np.asarray([i for i in pool if index.has_positive(int(i))], dtype=np.int64)
        if len(pool) == 0:
            raise ValueError("CCL: no (pseudo-labelled) mention occurs in two different "
                             "sentences, so there is no positive pair; give it more text, a "
                             "larger top_fraction, or allow singleton_positives")
    if cfg.freeze_embeddings:
        freeze_word_embeddings(model)
    optimizer = make_optimizer(model, cfg.lr, cfg.weight_decay)
    loss_fn = InfoNCELoss(cfg.temperature)
    model.max_length = cfg.max_length
    history: list[dict[str, Any]] = []
    evaluations: list[dict[str, Any]] = []

    def evaluate(step: int) -> None:
        if callback is not None:
            model.eval()
            current, model.max_length = model.max_length, saved_length
            try:
                evaluations.append({"step": step, **callback(encoder, step)})
            finally:
                model.max_length = current

    t_train = time.time()
    budget = cfg.max_minutes * 60 if cfg.max_minutes else float("inf")
    bar = tqdm(range(cfg.steps), desc=f"ccl[{cfg.negatives}]", unit="step",
               disable=not cfg.show_progress)
    try:
        for step in bar:
            if time.time() - t_train >= budget:
                break
            if cfg.eval_every and step % cfg.eval_every == 0:
                evaluate(step)
            model.train()
            rng = np.random.default_rng([cfg.seed, step, 2])
            torch.manual_seed(cfg.seed * 1_000_003 + step)
            anchors_i = _sample_anchors(pool, keys, cfg.batch_size, rng,
                                        distinct=cfg.negatives == "in-batch")
            pos_i, pos_modes = [], []
            for i in anchors_i:
                j = index.positive(i, rng)
                if j is None:  # a mention seen once: itself, mention kept (the anchor is masked)
                    pos_i.append(i)
                    pos_modes.append("span")
                else:
                    pos_i.append(j)
                    pos_modes.append("span" if rng.random() < cfg.keep_prob else "context")
            b = len(anchors_i)
            if cfg.negatives == "in-batch":
                emb_t = model.embed([rows[i] for i in anchors_i] + [rows[j] for j in pos_i],
                                    ["context"] * b + pos_modes)
                loss = loss_fn(emb_t[:b], emb_t[b:])
            elif cfg.shared_negatives:
                neg_i, neg_c = _shared_negatives(by_cluster, index, cfg.negatives_per_cluster,
                                                 rng)
                neg_modes = masked_modes(len(neg_i), cfg.keep_prob, rng)
                emb_t = model.embed([rows[i] for i in anchors_i] + [rows[j] for j in pos_i]
                                    + [rows[j] for j in neg_i],
                                    ["context"] * b + pos_modes + neg_modes)
                a, p, n = emb_t[:b], emb_t[b:2 * b], emb_t[2 * b:]
                own = torch.as_tensor(pseudo.labels[anchors_i])
                same = own[:, None] == torch.as_tensor(neg_c)[None, :]
                neg_logits = (a @ n.T).masked_fill(same, float("-inf"))
                logits = torch.cat([(a * p).sum(-1, keepdim=True), neg_logits],
                                   dim=1) / cfg.temperature
                loss = nn.functional.cross_entropy(logits, torch.zeros(b, dtype=torch.long))
            else:
                neg_i = []
                for i in anchors_i:
                    own = int(pseudo.labels[i])
                    for c in range(cfg.n_clusters):
                        if c == own or not by_cluster[c]:
                            continue
                        for _ in range(cfg.negatives_per_cluster):
                            k = by_cluster[c][rng.integers(len(by_cluster[c]))]
                            cand = index.by_key[k]
                            neg_i.append(int(cand[rng.integers(len(cand))]))
                per = len(neg_i) // b
                neg_modes = masked_modes(len(neg_i), cfg.keep_prob, rng)
                emb_t = model.embed([rows[i] for i in anchors_i] + [rows[j] for j in pos_i]
                                    + [rows[j] for j in neg_i],
                                    ["context"] * b + pos_modes + neg_modes)
                a, p, n = emb_t[:b], emb_t[b:2 * b], emb_t[2 * b:].reshape(b, per, -1)
                logits = torch.cat([(a * p).sum(-1, keepdim=True),
                                    torch.einsum("bd,bkd->bk", a, n)], dim=1) / cfg.temperature
                loss = nn.functional.cross_entropy(logits, torch.zeros(b, dtype=torch.long))
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            history.append({"step": step + 1, "loss": round(loss.item(), 5)})
            bar.set_postfix(loss=f"{history[-1]['loss']:.3f}")
    finally:
        bar.close()
        model.max_length = saved_length
        model.eval()
    steps_done = len(history)
    timings["train"] = round(time.time() - t_train, 1)
    evaluate(steps_done)
    centroids = topics = final = None
    if pseudo is not None:
        t2 = time.time()
        final = encoder.encode_spans([(s, (a, b)) for s, a, b in rows], mode="span",
                                     batch_size=cfg.encode_batch_size,
                                     show_progress=cfg.show_progress)
        # centroids re-estimated in the fine-tuned span space from the confident members
        # (all members for a cluster without any: KMeans never leaves a cluster empty)
        centroids = np.stack([
            _unit(final[pseudo.selected & (pseudo.clusters == c)].mean(axis=0))
            if np.any(pseudo.selected & (pseudo.clusters == c))
            else _unit(final[pseudo.clusters == c].mean(axis=0))
            for c in range(cfg.n_clusters)]).astype(np.float32)
        topics = assign_topics(final, centroids)
        timings["topics"] = round(time.time() - t2, 1)
    timings["total"] = round(time.time() - t0, 1)
    timings["steps"] = steps_done
    return CCLResult(pseudo, centroids, topics, final, history, evaluations, timings)


def _shared_negatives(by_cluster: Sequence[Sequence[str]], index: _InstanceIndex, per_cluster: int,
                      rng: np.random.Generator) -> tuple[list[int], list[int]]:
    """``per_cluster`` random instances of random mentions of every non-empty cluster, and the
    cluster of each (the batch's shared negatives)."""
    inst, clusters = [], []
    for c, mentions in enumerate(by_cluster):
        for _ in range(per_cluster if mentions else 0):
            cand = index.by_key[mentions[rng.integers(len(mentions))]]
            inst.append(int(cand[rng.integers(len(cand))]))
            clusters.append(c)
    return inst, clusters


def _unit(v: np.ndarray) -> np.ndarray:
    return v / max(float(np.linalg.norm(v)), 1e-12)


def _sample_anchors(pool: np.ndarray, keys: Sequence[str], n: int, rng: np.random.Generator,
                    distinct: bool) -> list[int]:
    """``n`` anchor instances from ``pool`` (with distinct mention keys when ``distinct``)."""
    if len(pool) == 0:
        raise ValueError("no instance to train on")
    if not distinct:
        return [int(i) for i in pool[rng.integers(len(pool), size=n)]]
    out: list[int] = []
    seen: set[str] = set()
    for i in rng.permutation(pool):
        if keys[i] not in seen:
            seen.add(keys[i])
            out.append(int(i))
            if len(out) == n:
                break
    if len(out) < 2:
        raise ValueError("in-batch fine-tuning needs at least 2 distinct mentions")
    return out
