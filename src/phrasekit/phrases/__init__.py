"""Phrase extraction: spaCy noun chunks and named entities -> ``PhraseVocabulary``.

Example::

    from phrasekit.io import read_corpus
    from phrasekit.phrases import PhraseExtractor

    vocab = PhraseExtractor().extract(read_corpus("corpus.jsonl"), show_progress=True)
    frequent = vocab.filter(min_df=5, max_phrases=5000)
    frequent.to_json("vocab.json.gz")
"""

from phrasekit.phrases.extract import (
    DEFAULT_SPACY_MODEL,
    LEADING_STRIP_WORDS,
    NUMERIC_ENTITY_TYPES,
    PhraseExtractor,
    as_documents,
    load_spacy,
    sample_by_words,
    split_long_text,
)
from phrasekit.phrases.ngrams import frequent_ngrams
from phrasekit.phrases.vocabulary import NOUN_CHUNK, PhraseVocabulary

__all__ = [
    "DEFAULT_SPACY_MODEL",
    "LEADING_STRIP_WORDS",
    "NOUN_CHUNK",
    "NUMERIC_ENTITY_TYPES",
    "PhraseExtractor",
    "PhraseVocabulary",
    "as_documents",
    "frequent_ngrams",
    "load_spacy",
    "sample_by_words",
    "split_long_text",
]
