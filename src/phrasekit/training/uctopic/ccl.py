"""UCTopic's cluster-assisted contrastive learning (CCL, paper §3.2, unsupervised).

``ccl_finetune(encoder, items, CCLConfig(...))`` fine-tunes a span encoder in place on the
instances of the data being mined:

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
   For every other cluster c_j, ``negatives_per_cluster`` mentions of c_j are drawn and one
   instance of each is a negative (Eq. 3). With ``shared_negatives`` the batch draws
   ``negatives_per_cluster`` instances per cluster once and every anchor uses those of the
   clusters other than its own: the same estimate of Eq. 3's denominator at k·n instead of
   b·(k-1)·n encoded negatives per step, which is what makes k ≈ 20 topics affordable on a
   CPU. The anchor is masked; positives and negatives keep their mention with probability
   ``keep_prob``. ``negatives="in-batch"`` is the paper's "w/ In-B." ablation: no clustering,
   the other positives of the batch are the negatives;
4. afterwards the topic of an instance is its nearest centroid (Eq. 4); the centroids are
   re-estimated in the fine-tuned space as the normalised means of the pseudo-labelled
   instances of each cluster.

The steps run on :class:`~phrasekit.training.core.trainer.Trainer` (per-step seeding, time budget,
history) without checkpoints: fine-tuning is one short stage of topic mining and writes
nothing to disk.
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from phrasekit.encoders.pooling import l2_normalize
from phrasekit.encoders.span import SpanEncoder, validate_spans
from phrasekit.eval.entity_clustering import kmeans_labels
from phrasekit.training.core.config import raise_failed
from phrasekit.training.core.losses import InfoNCELoss
from phrasekit.training.core.trainer import Trainer
from phrasekit.training.uctopic.common import (
    Item,
    freeze_word_embeddings,
    in_batch_loss,
    make_optimizer,
    masked_modes,
    mention_key,
)

logger = logging.getLogger(__name__)

LABEL_VIEWS = ("span", "context", "both")

#: Steps per history row when no ``eval_every`` is given.
HISTORY_EVERY = 10


# ---------------------------------------------------------------------------------- pseudo-labels
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


# ---------------------------------------------------------------------------------- settings
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


# ---------------------------------------------------------------------------------- sampling
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

    def positive(self, i: int, rng: random.Random) -> int | None:
        """Another instance of the same mention in a different sentence, or None."""
        others = [j for j in self.by_key[self.keys[i]] if self.items[j][0] != self.items[i][0]]
        return others[rng.randrange(len(others))] if others else None

    def draw(self, mentions: Sequence[str], rng: random.Random) -> int:
        """One random instance of a random mention among ``mentions``."""
        cand = self.by_key[mentions[rng.randrange(len(mentions))]]
        return cand[rng.randrange(len(cand))]


def _sample_anchors(pool: np.ndarray, keys: Sequence[str], n: int, rng: random.Random,
                    distinct: bool) -> list[int]:
    """``n`` anchor instances from ``pool`` (with distinct mention keys when ``distinct``)."""
    if len(pool) == 0:
        raise ValueError("no instance to train on")
    if not distinct:
        return [int(pool[rng.randrange(len(pool))]) for _ in range(n)]
    out: list[int] = []
    seen: set[str] = set()
    for i in rng.sample(pool.tolist(), len(pool)):
        if keys[i] not in seen:
            seen.add(keys[i])
            out.append(int(i))
            if len(out) == n:
                break
    if len(out) < 2:
        raise ValueError("in-batch fine-tuning needs at least 2 distinct mentions")
    return out


def _contrast(a: torch.Tensor, p: torch.Tensor, neg_logits: torch.Tensor,
              temperature: float) -> torch.Tensor:
    """Eq. 3: cross-entropy of each anchor's positive against its negatives' logits."""
    logits = torch.cat([(a * p).sum(-1, keepdim=True), neg_logits], dim=1) / temperature
    return nn.functional.cross_entropy(logits, torch.zeros(len(a), dtype=torch.long))


# ---------------------------------------------------------------------------------- the task
class CCLTask:
    """CCL (or in-batch) fine-tuning steps for the Trainer, with the callback's evaluations."""

    def __init__(self, encoder: SpanEncoder, rows: Sequence[Item], keys: Sequence[str],
                 cfg: CCLConfig, pseudo: PseudoLabels | None,
                 callback: Callable[[SpanEncoder, int], dict[str, Any]] | None) -> None:
        self.encoder, self.model = encoder, encoder.model
        self.rows, self.keys, self.cfg, self.pseudo = rows, keys, cfg, pseudo
        self.callback = callback
        self.evaluations: list[dict[str, Any]] = []
        self.inference_length = self.model.max_length
        self.index = _InstanceIndex(rows, keys)
        self.by_cluster = self._mentions_by_cluster()
        self.pool = self._training_pool()
        if cfg.freeze_embeddings:
            freeze_word_embeddings(self.model)
        self.optimizer = make_optimizer(self.model, cfg.lr, cfg.weight_decay)
        self.loss_fn = InfoNCELoss(cfg.temperature)

    def _mentions_by_cluster(self) -> list[list[str]]:
        if self.pseudo is None:
            return []
        by_cluster: list[list[str]] = [[] for _ in range(self.cfg.n_clusters)]
        for k, c in sorted(self.pseudo.mention_labels.items()):
            by_cluster[c].append(k)
        if sum(1 for ms in by_cluster if ms) < 2:
            raise ValueError("CCL needs pseudo-labelled mentions in at least 2 clusters")
        return by_cluster

    def _training_pool(self) -> np.ndarray:
        """The anchor candidates: labelled instances (all without clustering), by default only
        those whose mention occurs in another sentence."""
        pool = (np.arange(len(self.rows)) if self.pseudo is None
                else np.flatnonzero(self.pseudo.labels >= 0))
        if not self.cfg.singleton_positives:
            pool = np.asarray([i for i in pool if self.index.has_positive(int(i))],
                              dtype=np.int64)
            if len(pool) == 0:
                raise ValueError("CCL: no (pseudo-labelled) mention occurs in two different "
                                 "sentences, so there is no positive pair; give it more text, "
                                 "a larger top_fraction, or allow singleton_positives")
        logger.info("CCL: %d of %d instances in the training pool", len(pool), len(self.rows))
        return pool

    def fingerprint(self) -> str:
        """Hash of the settings and the instances (the run keeps no checkpoint to check)."""
        blob = json.dumps({**asdict(self.cfg), "instances": len(self.rows)}, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def lr_factor(self, step: int) -> float:
        """Constant learning rate (§4.2)."""
        return 1.0

    def step_loss(self, step: int, rng: random.Random) -> tuple[torch.Tensor, dict[str, float]]:
        """Anchors, positives and (cluster) negatives of one step, and their contrastive loss."""
        cfg = self.cfg
        anchors = _sample_anchors(self.pool, self.keys, cfg.batch_size, rng,
                                  distinct=cfg.negatives == "in-batch")
        positives, modes = self._positives(anchors, rng)
        if cfg.negatives == "in-batch":
            loss = in_batch_loss(self.model, [self.rows[i] for i in anchors],
                                 [self.rows[j] for j in positives], modes, self.loss_fn)
        elif cfg.shared_negatives:
            loss = self._shared_negatives_loss(anchors, positives, modes, rng)
        else:
            loss = self._own_negatives_loss(anchors, positives, modes, rng)
        return loss, {"loss": float(loss.detach())}

    def _positives(self, anchors: list[int], rng: random.Random) -> tuple[list[int], list[str]]:
        """A positive per anchor and its mode: an instance of the mention in another sentence
        (mention kept w.p. ``keep_prob``), else the anchor's own sentence with the mention."""
        positives, modes = [], []
        for i in anchors:
            j = self.index.positive(i, rng)
            positives.append(i if j is None else j)
            keep = j is None or rng.random() < self.cfg.keep_prob
            modes.append("span" if keep else "context")
        return positives, modes

    def _embed(self, anchors: list[int], positives: list[int], modes: list[str],
               negatives: list[int], rng: random.Random
               ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Anchors (masked), positives and negatives in one forward pass."""
        b = len(anchors)
        neg_modes = masked_modes(len(negatives), self.cfg.keep_prob, rng)
        emb = self.model.embed([self.rows[i] for i in [*anchors, *positives, *negatives]],
                               ["context"] * b + modes + neg_modes)
        return emb[:b], emb[b:2 * b], emb[2 * b:]

    def _shared_negatives_loss(self, anchors: list[int], positives: list[int],
                               modes: list[str], rng: random.Random) -> torch.Tensor:
        """Eq. 3 with one set of ``negatives_per_cluster`` instances per cluster for the batch;
        each anchor ignores those of its own cluster."""
        drawn = [(self.index.draw(ms, rng), c) for c, ms in enumerate(self.by_cluster)
                 for _ in range(self.cfg.negatives_per_cluster if ms else 0)]
        a, p, n = self._embed(anchors, positives, modes, [i for i, _ in drawn], rng)
        own = torch.as_tensor(self.pseudo.labels[anchors])
        same = own[:, None] == torch.as_tensor([c for _, c in drawn])[None, :]
        return _contrast(a, p, (a @ n.T).masked_fill(same, float("-inf")), self.cfg.temperature)

    def _own_negatives_loss(self, anchors: list[int], positives: list[int], modes: list[str],
                            rng: random.Random) -> torch.Tensor:
        """Eq. 3: for every anchor, ``negatives_per_cluster`` instances of every other
        cluster."""
        negatives = [self.index.draw(ms, rng) for i in anchors
                     for c, ms in enumerate(self.by_cluster)
                     if c != int(self.pseudo.labels[i]) and ms
                     for _ in range(self.cfg.negatives_per_cluster)]
        a, p, n = self._embed(anchors, positives, modes, negatives, rng)
        n = n.reshape(len(anchors), len(negatives) // len(anchors), -1)
        return _contrast(a, p, torch.einsum("bd,bkd->bk", a, n), self.cfg.temperature)

    def evaluate(self, step: int) -> dict[str, Any]:
        """Run the callback every ``eval_every`` steps (its results go to ``evaluations``)."""
        if self.cfg.eval_every and step % self.cfg.eval_every == 0:
            self.run_callback(step)
        return {}

    def run_callback(self, step: int) -> None:
        """Score the encoder as it is now, at its inference length and without dropout."""
        if self.callback is None:
            return
        self.model.eval()
        current, self.model.max_length = self.model.max_length, self.inference_length
        try:
            self.evaluations.append({"step": step, **self.callback(self.encoder, step)})
        finally:
            self.model.max_length = current


# ---------------------------------------------------------------------------------- the run
def ccl_finetune(encoder: SpanEncoder, items: Sequence[tuple[str, tuple[int, int]]],
                 cfg: CCLConfig, keys: Sequence[str] | None = None,
                 callback: Callable[[SpanEncoder, int], dict[str, Any]] | None = None
                 ) -> CCLResult:
    """Fine-tune ``encoder`` in place on unlabeled instances with CCL (or in-batch negatives).

    ``items``: ``(sentence, (start, end))`` instances of the target data; ``keys``: the mention
    key of each (default :func:`mention_key` of the mention text). ``callback(encoder, step)``
    runs every ``eval_every`` steps (from step 0) and at the end; its results go to
    ``evaluations``.
    """
    cfg.validate()
    rows = validate_spans(items)
    keys = [mention_key(s[a:b]) for s, a, b in rows] if keys is None else list(keys)
    if len(keys) != len(rows):
        raise ValueError(f"{len(rows)} items but {len(keys)} keys")
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    pseudo = _pseudo_labels(encoder, rows, keys, cfg, timings) if cfg.negatives == "cluster" \
        else None
    task = CCLTask(encoder, rows, keys, cfg, pseudo, callback)
    history, steps = _train(task, timings)
    centroids = topics = final = None
    if pseudo is not None:
        t1 = time.perf_counter()
        final, centroids = _fine_tuned_centroids(encoder, rows, pseudo, cfg)
        topics = assign_topics(final, centroids)
        timings["topics"] = round(time.perf_counter() - t1, 1)
    timings["total"] = round(time.perf_counter() - t0, 1)
    timings["steps"] = steps
    return CCLResult(pseudo, centroids, topics, final, history, task.evaluations, timings)


def _pseudo_labels(encoder: SpanEncoder, rows: Sequence[Item], keys: Sequence[str],
                   cfg: CCLConfig, timings: dict[str, float]) -> PseudoLabels:
    """Steps 1 and 2: embed the instances in the label view, cluster, pseudo-label."""
    t0 = time.perf_counter()
    emb = label_view_embeddings(encoder, rows, cfg.label_view, cfg.encode_batch_size,
                                cfg.show_progress)
    timings["encode"] = round(time.perf_counter() - t0, 1)
    t1 = time.perf_counter()
    pseudo = pseudo_label(emb, keys, cfg.n_clusters, cfg.top_fraction, seed=cfg.seed,
                          n_init=cfg.n_init, per_cluster=cfg.per_cluster_selection)
    timings["kmeans"] = round(time.perf_counter() - t1, 1)
    logger.info("CCL: %d of %d instances selected, %d mentions labelled", pseudo.selected.sum(),
                len(rows), len(pseudo.mention_labels))
    return pseudo


def _train(task: CCLTask, timings: dict[str, float]) -> tuple[list[dict[str, Any]], int]:
    """Step 3 on the Trainer, in memory, at the training length; returns (history, steps)."""
    cfg, model = task.cfg, task.model
    if cfg.eval_every:
        task.run_callback(0)
    trainer = Trainer(None, total_steps=cfg.steps, seed=cfg.seed, max_minutes=cfg.max_minutes,
                      checkpoint_every=cfg.eval_every or HISTORY_EVERY,
                      show_progress=cfg.show_progress, desc=f"ccl[{cfg.negatives}]")
    t0 = time.perf_counter()
    model.max_length = cfg.max_length
    try:
        result = trainer.fit(task)
    finally:
        model.max_length = task.inference_length
        model.eval()
    timings["train"] = round(time.perf_counter() - t0, 1)
    if not task.evaluations or task.evaluations[-1]["step"] != result.steps:
        task.run_callback(result.steps)
    return result.history, result.steps


def _fine_tuned_centroids(encoder: SpanEncoder, rows: Sequence[Item], pseudo: PseudoLabels,
                          cfg: CCLConfig) -> tuple[np.ndarray, np.ndarray]:
    """Step 4: span embeddings after fine-tuning and the centroids re-estimated among them
    from the confident members (all members for a cluster without any: KMeans never leaves a
    cluster empty)."""
    final = encoder.encode_spans([(s, (a, b)) for s, a, b in rows], mode="span",
                                 batch_size=cfg.encode_batch_size,
                                 show_progress=cfg.show_progress)
    centroids = []
    for c in range(cfg.n_clusters):
        members = pseudo.clusters == c
        confident = pseudo.selected & members
        mean = final[confident if confident.any() else members].mean(axis=0)
        centroids.append(l2_normalize(mean))
    return final, np.stack(centroids).astype(np.float32)
