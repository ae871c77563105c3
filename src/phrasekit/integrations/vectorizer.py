"""``PhraseVectorizer``: a scikit-learn ``CountVectorizer`` counting phrasekit's phrases and
words, for BERTopic's c-TF-IDF (``BERTopic(vectorizer_model=PhraseVectorizer())``).

``fit`` finds which phrases the texts use (spaCy's tagger over a sample of their sentences,
:class:`~phrasekit.integrations.phrases.SentencePhrases`), then counts every phrase and word
verbatim in every text by token matching; ``transform`` only counts. With ``consume`` (the
default) the words inside a counted phrase are not counted again, so a phrase competes with
its own words in c-TF-IDF instead of trailing them.

BERTopic saves a vectorizer (``save(..., save_ctfidf=True)``) as the parameters of a plain
``CountVectorizer`` plus the vocabulary, and rebuilds a ``CountVectorizer`` from them on load:
``get_params()`` (deep, what BERTopic reads) gives the parameters of a ``CountVectorizer``
that counts the fitted vocabulary as n-grams (a phrase with punctuation inside may then be
missed); ``get_params(deep=False)`` gives PhraseVectorizer's own settings (``clone``,
``repr``).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.feature_extraction.text import CountVectorizer

from phrasekit.integrations.phrases import PHRASE_WORDS, SentencePhrases, phrase_key
from phrasekit.phrases.extract import DEFAULT_SPACY_MODEL
from phrasekit.text import stop_words, tokenize

logger = logging.getLogger(__name__)

#: The default ``phrase_weight`` and ``min_df``, chosen on bbc_news with MiniLM topics
#: (``benchmarks/topics/bertopic_plugins_dev.py``: the same 46 BERTopic topics named by each
#: setting; c-TF-IDF: NPMI 0.289, 0.6 phrases in a topic's top 10). Weight 5, min_df 1: 7.1
#: phrases, NPMI 0.205 (names of one article, "mr donofrio", reach the top); weight 3: 4.7,
#: 0.280; min_df 2: 5.8, 0.276; **weight 4, min_df 2: 5.0 phrases (3 or more in 96% of
#: topics), NPMI 0.303**; weight 3, min_df 2: 3.8 (72%), 0.346; weight 2: 2.9 (52%), 0.334.
PHRASE_WEIGHT = 4.0
#: The default ``min_df`` ("auto"): a term must be in two of BERTopic's texts (its topics) when
#: there are at least ``AUTO_MIN_DF_TEXTS`` of them; with fewer topics a term of one topic is
#: what names it, so then one is enough.
PHRASE_MIN_DF = 2
AUTO_MIN_DF_TEXTS = 20
#: The token pattern of the plain ``CountVectorizer`` BERTopic rebuilds on load: phrasekit's
#: ``tokenize`` (lower-case letters and digits, inner hyphens and apostrophes).
TOKEN_PATTERN = r"[a-z0-9]+(?:['\-][a-z0-9]+)*"


def _is_word(token: str) -> bool:
    """A token counted as a word: two characters or more, a letter, no stop word."""
    return len(token) > 1 and any(c.isalpha() for c in token) and token not in stop_words()


def count_terms(token_docs: Iterable[Sequence[str]], index: dict[tuple[str, ...], int],
                n_terms: int, consume: bool) -> sp.csr_matrix:
    """Documents x terms counts: at each token, the longest phrase of ``index`` starting there
    (then, with ``consume``, its words are skipped) and the token as a word."""
    lengths = sorted({len(k) for k in index if len(k) > 1}, reverse=True)
    starts = {k[0] for k in index if len(k) > 1}
    indptr, indices, data = [0], [], []
    for toks in token_docs:
        counts: Counter[int] = Counter()
        i, n = 0, len(toks)
        while i < n:
            step = 0
            if toks[i] in starts:
                for m in lengths:
                    j = index.get(tuple(toks[i:i + m])) if i + m <= n else None
                    if j is not None:
                        counts[j] += 1
                        step = m if consume else 0
                        break
            if step:
                i += step
                continue
            j = index.get((toks[i],))
            if j is not None:
                counts[j] += 1
            i += 1
        cols = sorted(counts)
        indices.extend(cols)
        data.extend(counts[c] for c in cols)
        indptr.append(len(indices))
    return sp.csr_matrix((np.asarray(data, dtype=np.int64), np.asarray(indices, np.int32),
                          np.asarray(indptr, np.int64)), shape=(len(indptr) - 1, n_terms))


class PhraseVectorizer(CountVectorizer):
    """Counts of phrasekit's phrases (noun phrases, lower-cased, determiners stripped) and,
    with ``words``, of the words that are no stop words.

    Args:
        words: count words as well as phrases.
        min_df, max_df: as in ``CountVectorizer`` (BERTopic's texts are its topics);
            ``min_df="auto"`` (default): 2 from ``AUTO_MIN_DF_TEXTS`` texts on, else 1.
        spacy_model: the spaCy pipeline whose tagger finds the phrases.
        phrase_words: words of the texts' sentences spaCy reads to find phrases (a seeded
            sample; None: all); every phrase found is then counted in every text.
        consume: the words inside a counted phrase are not counted again.
        phrase_weight: each phrase occurrence counts this much (a word counts 1), so that
            phrases, rarer than their words, reach c-TF-IDF's top terms (default
            ``PHRASE_WEIGHT``).
        random_state: the seed of the sentence sample.
        n_process: spaCy worker processes.
    """

    def __init__(self, words: bool = True, min_df: int | float | str = "auto",
                 max_df: int | float = 1.0, spacy_model: str = DEFAULT_SPACY_MODEL,
                 phrase_words: int | None = PHRASE_WORDS, consume: bool = True,
                 phrase_weight: float = PHRASE_WEIGHT, random_state: int = 0,
                 n_process: int = 1) -> None:
        super().__init__(min_df=min_df, max_df=max_df)
        self.words, self.spacy_model, self.phrase_words = words, spacy_model, phrase_words
        self.consume, self.phrase_weight = consume, phrase_weight
        self.random_state, self.n_process = random_state, n_process

    # ------------------------------------------------------------------ parameters
    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """``deep=False``: PhraseVectorizer's settings. ``deep`` (what BERTopic saves): the
        parameters of a plain ``CountVectorizer`` that counts the fitted vocabulary."""
        own = super().get_params(deep=False)
        if not deep:
            return own
        longest = max((len(t.split()) for t in getattr(self, "vocabulary_", {})), default=6)
        return CountVectorizer(lowercase=True, token_pattern=TOKEN_PATTERN,
                               ngram_range=(1, max(longest, 1)),
                               min_df=1 if self.min_df == "auto" else self.min_df,
                               max_df=self.max_df).get_params()

    def set_params(self, **params: Any) -> PhraseVectorizer:
        """Set PhraseVectorizer's own settings (``get_params(deep=False)``)."""
        own = self.get_params(deep=False)
        for key, value in params.items():
            if key not in own:
                raise ValueError(f"invalid parameter {key!r} for PhraseVectorizer; valid "
                                 f"ones: {sorted(own)}")
            setattr(self, key, value)
        return self

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without the last texts counted (the phrase cache drops its sentences)."""
        state = super().__getstate__()
        state.pop("_last", None)
        return state

    # ------------------------------------------------------------------ fitting
    def _finder(self) -> SentencePhrases:
        finder = getattr(self, "_phrase_finder", None)
        if finder is None or finder.extractor.spacy_model != self.spacy_model:
            finder = SentencePhrases(self.spacy_model, n_process=int(self.n_process))
            self._phrase_finder = finder
        return finder

    def fit_transform(self, raw_documents: Iterable[str], y: Any = None) -> sp.csr_matrix:
        """Find the texts' phrases, count phrases and words, keep those within
        ``min_df``/``max_df`` (columns in term order, like ``CountVectorizer``)."""
        texts = _texts(raw_documents)
        found = self._finder().vocabulary(texts, self.phrase_words, int(self.random_state))
        token_docs = [tokenize(t) for t in texts]
        keys = list(dict.fromkeys(k for k in map(phrase_key, found.phrases) if k))
        if self.words:
            keys += sorted({(t,) for toks in token_docs for t in toks if _is_word(t)})
        index = {k: j for j, k in enumerate(keys)}
        X = count_terms(token_docs, index, len(keys), bool(self.consume))
        kept = self._kept_columns(X)
        if not kept.size:
            raise ValueError("no phrase or word is left: lower min_df or raise max_df")
        terms = sorted((" ".join(keys[j]), j) for j in kept)
        self.vocabulary_ = {t: i for i, (t, _) in enumerate(terms)}
        X = self._weighted(X[:, [j for _, j in terms]].tocsr())
        self._last = (texts, X)
        logger.info("PhraseVectorizer: %d terms (%d phrases) from %d phrases found in %d "
                    "sentences", len(terms), sum(" " in t for t, _ in terms), len(found),
                    len(found.doc_ids))
        return X

    def _kept_columns(self, X: sp.csr_matrix) -> np.ndarray:
        """Columns that occur, in ``min_df`` texts at least and ``max_df`` at most."""
        n = X.shape[0]
        df = np.bincount(X.indices, minlength=X.shape[1])
        min_df = self.min_df
        if min_df == "auto":
            min_df = PHRASE_MIN_DF if n >= AUTO_MIN_DF_TEXTS else 1
        low = min_df if isinstance(min_df, int | np.integer) else min_df * n
        high = self.max_df if isinstance(self.max_df, int | np.integer) else self.max_df * n
        return np.flatnonzero((df >= max(low, 1)) & (df <= high))

    def fit(self, raw_documents: Iterable[str], y: Any = None) -> PhraseVectorizer:
        """Learn the vocabulary of phrases and words."""
        self.fit_transform(raw_documents)
        return self

    def transform(self, raw_documents: Iterable[str]) -> sp.csr_matrix:
        """Count the fitted phrases and words in texts (no spaCy)."""
        self._check_vocabulary()
        texts = _texts(raw_documents)
        last = getattr(self, "_last", None)
        if last is not None and last[0] == texts:
            return last[1]
        index = {tuple(t.split()): j for t, j in self.vocabulary_.items()}
        return self._weighted(count_terms((tokenize(t) for t in texts), index, len(index),
                                          bool(self.consume)))

    def _weighted(self, X: sp.csr_matrix) -> sp.csr_matrix:
        """Counts with the phrase columns times ``phrase_weight`` (as they are at 1)."""
        if float(self.phrase_weight) == 1.0:
            return X
        weights = np.ones(X.shape[1])
        for term, j in self.vocabulary_.items():
            if " " in term:
                weights[j] = float(self.phrase_weight)
        return sp.csr_matrix(X.multiply(weights[None, :]))


def _texts(raw_documents: Iterable[str]) -> list[str]:
    """The texts as strings; a single string is refused (as ``CountVectorizer`` does)."""
    if isinstance(raw_documents, str):
        raise ValueError("Iterable over raw text documents expected, string object received.")
    return [str(t) for t in raw_documents]
