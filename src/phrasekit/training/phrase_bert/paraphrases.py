"""Phrase-BERT's paraphrase triplets: (phrase, lexically diverse paraphrase, corrupted phrase).

Candidate pairs are the positive pairs of the PPDB / PPDB-filtered **train** splits and WordNet
synonyms (a multi-word lemma and another member of its synset); a pair is kept when valid, new,
free of benchmark test strings and lexically disjoint, and its negative is the anchor with one
content word swapped (:mod:`phrasekit.training.phrase_bert.words`).
:func:`labelled_ppdb_triplets` adds PPDB's judged non-paraphrases as harder negatives.
"""

from __future__ import annotations

import logging
import random
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from phrasekit.training.data.leakage import BenchmarkStringFilter
from phrasekit.training.data.sources import (
    Synset,
    english_stop_words,
    normalize,
    ppdb_path,
    read_ppdb,
    read_wordnet,
    strip_outer_punct,
    tidy,
    valid_phrase,
    wordnet_pairs,
)
from phrasekit.training.phrase_bert.words import content_words, corrupt_phrase, lexically_disjoint

logger = logging.getLogger(__name__)

#: WordNet files whose synsets pair common names with Latin binomials ("grizzly bear" /
#: "Ursus horribilis").
TAXONOMIC_LEXFILES = frozenset({"noun.animal", "noun.plant"})
_BINOMIAL_RE = re.compile(r"^[A-Z][a-z]+ [a-z]+$")  # "Genus species"


# ---------------------------------------------------------------------------------- candidates
def is_binomial(member: str, lexfile: str) -> bool:
    """Whether a WordNet member is a Latin binomial name ("Ursus horribilis") of an animal or
    plant synset; a taxonomic name says nothing about paraphrasing everyday phrases."""
    return lexfile in TAXONOMIC_LEXFILES and bool(_BINOMIAL_RE.match(member))


def without_binomials(synsets: Sequence[Synset]) -> tuple[list[Synset], int]:
    """The synsets with their binomial members (:func:`is_binomial`) removed, and how many."""
    out, dropped = [], 0
    for s in synsets:
        keep = [m for m in s.members if not is_binomial(m, s.lexfile)]
        dropped += len(s.members) - len(keep)
        out.append(replace(s, members=keep) if len(keep) < len(s.members) else s)
    return out, dropped


def paraphrase_pairs(data_dir: Path, sources: Sequence[str], max_pairs_per_synset: int,
                     rng: random.Random, drop_binomials: bool = False,
                     stats: dict[str, Any] | None = None) -> list[tuple[str, str, str]]:
    """Candidate (a, b, source) paraphrase pairs: PPDB train positives and WordNet synonyms
    (without Latin binomials if ``drop_binomials``; their count goes to ``stats``)."""
    pairs: list[tuple[str, str, str]] = []
    for name in ("ppdb", "ppdb_filtered"):
        if name in sources:
            for a, b, pos in read_ppdb(ppdb_path(data_dir, name), "train"):
                if pos:
                    pairs.append((strip_outer_punct(a), strip_outer_punct(b), name))
    if "wordnet" in sources:
        synsets = read_wordnet(data_dir / "wordnet")
        if drop_binomials:
            synsets, dropped = without_binomials(synsets)
            if stats is not None:
                stats["wordnet_binomial_members_dropped"] = dropped
        pairs.extend((a, b, "wordnet") for a, b in
                     wordnet_pairs(synsets, max_pairs_per_synset, rng))
    return pairs


# ---------------------------------------------------------------------------------- triplets
def _diverse_pairs(pairs: Iterable[tuple[str, str, str]], filt: BenchmarkStringFilter,
                   stops: frozenset[str], dropped: Counter[str]) -> list[tuple[str, str, str]]:
    """The valid, distinct pairs without test strings whose sides share no content word."""
    kept: list[tuple[str, str, str]] = []
    seen: set[tuple[str, str]] = set()
    for a, b, src in pairs:
        a, b = tidy(a), tidy(b)
        ka, kb = normalize(a), normalize(b)
        if not (a and b) or ka == kb or not (valid_phrase(a) and valid_phrase(b)):
            dropped[f"{src}:invalid"] += 1
            continue
        key = (min(ka, kb), max(ka, kb))
        if key in seen:
            dropped[f"{src}:duplicate"] += 1
            continue
        seen.add(key)
        if not filt.keep_pair(a, b):
            dropped[f"{src}:test_string"] += 1
            continue
        if not lexically_disjoint(a, b, stops):
            dropped[f"{src}:lexical_overlap"] += 1
            continue
        kept.append((a, b, src))
    return kept


def _negative(anchor: str, avoid: frozenset[str], vocabulary: Sequence[str],
              rng: random.Random, stops: frozenset[str], neg_filter: BenchmarkStringFilter
              ) -> tuple[str | None, int]:
    """A corrupted ``anchor`` that is no test string (up to 5 draws), and the redraws."""
    redrawn = 0
    for _ in range(5):
        negative = corrupt_phrase(anchor, vocabulary, rng, stops, avoid)
        if negative is None or neg_filter.keep_phrase(negative):
            return negative, redrawn
        redrawn += 1
    return None, redrawn


def build_paraphrase_triplets(
    pairs: Iterable[tuple[str, str, str]], filt: BenchmarkStringFilter,
    neg_filter: BenchmarkStringFilter, rng: random.Random, vocabulary: Sequence[str],
) -> tuple[list[dict[str, str]], dict[str, Any]]:
    """Triplets from candidate pairs (dedupe, test-string and lexical-diversity filters,
    negatives corrupted with ``vocabulary`` words), shuffled with ``rng``; and statistics."""
    stops = english_stop_words()
    dropped: Counter[str] = Counter()
    triplets: list[dict[str, str]] = []
    redrawn = 0
    for a, b, src in _diverse_pairs(pairs, filt, stops, dropped):
        anchor, positive = (a, b) if rng.random() < 0.5 else (b, a)
        avoid = frozenset(content_words(f"{anchor} {positive}", stops))
        negative, n_redrawn = _negative(anchor, avoid, vocabulary, rng, stops, neg_filter)
        redrawn += n_redrawn
        if negative is None:
            dropped[f"{src}:no_negative"] += 1
            continue
        triplets.append({"anchor": anchor, "positive": positive, "negative": negative,
                         "source": src})
    rng.shuffle(triplets)
    stats = {"candidates": sum(dropped.values()) + len(triplets),
             "triplets_per_source": dict(Counter(t["source"] for t in triplets)),
             "dropped": dict(sorted(dropped.items())), "negative_vocabulary": len(vocabulary),
             "negatives_redrawn_test_string": redrawn}
    return triplets, stats


def _judged_pairs(path: Path, src: str, dropped: Counter[str]
                  ) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """``{phrase: paraphrases}`` and ``{phrase: judged non-paraphrases}`` of a PPDB train
    split, both directions, invalid pairs counted in ``dropped``."""
    pos: dict[str, set[str]] = defaultdict(set)
    neg: dict[str, set[str]] = defaultdict(set)
    for a, b, is_pos in read_ppdb(path, "train"):
        a, b = (tidy(strip_outer_punct(x)) for x in (a, b))
        if not (a and b) or normalize(a) == normalize(b) or not (
                valid_phrase(a) and valid_phrase(b)):
            dropped[f"{src}:invalid"] += 1
            continue
        for x, y in ((a, b), (b, a)):
            (pos if is_pos else neg)[x].add(y)
    return pos, neg


def labelled_ppdb_triplets(data_dir: Path, names: Sequence[str], filt: BenchmarkStringFilter,
                           neg_filter: BenchmarkStringFilter, rng: random.Random,
                           ) -> tuple[list[dict[str, str]], dict[str, Any]]:
    """Triplets from the *judged* pairs of the PPDB / PPDB-filtered **train** splits: (p, p+, p−)
    where (p, p+) is labelled a paraphrase and (p, p−) is labelled not one.

    The paper's negatives are random one-word swaps, easy to tell apart from p by meaning
    alone. PPDB's judged negatives are harder: in PPDB-filtered they share as many words with
    p as the positives do ("particularly difficult": "very difficult" vs "been difficult"),
    so only the meaning separates them. The lexical-diversity rule is not applied (positives
    and negatives overlap p alike by construction). Each positive of an anchor that also has
    a judged negative gives one triplet, with a random one of its negatives (seeded).
    Benchmark test/dev strings are filtered as for the other sources; dev/test items are
    never read (``read_ppdb(..., "train")``).
    """
    triplets: list[dict[str, str]] = []
    dropped: Counter[str] = Counter()
    for name in names:
        src = f"{name}:labelled"
        pos, neg = _judged_pairs(ppdb_path(data_dir, name), src, dropped)
        for anchor in sorted(pos):
            negatives = sorted(n for n in neg.get(anchor, ()) if neg_filter.keep_phrase(n))
            if not negatives:
                dropped[f"{src}:no_negative"] += len(pos[anchor])
                continue
            for positive in sorted(pos[anchor]):
                if not filt.keep_pair(anchor, positive):
                    dropped[f"{src}:test_string"] += 1
                    continue
                triplets.append({"anchor": anchor, "positive": positive,
                                 "negative": rng.choice(negatives), "source": src})
    rng.shuffle(triplets)
    return triplets, {"triplets_per_source": dict(Counter(t["source"] for t in triplets)),
                      "dropped": dict(sorted(dropped.items()))}
