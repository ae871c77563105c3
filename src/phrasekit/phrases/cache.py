"""The phrase cache (``--phrase-cache``): a saved vocabulary reused when it was extracted from
the same documents with the same settings, and replaced only because phrasekit wrote it."""

from __future__ import annotations

import gzip
import json
import logging
import os
import zlib
from pathlib import Path

from phrasekit.io import Document, writable_target
from phrasekit.phrases.extract import PhraseExtractor
from phrasekit.phrases.vocabulary import FORMAT_NAME, PhraseVocabulary

logger = logging.getLogger(__name__)


def _not_a_cache(cache: str | Path, why: object) -> ValueError:
    return ValueError(f"--phrase-cache {cache}: not a phrase cache written by phrasekit ({why}); "
                      "not overwriting it: give a new file name, or delete it if it is a "
                      "damaged cache")


def check_phrase_cache(cache: str | Path | None) -> None:
    """Before long work: an existing phrase cache may be read and replaced only because
    phrasekit wrote it (its first bytes name the vocabulary format); any other file (a corpus,
    a user's notes, a FIFO) raises ``ValueError`` naming it, and is never overwritten."""
    if cache is None or not os.path.lexists(cache):
        return
    try:
        writable_target(cache)
        if Path(cache).stat().st_size == 0:  # an emptied cache: nothing to lose, rebuilt
            return
        opener = gzip.open if Path(cache).suffix.lower() == ".gz" else open
        with opener(cache, "rb") as fh:
            head = fh.read(len(_CACHE_HEAD))
    except (ValueError, OSError, EOFError, zlib.error) as exc:
        raise _not_a_cache(cache, exc) from None
    if head != _CACHE_HEAD:
        raise _not_a_cache(cache, "it does not start as one")


#: How every saved phrase vocabulary starts (``PhraseVocabulary.to_json``).
_CACHE_HEAD = ('{"format":' + json.dumps(FORMAT_NAME)).encode("utf-8")


def _read_cache(cache: str | Path | None) -> PhraseVocabulary | None:
    """The vocabulary in a phrase cache that ``check_phrase_cache`` accepted; None when there
    is none, or when it is damaged further on (cut, emptied, a flipped byte): phrasekit wrote
    it, so it is rebuilt, with a warning naming it."""
    if cache is None or not os.path.lexists(cache):
        return None
    try:
        return PhraseVocabulary.from_json(cache)
    except (ValueError, OSError, EOFError, zlib.error) as exc:
        logger.warning("phrase cache %s is damaged (%s): re-extracting", cache,
                       " ".join(str(exc).split()) or type(exc).__name__)
        return None


def load_or_extract_vocabulary(
    docs: list[Document],
    cache: str | Path | None,
    extractor: PhraseExtractor | None = None,
    show_progress: bool = False,
) -> PhraseVocabulary:
    """The phrase vocabulary of ``docs``: read from ``cache`` when it was extracted from the
    same documents with the same settings, otherwise extracted (and written to ``cache``)."""
    extractor = extractor or PhraseExtractor()
    check_phrase_cache(cache)
    vocab = _read_cache(cache)
    if vocab is not None:
        if vocab.doc_ids != [d.id for d in docs]:
            logger.warning("phrase cache %s is for other documents; re-extracting", cache)
        elif vocab.params != extractor.settings():
            logger.warning("phrase cache %s used other settings; re-extracting", cache)
        else:
            logger.info("phrases read from cache %s", cache)
            return vocab
    vocab = extractor.extract(docs, show_progress=show_progress)
    if cache is not None:
        vocab.to_json(cache)
    return vocab
