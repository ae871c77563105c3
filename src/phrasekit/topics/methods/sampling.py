"""The documents a topic fit encodes: a seeded uniform sample, drawn in one pass.

The sample holds at least ``size`` documents; in a corpus of short texts, at least
``min_words`` words (short texts cost little to encode and each tells the student placing
the rest little, so such a corpus is sampled more, or whole); and in a large corpus a
``share`` of its documents up to ``max_share_docs`` (a corpus of many documents has more
topics and finer ones, and each needs documents in the sample to be found, read and taught
to the student).
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable

import numpy as np

from phrasekit.io import Document, iter_documents

#: The reservoir holds enough documents for ``min_words`` at this many words per document.
MIN_MEAN_WORDS = 10
#: Words counted per document at most (a document is encoded as at most 8 x 150 words).
COUNTED_WORDS = 1200


def sample_corpus(docs: Iterable[Document | str], size: int, seed: int = 0,
                  min_words: int = 0, share: float = 0.0, max_share_docs: int = 0
                  ) -> tuple[list[str], list[Document], np.ndarray]:
    """One pass over ``docs``: every id, and a seeded uniform sample in corpus order with the
    sampled documents' positions: ``max(size, min_words / mean words per document,
    min(share x documents, max_share_docs))`` documents, all of them when there are no more.
    Memory holds the reservoir (at most ``max(size, max_share_docs, min_words /
    MIN_MEAN_WORDS)`` documents) and the ids, not the corpus."""
    rng = random.Random(seed)
    cap = max(size, max_share_docs if share > 0 else 0, min_words // MIN_MEAN_WORDS)
    ids: list[str] = []
    kept: list[tuple[int, Document]] = []
    words = 0
    for i, doc in enumerate(iter_documents(docs)):
        ids.append(doc.id)
        if min_words:
            words += min(len(doc.text.split()), COUNTED_WORDS)
        if i < cap:
            kept.append((i, doc))
        elif (j := rng.randrange(i + 1)) < cap:
            kept[j] = (i, doc)
    n = size
    if min_words and ids:
        n = max(n, math.ceil(min_words / max(words / len(ids), 1.0)))
    if share > 0:
        n = max(n, min(max_share_docs, math.ceil(share * len(ids))))
    if n < len(kept):  # a uniform subset of a uniform sample
        kept = rng.sample(kept, n)
    kept.sort(key=lambda item: item[0])
    return ids, [d for _, d in kept], np.asarray([i for i, _ in kept], dtype=np.int64)
