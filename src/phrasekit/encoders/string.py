"""Character n-gram baseline: hashed TF vectors of character 2-4-grams, compared by cosine.

No training and no vocabulary: it measures surface overlap only, which is what fuzzy-matching
tools do and the floor any semantic phrase encoder should clear.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from phrasekit.encoders.base import Encoder

#: Texts are hashed in pieces of at most this many characters, cut at a space: n-grams stay
#: inside words (``char_wb``), so the counts are the same and a long text costs bounded memory.
PIECE_CHARS = 50_000


def _pieces(text: str) -> list[str]:
    """``text`` cut at spaces into pieces of at most :data:`PIECE_CHARS` characters (a word
    longer than that is cut where it must be)."""
    out, start = [], 0
    while len(text) - start > PIECE_CHARS:
        cut = text.rfind(" ", start + 1, start + PIECE_CHARS)
        cut = cut if cut > start else start + PIECE_CHARS
        out.append(text[start:cut])
        start = cut
    out.append(text[start:])
    return out


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
        import scipy.sparse as sp

        pieces, owner = [], []
        for i, text in enumerate(texts):
            for piece in _pieces(text):
                pieces.append(piece)
                owner.append(i)
        x = self._vec.transform(pieces)
        if len(pieces) > len(texts):  # a long text's counts: the sum of its pieces'
            x = sp.csr_matrix((np.ones(len(owner)), (owner, np.arange(len(owner)))),
                              shape=(len(texts), len(pieces))) @ x
        x = x.astype(np.float32)
        x.data = 1.0 + np.log(x.data)  # sublinear tf
        return x.toarray()
