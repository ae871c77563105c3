"""Multi-facet codebook training:

- ``data``: ``phrasekit train facets-data``: (input words, set of co-occurring words), with the
  examples of phrases and sentences in ``examples``;
- ``config``: the training settings (no torch: ``--help`` stays fast);
- ``task``: AdamW over the NNSC loss, ``train_facets``, run by the shared trainer.

The model lives in ``phrasekit.encoders.facets``.
"""
