"""UCTopic training: contrastive pre-training of a span encoder and CCL.

- ``data``: ``phrasekit train uctopic-data``: sentence pairs sharing a mention;
- ``config``: the pre-training settings (no torch: ``--help`` stays fast);
- ``task``: contrastive pre-training of the span encoder, ``train_uctopic``;
- ``ccl``: cluster-assisted contrastive learning on the corpus being mined (in memory);
- ``common``: the parts pre-training and CCL share.

The span encoder lives in ``phrasekit.encoders.span``.
"""
