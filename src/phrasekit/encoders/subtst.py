"""SubTST (Dang et al., ICAART 2022): sub-word LDA topics fused with a bi-encoder.

For a sentence of N sub-words the backbone gives M_c (N x m) and the sub-word LDA gives M_t
(N x k, each token's p(topic | sub-word), :mod:`phrasekit.encoders.subword_lda`). Their
concatenation goes through the *transfer layer* h = LayerNorm(Dropout(W [M_c; M_t] + B)) (Eq. 4),
is pooled (mean or max, Eqs. 5-6) into u, and a pair (u, v) is scored by a softmax classifier on
(u, v, |u - v|) (Eq. 7) or, for graded similarity, by cosine(u, v) trained with MSE (SBERT's
regression objective). With ``n_topics=0`` the same network is the SBERT-style baseline.

CPU design: the lower ``L - trainable_layers`` backbone layers are frozen, so their token outputs
are computed once per distinct sentence (:class:`TokenFeatures`, cacheable on disk) and training
runs only the top layers (none by default), the topic table, the transfer layer and the head.

On disk (``save_pretrained``): ``config.json`` + ``model.safetensors`` with the trained modules,
the trained top backbone layers (if any), the LDA topic-term matrix (always: "the LDA is saved
with the model") and the topic table when it was trained. The frozen backbone is the packaged
one, checked by its sha256.
"""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import save as safetensors_bytes
from torch import nn
from tqdm.auto import tqdm

from phrasekit.artifacts import tensors_digest
from phrasekit.encoders.base import Encoder, cap_chars, validate_texts
from phrasekit.encoders.pooling import mean_pool
from phrasekit.encoders.subtst_config import KINDS as KINDS  # re-exported
from phrasekit.encoders.subtst_config import POOLINGS as POOLINGS  # re-exported
from phrasekit.encoders.subtst_config import SubTSTConfig
from phrasekit.encoders.subword_lda import SubwordLDA
from phrasekit.io import atomic_write, write_json
from phrasekit.models.backbones import backbone_fingerprint, load_backbone
from phrasekit.models.folders import (
    SUBTST_FORMAT,
    WEIGHTS,
    check_backbone_fingerprint,
    read_model_config,
    saves_model_folder,
)
from phrasekit.models.weights import load_weights, save_weights

logger = logging.getLogger(__name__)

FORMAT = SUBTST_FORMAT
FORMAT_VERSION = 1


# ---- frozen backbone features ------------------------------------------------------------------


class TokenFeatures:
    """Frozen lower-backbone token outputs per distinct sentence, computed once and cached.

    ``layer`` counts from the embeddings (0) to the last layer (L), negative values from the top
    (``-n`` is ``L - n``); features of layer ``L - n`` feed a model whose top ``n`` layers
    train. Each entry is (token ids int64, hidden fp16).
    """

    def __init__(self, backbone: str = "minilm", layer: int | None = None,
                 max_seq_length: int = 64, batch_size: int = 64) -> None:
        self.backbone_name = backbone
        self.tokenizer, self.model = load_backbone(backbone)
        self.model.eval()
        n_layers = int(self.model.config.num_hidden_layers)
        if layer is not None and not -n_layers <= int(layer) <= n_layers:
            raise ValueError(f"layer must be in [-{n_layers}, {n_layers}], got {layer}")
        self.layer = n_layers if layer is None else int(layer) + (n_layers if layer < 0 else 0)
        self.max_seq_length = int(max_seq_length)
        self.batch_size = int(batch_size)
        self.dim = int(self.model.config.hidden_size)
        self._cache: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}

    @property
    def key(self) -> str:
        """What the cached values depend on (a cache file from another setting is refused)."""
        return f"{self.backbone_name}|layer={self.layer}|max_seq={self.max_seq_length}"

    def __len__(self) -> int:
        return len(self._cache)

    def _compute(self, texts: list[str]) -> list[tuple[torch.Tensor, torch.Tensor]]:
        batch = self.tokenizer(cap_chars(texts, self.max_seq_length), padding=True,
                               truncation=True, max_length=self.max_seq_length,
                               return_tensors="pt")
        top = self.layer == len(self.model.encoder.layer)
        with torch.inference_mode():
            out = self.model(**batch, output_hidden_states=not top)
            hidden = out.last_hidden_state if top else out.hidden_states[self.layer]
        lengths = batch["attention_mask"].sum(dim=1).tolist()
        return [(batch["input_ids"][i, :n].clone(), hidden[i, :n].half().clone())
                for i, n in enumerate(lengths)]

    def add(self, texts: Iterable[str], show_progress: bool = False) -> None:
        """Compute and keep the features of the texts not cached yet (length-sorted batches)."""
        todo = sorted({t for t in texts if t not in self._cache}, key=len, reverse=True)
        if not todo:
            return
        starts = range(0, len(todo), self.batch_size)
        for s in tqdm(starts, desc="backbone features", unit="batch", disable=not show_progress,
                      leave=False):
            chunk = todo[s : s + self.batch_size]
            for text, feats in zip(chunk, self._compute(chunk), strict=True):
                self._cache[text] = feats

    def get(self, texts: Sequence[str]) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """Features of ``texts`` (computed on the fly when missing, without keeping them)."""
        missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
        fresh = dict(zip(missing, self._compute(missing), strict=True)) if missing else {}
        return [self._cache.get(t) or fresh[t] for t in texts]

    def save(self, path: str | Path) -> None:
        """Write all cached features to one safetensors file atomically."""
        texts = list(self._cache)
        ids = [self._cache[t][0] for t in texts]
        hid = [self._cache[t][1] for t in texts]
        offsets = torch.tensor([0, *np.cumsum([len(i) for i in ids]).tolist()], dtype=torch.int64)
        tensors = {"ids": torch.cat(ids) if ids else torch.zeros(0, dtype=torch.int64),
                   "hidden": torch.cat(hid) if hid else torch.zeros(0, self.dim).half(),
                   "offsets": offsets}
        meta = {"key": self.key, "texts": json.dumps(texts, ensure_ascii=False)}
        meta["sha256"] = tensors_digest(tensors, meta)
        with atomic_write(Path(path), mode="wb") as fh:
            fh.write(safetensors_bytes(tensors, metadata=meta))

    def load(self, path: str | Path) -> int:
        """Merge a file written by :meth:`save` (same backbone, layer and length); returns count."""
        try:
            with safe_open(str(path), framework="pt") as fh:
                meta = fh.metadata() or {}
                tensors = {k: fh.get_tensor(k) for k in ("ids", "hidden", "offsets")}
        except (SafetensorError, OSError) as exc:
            raise ValueError(f"{path}: unreadable feature cache ({exc})") from exc
        if meta.get("key") != self.key:
            raise ValueError(f"{path}: features for {meta.get('key')!r}, need {self.key!r}")
        stored = meta.pop("sha256", None)
        if stored != tensors_digest(tensors, meta):
            raise ValueError(f"{path}: feature cache fails its checksum (damaged, or written "
                             "by an older phrasekit); delete it")
        texts = json.loads(meta["texts"])
        ids, hid, off = tensors["ids"], tensors["hidden"], tensors["offsets"]
        if len(off) != len(texts) + 1 or int(off[-1]) != len(ids) or len(ids) != len(hid):
            raise ValueError(f"{path}: inconsistent feature cache")
        for i, text in enumerate(texts):
            a, b = int(off[i]), int(off[i + 1])
            self._cache[text] = (ids[a:b], hid[a:b])
        return len(texts)


def pad_features(feats: Sequence[tuple[torch.Tensor, torch.Tensor]]
                 ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(ids (B, T), hidden float32 (B, T, m), mask (B, T)) right-padded to the longest item."""
    n = len(feats)
    t = max(len(ids) for ids, _ in feats)
    dim = feats[0][1].shape[1]
    ids = torch.zeros(n, t, dtype=torch.int64)
    hidden = torch.zeros(n, t, dim, dtype=torch.float32)
    mask = torch.zeros(n, t, dtype=torch.int64)
    for i, (a, h) in enumerate(feats):
        ids[i, : len(a)] = a
        hidden[i, : len(a)] = h.float()
        mask[i, : len(a)] = 1
    return ids, hidden, mask


# ---- the network -------------------------------------------------------------------------------


class SubTSTModel(nn.Module):
    """Top backbone layers (optional) + topic table + transfer layer + pooling + pair head."""

    def __init__(self, config: SubTSTConfig, hidden_size: int, vocab_size: int,
                 token_topics: np.ndarray | None = None,
                 top_layers: Sequence[nn.Module] = ()) -> None:
        super().__init__()
        self.config = config
        k = config.n_topics
        self.layers = nn.ModuleList(copy.deepcopy(list(top_layers)))
        if len(self.layers) != config.trainable_layers:
            raise ValueError(f"config says {config.trainable_layers} trainable layers, "
                             f"got {len(self.layers)}")
        self.topics: nn.Embedding | None = None
        if k:
            if token_topics is None:
                token_topics = np.full((vocab_size, k), 1.0 / k, dtype=np.float32)
            table = torch.as_tensor(np.asarray(token_topics, dtype=np.float32))
            if table.shape != (vocab_size, k):
                raise ValueError(f"token topics must be ({vocab_size}, {k}), got "
                                 f"{tuple(table.shape)}")
            self.topics = nn.Embedding.from_pretrained(table, freeze=not config.topic_trainable)
        self.topic_scale = float(config.topic_scale if config.topic_scale is not None else k or 1)
        dim = hidden_size + k
        self.dim = dim
        self.transfer = nn.Linear(dim, dim)
        self.dropout = nn.Dropout(config.dropout)
        self.norm = nn.LayerNorm(dim)
        self.classifier = (nn.Linear(3 * dim, config.num_labels)
                           if config.kind == "classification" else None)

    def contextualize(self, hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Run the trainable top backbone layers (if any) over frozen token features -> M_c."""
        x = hidden
        if len(self.layers):
            additive = (1.0 - mask[:, None, None, :].to(x.dtype)) * torch.finfo(x.dtype).min
            for layer in self.layers:
                out = layer(x, attention_mask=additive)
                x = out[0] if isinstance(out, tuple) else out
        return x

    def embed(self, ids: torch.Tensor, hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Pooled sentence vectors u (B, m + k) from padded frozen features."""
        x = self.contextualize(hidden, mask)
        if self.topics is not None:
            x = torch.cat([x, self.topics(ids) * self.topic_scale], dim=-1)
        h = self.norm(self.dropout(self.transfer(x)))
        m = mask.unsqueeze(-1).to(h.dtype)
        if self.config.pooling == "mean":
            return mean_pool(h, mask)
        return h.masked_fill(m == 0, torch.finfo(h.dtype).min).amax(dim=1)

    def score(self, u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """Class logits (B, labels) from (u, v, |u - v|), or cosine(u, v) (B,) for regression."""
        if self.classifier is not None:
            return self.classifier(torch.cat([u, v, (u - v).abs()], dim=-1))
        return nn.functional.cosine_similarity(u, v, dim=-1)


# ---- the user-facing model ---------------------------------------------------------------------


class SubTST(Encoder):
    """A trained SubTST (or baseline) pair model with phrasekit's encoder contract.

    ``encode(texts)`` returns the pooled sentence vectors (L2-normalised); ``similarity(a, b)``
    the paraphrase probability (classification) or the predicted score (regression);
    ``predict(pairs)`` labels or scores for a list of (a, b) pairs.
    """

    default_batch_size = 64

    def __init__(self, model: SubTSTModel, features: TokenFeatures, lda: Any = None,
                 name: str = "subtst", training: dict[str, Any] | None = None) -> None:
        self.model = model.eval()
        self.features = features
        self.lda = lda
        self.name = name
        self.dim = model.dim
        self.training_report = training or {}

    @property
    def config(self) -> SubTSTConfig:
        return self.model.config

    def _embed_tensor(self, texts: Sequence[str]) -> torch.Tensor:
        ids, hidden, mask = pad_features(self.features.get(list(texts)))
        return self.model.embed(ids, hidden, mask)

    def _encode_batch(self, texts: Sequence[str]) -> np.ndarray:
        with torch.inference_mode():
            return self._embed_tensor(texts).numpy()

    def _raw_vectors(self, texts: list[str], batch_size: int) -> torch.Tensor:
        """Unnormalised pooled vectors (the classifier was trained on these)."""
        out = []
        with torch.inference_mode():
            for s in range(0, len(texts), batch_size):
                out.append(self._embed_tensor(texts[s : s + batch_size]))
        return torch.cat(out) if out else torch.zeros(0, self.dim)

    def _pair_scores(self, a: list[str], b: list[str], batch_size: int) -> np.ndarray:
        uniq = list(dict.fromkeys(a + b))
        vecs = self._raw_vectors(uniq, batch_size)
        pos = {t: i for i, t in enumerate(uniq)}
        u = vecs[[pos[t] for t in a]]
        v = vecs[[pos[t] for t in b]]
        with torch.inference_mode():
            s = self.model.score(u, v)
        if self.config.kind == "classification":
            return torch.softmax(s, dim=-1).numpy()
        return (s * self.config.score_scale).numpy()

    def predict(self, pairs: Iterable[tuple[str, str]], batch_size: int | None = None,
                proba: bool = False) -> np.ndarray:
        """Labels (or class probabilities with ``proba``) / graded scores for (a, b) pairs."""
        pairs = list(pairs)
        for i, p in enumerate(pairs):
            if not (isinstance(p, tuple | list) and len(p) == 2):
                raise TypeError(f"pairs[{i}] must be an (a, b) pair of strings, got {p!r:.80}")
        if not pairs:
            return np.zeros((0,), dtype=np.float32)
        a = validate_texts([p[0] for p in pairs])
        b = validate_texts([p[1] for p in pairs])
        scores = self._pair_scores(a, b, int(batch_size or self.default_batch_size))
        if self.config.kind == "classification" and not proba:
            return scores.argmax(axis=1)
        return scores

    def similarity(self, a: str | Iterable[str], b: str | Iterable[str]) -> Any:
        """P(paraphrase) or predicted score: a float for two strings, else an (n, m) matrix."""
        single = isinstance(a, str) and isinstance(b, str)
        left, right = validate_texts(a), validate_texts(b)
        pairs = [(x, y) for x in left for y in right]
        scores = self.predict(pairs, proba=True)
        if self.config.kind == "classification":
            scores = scores[:, 1] if self.config.num_labels == 2 else scores.max(axis=1)
        scores = np.asarray(scores, dtype=np.float32).reshape(len(left), len(right))
        return float(scores[0, 0]) if single else scores

    # ---- persistence -------------------------------------------------------------------------

    @saves_model_folder
    def save_pretrained(self, out_dir: str | Path, report: dict[str, Any] | None = None) -> Path:
        """Write config.json + model.safetensors (trained modules + LDA) atomically, and the
        training ``report`` as report.json in the same set (listed in its manifest)."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        tensors: dict[str, torch.Tensor] = {}
        for name, value in self.model.state_dict().items():
            if name == "topics.weight" and not self.config.topic_trainable:
                continue  # rebuilt from the LDA
            tensors[name] = value.detach().float().contiguous()
        if self.lda is not None:
            tensors["lda.components"] = torch.as_tensor(self.lda.components_).contiguous()
        save_weights(out / WEIGHTS, tensors, FORMAT)
        write_json(out / "config.json", {
            "format": FORMAT, "format_version": FORMAT_VERSION,
            "backbone_sha256": backbone_fingerprint(self.config.backbone),
            "feature_layer": self.features.layer, "subtst": self.config.to_dict(),
            "training": self.training_report,
        })
        if report is not None:
            write_json(out / "report.json", report)
        return out

    @classmethod
    def from_pretrained(cls, path: str | Path, name: str | None = None) -> SubTST:
        """Rebuild a model written by :meth:`save_pretrained` over the packaged backbone."""
        path = Path(path)
        meta = read_model_config(path, FORMAT, "SubTST", version=FORMAT_VERSION)
        config = SubTSTConfig.from_dict(meta["subtst"])
        if not meta.get("backbone_sha256"):
            raise ValueError(f"{path / 'config.json'}: no backbone_sha256")
        check_backbone_fingerprint(path, meta, config.backbone)
        features = TokenFeatures(config.backbone, layer=int(meta["feature_layer"]),
                                 max_seq_length=config.max_seq_length)
        tensors = load_weights(path / WEIGHTS)
        lda = None
        if "lda.components" in tensors:
            lda = SubwordLDA.from_components(tensors.pop("lda.components").numpy())
        model = build_model(config, features, lda)
        missing, unexpected = model.load_state_dict(tensors, strict=False)
        allowed_missing = set() if config.topic_trainable else {"topics.weight"}
        if unexpected or set(missing) - allowed_missing:
            raise ValueError(f"{path}: weights do not match the config (missing "
                             f"{sorted(set(missing) - allowed_missing)}, unexpected {unexpected})")
        return cls(model, features, lda=lda, name=name or path.name,
                   training=meta.get("training") or {})


def build_model(config: SubTSTConfig, features: TokenFeatures, lda: Any = None) -> SubTSTModel:
    """A fresh network over ``features``' backbone: top layers copied, topics from ``lda``."""
    n_layers = len(features.model.encoder.layer)
    if features.layer != n_layers - config.trainable_layers:
        raise ValueError(f"features come from layer {features.layer}, the model needs layer "
                         f"{n_layers - config.trainable_layers}")
    if config.n_topics and (lda is None or lda.n_topics != config.n_topics):
        raise ValueError(f"a fitted SubwordLDA with {config.n_topics} topics is required")
    top = list(features.model.encoder.layer[features.layer:])
    topics = lda.token_topics() if config.n_topics else None
    return SubTSTModel(config, features.dim, len(features.tokenizer), topics, top)

