"""PEARL training on CPU: augmentation positives, hard negatives, InfoNCE + type loss, averaging.

``train_pearl(PearlTrainingConfig(data_dir=..., out_dir=...))`` runs the whole recipe:
1. reads the dataset written by ``build_pearl_dataset`` (phrases with types, paraphrase pairs,
   word synonyms, mined hard negatives);
2. optionally pre-trains the char encoder to mimic the backbone (:mod:`.char_mimic`);
3. for every step, takes ``batch_size`` anchors (a per-epoch permutation), makes one positive
   per anchor with a randomly chosen enabled augmentation, adds ``hard_negatives`` mined
   negatives per anchor, and minimises InfoNCE (tau = 0.07; in-batch + hard negatives, plus
   the recent batches' candidates with ``memory_size``) plus the phrase-type and supersense
   cross-entropies and the optional preservation / length terms, with Adam and an
   exponentially decayed learning rate;
4. runs on :class:`~phrasekit.training.core.trainer.Trainer`: checkpoints every
   ``checkpoint_every`` steps (``checkpoint.safetensors``, with the negatives memory and the
   mimicry report), and a rerun with the same output folder resumes bit-for-bit;
5. interpolates fine-tuned and initial weights, choosing the coefficient on development splits
   only (``phrasekit.eval.dev``), and saves the model folder ``out_dir/model``
   (:mod:`.pearl_averaging`, which also re-averages and soups saved runs).

CPU choices (documented in the README): word embeddings frozen (never stored, most of the
model's size), short sequences (``max_seq_length`` 24), batch 64 anchors.
"""

from __future__ import annotations

import copy
import json
import logging
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from phrasekit.encoders.cpu import cpu_model
from phrasekit.encoders.pearl import PearlModel
from phrasekit.encoders.transformer import cpu_supports_bf16
from phrasekit.phrases.augment import Augmenter, paraphrase_map
from phrasekit.phrases.supersenses import NOUN_SUPERSENSES, SupersenseLexicon
from phrasekit.phrases.types import PHRASE_TYPES
from phrasekit.registry import load as load_model
from phrasekit.settings import data_dir as shared_data_dir
from phrasekit.settings import torch_threads
from phrasekit.training.core.adapters import add_adapters, merge_adapters
from phrasekit.training.core.losses import (
    CrossBatchMemory,
    InfoNCELoss,
    LengthCovarianceLoss,
    SimilarityDistillationLoss,
    SimilarityPreservationLoss,
    SoftLabelLoss,
    TypeClassificationLoss,
)
from phrasekit.training.core.trainer import Trainer
from phrasekit.training.data.leakage import BenchmarkStringFilter, collect_test_strings
from phrasekit.training.data.sources import gz_json_lines, gz_lines
from phrasekit.training.pearl.alias_pairs import AliasPositives
from phrasekit.training.pearl.averaging import (
    finish_pearl,
    pearl_dev_dir,
)
from phrasekit.training.pearl.char_mimic import CharMimicConfig, pretrain_char
from phrasekit.training.pearl.config import PearlTrainingConfig, alias_path, build_model
from phrasekit.training.pearl.distillation import (
    TransferSet,
    select_transfer_texts,
    teacher_vectors,
)

__all__ = [
    "PearlData",
    "PearlTask",
    "train_pearl",
]

logger = logging.getLogger(__name__)

#: Added to the data seed for the alias pairs' own permutation.
_ALIAS_SEED_OFFSET = 1_000_003


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
        for lineno, rec in gz_json_lines(d / "phrases.jsonl.gz"):
            if not (isinstance(rec, dict) and _is_text(rec.get("text"))):
                raise ValueError(f"{d / 'phrases.jsonl.gz'}:{lineno}: not a phrase record "
                                 "(an object whose 'text' is a non-blank string)")
            texts.append(rec["text"])
            types.append(index.get(rec.get("type", ""), -1))
            if limit and len(texts) >= limit:
                break
        pairs = []
        for lineno, line in gz_lines(d / "paraphrases.tsv.gz"):
            parts = line.rstrip("\n").split("\t")
            if len(parts) not in (2, 3) or not (parts[0].strip() and parts[1].strip()):
                raise ValueError(f"{d / 'paraphrases.tsv.gz'}:{lineno}: not a paraphrase line "
                                 "(phrase, paraphrase and optional source, tab-separated)")
            pairs.append((parts[0], parts[1]))
        synonyms = _synonyms(d / "word_synonyms.json.gz")
        negatives: dict[str, list[str]] = {}
        for lineno, rec in gz_json_lines(d / "hard_negatives.jsonl.gz"):
            neg = rec.get("negatives") if isinstance(rec, dict) else None
            if not (_is_text(rec.get("text") if isinstance(rec, dict) else None)
                    and isinstance(neg, list) and all(_is_text(n) for n in neg)):
                raise ValueError(f"{d / 'hard_negatives.jsonl.gz'}:{lineno}: not a hard-negative "
                                 "record (a 'text' and a list of 'negatives', strings)")
            if neg:
                negatives[rec["text"]] = list(neg)
        if not texts:
            raise ValueError(f"{d}: no training phrases")
        return cls(texts, np.asarray(types, dtype=np.int64), type_names, pairs, synonyms,
                   negatives)


def _is_text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _synonyms(path: Path) -> dict[str, list[str]]:
    """``word_synonyms.json.gz``: one JSON object of word -> list of synonyms."""
    text = "".join(line for _, line in gz_lines(path))
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"{path}: not JSON ({exc})") from exc
    if not (isinstance(value, dict) and all(
            isinstance(v, list) and all(isinstance(x, str) for x in v) for v in value.values())):
        raise ValueError(f"{path}: not an object of word -> list of synonyms")
    return value


def _step_indices(n: int, batch: int, step: int, seed: int) -> np.ndarray:
    """Anchor indices of one step: consecutive slices of a per-epoch permutation."""
    start = step * batch
    out: list[int] = []
    while len(out) < batch:
        epoch, offset = divmod(start, n)
        perm = np.random.default_rng([seed, epoch]).permutation(n)
        take = perm[offset : offset + batch - len(out)]
        out.extend(take.tolist())
        start += len(take)
    return np.asarray(out, dtype=np.int64)


def _frozen_copy(model: PearlModel) -> PearlModel:
    """A gradient-free copy in eval mode (no dropout), e.g. of the initial model."""
    ref = copy.deepcopy(model).eval()
    ref.requires_grad_(False)
    return ref


def _optimizer(model: PearlModel, cfg: PearlTrainingConfig) -> torch.optim.Adam:
    """Adam with one group per part: backbone, projection, char CNN and the heads."""
    groups = [
        {"params": [p for p in model.backbone.parameters() if p.requires_grad], "lr": cfg.lr},
        {"params": list(model.proj.parameters()), "lr": cfg.lr_proj},
    ]
    if model.char is not None:
        lr = cfg.lr_new if cfg.lr_char is None else cfg.lr_char
        groups.append({"params": list(model.char.parameters()), "lr": lr})
    for head in (model.head if cfg.use_type else None, model.sense_head):
        if head is not None:
            groups.append({"params": list(head.parameters()), "lr": cfg.lr_new})
    return torch.optim.Adam(groups)


class _SupersenseTargets:
    """Supersense target rows for the texts of a step: noun phrases (and untyped texts) get
    the distribution of their head's WordNet senses; other phrases and unknown heads none."""

    def __init__(self, cfg: PearlTrainingConfig, data: PearlData) -> None:
        folder = Path(cfg.wordnet_dir) if cfg.wordnet_dir else shared_data_dir() / "wordnet"
        self.lexicon = SupersenseLexicon.from_wordnet(folder)
        self.type_names = data.type_names
        self.cache: dict[str, np.ndarray] = {}
        self.zero = np.zeros(len(NOUN_SUPERSENSES), dtype=np.float32)

    def row(self, text: str, type_id: int) -> np.ndarray:
        """The target distribution of one text (zeros: unlabelled)."""
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


def build_transfer_set(cfg: PearlTrainingConfig, data: PearlData) -> TransferSet:
    """The distillation transfer set and its teachers' vectors (cached under ``out_dir``).

    Name variants equal to a benchmark string are left out when the benchmark data is found
    (the training phrases themselves were filtered when the dataset was built).
    """
    bench = shared_data_dir(required=False)
    keep = None
    if bench is not None:
        keep = BenchmarkStringFilter(collect_test_strings(bench, strict=False)).keep_phrase
    else:
        logger.warning("benchmark data not found: name variants are not checked against it")
    texts, n_plain = select_transfer_texts(data.texts, data.type_names, data.types,
                                           cfg.distill_phrases, cfg.distill_names,
                                           seed=cfg.order_seed, keep=keep)
    logger.info("transfer set: %d phrases and %d (name, variant) pairs", n_plain,
                (len(texts) - n_plain) // 2)
    teachers = [load_model(name) for name in cfg.teachers]
    for teacher in teachers:  # the teachers read the texts as cut for the student
        if hasattr(teacher, "max_seq_length"):
            teacher.max_seq_length = cfg.max_seq_length
    vectors = teacher_vectors(teachers, texts, Path(cfg.out_dir) / "teachers",
                              show_progress=cfg.show_progress)
    return TransferSet(texts, n_plain, vectors)


def _warn_slow_bf16(cfg: PearlTrainingConfig) -> None:
    """Warn where bf16 autocast is asked for on a CPU that emulates bfloat16: there it runs
    several times slower than fp32 (the user's choice stands)."""
    if cfg.precision == "bf16" and cfg.device == "cpu" and not cpu_supports_bf16():
        logger.warning("precision bf16 on a CPU without native bfloat16 (%s): autocast is "
                       "emulated here and trains several times slower than fp32; "
                       "--precision fp32 is faster on this CPU", cpu_model())


class PearlTask:
    """PEARL's model, batches and losses as a
    :class:`~phrasekit.training.core.trainer.TrainingTask`.

    Its extra training state (in every checkpoint) is the cross-batch negatives memory and the
    report of the char mimicry that preceded the steps.
    """

    def __init__(self, cfg: PearlTrainingConfig, data: PearlData, model: PearlModel) -> None:
        self.cfg, self.data, self.model = cfg, data, model
        _warn_slow_bf16(cfg)
        self.optimizer = _optimizer(model, cfg)
        # the untrained model is its backbone (projection [I, 0]): the reference for preservation
        needs_reference = cfg.preserve_weight > 0 or cfg.length_weight > 0
        self.reference = _frozen_copy(model) if needs_reference else None
        self.augment = Augmenter(char=cfg.char_aug, token=cfg.token_aug, phrase=cfg.phrase_aug,
                                 synonyms=data.synonyms,
                                 paraphrases=paraphrase_map(data.paraphrases))
        self.type_of = dict(zip(data.texts, data.types.tolist(), strict=True))
        self.senses = _SupersenseTargets(cfg, data) if cfg.supersense_weight > 0 else None
        self.memory = CrossBatchMemory(cfg.memory_size)
        self.nce = InfoNCELoss(cfg.temperature)
        self.type_loss, self.sense_loss = TypeClassificationLoss(), SoftLabelLoss()
        self.preserve, self.length_cov = SimilarityPreservationLoss(), LengthCovarianceLoss()
        self.transfer = build_transfer_set(cfg, data) if cfg.distill_weight > 0 else None
        self.distill = SimilarityDistillationLoss(cfg.distill_temperature)
        self.aliases = (AliasPositives(alias_path(cfg), cfg.alias_kinds or None)
                        if cfg.alias_weight > 0 else None)
        self.mimicry: dict[str, Any] = {}

    def fingerprint(self) -> str:
        return self.cfg.fingerprint()

    def lr_factor(self, step: int) -> float:
        """Exponential step decay: ``decay_rate ** (step // decay_every)``."""
        return self.cfg.decay_rate ** (step // self.cfg.decay_every)

    def batch(self, step: int, rng: random.Random
              ) -> tuple[list[str], list[str], list[str], list[int]]:
        """Step ``step``'s anchors, their augmented positives, their mined hard negatives, and
        the type of every text (a positive shares its anchor's type)."""
        cfg, data = self.cfg, self.data
        idx = _step_indices(len(data.texts), cfg.batch_size, step, cfg.order_seed)
        anchors = [data.texts[i] for i in idx]
        positives = [self.augment(a, rng) for a in anchors]
        negatives: list[str] = []
        if cfg.hard_negatives:
            in_batch = set(anchors)
            for a in anchors:
                cands = [c for c in data.hard_negatives.get(a, ()) if c not in in_batch]
                negatives.extend(rng.sample(cands, min(cfg.hard_negatives, len(cands))))
        anchor_types = data.types[idx].tolist()
        types = anchor_types + anchor_types + [self.type_of.get(n, -1) for n in negatives]
        return anchors, positives, negatives, types

    def step_loss(self, step: int, rng: random.Random) -> tuple[torch.Tensor, dict[str, float]]:
        """InfoNCE plus the weighted auxiliary terms that are switched on."""
        cfg = self.cfg
        anchors, positives, negatives, types = self.batch(step, rng)
        texts = anchors + positives + negatives
        rows = None if self.transfer is None else self.transfer.batch(step, cfg.distill_batch,
                                                                      cfg.order_seed)
        extra = [] if rows is None else [self.transfer.texts[i] for i in rows]
        alias_texts, n_alias = self._alias_texts(step, rng)
        device = torch.device(cfg.device)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=cfg.precision == "bf16"):
            emb, logits = self.model(texts + extra + alias_texts)
        emb = emb.float()
        logits = None if logits is None else logits[: len(texts)].float()
        n, m = len(texts), len(texts) + len(extra)
        distill_emb, alias_emb, emb = emb[n:m], emb[m:], emb[:n]
        b = len(anchors)
        mask = self.memory.mask(anchors, positives).to(device) if len(self.memory) else None
        terms = {"nce": (1.0, self.nce(emb[:b], emb[b : 2 * b], emb[2 * b :],
                                       self.memory.rows, mask))}
        self.memory.push(emb[b:], texts[b:])
        if cfg.use_type and logits is not None:
            labels = torch.tensor(types, device=device)
            terms["type"] = (cfg.type_weight, self.type_loss(logits, labels))
        if self.senses is not None:
            # a positive is its anchor rewritten, so it shares the anchor's label (as for types)
            targets = self.senses(anchors + anchors + negatives, types).to(device)
            terms["sense"] = (cfg.supersense_weight,
                              self.sense_loss(self.model.sense_logits(emb), targets))
        terms.update(self._reference_terms(emb, texts, b))
        if rows is not None:
            terms["distill"] = (cfg.distill_weight,
                                self.distill(distill_emb, self.transfer.targets(rows).to(device)))
        if n_alias:
            terms["alias"] = (cfg.alias_weight, self.nce(alias_emb[:n_alias],
                                                         alias_emb[n_alias : 2 * n_alias],
                                                         alias_emb[2 * n_alias :]))
        loss = sum((w * value for w, value in terms.values()), torch.zeros((), device=device))
        return loss, {k: float(value.detach()) for k, (_, value) in terms.items()}

    def _alias_texts(self, step: int, rng: random.Random) -> tuple[list[str], int]:
        """The step's alias pairs and their hard negatives (empty when the term is off)."""
        if self.aliases is None:
            return [], 0
        idx = _step_indices(len(self.aliases.pairs), self.cfg.alias_batch, step,
                            self.cfg.order_seed + _ALIAS_SEED_OFFSET)
        return self.aliases.texts(idx.tolist(), self.cfg.alias_negatives, rng)

    def _reference_terms(self, emb: torch.Tensor, texts: list[str], b: int
                         ) -> dict[str, tuple[float, torch.Tensor]]:
        """The preservation and length terms against the initial model (when switched on)."""
        cfg = self.cfg
        if self.reference is None:
            return {}
        with torch.no_grad():
            ref, _ = self.reference(texts if cfg.length_weight > 0 else texts[:b])
        terms = {}
        if cfg.preserve_weight > 0:
            terms["keep"] = (cfg.preserve_weight, self.preserve(emb[:b], ref[:b]))
        if cfg.length_weight > 0:
            lengths = torch.tensor([len(t) for t in texts], dtype=torch.float32,
                                   device=emb.device)
            terms["length"] = (cfg.length_weight, self.length_cov(emb, lengths, ref))
        return terms

    def training_state(self) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
        """The negatives memory (rows and texts) and the mimicry report, for the checkpoint."""
        rows, texts = self.memory.state()
        return ({"memory_texts": texts, "char_mimicry": self.mimicry},
                {} if rows is None else {"memory": rows})

    def restore_state(self, meta: dict[str, Any], tensors: dict[str, torch.Tensor]) -> None:
        """Inverse of :meth:`training_state`."""
        rows = tensors.get("memory")
        self.memory.restore(None if rows is None else rows.to(self.cfg.device),
                            meta.get("memory_texts", []))
        self.mimicry = meta.get("char_mimicry", {})


def train_pearl(cfg: PearlTrainingConfig) -> dict[str, Any]:
    """Run (or resume) training, choose the averaging coefficient on dev, save the model.

    Returns a report dict (also written to ``out_dir/report.json``).
    """
    cfg.validate()
    dev_dir = pearl_dev_dir(cfg.dev_data_dir, cfg)
    with torch_threads(cfg.num_threads):
        data = PearlData.load(cfg.data_dir, list(PHRASE_TYPES), cfg.limit_phrases)
        logger.info("PEARL data: %d phrases, %d paraphrase pairs, %d synonym words, "
                    "%d phrases with hard negatives", len(data.texts), len(data.paraphrases),
                    len(data.synonyms), len(data.hard_negatives))
        torch.manual_seed(cfg.seed)  # the initial weights of the new modules
        model = build_model(cfg)
        if cfg.adapter_rank:
            add_adapters(model.backbone, cfg.adapter_rank)
        task = PearlTask(cfg, data, model.to(cfg.device))
        extra: dict[str, Any] = {}
        if task.senses is not None:
            extra["supersenses"] = {"coverage": round(task.senses.coverage(data.texts,
                                                                           data.types), 4)}
            logger.info("supersense labels for %.1f%% of the phrases",
                        100 * extra["supersenses"]["coverage"])
        trainer = Trainer(cfg.out_dir, total_steps=cfg.max_steps, seed=cfg.order_seed,
                          max_minutes=cfg.max_minutes, checkpoint_every=cfg.checkpoint_every,
                          num_threads=cfg.num_threads, show_progress=cfg.show_progress,
                          desc="PEARL")
        if cfg.char_pretrain_steps and not trainer.checkpoint_path.is_file():
            task.mimicry = pretrain_char(task.model, data.texts,
                                         CharMimicConfig(steps=cfg.char_pretrain_steps),
                                         seed=cfg.seed, show_progress=cfg.show_progress,
                                         out_dir=Path(cfg.out_dir) / "char_mimicry")
        result = trainer.fit(task)  # a resume restores the mimicry report, never repeats it
        merge_adapters(task.model.backbone)  # a plain backbone for averaging and saving
        if task.mimicry:
            extra["char_mimicry"] = task.mimicry
        seconds = result.seconds + 60 * float(task.mimicry.get("minutes", 0.0))
        return finish_pearl(cfg, task.model, dev_dir, steps_done=result.steps,
                            train_seconds=seconds, history=result.history, extra=extra or None)
