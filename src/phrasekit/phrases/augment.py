"""PEARL data augmentation (§3.1): positive pairs at character, token and phrase granularity.

* Character level: one edit inside one word: swap two adjacent characters, delete a character,
  insert a character, or replace a character by a QWERTY keyboard neighbour (case kept).
  Only words of at least ``MIN_WORD_LEN`` characters with a letter are edited, and only their
  letters; other tokens (numbers, punctuation, "of") are left alone.
* Token level: swap two adjacent tokens, or replace tokens by synonyms from a
  ``{word: [synonyms]}`` map (lower-case lookup, the original token's capitalisation kept).
* Phrase level: a paraphrase from a symmetric ``{phrase: [paraphrases]}`` map
  (:func:`paraphrase_map` builds it from pairs).

:func:`typo_noise` applies the character edits to a whole text (each word with probability
``p``); the benchmark uses it for its typo-robustness variant (``phrasekit eval --noise typo``).

All randomness comes from the ``random.Random`` passed in, so results are deterministic given
its seed. Whitespace between tokens is preserved exactly.
"""

from __future__ import annotations

import itertools
import logging
import random
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

logger = logging.getLogger(__name__)

MIN_WORD_LEN = 3
"""Words shorter than this are never edited at the character level."""

LEVELS: tuple[str, ...] = ("char", "token", "phrase")
"""The augmentation granularities, in the order used for fallbacks and configs."""

_ROWS: tuple[tuple[str, float], ...] = (("qwertyuiop", 0.0), ("asdfghjkl", 0.25), ("zxcvbnm", 0.75))
_LETTERS = "abcdefghijklmnopqrstuvwxyz"
_SPLIT = re.compile(r"(\s+)")
_AFFIXES = re.compile(r"^(\W*)(.*?)(\W*)$", re.DOTALL)


def _keyboard_neighbours() -> dict[str, str]:
    """QWERTY adjacency from key positions: same-row neighbours and overlapping keys one row away.

    Rows are staggered by 0.25 and 0.75 key widths (a physical keyboard), so e.g. ``g`` touches
    ``f h t y v b``.
    """
    pos = {c: (r, off + i) for r, (row, off) in enumerate(_ROWS) for i, c in enumerate(row)}
    table: dict[str, str] = {}
    for c, (r, x) in pos.items():
        near = [d for d, (r2, x2) in pos.items() if d != c and (
            (r2 == r and abs(x2 - x) == 1) or (abs(r2 - r) == 1 and abs(x2 - x) < 1))]
        table[c] = "".join(sorted(near))
    return table


KEYBOARD: dict[str, str] = _keyboard_neighbours()
"""Lower-case letter -> its QWERTY neighbour keys (letters only)."""


def _with_case(like: str, char: str) -> str:
    """``char`` in the case of ``like`` (so an edit inside "NYTimes" stays plausible)."""
    return char.upper() if like.isupper() else char.lower()


def editable(word: str, min_len: int = MIN_WORD_LEN) -> bool:
    """True if a character-level op may edit ``word`` (long enough and holding a letter)."""
    return len(word) >= min_len and any(c.isalpha() for c in word)


def swap_chars(word: str, rng: random.Random, min_len: int = MIN_WORD_LEN) -> str:
    """Swap two adjacent, different letters (one transposition); ``word`` itself if impossible."""
    if not editable(word, min_len):
        return word
    spots = [i for i in range(len(word) - 1)
             if word[i].isalpha() and word[i + 1].isalpha() and word[i] != word[i + 1]]
    if not spots:
        return word
    i = rng.choice(spots)
    return word[:i] + word[i + 1] + word[i] + word[i + 2 :]


def delete_char(word: str, rng: random.Random, min_len: int = MIN_WORD_LEN) -> str:
    """Drop one letter; ``word`` itself if impossible."""
    if not editable(word, min_len):
        return word
    i = rng.choice([i for i, c in enumerate(word) if c.isalpha()])
    return word[:i] + word[i + 1 :]


def insert_char(word: str, rng: random.Random, min_len: int = MIN_WORD_LEN) -> str:
    """Insert one random letter (upper-case inside an all-caps word); ``word`` itself if too short.

    The letter is drawn from a-z, as in Pruthi et al.'s "insert" attack.
    """
    if not editable(word, min_len):
        return word
    i = rng.randrange(len(word) + 1)
    char = rng.choice(_LETTERS)
    if word.isupper():
        char = char.upper()
    return word[:i] + char + word[i:]


def keyboard_replace(word: str, rng: random.Random, min_len: int = MIN_WORD_LEN) -> str:
    """Replace one letter by a QWERTY neighbour, keeping its case; ``word`` itself if impossible."""
    if not editable(word, min_len):
        return word
    spots = [i for i, c in enumerate(word) if c.lower() in KEYBOARD]
    if not spots:
        return word
    i = rng.choice(spots)
    return word[:i] + _with_case(word[i], rng.choice(KEYBOARD[word[i].lower()])) + word[i + 1 :]


CharOp = Callable[..., str]
CHAR_OPS: dict[str, CharOp] = {
    "swap": swap_chars,
    "delete": delete_char,
    "insert": insert_char,
    "keyboard": keyboard_replace,
}
"""The four character-level ops of PEARL, by name."""


def random_char_edit(word: str, rng: random.Random, min_len: int = MIN_WORD_LEN) -> str:
    """Exactly one edit by a random op (another op if the first cannot change the word).

    Returns ``word`` unchanged only when no op applies (too short, no letter).
    """
    if not editable(word, min_len):
        return word
    names = list(CHAR_OPS)
    rng.shuffle(names)
    for name in names:
        out = CHAR_OPS[name](word, rng, min_len)
        if out != word:
            return out
    return word


def _split(text: str) -> list[str]:
    """Tokens at even indices, the whitespace between them at odd ones (``"".join`` restores)."""
    return _SPLIT.split(text)


def _token_indices(parts: Sequence[str]) -> list[int]:
    return [i for i in range(0, len(parts), 2) if parts[i]]


def typo_noise(text: str, rng: random.Random, p: float = 0.3,
               min_len: int = MIN_WORD_LEN) -> str:
    """Give each whitespace token, with probability ``p``, exactly one random character edit.

    Used as the robustness perturbation of the benchmark and as character-level noise. A
    probability is drawn for every token (also the ones too short to edit), so the random
    stream does not depend on which words are editable.
    """
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"p must be in [0, 1], got {p}")
    parts = _split(text)
    for i in _token_indices(parts):
        if rng.random() < p:
            parts[i] = random_char_edit(parts[i], rng, min_len)
    return "".join(parts)


def normalize_phrase(text: str) -> str:
    """Lower-case and collapse whitespace: the key form of the paraphrase map."""
    return " ".join(text.lower().split())


def match_case(original: str, replacement: str) -> str:
    """``replacement`` in the capitalisation style of ``original`` (ALL CAPS, Title, or as is).

    A lower-case original keeps the replacement as written, so acronyms like "NYC" survive.
    """
    if not replacement:
        return replacement
    if len(original) > 1 and original.isupper():
        return replacement.upper()
    if original[:1].isupper():
        return replacement[0].upper() + replacement[1:]
    return replacement


class CharAugment:
    """Character-level augmentation: one edit in one randomly chosen editable word."""

    level = "char"

    def __init__(self, min_len: int = MIN_WORD_LEN) -> None:
        self.min_len = min_len

    def __call__(self, text: str, rng: random.Random) -> str | None:
        """The text with one word edited once, or None when no word can be edited."""
        parts = _split(text)
        spots = [i for i in _token_indices(parts) if editable(parts[i], self.min_len)]
        rng.shuffle(spots)
        for i in spots:
            edited = random_char_edit(parts[i], rng, self.min_len)
            if edited != parts[i]:
                parts[i] = edited
                return "".join(parts)
        return None

    def describe(self) -> dict[str, Any]:
        """Configuration for logs and config files."""
        return {"ops": list(CHAR_OPS), "min_len": self.min_len}


class TokenAugment:
    """Token-level augmentation: swap two adjacent tokens, or replace tokens by synonyms.

    Each call picks one of the applicable methods at random (the other one if it fails).
    Synonym lookup is lower-case on the token without surrounding punctuation; between 1 and
    ``max_replacements`` tokens with a synonym are replaced.
    """

    level = "token"

    def __init__(self, synonyms: Mapping[str, Sequence[str]] | None = None, swap: bool = True,
                 max_replacements: int = 2) -> None:
        if max_replacements < 1:
            raise ValueError(f"max_replacements must be >= 1, got {max_replacements}")
        self.synonyms: dict[str, list[str]] = {
            k.lower(): [s for s in v if s and s.strip()] for k, v in (synonyms or {}).items()
        }
        self.swap = swap
        self.max_replacements = max_replacements

    def _candidates(self, token: str) -> tuple[str, str, str, list[str]]:
        """(prefix, core, suffix, synonyms different from the core) of a token."""
        m = _AFFIXES.match(token)
        prefix, core, suffix = m.groups() if m else ("", token, "")
        syns = self.synonyms.get(core.lower(), [])
        return prefix, core, suffix, [s for s in syns if s.lower() != core.lower()]

    def swap_tokens(self, text: str, rng: random.Random) -> str | None:
        """Swap two adjacent, different tokens (whitespace kept), or None for < 2 tokens."""
        parts = _split(text)
        idx = _token_indices(parts)
        pairs = [(a, b) for a, b in itertools.pairwise(idx) if parts[a] != parts[b]]
        if not pairs:
            return None
        a, b = rng.choice(pairs)
        parts[a], parts[b] = parts[b], parts[a]
        return "".join(parts)

    def replace_synonyms(self, text: str, rng: random.Random) -> str | None:
        """Replace 1..max_replacements tokens by a random synonym each, or None if none has one."""
        parts = _split(text)
        spots = [i for i in _token_indices(parts) if self._candidates(parts[i])[3]]
        if not spots:
            return None
        n = rng.randint(1, min(self.max_replacements, len(spots)))
        for i in sorted(rng.sample(spots, n)):
            prefix, core, suffix, syns = self._candidates(parts[i])
            parts[i] = prefix + match_case(core, rng.choice(syns)) + suffix
        out = "".join(parts)
        return out if out != text else None

    def __call__(self, text: str, rng: random.Random) -> str | None:
        """A token-level variant of ``text``, or None when neither method can change it."""
        methods = [self.replace_synonyms]
        if self.swap:
            methods.append(self.swap_tokens)
        rng.shuffle(methods)
        for method in methods:
            out = method(text, rng)
            if out is not None and out != text:
                return out
        return None

    def describe(self) -> dict[str, Any]:
        """Configuration for logs and config files."""
        return {"swap": self.swap, "max_replacements": self.max_replacements,
                "synonym_words": len(self.synonyms)}


def paraphrase_map(pairs: Iterable[tuple[str, str]]) -> dict[str, list[str]]:
    """Symmetric ``{normalised phrase: [paraphrases]}`` from (a, b) pairs.

    Keys are lower-cased with whitespace collapsed (:func:`normalize_phrase`); values keep their
    surface form, in first-seen order, without duplicates (by normalised form) or the key
    itself. Empty strings and self-pairs are skipped.
    """
    out: dict[str, list[str]] = {}
    seen: dict[str, set[str]] = {}
    for a, b in pairs:
        a, b = " ".join(a.split()), " ".join(b.split())
        ka, kb = normalize_phrase(a), normalize_phrase(b)
        if not ka or not kb or ka == kb:
            continue
        for key, value, vkey in ((ka, b, kb), (kb, a, ka)):
            if vkey not in seen.setdefault(key, set()):
                seen[key].add(vkey)
                out.setdefault(key, []).append(value)
    return out


class PhraseAugment:
    """Phrase-level augmentation: a random paraphrase of the whole phrase from a given map."""

    level = "phrase"

    def __init__(self, paraphrases: Mapping[str, Sequence[str]] | None = None) -> None:
        self.paraphrases: dict[str, list[str]] = {
            normalize_phrase(k): list(v) for k, v in (paraphrases or {}).items()
        }

    def options(self, text: str) -> list[str]:
        """The paraphrases of ``text`` that differ from it (after normalisation)."""
        key = normalize_phrase(text)
        return [p for p in self.paraphrases.get(key, []) if normalize_phrase(p) != key]

    def __call__(self, text: str, rng: random.Random) -> str | None:
        """A random paraphrase of ``text``, or None when the map has none."""
        options = self.options(text)
        return rng.choice(options) if options else None

    def describe(self) -> dict[str, Any]:
        """Configuration for logs and config files."""
        return {"paraphrase_keys": len(self.paraphrases)}


class Augmenter:
    """One random PEARL augmentation per call, each level switchable for ablations.

    Per call: if the phrase level is enabled and ``text`` has a paraphrase, it is used with
    probability ``prefer_phrase`` (the strongest signal, per the paper's ablation); otherwise
    the enabled levels are tried in a random order drawn by ``weights`` (default equal), the
    next one when a level returns None. If every enabled level fails, the last resort is one
    character edit on any word with a letter (ignoring the minimum length) when the char level
    is enabled, else the text itself (an identity positive). Disabled levels are never used;
    with all three disabled every call returns the text (the "no augmentation" ablation).
    Zero-weight levels are only tried as fallbacks.
    """

    def __init__(
        self,
        char: bool = True,
        token: bool = True,
        phrase: bool = True,
        synonyms: Mapping[str, Sequence[str]] | None = None,
        paraphrases: Mapping[str, Sequence[str]] | None = None,
        weights: Mapping[str, float] | None = None,
        prefer_phrase: float = 0.5,
        min_word_len: int = MIN_WORD_LEN,
        max_replacements: int = 2,
    ) -> None:
        weights = dict(weights or {})
        unknown = set(weights) - set(LEVELS)
        if unknown:
            raise ValueError(f"unknown augmentation level(s) {sorted(unknown)}; levels: {LEVELS}")
        if any(w < 0 for w in weights.values()):
            raise ValueError(f"weights must be >= 0, got {weights}")
        if not 0.0 <= prefer_phrase <= 1.0:
            raise ValueError(f"prefer_phrase must be in [0, 1], got {prefer_phrase}")
        self.enabled = {"char": char, "token": token, "phrase": phrase}
        self.weights = {lv: float(weights.get(lv, 1.0)) for lv in LEVELS}
        self.prefer_phrase = prefer_phrase
        self.char = CharAugment(min_word_len)
        self.token = TokenAugment(synonyms, max_replacements=max_replacements)
        self.phrase = PhraseAugment(paraphrases)
        self._by_level: dict[str, Callable[[str, random.Random], str | None]] = {
            "char": self.char, "token": self.token, "phrase": self.phrase,
        }

    @property
    def levels(self) -> list[str]:
        """The enabled levels, in :data:`LEVELS` order."""
        return [lv for lv in LEVELS if self.enabled[lv]]

    def _order(self, rng: random.Random) -> list[str]:
        """Enabled levels in a weighted random order (zero-weight levels last, fixed order)."""
        pool = [lv for lv in self.levels if self.weights[lv] > 0]
        order: list[str] = []
        while pool:
            pick = rng.choices(pool, weights=[self.weights[lv] for lv in pool])[0]
            order.append(pick)
            pool.remove(pick)
        return order + [lv for lv in self.levels if self.weights[lv] == 0]

    def augment(self, text: str, rng: random.Random) -> tuple[str, str]:
        """``(positive, level used)``; the level is one of LEVELS, "char_fallback" or "identity"."""
        if (self.enabled["phrase"] and self.phrase.options(text)
                and rng.random() < self.prefer_phrase):
            out = self.phrase(text, rng)
            if out is not None:
                return out, "phrase"
        for level in self._order(rng):
            out = self._by_level[level](text, rng)
            if out is not None and out != text:
                return out, level
        if self.enabled["char"]:
            out = CharAugment(min_len=1)(text, rng)
            if out is not None:
                return out, "char_fallback"
        logger.debug("no augmentation applies to %r; using it unchanged", text)
        return text, "identity"

    def __call__(self, text: str, rng: random.Random) -> str:
        """A positive for ``text`` (see the class docstring for the level choice)."""
        return self.augment(text, rng)[0]

    def describe(self) -> dict[str, Any]:
        """The configuration as a JSON-ready dict (for training logs and config files)."""
        return {
            "levels": self.levels,
            "enabled": dict(self.enabled),
            "weights": dict(self.weights),
            "prefer_phrase": self.prefer_phrase,
            "char": self.char.describe(),
            "token": self.token.describe(),
            "phrase": self.phrase.describe(),
        }
