"""PEARL phrase encoder: transformer phrase vector + character CNN, projected and normalised.

``PearlModel`` is the trainable torch module: mean-pooled backbone vector ``p`` and byte-CNN
vector ``c`` are concatenated, a linear projection maps ``[p; c]`` back to the backbone's size
(initialised to ``[I, 0]``, so an untrained model equals its backbone exactly), and a softmax
head predicts the phrase type (lexical class x entity type, PEARL's auxiliary task), from
``[p; c]`` or (``type_head_on="output"``) from the final normalised embedding itself. An
optional second head (``supersenses``) predicts the WordNet noun supersense of the phrase's head
from the output embedding (``phrasekit.phrases.supersenses``).
``PearlEncoder`` wraps it in phrasekit's encoder contract.

On disk (``save_pretrained``): ``config.json`` + ``model.safetensors`` holding the backbone as
float16 *differences* from the packaged backbone (unchanged tensors, e.g. the frozen word
embeddings, are not stored) and the small new modules in float32. Loading rebuilds the packaged
backbone and adds the differences, so a trained model costs ~20 MB instead of ~90 MB.
The delta helpers (``backbone_deltas``, ``add_backbone_deltas``, ``read_model_config``) also
serve other fine-tunes of a packaged backbone (Phrase-BERT model folders).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from phrasekit.encoders.base import Encoder
from phrasekit.encoders.char import CharCNN, CharCNNConfig, bytes_batch

logger = logging.getLogger(__name__)

FORMAT = "phrasekit-pearl"
FORMAT_VERSION = 1
WEIGHTS = "model.safetensors"
DELTA_PREFIX = "backbone_delta."
#: int8 deltas (``quantize_model_folder``): codes and per-row float16 scales.
DELTA_Q8_PREFIX = "backbone_delta_q8."
DELTA_SCALE_PREFIX = "backbone_delta_scale."
#: format_version written for folders with int8 deltas (older readers must refuse them).
QUANTIZED_FORMAT_VERSION = 2


def backbone_path(name: str) -> Path:
    """Local folder of a packaged backbone by registry name (only ``minilm`` for now)."""
    if name != "minilm":
        raise ValueError(f"unsupported PEARL backbone {name!r}; supported: minilm")
    from phrasekit.models.registry import minilm_path

    return minilm_path()


TYPE_HEAD_INPUTS = ("features", "output")


@dataclass
class PearlConfig:
    """Everything needed to rebuild a ``PearlModel`` (saved as JSON)."""

    backbone: str = "minilm"
    max_seq_length: int = 32
    use_char: bool = True
    char: CharCNNConfig = field(default_factory=CharCNNConfig)
    types: list[str] = field(default_factory=list)
    type_loss: bool = True
    type_head_on: str = "features"  # "features" ([p; c]) or "output" (the final embedding)
    supersenses: list[str] = field(default_factory=list)  # labels of the supersense head
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.type_head_on not in TYPE_HEAD_INPUTS:
            raise ValueError(f"type_head_on must be one of {TYPE_HEAD_INPUTS}, "
                             f"got {self.type_head_on!r}")

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form."""
        return {
            "backbone": self.backbone, "max_seq_length": self.max_seq_length,
            "use_char": self.use_char, "char": self.char.to_dict(), "types": list(self.types),
            "type_loss": self.type_loss, "type_head_on": self.type_head_on,
            "supersenses": list(self.supersenses), "extra": self.extra,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PearlConfig:
        """Inverse of ``to_dict``; unknown keys are an error (a newer format)."""
        d = dict(d)
        char = CharCNNConfig.from_dict(d.pop("char", {}))
        known = {"backbone", "max_seq_length", "use_char", "types", "type_loss", "type_head_on",
                 "supersenses", "extra"}
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"unknown PEARL config keys {sorted(unknown)}")
        return cls(char=char, **d)


class PearlModel(nn.Module):
    """Backbone + char CNN + projection + type head (+ supersense head; see module docstring)."""

    def __init__(self, config: PearlConfig, backbone: nn.Module | None = None,
                 tokenizer: Any = None) -> None:
        super().__init__()
        from transformers import AutoModel, AutoTokenizer

        self.config = config
        path = backbone_path(config.backbone)
        self.tokenizer = tokenizer or AutoTokenizer.from_pretrained(str(path))
        self.backbone = backbone or AutoModel.from_pretrained(str(path))
        hidden = int(self.backbone.config.hidden_size)
        self.dim = hidden
        self.char = CharCNN(config.char) if config.use_char else None
        in_dim = hidden + (config.char.out_dim if config.use_char else 0)
        self.proj = nn.Linear(in_dim, hidden)
        with torch.no_grad():
            self.proj.weight.zero_()
            self.proj.weight[:, :hidden] = torch.eye(hidden)
            self.proj.bias.zero_()
        head_in = hidden if config.type_head_on == "output" else in_dim
        self.head = nn.Linear(head_in, len(config.types)) if config.types else None
        self.sense_head = (nn.Linear(hidden, len(config.supersenses)) if config.supersenses
                           else None)

    def pooled(self, texts: Sequence[str]) -> torch.Tensor:
        """The backbone's mean-pooled token vectors (batch, hidden)."""
        device = self.proj.weight.device
        batch = self.tokenizer(list(texts), padding=True, truncation=True,
                               max_length=self.config.max_seq_length, return_tensors="pt")
        batch = {k: v.to(device) for k, v in batch.items()}
        hidden = self.backbone(**batch).last_hidden_state
        m = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
        return ((hidden * m).sum(dim=1) / m.sum(dim=1).clamp(min=1e-9)).float()

    def features(self, texts: Sequence[str]) -> torch.Tensor:
        """Concatenated [mean-pooled backbone vector; char vector] (batch, in_dim)."""
        pooled = self.pooled(texts)
        if self.char is None:
            return pooled
        ids = bytes_batch(texts, self.config.char.max_chars).to(pooled.device)
        return torch.cat([pooled, self.char(ids).float()], dim=1)

    def forward(self, texts: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor | None]:
        """(L2-normalised embeddings (batch, dim), type logits or None)."""
        feats = self.features(texts)
        emb = nn.functional.normalize(self.proj(feats), dim=-1)
        if self.head is None:
            return emb, None
        return emb, self.head(emb if self.config.type_head_on == "output" else feats)

    def sense_logits(self, emb: torch.Tensor) -> torch.Tensor:
        """Supersense logits from output embeddings (``forward``'s first result)."""
        if self.sense_head is None:
            raise ValueError("this PEARL model has no supersense head")
        return self.sense_head(emb)

    # ---- persistence -------------------------------------------------------------------------

    def _small_modules(self) -> tuple[tuple[str, nn.Module | None], ...]:
        """The modules stored whole (float32), with their key prefixes."""
        return (("char.", self.char), ("proj.", self.proj), ("head.", self.head),
                ("sense_head.", self.sense_head))

    def save_pretrained(self, out_dir: str | Path, extra_config: dict[str, Any] | None = None
                        ) -> Path:
        """Write config.json + model.safetensors (backbone as fp16 deltas) atomically."""
        from safetensors.torch import save

        from phrasekit.io import atomic_write, write_json

        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        tensors, skipped = backbone_deltas(self.backbone, self.config.backbone)
        for prefix, module in self._small_modules():
            if module is not None:
                for name, value in module.state_dict().items():
                    tensors[prefix + name] = value.detach().float().contiguous()
        logger.info("saving PEARL model: %d backbone deltas, %d unchanged tensors skipped",
                    sum(k.startswith(DELTA_PREFIX) for k in tensors), skipped)
        with atomic_write(out / WEIGHTS, mode="wb") as fh:
            fh.write(save(tensors, metadata={"format": FORMAT}))
        config = {
            "format": FORMAT, "format_version": FORMAT_VERSION,
            "backbone_sha256": backbone_fingerprint(self.config.backbone),
            "pearl": self.config.to_dict(), **(extra_config or {}),
        }
        write_json(out / "config.json", config)
        return out

    @classmethod
    def from_pretrained(cls, path: str | Path) -> PearlModel:
        """Rebuild from ``save_pretrained`` output (packaged backbone + stored deltas)."""
        from safetensors.torch import load_file

        path = Path(path)
        config = read_pearl_config(path)
        model = cls(PearlConfig.from_dict(config["pearl"]))
        check_backbone_fingerprint(path, config, model.config.backbone)
        tensors = load_file(str(path / WEIGHTS))
        add_backbone_deltas(model.backbone, tensors, path)
        for prefix, module in model._small_modules():
            if module is None:
                continue
            sub = {k[len(prefix):]: v for k, v in tensors.items() if k.startswith(prefix)}
            module.load_state_dict(sub)
        model.eval()
        return model


def read_pearl_config(path: str | Path) -> dict[str, Any]:
    """Parse and check a PEARL model folder's config.json."""
    return read_model_config(path, FORMAT, QUANTIZED_FORMAT_VERSION, "PEARL")


def read_model_config(path: str | Path, fmt: str, version: int, kind: str) -> dict[str, Any]:
    """Parse a model folder's config.json (+ ``model.safetensors``) and check its ``format``
    and ``format_version``; shared by the formats that store fp16 backbone deltas."""
    path = Path(path)
    cfg_path = path / "config.json"
    if not cfg_path.is_file() or not (path / WEIGHTS).is_file():
        raise FileNotFoundError(f"{path} is not a {kind} model folder (config.json + {WEIGHTS})")
    config = json.loads(cfg_path.read_text(encoding="utf-8"))
    if config.get("format") != fmt:
        raise ValueError(f"{path}: not a {kind} model (format {config.get('format')!r})")
    if int(config.get("format_version", 0)) > version:
        raise ValueError(f"{path}: written by a newer phrasekit (format_version "
                         f"{config['format_version']}); upgrade phrasekit")
    return config


def is_pearl_folder(path: str | Path) -> bool:
    """True when ``path`` holds a saved PEARL model."""
    from phrasekit.io import model_folder_format

    return model_folder_format(path) == FORMAT


def _packaged_backbone_state(name: str) -> dict[str, torch.Tensor]:
    """The untouched packaged backbone weights (reference for deltas)."""
    from transformers import AutoModel

    return AutoModel.from_pretrained(str(backbone_path(name))).state_dict()


def backbone_deltas(backbone: nn.Module, name: str) -> tuple[dict[str, torch.Tensor], int]:
    """``backbone``'s changes from the packaged backbone ``name`` as float16 tensors keyed
    ``DELTA_PREFIX + tensor name`` (unchanged tensors are left out), and how many were left out."""
    base = _packaged_backbone_state(name)
    tensors: dict[str, torch.Tensor] = {}
    skipped = 0
    for key, value in backbone.state_dict().items():
        delta = value.detach().float() - base[key].float()
        if not torch.any(delta):
            skipped += 1
            continue
        tensors[DELTA_PREFIX + key] = delta.half().contiguous()
    return tensors, skipped


def add_backbone_deltas(backbone: nn.Module, tensors: dict[str, torch.Tensor],
                        source: str | Path) -> int:
    """In place: add the deltas of ``tensors`` (float16 ``DELTA_PREFIX`` tensors or int8
    ``DELTA_Q8_PREFIX`` codes with their scales) to a freshly loaded packaged backbone; returns
    how many were applied (``source`` names the file in errors)."""
    state = backbone.state_dict()
    applied = 0
    with torch.no_grad():
        for key, value in tensors.items():
            if key.startswith(DELTA_PREFIX):
                name, delta = key[len(DELTA_PREFIX):], value.float()
            elif key.startswith(DELTA_Q8_PREFIX):
                name = key[len(DELTA_Q8_PREFIX):]
                scale = tensors.get(DELTA_SCALE_PREFIX + name)
                if scale is None:
                    raise ValueError(f"{source}: int8 delta {name!r} has no scale")
                delta = value.float() * scale.float()
            else:
                continue
            if name not in state or state[name].shape != delta.shape:
                raise ValueError(f"{source}: unknown backbone tensor {name!r} or wrong shape")
            state[name].add_(delta)
            applied += 1
    return applied


def quantize_deltas(tensors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """float16 backbone deltas of 2+ dimensions -> int8 codes with one float16 scale per row
    (absmax / 127); 1-d deltas (biases, norms) and all other tensors are kept as they are.

    Fine-tuning deltas are small and dense, so per-row absmax rounding costs at most half a
    step (absmax / 254) per entry and halves the file.
    """
    out: dict[str, torch.Tensor] = {}
    for key, value in tensors.items():
        if not key.startswith(DELTA_PREFIX) or value.dim() < 2:
            out[key] = value
            continue
        name, delta = key[len(DELTA_PREFIX):], value.float()
        absmax = delta.abs().amax(dim=tuple(range(1, delta.dim())), keepdim=True)
        scale = torch.where(absmax > 0, absmax / 127.0, torch.ones_like(absmax)).half()
        codes = torch.round(delta / scale.float()).clamp_(-127, 127).to(torch.int8)
        out[DELTA_Q8_PREFIX + name] = codes.contiguous()
        out[DELTA_SCALE_PREFIX + name] = scale.contiguous()
    return out


def quantize_model_folder(src: str | Path, dst: str | Path) -> dict[str, Any]:
    """Copy a model folder with float16 backbone deltas (PEARL, Phrase-BERT, UCTopic) to
    ``dst`` with int8 deltas (:func:`quantize_deltas`); returns sizes in MB. ``config.json``
    records it and gets ``format_version`` 2, which older phrasekit versions refuse instead of
    misreading."""
    from safetensors import safe_open
    from safetensors.torch import save

    from phrasekit.io import atomic_write, write_json

    src, dst = Path(src), Path(dst)
    if src.resolve() == dst.resolve():
        raise ValueError("quantize into another folder (the source stays as the reference)")
    config_path = src / "config.json"
    if not config_path.is_file() or not (src / WEIGHTS).is_file():
        raise FileNotFoundError(f"{src} is not a model folder (config.json + {WEIGHTS})")
    config = json.loads(config_path.read_text(encoding="utf-8"))
    with safe_open(str(src / WEIGHTS), framework="pt") as fh:
        metadata = fh.metadata() or {}
        tensors = {k: fh.get_tensor(k) for k in fh.keys()}  # noqa: SIM118 - not a dict
    if config.get("delta_precision") == "int8" or not any(
            k.startswith(DELTA_PREFIX) for k in tensors):
        raise ValueError(f"{src}: no float16 backbone deltas to quantize")
    dst.mkdir(parents=True, exist_ok=True)
    with atomic_write(dst / WEIGHTS, mode="wb") as fh:
        fh.write(save(quantize_deltas(tensors), metadata=metadata))
    config.update({"format_version": max(int(config.get("format_version", 1)),
                                         QUANTIZED_FORMAT_VERSION), "delta_precision": "int8"})
    write_json(dst / "config.json", config)
    for extra in src.iterdir():  # README and the like travel along
        if extra.is_file() and extra.name not in ("config.json", WEIGHTS):
            (dst / extra.name).write_bytes(extra.read_bytes())
    mb = 1024 * 1024
    return {"source_mb": round((src / WEIGHTS).stat().st_size / mb, 1),
            "int8_mb": round((dst / WEIGHTS).stat().st_size / mb, 1)}


def check_backbone_fingerprint(path: str | Path, config: dict[str, Any], name: str) -> None:
    """Refuse deltas written over another copy of the backbone than the installed one."""
    expected = config.get("backbone_sha256")
    if expected and expected != backbone_fingerprint(name):
        raise ValueError(f"{path}: trained on a different {name} backbone than the one "
                         "installed (weights fingerprint differs)")


def backbone_fingerprint(name: str) -> str:
    """sha256 of the packaged backbone's weight file, so deltas are never applied to others."""
    h = hashlib.sha256()
    with open(backbone_path(name) / "model.safetensors", "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def interpolate_weights(model: nn.Module, initial: dict[str, torch.Tensor], alpha: float,
                        prefixes: tuple[str, ...] = ("backbone.", "proj.")) -> None:
    """In place: theta = alpha * fine-tuned + (1 - alpha) * initial, for tensors under ``prefixes``.

    PEARL's weight averaging against catastrophic forgetting. The char CNN and type head have no
    meaningful initial weights (random), so they keep their trained values.
    """
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1], got {alpha}")
    with torch.no_grad():
        for name, value in model.state_dict().items():
            if not (name.startswith(prefixes) and name in initial and value.is_floating_point()):
                continue
            start = initial[name].to(value.dtype)
            if torch.equal(value, start):  # frozen: keep bit-exact (rounding would store deltas)
                continue
            value.mul_(alpha).add_(start, alpha=1.0 - alpha)


class PearlEncoder(Encoder):
    """phrasekit encoder over a ``PearlModel`` (inference only)."""

    default_batch_size = 128

    def __init__(self, model: PearlModel, name: str = "pearl",
                 num_threads: int | None = None, max_seq_length: int | None = None) -> None:
        if num_threads:
            torch.set_num_threads(int(num_threads))
        self.model = model.eval()
        if max_seq_length:
            self.model.config.max_seq_length = int(max_seq_length)
        self.name = name
        self.dim = model.dim
        self.types = list(model.config.types)

    @classmethod
    def from_pretrained(cls, path: str | Path, name: str | None = None, **kwargs: Any
                        ) -> PearlEncoder:
        """Load a saved PEARL model folder."""
        path = Path(path)
        return cls(PearlModel.from_pretrained(path), name=name or path.name, **kwargs)

    def _encode_batch(self, texts: Sequence[str]) -> np.ndarray:
        with torch.inference_mode():
            emb, _ = self.model(texts)
        return emb.numpy()

    def predict_types(self, texts: Sequence[str], top: int = 1) -> list[list[tuple[str, float]]]:
        """Most probable phrase types (label, probability) per text, from the auxiliary head."""
        if self.model.head is None:
            raise ValueError(f"{self.name} has no phrase-type head")
        return self._predict(texts, top, self.types, lambda emb, logits: logits)

    def predict_supersenses(self, texts: Sequence[str], top: int = 1
                            ) -> list[list[tuple[str, float]]]:
        """Most probable WordNet noun supersenses (label, probability) per text, e.g.
        ``noun.substance`` for a chemical; only for models trained with ``--supersense-weight``."""
        if self.model.sense_head is None:
            raise ValueError(f"{self.name} has no supersense head (train with "
                             "--supersense-weight)")
        return self._predict(texts, top, list(self.model.config.supersenses),
                             lambda emb, logits: self.model.sense_logits(emb))

    def _predict(self, texts: Sequence[str], top: int, labels: list[str],
                 head: Any) -> list[list[tuple[str, float]]]:
        from phrasekit.encoders.base import validate_texts

        items = validate_texts(texts)
        out: list[list[tuple[str, float]]] = []
        with torch.inference_mode():
            for s in range(0, len(items), self.default_batch_size):
                emb, logits = self.model(items[s : s + self.default_batch_size])
                probs = torch.softmax(head(emb, logits), dim=-1)
                p, i = probs.topk(min(top, probs.shape[1]), dim=-1)
                out.extend([[(labels[j], float(q)) for q, j in zip(pr, ix, strict=True)]
                            for pr, ix in zip(p.tolist(), i.tolist(), strict=True)])
        return out
