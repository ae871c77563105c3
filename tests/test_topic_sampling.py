"""The documents a topic fit encodes: at least ``size`` of them, and enough short ones to hold
``min_words`` words."""

from __future__ import annotations

import numpy as np

from phrasekit.io import Document
from phrasekit.topics.methods.sampling import sample_corpus


def _docs(n: int, words: int) -> list[Document]:
    return [Document(id=f"d{i}", text=" ".join(f"w{i}x{j}" for j in range(words)), meta={})
            for i in range(n)]


def test_short_texts_are_sampled_more() -> None:
    ids, sample, index = sample_corpus(_docs(1000, 12), size=10, seed=1, min_words=600)
    assert len(ids) == 1000 and len(sample) == 50  # 600 words at 12 words per document
    assert (np.diff(index) > 0).all() and [d.id for d in sample] == [ids[i] for i in index]
    _, long_sample, _ = sample_corpus(_docs(1000, 100), size=10, seed=1, min_words=600)
    assert len(long_sample) == 10
    _, tiny, _ = sample_corpus(_docs(1000, 2), size=10, seed=1, min_words=600)
    assert len(tiny) == 60  # the reservoir's bound: 600 words at MIN_MEAN_WORDS (10)


def test_sample_is_seeded_and_whole_when_small() -> None:
    docs = _docs(500, 8)
    a = sample_corpus(docs, size=50, seed=3)[2]
    assert (a == sample_corpus(docs, size=50, seed=3)[2]).all() and len(a) == 50
    assert not (a == sample_corpus(docs, size=50, seed=4)[2]).all()
    assert len(sample_corpus(docs, size=50, min_words=10_000)[1]) == 500


def test_large_corpora_are_sampled_by_share_up_to_a_bound() -> None:
    docs = _docs(1000, 30)
    assert len(sample_corpus(docs, size=10, share=0.2, max_share_docs=150)[1]) == 150
    assert len(sample_corpus(docs, size=10, share=0.05, max_share_docs=150)[1]) == 50
    assert len(sample_corpus(docs[:100], size=10, share=0.05, max_share_docs=150)[1]) == 10
    a = sample_corpus(docs, size=10, seed=2, share=0.2, max_share_docs=150)[2]
    assert (a == sample_corpus(docs, size=10, seed=2, share=0.2, max_share_docs=150)[2]).all()
