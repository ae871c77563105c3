"""The on-disk model folder: ``config.json`` + ``model.safetensors``, saved whole or not at all.

Every phrasekit model folder names its kind in ``config.json``'s ``format`` (one of
:data:`FORMATS`); ``phrasekit.load`` looks the kind up in one table (``phrasekit.registry``).
Fine-tunes keep the backbone's fingerprint, checked at load; their weights (backbone deltas)
are read and written by :mod:`phrasekit.models.weights`. Nothing here needs torch.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from phrasekit.artifacts import member_path, staged_folder, verify_folder
from phrasekit.io import json_loads, read_json_object
from phrasekit.models.backbones import backbone_fingerprint

WEIGHTS = "model.safetensors"
CONFIG = "config.json"
DELTA_PREFIX = "backbone_delta."
#: int8 deltas (``quantize_model_folder``): codes and per-row float16 scales.
DELTA_Q8_PREFIX = "backbone_delta_q8."
DELTA_SCALE_PREFIX = "backbone_delta_scale."
#: Low-rank deltas (adapter fine-tunes): ``delta = up @ down``, both float16.
DELTA_UP_PREFIX = "backbone_delta_up."
DELTA_DOWN_PREFIX = "backbone_delta_down."
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


def saves_model_folder(fn: _F) -> _F:
    """Decorate a save function ``fn(obj, out_dir, ...)``: it writes into a staged folder that
    then replaces ``out_dir`` whole, with a manifest that loading checks. Returns what ``fn``
    returns, with its staged path replaced by ``out_dir``."""

    @functools.wraps(fn)
    def wrapper(obj: Any, out_dir: str | Path, *args: Any, **kwargs: Any) -> Any:
        with staged_folder(out_dir, MODEL_KIND) as tmp:
            result = fn(obj, tmp, *args, **kwargs)
        return Path(out_dir) if result is None or isinstance(result, Path) else result

    return wrapper  # type: ignore[return-value]


def model_folder_format(path: str | Path) -> str | None:
    """The ``format`` named by a model folder's config.json, or None (no folder, no config, no
    format): lets ``load`` tell phrasekit model kinds apart. A config that is not a JSON object
    raises ``ValueError`` naming it (no loader could read it)."""
    cfg = Path(path) / CONFIG
    if not cfg.is_file():
        return None
    member_path(Path(path), CONFIG, cfg)  # a symlink out of the folder is refused, not read
    fmt = read_json_object(cfg).get("format")
    return fmt if isinstance(fmt, str) else None


def read_model_config(path: str | Path, fmt: str, kind: str,
                      version: int = QUANTIZED_FORMAT_VERSION,
                      need_weights: bool = True) -> dict[str, Any]:
    """Parse a model folder's config.json (and require ``model.safetensors`` unless
    ``need_weights`` is False); check its ``format`` and ``format_version``."""
    path = Path(path)
    cfg_path = path / CONFIG
    if not cfg_path.is_file() or (need_weights and not (path / WEIGHTS).is_file()):
        raise FileNotFoundError(f"{path} is not a {kind} model folder ({CONFIG} + {WEIGHTS})")
    member_path(path, CONFIG, cfg_path)  # inside the folder: read before the whole check
    try:
        config = json_loads(cfg_path.read_text(encoding="utf-8"))
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
    if need_weights:
        _check_weights_format(path / WEIGHTS, fmt)
    return config


def _check_weights_format(weights: Path, fmt: str) -> None:
    """Refuse weights written for another kind of model (their header names its format)."""
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(str(weights), framework="np") as fh:
            found = (fh.metadata() or {}).get("format")
    except (SafetensorError, OSError) as exc:
        raise ValueError(f"{weights}: unreadable safetensors file ({exc})") from exc
    if found is not None and found != fmt:
        raise ValueError(f"{weights}: weights of a {found!r} model, but {CONFIG} says "
                         f"{fmt!r} (files of two models mixed); not loading it")


def check_backbone_fingerprint(path: str | Path, config: dict[str, Any], name: str) -> None:
    """Refuse deltas written over another copy of the backbone than the installed one."""
    expected = config.get("backbone_sha256")
    if expected and expected != backbone_fingerprint(name):
        raise ValueError(f"{path}: trained on a different {name} backbone than the one "
                         "installed (weights fingerprint differs)")
