"""Phrase-BERT's context triplets: (phrase, its masked context, another phrase's masked context).

Phrases are found in the sampled corpus texts either by spaCy (multi-word noun chunks and
non-numeric entities, PhraseExtractor cleaning) or, for corpora with a cached
:class:`~phrasekit.phrases.PhraseVocabulary`, by a word n-gram scan for its multi-word phrases.
Each chosen occurrence becomes a window of about ``context_tokens`` WordPiece tokens with the
phrase replaced by the mask token (:func:`masked_window`).
"""

from __future__ import annotations

import logging
import random
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from phrasekit.phrases.extract import (
    DEFAULT_REJECT_PATTERN,
    NUMERIC_ENTITY_TYPES,
    PhraseExtractor,
    load_spacy,
)
from phrasekit.phrases.vocabulary import PhraseVocabulary
from phrasekit.training.data.leakage import BenchmarkStringFilter
from phrasekit.training.data.sources import normalize, valid_phrase

logger = logging.getLogger(__name__)

#: ``{normalised phrase: [(text id, start char, end char)]}``.
Occurrences = dict[str, list[tuple[int, int, int]]]
CONTEXT_TOKENS = 120
MAX_CONTEXT_PHRASE_WORDS = 8

_WORD_RE = re.compile(r"[^\W_](?:[\w'’&./-]*[^\W_])?")


# ---------------------------------------------------------------------------------- phrases
def spacy_occurrences(texts: Mapping[int, str], nlp: Any, show_progress: bool = True,
                      batch_size: int = 16) -> Occurrences:
    """``{normalised phrase: [(text id, start char, end char)]}`` of multi-word noun chunks and
    non-numeric entities (PhraseExtractor cleaning, 2-8 words, no markup)."""
    extractor = PhraseExtractor(spacy_model=nlp, lowercase=False,
                                max_tokens=MAX_CONTEXT_PHRASE_WORDS)
    reject = re.compile(DEFAULT_REJECT_PATTERN)
    found: Occurrences = defaultdict(list)
    stream = nlp.pipe(((t, i) for i, t in texts.items()), as_tuples=True,
                      batch_size=batch_size)
    for sdoc, i in tqdm(stream, total=len(texts), desc="context phrases[spaCy]", unit="doc",
                        disable=not show_progress):
        excluded = {k for e in sdoc.ents if e.label_ in NUMERIC_ENTITY_TYPES
                    for k in range(e.start, e.end)}
        spans = {}
        for span in [*(e for e in sdoc.ents if e.label_ not in NUMERIC_ENTITY_TYPES),
                     *sdoc.noun_chunks]:
            clean = extractor.clean_span(span, excluded)
            if clean is not None:
                spans[(clean.start_char, clean.end_char)] = clean.text
        for (s, e), surface in sorted(spans.items()):
            if len(surface.split()) >= 2 and valid_phrase(surface) and not reject.search(surface):
                found[normalize(surface)].append((i, s, e))
    return dict(found)


def _match_key(word: str) -> str:
    return word.lower().replace("’", "'").rstrip(".")


def vocabulary_occurrences(texts: Mapping[int, str], phrases: Iterable[str]) -> Occurrences:
    """Occurrences of the given (multi-word) phrases, found by a word n-gram scan of ``texts``
    (case-insensitive; words are letter/digit runs with inner ' & . / -)."""
    keys: dict[str, str] = {}
    for p in phrases:
        words = _WORD_RE.findall(p)
        if 2 <= len(words) <= MAX_CONTEXT_PHRASE_WORDS and valid_phrase(p):
            keys[" ".join(_match_key(w) for w in words)] = normalize(p)
    lengths = sorted({k.count(" ") + 1 for k in keys})
    found: Occurrences = defaultdict(list)
    for i, text in texts.items():
        words = list(_WORD_RE.finditer(text))
        norm = [_match_key(m.group()) for m in words]
        for n in lengths:
            for j in range(len(words) - n + 1):
                phrase = keys.get(" ".join(norm[j : j + n]))
                if phrase is not None:
                    found[phrase].append((i, words[j].start(), words[j + n - 1].end()))
    return dict(found)


def load_phrase_vocabs(spec: Mapping[str, Any] | None) -> dict[str, list[str]]:
    """``{corpus: multi-word surface forms}`` from PhraseVocabulary objects or JSON paths."""
    out: dict[str, list[str]] = {}
    for corpus, vocab in (spec or {}).items():
        if not isinstance(vocab, PhraseVocabulary):
            path = Path(vocab)
            if not path.is_file():
                raise FileNotFoundError(f"phrase vocabulary for {corpus!r} not found: {path}")
            vocab = PhraseVocabulary.from_json(path)
        out[corpus] = [s for s in vocab.surface if len(s.split()) >= 2]
    return out


def context_occurrences(pieces: Sequence[tuple[str, str]], vocabs: Mapping[str, list[str]],
                        nlp: Any, show_progress: bool) -> Occurrences:
    """Phrase occurrences in the (corpus, text) pieces: by the corpus's vocabulary when
    ``vocabs`` has one, else by spaCy (``nlp``, loaded when None and needed)."""
    occurrences: Occurrences = defaultdict(list)
    by_vocab = {i: text for i, (name, text) in enumerate(pieces) if name in vocabs}
    by_spacy = {i: text for i, (name, text) in enumerate(pieces) if name not in vocabs}
    for name, phrases in vocabs.items():
        texts = {i: x for i, x in by_vocab.items() if pieces[i][0] == name}
        for key, occ in vocabulary_occurrences(texts, phrases).items():
            occurrences[key].extend(occ)
    if by_spacy:
        nlp = nlp if nlp is not None else load_spacy()
        for key, occ in spacy_occurrences(by_spacy, nlp, show_progress).items():
            occurrences[key].extend(occ)
    return dict(occurrences)


# ---------------------------------------------------------------------------------- windows
def _offsets(tokenizer: Any, text: str) -> list[tuple[int, int]]:
    return tokenizer(text, add_special_tokens=False, return_offsets_mapping=True,
                     verbose=False)["offset_mapping"]


def masked_window(text: str, start: int, end: int, tokenizer: Any, max_tokens: int = 120,
                  mask: str | None = None, offsets: Sequence[tuple[int, int]] | None = None
                  ) -> str:
    """About ``max_tokens`` WordPiece tokens of ``text`` centred on ``text[start:end]``, that
    span replaced by the mask token, cut at word boundaries, whitespace collapsed.

    ``offsets``: the tokenizer's character offsets of ``text`` (computed when not given).
    """
    mask = mask or tokenizer.mask_token
    if offsets is None:
        offsets = _offsets(tokenizer, text)
    inside = [k for k, (s, e) in enumerate(offsets) if s < end and e > start]
    if not inside:
        raise ValueError(f"span {start}:{end} holds no token of the text")
    first, last = inside[0], inside[-1]
    budget = max(0, max_tokens - 1)
    left = min(first, budget // 2)
    right = min(len(offsets) - 1 - last, budget - left)
    left = min(first, budget - right)
    lo, hi = first - left, last + right
    while lo < first and offsets[lo][0] > 0 and not text[offsets[lo][0] - 1].isspace():
        lo += 1  # do not start inside a word
    while hi > last and offsets[hi][1] < len(text) and not text[offsets[hi][1]].isspace():
        hi -= 1  # do not end inside a word
    begin = offsets[lo][0] if lo < first else start
    stop = offsets[hi][1] if hi > last else end
    return " ".join((text[begin:start] + mask + text[end:stop]).split())


# ---------------------------------------------------------------------------------- triplets
def _choose(pieces: Sequence[tuple[str, str]], occurrences: Occurrences,
            filt: BenchmarkStringFilter, rng: random.Random, max_context: int,
            dropped: Counter[str]) -> list[tuple[str, int, int, int, int]]:
    """(surface, piece, start, end, occurrences) of one random occurrence per phrase, the most
    frequent phrases first (ties in seeded random order), test strings left out."""
    order = list(occurrences)
    rng.shuffle(order)
    order.sort(key=lambda k: -len(occurrences[k]))
    chosen: list[tuple[str, int, int, int, int]] = []
    for key in order:
        if len(chosen) >= max_context:
            break
        piece, s, e = rng.choice(occurrences[key])
        surface = " ".join(pieces[piece][1][s:e].split())
        if not filt.keep_phrase(surface):
            dropped["test_string"] += 1
            continue
        chosen.append((surface, piece, s, e, len(occurrences[key])))
    return chosen


def _masked_windows(pieces: Sequence[tuple[str, str]],
                    chosen: Sequence[tuple[str, int, int, int, int]], tokenizer: Any,
                    context_tokens: int) -> list[str]:
    """The masked window of each chosen occurrence (each piece tokenized once)."""
    offsets: dict[int, Any] = {}
    windows: list[str] = []
    for _surface, piece, s, e, _ in chosen:
        text = pieces[piece][1]
        if piece not in offsets:
            offsets[piece] = _offsets(tokenizer, text)
        windows.append(masked_window(text, s, e, tokenizer, context_tokens,
                                     offsets=offsets[piece]))
    return windows


def build_context_triplets(
    pieces: Sequence[tuple[str, str]], occurrences: Occurrences, tokenizer: Any,
    filt: BenchmarkStringFilter, rng: random.Random, max_context: int,
    context_tokens: int = CONTEXT_TOKENS,
) -> tuple[list[dict[str, str]], dict[str, Any]]:
    """One (phrase, masked context, other masked context) triplet per phrase, most frequent
    phrases first; and statistics. The negative is the window of a phrase of another piece
    that does not contain the anchor."""
    dropped: Counter[str] = Counter()
    chosen = _choose(pieces, occurrences, filt, rng, max_context, dropped)
    positives = _masked_windows(pieces, chosen, tokenizer, context_tokens)
    triplets: list[dict[str, str]] = []
    counts: list[int] = []
    for i, (surface, piece, _, _, count) in enumerate(chosen):
        key = normalize(surface)
        negative = None
        for _ in range(20):
            j = rng.randrange(len(chosen))
            if chosen[j][1] != piece and key not in normalize(positives[j]):
                negative = positives[j]
                break
        if negative is None:
            dropped["no_negative"] += 1
            continue
        triplets.append({"anchor": surface, "positive": positives[i], "negative": negative,
                         "source": pieces[piece][0]})
        counts.append(count)
    lengths = sorted(len(t["positive"].split()) for t in triplets)
    stats = {"phrases_found": len(occurrences), "triplets_per_corpus":
             dict(Counter(t["source"] for t in triplets)), "dropped": dict(dropped),
             "median_context_words": lengths[len(lengths) // 2] if lengths else 0,
             "min_occurrences_kept": min(counts, default=0)}
    return triplets, stats
