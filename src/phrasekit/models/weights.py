"""Model weights as safetensors: backbone deltas (float16, int8 codes with per-row scales, or
low-rank float16 factors).

Fine-tunes of a packaged backbone (PEARL, Phrase-BERT, span/UCTopic) store the backbone as
differences from the packaged weights, unchanged tensors left out, so a trained model costs
10-20 MB instead of 90 MB. Kept apart from :mod:`phrasekit.models.folders` because it needs
torch, which reading a folder's config does not.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import load_file
from safetensors.torch import save as safetensors_bytes
from torch import nn

from phrasekit.artifacts import MANIFEST
from phrasekit.io import atomic_write, json_loads, write_json
from phrasekit.models.backbones import backbone_state
from phrasekit.models.folders import (
    CONFIG,
    DELTA_DOWN_PREFIX,
    DELTA_PREFIX,
    DELTA_Q8_PREFIX,
    DELTA_SCALE_PREFIX,
    DELTA_UP_PREFIX,
    QUANTIZED_FORMAT_VERSION,
    WEIGHTS,
    model_folder_format,
    read_model_config,
    saves_model_folder,
)

logger = logging.getLogger(__name__)


def backbone_deltas(backbone: nn.Module, name: str, rank: int | None = None
                    ) -> tuple[dict[str, torch.Tensor], int]:
    """``backbone``'s changes from the packaged backbone ``name`` as float16 tensors keyed
    ``DELTA_PREFIX + tensor name`` (unchanged tensors are left out), and how many were left out.

    With ``rank`` (an adapter fine-tune, whose matrix changes have that rank), each matrix
    change is stored as two factors ``up @ down`` of that rank instead, unless the factors
    would not reproduce it (then it is stored whole, with a warning).
    """
    base = backbone_state(name)
    tensors: dict[str, torch.Tensor] = {}
    skipped = 0
    for key, value in backbone.state_dict().items():
        delta = value.detach().float() - base[key].float()
        if not torch.any(delta):
            skipped += 1
            continue
        factors = _low_rank(delta, rank) if rank and delta.dim() == 2 else None
        if factors is None:
            tensors[DELTA_PREFIX + key] = delta.half().contiguous()
        else:
            tensors[DELTA_UP_PREFIX + key], tensors[DELTA_DOWN_PREFIX + key] = factors
    return tensors, skipped


def _low_rank(delta: torch.Tensor, rank: int, tolerance: float = 1e-3
              ) -> tuple[torch.Tensor, torch.Tensor] | None:
    """float16 factors ``(up, down)`` with ``up @ down`` = ``delta`` (truncated SVD), or None
    when ``delta`` is not of rank ``rank`` (relative error above ``tolerance``) or the factors
    would be larger than the matrix."""
    rows, cols = delta.shape
    if rank * (rows + cols) >= rows * cols:
        return None
    u, s, vh = torch.linalg.svd(delta, full_matrices=False)
    root = s[:rank].sqrt()
    up, down = (u[:, :rank] * root).half(), (root[:, None] * vh[:rank]).half()
    error = torch.linalg.norm(up.float() @ down.float() - delta) / torch.linalg.norm(delta)
    if float(error) > tolerance:
        logger.warning("a backbone change is not of rank %d (relative error %.2g): stored "
                       "whole", rank, float(error))
        return None
    return up.contiguous(), down.contiguous()


def _delta(key: str, tensors: dict[str, torch.Tensor], source: str | Path
           ) -> tuple[str, torch.Tensor] | None:
    """(backbone tensor name, float32 delta) stored under ``key``, or None for other keys."""
    if key.startswith(DELTA_PREFIX):
        return key[len(DELTA_PREFIX):], tensors[key].float()
    if key.startswith(DELTA_Q8_PREFIX):
        name = key[len(DELTA_Q8_PREFIX):]
        scale = tensors.get(DELTA_SCALE_PREFIX + name)
        if scale is None:
            raise ValueError(f"{source}: int8 delta {name!r} has no scale")
        return name, tensors[key].float() * scale.float()
    if key.startswith(DELTA_UP_PREFIX):
        name = key[len(DELTA_UP_PREFIX):]
        down = tensors.get(DELTA_DOWN_PREFIX + name)
        if down is None or down.dim() != 2 or down.shape[0] != tensors[key].shape[-1]:
            raise ValueError(f"{source}: low-rank delta {name!r} has no matching down factor")
        return name, tensors[key].float() @ down.float()
    return None


def add_backbone_deltas(backbone: nn.Module, tensors: dict[str, torch.Tensor],
                        source: str | Path) -> int:
    """In place: add the deltas of ``tensors`` (float16 ``DELTA_PREFIX`` tensors, int8
    ``DELTA_Q8_PREFIX`` codes with their scales, or low-rank ``DELTA_UP_PREFIX`` /
    ``DELTA_DOWN_PREFIX`` factors) to a freshly loaded packaged backbone; returns how many
    were applied (``source`` names the file in errors)."""
    state = backbone.state_dict()
    applied = 0
    with torch.no_grad():
        for key in tensors:
            found = _delta(key, tensors, source)
            if found is None:
                continue
            name, delta = found
            if name not in state or state[name].shape != delta.shape:
                raise ValueError(f"{source}: unknown backbone tensor {name!r} or wrong shape")
            state[name].add_(delta)
            applied += 1
    return applied


def save_weights(path: Path, tensors: dict[str, torch.Tensor], fmt: str) -> None:
    """Write ``tensors`` to ``path`` as safetensors (atomically), tagged with ``fmt``."""
    with atomic_write(path, mode="wb") as fh:
        fh.write(safetensors_bytes(tensors, metadata={"format": fmt}))


def load_weights(path: Path) -> dict[str, torch.Tensor]:
    """Read a safetensors file (never a pickle); a damaged file raises ``ValueError``."""
    try:
        return load_file(str(path))
    except (SafetensorError, OSError) as exc:
        raise ValueError(f"{path}: unreadable safetensors file ({exc})") from exc


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
    if Path(src).resolve() == Path(dst).resolve():
        raise ValueError("quantize into another folder (the source stays as the reference)")
    if not Path(src).is_dir():
        raise FileNotFoundError(f"{src}: no such model folder")
    fmt = model_folder_format(src)
    if fmt is None:
        raise ValueError(f"{src} is not a phrasekit fine-tuned model folder (PEARL, Phrase-BERT "
                         "or UCTopic, with backbone deltas); nothing to quantize")
    read_model_config(src, str(fmt), "fine-tuned")
    return _write_quantized(src, dst)


@saves_model_folder
def _write_quantized(src: str | Path, dst: str | Path) -> dict[str, Any]:
    """Write the int8 copy of ``src`` into ``dst`` (a staged folder)."""
    src, dst = Path(src), Path(dst)
    config_path = src / CONFIG
    if not config_path.is_file() or not (src / WEIGHTS).is_file():
        raise FileNotFoundError(f"{src} is not a model folder ({CONFIG} + {WEIGHTS})")
    config = json_loads(config_path.read_text(encoding="utf-8"))
    with safe_open(str(src / WEIGHTS), framework="pt") as fh:
        metadata = fh.metadata() or {}
        tensors = {k: fh.get_tensor(k) for k in fh.keys()}  # noqa: SIM118 - not a dict
    if config.get("delta_precision") == "int8" or not any(
            k.startswith(DELTA_PREFIX) for k in tensors):
        raise ValueError(f"{src}: no float16 backbone deltas to quantize")
    dst.mkdir(parents=True, exist_ok=True)
    with atomic_write(dst / WEIGHTS, mode="wb") as fh:
        fh.write(safetensors_bytes(quantize_deltas(tensors), metadata=metadata))
    config.update({"format_version": max(int(config.get("format_version", 1)),
                                         QUANTIZED_FORMAT_VERSION), "delta_precision": "int8"})
    write_json(dst / CONFIG, config)
    for extra in src.iterdir():  # README and the like travel along
        if extra.is_file() and extra.name not in (CONFIG, WEIGHTS, MANIFEST):
            (dst / extra.name).write_bytes(extra.read_bytes())
    mb = 1024 * 1024
    return {"source_mb": round((src / WEIGHTS).stat().st_size / mb, 1),
            "int8_mb": round((dst / WEIGHTS).stat().st_size / mb, 1)}
