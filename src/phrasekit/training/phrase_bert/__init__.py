"""Phrase-BERT training (Wang et al. 2021): triplet fine-tuning on paraphrases and phrases in
context.

- ``data``: ``phrasekit train phrase-bert-data``: the triplets, from ``paraphrases`` (phrase,
  lexically diverse paraphrase, corrupted phrase) and ``contexts`` (phrase, its masked context,
  another's), with the word rules of ``words``;
- ``config``: the training settings (no torch: ``--help`` stays fast);
- ``task``: the triplet fine-tuning, ``train_phrase_bert``, run by the shared trainer.

The encoder itself lives in ``phrasekit.encoders.phrase_bert``.
"""
