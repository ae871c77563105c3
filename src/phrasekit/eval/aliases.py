"""Alias retrieval: top-1 canonical name for a real alias (DBpedia redirects), per alias kind.

Reads ``aliases.tsv.gz`` written by ``phrasekit train pearl-data --redirects FILE`` (header
``alias canonical kind split``). For one split, :class:`AliasScorer` takes per kind up to
``per_kind`` aliases, one per canonical (the first in a stable hash order, so every build and
run agrees), and retrieves each among the canonicals of all the sampled aliases (about
``4 x per_kind`` candidates): correct when the nearest candidate by cosine is its canonical.
Scores in percent: ``alias_<split>_<kind>`` per kind, and ``alias_<split>`` their mean (the kinds
weigh the same whatever their share of the split). The dev split takes part in PEARL's dev
selection (:class:`phrasekit.eval.dev.DevScorer`); the test split is for a final measurement.
"""

from __future__ import annotations

import csv
import gzip
import logging
import zlib
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from phrasekit.encoders.base import Encoder
from phrasekit.eval.base import embed_unique, markdown_table, nearest, percent, stable_rank
from phrasekit.paths import csv_reader, utf8_problem
from phrasekit.registry import as_encoder

logger = logging.getLogger(__name__)

ALIAS_FILE = "aliases.tsv.gz"
ALIAS_COLUMNS = ["alias", "canonical", "kind", "split"]
PER_KIND = 1000


def alias_file(path: str | Path) -> Path:
    """The alias file itself, or ``aliases.tsv.gz`` inside a PEARL data folder."""
    path = Path(path)
    return path / ALIAS_FILE if path.is_dir() else path


def read_alias_split(path: str | Path, split: str) -> list[tuple[str, str, str]]:
    """(alias, canonical, kind) rows of one split; a malformed file raises ValueError."""
    path = alias_file(path)
    rows: list[tuple[str, str, str]] = []
    opener = gzip.open if path.suffix.lower() == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8", newline="") as fh:
            reader = csv_reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE)
            if next(reader, None) != ALIAS_COLUMNS:
                raise ValueError(f"{path}:1: expected the header {' '.join(ALIAS_COLUMNS)} "
                                 "(build it with `phrasekit train pearl-data --redirects "
                                 "FILE`)")
            for line_no, row in enumerate(reader, start=2):
                if len(row) != 4:
                    raise ValueError(f"{path}:{line_no}: expected 4 tab-separated fields, "
                                     f"got {row!r}")
                blank = next((ALIAS_COLUMNS[i] for i in range(4) if not row[i].strip()), None)
                if blank is not None:
                    raise ValueError(f"{path}:{line_no}: empty {blank} field")
                if row[3] == split:
                    rows.append((row[0], row[1], row[2]))
    except UnicodeDecodeError as exc:
        raise ValueError(utf8_problem(str(path), exc, path)) from None
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise ValueError(f"{path}: cannot read ({exc})") from None
    if not rows:
        raise ValueError(f"{path}: no pair in the {split!r} split")
    return rows


def sample_queries(rows: list[tuple[str, str, str]], per_kind: int
                   ) -> dict[str, list[tuple[str, str]]]:
    """Per kind, up to ``per_kind`` (alias, canonical) pairs, one per canonical, hash-ordered."""
    by_kind: dict[str, dict[str, str]] = defaultdict(dict)
    for alias, canonical, kind in sorted(rows, key=lambda r: stable_rank(r[0])):
        by_kind[kind].setdefault(canonical, alias)
    return {kind: sorted(((a, c) for c, a in found.items()),
                         key=lambda p: stable_rank(p[1]))[:per_kind]
            for kind, found in sorted(by_kind.items())}


@dataclass
class AliasScorer:
    """Loads one split once; ``__call__(encoder)`` returns per-kind and mean top-1 accuracy."""

    path: Path
    split: str = "dev"
    per_kind: int = PER_KIND
    queries: dict[str, list[tuple[str, str]]] = field(init=False)

    def __post_init__(self) -> None:
        self.path = alias_file(self.path)
        self.queries = sample_queries(read_alias_split(self.path, self.split), self.per_kind)
        self.candidates = sorted({c for pairs in self.queries.values() for _, c in pairs})
        logger.info("alias %s: %s queries, %d candidates", self.split,
                    {k: len(v) for k, v in self.queries.items()}, len(self.candidates))

    def strings(self) -> list[str]:
        """Every string of the sampled split (so training data can be checked against them)."""
        return [s for pairs in self.queries.values() for pair in pairs for s in pair]

    def __call__(self, encoder: Encoder) -> dict[str, float]:
        """Top-1 accuracy in percent per kind (``alias_<split>_<kind>``) and their mean."""
        aliases = [a for pairs in self.queries.values() for a, _ in pairs]
        emb = embed_unique(encoder, self.candidates + aliases)
        best = nearest(emb[len(self.candidates):], emb[: len(self.candidates)])
        retrieved = np.asarray(self.candidates, dtype=object)[best]
        scores: dict[str, float] = {}
        start = 0
        for kind, pairs in self.queries.items():
            gold = np.asarray([c for _, c in pairs], dtype=object)
            hits = retrieved[start : start + len(pairs)] == gold
            scores[f"alias_{self.split}_{kind}"] = percent(float(np.mean(hits)))
            start += len(pairs)
        scores[f"alias_{self.split}"] = round(float(np.mean(list(scores.values()))), 2)
        return scores


def score_models(models: list[str], path: str | Path, split: str = "dev",
                 per_kind: int = PER_KIND) -> list[tuple[str, dict[str, float]]]:
    """(model name, scores) of :class:`AliasScorer` for every model, the split loaded once;
    with ``related_<split>`` too where ``related.tsv.gz`` sits beside the alias file."""
    # imported here: it needs scikit-learn, which `train --help` (reading ALIAS_FILE) skips
    from phrasekit.eval.relatedness import RelatednessScorer, related_file

    scorers: list[Callable[[Encoder], dict[str, float]]] = [
        AliasScorer(Path(path), split, per_kind)]
    related = related_file(alias_file(path))
    if related.is_file():
        scorers.append(RelatednessScorer(related, split))
    out = []
    for model in models:
        encoder = as_encoder(model)
        out.append((encoder.name, {k: v for s in scorers for k, v in s(encoder).items()}))
    return out


def format_alias_table(rows: list[tuple[str, dict[str, float]]], split: str) -> str:
    """Markdown table: one row per model, one column per alias kind and the mean."""
    kinds = sorted({k for _, s in rows for k in s if k.startswith(f"alias_{split}_")})
    extra = [f"related_{split}"] if all(f"related_{split}" in s for _, s in rows) else []
    headers = ["model", *(k.removeprefix(f"alias_{split}_") for k in kinds), f"alias_{split}",
               *extra]
    return markdown_table(headers, [[name, *(f"{scores[k]:.1f}"
                                             for k in [*kinds, f"alias_{split}", *extra])]
                                    for name, scores in rows])
