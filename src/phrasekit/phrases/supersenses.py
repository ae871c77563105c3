"""WordNet noun supersenses of phrases: a semantic-category label with no annotation needed.

WordNet files every noun synset under one of 26 lexicographer files ("supersenses"):
``noun.person``, ``noun.location``, ``noun.substance``, ``noun.state`` (diseases), ``noun.artifact``
(drugs, devices), ... :class:`SupersenseLexicon` reads them from the shared WordNet TSV and gives a
phrase the *distribution* of supersenses over the noun senses of its head word (a lemma's senses
are not ranked by frequency in that TSV, so an ambiguous head spreads its mass evenly).

PEARL uses it as a second auxiliary head next to the spaCy phrase type (``--supersense-weight``):
spaCy's 18 entity types say nothing about chemicals versus diseases, or about most common nouns,
whereas the supersense of the head does, for any phrase whose head WordNet knows.
"""

from __future__ import annotations

import gzip
import logging
import re
from collections import Counter
from pathlib import Path

import numpy as np

logger = logging.getLogger(__name__)

NOUN_SUPERSENSES: tuple[str, ...] = (
    "noun.Tops", "noun.act", "noun.animal", "noun.artifact", "noun.attribute", "noun.body",
    "noun.cognition", "noun.communication", "noun.event", "noun.feeling", "noun.food",
    "noun.group", "noun.location", "noun.motive", "noun.object", "noun.person",
    "noun.phenomenon", "noun.plant", "noun.possession", "noun.process", "noun.quantity",
    "noun.relation", "noun.shape", "noun.state", "noun.substance", "noun.time",
)
"""WordNet's 26 noun lexicographer files, in label order."""

_INDEX = {name: i for i, name in enumerate(NOUN_SUPERSENSES)}
#: A noun phrase's head comes before these words ("bank of england", "cancer in children").
_POST_HEAD = frozenset({"of", "in", "for", "with", "on", "at", "from", "by", "to", "about",
                        "under", "over", "between", "against", "during", "without", "into"})
_WORD = re.compile(r"[a-z][a-z'\-]*")


def _singulars(word: str) -> list[str]:
    """Candidate singular forms of an English plural (WordNet lists lemmas in the singular)."""
    out = []
    if word.endswith("ies") and len(word) > 4:
        out.append(word[:-3] + "y")
    if word.endswith(("ses", "xes", "zes", "ches", "shes")):
        out.append(word[:-2])
    if word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        out.append(word[:-1])
    return out


class SupersenseLexicon:
    """Lower-cased noun lemma -> counts of the supersenses of its noun synsets."""

    def __init__(self, lemmas: dict[str, Counter[str]]) -> None:
        self.lemmas = lemmas

    @classmethod
    def from_wordnet(cls, wordnet_dir: str | Path) -> SupersenseLexicon:
        """Read ``synsets.tsv.gz`` (columns synset_id, pos, lexfile, members, ...)."""
        path = Path(wordnet_dir) / "synsets.tsv.gz"
        if not path.is_file():
            raise FileNotFoundError(f"{path} missing: the WordNet folder of the shared data "
                                    "(data/wordnet) is needed for supersense labels")
        lemmas: dict[str, Counter[str]] = {}
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            header = fh.readline().rstrip("\n").split("\t")
            try:
                pos_i, lex_i, mem_i = (header.index(c) for c in ("pos", "lexfile", "members"))
            except ValueError:
                raise ValueError(f"{path}: expected columns pos, lexfile, members; got "
                                 f"{header}") from None
            for line in fh:
                parts = line.rstrip("\n").split("\t")
                if len(parts) <= max(pos_i, lex_i, mem_i) or parts[pos_i] != "n":
                    continue
                if parts[lex_i] not in _INDEX:
                    continue
                for member in parts[mem_i].split("|"):
                    key = member.strip().lower()
                    if key:
                        lemmas.setdefault(key, Counter())[parts[lex_i]] += 1
        if not lemmas:
            raise ValueError(f"{path}: no noun synsets read")
        logger.info("supersense lexicon: %d noun lemmas", len(lemmas))
        return cls(lemmas)

    def _lookup(self, key: str) -> Counter[str] | None:
        if key in self.lemmas:
            return self.lemmas[key]
        for form in _singulars(key):
            if form in self.lemmas:
                return self.lemmas[form]
        return None

    def head_senses(self, phrase: str) -> Counter[str] | None:
        """Supersense counts of the phrase itself when WordNet lists it ("blood pressure"),
        else of its head word: the last word before a post-modifying preposition."""
        text = " ".join(phrase.lower().split())
        if not text:
            return None
        found = self._lookup(text)
        if found is not None:
            return found
        words = _WORD.findall(text)
        for i, w in enumerate(words):
            if i > 0 and w in _POST_HEAD:
                words = words[:i]
                break
        if not words:
            return None
        if len(words) >= 2:  # "renal failure" may be listed as a compound though "the" is not
            found = self._lookup(" ".join(words[-2:]))
            if found is not None:
                return found
        return self._lookup(words[-1])

    def distribution(self, phrase: str) -> np.ndarray | None:
        """Probability vector over :data:`NOUN_SUPERSENSES`, or None when the head is unknown."""
        counts = self.head_senses(phrase)
        if not counts:
            return None
        vec = np.zeros(len(NOUN_SUPERSENSES), dtype=np.float32)
        for name, n in counts.items():
            vec[_INDEX[name]] += n
        return vec / vec.sum()

    def distributions(self, phrases: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """(targets (n, 26), known mask (n,)): zero rows where the head is unknown."""
        out = np.zeros((len(phrases), len(NOUN_SUPERSENSES)), dtype=np.float32)
        known = np.zeros(len(phrases), dtype=bool)
        for i, p in enumerate(phrases):
            d = self.distribution(p)
            if d is not None:
                out[i], known[i] = d, True
        return out, known
