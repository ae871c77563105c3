"""phrasekit models out to sentence-transformers: a mean-pooled transformer model (minilm,
mpnet, Phrase-BERT with its trained weights, a transformer folder) written as a standard
sentence-transformers folder (Transformer, mean Pooling, Normalize; safetensors), which
``SentenceTransformer(folder)``, ``AutoModel.from_pretrained(folder)``, KeyBERT and BERTopic
load as any other, with a model card (license, base model, benchmark row). A PEARL model adds
its character CNN and projection as phrasekit's own sentence-transformers modules
(:mod:`phrasekit.encoders.st_modules`), so its folder loads where phrasekit is installed.
Models with parts no such module holds (facet codebooks, SubTST's topic features) are refused
with the reason."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from phrasekit.artifacts import staged_folder
from phrasekit.encoders.base import Encoder
from phrasekit.encoders.model_card import model_card

#: The artefact kind of an exported folder (its manifest lets an export replace an export).
EXPORT_KIND = "phrasekit-sentence-transformers-export"


def export_sentence_transformers(encoder: Encoder, out: str | Path) -> Path:
    """Write ``encoder`` to the folder ``out`` as a sentence-transformers model (whole or not
    at all); ``ValueError`` for a model that is neither a transformer nor PEARL, or not fp32."""
    from phrasekit.encoders.pearl import PearlEncoder
    from phrasekit.encoders.transformer import TransformerEncoder

    if not isinstance(encoder, TransformerEncoder | PearlEncoder):
        raise ValueError(f"{encoder.name} ({type(encoder).__name__}) cannot be exported to "
                         "sentence-transformers: only transformer and PEARL models have "
                         "sentence-transformers modules; export a model such as minilm, "
                         "phrase-bert-minilm or pearl-minilm")
    if encoder.precision != "fp32":
        raise ValueError(f"{encoder.name}: export the fp32 model (got {encoder.precision})")
    from sentence_transformers import SentenceTransformer

    with tempfile.TemporaryDirectory() as hf, staged_folder(out, EXPORT_KIND) as tmp:
        if isinstance(encoder, PearlEncoder):
            modules, max_len = _pearl_modules(encoder, hf)
        else:
            modules, max_len = _transformer_modules(encoder, hf)
        SentenceTransformer(modules=modules, device="cpu").save(str(tmp))
        card = model_card(encoder.name, encoder.dim, max_len,
                          phrasekit_modules=isinstance(encoder, PearlEncoder))
        (Path(tmp) / "README.md").write_text(card, encoding="utf-8")
    return Path(out)


def _transformer_modules(encoder: Any, hf: str) -> tuple[list[Any], int]:
    """Transformer, mean Pooling, Normalize (and the tokens kept) of a transformer encoder."""
    from sentence_transformers.sentence_transformer import modules as models

    encoder.model.save_pretrained(hf, safe_serialization=True)
    encoder.tokenizer.save_pretrained(hf)
    word = models.Transformer(hf, max_seq_length=encoder.max_seq_length)
    pool = models.Pooling(encoder.dim, pooling_mode="mean")
    return [word, pool, models.Normalize()], encoder.max_seq_length


def _pearl_modules(encoder: Any, hf: str) -> tuple[list[Any], int]:
    """PEARL as PearlTransformer, mean Pooling, PearlProjection (character CNN and projection,
    with the trained weights), Normalize; the type heads stay behind (they are not part of the
    vector)."""
    from sentence_transformers.sentence_transformer import modules as models

    from phrasekit.encoders.st_modules import PearlProjection, PearlTransformer

    model = encoder.model
    max_len = int(model.config.max_seq_length)
    model.backbone.save_pretrained(hf, safe_serialization=True)
    model.tokenizer.save_pretrained(hf)
    word = PearlTransformer(hf, max_seq_length=max_len)
    pool = models.Pooling(model.dim, pooling_mode="mean")
    char = model.config.char.to_dict() if model.char is not None else None
    head = PearlProjection(model.proj.in_features, model.dim, char)
    head.proj.load_state_dict(model.proj.state_dict())
    if model.char is not None:
        head.cnn.load_state_dict(model.char.state_dict())
    return [word, pool, head, models.Normalize()], max_len
