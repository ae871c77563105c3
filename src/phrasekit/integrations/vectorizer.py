"""``PhraseVectorizer``: a scikit-learn ``CountVectorizer`` counting phrasekit's phrases and
words, for BERTopic's c-TF-IDF (``BERTopic(vectorizer_model=PhraseVectorizer())``).

``fit`` finds which phrases the texts use (spaCy's tagger over a sample of their sentences,
:class:`~phrasekit.integrations.phrases.SentencePhrases`), then counts every phrase and word
verbatim in every text by token matching; ``transform`` only counts. A phrase counts
``phrase_weight`` times in a text (a topic) where it occurs at least ``min_phrase_count``
times (``repeat_gap`` tokens apart) and is one of the text's ``max_weighted`` such phrases
of highest count times c-TF-IDF's idf (``term_idf_``, from the fitted texts), once
elsewhere: phrases, rarer than their words, reach c-TF-IDF's top terms
where the topic repeats them, while a phrase of one document does not, and a few phrases do
not crowd out a topic's words. With ``consume`` the words inside a counted phrase are not
counted again.

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
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.feature_extraction.text import CountVectorizer

from phrasekit.errors import check_float, check_int
from phrasekit.integrations.phrases import PHRASE_WORDS, SentencePhrases, phrase_key
from phrasekit.io import LONE_SURROGATE
from phrasekit.phrases.extract import DEFAULT_SPACY_MODEL
from phrasekit.text import TOKEN_PATTERN, stop_words, tokenize

logger = logging.getLogger(__name__)

#: The defaults ``phrase_weight``, ``min_phrase_count``, ``max_weighted``, ``consume`` and
#: ``min_df``, chosen on the three development corpora with MiniLM topics
#: (``benchmarks/topics/bertopic_plugins_dev.py``: the same BERTopic topics named by each
#: setting; NPMI on bbc_news / restaurant reviews / ag_news_test, phrases in a bbc_news topic's
#: top 10; docs/benchmarks.md): c-TF-IDF 0.304 / -0.595 / 0.150, 0.7; not consuming, floor 3,
#: weight 5, every phrase weighted 0.333 / -0.444 / 0.067, 5.2 (3 or more in 98% of topics);
#: the 3 / 4 / 5 most frequent weighted 0.361 / 0.351 / 0.351 on bbc_news (83% / 98% / 98%)
#: and 0.135 / 0.124 / 0.103 on ag_news_test; **4 at weight 6: 0.349 / -0.444 / 0.123, 3.7
#: (100%)**. Phrases naming one short document ("new york yankees" in one game's report) are
#: what the floor keeps out; the cap keeps a topic's words beside its phrases.
PHRASE_WEIGHT = 6.0
PHRASE_MIN_COUNT = 3
PHRASE_MAX_WEIGHTED = 4
#: The default ``repeat_gap``: a phrase's occurrences within this many tokens of its previous
#: one are taken as one document's repeats and count once toward ``min_phrase_count``, so a
#: phrase that one abstract or article repeats is not weighted in its topic. NPMI with gaps
#: none / 100 / **200** / 400 (``bertopic_plugins_dev.py``): bbc_news 0.349 / 0.358 / 0.366 /
#: 0.369 (3 phrases or more in 100 / 100 / 100 / 93% of topics), ag_news_test 0.123 / 0.132 /
#: 0.126 / 0.132, reviews -0.444 / -0.446 / -0.447 / -0.445, and on GloVe topics arXiv -0.314 /
#: -0.231 / -0.211 / -0.206, 20newsgroups 0.030 / 0.052 / 0.056 / 0.058.
PHRASE_REPEAT_GAP = 200
#: The default ``min_df`` ("auto"): when there are at least ``AUTO_MIN_DF_TEXTS`` of BERTopic's
#: texts (its topics), a term must be in two of them, or run through the one text that holds
#: it: occur in ``SPREAD_MIN`` of its ``SPREAD_STRETCHES`` equal stretches, so that a topic's
#: own name ("fannie mae" in 40-word snippets) is kept and a term one of its documents repeats
#: ("ybcu4" in one abstract) is not; with fewer topics a term of one topic is what names it,
#: so then one text is enough. NPMI on bbc_news / reviews / ag_news_test (MiniLM topics) and
#: arXiv / 20newsgroups (GloVe topics), ``bertopic_plugins_dev.py``: two texts 0.390 / -0.425
#: / 0.121 / -0.174 / 0.082; one text 0.392 / -0.477 / 0.163 / -0.217 / 0.068; two, or in one
#: 3 / 4 / 5 of 10 stretches 0.405 / -0.450 / 0.167 / -0.178 / 0.087, 0.411 / -0.424 / 0.167 /
#: -0.174 / 0.085, 0.411 / -0.421 / 0.154 / -0.174 / 0.084; **5 of 20: 0.413 / -0.422 / 0.167
#: / -0.174 / 0.085** (c-TF-IDF 0.342 / -0.566 / 0.165 / -0.147 / -0.001).
PHRASE_MIN_DF = 2
AUTO_MIN_DF_TEXTS = 20
SPREAD_STRETCHES = 20
SPREAD_MIN = 5


def _is_word(token: str) -> bool:
    """A token counted as a word: two characters or more, a letter, no stop word."""
    return len(token) > 1 and any(c.isalpha() for c in token) and token not in stop_words()


def count_terms(token_docs: Iterable[Sequence[str]], index: dict[tuple[str, ...], int],
                n_terms: int, consume: bool) -> sp.csr_matrix:
    """Documents x terms counts: at each token, the longest phrase of ``index`` starting there
    (then, with ``consume``, its words are skipped) and the token as a word."""
    return count_terms_and_runs(token_docs, index, n_terms, consume, None)[0]


def count_terms_and_runs(token_docs: Iterable[Sequence[str]],
                         index: dict[tuple[str, ...], int], n_terms: int, consume: bool,
                         gap: int | None, stretches: int | None = None
                         ) -> tuple[sp.csr_matrix, sp.csr_matrix | None, sp.csr_matrix | None]:
    """``count_terms``' counts; with a ``gap``, the same entries' runs: occurrences more than
    ``gap`` tokens after the term's previous one start a new run, so that one document's
    repeats inside a topic's joined documents count once; with ``stretches``, in how many of
    the document's that many equal stretches each term occurs."""
    lengths = sorted({len(k) for k in index if len(k) > 1}, reverse=True)
    starts = {k[0] for k in index if len(k) > 1}
    indptr, indices, data, run_data, spread_data = [0], [], [], [], []
    for toks in token_docs:
        counts: Counter[int] = Counter()
        runs: Counter[int] = Counter()
        last: dict[int, int] = {}
        parts: dict[int, set[int]] = {}
        for j, at in _occurrences(toks, index, lengths, starts, consume):
            counts[j] += 1
            if gap is not None:
                runs[j] += j not in last or at - last[j] > gap
                last[j] = at
            if stretches is not None:
                parts.setdefault(j, set()).add(at * stretches // len(toks))
        cols = sorted(counts)
        indices.extend(cols)
        data.extend(counts[c] for c in cols)
        run_data.extend(runs[c] for c in cols)
        spread_data.extend(len(parts.get(c, ())) for c in cols)
        indptr.append(len(indices))
    shape = (len(indptr) - 1, n_terms)
    cols_, ptr = np.asarray(indices, np.int32), np.asarray(indptr, np.int64)

    def matrix(values: list[int]) -> sp.csr_matrix:
        return sp.csr_matrix((np.asarray(values, dtype=np.int64), cols_.copy(), ptr.copy()),
                             shape=shape)

    return (matrix(data), matrix(run_data) if gap is not None else None,
            matrix(spread_data) if stretches is not None else None)


def _occurrences(toks: Sequence[str], index: dict[tuple[str, ...], int], lengths: list[int],
                 starts: set[str], consume: bool) -> Iterator[tuple[int, int]]:
    """(term, token position) of each counted occurrence in one document."""
    i, n = 0, len(toks)
    while i < n:
        step = 0
        if toks[i] in starts:
            for m in lengths:
                j = index.get(tuple(toks[i:i + m])) if i + m <= n else None
                if j is not None:
                    yield j, i
                    step = m if consume else 0
                    break
        if step:
            i += step
            continue
        j = index.get((toks[i],))
        if j is not None:
            yield j, i
        i += 1


class PhraseVectorizer(CountVectorizer):
    """Counts of phrasekit's phrases (noun phrases, lower-cased, determiners stripped) and,
    with ``words``, of the words that are no stop words.

    Args:
        words: count words as well as phrases.
        min_df, max_df: as in ``CountVectorizer`` (BERTopic's texts are its topics);
            ``min_df="auto"`` (default): from ``AUTO_MIN_DF_TEXTS`` texts on, 2, or 1 where
            the term occurs in ``SPREAD_MIN`` of that text's ``SPREAD_STRETCHES`` equal
            stretches (a topic's name, not one document's word); else 1.
        spacy_model: the spaCy pipeline whose tagger finds the phrases.
        phrase_words: words of the texts' sentences spaCy reads to find phrases (a seeded
            sample; None: all); every phrase found is then counted in every text.
        consume: the words inside a counted phrase are not counted again.
        phrase_weight: each phrase occurrence counts this much (a word counts 1), so that
            phrases, rarer than their words, reach c-TF-IDF's top terms (default
            ``PHRASE_WEIGHT``) ...
        min_phrase_count: ... in a text where the phrase occurs at least this many times
            (elsewhere it counts 1; default ``PHRASE_MIN_COUNT``), each more than
            ``repeat_gap`` tokens after the one before it ...
        max_weighted: ... and is one of the text's this many such phrases that are most
            frequent there for their frequency in all texts (count times c-TF-IDF's idf over
            the fitted texts; default ``PHRASE_MAX_WEIGHTED``; None: all of them).
        repeat_gap: occurrences within this many tokens of the phrase's previous one count
            once toward ``min_phrase_count``: BERTopic's texts are a topic's documents
            joined, and one document's repeats say little about the topic (default
            ``PHRASE_REPEAT_GAP``; None: every occurrence counts).
        random_state: the seed of the sentence sample.
        n_process: spaCy worker processes.
    """

    #: What a vectorizer pickled before these settings existed does: weight every phrase.
    min_phrase_count: int = 1
    max_weighted: int | None = None
    repeat_gap: int | None = None
    #: A vectorizer fitted before ``term_idf_`` existed ranks a text's phrases by count.
    term_idf_: np.ndarray | None = None

    def __init__(self, words: bool = True, min_df: int | float | str = "auto",
                 max_df: int | float = 1.0, spacy_model: str = DEFAULT_SPACY_MODEL,
                 phrase_words: int | None = PHRASE_WORDS, consume: bool = False,
                 phrase_weight: float = PHRASE_WEIGHT,
                 min_phrase_count: int = PHRASE_MIN_COUNT,
                 max_weighted: int | None = PHRASE_MAX_WEIGHTED,
                 repeat_gap: int | None = PHRASE_REPEAT_GAP, random_state: int = 0,
                 n_process: int = 1) -> None:
        super().__init__(min_df=min_df, max_df=max_df)
        self.words, self.spacy_model, self.phrase_words = words, spacy_model, phrase_words
        self.consume, self.phrase_weight = consume, phrase_weight
        self.min_phrase_count, self.max_weighted = min_phrase_count, max_weighted
        self.repeat_gap = repeat_gap
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
        check_settings(self)
        texts = _texts(raw_documents)
        if not any(t.strip() for t in texts):
            raise ValueError(f"the {len(texts)} texts are empty: there is nothing to count")
        found = self._finder().vocabulary(texts, self.phrase_words, int(self.random_state))
        token_docs = [tokenize(t) for t in texts]
        keys = list(dict.fromkeys(k for k in map(phrase_key, found.phrases) if k))
        if self.words:
            keys += sorted({(t,) for toks in token_docs for t in toks if _is_word(t)})
        index = {k: j for j, k in enumerate(keys)}
        X, runs, spread = self._count(token_docs, index, len(keys), self.min_df == "auto")
        kept = self._kept_columns(X, spread)
        if not kept.size:
            raise ValueError("no phrase or word is left: lower min_df or raise max_df")
        terms = sorted((" ".join(keys[j]), j) for j in kept)
        self.vocabulary_ = {t: i for i, (t, _) in enumerate(terms)}
        if any(len(k) > 1 for k in set(keys) - {keys[j] for j in kept}):
            # a dropped phrase took its tokens from the phrases and words inside it: count
            # again with the kept terms alone, as transform does
            index = {tuple(t.split()): i for i, (t, _) in enumerate(terms)}
            X, runs, _ = self._count(token_docs, index, len(index))
        else:
            cols = [j for _, j in terms]
            X, runs = X[:, cols].tocsr(), None if runs is None else runs[:, cols].tocsr()
        self.term_idf_ = ctfidf_idf(X)
        X = self._weighted(X, runs)
        self._last = (texts, self.get_params(deep=False), X)
        logger.info("PhraseVectorizer: %d terms (%d phrases) from %d phrases found in %d "
                    "sentences", len(terms), sum(" " in t for t, _ in terms), len(found),
                    len(found.doc_ids))
        return X

    def _kept_columns(self, X: sp.csr_matrix, spread: sp.csr_matrix | None) -> np.ndarray:
        """Columns that occur, in ``min_df`` texts at least (``"auto"``: see the class) and
        ``max_df`` at most."""
        n = X.shape[0]
        df = np.bincount(X.indices, minlength=X.shape[1])
        high = self.max_df if isinstance(self.max_df, int | np.integer) else self.max_df * n
        if self.min_df == "auto":
            low = df >= (PHRASE_MIN_DF if n >= AUTO_MIN_DF_TEXTS else 1)
            if n >= AUTO_MIN_DF_TEXTS and spread is not None:
                low |= (df == 1) & (spread.max(axis=0).toarray().ravel() >= SPREAD_MIN)
        else:
            low = df >= max(self.min_df if isinstance(self.min_df, int | np.integer)
                            else self.min_df * n, 1)
        return np.flatnonzero(low & (df <= high))

    def fit(self, raw_documents: Iterable[str], y: Any = None) -> PhraseVectorizer:
        """Learn the vocabulary of phrases and words."""
        self.fit_transform(raw_documents)
        return self

    def transform(self, raw_documents: Iterable[str]) -> sp.csr_matrix:
        """Count the fitted phrases and words in texts (no spaCy)."""
        self._check_vocabulary()
        texts = _texts(raw_documents)
        last = getattr(self, "_last", None)
        if last is not None and last[0] == texts and last[1] == self.get_params(deep=False):
            return last[2].copy()  # the caller (BERTopic's c-TF-IDF) may scale it in place
        index = {tuple(t.split()): j for t, j in self.vocabulary_.items()}
        X, runs, _ = self._count((tokenize(t) for t in texts), index, len(index))
        return self._weighted(X, runs)

    def _count(self, token_docs: Iterable[Sequence[str]], index: dict[tuple[str, ...], int],
               n_terms: int, spread: bool = False
               ) -> tuple[sp.csr_matrix, sp.csr_matrix | None, sp.csr_matrix | None]:
        """Counts, runs where the weight needs them and, with ``spread``, stretches
        (``count_terms_and_runs``)."""
        weighted = float(self.phrase_weight) != 1.0 and self.repeat_gap is not None
        return count_terms_and_runs(token_docs, index, n_terms, bool(self.consume),
                                    int(self.repeat_gap) if weighted else None,
                                    SPREAD_STRETCHES if spread else None)

    def _weighted(self, X: sp.csr_matrix, runs: sp.csr_matrix | None = None) -> sp.csr_matrix:
        """Counts with each phrase count of at least ``min_phrase_count`` (in as many runs
        when ``runs`` is given; of a text's ``max_weighted`` such phrases of highest count
        times ``term_idf_``) times ``phrase_weight`` (as they are at weight 1)."""
        if float(self.phrase_weight) == 1.0:
            return X
        phrase = np.zeros(X.shape[1], dtype=bool)
        for term, j in self.vocabulary_.items():
            phrase[j] = " " in term
        X = sp.csr_matrix(X).astype(np.float64)  # a copy: the caller's counts stay
        repeated = X.data if runs is None else _aligned(X, runs)
        boost = phrase[X.indices] & (repeated >= int(self.min_phrase_count))
        if self.max_weighted is not None:
            idf = self.term_idf_
            rank = X.data if idf is None or len(idf) != X.shape[1] else X.data * idf[X.indices]
            boost = _most_frequent(X, boost, int(self.max_weighted), rank)
        X.data = np.where(boost, X.data * float(self.phrase_weight), X.data)
        return X


def _aligned(X: sp.csr_matrix, other: sp.csr_matrix) -> np.ndarray:
    """``other``'s values at ``X``'s stored entries (both hold the same entries; ``X``'s
    column indices sorted in place)."""
    X.sort_indices()
    other = other.sorted_indices()
    if other.nnz != X.nnz or not (np.array_equal(other.indptr, X.indptr)
                                  and np.array_equal(other.indices, X.indices)):
        raise ValueError("runs and counts hold different entries")
    return other.data


def ctfidf_idf(X: sp.csr_matrix) -> np.ndarray:
    """BERTopic's c-TF-IDF idf of each column of counts ``X`` (texts x terms):
    ``log(1 + A / f)``, ``A`` the mean count per text, ``f`` the column's count in all texts.
    A text's phrases are weighted by count times this, so that a phrase every topic repeats
    ("last year") does not take the place of one its own topic repeats."""
    total = np.asarray(X.sum(axis=0), dtype=np.float64).ravel()
    mean = float(total.sum()) / max(X.shape[0], 1)
    return np.log1p(mean / np.maximum(total, 1.0))


def _most_frequent(X: sp.csr_matrix, chosen: np.ndarray, most: int,
                   values: np.ndarray | None = None) -> np.ndarray:
    """``chosen`` (a mask over ``X``'s stored entries) kept only at each row's ``most``
    largest chosen ``values`` (default: the counts; ties: the earlier column)."""
    cand = np.flatnonzero(chosen)
    if not cand.size:
        return chosen
    rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))[cand]
    order = np.lexsort((-(X.data if values is None else values)[cand], rows))
    rows = rows[order]
    first = np.r_[0, np.flatnonzero(np.diff(rows)) + 1]
    rank = np.arange(cand.size) - np.repeat(first, np.diff(np.r_[first, cand.size]))
    kept = chosen.copy()
    kept[cand[order][rank >= most]] = False
    return kept


def _texts(raw_documents: Iterable[str]) -> list[str]:
    """The texts; a single string is refused (as ``CountVectorizer`` does), and so is an
    item that is not a string (None, NaN, bytes, a number), by its position."""
    if isinstance(raw_documents, str):
        raise ValueError("Iterable over raw text documents expected, string object received.")
    texts = list(raw_documents)
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise TypeError(f"raw_documents[{i}] is {type(t).__name__}, not str: {t!r:.40}")
        if LONE_SURROGATE.search(t):
            raise ValueError(f"raw_documents[{i}] holds a lone surrogate, which is not a "
                             "character; fix the text's decoding")
    return [str(t) for t in texts]  # NumPy strings as plain ones


def check_settings(v: PhraseVectorizer) -> None:
    """The vectorizer's settings, checked when it fits (``TypeError`` / ``ValueError`` naming
    the setting): the counts and weights go straight into BERTopic's c-TF-IDF."""
    check_float("phrase_weight", v.phrase_weight, 0.0, None)
    if v.phrase_weight == 0:
        raise ValueError("phrase_weight must be > 0 (1: a phrase counts as a word), got 0")
    check_int("min_phrase_count", v.min_phrase_count, 1)
    for name, lo in (("max_weighted", 1), ("repeat_gap", 0), ("phrase_words", 1)):
        if getattr(v, name) is not None:
            check_int(name, getattr(v, name), lo)
    check_int("n_process", v.n_process, 1)
    for name, value in (("min_df", v.min_df), ("max_df", v.max_df)):
        if name == "min_df" and value == "auto":
            continue
        if isinstance(value, float):
            check_float(name, value, 0.0, 1.0)
        else:
            check_int(name, value, 1)
