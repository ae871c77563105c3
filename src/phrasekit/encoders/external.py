"""Any object with ``encode(list[str]) -> array`` (a ``SentenceTransformer``, a model2vec
``StaticModel``, a user's function object) in phrasekit's encoder contract: input order,
float32 unit rows, validation up front, errors that name the bad row."""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from phrasekit.artifacts import read_manifest, verify_folder
from phrasekit.encoders.base import Encoder
from phrasekit.encoders.export import EXPORT_KIND


class ExternalEncoder(Encoder):
    """Wrap ``model`` (anything with ``encode(list_of_str)`` returning one row per text).

    Args:
        model: the object to wrap; a ``SentenceTransformer`` is used as is (its own pooling,
            Dense and Normalize modules and ``max_seq_length``).
        name: the name in logs, tables and cache keys (default: the model's class name, or
            a sentence-transformers model's folder name).
    """

    default_batch_size = 64

    def __init__(self, model: Any, name: str | None = None) -> None:
        if not callable(getattr(model, "encode", None)):
            raise TypeError(f"{type(model).__name__} has no encode method: give a model name, "
                            "a model folder, an Encoder or an object with encode(list[str])")
        self.model = model
        try:
            params = inspect.signature(model.encode).parameters
        except (TypeError, ValueError):
            params = {}
        self._st_keywords = "show_progress_bar" in params
        card = getattr(getattr(model, "model_card_data", None), "base_model", None)
        self.name = name or str(card or type(model).__name__)
        size = getattr(model, "get_embedding_dimension", None) or getattr(
            model, "get_sentence_embedding_dimension", lambda: None)
        dim = size()
        self.dim = int(dim) if dim else int(self._rows(["dimension probe"]).shape[1])

    def torch_modules(self) -> list[Any]:
        import torch

        return [self.model] if isinstance(self.model, torch.nn.Module) else []

    def _rows(self, texts: Sequence[str]) -> np.ndarray:
        if self._st_keywords:  # sentence-transformers: numpy out, its own bar off
            out = self.model.encode(list(texts), convert_to_numpy=True,
                                    show_progress_bar=False)
        else:
            out = self.model.encode(list(texts))
        if hasattr(out, "detach"):
            out = out.detach().float().cpu().numpy()
        try:
            rows = np.asarray(out, dtype=np.float32)
        except (ValueError, TypeError):
            raise ValueError(f"{self.name}.encode returned rows that are not one (n, dim) "
                             "array of numbers (rows of different lengths?)") from None
        if rows.ndim != 2 or rows.shape[0] != len(texts):
            raise ValueError(f"{self.name}.encode returned shape {rows.shape} for "
                             f"{len(texts)} texts: need one row per text")
        return rows

    def _encode_batch(self, texts: Sequence[str]) -> np.ndarray:
        rows = self._rows(texts)
        if rows.shape[1] != self.dim:
            raise ValueError(f"{self.name}.encode returned {rows.shape[1]} columns, not "
                             f"{self.dim}")
        bad = ~np.isfinite(rows).all(axis=1) | ~rows.any(axis=1)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"{self.name}.encode gave text {i} ({texts[i][:40]!r}) a zero or "
                             "non-finite vector")
        return rows


#: The sentence-transformers modules a folder may list: their classes, by name. Anything else
#: (a module class of the folder's own code) is refused, never imported.
ST_MODULES = ("Transformer", "Pooling", "Dense", "Normalize")
#: phrasekit's own modules (a PEARL export), by their ``modules.json`` type: installed with
#: phrasekit, so loading them runs phrasekit's code only, never the folder's.
PHRASEKIT_MODULES = ("phrasekit.encoders.st_modules.PearlTransformer",
                     "phrasekit.encoders.st_modules.PearlProjection")
#: Weight files that are pickles: refused (phrasekit loads safetensors only).
PICKLED = (".bin", ".pt", ".pth", ".pkl", ".pickle")


def _module_allowed(kind: str) -> bool:
    """Whether a ``modules.json`` type is a standard sentence-transformers module or one of
    phrasekit's own."""
    return kind in PHRASEKIT_MODULES or (kind.startswith("sentence_transformers.")
                                         and kind.rsplit(".", 1)[-1] in ST_MODULES)


def check_sentence_transformers_folder(path: Path) -> list[dict[str, Any]]:
    """The modules of ``path``'s ``modules.json``; ``ValueError`` unless it lists only the
    standard modules (``ST_MODULES`` of sentence-transformers) or phrasekit's own
    (``PHRASEKIT_MODULES``), in folders inside ``path`` whose weights are not pickles: what
    is then loaded runs no code from the folder."""
    from phrasekit.artifacts import member_path
    from phrasekit.io import json_loads

    where = path / "modules.json"
    member_path(path, "modules.json", where)
    try:
        modules = json_loads(where.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ValueError(f"{where}: malformed JSON ({exc})") from None
    if not isinstance(modules, list) or not modules:
        raise ValueError(f"{where}: expected a list of modules")
    for module in modules:
        kind = str(module.get("type", "")) if isinstance(module, dict) else ""
        if not _module_allowed(kind):
            raise ValueError(f"{where}: module type {kind!r} is not supported: phrasekit loads "
                             f"the {', '.join(ST_MODULES)} modules of sentence-transformers "
                             "and its own (a PEARL export) only, so that no code from the "
                             "folder runs")
        folder = path / str(module.get("path", ""))
        if module.get("path"):
            member_path(path, str(module["path"]), where)
        pickles = [p.name for p in folder.glob("*") if p.suffix in PICKLED]
        if pickles and not any(folder.glob("*.safetensors")):
            raise ValueError(f"{folder / pickles[0]}: pickled weights; phrasekit loads "
                             "safetensors only (re-save the model with safetensors)")
    return modules


def _phrasekit_modules_model(path: Path, modules: list[dict[str, Any]]) -> Any:
    """A ``SentenceTransformer`` of a folder that lists phrasekit's own modules (a PEARL
    export), each module built from its class here (the standard ones from
    sentence-transformers, phrasekit's from :mod:`phrasekit.encoders.st_modules`), so
    sentence-transformers imports nothing named by the folder and needs no
    ``trust_remote_code``."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer import modules as st

    from phrasekit.encoders import st_modules

    built = []
    for module in modules:
        kind = str(module["type"])
        name = kind.rsplit(".", 1)[-1]
        cls = getattr(st_modules if kind in PHRASEKIT_MODULES else st, name)
        built.append(cls.load(str(path), subfolder=str(module.get("path", "")),
                              local_files_only=True, trust_remote_code=False))
    return SentenceTransformer(modules=built, device="cpu")


def load_sentence_transformers_folder(path: Path, name: str | None = None) -> ExternalEncoder:
    """A sentence-transformers folder through sentence-transformers itself (its pooling,
    Dense, Normalize modules and ``max_seq_length`` honoured), checked first, offline; a
    folder written by ``phrasekit export`` of a PEARL model gets phrasekit's modules."""
    from sentence_transformers import SentenceTransformer

    modules = check_sentence_transformers_folder(path)
    try:
        if any(m.get("type") in PHRASEKIT_MODULES for m in modules):
            model = _phrasekit_modules_model(path, modules)
        else:
            model = SentenceTransformer(str(path), device="cpu", local_files_only=True,
                                        trust_remote_code=False)
    except Exception as exc:  # any library error, named with the folder
        if read_manifest(path) is not None:  # a `phrasekit export` folder names its bad file
            verify_folder(path, EXPORT_KIND)
        why = " ".join(str(exc).split()) or type(exc).__name__
        raise ValueError(f"{path}: not a loadable sentence-transformers folder ({why})"
                         ) from exc
    encoder = ExternalEncoder(model, name=name or path.name)
    encoder.model_path = path
    return encoder
