"""phrasekit inside BERTopic and KeyBERT (the optional ``bench`` extra installs both).

- :class:`KeyBERTBackend` and :class:`BERTopicBackend`: any phrasekit model (a name, a folder,
  an encoder, or an object with ``encode``) as the library's embedding backend::

      KeyBERT(model=KeyBERTBackend("pearl-minilm"))
      BERTopic(embedding_model=BERTopicBackend("minilm"))

  Both libraries pick a backend by its class (their own ``BaseEmbedder``, or a
  sentence-transformers, spaCy, Flair... object) and fall back to downloading a default model
  for anything else, so a bare ``phrasekit.load(...)`` is wrapped here. A transformer model
  also leaves as a sentence-transformers folder (``phrasekit export``), which both load as is.
- :class:`KeyphraseRepresentation`: a BERTopic representation model naming each topic with
  phrasekit's keyphrases of its documents (candidates ranked by cosine to the topic's text).
- :class:`PhraseVectorizer`: a scikit-learn ``CountVectorizer`` counting phrasekit's phrases
  (spaCy noun chunks and entities, cleaned) and words, so BERTopic's c-TF-IDF ranks phrases.

The backend classes subclass the libraries' own ``BaseEmbedder``; they are built on first use,
so importing this module needs neither package.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS, CountVectorizer

from phrasekit.encoders.base import Encoder
from phrasekit.phrases.extract import DEFAULT_SPACY_MODEL, PhraseExtractor
from phrasekit.phrases.keyphrases import KeyphraseExtractor
from phrasekit.registry import DEFAULT_MODEL, as_encoder
from phrasekit.text import tokenize


class _Embedder:
    """What the embedding backends add to a library's ``BaseEmbedder``: a phrasekit model
    (a name or folder, an encoder, or an object with ``encode``) behind ``embed``."""

    def __init__(self, model: Encoder | str | Path | Any = DEFAULT_MODEL) -> None:
        self.encoder = as_encoder(model)
        super().__init__(embedding_model=self.encoder)  # type: ignore[call-arg]

    def embed(self, documents: Sequence[str], verbose: bool = False) -> np.ndarray:
        """Unit rows of the phrasekit encoder, in input order."""
        return self.encoder.encode(list(documents), show_progress=bool(verbose))


class _KeyphraseTopics:
    """What :class:`KeyphraseRepresentation` adds to BERTopic's ``BaseRepresentation``: each
    topic's ``top_n`` keyphrases, found by phrasekit's
    :class:`~phrasekit.phrases.keyphrases.KeyphraseExtractor` in the text of up to ``n_docs``
    of its documents (embedded in windows of ``window_words``), scored by cosine to that text.
    A topic without candidates keeps its c-TF-IDF words."""

    def __init__(self, model: Encoder | str | Path | Any = DEFAULT_MODEL, top_n: int = 10,
                 n_docs: int = 50, window_words: int = 128, diversity: float = 0.2) -> None:
        self.model, self.top_n, self.n_docs = model, top_n, n_docs
        self.window_words, self.diversity = window_words, diversity
        self._extractor: KeyphraseExtractor | None = None

    def extractor(self) -> KeyphraseExtractor:
        """The keyphrase extractor (its encoder loaded once)."""
        if self._extractor is None:
            model = self.model if isinstance(self.model, str) else as_encoder(self.model)
            self._extractor = KeyphraseExtractor(
                encoder=model, top_n=self.top_n, diversity=self.diversity,
                doc_window_words=self.window_words, position_weight=0.0)
        return self._extractor

    def extract_topics(self, topic_model: Any, documents: Any, c_tf_idf: Any,
                       topics: Mapping[int, list[tuple[str, float]]]
                       ) -> dict[int, list[tuple[str, float]]]:
        """BERTopic's hook: ``documents`` has columns Document and Topic; ``topics`` holds the
        c-TF-IDF words, kept for a topic without keyphrases."""
        present = set(documents["Topic"])
        ids = [t for t in topics if t in present]
        texts = ["\n".join(documents.loc[documents["Topic"] == t, "Document"].astype(str)
                           .head(self.n_docs)) for t in ids]
        found = self.extractor().extract(texts) if texts else []
        named = {t: [(p, float(s)) for p, s in phrases]
                 for t, phrases in zip(ids, found, strict=True)}
        return {t: named.get(t) or list(words) for t, words in topics.items()}


#: The classes built on first use: name -> (module, base class in it, what phrasekit adds).
LAZY_CLASSES: dict[str, tuple[str, str, type]] = {
    "KeyBERTBackend": ("keybert.backend", "BaseEmbedder", _Embedder),
    "BERTopicBackend": ("bertopic.backend", "BaseEmbedder", _Embedder),
    "KeyphraseRepresentation": ("bertopic.representation", "BaseRepresentation",
                                _KeyphraseTopics),
}


@functools.cache
def _lazy_class(name: str) -> type:
    """A class of :data:`LAZY_CLASSES`: phrasekit's part on the library's base class
    (ImportError naming the extra when the library is absent)."""
    module, base_name, mixin = LAZY_CLASSES[name]
    library = module.split(".")[0]
    try:
        base = getattr(importlib.import_module(module), base_name)
    except ImportError as exc:
        raise ImportError(f"{name} needs {library} (pip install 'phrasekit[bench]')") from exc
    return type(name, (mixin, base), {"__module__": __name__, "__qualname__": name,
                                      "__doc__": f"{mixin.__doc__} (for {library})"})


def __getattr__(name: str) -> Any:
    """``KeyBERTBackend``, ``BERTopicBackend`` and ``KeyphraseRepresentation``, built on first
    use."""
    if name in LAZY_CLASSES:
        return _lazy_class(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class PhraseVectorizer(CountVectorizer):
    """A ``CountVectorizer`` whose terms are phrasekit's phrases (lower-cased, determiners
    stripped: ``PhraseExtractor``) and, with ``words``, the words that are no stopwords, so
    BERTopic's c-TF-IDF (``BERTopic(vectorizer_model=PhraseVectorizer())``) ranks phrases.
    Each text is parsed by spaCy once per ``fit``/``transform``."""

    def __init__(self, words: bool = True, min_df: int | float = 1,
                 max_df: int | float = 1.0, spacy_model: str = DEFAULT_SPACY_MODEL) -> None:
        super().__init__(min_df=min_df, max_df=max_df)
        self.words, self.spacy_model = words, spacy_model

    def _terms(self, texts: Iterable[str]) -> list[list[str]]:
        """Each text's phrases and words; the last texts' are kept (BERTopic calls ``fit``
        then ``transform`` on the same texts)."""
        texts = [str(t) for t in texts]
        last = getattr(self, "_last", None)
        if last is not None and last[0] == texts:
            return last[1]
        phrases = PhraseExtractor(spacy_model=self.spacy_model).extract_texts(texts)
        out = []
        for text, found in zip(texts, phrases, strict=True):
            terms = [key for key, _, _ in found if " " in key]
            if self.words:
                terms += [w for w in tokenize(text.lower())
                          if w.isalpha() and len(w) > 1 and w not in ENGLISH_STOP_WORDS]
            out.append(terms)
        self._last = (texts, out)
        return out

    def fit_transform(self, raw_documents: Iterable[str], y: Any = None) -> Any:
        """Learn the phrase vocabulary and count it (spaCy parses each text once)."""
        self.analyzer = _Lookup(self._terms(raw_documents))
        return super().fit_transform(range(len(self.analyzer.terms)))

    def fit(self, raw_documents: Iterable[str], y: Any = None) -> PhraseVectorizer:
        """Learn the phrase vocabulary."""
        self.fit_transform(raw_documents)
        return self

    def transform(self, raw_documents: Iterable[str]) -> Any:
        """Count the fitted vocabulary's phrases and words in new texts."""
        self.analyzer = _Lookup(self._terms(raw_documents))
        return super().transform(range(len(self.analyzer.terms)))


class _Lookup:
    """The analyzer of :class:`PhraseVectorizer`: document number -> its terms, found before
    scikit-learn counts them."""

    def __init__(self, terms: list[list[str]]) -> None:
        self.terms = terms

    def __call__(self, index: int) -> list[str]:
        return self.terms[index]
