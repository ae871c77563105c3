"""PEARL training (Chen, Varoquaux, Suchanek, "Learning High-Quality and General-Purpose Phrase
Representations"): the data, the contrastive fine-tuning and what follows it.

- ``data``: ``phrasekit train pearl-data``: typed phrases, paraphrases, word synonyms (with
  ``word_synonyms``) and hard negatives (``mining``, paper §3.4), benchmark strings removed;
- ``redirects``: real aliases from DBpedia redirects (read, filter, classify, split);
- ``config``: the training settings and the model they build (no torch: ``--help`` stays fast);
- ``task``: the training task (augmentation positives, hard negatives, InfoNCE, type and
  supersense losses) and ``train_pearl``, run by the shared ``training.core.trainer``;
- ``alias_pairs``: train-split redirect pairs as positives with their hard negatives;
- ``distillation``: the teachers' transfer set;
- ``char_mimic``: LOVE-style pre-training of the character CNN;
- ``averaging``: weight averaging with the initial model (α chosen on dev), re-averaging, soups.

The model itself (``PearlModel``, ``PearlEncoder``) lives in ``phrasekit.encoders.pearl``.
"""
