"""Where weights come from: packaged backbones (``backbones``), model folders (``folders``) and
their weights (``weights``, which needs torch).

Named models are built by :mod:`phrasekit.registry` (``phrasekit.load``), which sits above the
encoders it lists.
"""

import lazy_loader

# Imported on first use: reading a folder's config must not load torch.
__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__, submod_attrs={"weights": ["quantize_model_folder"]})
