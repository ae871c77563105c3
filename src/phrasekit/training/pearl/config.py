"""PEARL's training settings and the model they build (shared by training and averaging).

torch is imported only where a model is built or a GPU is checked, so that the settings (and
``phrasekit train pearl --help``, whose options they define) load without it.
"""

from __future__ import annotations

import logging
import math
import re
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from phrasekit.encoders.pearl_config import TYPE_HEAD_INPUTS, CharCNNConfig, PearlConfig
from phrasekit.eval.aliases import ALIAS_FILE
from phrasekit.models.backbones import BACKBONE_LAYERS, BACKBONES
from phrasekit.phrases.supersenses import NOUN_SUPERSENSES
from phrasekit.phrases.types import PHRASE_TYPES
from phrasekit.training.core.cliff_guard import CliffGuard
from phrasekit.training.core.config import (
    budget_checks,
    config_hash,
    finite_checks,
    raise_failed,
    require_files,
)
from phrasekit.training.pearl.redirects import KINDS

if TYPE_CHECKING:
    import torch

    from phrasekit.encoders.pearl import PearlModel

logger = logging.getLogger(__name__)

DATA_FILES = ("phrases.jsonl.gz", "paraphrases.tsv.gz", "word_synonyms.json.gz",
              "hard_negatives.jsonl.gz")

#: The settings that fix a run's trajectory: a checkpoint resumes only under the same values.
_TRAJECTORY = ("data_dir", "backbone", "seed", "data_seed", "batch_size", "hard_negatives",
               "memory_size", "temperature", "type_weight", "lr", "lr_new", "lr_proj",
               "lr_char", "char_pretrain_steps", "type_head_on", "preserve_weight",
               "length_weight", "supersense_weight", "decay_every", "decay_rate",
               "max_seq_length", "use_char", "use_type", "char_aug", "token_aug", "phrase_aug",
               "freeze_embeddings", "limit_phrases", "teachers", "distill_weight",
               "distill_batch", "distill_phrases", "distill_names", "distill_temperature",
               "precision", "train_layers")
#: The alias term's settings join the fingerprint only when the term is on (so checkpoints of
#: runs without it still resume).
_ALIAS_TRAJECTORY = ("alias_file", "alias_weight", "alias_batch", "alias_negatives",
                     "alias_kinds")
#: Likewise the adapters' settings, only when adapters are on.
_ADAPTER_TRAJECTORY = ("adapter_rank",)
PRECISIONS = ("fp32", "bf16")


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
    teachers: tuple[str, ...] = ()  # e.g. ("mpnet", "minilm"): distillation teachers
    distill_weight: float = 0.0  # weight of the teacher distillation term (0 = off)
    distill_batch: int = 64  # transfer-set texts per step (a quarter names, a quarter variants)
    distill_phrases: int = 16000  # sampled training phrases in the transfer set
    distill_names: int = 4000  # (entity name, rule-made variant) pairs in the transfer set
    distill_temperature: float = 0.05
    precision: str = "fp32"  # "bf16": forward passes under bfloat16 autocast (fp32 weights)
    device: str = "cpu"  # "cuda" (or "cuda:N") trains on a GPU; the model is saved from the CPU
    decay_every: int = 100
    decay_rate: float = 0.98
    max_steps: int = 800
    max_minutes: float | None = None  # bounds the fine-tuning steps (not the char mimicry)
    checkpoint_every: int = 100
    max_seq_length: int = 24
    use_char: bool = True
    use_type: bool = True
    char_aug: bool = True
    token_aug: bool = True
    phrase_aug: bool = True
    freeze_embeddings: bool = True
    train_layers: int | None = None  # only the top N transformer layers train (None = all)
    adapter_rank: int = 0  # > 0: backbone frozen, low-rank adapters train (for large backbones)
    alphas: tuple[float, ...] = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.85, 1.0)
    alpha: float | None = None
    proj_alphas: tuple[float, ...] | None = None  # e.g. (0.0, 0.25, 0.5, 1.0): own grid
    alpha_proj: float | None = None
    alias_file: str | None = None  # None: data_dir/aliases.tsv.gz (if any)
    alias_dev: bool = True  # alias dev retrieval in the dev selection (when the file exists)
    related_dev: bool = True  # entity relatedness in the dev selection (when the file exists)
    alias_weight: float = 0.0  # InfoNCE over train-split alias -> canonical pairs (0 = off)
    alias_batch: int = 32  # alias pairs per step
    alias_negatives: int = 1  # canonicals sharing the first token, per pair
    alias_kinds: tuple[str, ...] = ()  # train on these alias kinds only (empty: all)
    cliff_margin: float | None = 0.5  # CliffGuard: alpha below margin x the dev cliff (0/None: off)
    dev_data_dir: str | None = None
    num_threads: int | None = None
    show_progress: bool = True
    limit_phrases: int | None = None
    notes: dict[str, Any] = field(default_factory=dict)

    @property
    def order_seed(self) -> int:
        """Seed of the batch order, augmentation and dropout: runs from the same initial
        weights with another data seed can be averaged (a weight soup)."""
        return self.seed if self.data_seed is None else self.data_seed

    @property
    def backbone_layers(self) -> int:
        """Transformer layers of the backbone (a large number for an unknown one, which
        ``validate`` refuses by itself)."""
        return BACKBONE_LAYERS.get(self.backbone, 10**9)

    def fingerprint(self) -> str:
        """Hash of the settings that change the training trajectory (for safe resuming)."""
        extra = {k: getattr(self, k) for k in _ALIAS_TRAJECTORY} if self.alias_weight else {}
        if self.adapter_rank:
            extra.update({k: getattr(self, k) for k in _ADAPTER_TRAJECTORY})
        return config_hash(self, _TRAJECTORY, **extra)

    def validate(self, check_data: bool = True) -> None:
        """Fail fast on nonsense settings and (``check_data``) a missing dataset: the
        settings are checked before a dataset is built for them."""
        weights = {k: getattr(self, k) for k in ("type_weight", "preserve_weight",
                                                 "length_weight", "supersense_weight",
                                                 "distill_weight", "alias_weight")}
        rates = {"lr_new": self.lr_new, "lr_proj": self.lr_proj, "lr_char": self.lr_char}
        raise_failed([
            *finite_checks(self),
            *budget_checks(self.batch_size, self.lr, self.max_steps, self.max_minutes,
                           self.checkpoint_every),
            *((v is None or v > 0, f"{k} must be > 0, got {v}") for k, v in rates.items()),
            *((0 <= v < math.inf, f"{k} must be >= 0 and finite, got {v}")
              for k, v in weights.items()),
            *((0 <= a <= 1, f"{k} must be in [0, 1], got {a}")
              for k in ("alphas", "proj_alphas") for a in getattr(self, k) or ()),
            (not self.teachers or self.distill_weight > 0,
             "teachers need distill_weight > 0 (without it they are not used)"),
            (self.alias_file is None or Path(self.alias_file).is_file(),
             f"alias_file {self.alias_file} not found"),
            (self.hard_negatives >= 0, "hard_negatives must be >= 0"),
            (self.memory_size >= 0, f"memory_size must be >= 0, got {self.memory_size}"),
            (self.type_head_on in TYPE_HEAD_INPUTS,
             f"type_head_on must be one of {TYPE_HEAD_INPUTS}"),
            (self.char_pretrain_steps >= 0, "char_pretrain_steps must be >= 0"),
            (self.train_layers is None or self.train_layers >= 0,
             f"train_layers must be >= 0, got {self.train_layers}"),
            (self.backbone in BACKBONES,
             f"backbone must be one of {', '.join(BACKBONES)}, got {self.backbone!r}"),
            (self.adapter_rank >= 0, f"adapter_rank must be >= 0, got {self.adapter_rank}"),
            (not (self.adapter_rank and self.train_layers is not None),
             "adapter_rank and train_layers do not combine: adapters go on every layer"),
            (not self.distill_weight or bool(self.teachers),
             "distill_weight needs at least one teacher (teachers)"),
            (self.distill_batch >= 8, f"distill_batch must be >= 8, got {self.distill_batch}"),
            (self.distill_phrases > 0 and self.distill_names >= 0,
             "distill_phrases must be > 0 and distill_names >= 0"),
            (self.distill_temperature > 0, "distill_temperature must be > 0"),
            (self.alias_batch >= 2, f"alias_batch must be >= 2, got {self.alias_batch}"),
            (self.alias_negatives >= 0, "alias_negatives must be >= 0"),
            (set(self.alias_kinds) <= set(KINDS),
             f"alias_kinds must be among {', '.join(KINDS)}, got {', '.join(self.alias_kinds)}"),
            (not self.alias_weight or alias_path(self).is_file(),
             f"alias_weight needs {alias_path(self)} (train pearl-data --redirects FILE)"),
            (self.precision in PRECISIONS,
             f"precision must be one of {', '.join(PRECISIONS)}, got {self.precision!r}"),
            *device_checks(self.device),
            (not self.char_pretrain_steps or self.use_char,
             "char_pretrain_steps needs the char encoder (use_char)"),
            (self.char_aug or self.token_aug or self.phrase_aug,
             "enable at least one augmentation level: char_aug, token_aug or phrase_aug"),
            *((v is None or 0 <= v <= 1, f"{k} must be in [0, 1], got {v}")
              for k, v in (("alpha", self.alpha), ("alpha_proj", self.alpha_proj))),
            (self.train_layers is None or self.train_layers <= self.backbone_layers,
             f"train_layers is {self.train_layers}, but {self.backbone} has only "
             f"{self.backbone_layers} layers"),
            *unused_settings(self),
            *teacher_checks(self.teachers),
        ])
        if self.cliff_margin:
            CliffGuard(margin=self.cliff_margin)  # validates
        if check_data:
            require_files(self.data_dir, DATA_FILES, "phrasekit train pearl-data --out DIR")


#: Settings that only a switched-on part of the recipe reads: (fields, the field that must be
#: on for them, how to turn it on).
_PART_SETTINGS = (
    (("alias_batch", "alias_negatives", "alias_kinds"), "alias_weight", "alias_weight > 0"),
    (("distill_batch", "distill_phrases", "distill_names"), "distill_weight",
     "distill_weight > 0"),
    (("type_weight", "type_head_on"), "use_type", "use_type"),
    (("lr_char",), "use_char", "use_char"),
)


def unused_settings(cfg: PearlTrainingConfig) -> list[tuple[bool, str]]:
    """Checks that no setting is changed from its default where the run would ignore it: a
    part's settings with the part off, and a grid of ``alphas`` beside a fixed ``alpha``."""
    defaults = {f.name: f.default for f in fields(cfg)}
    changed = {k for k in defaults if getattr(cfg, k) != defaults[k]}
    checks = [(cfg.alpha is None or "alphas" not in changed,
               "alpha fixes the averaging coefficient and alphas lists those tried on dev: "
               "give one")]
    for names, switch, how in _PART_SETTINGS:
        for name in (n for n in names if n in changed):
            checks.append((bool(getattr(cfg, switch)),
                           f"{name} is read only with {how}, which this run leaves off"))
    return checks


def teacher_checks(teachers: tuple[str, ...]) -> list[tuple[bool, str]]:
    """Each distillation teacher is a model ``phrasekit.load`` finds (nothing is loaded)."""
    from phrasekit.registry import check_model_name

    checks = []
    for teacher in teachers:
        try:
            check_model_name(teacher)
        except ValueError as exc:
            checks.append((False, f"teachers: {exc}"))
    return checks


def alias_path(cfg: PearlTrainingConfig) -> Path:
    """The alias file of a run: ``cfg.alias_file``, else ``aliases.tsv.gz`` of its data folder."""
    return Path(cfg.alias_file) if cfg.alias_file else Path(cfg.data_dir) / ALIAS_FILE


def device_checks(device: str) -> list[tuple[bool, str]]:
    """``device`` is ``cpu`` or a CUDA device that this machine has."""
    if device == "cpu":
        return []
    found = re.fullmatch(r"cuda(?::(\d+))?", device)
    if not found:
        return [(False, f"device must be cpu, cuda or cuda:N, got {device!r}")]
    import torch  # only for a GPU request: the settings and `--help` need no torch

    if not torch.cuda.is_available():
        return [(False, f"device {device}: no CUDA GPU is available here")]
    index, count = int(found.group(1) or 0), torch.cuda.device_count()
    return [(index < count, f"device {device}: this machine has {count} CUDA GPU(s)")]


def build_model(cfg: PearlTrainingConfig) -> PearlModel:
    """A fresh PEARL model (equal to its backbone) configured for training."""
    from phrasekit.encoders.pearl import PearlModel  # torch: only when a model is built

    pcfg = PearlConfig(backbone=cfg.backbone, max_seq_length=cfg.max_seq_length,
                       use_char=cfg.use_char, types=list(PHRASE_TYPES),
                       type_loss=cfg.use_type, type_head_on=cfg.type_head_on,
                       char=CharCNNConfig(out_linear=cfg.char_pretrain_steps > 0),
                       supersenses=list(NOUN_SUPERSENSES) if cfg.supersense_weight > 0 else [],
                       delta_rank=cfg.adapter_rank or None)
    model = PearlModel(pcfg)
    if cfg.freeze_embeddings:
        model.backbone.embeddings.word_embeddings.weight.requires_grad_(False)
    if cfg.train_layers is not None:
        freeze_lower_layers(model.backbone, cfg.train_layers)
    return model


def freeze_lower_layers(backbone: torch.nn.Module, train_layers: int) -> None:
    """Freeze the embeddings and every transformer layer below the top ``train_layers``: the
    lower layers keep the backbone's surface-form knowledge and need no backward pass."""
    layers = backbone.encoder.layer
    if train_layers > len(layers):
        raise ValueError(f"train_layers is {train_layers}, but the model has only "
                         f"{len(layers)} layers")
    backbone.embeddings.requires_grad_(False)
    for layer in layers[: len(layers) - train_layers]:
        layer.requires_grad_(False)
