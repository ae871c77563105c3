"""Texts cut into the pieces spaCy reads: long texts split at natural boundaries, a seeded
sample of a corpus by words, and how many worker processes a batch of texts is worth."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from phrasekit.io import Document

#: spaCy starts ``n_process`` workers only with at least this many characters of text per
#: worker: below, forking costs more than it saves (samples of bbc_news, tagger only, AMD EPYC
#: [avx2], 2 cores: 14,827 characters 0.21 s in one process against 0.32 s in two, 32,243
#: characters 0.49 s against 0.45 s, 893,363 characters 9.73 s against 6.22 s;
#: ``benchmarks/speed/spacy_processes.py``).
MIN_CHARS_PER_PROCESS = 15_000
#: Characters per ``nlp.pipe`` batch at most (a piece longer than this goes alone): spaCy
#: holds about 3 KB per character of a batch while parsing it.
PIPE_BATCH_CHARS = 200_000


def pipe_processes(texts: Sequence[str], n_process: int) -> int:
    """How many spaCy processes to start for ``texts``: ``n_process``, or 1 when they hold
    fewer than ``MIN_CHARS_PER_PROCESS`` characters per process (starting workers would cost
    more than they save). Counted in characters, not texts: 400 news articles are work for
    two processes, 400 headlines are not."""
    chars = sum(len(t) for t in texts)
    return n_process if chars >= MIN_CHARS_PER_PROCESS * n_process else 1


def split_long_text(text: str, max_chars: int) -> list[str]:
    """Split ``text`` into pieces of at most ``max_chars`` characters, preferring paragraph,
    then line, then sentence, then word boundaries."""
    if len(text) <= max_chars:
        return [text]
    pieces: list[str] = []
    rest = text
    while len(rest) > max_chars:
        window = rest[:max_chars]
        cut = -1
        for sep in ("\n\n", "\n", ". ", " "):
            pos = window.rfind(sep)
            if pos > max_chars // 4:
                cut = pos + len(sep)
                break
        if cut <= 0:
            cut = max_chars
        pieces.append(rest[:cut])
        rest = rest[cut:]
    if rest.strip():
        pieces.append(rest)
    return pieces


def sample_by_words(docs: Sequence[Document], max_words: int | None, seed: int = 0
                    ) -> list[Document]:
    """A seeded random sample of ``docs`` (kept in corpus order) holding about ``max_words``
    whitespace words: documents are drawn until the budget is spent. None or a budget the
    corpus does not exceed: all of them. Enough to find a corpus' recurring phrases, whose
    frequencies can then be counted in every document."""
    if max_words is None:
        return list(docs)
    lengths = np.fromiter((len(d.text.split()) for d in docs), dtype=np.int64, count=len(docs))
    if lengths.sum() <= max_words:
        return list(docs)
    order = np.random.default_rng(seed).permutation(len(docs))
    n = int(np.searchsorted(np.cumsum(lengths[order]), max_words)) + 1
    return [docs[i] for i in sorted(order[:n].tolist())]
