"""Character-level phrase encoder: a small CNN over UTF-8 bytes (PEARL's stand-in for LOVE).

Why bytes: no vocabulary to ship or to go out of, any script works, and typos, acronyms and
morphology ("NYTimes", "Timse") stay visible where WordPiece splits them unpredictably.
Architecture: byte embedding -> parallel 1-D convolutions (several widths) -> max over time ->
highway layer (optionally a linear output layer, which the LOVE-style mimicry pre-training in
``training/pearl/char_mimic.py`` needs: the highway output is never negative). About 0.2M
parameters; cost is negligible next to the transformer.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from phrasekit.encoders.pearl_config import CharCNNConfig

PAD, BOS, EOS = 256, 257, 258
VOCAB = 259


def bytes_batch(texts: Sequence[str], max_chars: int) -> torch.Tensor:
    """Byte ids (batch, L) with BOS/EOS and PAD; texts longer than ``max_chars`` bytes are cut."""
    rows = [[BOS, *t.encode("utf-8")[:max_chars], EOS] for t in texts]
    width = max(max(len(r) for r in rows), 7)  # at least the widest convolution + 2
    out = torch.full((len(rows), width), PAD, dtype=torch.long)
    for i, r in enumerate(rows):
        out[i, : len(r)] = torch.tensor(r, dtype=torch.long)
    return out


class CharCNN(nn.Module):
    """Byte-level CNN: (batch, L) ids -> (batch, out_dim) features."""

    def __init__(self, config: CharCNNConfig | None = None) -> None:
        super().__init__()
        self.config = config or CharCNNConfig()
        c = self.config
        self.embed = nn.Embedding(VOCAB, c.emb_dim, padding_idx=PAD)
        self.convs = nn.ModuleList(nn.Conv1d(c.emb_dim, c.filters, w) for w in c.widths)
        self.gate = nn.Linear(c.out_dim, c.out_dim)
        self.transform = nn.Linear(c.out_dim, c.out_dim)
        self.out = nn.Linear(c.out_dim, c.out_dim) if c.out_linear else None

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """Max-pooled convolution features through one highway layer."""
        mask = (ids != PAD).unsqueeze(1)  # (b, 1, L)
        x = self.embed(ids).transpose(1, 2)  # (b, e, L)
        pooled = []
        for conv in self.convs:
            h = torch.relu(conv(x))  # (b, f, L - w + 1)
            valid = mask[:, :, conv.kernel_size[0] - 1 :]
            h = h.masked_fill(~valid, 0.0)
            pooled.append(h.max(dim=2).values)
        h = torch.cat(pooled, dim=1)
        g = torch.sigmoid(self.gate(h))
        h = g * torch.relu(self.transform(h)) + (1 - g) * h
        return self.out(h) if self.out is not None else h

    def encode_texts(self, texts: Sequence[str]) -> torch.Tensor:
        """Convenience: features for raw strings."""
        ids = bytes_batch(texts, self.config.max_chars).to(self.embed.weight.device)
        return self(ids)
