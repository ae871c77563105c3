"""The sequence-to-embeddings network of §2.3 (Eq. 3-4) and its model folder.

Input: the words of a phrase or sentence as *frozen* word vectors (the word space, GloVe 6B 50d;
unknown words share one learned ``<unk>`` vector) followed by a learned ``<eos>`` vector, plus
learned positional embeddings. A projection maps them to the transformer width
(``hidden_dim``; the paper keeps it equal to the word-vector size, our default too).

- **Encoder** (Eq. 3): a pre-LayerNorm transformer encoder gives contextual vectors
  ``e_x .. e_y, e_<eos>``.
- **Facet queries**: K linear layers ``L_k`` on ``e_<eos>`` (one ``hidden -> K * hidden``
  linear layer, which is the same as K separate ones).
- **Decoder** (Eq. 4): ``F(I_t) = TD(L_1(e_eos) .. L_K(e_eos), e_x .. e_y)``, a transformer
  decoder whose K query positions attend to each other (no causal mask: all K codebook
  embeddings come out of one forward pass, no autoregression) and, with
  ``cross_attention=True``, to the encoder's word vectors. The paper drops that cross-attention
  for phrases ("encoder and decoder have the same architecture"), which is
  ``cross_attention=False`` here (the decoder is then a transformer encoder over the K
  queries).
- **Output**: a linear map of each decoder vector to the word space: the K facets ``c_k``.
  They are *not* normalised in training (Eq. 1 bounds M by 1 instead); every score uses the
  normalised ``F_u`` (Eq. 5-7), which :meth:`FacetModel.forward` also returns.

``Emb`` (the paper's "Ours Emb") is the mean of the encoder's word vectors (``<eos>`` and
padding excluded).

Model folder: ``config.json`` (``format`` ``phrasekit-facets``, the architecture, the word
space's name and fingerprint, the training report) + ``model.safetensors`` (the trainable
weights and the corpus word counts used for p(w); the frozen word vectors are *not* stored —
they are rebuilt from the packaged GloVe and checked against the fingerprint).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import torch
from torch import nn

from phrasekit.encoders.facets.config import FacetModelConfig
from phrasekit.encoders.facets.words import WordSpace, load_word_space
from phrasekit.encoders.pooling import mean_pool
from phrasekit.io import write_json
from phrasekit.models.folders import FACETS_FORMAT, WEIGHTS, read_model_config, saves_model_folder
from phrasekit.models.weights import load_weights, save_weights

logger = logging.getLogger(__name__)

FORMAT = FACETS_FORMAT
FORMAT_VERSION = 1
#: Special input codes (word ids are >= 0).
UNK, EOS, PAD = -1, -2, -3


class FacetBatch(NamedTuple):
    """Padded model inputs: ``ids`` (B, T) with word ids or UNK/EOS/PAD codes, and
    ``word_mask`` (B, T), True at word positions (not ``<eos>``, not padding)."""

    ids: torch.Tensor
    word_mask: torch.Tensor
    lengths: torch.Tensor


class FacetOutput(NamedTuple):
    """``facets`` (B, K, word_dim) as predicted; ``unit_facets`` the same L2-normalised (F_u);
    ``states`` (B, T, hidden) encoder outputs; ``embedding`` (B, hidden) their mean over words
    (Emb)."""

    facets: torch.Tensor
    unit_facets: torch.Tensor
    states: torch.Tensor
    embedding: torch.Tensor


def make_batch(sequences: Sequence[Sequence[int]], max_len: int) -> FacetBatch:
    """Pad word-id sequences (-1 = unknown) into a batch, each cut to ``max_len`` words and
    closed by ``<eos>``. An empty sequence becomes one ``<unk>`` (so attention has a key)."""
    seqs = [list(s)[:max_len] or [UNK] for s in sequences]
    if not seqs:
        raise ValueError("no sequences to batch")
    lengths = torch.tensor([len(s) for s in seqs], dtype=torch.long)
    t = int(lengths.max()) + 1
    ids = torch.full((len(seqs), t), PAD, dtype=torch.long)
    for row, s in enumerate(seqs):
        ids[row, : len(s)] = torch.as_tensor(s, dtype=torch.long).clamp_min(UNK)
        ids[row, len(s)] = EOS
    word_mask = torch.arange(t).unsqueeze(0) < lengths.unsqueeze(1)
    return FacetBatch(ids, word_mask, lengths)


class FacetModel(nn.Module):
    """Encoder → K facet queries from ``<eos>`` → non-autoregressive decoder → K facets."""

    def __init__(self, config: FacetModelConfig, word_vectors: np.ndarray | torch.Tensor) -> None:
        super().__init__()
        config.validate()
        vectors = torch.as_tensor(np.asarray(word_vectors, dtype=np.float32))
        if vectors.dim() != 2 or vectors.shape[1] != config.word_dim:
            raise ValueError(f"word vectors must be (V, {config.word_dim}), "
                             f"got {tuple(vectors.shape)}")
        self.config = config
        h, k = config.hidden_dim, config.n_facets
        self.register_buffer("word_vectors", vectors, persistent=False)
        scale = float(vectors[: min(len(vectors), 10_000)].norm(dim=1).mean())
        self.special = nn.Parameter(torch.randn(2, config.word_dim) * scale / config.word_dim**0.5)
        self.input_proj = nn.Linear(config.word_dim, h)
        self.positions = nn.Embedding(config.max_len + 1, h)
        nn.init.normal_(self.positions.weight, std=0.02)
        self.input_norm = nn.LayerNorm(h)
        self.input_dropout = nn.Dropout(config.dropout)
        self.encoder = nn.TransformerEncoder(
            nn.TransformerEncoderLayer(h, config.n_heads, config.ff_dim, config.dropout,
                                       activation="gelu", batch_first=True, norm_first=True),
            config.encoder_layers, norm=nn.LayerNorm(h), enable_nested_tensor=False)
        self.facet_queries = nn.Linear(h, k * h)
        if config.cross_attention:
            self.decoder: nn.Module = nn.TransformerDecoder(
                nn.TransformerDecoderLayer(h, config.n_heads, config.ff_dim, config.dropout,
                                           activation="gelu", batch_first=True,
                                           norm_first=True),
                config.decoder_layers, norm=nn.LayerNorm(h))
        else:
            self.decoder = nn.TransformerEncoder(
                nn.TransformerEncoderLayer(h, config.n_heads, config.ff_dim, config.dropout,
                                           activation="gelu", batch_first=True,
                                           norm_first=True),
                config.decoder_layers, norm=nn.LayerNorm(h), enable_nested_tensor=False)
        self.output = nn.Linear(h, config.word_dim)

    @property
    def n_facets(self) -> int:
        return self.config.n_facets

    def _embed(self, ids: torch.Tensor) -> torch.Tensor:
        """Word vectors for ids >= 0, the learned <unk>/<eos> vectors for -1/-2, 0 for PAD."""
        words = self.word_vectors[ids.clamp_min(0)]
        special = self.special[(-ids - 1).clamp(0, 1)]
        x = torch.where((ids >= 0).unsqueeze(-1), words, special)
        return x * (ids != PAD).unsqueeze(-1).to(x.dtype)

    def forward(self, batch: FacetBatch) -> FacetOutput:
        """Facets (raw and unit), encoder states and Emb for a padded batch."""
        ids, word_mask, lengths = batch
        b, t = ids.shape
        pad_mask = ids == PAD
        pos = torch.arange(t, device=ids.device).clamp_max(self.config.max_len)
        x = self.input_proj(self._embed(ids)) + self.positions(pos).unsqueeze(0)
        x = self.input_dropout(self.input_norm(x))
        states = self.encoder(x, src_key_padding_mask=pad_mask)
        eos = states[torch.arange(b, device=ids.device), lengths]
        queries = self.facet_queries(eos).view(b, self.config.n_facets, self.config.hidden_dim)
        if self.config.cross_attention:
            out = self.decoder(queries, states, memory_key_padding_mask=~word_mask)
        else:
            out = self.decoder(queries)
        facets = self.output(out)
        unit = nn.functional.normalize(facets, dim=-1)
        return FacetOutput(facets, unit, states, mean_pool(states, word_mask))


# ---------------------------------------------------------------------------------- folders
@saves_model_folder
def save_facet_model(model: FacetModel, out_dir: str | Path, word_space: WordSpace,
                     word_counts: np.ndarray | None = None,
                     extra_config: dict[str, Any] | None = None) -> Path:
    """Write ``config.json`` + ``model.safetensors`` (weights, optional corpus word counts)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tensors = {f"model.{k}": v.detach().contiguous() for k, v in model.state_dict().items()}
    if word_counts is not None:
        counts = np.asarray(word_counts, dtype=np.int64)
        if counts.shape != (len(word_space),):
            raise ValueError(f"word_counts must have shape ({len(word_space)},)")
        nz = np.flatnonzero(counts)
        if counts.max(initial=0) >= 2**31:
            raise ValueError("word counts beyond int32 range")
        tensors["word_counts.ids"] = torch.from_numpy(nz.astype(np.int32))
        tensors["word_counts.values"] = torch.from_numpy(counts[nz].astype(np.int32))
    save_weights(out / WEIGHTS, tensors, FORMAT)
    write_json(out / "config.json", {
        "format": FORMAT, "format_version": FORMAT_VERSION, "model": asdict(model.config),
        "word_space": word_space.name, "word_space_fingerprint": word_space.fingerprint,
        **(extra_config or {}),
    })
    return out


def load_facet_model(path: str | Path) -> tuple[FacetModel, WordSpace, np.ndarray | None,
                                                 dict[str, Any]]:
    """``(model in eval mode, word space, word counts or None, config.json)`` of a folder."""
    path = Path(path)
    config = read_model_config(path, FORMAT, "facet", version=FORMAT_VERSION)
    model_cfg = FacetModelConfig.from_dict(dict(config["model"]))
    word_space = load_word_space(model_cfg.word_space)
    if config.get("word_space_fingerprint") != word_space.fingerprint:
        raise ValueError(f"{path}: trained on another {model_cfg.word_space} table "
                         f"(fingerprint {config.get('word_space_fingerprint')} != "
                         f"{word_space.fingerprint})")
    tensors = load_weights(path / WEIGHTS)
    state = {k[len("model."):]: v for k, v in tensors.items() if k.startswith("model.")}
    model = FacetModel(model_cfg, word_space.vectors)
    missing, unexpected = model.load_state_dict(state, strict=False)
    if missing or unexpected:
        raise ValueError(f"{path}: weights do not fit the model (missing {missing[:3]}, "
                         f"unexpected {unexpected[:3]})")
    model.eval()
    counts = None
    if "word_counts.ids" in tensors:
        counts = np.zeros(len(word_space), dtype=np.int64)
        counts[tensors["word_counts.ids"].numpy().astype(np.int64)] = \
            tensors["word_counts.values"].numpy()
    return model, word_space, counts, config
