"""Where weights come from: packaged backbones (``backbones``) and model folders (``folders``).

Named models are built by :mod:`phrasekit.registry` (``phrasekit.load``), which sits above the
encoders it lists.
"""
