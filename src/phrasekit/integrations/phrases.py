"""Noun phrases for the BERTopic plug-ins, at a cost below BERTopic's own fit.

BERTopic hands its vectorizer one text per topic (the topic's documents joined) and its
representation model every document. Both plug-ins only need to know *which* phrases the
corpus uses: every phrase is then counted verbatim in every text by token matching, which
takes no spaCy. So spaCy reads a seeded sample of sentences holding about ``phrase_words``
words, with the tagger only (POS-pattern noun phrases, no parser or NER: 4x faster on
bbc_news), sentences batched for ``nlp.pipe``, and each distinct sentence is parsed once per
plug-in object (a phrase cache: BERTopic's ``update_topics`` and ``reduce_topics`` read the
same sentences again).
"""

from __future__ import annotations

import logging
import re
from collections import OrderedDict
from collections.abc import Iterable, Sequence

import numpy as np

from phrasekit.phrases import PhraseVocabulary
from phrasekit.phrases.extract import DEFAULT_SPACY_MODEL, PhraseExtractor
from phrasekit.phrases.pieces import pipe_processes
from phrasekit.text import stop_words, tokenize

logger = logging.getLogger(__name__)

#: Words of sentences spaCy reads per fit by default: as many as the documents topic method
#: reads to find a corpus' phrases.
PHRASE_WORDS = 150_000
#: Distinct sentences whose phrases a finder remembers.
CACHE_SENTENCES = 200_000
#: Sentences per ``nlp.pipe`` batch.
PIPE_BATCH = 256
#: Sentence ends: after . ! ? before a capital, digit or quote; and line breaks.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\u201c])|\s*\n\s*")
#: A sentence longer than this many characters is cut (a text without punctuation).
MAX_SENTENCE_CHARS = 2_000

Occurrence = tuple[str, str, str]


def sentences(text: str) -> list[str]:
    """``text`` cut into sentences (at most ``MAX_SENTENCE_CHARS`` characters each)."""
    out = []
    for part in _SENTENCE_END.split(text):
        part = part.strip()
        while len(part) > MAX_SENTENCE_CHARS:
            cut = part.rfind(" ", 0, MAX_SENTENCE_CHARS)
            cut = cut if cut > 0 else MAX_SENTENCE_CHARS
            out.append(part[:cut])
            part = part[cut:].strip()
        if part:
            out.append(part)
    return out


def sample_sentences(texts: Iterable[str], max_words: int | None, seed: int = 0) -> list[str]:
    """Distinct sentences of ``texts``, a seeded random sample holding about ``max_words``
    words (None: all), in text order."""
    pool = list(dict.fromkeys(s for t in texts for s in sentences(t)))
    if max_words is None:
        return pool
    lengths = np.fromiter((len(s.split()) for s in pool), dtype=np.int64, count=len(pool))
    if lengths.sum() <= max_words:
        return pool
    order = np.random.default_rng(seed).permutation(len(pool))
    n = int(np.searchsorted(np.cumsum(lengths[order]), max_words)) + 1
    return [pool[i] for i in sorted(order[:n].tolist())]


def phrase_key(key: str) -> tuple[str, ...] | None:
    """A phrase's tokens (``tokenize``), or None for one the plug-ins do not count: fewer than
    two tokens, only stop words, or not two words of two letters ("n 4", "km s")."""
    toks = tuple(tokenize(key))
    if len(toks) < 2 or all(t in stop_words() for t in toks):
        return None
    if sum(1 for t in toks if sum(c.isalpha() for c in t) >= 2) < 2:
        return None
    return toks


class SentencePhrases:
    """spaCy noun phrases of sentences, each distinct sentence parsed once and remembered.

    Args:
        spacy_model: the spaCy pipeline (tagger only is run).
        n_process: ``nlp.pipe`` worker processes.
        cache_size: distinct sentences remembered (oldest forgotten first).
    """

    def __init__(self, spacy_model: str = DEFAULT_SPACY_MODEL, n_process: int = 1,
                 cache_size: int = CACHE_SENTENCES) -> None:
        self.extractor = PhraseExtractor(spacy_model=spacy_model, chunker="pos",
                                         entities=False, n_process=n_process)
        self.cache_size = cache_size
        self._cache: OrderedDict[str, list[Occurrence]] = OrderedDict()

    def occurrences(self, items: Sequence[str]) -> list[list[Occurrence]]:
        """Each sentence's ``(key, surface, source)`` phrase occurrences."""
        missing = [s for s in dict.fromkeys(items) if s not in self._cache]
        if missing:
            ex = self.extractor
            logger.info("spaCy reads %d sentences (%d cached)", len(missing),
                        len(set(items)) - len(missing))
            found = {s: ex.doc_candidates(doc) for s, doc in zip(missing, ex.nlp.pipe(
                missing, batch_size=PIPE_BATCH,
                n_process=pipe_processes(missing, ex.n_process)), strict=True)}
        else:
            found = {}
        out = []
        for s in items:
            occ = found.get(s)
            if occ is None:
                occ = self._cache[s]
                self._cache.move_to_end(s)
            out.append(occ)
        for s, occ in found.items():
            self._cache[s] = occ
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)
        return out

    def vocabulary(self, texts: Iterable[str], max_words: int | None,
                   seed: int = 0) -> PhraseVocabulary:
        """The phrases of a seeded sample of ``texts``' sentences (``sample_sentences``), as a
        vocabulary whose documents are the sentences."""
        sample = sample_sentences(texts, max_words, seed)
        return PhraseVocabulary.from_occurrences([str(i) for i in range(len(sample))],
                                                 self.occurrences(sample))

    def __getstate__(self) -> dict:
        """Pickled without the remembered sentences."""
        return {**self.__dict__, "_cache": OrderedDict()}
