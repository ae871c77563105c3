"""Phrase-in-context encoder: mean-pooled contextual token vectors over a character span.

``SpanEncoder().encode_spans([(sentence, (char_start, char_end)), ...], mode=...)`` returns an
``(n, d)`` float32 array of unit rows (UCTopic's phrase encoder E(s, [l, r]) with a mean-pooling
span head instead of LUKE's entity tokens). Modes:

- ``span`` (default): the sentence is encoded as is; the vectors of every token whose character
  offsets (fast tokenizer ``offset_mapping``) overlap ``[char_start, char_end)`` are averaged.
  Word pieces cut by a span boundary count as overlapping.
- ``context``: the mention's tokens are replaced by the tokenizer's mask token (one ``[MASK]``
  by default, as UCTopic and BERT-Mask do; ``mask_tokens=None`` puts one per mention token)
  and the mask position(s) are pooled, so only the context speaks.
- ``mention``: the mention text alone, encoded as its own sentence and mean-pooled over all of
  its tokens, ``[CLS]`` and ``[SEP]`` included -- the sentence-transformers pooling the
  backbone was trained with, so an untrained ``SpanEncoder`` gives exactly ``minilm``'s
  vectors here. (Excluding the special tokens, i.e. ``span`` mode on a sentence that is just
  the mention, costs MiniLM 15 NMI points on BC5CDR mention clustering: 0.406 vs 0.556.)
  ``encode(texts)`` (the phrasekit Encoder contract) is this mode, so a ``SpanEncoder`` drops
  in wherever an encoder is expected.

Long sentences are never rejected: when a sentence (after masking) has more than
``max_length - 2`` tokens, a window of that many tokens centred on the span is kept (clamped to
the sentence); a span longer than the window keeps its first tokens. Identical token
sequences are encoded once per call (several spans of one sentence in ``span`` mode share one
forward pass), sorted by length so batches carry little padding.

Model folder (``save_pretrained`` / ``from_pretrained`` / ``phrasekit.load``): ``config.json``
(``format`` ``phrasekit-span``) plus, for a backbone derived from the packaged MiniLM, a
``model.safetensors`` of float16 differences from it (absent while untrained: the folder is then
just a reference to the packaged backbone); any other backbone is stored whole under
``backbone/`` (Hugging Face ``save_pretrained``: safetensors + JSON, tokenizer included).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from phrasekit.encoders.base import Encoder
from phrasekit.encoders.transformer import TransformerEncoder
from phrasekit.io import write_json
from phrasekit.models.backbones import (
    backbone_fingerprint,
    backbone_path,
    load_backbone,
    load_hf_model,
)
from phrasekit.models.folders import (
    SPAN_FORMAT,
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

FORMAT = SPAN_FORMAT
FORMAT_VERSION = 1
BACKBONE_DIR = "backbone"
MODES = ("span", "context", "mention")
PACKAGED = "minilm"
#: Tokens per sequence at inference, special tokens included (the longest test sentence of
#: CoNLL-2003 has 124 words; training uses shorter windows).
DEFAULT_MAX_LENGTH = 128

SpanItem = tuple[str, tuple[int, int]]


# ---------------------------------------------------------------------------------- validation
def validate_spans(items: Iterable[SpanItem]) -> list[tuple[str, int, int]]:
    """``items`` as ``(sentence, start, end)`` triples, or raise naming the first bad index.

    Each item must be ``(sentence, (start, end))`` with a non-empty ``str`` sentence and integer
    character offsets ``0 <= start < end <= len(sentence)`` covering some non-space text.
    """
    if items is None:
        raise TypeError("items must be a list of (sentence, (start, end)), got None")
    if isinstance(items, str | bytes | bytearray):
        raise TypeError("items must be a list of (sentence, (start, end)) pairs, not a string")
    try:
        rows = list(items)
    except TypeError as exc:
        raise TypeError(f"items must be iterable, got {type(items).__name__}") from exc
    out: list[tuple[str, int, int]] = []
    for i, item in enumerate(rows):
        try:
            sentence, span = item
            start, end = span
        except (TypeError, ValueError) as exc:
            raise TypeError(f"items[{i}] must be (sentence, (start, end)), got {item!r:.80}"
                            ) from exc
        if not isinstance(sentence, str):
            raise TypeError(f"items[{i}]: sentence is {type(sentence).__name__}, not str")
        for name, v in (("start", start), ("end", end)):
            if isinstance(v, bool) or not isinstance(v, int | np.integer):
                raise TypeError(f"items[{i}]: span {name} must be an int, got {v!r}")
        start, end = int(start), int(end)
        n = len(sentence)
        if not 0 <= start <= n or not 0 <= end <= n:
            raise ValueError(f"items[{i}]: span ({start}, {end}) falls outside the sentence "
                             f"(length {n}): {sentence!r:.80}")
        if end <= start:
            raise ValueError(f"items[{i}]: span ({start}, {end}) is empty (end <= start)")
        if not sentence[start:end].strip():
            raise ValueError(f"items[{i}]: span ({start}, {end}) holds only whitespace")
        out.append((sentence, start, end))
    return out


def check_mode(mode: str) -> str:
    """Return ``mode`` or raise ValueError listing the known modes."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    return mode


# ---------------------------------------------------------------------------------- model
@dataclass
class PreparedSpans:
    """Token sequences to encode (deduplicated) and, per item, its sequence and positions."""

    sequences: list[tuple[int, ...]]
    seq_of: list[int]
    positions: list[list[int]]
    truncated: int = 0


class SpanModel(nn.Module):
    """A Hugging Face backbone + its fast tokenizer with span pooling (differentiable).

    ``embed(items, modes)`` is used both at inference (under ``torch.inference_mode``) and in
    training (UCTopic pre-training and CCL), so both see exactly the same inputs.
    """

    def __init__(self, backbone: nn.Module, tokenizer: Any,
                 max_length: int = DEFAULT_MAX_LENGTH, mask_tokens: int | None = 1) -> None:
        super().__init__()
        if not getattr(tokenizer, "is_fast", False):
            raise ValueError("span pooling needs a fast tokenizer (character offsets)")
        if max_length < 8:
            raise ValueError(f"max_length must be >= 8, got {max_length}")
        if mask_tokens is not None and mask_tokens < 1:
            raise ValueError(f"mask_tokens must be >= 1 or None, got {mask_tokens}")
        self.backbone = backbone
        self.tokenizer = tokenizer
        self.max_length = int(max_length)
        self.mask_tokens = mask_tokens
        self.dim = int(backbone.config.hidden_size)

    # ---- tokenisation ---------------------------------------------------------------------
    def _tokenize(self, texts: Sequence[str]) -> dict[str, tuple[list[int], list[tuple[int, int]]]]:
        """Token ids and character offsets (no special tokens, no truncation) per distinct text."""
        uniq = list(dict.fromkeys(texts))
        enc = self.tokenizer(uniq, add_special_tokens=False, return_offsets_mapping=True,
                             truncation=False, verbose=False)
        return {t: (ids, [tuple(o) for o in offs])
                for t, ids, offs in zip(uniq, enc["input_ids"], enc["offset_mapping"],
                                        strict=True)}

    def prepare(self, items: Sequence[tuple[str, int, int]], modes: Sequence[str]
                ) -> PreparedSpans:
        """Build the (deduplicated) token sequences and pooling positions of validated items.

        Raises ValueError when a ``span`` or ``context`` span covers no token (e.g. only
        characters the tokenizer drops; a ``mention`` then pools ``[CLS]`` and ``[SEP]``) or
        when ``context`` mode is asked of a tokenizer without a mask token.
        """
        if len(modes) != len(items):
            raise ValueError(f"got {len(items)} items but {len(modes)} modes")
        texts = [s[a:b] if m == "mention" else s
                 for (s, a, b), m in zip(items, modes, strict=True)]
        tokens = self._tokenize(texts)
        cls_id, sep_id = self.tokenizer.cls_token_id, self.tokenizer.sep_token_id
        if cls_id is None or sep_id is None:
            raise ValueError("the tokenizer has no [CLS]/[SEP] tokens (BERT-style models only)")
        mask_id = self.tokenizer.mask_token_id
        window = self.max_length - 2
        index: dict[tuple[int, ...], int] = {}
        out = PreparedSpans(sequences=[], seq_of=[], positions=[])
        for i, ((_sentence, start, end), mode, text) in enumerate(
                zip(items, modes, texts, strict=True)):
            if mode == "mention":
                start, end = 0, len(text)
            ids, offsets = tokens[text]
            hit = [k for k, (a, b) in enumerate(offsets) if b > a and a < end and b > start]
            if hit:
                first, last = hit[0], hit[-1] + 1
            elif mode == "mention":  # e.g. a zero-width space: [CLS] [SEP] alone, as minilm
                first, last = 0, 0
            else:
                raise ValueError(f"items[{i}]: span ({start}, {end}) {text[start:end]!r} "
                                 "covers no token of the sentence")
            if mode == "context":
                if mask_id is None:
                    raise ValueError("context mode needs a tokenizer with a mask token")
                n_mask = self.mask_tokens or (last - first)
                ids = [*ids[:first], *([mask_id] * n_mask), *ids[last:]]
                last = first + n_mask
            lo = 0
            if len(ids) > window:
                out.truncated += 1
                if last - first >= window:
                    lo = first
                else:
                    centre = (first + last) / 2
                    lo = int(min(max(round(centre - window / 2), 0), len(ids) - window))
            seq = (cls_id, *ids[lo:lo + window], sep_id)
            if mode == "mention":  # the backbone's own sentence pooling, specials included
                pos = list(range(len(seq)))
            else:
                pos = [k - lo + 1 for k in range(first, min(last, lo + window))]
            j = index.setdefault(seq, len(out.sequences))
            if j == len(out.sequences):
                out.sequences.append(seq)
            out.seq_of.append(j)
            out.positions.append(pos)
        return out

    # ---- encoding --------------------------------------------------------------------------
    def _hidden(self, sequences: Sequence[tuple[int, ...]]) -> torch.Tensor:
        """Last-layer vectors (b, L, d) of padded sequences, in float32."""
        device = next(self.backbone.parameters()).device
        width = max(len(s) for s in sequences)
        pad = self.tokenizer.pad_token_id or 0
        ids = torch.full((len(sequences), width), pad, dtype=torch.long)
        mask = torch.zeros((len(sequences), width), dtype=torch.long)
        for r, s in enumerate(sequences):
            ids[r, : len(s)] = torch.tensor(s)
            mask[r, : len(s)] = 1
        hidden = self.backbone(input_ids=ids.to(device), attention_mask=mask.to(device))
        return hidden.last_hidden_state.float()

    @staticmethod
    def _pool(hidden: torch.Tensor, rows: Sequence[int], positions: Sequence[Sequence[int]]
              ) -> torch.Tensor:
        """Mean over ``positions`` of sequence ``rows[i]`` for every item i -> (n, d)."""
        b, length, _ = hidden.shape
        weights = torch.zeros((len(rows), b * length), dtype=hidden.dtype, device=hidden.device)
        for i, (r, pos) in enumerate(zip(rows, positions, strict=True)):
            weights[i, [r * length + p for p in pos]] = 1.0 / len(pos)
        return weights @ hidden.reshape(b * length, -1)

    def embed(self, items: Sequence[tuple[str, int, int]], modes: Sequence[str] | str
              ) -> torch.Tensor:
        """L2-normalised span vectors (n, d) of validated items, in one forward pass (training)."""
        if isinstance(modes, str):
            modes = [check_mode(modes)] * len(items)
        prep = self.prepare(items, modes)
        hidden = self._hidden(prep.sequences)
        pooled = self._pool(hidden, prep.seq_of, prep.positions)
        return nn.functional.normalize(pooled, dim=-1)

    def embed_batched(self, items: Sequence[tuple[str, int, int]], mode: str, batch_size: int,
                      show_progress: bool = False, desc: str = "spans") -> np.ndarray:
        """Unit span vectors (n, d) of validated items, in length-sorted batches (inference)."""
        prep = self.prepare(items, [mode] * len(items))
        if prep.truncated:
            logger.info("%d of %d inputs longer than %d tokens: kept a window around the span",
                        prep.truncated, len(items), self.max_length)
        by_seq: list[list[int]] = [[] for _ in prep.sequences]
        for i, j in enumerate(prep.seq_of):
            by_seq[j].append(i)
        order = sorted(range(len(prep.sequences)), key=lambda j: -len(prep.sequences[j]))
        out = np.zeros((len(items), self.dim), dtype=np.float32)
        starts = range(0, len(order), batch_size)
        bar = tqdm(starts, total=len(starts), desc=f"encode[{desc}:{mode}]", unit="batch",
                   disable=not show_progress, leave=False)
        with torch.inference_mode():
            for s in bar:
                seqs = order[s : s + batch_size]
                hidden = self._hidden([prep.sequences[j] for j in seqs])
                rows, positions, targets = [], [], []
                for r, j in enumerate(seqs):
                    for i in by_seq[j]:
                        rows.append(r)
                        positions.append(prep.positions[i])
                        targets.append(i)
                pooled = nn.functional.normalize(self._pool(hidden, rows, positions), dim=-1)
                out[targets] = pooled.float().cpu().numpy()
        return out


# ---------------------------------------------------------------------------------- encoder
def derived_from_packaged(backbone: nn.Module, tokenizer: Any) -> bool:
    """True when ``backbone`` has the packaged MiniLM's architecture and vocabulary, so its
    weights can be stored as differences from it."""
    from transformers import AutoConfig, AutoTokenizer

    path = backbone_path(PACKAGED)
    ref = AutoConfig.from_pretrained(str(path))
    cfg = backbone.config
    keys = ("model_type", "hidden_size", "num_hidden_layers", "num_attention_heads",
            "intermediate_size", "vocab_size", "max_position_embeddings")
    if any(getattr(cfg, k, None) != getattr(ref, k, None) for k in keys):
        return False
    return tokenizer.get_vocab() == AutoTokenizer.from_pretrained(str(path)).get_vocab()


class SpanEncoder(Encoder):
    """Phrase-in-context embeddings by span pooling (see the module docstring).

    Args:
        backbone: ``"minilm"`` (the packaged all-MiniLM-L6-v2, default), or an encoder
            object: a ``TransformerEncoder`` (e.g. a Phrase-BERT folder loaded by
            ``phrasekit.load``) or a PEARL encoder (its fine-tuned MiniLM is used; the
            character CNN and projection are phrase-level and dropped); its weights are shared,
            not copied. ``phrasekit.registry.load_span(name_or_folder)`` builds one from any
            name or folder, ``phrasekit-span`` folders included.
        name: short name for logs and tables.
        max_length: tokens per encoded sequence, ``[CLS]`` and ``[SEP]`` included.
        mask_tokens: mask tokens that replace a mention in ``context`` mode (None: one per
            mention token).
        num_threads: torch intra-op threads (None keeps torch's setting).
    """

    default_batch_size = 64

    def __init__(self, backbone: str | Encoder = PACKAGED, name: str | None = None,
                 max_length: int = DEFAULT_MAX_LENGTH, mask_tokens: int | None = 1,
                 num_threads: int | None = None) -> None:
        self.num_threads = num_threads
        tokenizer, model, base = self._resolve_backbone(backbone)
        model.eval()
        self.model = SpanModel(model, tokenizer, max_length=max_length, mask_tokens=mask_tokens)
        self.base = base
        self.dim = self.model.dim
        default = backbone if isinstance(backbone, str) else getattr(backbone, "name", "span")
        self.name = name or f"span-{Path(str(default)).name}"
        self.source = str(default)

    @staticmethod
    def _resolve_backbone(backbone: str | Encoder) -> tuple[Any, nn.Module, str | None]:
        """(tokenizer, HF model, ``"minilm"`` when the weights derive from the packaged one)."""
        if isinstance(backbone, str) and backbone == PACKAGED:
            tokenizer, model = load_backbone(PACKAGED)
            return tokenizer, model, PACKAGED
        if isinstance(backbone, str | Path):
            raise ValueError(f"SpanEncoder takes {PACKAGED!r} or an encoder object, got "
                             f"{str(backbone)!r}: use phrasekit.registry.load_span for other "
                             "names and folders")
        enc = backbone
        if isinstance(enc, TransformerEncoder):
            if enc.precision == "int8":
                raise ValueError("a span encoder needs an fp32 or bf16 backbone, not int8")
            tokenizer, model = enc.tokenizer, enc.model
        elif hasattr(enc, "model") and hasattr(enc.model, "backbone") and hasattr(
                enc.model, "tokenizer"):
            logger.info("%s: using its transformer backbone only for span pooling", enc)
            tokenizer, model = enc.model.tokenizer, enc.model.backbone
        else:
            raise TypeError(f"cannot build a span encoder on {enc!r}: need a transformer "
                            "encoder (minilm, a model folder, PEARL)")
        base = PACKAGED if derived_from_packaged(model, tokenizer) else None
        return tokenizer, model, base

    # ---- encoding ---------------------------------------------------------------------------
    def encode_spans(self, items: Iterable[SpanItem], mode: str = "span",
                     batch_size: int | None = None, show_progress: bool = False) -> np.ndarray:
        """Embed ``(sentence, (char_start, char_end))`` items: (n, d) float32 unit rows in order.

        ``mode``: ``span`` (sentence as is, span tokens pooled), ``context`` (mention replaced
        by the mask token, mask pooled) or ``mention`` (the mention text alone).
        """
        check_mode(mode)
        rows = validate_spans(items)
        if not rows:
            return np.zeros((0, self.dim), dtype=np.float32)
        bs = int(self.default_batch_size if batch_size is None else batch_size)
        if bs <= 0:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        self.model.eval()
        with torch_threads(self.num_threads):
            return self.model.embed_batched(rows, mode, bs, show_progress, desc=self.name)

    def torch_modules(self) -> list[Any]:
        return [self.model]

    def _encode_batch(self, texts: Sequence[str]) -> np.ndarray:
        """The Encoder contract: each text is a mention on its own (``mention`` mode)."""
        self.model.eval()
        rows = [(t, 0, len(t)) for t in texts]
        return self.model.embed_batched(rows, "mention", len(rows) or 1, desc=self.name)

    # ---- persistence ------------------------------------------------------------------------
    @saves_model_folder
    def save_pretrained(self, out_dir: str | Path, extra_config: dict[str, Any] | None = None
                        ) -> Path:
        """Write ``config.json`` + weights (fp16 deltas over the packaged MiniLM, or the whole
        backbone under ``backbone/``) atomically; see the module docstring."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        backbone = self.model.backbone
        if any(p.dtype != torch.float32 for p in backbone.parameters()):
            raise ValueError("only an fp32 backbone can be saved (load it with precision fp32)")
        config: dict[str, Any] = {
            "format": FORMAT, "format_version": FORMAT_VERSION, "pooling": "mean-span",
            "max_length": self.model.max_length, "mask_tokens": self.model.mask_tokens,
            "source": self.source,
        }
        if self.base == PACKAGED:
            tensors, skipped = backbone_deltas(backbone, PACKAGED)
            config.update(backbone=PACKAGED, backbone_sha256=backbone_fingerprint(PACKAGED),
                          deltas=len(tensors))
            if tensors:
                save_weights(out / WEIGHTS, tensors, FORMAT)
            elif (out / WEIGHTS).exists():
                (out / WEIGHTS).unlink()
            logger.info("saving span model: %d backbone deltas, %d unchanged tensors",
                        len(tensors), skipped)
        else:
            backbone.save_pretrained(str(out / BACKBONE_DIR), safe_serialization=True)
            self.model.tokenizer.save_pretrained(str(out / BACKBONE_DIR))
            config.update(backbone=BACKBONE_DIR)
        write_json(out / "config.json", {**config, **(extra_config or {})})
        return out

    @classmethod
    def from_pretrained(cls, path: str | Path, name: str | None = None,
                        num_threads: int | None = None, max_length: int | None = None,
                        precision: str = "fp32") -> SpanEncoder:
        """Rebuild a span encoder saved by :meth:`save_pretrained`."""
        from transformers import AutoTokenizer

        if precision != "fp32":
            raise ValueError(f"span model folders support precision fp32 only, got {precision!r}")
        path = Path(path)
        config = read_model_config(path, FORMAT, "span", need_weights=False)
        self = cls.__new__(cls)
        self.num_threads = num_threads
        if config.get("backbone") == PACKAGED:
            check_backbone_fingerprint(path, config, PACKAGED)
            tokenizer, model = load_backbone(PACKAGED)
            if (path / WEIGHTS).is_file():
                add_backbone_deltas(model, load_weights(path / WEIGHTS), path / WEIGHTS)
            elif int(config.get("deltas", 0)):
                raise FileNotFoundError(f"{path / WEIGHTS} is missing")
            self.base = PACKAGED
        elif config.get("backbone") == BACKBONE_DIR:
            sub = path / BACKBONE_DIR
            tokenizer = AutoTokenizer.from_pretrained(str(sub))
            model = load_hf_model(sub)
            self.base = None
        else:
            raise ValueError(f"{path}: unknown backbone {config.get('backbone')!r}")
        model.eval()
        self.model = SpanModel(model, tokenizer,
                               max_length=int(max_length or config.get("max_length",
                                                                       DEFAULT_MAX_LENGTH)),
                               mask_tokens=config.get("mask_tokens", 1))
        self.dim = self.model.dim
        self.name = name or path.name
        self.source = str(config.get("source", path))
        self.config = config
        return self
