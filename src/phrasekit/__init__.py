"""phrasekit: phrase representations and phrase-based topic mining.

Quick start::

    import phrasekit
    enc = phrasekit.load("minilm")
    vecs = enc.encode(["natural language processing", "machine translation"])
"""

from phrasekit.encoders.base import Encoder
from phrasekit.registry import available_models, load

__version__ = "0.1.0"
__all__ = ["Encoder", "__version__", "available_models", "load"]
