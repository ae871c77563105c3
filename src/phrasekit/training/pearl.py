"""PEARL training on CPU: augmentation positives, hard negatives, InfoNCE + type loss, averaging.

``train_pearl(PearlTrainingConfig(data_dir=..., out_dir=...))`` runs the whole recipe:
1. reads the dataset written by ``build_pearl_dataset`` (phrases with types, paraphrase pairs,
   word synonyms, mined hard negatives);
2. for every step, takes ``batch_size`` anchors (a per-epoch permutation), makes one positive
   per anchor with a randomly chosen enabled augmentation, adds ``hard_negatives`` mined
   negatives per anchor, and minimises InfoNCE (tau = 0.07; in-batch + hard negatives) plus
   the phrase-type cross-entropy, with Adam and an exponentially decayed learning rate;
3. checkpoints every ``checkpoint_every`` steps (``checkpoint.safetensors``; a rerun with the
   same output folder resumes, bit-for-bit the same batches since every step's randomness is
   derived from (seed, step));
4. interpolates fine-tuned and initial weights, choosing the coefficient on development splits
   only (``phrasekit.eval.dev``), and saves the model folder ``out_dir/model``.

CPU choices (documented in the README): word embeddings frozen (never stored, most of the
model's size), short sequences (``max_seq_length`` 24), batch 64 anchors.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import logging
import random
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm

from phrasekit.encoders.pearl import TYPE_HEAD_INPUTS, PearlConfig, PearlEncoder, PearlModel
from phrasekit.io import write_json
from phrasekit.training.averaging import CliffGuard, select_alphas
from phrasekit.training.char_mimic import CharMimicConfig, pretrain_char
from phrasekit.training.checkpoint import CHECKPOINT, load_checkpoint, save_checkpoint
from phrasekit.training.losses import (
    CrossBatchMemory,
    InfoNCELoss,
    LengthCovarianceLoss,
    SimilarityPreservationLoss,
    SoftLabelLoss,
    TypeClassificationLoss,
)

logger = logging.getLogger(__name__)

DATA_FILES = ("phrases.jsonl.gz", "paraphrases.tsv.gz", "word_synonyms.json.gz",
              "hard_negatives.jsonl.gz")


@dataclass
class PearlTrainingConfig:
    """Hyper-parameters of one PEARL run (defaults = the shipped ``pearl-minilm``)."""

    data_dir: str
    out_dir: str
    backbone: str = "minilm"
    seed: int = 0  # initialisation of the new modules
    data_seed: int | None = 1  # batch order, augmentation and dropout; None = seed
    batch_size: int = 64
    hard_negatives: int = 2
    memory_size: int = 0  # recent batches' candidates kept as extra negatives (0 = off)
    temperature: float = 0.07
    type_weight: float = 1.0
    lr: float = 3e-5
    lr_new: float = 1e-3
    lr_proj: float = 1e-4
    lr_char: float | None = None  # char encoder's rate; None: lr_new
    char_pretrain_steps: int = 0  # LOVE-style mimicry of the backbone first (char_mimic.py)
    type_head_on: str = "output"  # the type head reads the output embedding or [p; c]
    preserve_weight: float = 0.0  # keep in-batch cosines near the initial model's (0 = off)
    length_weight: float = 0.0  # no more length covariance than the initial model (0 = off)
    supersense_weight: float = 1.0  # WordNet noun-supersense head on the output (0 = off)
    wordnet_dir: str | None = None  # for supersense labels; None = the shared data's wordnet/
    decay_every: int = 100
    decay_rate: float = 0.98
    max_steps: int = 800
    max_minutes: float | None = None
    checkpoint_every: int = 100
    max_seq_length: int = 24
    use_char: bool = True
    use_type: bool = True
    char_aug: bool = True
    token_aug: bool = True
    phrase_aug: bool = True
    freeze_embeddings: bool = True
    alphas: tuple[float, ...] = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.85, 1.0)
    alpha: float | None = None
    proj_alphas: tuple[float, ...] | None = None  # e.g. (0.0, 0.25, 0.5, 1.0): own grid
    alpha_proj: float | None = None
    cliff_margin: float | None = 0.5  # CliffGuard: alpha below margin x the dev cliff (0/None: off)
    dev_data_dir: str | None = None
    num_threads: int | None = None
    show_progress: bool = True
    limit_phrases: int | None = None
    notes: dict[str, Any] = field(default_factory=dict)

    def fingerprint(self) -> str:
        """Hash of the settings that change the training trajectory (for safe resuming)."""
        keys = ("data_dir", "backbone", "seed", "batch_size", "hard_negatives", "temperature",
                "type_weight", "lr", "lr_new", "lr_proj", "decay_every", "decay_rate",
                "max_seq_length", "use_char", "use_type", "char_aug", "token_aug", "phrase_aug",
                "freeze_embeddings", "limit_phrases")
        d = asdict(self)
        # settings added later count only when they differ from the behaviour before them, so
        # older checkpoints still resume
        keys += tuple(k for k, before in _LATER_SETTINGS.items() if d[k] != before)
        blob = json.dumps({k: d[k] for k in keys}, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def validate(self) -> None:
        """Fail fast on nonsense settings and a missing dataset."""
        if self.batch_size < 2:
            raise ValueError("batch_size must be >= 2 (in-batch negatives)")
        if self.hard_negatives < 0 or self.max_steps < 1 or self.checkpoint_every < 1:
            raise ValueError("hard_negatives >= 0, max_steps >= 1, checkpoint_every >= 1")
        if self.memory_size < 0:
            raise ValueError(f"memory_size must be >= 0, got {self.memory_size}")
        if self.type_head_on not in TYPE_HEAD_INPUTS:
            raise ValueError(f"type_head_on must be one of {TYPE_HEAD_INPUTS}")
        for name in ("type_weight", "preserve_weight", "length_weight", "supersense_weight"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        if self.char_pretrain_steps < 0:
            raise ValueError("char_pretrain_steps must be >= 0")
        if self.char_pretrain_steps and not self.use_char:
            raise ValueError("char_pretrain_steps needs the char encoder (use_char)")
        if not (self.char_aug or self.token_aug or self.phrase_aug):
            raise ValueError("enable at least one augmentation level")
        if self.cliff_margin:
            CliffGuard(margin=self.cliff_margin)  # validates
        for name in ("alpha", "alpha_proj"):
            value = getattr(self, name)
            if value is not None and not 0 <= value <= 1:
                raise ValueError(f"{name} must be in [0, 1], got {value}")
        for name in DATA_FILES:
            if not (Path(self.data_dir) / name).is_file():
                raise FileNotFoundError(
                    f"{Path(self.data_dir) / name} missing: build the dataset first "
                    "(phrasekit train pearl-data --out DIR)")


_LATER_SETTINGS: dict[str, Any] = {"lr_char": None, "char_pretrain_steps": 0,
                                   "type_head_on": "features", "preserve_weight": 0.0,
                                   "length_weight": 0.0, "data_seed": None,
                                   "supersense_weight": 0.0, "memory_size": 0}
#: What a saved run's settings mean when a key is missing (it was saved before the setting
#: existed); cliff_margin only changes the choice of alpha, so it is not fingerprinted.
_SAVED_BEFORE: dict[str, Any] = {**_LATER_SETTINGS, "cliff_margin": None,
                                 "alphas": (0.3, 0.4, 0.5, 0.6, 0.7, 0.85, 1.0)}


@dataclass
class PearlData:
    """The training dataset in memory."""

    texts: list[str]
    types: np.ndarray
    type_names: list[str]
    paraphrases: list[tuple[str, str]]
    synonyms: dict[str, list[str]]
    hard_negatives: dict[str, list[str]]

    @classmethod
    def load(cls, data_dir: str | Path, type_names: list[str], limit: int | None = None
             ) -> PearlData:
        """Read the four dataset files; unknown type labels map to -1 (ignored by the loss)."""
        d = Path(data_dir)
        index = {t: i for i, t in enumerate(type_names)}
        texts, types = [], []
        with gzip.open(d / "phrases.jsonl.gz", "rt", encoding="utf-8") as fh:
            for line in fh:
                rec = json.loads(line)
                texts.append(rec["text"])
                types.append(index.get(rec.get("type", ""), -1))
                if limit and len(texts) >= limit:
                    break
        pairs = []
        with gzip.open(d / "paraphrases.tsv.gz", "rt", encoding="utf-8") as fh:
            for line in fh:
                parts = line.rstrip("\n").split("\t")
                if len(parts) >= 2 and parts[0] and parts[1]:
                    pairs.append((parts[0], parts[1]))
        with gzip.open(d / "word_synonyms.json.gz", "rt", encoding="utf-8") as fh:
            synonyms = json.load(fh)
        negatives: dict[str, list[str]] = {}
        with gzip.open(d / "hard_negatives.jsonl.gz", "rt", encoding="utf-8") as fh:
            for line in fh:
                rec = json.loads(line)
                if rec.get("negatives"):
                    negatives[rec["text"]] = list(rec["negatives"])
        if not texts:
            raise ValueError(f"{d}: no training phrases")
        return cls(texts, np.asarray(types, dtype=np.int64), type_names, pairs, synonyms,
                   negatives)


def _lr_factor(cfg: PearlTrainingConfig, step: int) -> float:
    """Exponential step decay: ``decay_rate ** (step // decay_every)``."""
    return cfg.decay_rate ** (step // cfg.decay_every)


def _step_indices(n: int, batch: int, step: int, seed: int) -> np.ndarray:
    """Anchor indices of one step: consecutive slices of a per-epoch permutation."""
    start = step * batch
    out = []
    while len(out) < batch:
        epoch, offset = divmod(start, n)
        perm = np.random.default_rng([seed, epoch]).permutation(n)
        take = perm[offset : offset + batch - len(out)]
        out.extend(take.tolist())
        start += len(take)
    return np.asarray(out, dtype=np.int64)


def build_model(cfg: PearlTrainingConfig) -> PearlModel:
    """A fresh PEARL model (equal to its backbone) configured for training."""
    from phrasekit.encoders.char import CharCNNConfig
    from phrasekit.phrases.supersenses import NOUN_SUPERSENSES
    from phrasekit.phrases.types import PHRASE_TYPES

    pcfg = PearlConfig(backbone=cfg.backbone, max_seq_length=cfg.max_seq_length,
                       use_char=cfg.use_char, types=list(PHRASE_TYPES),
                       type_loss=cfg.use_type, type_head_on=cfg.type_head_on,
                       char=CharCNNConfig(out_linear=cfg.char_pretrain_steps > 0),
                       supersenses=list(NOUN_SUPERSENSES) if cfg.supersense_weight > 0 else [])
    model = PearlModel(pcfg)
    if cfg.freeze_embeddings:
        model.backbone.embeddings.word_embeddings.weight.requires_grad_(False)
    return model


def _frozen_copy(model: PearlModel) -> PearlModel:
    """A gradient-free copy in eval mode (no dropout), e.g. of the initial model."""
    import copy

    ref = copy.deepcopy(model).eval()
    ref.requires_grad_(False)
    return ref


def _optimizer(model: PearlModel, cfg: PearlTrainingConfig) -> torch.optim.Adam:
    groups = [
        {"params": [p for p in model.backbone.parameters() if p.requires_grad], "lr": cfg.lr,
         "base_lr": cfg.lr},
        {"params": list(model.proj.parameters()), "lr": cfg.lr_proj, "base_lr": cfg.lr_proj},
    ]
    if model.char is not None:
        lr = cfg.lr_new if cfg.lr_char is None else cfg.lr_char
        groups.append({"params": list(model.char.parameters()), "lr": lr, "base_lr": lr})
    for head in (model.head if cfg.use_type else None, model.sense_head):
        if head is not None:
            groups.append({"params": list(head.parameters()), "lr": cfg.lr_new,
                           "base_lr": cfg.lr_new})
    return torch.optim.Adam(groups)


class _SupersenseTargets:
    """Supersense target rows for the texts of a step: noun phrases (and untyped texts) get
    the distribution of their head's WordNet senses; other phrases and unknown heads none."""

    def __init__(self, cfg: PearlTrainingConfig, data: PearlData) -> None:
        from phrasekit.phrases.supersenses import NOUN_SUPERSENSES, SupersenseLexicon
        from phrasekit.settings import data_dir as shared_data_dir

        folder = Path(cfg.wordnet_dir) if cfg.wordnet_dir else shared_data_dir() / "wordnet"
        self.lexicon = SupersenseLexicon.from_wordnet(folder)
        self.type_names = data.type_names
        self.cache: dict[str, np.ndarray] = {}
        self.zero = np.zeros(len(NOUN_SUPERSENSES), dtype=np.float32)

    def row(self, text: str, type_id: int) -> np.ndarray:
        if type_id >= 0 and not self.type_names[type_id].startswith("NP-"):
            return self.zero
        if text not in self.cache:
            found = self.lexicon.distribution(text)
            self.cache[text] = self.zero if found is None else found
        return self.cache[text]

    def coverage(self, texts: list[str], types: np.ndarray) -> float:
        """Share of the phrases that get a label (reported, and logged at the start)."""
        hits = sum(bool(self.row(t, int(k)).any()) for t, k in zip(texts, types, strict=True))
        return hits / max(1, len(texts))

    def __call__(self, texts: list[str], type_ids: list[int]) -> torch.Tensor:
        return torch.from_numpy(np.stack([self.row(t, k)
                                          for t, k in zip(texts, type_ids, strict=True)]))


def _make_augmenter(cfg: PearlTrainingConfig, data: PearlData) -> Any:
    from phrasekit.phrases.augment import Augmenter, paraphrase_map

    return Augmenter(char=cfg.char_aug, token=cfg.token_aug, phrase=cfg.phrase_aug,
                     synonyms=data.synonyms, paraphrases=paraphrase_map(data.paraphrases))


def train_pearl(cfg: PearlTrainingConfig) -> dict[str, Any]:
    """Run (or resume) training, choose the averaging coefficient on dev, save the model.

    Returns a report dict (also written to ``out_dir/report.json``).
    """
    from phrasekit.phrases.types import PHRASE_TYPES

    cfg.validate()
    dev_dir = _dev_dir(cfg.dev_data_dir, cfg)
    if cfg.num_threads:
        torch.set_num_threads(int(cfg.num_threads))
    out = Path(cfg.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(cfg.seed)
    data = PearlData.load(cfg.data_dir, list(PHRASE_TYPES), cfg.limit_phrases)
    logger.info("PEARL data: %d phrases, %d paraphrase pairs, %d synonym words, "
                "%d phrases with hard negatives", len(data.texts), len(data.paraphrases),
                len(data.synonyms), len(data.hard_negatives))
    augment = _make_augmenter(cfg, data)
    type_of = dict(zip(data.texts, data.types.tolist(), strict=True))
    senses = _SupersenseTargets(cfg, data) if cfg.supersense_weight > 0 else None
    sense_info = {}
    if senses is not None:
        sense_info = {"coverage": round(senses.coverage(data.texts, data.types), 4)}
        logger.info("supersense labels for %.1f%% of the phrases", 100 * sense_info["coverage"])

    model = build_model(cfg)
    # the untrained model is its backbone (projection [I, 0]): the reference for preservation
    needs_reference = cfg.preserve_weight > 0 or cfg.length_weight > 0
    reference = _frozen_copy(model) if needs_reference else None
    model.train()
    optimizer = _optimizer(model, cfg)
    preserve, length_cov = SimilarityPreservationLoss(), LengthCovarianceLoss()
    nce, type_loss = InfoNCELoss(cfg.temperature), TypeClassificationLoss()
    sense_loss = SoftLabelLoss()
    memory = CrossBatchMemory(cfg.memory_size)
    ckpt = out / CHECKPOINT
    start, elapsed, history = 0, 0.0, []
    if ckpt.is_file():
        saved: dict[str, torch.Tensor] = {}
        meta = load_checkpoint(ckpt, model, optimizer, extra=saved)
        if meta.get("fingerprint") != cfg.fingerprint():
            raise ValueError(f"{ckpt} was written with different settings; use another --out "
                             "or delete the checkpoint")
        start, elapsed = int(meta["step"]), float(meta["elapsed_s"])
        history = meta.get("history", [])
        memory.restore(saved.get("memory"), meta.get("memory_texts", []))
        mimic = meta.get("char_mimicry", {})
        logger.info("resuming from step %d (%.1f min already spent)", start, elapsed / 60)
    else:
        mimic = {}

    def checkpoint(step: int) -> None:
        rows, memory_texts = memory.state()
        save_checkpoint(ckpt, model, optimizer, {
            "step": step, "elapsed_s": elapsed, "fingerprint": cfg.fingerprint(),
            "history": history, "char_mimicry": mimic, "memory_texts": memory_texts},
            extra=None if rows is None else {"memory": rows})

    if cfg.char_pretrain_steps and not mimic:
        t_mimic = time.perf_counter()
        mimic = pretrain_char(model, data.texts, CharMimicConfig(steps=cfg.char_pretrain_steps),
                              seed=cfg.seed, show_progress=cfg.show_progress)
        mimic["minutes"] = round((time.perf_counter() - t_mimic) / 60, 2)
        elapsed += time.perf_counter() - t_mimic
        checkpoint(start)  # a resume skips the mimicry

    # same initial weights with another data seed: runs that can be averaged (a weight soup)
    order_seed = cfg.seed if cfg.data_seed is None else cfg.data_seed
    t0, step = time.perf_counter(), start
    bar = tqdm(total=cfg.max_steps, initial=start, desc="PEARL", unit="step",
               disable=not cfg.show_progress)
    window: list[float] = []
    for step in range(start, cfg.max_steps):
        if cfg.max_minutes and elapsed + time.perf_counter() - t0 > cfg.max_minutes * 60:
            logger.info("time budget of %.1f min reached at step %d", cfg.max_minutes, step)
            break
        rng = random.Random(order_seed * 1_000_003 + step)
        torch.manual_seed(order_seed * 1_000_003 + step)  # dropout: same masks after a resume
        idx = _step_indices(len(data.texts), cfg.batch_size, step, order_seed)
        anchors = [data.texts[i] for i in idx]
        positives = [augment(a, rng) for a in anchors]
        negatives: list[str] = []
        if cfg.hard_negatives:
            batch_set = set(anchors)
            for a in anchors:
                cands = [c for c in data.hard_negatives.get(a, ()) if c not in batch_set]
                negatives.extend(rng.sample(cands, min(cfg.hard_negatives, len(cands))))
        for g in optimizer.param_groups:
            g["lr"] = g["base_lr"] * _lr_factor(cfg, step)
        texts = anchors + positives + negatives
        emb, logits = model(texts)
        b = len(anchors)
        loss_nce = nce(emb[:b], emb[b : 2 * b], emb[2 * b :], memory.rows,
                       memory.mask(anchors, positives) if len(memory) else None)
        memory.push(emb[b:], texts[b:])
        loss = loss_nce
        loss_t = torch.zeros(())
        anchor_types = data.types[idx].tolist()
        text_types = anchor_types + anchor_types + [type_of.get(n, -1) for n in negatives]
        if cfg.use_type and logits is not None:
            loss_t = type_loss(logits, torch.tensor(text_types))
            loss = loss + cfg.type_weight * loss_t
        loss_s = torch.zeros(())
        if senses is not None:
            # a positive is its anchor rewritten, so it shares the anchor's label (as for types)
            targets = senses(anchors + anchors + negatives, text_types)
            loss_s = sense_loss(model.sense_logits(emb), targets)
            loss = loss + cfg.supersense_weight * loss_s
        loss_p = loss_len = torch.zeros(())
        if reference is not None:
            with torch.no_grad():
                ref, _ = reference(texts if cfg.length_weight > 0 else anchors)
            if cfg.preserve_weight > 0:
                loss_p = preserve(emb[:b], ref[:b])
                loss = loss + cfg.preserve_weight * loss_p
            if cfg.length_weight > 0:
                lengths = torch.tensor([len(t) for t in texts], dtype=torch.float32)
                loss_len = length_cov(emb, lengths, ref)
                loss = loss + cfg.length_weight * loss_len
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        window.append(float(loss_nce.detach()))
        bar.update(1)
        bar.set_postfix(nce=f"{loss_nce.item():.3f}", type=f"{loss_t.item():.3f}",
                        sense=f"{loss_s.item():.3f}",
                        keep=f"{loss_p.item():.3f}", length=f"{loss_len.item():.4f}")
        if (step + 1) % cfg.checkpoint_every == 0 or step + 1 == cfg.max_steps:
            now = time.perf_counter()
            elapsed += now - t0
            t0 = now
            history.append({"step": step + 1, "nce": round(float(np.mean(window)), 4),
                            "minutes": round(elapsed / 60, 2)})
            window = []
            checkpoint(step + 1)
            logger.info("step %d: InfoNCE %.4f, %.1f min", step + 1, history[-1]["nce"],
                        elapsed / 60)
    else:
        step = cfg.max_steps
    bar.close()
    elapsed += time.perf_counter() - t0
    if step < cfg.max_steps:  # stopped by the time budget: keep the progress
        checkpoint(step)
    extra = {"char_mimicry": mimic} if mimic else {}
    if sense_info:
        extra["supersenses"] = sense_info
    return finish_pearl(cfg, model, dev_dir, steps_done=step, train_seconds=elapsed,
                        history=history, extra=extra or None)


def averaged_initial_weights(cfg: PearlTrainingConfig) -> dict[str, torch.Tensor]:
    """The initial weights that weight averaging interpolates towards: backbone and projection
    of a freshly built model (heads and the char CNN are never averaged)."""
    return {k: v for k, v in build_model(cfg).state_dict().items()
            if k.startswith(("backbone.", "proj."))}


def finish_pearl(cfg: PearlTrainingConfig, model: PearlModel, dev_dir: Path | None,
                 steps_done: int, train_seconds: float, history: list[dict[str, Any]],
                 extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Choose the averaging coefficient on dev splits, save ``out_dir/model`` and the report."""
    from phrasekit.eval.dev import DevScorer

    model.eval()
    out = Path(cfg.out_dir)
    t0 = time.perf_counter()
    initial = averaged_initial_weights(cfg)
    groups = averaging_groups(cfg)
    scorer = DevScorer(dev_dir) if _n_candidates(groups) > 1 else None
    chosen, dev_table = select_alphas(
        model, initial, groups,
        (lambda c: scorer(PearlEncoder(model, name=str(c)))) if scorer else None,
        show_progress=cfg.show_progress,
        admissible=CliffGuard(margin=cfg.cliff_margin) if cfg.cliff_margin else None)
    best_alpha = chosen["alpha"]
    alpha_proj = chosen.get("alpha_proj", best_alpha)
    settings = {k: v for k, v in asdict(cfg).items() if k not in ("show_progress", "notes")}
    training = {"settings": settings, "steps": steps_done, "alpha": best_alpha,
                "alpha_proj": alpha_proj, "train_minutes": round(train_seconds / 60, 2),
                "dev": dev_table, "history": history, **(extra or {})}
    model.config.extra = {"alpha": best_alpha, "alpha_proj": alpha_proj, "steps": steps_done}
    model_dir = model.save_pretrained(out / "model", extra_config={"training": training})
    size_mb = sum(f.stat().st_size for f in model_dir.iterdir()) / 2**20
    report = {**training, "selection_minutes": round((time.perf_counter() - t0) / 60, 2),
              "model_dir": str(model_dir), "model_mb": round(size_mb, 2)}
    write_json(out / "report.json", report)
    logger.info("saved %s (alpha %.2f, projection alpha %.2f, %.1f MB)", model_dir, best_alpha,
                alpha_proj, size_mb)
    return report


def recover_finetuned_pearl(model_dir: str | Path) -> tuple[PearlTrainingConfig, PearlModel,
                                                             dict[str, Any]]:
    """A PEARL model folder saved by ``train pearl`` with its fine-tuned weights restored.

    The folder holds ``theta0 + alpha * (theta_ft - theta0)`` for the backbone (and likewise with
    ``alpha_proj`` for the projection), so with both coefficients above 0 the fine-tuned weights
    come back exactly, up to the rounding of the stored deltas. Returns the run's training
    config, the model and the saved training report.
    """
    from phrasekit.encoders.pearl import read_pearl_config
    from phrasekit.training.averaging import undo_interpolation

    config = read_pearl_config(model_dir)
    training = config.get("training")
    if not training or "settings" not in training:
        raise ValueError(f"{model_dir}: no training report in config.json; only models saved "
                         "by `phrasekit train pearl` can be re-averaged or souped")
    alpha = float(training["alpha"])
    alpha_proj = float(training.get("alpha_proj", alpha))
    known = set(PearlTrainingConfig.__dataclass_fields__)
    settings = {**_SAVED_BEFORE,
                **{k: v for k, v in training["settings"].items() if k in known}}
    settings["alphas"] = tuple(settings.get("alphas") or PearlTrainingConfig.alphas)
    if settings.get("proj_alphas") is not None:
        settings["proj_alphas"] = tuple(settings["proj_alphas"])
    cfg = PearlTrainingConfig(**settings)
    model = PearlModel.from_pretrained(model_dir)
    undo_interpolation(model, build_model(cfg).state_dict(),
                       {("backbone.",): alpha, ("proj.",): alpha_proj})
    return cfg, model, training


def _rechoose(cfg: PearlTrainingConfig, out_dir: str | Path, dev_data_dir: str | Path | None,
              alphas: tuple[float, ...] | None, proj_alphas: tuple[float, ...] | None,
              show_progress: bool, cliff_margin: float | None = None) -> PearlTrainingConfig:
    """``cfg`` of a saved run, set up to choose its averaging coefficients again."""
    from dataclasses import replace

    return replace(cfg, out_dir=str(out_dir), alpha=None, alpha_proj=None,
                   alphas=tuple(alphas or cfg.alphas), proj_alphas=proj_alphas,
                   cliff_margin=cfg.cliff_margin if cliff_margin is None else cliff_margin,
                   dev_data_dir=str(dev_data_dir) if dev_data_dir else None,
                   show_progress=show_progress)


def reaverage_pearl(model_dir: str | Path, out_dir: str | Path,
                    dev_data_dir: str | Path | None = None,
                    alphas: tuple[float, ...] | None = None,
                    proj_alphas: tuple[float, ...] | None = None,
                    show_progress: bool = True,
                    cliff_margin: float | None = None) -> dict[str, Any]:
    """Choose the averaging coefficients of a saved PEARL model again, without its checkpoint:
    the fine-tuned weights are recovered (:func:`recover_finetuned_pearl`), averaged again over
    the new grid, chosen on dev splits, and saved to ``out_dir/model``."""
    if cliff_margin:
        CliffGuard(margin=cliff_margin)
    cfg, model, training = recover_finetuned_pearl(model_dir)
    cfg = _rechoose(cfg, out_dir, dev_data_dir, alphas, proj_alphas, show_progress, cliff_margin)
    logger.info("re-averaging %s (saved at alpha %s / %s)", model_dir, training["alpha"],
                training.get("alpha_proj", training["alpha"]))
    return finish_pearl(cfg, model, _dev_dir(dev_data_dir, cfg), steps_done=int(training["steps"]),
                        train_seconds=float(training.get("train_minutes", 0.0)) * 60,
                        history=list(training.get("history", [])),
                        extra={"reaveraged_from": {
                            "alpha": training["alpha"],
                            "alpha_proj": training.get("alpha_proj", training["alpha"])}})


#: Settings that must agree for PEARL runs to be souped (``seed`` fixes the random initial
#: weights of the char CNN, projection and type head; vary ``data_seed`` instead).
_SOUP_MUST_MATCH = ("backbone", "seed", "use_char", "use_type", "type_head_on",
                    "char_pretrain_steps", "max_seq_length", "freeze_embeddings",
                    "supersense_weight")


def soup_pearl(model_dirs: list[str | Path], out_dir: str | Path,
               dev_data_dir: str | Path | None = None,
               alphas: tuple[float, ...] | None = None,
               proj_alphas: tuple[float, ...] | None = None,
               show_progress: bool = True,
               cliff_margin: float | None = None) -> dict[str, Any]:
    """Average the fine-tuned weights of PEARL runs that started from the same weights (a
    uniform model soup), then choose the averaging coefficients with the initial model on dev."""
    from phrasekit.training.averaging import average_modules

    if len(model_dirs) < 2:
        raise ValueError("a soup needs at least two model folders")
    if cliff_margin:
        CliffGuard(margin=cliff_margin)  # bad settings fail before the runs are read
    runs = [recover_finetuned_pearl(d) for d in model_dirs]
    first = asdict(runs[0][0])
    for d, (cfg, _, _) in zip(model_dirs[1:], runs[1:], strict=True):
        other = asdict(cfg)
        bad = [k for k in _SOUP_MUST_MATCH if other[k] != first[k]]
        if bad:
            raise ValueError(f"{d} differs from {model_dirs[0]} in {bad}: only runs from the same "
                             "initial weights can be averaged (same --seed; vary --data-seed)")
    model = average_modules([m for _, m, _ in runs])
    cfg = _rechoose(runs[0][0], out_dir, dev_data_dir, alphas, proj_alphas, show_progress,
                    cliff_margin)
    logger.info("souping %d PEARL runs: %s", len(runs), ", ".join(map(str, model_dirs)))
    return finish_pearl(cfg, model, _dev_dir(dev_data_dir, cfg),
                        steps_done=sum(int(t["steps"]) for _, _, t in runs),
                        train_seconds=sum(float(t.get("train_minutes", 0.0)) for _, _, t in runs)
                        * 60, history=[],
                        extra={"soup_of": [{"model": str(d), "alpha": t["alpha"],
                                            "seed": t["settings"].get("seed"),
                                            "data_seed": t["settings"].get("data_seed")}
                                           for d, (_, _, t) in zip(model_dirs, runs, strict=True)]})


def _dev_dir(explicit: str | Path | None, cfg: PearlTrainingConfig) -> Path | None:
    """Where the dev splits are: ``explicit``, else the shared data folder, but only when the
    averaging grid leaves a choice to make (fixed coefficients need no shared data)."""
    from phrasekit.settings import data_dir as shared_data_dir

    if explicit:
        return Path(explicit)
    return shared_data_dir() if _n_candidates(averaging_groups(cfg)) > 1 else None


def _n_candidates(groups: dict[str, tuple[tuple[str, ...], tuple[float, ...]]]) -> int:
    return int(np.prod([len(alphas) for _, alphas in groups.values()]))


def averaging_groups(cfg: PearlTrainingConfig
                     ) -> dict[str, tuple[tuple[str, ...], tuple[float, ...]]]:
    """Weight-averaging grid: the backbone's ``alpha`` and, unless tied, the projection's.

    The projection carries the char encoder's contribution (it starts as ``[I, 0]``); trained
    jointly, that path can outweigh the backbone and scatter entity clusters, so its coefficient
    can be chosen on dev separately (``proj_alphas``, or fixed with ``alpha_proj``). By default
    it is tied to ``alpha`` (see the README for why), and so it is when ``alpha`` is fixed and
    ``alpha_proj`` is not (fixed ones need no dev data).
    """
    alphas = (cfg.alpha,) if cfg.alpha is not None else tuple(cfg.alphas)
    tied = cfg.proj_alphas is None or cfg.alpha is not None
    if cfg.alpha_proj is None and tied:
        return {"alpha": (("backbone.", "proj."), alphas)}
    proj = (cfg.alpha_proj,) if cfg.alpha_proj is not None else tuple(cfg.proj_alphas or ())
    return {"alpha": (("backbone.",), alphas), "alpha_proj": (("proj.",), proj)}
