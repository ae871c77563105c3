"""Topic labels a reader can trust: one rule for every topic method.

``name_topics`` names each topic from its ranked terms (best first, as the method ranks them)
and the documents the method placed in it:

- **Debris never names a topic.** A term is left out of a label when one of its tokens is a
  function word (spaCy's English stop words: "we", "our", "also"), a number, a unit (MeV,
  Myr, km, %) or a citation fragment ("et al", "Phys. Rev. Lett", "Fig"): the last two from
  the short lists below, patterns of scientific and technical prose rather than words of any
  corpus. A single word must also be a noun: the head (last word) of one of the corpus' noun
  phrases (spaCy's part-of-speech patterns found them), or tagged a noun or proper noun by
  spaCy's tagger; a bare verb ("prove", "propose") or a loose adjective ("new", "good") never
  names a topic.
- **Only distinctive terms name a topic.** A term names topic ``t`` only if the share of
  ``t``'s documents containing it is at least ``MIN_LIFT`` times its share of all documents,
  and it is not spread over the topics: boilerplate ("paper", "results", "said") is used in
  most topics at about its corpus rate, so a term found at half its corpus rate or more in at
  least ``MAX_SPREAD`` of the topics names none (with at least ``MIN_SPREAD_TOPICS``
  topics), whatever the corpus.
- **A distinctive phrase before loose words**: the first of the topic's best clean phrases
  (at most ``LABEL_PHRASES``) containing its best clean term ("black hole" for "hole"), else
  its two best clean terms.
- **Mixed topics are flagged**, never passed off as subjects: a topic with no distinctive
  clean term is labelled "mixed" in every output. (A coherence test was tried and is not used:
  NPMI of the top ten terms below 0 flagged every topic of 13-word reviews, where most pairs
  of terms never meet; 0.1 below the median topic's flagged 8 of 20 20newsgroups topics, "car,
  bike" and "doctor, treatment" among them, and missed the demo's catch-all topic.)
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from phrasekit.text import tokenize
from phrasekit.topics.core.terms import presence_matrix

#: A term names a topic only if its documents are this many times more frequent in the topic
#: than in the corpus.
MIN_LIFT = 2.0
#: A term used at half its corpus rate or more in at least this share of the topics is
#: boilerplate ...
MAX_SPREAD = 0.5
#: ... when there are at least this many topics.
MIN_SPREAD_TOPICS = 4
#: A topic is named by the first of this many best clean phrases that contains its best term.
LABEL_PHRASES = 3
#: Terms of each topic (best first) read for its label where a caller ranks them itself.
CANDIDATES = 20
#: Citation fragments (lower-cased tokens).
CITATION_TOKENS = frozenset({
    "al", "et", "ibid", "rev", "lett", "phys", "astrophys", "proc", "fig", "figs", "eq", "eqs",
    "ref", "refs", "pp", "vol", "arxiv", "doi", "http", "https", "www"})
#: Units and unit-like tokens (lower-cased).
UNIT_TOKENS = frozenset({
    "ev", "kev", "mev", "gev", "tev", "hz", "khz", "mhz", "ghz", "thz", "km", "kg", "mg", "cm",
    "mm", "nm", "um", "μm", "pc", "kpc", "mpc", "gpc", "yr", "kyr", "myr", "gyr", "au", "kpa",
    "mpa", "gpa", "kw", "mw", "gw", "kwh", "mph", "kph", "lb", "lbs", "oz", "ft", "percent",
    "%", "dB", "db", "mb", "gb", "tb", "kb", "ms", "ns"})
#: Parts of speech of a word that may name a topic on its own.
NOUN_TAGS = frozenset({"NOUN", "PROPN"})
_NUMBER = re.compile(r"^[\d.,/%+-]+[a-z%]{0,3}$")


@dataclass(frozen=True)
class TopicName:
    """A topic's label and whether the topic is mixed (no one subject)."""

    label: str
    mixed: bool

    def text(self, miscellaneous: bool = False) -> str:
        """The label as outputs show it: "miscellaneous (...)" or "mixed (...)" when flagged."""
        flag = "miscellaneous" if miscellaneous else "mixed" if self.mixed else ""
        if not flag:
            return self.label
        return f"{flag} ({self.label})" if self.label else flag


def _stop_words() -> frozenset[str]:
    from spacy.lang.en.stop_words import STOP_WORDS

    return frozenset(STOP_WORDS)


def debris_token(token: str, stop_words: frozenset[str]) -> bool:
    """Whether ``token`` (lower-cased) is a function word, number, unit or citation
    fragment."""
    return (token in stop_words or token in CITATION_TOKENS or token in UNIT_TOKENS
            or bool(_NUMBER.match(token)) or len(token) < 2)


def candidates(topics: Sequence[Sequence[tuple[str, float]]],
               phrases: Sequence[Sequence[tuple[str, float]]]) -> list[list[str]]:
    """Per topic, the terms ``name_topics`` reads: its ranked terms, then its ranked phrases
    (``topics_`` and ``topic_phrases_`` of a fitted model)."""
    return [[w for w, _ in ranked] + [p for p, _ in phr]
            for ranked, phr in zip(topics, phrases, strict=True)]


def name_topics(terms: Sequence[Sequence[str]], doc_labels: np.ndarray,
                token_docs: Sequence[Sequence[str]], phrases: Iterable[str] = ()
                ) -> list[TopicName]:
    """Each topic's :class:`TopicName` by the rules of this module. ``terms``: per topic, its
    ranked terms (surfaces; ``candidates``: its terms, then its phrases, so that a phrase
    ranked below many words is still read); ``doc_labels``: each document's topic (-1: none);
    ``token_docs``: the documents' tokens; ``phrases``: the multi-word noun phrases the
    method knows (their heads are the nouns a single-word label may use)."""
    stop = _stop_words()
    tops = [list(dict.fromkeys(t)) for t in terms]
    keys = sorted({" ".join(tokenize(t)) for top in tops for t in top} - {""})
    nouns = {_singular(tokens[-1]) for tokens in map(tokenize, phrases) if tokens}
    nouns |= _tagged_nouns([k for k in keys if " " not in k and _singular(k) not in nouns])
    labels = np.asarray(doc_labels)
    k = len(terms)
    col = {key: j for j, key in enumerate(keys)}
    lift = _lift(keys, labels, k, token_docs)
    if k >= MIN_SPREAD_TOPICS:
        spread = (lift >= 0.5).mean(axis=0)
        lift[:, spread >= MAX_SPREAD] = 0.0
    keyed = [[" ".join(tokenize(term)) for term in top] for top in tops]
    names = []
    for t, top in enumerate(tops):
        clean = [term for term, key in zip(top, keyed[t], strict=True)
                 if key and lift[t, col[key]] >= MIN_LIFT and _clean(key, stop, nouns)]
        label = _label(clean)
        names.append(TopicName(label, not clean))
    return names


def _lift(keys: list[str], labels: np.ndarray, k: int, token_docs: Sequence[Sequence[str]]
          ) -> np.ndarray:
    """(k, len(keys)): the share of each topic's documents holding the term over its share of
    all placed documents (0 for a term in none)."""
    lift = np.zeros((k, len(keys)))
    member = labels >= 0
    if not keys or not member.any():
        return lift
    P = presence_matrix(token_docs, keys, format="csr")
    p_all = np.asarray(P[member].mean(axis=0)).ravel()
    for t in range(k):
        rows = labels == t
        if rows.any():
            p_in = np.asarray(P[rows].mean(axis=0)).ravel()
            lift[t] = np.divide(p_in, p_all, out=np.zeros_like(p_in), where=p_all > 0)
    return lift


def _tagged_nouns(words: list[str]) -> set[str]:
    """The ``words`` spaCy's tagger (the pipeline phrasekit extracts phrases with) reads as a
    noun or proper noun on their own (singular forms)."""
    if not words:
        return set()
    from phrasekit.phrases.extract import load_spacy

    nlp = load_spacy(exclude=("lemmatizer", "parser", "ner"))
    return {_singular(w) for w, doc in zip(words, nlp.pipe(words), strict=True)
            if len(doc) == 1 and doc[0].pos_ in NOUN_TAGS}


def _clean(key: str, stop: frozenset[str], nouns: set[str]) -> bool:
    """No debris token, and a single word only if it heads a noun phrase."""
    tokens = key.split()
    if any(debris_token(tok, stop) for tok in tokens):
        return False
    return len(tokens) > 1 or _singular(tokens[0]) in nouns


def _singular(word: str) -> str:
    """``word`` without a plural ending ("galaxies" and "galaxy" alike)."""
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    return word[:-1] if word.endswith("s") and not word.endswith("ss") else word


def _label(clean: list[str]) -> str:
    """The best clean term when it is a phrase, else the first of the best few clean phrases
    that contains it, else the two best clean terms."""
    if not clean:
        return ""
    best = tokenize(clean[0])
    phrases = [p for p in clean if len(tokenize(p)) > 1][:LABEL_PHRASES]
    with_best = [p for p in phrases if _contains(tokenize(p), best)]
    return with_best[0] if with_best else ", ".join(clean[:2])


def _contains(tokens: list[str], part: list[str]) -> bool:
    """Whether ``part`` occurs as a contiguous run in ``tokens``."""
    n = len(part)
    return any(tokens[i : i + n] == part for i in range(len(tokens) - n + 1))
