"""phrasekit: phrase representations and phrase-based topic mining.

Quick start::

    import phrasekit
    enc = phrasekit.load("minilm")
    vecs = enc.encode(["natural language processing", "machine translation"])

The names below are imported on first use, so ``import phrasekit`` (and every command that
never loads a model) does not pay for torch. Importing phrasekit sets ``GOMP_SPINCOUNT=10000``
and ``KMP_BLOCKTIME=0`` unless the user set them or ``OMP_WAIT_POLICY`` (see
:mod:`phrasekit.threads`).
"""

import lazy_loader

from phrasekit.threads import prepare_openmp

prepare_openmp()  # OpenMP threads spin briefly while they wait (phrasekit.threads); before torch
__version__ = "0.1.0"
__getattr__, __dir__, _names = lazy_loader.attach(
    __name__, submod_attrs={"encoders.base": ["Encoder"],
                            "registry": ["available_models", "load"],
                            "similarity.join": ["fuzzy_join"],
                            "similarity.frames": ["encode_frame", "join_frames"]})
__all__ = ["Encoder", "__version__", "available_models", "encode_frame", "fuzzy_join",
           "join_frames", "load"]
