"""The benchmark-leakage filter of every training-data builder.

:func:`collect_test_strings` reads every evaluation string of the benchmark (test and dev
splits), and :class:`BenchmarkStringFilter` removes the training phrases and pairs equal to one,
after lower-casing and whitespace normalisation, counting what it removed per benchmark file
for the builders' reports. Test strings are also added with their leading/trailing punctuation
tokens stripped, and token-split mentions also detokenised.
"""

from __future__ import annotations

import csv
import functools
import logging
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from phrasekit.training.data.sources import (
    detokenize,
    normalize,
    open_text,
    read_mentions,
    read_ppdb,
    strip_outer_punct,
)

logger = logging.getLogger(__name__)

#: Reads the strings of one benchmark file.
Loader = Callable[[Path], Iterable[str]]
#: Reads ``{report key: strings}`` from the benchmark folder (``strict``: missing files raise).
Source = Callable[[Path, bool], dict[str, list[str]]]


# ---------------------------------------------------------------------------------- loaders
def _tsv_column_values(path: Path, columns: Sequence[int], skip_header: bool) -> list[str]:
    values: list[str] = []
    with open_text(path) as fh:
        reader = csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE)
        for i, row in enumerate(reader):
            if i == 0 and skip_header:
                continue
            values.extend(row[c] for c in columns if c < len(row))
    return values


def _tsv(*columns: int, skip_header: bool) -> Loader:
    return functools.partial(_tsv_column_values, columns=columns, skip_header=skip_header)


def _csv_titles(path: Path) -> list[str]:
    with open(path, encoding="utf-8", newline="") as fh:
        return [r.get("title") or "" for r in csv.DictReader(fh)]


def _turney(path: Path) -> Iterator[str]:
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            yield from (f.strip() for f in line.split(" | ") if f.strip())


def _ppdb_devtest(path: Path) -> list[str]:
    return [s for a, b, _ in read_ppdb(path, "devtest") for s in (a, b)]


def _mentions(path: Path) -> Iterator[str]:
    for toks in read_mentions(path):
        yield " ".join(toks)
        yield detokenize(toks)


# ---------------------------------------------------------------------------------- sources
def _file(rel: str, loader: Loader, key: str | None = None) -> Source:
    """The source of one benchmark file ``rel`` (reported under ``key``, default ``rel``)."""

    def read(root: Path, strict: bool) -> dict[str, list[str]]:
        path = root / rel
        if not path.is_file():
            if strict:
                raise FileNotFoundError(f"benchmark file {path} not found (test-string filter)")
            logger.warning("test-string filter: %s not found, skipped", path)
            return {}
        return {key or rel: list(loader(path))}

    return read


def _autofj(root: Path, strict: bool) -> dict[str, list[str]]:
    """Left and right titles of every AutoFJ table, one key per side."""
    autofj = root / "autofj"
    if not autofj.is_dir():
        if strict:
            raise FileNotFoundError(f"benchmark folder {autofj} not found (test-string filter)")
        return {}
    tables = sorted(t for t in autofj.iterdir() if (t / "left.csv").is_file())
    out: dict[str, list[str]] = {}
    for side in ("left", "right"):
        values: list[str] = []
        for t in tables:
            if (t / f"{side}.csv").is_file():
                values.extend(_csv_titles(t / f"{side}.csv"))
        out[f"autofj/*/{side}.csv ({len(tables)} tables)"] = values
    return out


def _entity_files(corpus: str) -> tuple[Source, ...]:
    return (_file(f"{corpus}/dev.json", _mentions), _file(f"{corpus}/test.json", _mentions),
            _file(f"{corpus}/test_entity_mentions.tsv", _tsv(0, skip_header=True)))


#: Every benchmark source, in report order.
_SOURCES: tuple[Source, ...] = (
    _file("bird/bird.tsv", _tsv(1, 2, skip_header=True)),
    _file("turney2012/turney.txt", _turney),
    _file("ppdb/ppdb.json", _ppdb_devtest, "ppdb/ppdb.json [dev+test]"),
    _file("ppdb_filtered/ppdb_filtered.json", _ppdb_devtest,
          "ppdb_filtered/ppdb_filtered.json [dev+test]"),
    *_entity_files("conll2003"),
    *_entity_files("bc5cdr"),
    _autofj,
    _file("yago_retrieval/yago_test_samples.tsv", _tsv(0, 1, skip_header=False)),
    _file("stsb/sts-dev.csv", _tsv(5, 6, skip_header=False)),
    _file("stsb/sts-test.csv", _tsv(5, 6, skip_header=False)),
)


def _keys(values: Iterable[str]) -> set[str]:
    """Normalised strings, each also without its outer punctuation tokens."""
    keys: set[str] = set()
    for v in values:
        if v and v.strip():
            keys.add(normalize(v))
            stripped = strip_outer_punct(v)
            if stripped:
                keys.add(normalize(stripped))
    return keys


def collect_test_strings(data_dir: str | Path, strict: bool = True) -> dict[str, set[str]]:
    """Every evaluation string of the benchmark, normalised, per benchmark file.

    Files: BiRD (all terms), Turney (all 8 fields), PPDB and PPDB-filtered dev+test (both
    sides), CoNLL-2003 and BC5CDR dev/test mentions and ``test_entity_mentions.tsv``, AutoFJ
    left and right titles of every table, YAGO queries and labels, STS-B dev+test sentences.
    Keys are paths relative to ``data_dir``. Missing files raise FileNotFoundError when
    ``strict``, else are logged and skipped.
    """
    root = Path(data_dir)
    raw: dict[str, list[str]] = {}
    for source in _SOURCES:
        raw.update(source(root, strict))
    return {rel: _keys(values) for rel, values in raw.items()}


# ---------------------------------------------------------------------------------- filter
class BenchmarkStringFilter:
    """Removes training strings equal (normalised) to an evaluation string; counts per file."""

    def __init__(self, test_strings: dict[str, set[str]]) -> None:
        self.test_strings = test_strings
        self.all: set[str] = set().union(*test_strings.values()) if test_strings else set()
        self.removed_phrases: Counter[str] = Counter()
        self.removed_pairs: Counter[str] = Counter()
        self.removed_examples: dict[str, list[str]] = defaultdict(list)
        self.removed_phrases_unique = 0
        self.removed_pairs_unique = 0
        self._seen_phrases: set[str] = set()
        self._seen_pairs: set[tuple[str, ...]] = set()

    def hits(self, text: str) -> list[str]:
        """The benchmark files holding ``text`` (empty when it is not a test string)."""
        key = normalize(text)
        if key not in self.all:
            return []
        return [rel for rel, keys in self.test_strings.items() if key in keys]

    def keep_phrase(self, text: str) -> bool:
        """False when ``text`` is a test string (each distinct string is counted once)."""
        files = self.hits(text)
        key = normalize(text)
        if not files or key in self._seen_phrases:
            return not files
        self._seen_phrases.add(key)
        self.removed_phrases_unique += 1
        for rel in files:
            self.removed_phrases[rel] += 1
            if len(self.removed_examples[rel]) < 5:
                self.removed_examples[rel].append(text)
        return not files

    def keep_pair(self, a: str, b: str) -> bool:
        """False when either side of a pair is a test string (each unordered pair counted once)."""
        files = set(self.hits(a)) | set(self.hits(b))
        key = tuple(sorted((normalize(a), normalize(b))))
        if not files or key in self._seen_pairs:
            return not files
        self._seen_pairs.add(key)
        self.removed_pairs_unique += 1
        for rel in files:
            self.removed_pairs[rel] += 1
        return not files

    def summary(self) -> dict[str, Any]:
        """Per benchmark file: test strings, removed phrases, removed pairs, examples."""
        return {
            rel: {
                "test_strings": len(keys),
                "removed_phrases": self.removed_phrases.get(rel, 0),
                "removed_paraphrase_pairs": self.removed_pairs.get(rel, 0),
                "examples": self.removed_examples.get(rel, []),
            }
            for rel, keys in self.test_strings.items()
        }
