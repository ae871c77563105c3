"""phrasekit models out to sentence-transformers: a mean-pooled transformer model (minilm,
mpnet, Phrase-BERT with its trained weights, a transformer folder) written as a standard
sentence-transformers folder (Transformer, mean Pooling, Normalize; safetensors), which
``SentenceTransformer(folder)``, ``AutoModel.from_pretrained(folder)``, KeyBERT and BERTopic
load as any other, with a model card (license, base model, benchmark row). Models with parts
those standard modules cannot hold (PEARL's character CNN, facet codebooks, SubTST's topic
features) are refused with the reason."""

from __future__ import annotations

import tempfile
from pathlib import Path

from phrasekit.artifacts import staged_folder
from phrasekit.encoders.base import Encoder
from phrasekit.encoders.model_card import model_card

#: The artefact kind of an exported folder (its manifest lets an export replace an export).
EXPORT_KIND = "phrasekit-sentence-transformers-export"


def export_sentence_transformers(encoder: Encoder, out: str | Path) -> Path:
    """Write ``encoder`` to the folder ``out`` as a sentence-transformers model (whole or not
    at all); ``ValueError`` for a model that is not a mean-pooled fp32 transformer."""
    from phrasekit.encoders.transformer import TransformerEncoder

    if not isinstance(encoder, TransformerEncoder):
        raise ValueError(f"{encoder.name} ({type(encoder).__name__}) cannot be exported to "
                         "sentence-transformers: its standard modules hold a transformer with "
                         "pooling, not this model's own parts (character CNN, projection, "
                         "facets or topic features); export a transformer model such as "
                         "minilm or phrase-bert-minilm")
    if encoder.precision != "fp32":
        raise ValueError(f"{encoder.name}: export the fp32 model (got {encoder.precision})")
    from sentence_transformers import SentenceTransformer, models

    with tempfile.TemporaryDirectory() as hf, staged_folder(out, EXPORT_KIND) as tmp:
        encoder.model.save_pretrained(hf, safe_serialization=True)
        encoder.tokenizer.save_pretrained(hf)
        word = models.Transformer(hf, max_seq_length=encoder.max_seq_length)
        pool = models.Pooling(encoder.dim, pooling_mode="mean")
        SentenceTransformer(modules=[word, pool, models.Normalize()], device="cpu").save(
            str(tmp))
        card = model_card(encoder.name, encoder.dim, encoder.max_seq_length)
        (Path(tmp) / "README.md").write_text(card, encoding="utf-8")
    return Path(out)
