"""The on-disk model folder: ``config.json`` + ``model.safetensors``, and backbone deltas.

Every phrasekit model folder names its kind in ``config.json``'s ``format`` (one of
:data:`FORMATS`); ``phrasekit.load`` looks the kind up in one table (``phrasekit.registry``).
Fine-tunes of a packaged backbone (PEARL, Phrase-BERT, span/UCTopic) store the backbone as
float16 *differences* from the packaged weights (unchanged tensors left out), or as int8 codes
with one float16 scale per row (:func:`quantize_model_folder`), so a trained model costs
10-20 MB instead of 90 MB; the backbone's fingerprint is kept and checked at load.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import load_file
from safetensors.torch import save as safetensors_bytes
from torch import nn

from phrasekit.artifacts import MANIFEST, staged_folder, verify_folder
from phrasekit.io import atomic_write, write_json
from phrasekit.models.backbones import backbone_fingerprint, backbone_state

WEIGHTS = "model.safetensors"
CONFIG = "config.json"
DELTA_PREFIX = "backbone_delta."
#: int8 deltas (``quantize_model_folder``): codes and per-row float16 scales.
DELTA_Q8_PREFIX = "backbone_delta_q8."
DELTA_SCALE_PREFIX = "backbone_delta_scale."
#: format_version written for folders with int8 deltas (older readers must refuse them).
QUANTIZED_FORMAT_VERSION = 2

PEARL_FORMAT = "phrasekit-pearl"
PHRASE_BERT_FORMAT = "phrasekit-phrase-bert"
SPAN_FORMAT = "phrasekit-span"
SUBTST_FORMAT = "phrasekit-subtst"
FACETS_FORMAT = "phrasekit-facets"
#: The model-folder kinds ``phrasekit.load`` understands.
FORMATS = (PEARL_FORMAT, PHRASE_BERT_FORMAT, SPAN_FORMAT, SUBTST_FORMAT, FACETS_FORMAT)


#: Manifest kind of a model folder.
MODEL_KIND = "model"
_F = TypeVar("_F", bound=Callable[..., Any])


def _is_model_folder(path: Path) -> bool:
    """Whether ``path`` holds a phrasekit model folder saved before folders had manifests."""
    return model_folder_format(path) in FORMATS


def saves_model_folder(fn: _F) -> _F:
    """Decorate a save function ``fn(obj, out_dir, ...)``: it writes into a staged folder that
    then replaces ``out_dir`` whole, with a manifest that loading checks. Returns what ``fn``
    returns, with its staged path replaced by ``out_dir``."""

    @functools.wraps(fn)
    def wrapper(obj: Any, out_dir: str | Path, *args: Any, **kwargs: Any) -> Any:
        with staged_folder(out_dir, MODEL_KIND, legacy=_is_model_folder) as tmp:
            result = fn(obj, tmp, *args, **kwargs)
        return Path(out_dir) if result is None or isinstance(result, Path) else result

    return wrapper  # type: ignore[return-value]


def model_folder_format(path: str | Path) -> str | None:
    """The ``format`` named by a model folder's config.json, or None (no folder, no config,
    unreadable or not a JSON object): lets ``load`` tell phrasekit model kinds apart."""
    cfg = Path(path) / CONFIG
    if not cfg.is_file():
        return None
    try:
        obj = json.loads(cfg.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return obj.get("format") if isinstance(obj, dict) else None


def read_model_config(path: str | Path, fmt: str, kind: str,
                      version: int = QUANTIZED_FORMAT_VERSION,
                      need_weights: bool = True) -> dict[str, Any]:
    """Parse a model folder's config.json (and require ``model.safetensors`` unless
    ``need_weights`` is False); check its ``format`` and ``format_version``."""
    path = Path(path)
    cfg_path = path / CONFIG
    if not cfg_path.is_file() or (need_weights and not (path / WEIGHTS).is_file()):
        raise FileNotFoundError(f"{path} is not a {kind} model folder ({CONFIG} + {WEIGHTS})")
    try:
        config = json.loads(cfg_path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ValueError(f"{cfg_path}: not valid JSON ({exc})") from exc
    if not isinstance(config, dict) or config.get("format") != fmt:
        found = config.get("format") if isinstance(config, dict) else None
        raise ValueError(f"{path}: not a {kind} model (format {found!r})")
    try:
        found_version = int(config.get("format_version", 0))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{cfg_path}: format_version must be an integer, got "
                         f"{config.get('format_version')!r}") from exc
    if found_version > version:
        raise ValueError(f"{path}: written by a newer phrasekit (format_version "
                         f"{found_version}); upgrade phrasekit")
    verify_folder(path, MODEL_KIND, required=(CONFIG, WEIGHTS) if need_weights else (CONFIG,))
    return config


def check_backbone_fingerprint(path: str | Path, config: dict[str, Any], name: str) -> None:
    """Refuse deltas written over another copy of the backbone than the installed one."""
    expected = config.get("backbone_sha256")
    if expected and expected != backbone_fingerprint(name):
        raise ValueError(f"{path}: trained on a different {name} backbone than the one "
                         "installed (weights fingerprint differs)")


def backbone_deltas(backbone: nn.Module, name: str) -> tuple[dict[str, torch.Tensor], int]:
    """``backbone``'s changes from the packaged backbone ``name`` as float16 tensors keyed
    ``DELTA_PREFIX + tensor name`` (unchanged tensors are left out), and how many were left out."""
    base = backbone_state(name)
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
    read_model_config(src, str(model_folder_format(src)), "fine-tuned")
    return _write_quantized(src, dst)


@saves_model_folder
def _write_quantized(src: str | Path, dst: str | Path) -> dict[str, Any]:
    """Write the int8 copy of ``src`` into ``dst`` (a staged folder)."""
    src, dst = Path(src), Path(dst)
    config_path = src / CONFIG
    if not config_path.is_file() or not (src / WEIGHTS).is_file():
        raise FileNotFoundError(f"{src} is not a model folder ({CONFIG} + {WEIGHTS})")
    config = json.loads(config_path.read_text(encoding="utf-8"))
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
