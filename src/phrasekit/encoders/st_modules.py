"""sentence-transformers modules for PEARL's parts, so an exported PEARL folder loads with
``SentenceTransformer(folder, trust_remote_code=True)`` where phrasekit is installed (the folder
holds no code; sentence-transformers 6 asks for the flag for any module outside its own package)
and encodes as phrasekit.

PEARL's vector is ``normalize(proj([mean-pooled transformer; character CNN(bytes)]))``. The
character CNN reads the raw text, which sentence-transformers hands only to the first module,
so the export is four modules:

1. :class:`PearlTransformer`: sentence-transformers' ``Transformer``, which also passes the
   texts on (under ``TEXTS``) past the transformer model;
2. ``Pooling`` (mean);
3. :class:`PearlProjection`: the character CNN over the texts' bytes, concatenated with the
   pooled vector, through PEARL's projection;
4. ``Normalize``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, ClassVar

import torch
from safetensors.torch import load_model, save_model
from sentence_transformers.sentence_transformer.modules import Module, Transformer
from torch import nn

from phrasekit.encoders.char import CharCNN, bytes_batch
from phrasekit.encoders.pearl_config import CharCNNConfig

#: The feature key holding the raw texts between the first module and the projection.
TEXTS = "phrasekit_texts"
WEIGHTS = "model.safetensors"


class PearlTransformer(Transformer):
    """sentence-transformers' ``Transformer`` that keeps the raw texts in the features."""

    def preprocess(self, inputs: Sequence[Any], prompt: str | None = None,
                   **kwargs: Any) -> dict[str, Any]:
        """The transformer's features, plus the texts themselves (the character CNN's input)."""
        features = super().preprocess(inputs, prompt=prompt, **kwargs)
        if features:
            features[TEXTS] = [str(t) for t in inputs]
        return features

    def forward(self, features: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        """The transformer's forward pass, with the texts set aside from the model's inputs."""
        texts = features.pop(TEXTS, None)
        out = super().forward(features, **kwargs)
        if texts is not None:
            out[TEXTS] = texts
        return out


class PearlProjection(Module):
    """PEARL's character CNN and projection: ``proj([sentence_embedding; CNN(bytes)])``
    (``proj(sentence_embedding)`` for a model trained without the CNN: ``char`` None)."""

    config_keys: ClassVar[list[str]] = ["in_dim", "out_dim", "char"]

    def __init__(self, in_dim: int, out_dim: int, char: dict[str, Any] | None) -> None:
        super().__init__()
        self.in_dim, self.out_dim = int(in_dim), int(out_dim)
        self.char = None if char is None else dict(char)
        self.cnn = None if char is None else CharCNN(CharCNNConfig.from_dict(char))
        self.proj = nn.Linear(self.in_dim, self.out_dim)

    def forward(self, features: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        """Replace ``sentence_embedding`` by PEARL's projected vector (before normalising)."""
        feats = features["sentence_embedding"].float()
        if self.cnn is not None:
            ids = bytes_batch(features[TEXTS], self.cnn.config.max_chars).to(feats.device)
            feats = torch.cat([feats, self.cnn(ids).float()], dim=1)
        features["sentence_embedding"] = self.proj(feats)
        return features

    def get_embedding_dimension(self) -> int:
        """The vector size (sentence-transformers asks each module for it)."""
        return self.out_dim

    def save(self, output_path: str, *args: Any, safe_serialization: bool = True,
             **kwargs: Any) -> None:
        """Config and safetensors weights (never a pickle)."""
        self.save_config(output_path)
        save_model(self, os.path.join(output_path, WEIGHTS))

    @classmethod
    def load(cls, model_name_or_path: str, subfolder: str = "", token: bool | str | None = None,
             cache_folder: str | None = None, revision: str | None = None,
             local_files_only: bool = False, **kwargs: Any) -> PearlProjection:
        """Rebuild from the config and load the safetensors weights."""
        hub = {"subfolder": subfolder, "token": token, "cache_folder": cache_folder,
               "revision": revision, "local_files_only": local_files_only}
        module = cls(**cls.load_config(model_name_or_path, **hub))
        path = cls.load_file_path(model_name_or_path, filename=WEIGHTS, **hub)
        if path is None:
            raise FileNotFoundError(f"{model_name_or_path}/{subfolder}: no {WEIGHTS}")
        load_model(module, path)
        return module
