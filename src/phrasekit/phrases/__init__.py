"""Phrase extraction: spaCy noun chunks and named entities -> ``PhraseVocabulary``.

Example::

    from phrasekit.io import read_corpus
    from phrasekit.phrases import PhraseExtractor

    vocab = PhraseExtractor().extract(read_corpus("corpus.jsonl"), show_progress=True)
    frequent = vocab.filter(min_df=5, max_phrases=5000)
    frequent.to_json("vocab.json.gz")
"""

import lazy_loader

# Names are imported on first use, so importing one module of the package does not
# load the others' dependencies.
__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submod_attrs={
        "extract": [
            "DEFAULT_SPACY_MODEL",
            "LEADING_STRIP_WORDS",
            "NUMERIC_ENTITY_TYPES",
            "PhraseExtractor",
            "as_documents",
            "load_spacy",
        ],
        "pieces": ["sample_by_words", "split_long_text"],
        "cache": ["check_phrase_cache", "load_or_extract_vocabulary"],
        "ngrams": ["frequent_ngrams"],
        "vocabulary": ["NOUN_CHUNK", "PhraseVocabulary"],
    },
)
