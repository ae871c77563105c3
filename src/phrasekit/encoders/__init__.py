"""Encoders: every one maps a list of strings to L2-normalised float32 vectors (n, d)."""

from phrasekit.encoders.base import Encoder, validate_texts
from phrasekit.encoders.static import StaticWordEncoder
from phrasekit.encoders.string import CharNgramEncoder
from phrasekit.encoders.transformer import TransformerEncoder

__all__ = [
    "CharNgramEncoder",
    "Encoder",
    "StaticWordEncoder",
    "TransformerEncoder",
    "validate_texts",
]
