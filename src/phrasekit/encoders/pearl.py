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
backbone and adds the differences (:mod:`phrasekit.models.folders`), so a trained model
costs ~20 MB instead of ~90 MB. A model trained with adapters (``delta_rank``) stores its
backbone's changes as low-rank factors: a few MB even for the 110M-parameter mpnet.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from phrasekit.encoders.base import Encoder, cap_chars, token_counts, validate_texts
from phrasekit.encoders.char import CharCNN, bytes_batch
from phrasekit.encoders.pearl_config import TYPE_HEAD_INPUTS as TYPE_HEAD_INPUTS  # re-exported
from phrasekit.encoders.pearl_config import PearlConfig
from phrasekit.encoders.pooling import mean_pool
from phrasekit.encoders.transformer import cast_model, resolve_precision
from phrasekit.io import write_json
from phrasekit.models.backbones import backbone_fingerprint, load_backbone
from phrasekit.models.folders import (
    DELTA_PREFIX,
    DELTA_UP_PREFIX,
    PEARL_FORMAT,
    WEIGHTS,
    check_backbone_fingerprint,
    read_model_config,
    saves_model_folder,
)
from phrasekit.models.weights import (
    add_backbone_deltas,
    backbone_deltas,
    load_weights,
    save_weights,
)
from phrasekit.settings import torch_threads

logger = logging.getLogger(__name__)

FORMAT = PEARL_FORMAT
FORMAT_VERSION = 1


class PearlModel(nn.Module):
    """Backbone + char CNN + projection + type head (+ supersense head; see module docstring)."""

    def __init__(self, config: PearlConfig, backbone: nn.Module | None = None,
                 tokenizer: Any = None) -> None:
        super().__init__()
        self.config = config
        if backbone is None or tokenizer is None:
            tokenizer, backbone = load_backbone(config.backbone)
        self.tokenizer = tokenizer
        self.backbone = backbone
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
        batch = self.tokenizer(cap_chars(texts, self.config.max_seq_length), padding=True,
                               truncation=True, max_length=self.config.max_seq_length,
                               return_tensors="pt")
        batch = {k: v.to(device) for k, v in batch.items()}
        hidden = self.backbone(**batch).last_hidden_state.float()  # bf16 backbones pool in fp32
        return mean_pool(hidden, batch["attention_mask"])

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

    @saves_model_folder
    def save_pretrained(self, out_dir: str | Path, extra_config: dict[str, Any] | None = None
                        ) -> Path:
        """Write config.json + model.safetensors (backbone as fp16 deltas) atomically."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        tensors, skipped = backbone_deltas(self.backbone, self.config.backbone,
                                           rank=self.config.delta_rank)
        for prefix, module in self._small_modules():
            if module is not None:
                for name, value in module.state_dict().items():
                    tensors[prefix + name] = value.detach().float().contiguous()
        logger.info("saving PEARL model: %d backbone deltas, %d unchanged tensors skipped",
                    sum(k.startswith((DELTA_PREFIX, DELTA_UP_PREFIX)) for k in tensors), skipped)
        save_weights(out / WEIGHTS, tensors, FORMAT)
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
        path = Path(path)
        config = read_pearl_config(path)
        model = cls(PearlConfig.from_dict(config["pearl"]))
        check_backbone_fingerprint(path, config, model.config.backbone)
        tensors = load_weights(path / WEIGHTS)
        add_backbone_deltas(model.backbone, tensors, path)
        for prefix, module in model._small_modules():
            if module is None:
                continue
            sub = {k[len(prefix):]: v for k, v in tensors.items() if k.startswith(prefix)}
            try:
                module.load_state_dict(sub)
            except RuntimeError as exc:  # missing, extra or misshapen tensors
                raise ValueError(f"{path / WEIGHTS}: does not hold this model's {prefix!r} "
                                 f"tensors ({' '.join(str(exc).split())[:160]})") from None
        model.eval()
        return model


def read_pearl_config(path: str | Path) -> dict[str, Any]:
    """Parse and check a PEARL model folder's config.json."""
    return read_model_config(path, FORMAT, "PEARL")


class PearlEncoder(Encoder):
    """phrasekit encoder over a ``PearlModel`` (inference only)."""

    default_batch_size = 128
    side_by_side = True

    def __init__(self, model: PearlModel, name: str = "pearl",
                 num_threads: int | None = None, max_seq_length: int | None = None,
                 precision: str = "fp32") -> None:
        precision = resolve_precision(precision)
        if precision not in ("fp32", "bf16"):
            raise ValueError(f"PEARL encoders support precision fp32 or bf16, got {precision!r}")
        self.num_threads = num_threads
        self.precision = precision
        if precision == "bf16":  # the backbone only: the char CNN and projection stay fp32
            model.backbone = cast_model(model.backbone, precision)
            # eager attention, as TransformerEncoder's bf16: SDPA's bf16 CPU kernel is the
            # slower one on short texts (20,000 names: 1.1x; docs/methods/pearl.md)
            model.backbone.set_attn_implementation("eager")
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
        encoder = cls(PearlModel.from_pretrained(path), name=name or path.name, **kwargs)
        encoder.model_path = path
        return encoder

    def vector_settings(self) -> dict[str, object]:
        extra = {"precision": self.precision} if self.precision != "fp32" else {}
        return {"max_seq_length": int(self.model.config.max_seq_length), **extra}

    def torch_modules(self) -> list[Any]:
        return [self.model]

    def _token_counts(self, items: Sequence[str]) -> list[int]:
        return token_counts(self.model.tokenizer, items, self.model.config.max_seq_length)

    def _encode_batch(self, texts: Sequence[str]) -> np.ndarray:
        with torch.inference_mode():
            emb, _ = self.model(texts)
        return emb.cpu().numpy()

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
        items = validate_texts(texts)
        out: list[list[tuple[str, float]]] = []
        with torch.inference_mode(), torch_threads(self.num_threads):
            for s in range(0, len(items), self.default_batch_size):
                emb, logits = self.model(items[s : s + self.default_batch_size])
                probs = torch.softmax(head(emb, logits), dim=-1)
                p, i = probs.topk(min(top, probs.shape[1]), dim=-1)
                out.extend([[(labels[j], float(q)) for q, j in zip(pr, ix, strict=True)]
                            for pr, ix in zip(p.tolist(), i.tolist(), strict=True)])
        return out
