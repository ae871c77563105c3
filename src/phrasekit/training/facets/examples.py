"""Training examples of the multi-facet model: (input word ids, set of target word ids).

- :func:`phrase_examples`: the input is a noun phrase, the targets the content words within
  ``window`` tokens on each side of one verbatim occurrence of it (each phrase keeps at most
  ``max_per_phrase`` occurrences, reservoir-sampled with the seed);
- :func:`sentence_examples`: the input is a sentence (:func:`split_sentences`), the targets the
  content words of the previous and the next sentence, sub-sampled to ``max_targets``.

Validation examples are chosen by the CRC32 of the phrase key or the document key, so a phrase
or a document is never on both sides. The builder is :mod:`phrasekit.training.facets.data`.
"""

from __future__ import annotations

import logging
import re
import zlib
from collections.abc import Iterable, Iterator, Sequence

import numpy as np

from phrasekit.encoders.facets.words import WordSpace
from phrasekit.text import tokenize

logger = logging.getLogger(__name__)

#: Phrase keys longer than this (in tokens) are not matched.
MAX_KEY_TOKENS = 6


# ------------------------------------------------------------------------------ text helpers
_PARAGRAPH = re.compile(r"\n\s*\n")
_SENTENCE_END = re.compile(r"(?:(?<=[.!?])|(?<=[.!?][\"')\]]))\s+(?=[\"'(\[]?[A-Z0-9])")
_ABBREVIATIONS = frozenset({
    "mr.", "mrs.", "ms.", "dr.", "prof.", "st.", "jr.", "sr.", "vs.", "etc.", "e.g.", "i.e.",
    "u.s.", "u.k.", "no.", "fig.", "eq.", "al.", "inc.", "corp.", "co.", "ltd.", "gen.", "sen.",
    "rep.", "gov.", "jan.", "feb.", "mar.", "apr.", "aug.", "sep.", "sept.", "oct.", "nov.",
    "dec.", "approx.", "ref.", "vol.", "ca.",
})


def split_sentences(text: str, newline_ends_sentence: bool = True) -> list[str]:
    """Sentences of ``text`` by a simple rule-based splitter (no spaCy).

    Blank lines always end a sentence; a single newline does too when
    ``newline_ends_sentence`` (a title on its own line), else it is a wrapped line. Inside a
    block, ``. ! ?`` (optionally closed by a quote or bracket) followed by whitespace and a
    capital letter, digit or opening quote ends a sentence, unless the word before is a common
    abbreviation ("Mr.", "e.g.", "U.S.").
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a string, got {type(text).__name__}")
    blocks = _PARAGRAPH.split(text)
    if newline_ends_sentence:
        blocks = [line for block in blocks for line in block.split("\n")]
    out: list[str] = []
    for block in blocks:
        block = " ".join(block.split())
        if not block:
            continue
        pieces = _SENTENCE_END.split(block)
        merged: list[str] = []
        for piece in pieces:
            if merged and merged[-1].rsplit(" ", 1)[-1].lower() in _ABBREVIATIONS:
                merged[-1] = f"{merged[-1]} {piece}"
            else:
                merged.append(piece)
        out.extend(merged)
    return out


def _unique(ids: Iterable[int]) -> list[int]:
    """Distinct ids in order of first appearance (N_t is a set; order kept for determinism)."""
    return list(dict.fromkeys(ids))


def _is_val(key: str, fraction: float) -> bool:
    return fraction > 0 and zlib.crc32(key.encode("utf-8")) % 10_000 < fraction * 10_000


def _bump(stats: dict[str, int], key: str, by: int = 1) -> None:
    stats[key] = stats.get(key, 0) + by


# ------------------------------------------------------------------------------ examples
class _Shard:
    """Accumulates the examples of one corpus."""

    def __init__(self) -> None:
        self.inputs: list[int] = []
        self.input_offsets: list[int] = [0]
        self.targets: list[int] = []
        self.target_offsets: list[int] = [0]
        self.split: list[int] = []

    def add(self, inputs: Sequence[int], targets: Sequence[int], val: bool) -> None:
        self.inputs.extend(inputs)
        self.input_offsets.append(len(self.inputs))
        self.targets.extend(targets)
        self.target_offsets.append(len(self.targets))
        self.split.append(1 if val else 0)

    def __len__(self) -> int:
        return len(self.split)

    def arrays(self) -> dict[str, np.ndarray]:
        return {
            "inputs": np.asarray(self.inputs, dtype=np.int32),
            "input_offsets": np.asarray(self.input_offsets, dtype=np.int64),
            "targets": np.asarray(self.targets, dtype=np.int32),
            "target_offsets": np.asarray(self.target_offsets, dtype=np.int64),
            "split": np.asarray(self.split, dtype=np.uint8),
        }


class _Reservoir:
    """At most ``cap`` examples per phrase key; beyond it, reservoir sampling (seeded)."""

    def __init__(self, cap: int, seed: int) -> None:
        self.cap = cap
        self.rng = np.random.default_rng(seed)
        self.examples: dict[tuple[str, ...], list[tuple[list[int], list[int]]]] = {}
        self.seen: dict[tuple[str, ...], int] = {}

    def add(self, key: tuple[str, ...], example: tuple[list[int], list[int]]) -> None:
        c = self.seen.get(key, 0) + 1
        self.seen[key] = c
        slot = self.examples.setdefault(key, [])
        if c <= self.cap:
            slot.append(example)
        else:
            j = int(self.rng.integers(c))
            if j < self.cap:
                slot[j] = example


def _wanted_keys(keys: Iterable[str], word_space: WordSpace,
                 key_ids: dict[tuple[str, ...], list[int] | None]) -> dict[tuple[str, ...], None]:
    """The tokenized keys worth matching (their input ids cached in ``key_ids``, None when
    the key is too long, all stop words or unknown to the word space)."""
    wanted: dict[tuple[str, ...], None] = {}
    for key in keys:
        t = tuple(tokenize(key))
        if t not in key_ids:
            ids = word_space.tokens_ids(t)
            ok = (0 < len(t) <= MAX_KEY_TOKENS and any(word_space.is_content(w) for w in t)
                  and any(i >= 0 for i in ids))
            key_ids[t] = ids if ok else None
        if key_ids[t] is not None:
            wanted[t] = None
    return wanted


def _matches(toks: Sequence[str], wanted: dict[tuple[str, ...], None]
             ) -> Iterator[tuple[int, int, tuple[str, ...]]]:
    """(start, length, key) of every occurrence of a wanted key in the tokens."""
    lengths = sorted({len(t) for t in wanted})
    n = len(toks)
    for i in range(n):
        for m in lengths:
            if i + m > n:
                break
            t = tuple(toks[i : i + m])
            if t in wanted:
                yield i, m, t


def phrase_examples(
    docs: Sequence[Sequence[str]],
    doc_phrases: Sequence[Iterable[str]],
    word_space: WordSpace,
    window: int = 5,
    min_targets: int = 2,
    max_per_phrase: int = 100,
    val_fraction: float = 0.01,
    seed: int = 0,
    stats: dict[str, int] | None = None,
) -> _Shard:
    """Phrase examples from tokenized documents and, per document, the phrase keys spaCy
    found in it (each key is tokenized and matched verbatim in that document's tokens).

    Keys of more than 6 tokens, keys made only of stop words and keys with no word in the word
    space are skipped. Occurrences beyond ``max_per_phrase`` per key are reservoir-sampled.
    """
    if len(docs) != len(doc_phrases):
        raise ValueError(f"{len(docs)} documents but {len(doc_phrases)} phrase lists")
    stats = stats if stats is not None else {}
    reservoir = _Reservoir(max_per_phrase, seed)
    key_ids: dict[tuple[str, ...], list[int] | None] = {}
    for toks, keys in zip(docs, doc_phrases, strict=True):
        wanted = _wanted_keys(keys, word_space, key_ids)
        if not wanted:
            continue
        for i, m, t in _matches(toks, wanted):
            context = list(toks[max(0, i - window) : i]) + list(toks[i + m : i + m + window])
            targets = _unique(word_space.content_ids(context))
            _bump(stats, "occurrences")
            if len(targets) < min_targets:
                _bump(stats, "too_few_targets")
                continue
            reservoir.add(t, (key_ids[t] or [], targets))
    shard = _Shard()
    for t, examples in reservoir.examples.items():
        val = _is_val(" ".join(t), val_fraction)
        for inputs, targets in examples:
            shard.add(inputs, targets, val)
    _bump(stats, "phrases", len(reservoir.examples))
    _bump(stats, "capped_occurrences",
          sum(max(0, c - max_per_phrase) for c in reservoir.seen.values()))
    return shard


def sentence_examples(
    docs: Sequence[str],
    doc_keys: Sequence[str],
    word_space: WordSpace,
    max_targets: int = 30,
    min_targets: int = 2,
    min_tokens: int = 3,
    max_tokens: int = 50,
    val_fraction: float = 0.01,
    seed: int = 0,
    newline_ends_sentence: bool = True,
    excluded: set[tuple[str, ...]] | None = None,
    stats: dict[str, int] | None = None,
) -> _Shard:
    """Sentence examples: input = a sentence's words (unknown -> -1), targets = the set of
    content words of the previous and next sentence, sub-sampled to ``max_targets``."""
    stats = stats if stats is not None else {}
    rng = np.random.default_rng(seed)
    shard = _Shard()
    for text, key in zip(docs, doc_keys, strict=True):
        sents = [tokenize(s) for s in split_sentences(text, newline_ends_sentence)]
        sents = [s for s in sents if s]
        content = [word_space.content_ids(s) for s in sents]
        val = _is_val(key, val_fraction)
        for s, toks in enumerate(sents):
            _bump(stats, "sentences")
            if not min_tokens <= len(toks) <= max_tokens:
                _bump(stats, "bad_length")
                continue
            if excluded and tuple(toks) in excluded:
                _bump(stats, "eval_sentences_dropped")
                continue
            prev = content[s - 1] if s > 0 else []
            nxt = content[s + 1] if s + 1 < len(sents) else []
            targets = _unique(prev + nxt)
            if len(targets) < min_targets:
                _bump(stats, "too_few_targets")
                continue
            if len(targets) > max_targets:
                keep = np.sort(rng.choice(len(targets), size=max_targets, replace=False))
                targets = [targets[k] for k in keep]
                _bump(stats, "subsampled")
            inputs = word_space.tokens_ids(toks)
            if all(i < 0 for i in inputs):
                _bump(stats, "no_known_word")
                continue
            shard.add(inputs, targets, val)
    return shard
