"""Character n-gram baseline: hashed TF vectors of character 2-4-grams, compared by cosine.

No training and no vocabulary: it measures surface overlap only, which is what fuzzy-matching
tools do and the floor any semantic phrase encoder should clear.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from phrasekit.encoders.base import Encoder


class CharNgramEncoder(Encoder):
    """Cosine over hashed character n-gram counts (sublinear tf), lower-cased, word-bounded."""

    default_batch_size = 4096

    def __init__(self, ngram_range: tuple[int, int] = (2, 4), n_features: int = 4096) -> None:
        from sklearn.feature_extraction.text import HashingVectorizer  # slow import: on use

        self.name = "string"
        self.dim = int(n_features)
        self._vec = HashingVectorizer(
            analyzer="char_wb", ngram_range=ngram_range, n_features=n_features,
            alternate_sign=False, norm=None, lowercase=True,
        )

    def _encode_batch(self, texts: Sequence[str]) -> np.ndarray:
        x = self._vec.transform(texts).astype(np.float32)
        x.data = 1.0 + np.log(x.data)  # sublinear tf
        return x.toarray()
