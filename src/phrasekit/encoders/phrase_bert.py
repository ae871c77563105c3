"""Phrase-BERT model folders (Wang et al. 2021): a fine-tuned packaged backbone, mean pooled.

``PhraseBertModel`` is the trainable module (``phrasekit.training.phrase_bert.task`` fine-tunes it
with triplets); ``save_phrase_bert`` writes ``config.json`` (``format``
``phrasekit-phrase-bert``, the backbone's sha256, the training report) + ``model.safetensors``
holding the backbone's float16 (or int8) differences from the packaged MiniLM, and
``load_phrase_bert`` rebuilds it as a mean-pooling :class:`TransformerEncoder`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from phrasekit.encoders.base import cap_chars
from phrasekit.encoders.pooling import mean_pool
from phrasekit.encoders.transformer import TransformerEncoder, resolve_precision
from phrasekit.io import write_json
from phrasekit.models.backbones import backbone_fingerprint, backbone_path, load_backbone
from phrasekit.models.folders import (
    PHRASE_BERT_FORMAT,
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

logger = logging.getLogger(__name__)

FORMAT = PHRASE_BERT_FORMAT
FORMAT_VERSION = 1
#: Tokens kept per text when the saved encoder embeds (MiniLM's usual limit).
ENCODER_MAX_SEQ_LENGTH = 256


class PhraseBertModel(nn.Module):
    """The packaged backbone with its tokenizer; ``embed`` mean-pools its last layer."""

    def __init__(self, backbone: str = "minilm") -> None:
        super().__init__()
        self.backbone_name = backbone
        self.tokenizer, self.backbone = load_backbone(backbone)

    def embed(self, texts: Sequence[str], max_length: int) -> torch.Tensor:
        """(batch, dim) mean of the last-layer token vectors, texts cut at ``max_length``."""
        enc = self.tokenizer(cap_chars(texts, max_length), padding=True, truncation=True,
                             max_length=max_length, return_tensors="pt")
        out = self.backbone(**enc).last_hidden_state
        return mean_pool(out, enc["attention_mask"])


@saves_model_folder
def save_phrase_bert(model: PhraseBertModel, out_dir: str | Path,
                     extra_config: dict[str, Any] | None = None) -> Path:
    """Write ``config.json`` + ``model.safetensors`` (fp16 backbone deltas) atomically."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tensors, skipped = backbone_deltas(model.backbone, model.backbone_name)
    logger.info("saving Phrase-BERT model: %d backbone deltas, %d unchanged tensors skipped",
                len(tensors), skipped)
    save_weights(out / WEIGHTS, tensors, FORMAT)
    write_json(out / "config.json", {
        "format": FORMAT, "format_version": FORMAT_VERSION, "backbone": model.backbone_name,
        "backbone_sha256": backbone_fingerprint(model.backbone_name), "pooling": "mean",
        "max_seq_length": ENCODER_MAX_SEQ_LENGTH, **(extra_config or {}),
    })
    return out


def read_phrase_bert_config(path: str | Path) -> dict[str, Any]:
    """Parse and check a Phrase-BERT model folder's config.json."""
    return read_model_config(path, FORMAT, "Phrase-BERT")


def load_phrase_bert(path: str | Path, name: str | None = None, precision: str = "fp32",
                     num_threads: int | None = None, max_seq_length: int | None = None,
                     backend: str | None = None) -> TransformerEncoder:
    """The saved model as a mean-pooling ``TransformerEncoder`` (packaged backbone + deltas)."""
    path = Path(path)
    config = read_phrase_bert_config(path)
    precision = resolve_precision(precision)
    backbone = str(config.get("backbone", "minilm"))
    check_backbone_fingerprint(path, config, backbone)
    encoder = TransformerEncoder(
        backbone_path(backbone), name=name or path.name, num_threads=num_threads,
        max_seq_length=max_seq_length or int(config.get("max_seq_length",
                                                        ENCODER_MAX_SEQ_LENGTH)))
    applied = add_backbone_deltas(encoder.model, load_weights(path / WEIGHTS), path / WEIGHTS)
    encoder.model.eval()
    if precision != "fp32" or backend not in (None, "torch"):  # deltas are added in fp32
        encoder.cast(precision, backend)
    encoder.model_path = path
    logger.info("loaded Phrase-BERT model %s (%d backbone deltas)", path, applied)
    return encoder
