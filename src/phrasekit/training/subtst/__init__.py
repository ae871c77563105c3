"""SubTST training (sentence-pair models with sub-word topic features) and its SBERT-style
baseline on MSRP and STS-B:

- ``config``: the training settings (no torch: ``--help`` stays fast);
- ``task``: one recipe for every variant, ``train_subtst``, run by the shared trainer.

The model lives in ``phrasekit.encoders.subtst``.
"""
