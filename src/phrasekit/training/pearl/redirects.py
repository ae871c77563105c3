"""Real aliases for PEARL from DBpedia redirects: read, filter, classify, split, write.

Input: the gzip TSV of ``../shared/tools/dbpedia_redirects.py`` (header ``alias canonical
n_tokens``; DBpedia redirects, CC BY-SA 3.0). :func:`build_alias_dataset` writes
``aliases.tsv.gz`` (header ``alias canonical kind split``, sorted by canonical then alias) and
returns the counts of every step, in order:

1. **normalise** both sides (:func:`~phrasekit.training.data.sources.normalize`, the key of the
   benchmark-leakage filter) and drop pairs whose sides become equal;
2. **leakage**: drop every pair with a side equal to any benchmark string
   (:class:`~phrasekit.training.data.leakage.BenchmarkStringFilter`: AutoFJ left and right titles,
   YAGO proxy, BiRD, Turney, PPDB, CoNLL, BC5CDR, STS-B), counted per benchmark file;
3. **looser redirects**: drop sub-page links (``/``, ``:`` or ``#`` in the alias), sides
   without a letter or shorter than 2 characters, canonicals of more than
   :data:`MAX_CANONICAL_TOKENS` tokens, sub-topics redirected to their parent (the canonical's
   content words a strict subset of the alias's: ``strong anthropic principle -> anthropic
   principle``) and aliases that point to several canonicals;
4. **kinds** (:func:`alias_kind`): ``surface`` (spelling, spacing, punctuation, initials,
   transliteration), ``partial`` (the alias drops words of the name: a surname, a middle
   name), ``abbreviation`` (acronyms and clippings: the shorter side's letters in order in the
   longer, from its first letter) and ``different`` (another name with little in common);
5. **split by canonical** (a stable hash, 90 / 5 / 5 train / dev / test): no canonical is in
   two splits, and dev / test pairs with a string that occurs in an earlier split are dropped.
"""

from __future__ import annotations

import csv
import hashlib
import logging
import os
import re
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rapidfuzz import fuzz

from phrasekit.eval.aliases import ALIAS_COLUMNS, ALIAS_FILE
from phrasekit.io import write_json
from phrasekit.training.data.leakage import BenchmarkStringFilter, collect_test_strings
from phrasekit.training.data.sources import normalize, open_text, write_gz_text

logger = logging.getLogger(__name__)

ALIAS_REPORT = "aliases_report.json"
KINDS = ("surface", "partial", "abbreviation", "different")
SPLITS = ("train", "dev", "test")
#: Percent of the canonical hash space per split (train, dev, test).
SPLIT_PERCENT = (90, 5, 5)
MAX_CANONICAL_TOKENS = 6
_SUBPAGE = re.compile(r"[/:#]")
_LETTER = re.compile(r"[^\W\d_]")
_STOP = frozenset({"the", "a", "an", "of", "and", "&", "in", "for", "on", "at", "de", "la"})


@dataclass(frozen=True)
class AliasPair:
    """One filtered redirect: the alias, its canonical name, its kind and its split."""

    alias: str
    canonical: str
    kind: str
    split: str


# ---------------------------------------------------------------------------------- read
def _redirect_rows(path: Path) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) of a redirects TSV after checking its header."""
    with open_text(path) as fh:
        reader = csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE)
        try:
            header = next(reader, None)
            if not header or header[:2] != ["alias", "canonical"]:
                raise ValueError(f"{path}:1: expected the header 'alias<TAB>canonical<TAB>"
                                 "n_tokens' (build the file with "
                                 "../shared/tools/dbpedia_redirects.py)")
            yield from enumerate(reader, start=2)
        except UnicodeDecodeError as exc:
            after = f" after line {reader.line_num}" if reader.line_num else ""
            raise ValueError(f"{path}: not UTF-8 text{after} ({exc.reason})") from None


def check_redirects(path: str | Path) -> None:
    """Fail fast (ValueError / FileNotFoundError naming the file) on a bad redirects file."""
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"{path} is a folder, not a redirects file")
    if not path.is_file():
        raise FileNotFoundError(f"{path}: redirects file not found")
    next(_redirect_rows(path), None)


def read_redirects(path: str | Path) -> Iterator[tuple[str, str]]:
    """(alias, canonical) rows of a redirects TSV; a malformed line raises ValueError naming it."""
    path = Path(path)
    for line_no, row in _redirect_rows(path):
        if len(row) < 2 or not row[0].strip() or not row[1].strip():
            raise ValueError(f"{path}:{line_no}: expected alias<TAB>canonical, got {row!r}")
        yield row[0], row[1]


# ---------------------------------------------------------------------------------- kinds
def _compact(text: str) -> str:
    """Letters and digits only, accents removed: what spelling variants share."""
    folded = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in folded if ch.isalnum())


def _tokens(text: str) -> list[str]:
    return [t for t in (_compact(w) for w in text.split()) if t]


def _content(tokens: list[str]) -> set[str]:
    return {t for t in tokens if t not in _STOP}


def _same_token(a: str, b: str) -> bool:
    """Equal, an initial of the other, or a close spelling."""
    if a == b or (len(a) == 1 and b.startswith(a)) or (len(b) == 1 and a.startswith(b)):
        return True
    return fuzz.ratio(a, b) >= 60


def _is_surface(alias: str, canonical: str) -> bool:
    """Spelling, spacing, punctuation, initials or transliteration of the same words."""
    a, c = _compact(alias), _compact(canonical)
    if a == c:
        return True
    ta, tc = _tokens(alias), _tokens(canonical)
    if len(ta) == len(tc) and all(_same_token(x, y) for x, y in zip(ta, tc, strict=True)):
        return True
    return abs(len(a) - len(c)) <= 3 and fuzz.ratio(a, c) >= 80


def _is_subsequence(short: str, long: str) -> bool:
    letters = iter(long)
    return all(ch in letters for ch in short)


def _is_abbreviation(alias: str, canonical: str) -> bool:
    """The shorter side's letters appear in order in the longer one, from its first letter."""
    a, c = _compact(alias), _compact(canonical)
    short, long = (a, c) if len(a) <= len(c) else (c, a)
    return (len(short) >= 2 and short[0] == long[0] and len(short) <= 0.6 * len(long)
            and _is_subsequence(short, long))


def is_subtopic(alias: str, canonical: str) -> bool:
    """The canonical's content words are a strict subset of the alias's (a looser link)."""
    ca, cc = _content(_tokens(alias)), _content(_tokens(canonical))
    return bool(cc) and cc < ca


def alias_kind(alias: str, canonical: str) -> str:
    """``surface``, ``partial``, ``abbreviation`` or ``different`` (see the module docstring)."""
    if _is_surface(alias, canonical):
        return "surface"
    ca, cc = _content(_tokens(alias)), _content(_tokens(canonical))
    if ca and ca < cc:
        return "partial"
    if _is_abbreviation(alias, canonical):
        return "abbreviation"
    return "different"


def loose_reason(alias: str, canonical: str) -> str | None:
    """Why a redirect is too loose to be an alias (None: keep it)."""
    if _SUBPAGE.search(alias):
        return "subpage"
    if min(len(alias), len(canonical)) < 2 or not (_LETTER.search(alias)
                                                   and _LETTER.search(canonical)):
        return "no_name"
    if len(canonical.split()) > MAX_CANONICAL_TOKENS:
        return "long_canonical"
    if not _is_surface(alias, canonical) and is_subtopic(alias, canonical):
        return "subtopic"
    return None


# ---------------------------------------------------------------------------------- split
def split_of(canonical: str) -> str:
    """The split of a canonical name: a stable hash, so every build agrees."""
    bucket = int.from_bytes(hashlib.blake2b(canonical.encode("utf-8"), digest_size=8).digest(),
                            "big") % 100
    edge = 0
    for name, share in zip(SPLITS, SPLIT_PERCENT, strict=True):
        edge += share
        if bucket < edge:
            return name
    return SPLITS[-1]


def _split_pairs(pairs: list[tuple[str, str]], counts: Counter[str]) -> list[AliasPair]:
    """Assign splits by canonical; drop dev / test pairs reusing a string of an earlier split."""
    by_split: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for alias, canonical in pairs:
        by_split[split_of(canonical)].append((alias, canonical))
    seen: set[str] = set()
    out: list[AliasPair] = []
    for split in SPLITS:
        kept = [(a, c) for a, c in by_split[split] if split == "train"
                or (a not in seen and c not in seen)]
        if split != "train":
            counts[f"dropped_{split}_string_in_earlier_split"] += len(by_split[split]) - len(kept)
        for a, c in kept:
            seen.update((a, c))
            out.append(AliasPair(a, c, alias_kind(a, c), split))
    return out


# ---------------------------------------------------------------------------------- build
def filter_redirects(rows: Iterable[tuple[str, str]], filt: BenchmarkStringFilter
                     ) -> tuple[list[AliasPair], dict[str, Any]]:
    """Steps 1-5 of the module docstring: the kept pairs and the counts of every step."""
    counts: Counter[str] = Counter()
    kept: dict[tuple[str, str], None] = {}
    for alias_raw, canonical_raw in rows:
        counts["read"] += 1
        alias, canonical = normalize(alias_raw), normalize(canonical_raw)
        if alias == canonical:
            counts["dropped_equal_after_normalising"] += 1
        elif not filt.keep_pair(alias, canonical):
            counts["dropped_benchmark_string"] += 1
        elif (reason := loose_reason(alias, canonical)) is not None:
            counts[f"dropped_loose_{reason}"] += 1
        elif (alias, canonical) in kept:
            counts["dropped_duplicate"] += 1
        else:
            kept[(alias, canonical)] = None
    targets: dict[str, set[str]] = defaultdict(set)
    for alias, canonical in kept:
        targets[alias].add(canonical)
    pairs = [(a, c) for a, c in kept if len(targets[a]) == 1]
    counts["dropped_loose_ambiguous_alias"] = len(kept) - len(pairs)
    result = sorted(_split_pairs(pairs, counts), key=lambda p: (p.canonical, p.alias))
    return result, _counts_report(result, counts)


def _counts_report(pairs: list[AliasPair], counts: Counter[str]) -> dict[str, Any]:
    per_split = {s: Counter(p.kind for p in pairs if p.split == s) for s in SPLITS}
    return {
        "steps": dict(counts),
        "pairs": len(pairs),
        "canonicals": {s: len({p.canonical for p in pairs if p.split == s}) for s in SPLITS},
        "pairs_per_split_and_kind": {s: {k: per_split[s].get(k, 0) for k in KINDS}
                                     for s in SPLITS},
    }


def write_aliases(path: Path, pairs: Iterable[AliasPair]) -> None:
    """``aliases.tsv.gz`` (atomic, reproducible bytes)."""
    header = "\t".join(ALIAS_COLUMNS) + "\n"
    write_gz_text(path, [header, *(f"{p.alias}\t{p.canonical}\t{p.kind}\t{p.split}\n"
                                   for p in pairs)])


def build_alias_dataset(redirects: str | Path, out_dir: str | Path,
                        benchmark_dir: str | Path) -> dict[str, Any]:
    """Filter, classify and split ``redirects`` into ``out_dir/aliases.tsv.gz`` and write the
    counts to ``out_dir/aliases_report.json`` (each file replaced atomically); the report."""
    check_redirects(redirects)
    out = Path(out_dir)
    filt = BenchmarkStringFilter(collect_test_strings(benchmark_dir, strict=True))
    pairs, report = filter_redirects(read_redirects(redirects), filt)
    if not pairs:
        raise ValueError(f"{redirects}: no redirect pair survived the filters")
    out.mkdir(parents=True, exist_ok=True)
    write_aliases(out / ALIAS_FILE, pairs)
    report["test_string_filter"] = {
        "removed_pairs": filt.removed_pairs_unique,
        "per_file": {rel: n for rel, n in sorted(filt.removed_pairs.items())},
    }
    report["source"] = {"file": Path(redirects).name, "benchmark_dir": str(benchmark_dir),
                        "data": "DBpedia redirects (from Wikipedia), CC BY-SA 3.0"}
    write_json(out / ALIAS_REPORT, report)
    for name in (ALIAS_FILE, ALIAS_REPORT):
        os.chmod(out / name, 0o644)  # atomic_write's temp files are private (0600)
    logger.info("aliases: %d pairs (%s) -> %s", len(pairs),
                ", ".join(f"{s} {n}" for s, n in report["canonicals"].items()), out / ALIAS_FILE)
    return report
