"""Resumable training checkpoints in one safetensors file (no pickle).

The file holds the model's trainable tensors, the Adam moments keyed by parameter name, and a
JSON metadata blob (step, optimizer step counts, elapsed time, configuration fingerprint). It is
written atomically, so an interrupted save leaves the previous checkpoint intact.
"""

from __future__ import annotations

import json
import logging
import tempfile
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from torch import nn

from phrasekit.artifacts import tensors_digest
from phrasekit.io import atomic_write

logger = logging.getLogger(__name__)

CHECKPOINT = "checkpoint.safetensors"


def checkpoint_folder(out_dir: str | Path | None, prefix: str = "phrasekit-"
                      ) -> AbstractContextManager[str]:
    """The folder a run keeps its checkpoint in, as a context: ``out_dir`` (resumable), or a
    temporary folder removed at the end for a run that need not outlive its process."""
    if out_dir is None:
        return tempfile.TemporaryDirectory(prefix=prefix)
    return nullcontext(str(out_dir))


def save_checkpoint(path: str | Path, model: nn.Module, optimizer: torch.optim.Optimizer,
                    meta: dict[str, Any], extra: dict[str, torch.Tensor] | None = None) -> None:
    """Write model parameters, Adam state, ``meta`` and any ``extra`` tensors (training state
    outside the model, e.g. a negatives memory) to ``path`` atomically."""
    from safetensors.torch import save

    names = {id(p): n for n, p in model.named_parameters()}
    tensors: dict[str, torch.Tensor] = {}
    for name, value in model.state_dict().items():
        tensors["model." + name] = value.detach().cpu().contiguous()
    steps: dict[str, float] = {}
    for group in optimizer.param_groups:
        for p in group["params"]:
            state = optimizer.state.get(p)
            if not state:
                continue
            name = names[id(p)]
            tensors["exp_avg." + name] = state["exp_avg"].cpu().contiguous()
            tensors["exp_avg_sq." + name] = state["exp_avg_sq"].cpu().contiguous()
            steps[name] = float(state["step"])
    for name, value in (extra or {}).items():
        tensors["extra." + name] = value.detach().cpu().contiguous()
    core = {"meta": meta, "adam_steps": steps}
    blob = json.dumps({**core, "sha256": tensors_digest(tensors, core)})
    with atomic_write(path, mode="wb") as fh:
        fh.write(save(tensors, metadata={"phrasekit": blob}))


def load_checkpoint(path: str | Path, model: nn.Module, optimizer: torch.optim.Optimizer,
                    extra: dict[str, torch.Tensor] | None = None) -> dict[str, Any]:
    """Restore model and Adam state saved by ``save_checkpoint``; returns its ``meta``.

    The checkpoint's extra tensors are put into ``extra`` when a dict is given."""
    from safetensors import safe_open

    path = Path(path)
    try:
        with safe_open(str(path), framework="pt") as fh:
            blob = json.loads((fh.metadata() or {}).get("phrasekit", "{}"))
            tensors = {k: fh.get_tensor(k) for k in fh.keys()}  # noqa: SIM118 - not a dict
    except (SafetensorError, OSError, ValueError) as exc:
        raise ValueError(f"{path}: unreadable checkpoint ({exc}); delete it to start over") \
            from exc
    core = {k: blob.get(k) for k in ("meta", "adam_steps")} if isinstance(blob, dict) else {}
    if not core or blob.get("sha256") != tensors_digest(tensors, core):
        raise ValueError(f"{path}: checkpoint contents fail their checksum (damaged file); "
                         "delete it to start over")
    state = {k[len("model."):]: v for k, v in tensors.items() if k.startswith("model.")}
    missing, unexpected = model.load_state_dict(state, strict=False)
    if missing or unexpected:
        raise ValueError(f"{path}: checkpoint does not fit the model (missing {missing[:3]}, "
                         f"unexpected {unexpected[:3]})")
    params = dict(model.named_parameters())
    for name, step in blob.get("adam_steps", {}).items():
        p = params[name]
        optimizer.state[p] = {
            "step": torch.tensor(step),
            "exp_avg": tensors["exp_avg." + name].to(p.device),
            "exp_avg_sq": tensors["exp_avg_sq." + name].to(p.device),
        }
    if extra is not None:
        extra.update({k[len("extra."):]: v for k, v in tensors.items() if k.startswith("extra.")})
    return blob.get("meta", {})
