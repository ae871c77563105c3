"""``PhraseVocabulary``: the phrases of a corpus with counts, document frequencies, surface forms
and, per document, which phrases occur in it (what topic models need to place documents).

Phrases are stored under a normalised *key* (e.g. lower-cased, leading determiners stripped);
``surface_forms`` keeps every original spelling with its count so that what users see is the
most frequent surface form (``surface``). A *word* is a key of one whitespace token
("inflation", "e-mail"); a *phrase* has two or more ("interest rates", "Tony Blair").

Order: phrases are ranked by document frequency, then count, then key (deterministic).
"""

from __future__ import annotations

import gzip
import json
import logging
import zlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from phrasekit.io import atomic_write, json_loads

logger = logging.getLogger(__name__)

FORMAT_NAME = "phrasekit.phrase_vocabulary"
FORMAT_VERSION = 1

#: ``sources`` key used for occurrences found as a noun chunk (and not as a named entity).
NOUN_CHUNK = "NOUN_CHUNK"


def _rank_key(key: str, doc_freq: int, count: int) -> tuple[int, int, str]:
    return (-doc_freq, -count, key)


_T = TypeVar("_T")


def most_frequent(counter: Mapping[str, int]) -> str | None:
    """The key with the highest count; ties go to the alphabetically first key."""
    if not counter:
        return None
    return min(counter.items(), key=lambda kv: (-kv[1], kv[0]))[0]


@dataclass
class PhraseVocabulary:
    """Phrases of a corpus (parallel lists, one entry per phrase) plus per-document occurrences.

    Attributes:
        phrases: normalised keys, ranked by doc_freq, count, key.
        counts: total occurrences of each phrase in the corpus.
        doc_freq: number of documents each phrase occurs in.
        surface_forms: per phrase, original spelling -> count.
        sources: per phrase, where it was found -> count: an entity label ("ORG", "PERSON"...)
            or ``"NOUN_CHUNK"``.
        doc_ids: ids of the corpus documents, in corpus order (all of them, even documents
            without any phrase).
        doc_phrases: per document, phrase key -> occurrences in that document.
        params: the extraction settings (stored with the cache so a stale cache is noticeable).
    """

    phrases: list[str]
    counts: list[int]
    doc_freq: list[int]
    surface_forms: list[dict[str, int]]
    sources: list[dict[str, int]]
    doc_ids: list[str]
    doc_phrases: list[dict[str, int]]
    params: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        n = len(self.phrases)
        for name in ("counts", "doc_freq", "surface_forms", "sources"):
            if len(getattr(self, name)) != n:
                raise ValueError(f"{name} has {len(getattr(self, name))} entries, phrases has {n}")
        if len(self.doc_ids) != len(self.doc_phrases):
            raise ValueError(
                f"doc_ids has {len(self.doc_ids)} entries, doc_phrases {len(self.doc_phrases)}"
            )
        self._index = {p: i for i, p in enumerate(self.phrases)}
        if len(self._index) != n:
            raise ValueError("phrases contains duplicates")

    # ------------------------------------------------------------------ building
    @classmethod
    def from_occurrences(
        cls,
        doc_ids: list[str],
        occurrences: Iterable[Iterable[tuple[str, str, str]]],
        params: dict[str, Any] | None = None,
    ) -> PhraseVocabulary:
        """Build from per-document lists of ``(key, surface, source)`` occurrences."""
        counts: dict[str, int] = {}
        dfs: dict[str, int] = {}
        surfaces: dict[str, dict[str, int]] = {}
        sources: dict[str, dict[str, int]] = {}
        doc_phrases: list[dict[str, int]] = []
        for occ in occurrences:
            per_doc: dict[str, int] = {}
            for key, surface, source in occ:
                per_doc[key] = per_doc.get(key, 0) + 1
                counts[key] = counts.get(key, 0) + 1
                sf = surfaces.setdefault(key, {})
                sf[surface] = sf.get(surface, 0) + 1
                so = sources.setdefault(key, {})
                so[source] = so.get(source, 0) + 1
            for key in per_doc:
                dfs[key] = dfs.get(key, 0) + 1
            doc_phrases.append(per_doc)
        if len(doc_phrases) != len(doc_ids):
            raise ValueError(f"{len(doc_ids)} doc ids but {len(doc_phrases)} occurrence lists")
        keys = sorted(counts, key=lambda k: _rank_key(k, dfs[k], counts[k]))
        return cls(
            phrases=keys,
            counts=[counts[k] for k in keys],
            doc_freq=[dfs[k] for k in keys],
            surface_forms=[dict(sorted(surfaces[k].items())) for k in keys],
            sources=[dict(sorted(sources[k].items())) for k in keys],
            doc_ids=list(doc_ids),
            doc_phrases=doc_phrases,
            params=dict(params or {}),
        )

    # ------------------------------------------------------------------ access
    def __len__(self) -> int:
        return len(self.phrases)

    def __contains__(self, phrase: object) -> bool:
        return phrase in self._index

    def __repr__(self) -> str:
        return (
            f"PhraseVocabulary({len(self)} phrases: {self.n_words} words, "
            f"{len(self) - self.n_words} multi-word; {self.n_docs} docs)"
        )

    @property
    def n_docs(self) -> int:
        return len(self.doc_ids)

    def index(self, phrase: str) -> int:
        """Position of a phrase key; ``KeyError`` if absent."""
        return self._index[phrase]

    def get(self, phrase: str) -> dict[str, Any] | None:
        """Everything known about one phrase key, or None."""
        i = self._index.get(phrase)
        if i is None:
            return None
        return {
            "phrase": phrase,
            "surface": self.surface[i],
            "count": self.counts[i],
            "doc_freq": self.doc_freq[i],
            "surface_forms": dict(self.surface_forms[i]),
            "sources": dict(self.sources[i]),
            "is_word": self.is_word(i),
        }

    @property
    def surface(self) -> list[str]:
        """The most frequent surface form of each phrase (what to show users)."""
        return [
            most_frequent(sf) or p for p, sf in zip(self.phrases, self.surface_forms, strict=True)
        ]

    def n_tokens(self, i: int) -> int:
        """Number of whitespace tokens of phrase ``i``."""
        return len(self.phrases[i].split())

    def is_word(self, i: int) -> bool:
        """True for a single-token term ("inflation"), False for a multi-word phrase."""
        return self.n_tokens(i) == 1

    @property
    def n_words(self) -> int:
        return sum(1 for i in range(len(self)) if self.is_word(i))

    def words(self) -> list[str]:
        """Keys of the single-token terms, in rank order."""
        return [p for i, p in enumerate(self.phrases) if self.is_word(i)]

    def multiword(self) -> list[str]:
        """Keys of the multi-token phrases, in rank order."""
        return [p for i, p in enumerate(self.phrases) if not self.is_word(i)]

    def top(self, n: int = 20) -> list[tuple[str, int, int]]:
        """The ``n`` highest-ranked phrases as ``(surface, count, doc_freq)``."""
        surf = self.surface
        return [(surf[i], self.counts[i], self.doc_freq[i]) for i in range(min(n, len(self)))]

    # ------------------------------------------------------------------ filtering
    def filter(
        self,
        min_count: int = 1,
        min_df: int = 1,
        max_df: float | int | None = None,
        max_phrases: int | None = None,
        kind: str = "all",
    ) -> PhraseVocabulary:
        """A new vocabulary keeping the phrases that pass every threshold.

        Args:
            min_count: minimum total occurrences.
            min_df: minimum number of documents.
            max_df: drop phrases in more documents than this: an int (documents) or a float in
                (0, 1] (share of documents). None keeps all.
            max_phrases: keep at most this many, the highest-ranked (doc_freq, count, key).
            kind: ``"all"``, ``"words"`` (single tokens) or ``"phrases"`` (multi-token).

        Per-document phrase lists are restricted to the kept phrases; documents stay in place.
        """
        if min_count < 1 or min_df < 1:
            raise ValueError(f"min_count and min_df must be >= 1, got {min_count}, {min_df}")
        if max_phrases is not None and max_phrases < 1:
            raise ValueError(f"max_phrases must be >= 1 or None, got {max_phrases}")
        if kind not in ("all", "words", "phrases"):
            raise ValueError(f"kind must be 'all', 'words' or 'phrases', got {kind!r}")
        df_cap = float("inf")
        if max_df is not None:
            if isinstance(max_df, float):
                if not 0.0 < max_df <= 1.0:
                    raise ValueError(f"a float max_df must be in (0, 1], got {max_df}")
                df_cap = max_df * self.n_docs
            else:
                df_cap = int(max_df)
        keep = [
            i
            for i in range(len(self))
            if self.counts[i] >= min_count
            and min_df <= self.doc_freq[i] <= df_cap
            and (kind == "all" or (kind == "words") == self.is_word(i))
        ]
        keep.sort(key=lambda i: _rank_key(self.phrases[i], self.doc_freq[i], self.counts[i]))
        if max_phrases is not None:
            keep = keep[:max_phrases]
        return self.subset([self.phrases[i] for i in keep])

    def subset(self, phrases: Iterable[str]) -> PhraseVocabulary:
        """A new vocabulary with only the given phrase keys (in the given order)."""
        keys = list(phrases)
        idx = [self._index[k] for k in keys]
        kept = set(keys)
        return PhraseVocabulary(
            phrases=keys,
            counts=[self.counts[i] for i in idx],
            doc_freq=[self.doc_freq[i] for i in idx],
            surface_forms=[dict(self.surface_forms[i]) for i in idx],
            sources=[dict(self.sources[i]) for i in idx],
            doc_ids=list(self.doc_ids),
            doc_phrases=[{k: c for k, c in d.items() if k in kept} for d in self.doc_phrases],
            params=dict(self.params),
        )

    # ------------------------------------------------------------------ persistence
    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (per-document phrases stored as ``[phrase_index, count]`` pairs)."""
        return {
            "format": FORMAT_NAME,
            "version": FORMAT_VERSION,
            "params": self.params,
            "phrases": [
                {
                    "phrase": p,
                    "count": self.counts[i],
                    "doc_freq": self.doc_freq[i],
                    "surface_forms": self.surface_forms[i],
                    "sources": self.sources[i],
                }
                for i, p in enumerate(self.phrases)
            ],
            "doc_ids": self.doc_ids,
            "doc_phrases": [
                sorted([self._index[k], c] for k, c in d.items()) for d in self.doc_phrases
            ],
        }

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> PhraseVocabulary:
        """Inverse of ``to_dict``; raises ``ValueError`` on a foreign or newer format."""
        rows = _checked_rows(obj)
        keys = [r["phrase"] for r in rows]
        return cls(
            phrases=keys,
            counts=[int(r["count"]) for r in rows],
            doc_freq=[int(r["doc_freq"]) for r in rows],
            surface_forms=[{k: int(v) for k, v in r["surface_forms"].items()} for r in rows],
            sources=[{k: int(v) for k, v in r["sources"].items()} for r in rows],
            doc_ids=[str(d) for d in obj["doc_ids"]],
            doc_phrases=[{keys[i]: int(c) for i, c in d} for d in obj["doc_phrases"]],
            params=dict(obj.get("params") or {}),
        )

    def to_json(self, path: str | Path | None = None) -> str | None:
        """Without ``path``: return the JSON string. With a path: write it atomically
        (gzip-compressed when the name ends in ``.gz``) and return None."""
        text = json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":"))
        if path is None:
            return text
        path = Path(path)
        if path.suffix.lower() == ".gz":
            with atomic_write(path, "wb") as fh:
                fh.write(gzip.compress(text.encode("utf-8"), mtime=0))
        else:
            with atomic_write(path) as fh:
                fh.write(text)
        logger.info(
            "wrote phrase vocabulary (%d phrases, %d docs) to %s", len(self), self.n_docs, path
        )
        return None

    @classmethod
    def from_json(cls, source: str | Path) -> PhraseVocabulary:
        """Read a vocabulary from a file written by ``to_json`` (``.gz`` or plain) or from a
        JSON string."""
        return _read_json(source, cls.from_dict)

    @staticmethod
    def read_surface(source: str | Path) -> list[str]:
        """Only the ``surface`` list of a saved vocabulary, in rank order: what a lookup such as
        ``neighbors`` needs, read without building the per-document tables."""
        return _read_json(source, lambda obj: [most_frequent(r["surface_forms"]) or r["phrase"]
                                               for r in _checked_rows(obj)])


def _checked_rows(obj: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The phrase rows of a saved vocabulary; ``ValueError`` on a foreign or newer format."""
    if obj.get("format") != FORMAT_NAME:
        raise ValueError(f"not a phrase vocabulary (format={obj.get('format')!r})")
    if int(obj.get("version", 0)) > FORMAT_VERSION:
        raise ValueError(f"phrase vocabulary version {obj['version']} is newer than supported")
    return obj["phrases"]


def _read_json(source: str | Path, build: Callable[[dict[str, Any]], _T]) -> _T:
    """``build`` applied to a saved vocabulary's JSON object (a ``.gz`` or plain file, or a JSON
    string); a damaged or foreign file raises ``ValueError`` naming it."""
    if isinstance(source, str) and source.lstrip().startswith("{"):
        return build(json_loads(source))
    path = Path(source)
    try:
        opener = gzip.open if path.suffix.lower() == ".gz" else open
        with opener(path, "rt", encoding="utf-8") as fh:
            obj = json_loads(fh.read())
        if not isinstance(obj, dict):
            raise TypeError(f"a JSON {type(obj).__name__}, not an object")
        return build(obj)
    except FileNotFoundError:
        raise
    except (ValueError, KeyError, TypeError, IndexError, AttributeError, OSError, EOFError,
            zlib.error) as exc:
        raise ValueError(f"{path}: not a readable phrase vocabulary ({exc})") from exc
