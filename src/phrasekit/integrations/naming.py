"""What :class:`~phrasekit.integrations.KeyphraseRepresentation` adds to BERTopic's
``BaseRepresentation``: topic names read from BERTopic's topic assignment the way phrasekit's
documents topic method reads its own topics.

1. The words and phrases of the documents (``terms.build_term_vocabulary``: words and noun
   phrases in at least ``min_df`` documents, words in at most ``max_df`` of them; phrases
   found by spaCy's tagger in a sample of sentences holding ``phrase_words`` words, then
   matched verbatim in every document).
2. Each topic's terms scored ``p_in * log(p_in / p_all)`` (``reading.topic_term_scores``:
   frequent in the topic's documents, rarer elsewhere) and ranked, words and phrases together,
   without near repeats (``reading.rank_terms``).

No document is embedded and spaCy reads only the sample, so naming costs seconds. With
``keyphrases=True`` a topic is named by phrasekit's keyphrases of the text of up to ``n_docs``
of its documents instead (embedded in windows of ``window_words``; slower by far).
A topic without terms keeps its c-TF-IDF words.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from phrasekit.encoders.base import Encoder
from phrasekit.errors import check_float, check_int
from phrasekit.integrations.phrases import PHRASE_WORDS, SentencePhrases
from phrasekit.phrases.extract import DEFAULT_SPACY_MODEL
from phrasekit.phrases.keyphrases import KeyphraseExtractor
from phrasekit.registry import DEFAULT_MODEL, as_encoder
from phrasekit.text import TokenDocs
from phrasekit.topics.core.reading import rank_terms, topic_term_scores
from phrasekit.topics.core.terms import build_term_vocabulary, presence_matrix

logger = logging.getLogger(__name__)

Named = dict[int, list[tuple[str, float]]]


class TopicTerms:
    """Topic names from phrasekit's words-and-phrases term matrix (see the module).

    Args:
        model: the encoder of ``keyphrases=True`` (unused otherwise).
        top_n: terms per topic.
        keyphrases: name topics by keyphrases of their documents (the former default).
        min_df, max_df, max_phrases: the term vocabulary (``build_term_vocabulary``).
        phrase_words: words of sentences spaCy reads to find phrases (None: all).
        random_state: the seed of that sample.
        spacy_model: the spaCy pipeline whose tagger finds phrases.
        n_docs, window_words, diversity: the keyphrase option's settings.
    """

    def __init__(self, model: Encoder | str | Path | Any = DEFAULT_MODEL, top_n: int = 10,
                 n_docs: int = 50, window_words: int = 128, diversity: float = 0.2,
                 keyphrases: bool = False, min_df: int = 5, max_df: float = 0.5,
                 max_phrases: int = 20_000, phrase_words: int | None = PHRASE_WORDS,
                 random_state: int = 0, spacy_model: str = DEFAULT_SPACY_MODEL) -> None:
        self.model, self.top_n, self.n_docs = model, top_n, n_docs
        self.window_words, self.diversity, self.keyphrases = window_words, diversity, keyphrases
        self.min_df, self.max_df, self.max_phrases = min_df, max_df, max_phrases
        self.phrase_words, self.random_state = phrase_words, random_state
        self.spacy_model = spacy_model
        for name, lo in (("top_n", 1), ("n_docs", 1), ("window_words", 1), ("min_df", 1),
                         ("max_phrases", 1)):
            check_int(name, getattr(self, name), lo)
        check_float("max_df", max_df, 0.0, 1.0)
        if max_df == 0:
            raise ValueError("max_df must be in (0, 1], got 0")
        check_float("diversity", diversity, 0.0, 1.0)
        if phrase_words is not None:
            check_int("phrase_words", phrase_words, 1)
        self._extractor: KeyphraseExtractor | None = None
        self._finder: SentencePhrases | None = None

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without the loaded keyphrase extractor (rebuilt on use)."""
        state = dict(super().__getstate__() or self.__dict__)  # type: ignore[misc]
        return {**state, "_extractor": None}

    def extractor(self) -> KeyphraseExtractor:
        """The keyphrase extractor (its encoder loaded once)."""
        if self._extractor is None:
            model = self.model if isinstance(self.model, str) else as_encoder(self.model)
            self._extractor = KeyphraseExtractor(
                encoder=model, top_n=self.top_n, diversity=self.diversity,
                doc_window_words=self.window_words, position_weight=0.0)
        return self._extractor

    def extract_topics(self, topic_model: Any, documents: Any, c_tf_idf: Any,
                       topics: Mapping[int, list[tuple[str, float]]]) -> Named:
        """BERTopic's hook: ``documents`` has columns Document and Topic; ``topics`` holds the
        c-TF-IDF words, kept for a topic without terms."""
        named = self._keyphrase_names(documents, topics) if self.keyphrases \
            else self._term_names(documents, topics)
        return {t: named.get(t) or list(words) for t, words in topics.items()}

    def _term_names(self, documents: Any, topics: Mapping[int, Any]) -> Named:
        """Each topic's ``top_n`` words and phrases by ``p_in * log(p_in / p_all)``."""
        texts = document_texts(documents["Document"])
        ids = sorted(topics)
        row = {t: i for i, t in enumerate(ids)}
        labels = np.asarray([row.get(int(t), -1) for t in documents["Topic"]], dtype=np.int64)
        if self._finder is None or self._finder.extractor.spacy_model != self.spacy_model:
            self._finder = SentencePhrases(self.spacy_model)
        phrases = self._finder.vocabulary(texts, self.phrase_words, int(self.random_state))
        token_docs = TokenDocs(texts)
        min_df = max(1, min(int(self.min_df), len(texts) // 20))
        try:
            vocab = build_term_vocabulary(token_docs, phrases, min_df, float(self.max_df),
                                          int(self.max_phrases))
        except ValueError as exc:  # too few documents for the vocabulary's floor
            logger.warning("topics keep their c-TF-IDF words: %s", exc)
            return {}
        P = presence_matrix(token_docs, vocab.terms, format="csr")
        scores = topic_term_scores(P, labels, len(ids))
        ranked = rank_terms(scores, vocab.terms, int(self.top_n))
        logger.info("named %d topics from %d terms (%d phrases) of %d documents", len(ids),
                    len(vocab), len(vocab.phrases), len(texts))
        return {t: [(vocab.surface[j], float(scores[i, j])) for j in ranked[i]]
                for i, t in enumerate(ids)}

    def _keyphrase_names(self, documents: Any, topics: Mapping[int, Any]) -> Named:
        """Each topic's keyphrases in the text of up to ``n_docs`` of its documents."""
        present = set(documents["Topic"])
        named = {t: "\n".join(document_texts(documents.loc[documents["Topic"] == t, "Document"]
                                             .head(self.n_docs))) for t in topics if t in present}
        # a topic of blank documents has no keyphrases: it keeps its c-TF-IDF words
        ids = [t for t, text in named.items() if text.strip()]
        texts = [named[t] for t in ids]
        found = self.extractor().extract(texts) if texts else []
        return {t: [(p, float(s)) for p, s in phrases]
                for t, phrases in zip(ids, found, strict=True)}


def document_texts(column: Any) -> list[str]:
    """A frame column of documents as texts; a missing one (None, NaN) is an empty text,
    logged, rather than the text "None"."""
    texts = [d if isinstance(d, str) else "" for d in column]
    missing = sum(1 for d in column if not isinstance(d, str))
    if missing:
        logger.warning("%d documents are not texts (None, NaN, ...): read as empty", missing)
    return texts
