"""What every training-data builder shares: the phrase text rules, gzip text files, and the
readers of the shared sources (Open English WordNet, the PPDB train splits, entity mentions).

The PPDB files are split as in Phrase-BERT and PEARL (train = first ceil(0.7 n) items, dev = the
next up to ceil(0.85 n), test = the rest); builders read the train split only, and the dev and
test parts feed the benchmark-leakage filter (:mod:`phrasekit.training.data.leakage`).
"""

from __future__ import annotations

import contextlib
import csv
import functools
import gzip
import io
import json
import logging
import random
import re
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from phrasekit.eval.entity_clustering import read_ner_json
from phrasekit.io import atomic_write

logger = logging.getLogger(__name__)

MAX_PHRASE_WORDS = 8
MAX_PHRASE_CHARS = 60
MIN_PHRASE_CHARS = 2

_LETTER_RE = re.compile(r"[^\W\d_]", re.UNICODE)
_OUTER_PUNCT_RE = re.compile(r"^(?:[^\w$£€%]+\s+)+|(?:\s+[^\w$£€%]+)+$", re.UNICODE)
#: Train-split sizes of the full PPDB files given in their READMEs (checked when reading).
_PPDB_TRAIN_SIZES = {23364: 16355, 15532: 10873}


# ---------------------------------------------------------------------------------- text rules
@functools.cache
def english_stop_words() -> frozenset[str]:
    """spaCy's English stop words (imported on first use: spaCy is a heavy import)."""
    from spacy.lang.en.stop_words import STOP_WORDS

    return frozenset(STOP_WORDS)


def tidy(text: str) -> str:
    """Unify apostrophes and collapse whitespace, case kept (the stored form of a phrase)."""
    return " ".join(text.replace("’", "'").split())


def normalize(text: str) -> str:
    """Lower-case, unify apostrophes and collapse whitespace (the key of every comparison)."""
    return " ".join(text.replace("’", "'").lower().split())


def strip_outer_punct(text: str) -> str:
    """Drop leading/trailing whitespace-separated tokens that hold no word character."""
    return _OUTER_PUNCT_RE.sub("", " ".join(text.split())).strip()


def detokenize(tokens: Sequence[str]) -> str:
    """Join CoNLL-style tokens back into text ("Parkinson ' s disease" -> "Parkinson's disease")."""
    text = " ".join(tokens)
    text = re.sub(r" ' s\b", "'s", text)
    text = re.sub(r" ([,.;:!?%)\]}])", r"\1", text)
    text = re.sub(r"([(\[{$]) ", r"\1", text)
    text = re.sub(r" ?([-/]) ?", r"\1", text)
    text = re.sub(r" (n't|'s|'re|'ve|'ll|'d|'m)\b", r"\1", text)
    return text


def valid_phrase(text: str) -> bool:
    """Length and content rules for every training phrase (<= 8 words, <= 60 chars, a letter)."""
    if len(text) < MIN_PHRASE_CHARS or len(text) > MAX_PHRASE_CHARS:
        return False
    if len(text.split()) > MAX_PHRASE_WORDS:
        return False
    return bool(_LETTER_RE.search(text))


def split_bounds(n: int) -> tuple[int, int]:
    """PPDB train/dev/test boundaries (ceil(0.70 n), ceil(0.85 n)), as in Phrase-BERT/PEARL."""
    return (7 * n + 9) // 10, (17 * n + 19) // 20


# ---------------------------------------------------------------------------------- files
def open_text(path: Path) -> io.TextIOBase:
    """A UTF-8 text file, gzip-compressed when its name ends in ``.gz`` (CSV-ready)."""
    if path.suffix.lower() == ".gz":
        return gzip.open(path, "rt", encoding="utf-8", newline="")
    return open(path, encoding="utf-8", newline="")


def has_file(folder: Path, name: str) -> bool:
    """Whether ``folder/name`` or ``folder/name.gz`` exists."""
    return (folder / name).is_file() or (folder / f"{name}.gz").is_file()


def find_file(folder: Path, name: str) -> Path:
    """``folder/name`` or ``folder/name.gz``; FileNotFoundError naming both otherwise."""
    for cand in (folder / name, folder / f"{name}.gz"):
        if cand.is_file():
            return cand
    raise FileNotFoundError(f"{folder / name} (or .gz) not found")


@contextlib.contextmanager
def _gzip_writer(path: Path) -> Iterator[gzip.GzipFile]:
    """A gzip file written atomically, with no name or time in its header (same bytes for
    the same content)."""
    with atomic_write(path, "wb") as raw, gzip.GzipFile(
        filename="", mode="wb", fileobj=raw, mtime=0
    ) as gz:
        yield gz


def write_gz_text(path: Path, lines: Iterable[str]) -> None:
    """Write lines (each ending in a newline) into a gzip file, atomically and reproducibly.

    The text layer flushes the compressor when it closes, so the bytes differ from
    :func:`write_gz_bytes` of the same content (both read back the same).
    """
    with _gzip_writer(path) as gz, io.TextIOWrapper(gz, encoding="utf-8", newline="\n") as fh:
        for line in lines:
            fh.write(line)


def write_gz_bytes(path: Path, chunks: Iterable[bytes]) -> None:
    """Write byte chunks into a gzip file, atomically and reproducibly."""
    with _gzip_writer(path) as gz:
        for chunk in chunks:
            gz.write(chunk)


def gz_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, line) of a gzip UTF-8 text file; a file that is not gzip or not UTF-8
    is named (by line where it can be) in a ValueError."""
    with gzip.open(path, "rb") as fh:
        lines = enumerate(fh, start=1)
        while True:
            try:
                lineno, raw = next(lines)
            except StopIteration:
                return
            except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
                raise ValueError(f"{path}: not a whole gzip file ({exc})") from exc
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ValueError(f"{path}:{lineno}: not UTF-8 text ({exc.reason})") from exc
            yield lineno, line


def gz_json_lines(path: Path) -> Iterator[tuple[int, Any]]:
    """(line number, value) of each non-blank line of a gzip JSON-lines file; a line that is
    not JSON is named in a ValueError."""
    for lineno, line in gz_lines(path):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError as exc:
            raise ValueError(f"{path}:{lineno}: not JSON ({exc})") from exc
        yield lineno, value


def jsonl_lines(rows: Iterable[Any], compact: bool = False) -> Iterator[str]:
    """One JSON line per row (non-ASCII kept; ``compact``: no spaces after separators)."""
    separators = (",", ":") if compact else None
    for row in rows:
        yield json.dumps(row, ensure_ascii=False, separators=separators) + "\n"


# ---------------------------------------------------------------------------------- readers
@dataclass
class Synset:
    """One WordNet synset: id, part of speech (n/v/a/s/r), members, hypernym ids, lexicographer
    file (e.g. ``noun.animal``)."""

    id: str
    pos: str
    members: list[str]
    hypernyms: list[str] = field(default_factory=list)
    lexfile: str = ""


def read_wordnet(wordnet_dir: Path) -> list[Synset]:
    """The synsets of ``synsets.tsv(.gz)`` (Open English WordNet, see its README)."""
    path = find_file(Path(wordnet_dir), "synsets.tsv")
    out: list[Synset] = []
    with open_text(path) as fh:
        reader = csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE)
        header = next(reader, None)
        if not header or header[:4] != ["synset_id", "pos", "lexfile", "members"]:
            raise ValueError(f"{path}: unexpected header {header}")
        for lineno, row in enumerate(reader, start=2):
            if not row:
                continue
            if len(row) < 4:
                raise ValueError(f"{path}:{lineno}: expected >= 4 fields, got {len(row)}")
            members = [m.replace("_", " ").strip() for m in row[3].split("|") if m.strip()]
            hyper = [h for h in row[5].split("|") if h] if len(row) > 5 else []
            out.append(Synset(row[0], row[1], members, hyper, row[2]))
    return out


def ppdb_path(data_dir: Path, name: str) -> Path:
    """The JSON file of the PPDB dataset ``name`` (``ppdb`` or ``ppdb_filtered``)."""
    return data_dir / name / f"{name}.json"


def read_ppdb(path: Path, split: str = "train") -> list[tuple[str, str, bool]]:
    """(phrase1, phrase2, is_paraphrase) items of one split of a Phrase-BERT PPDB file.

    ``label`` is ``"pos"`` (paraphrase) or ``"neg"``; splits are contiguous in file order
    (train = first ceil(0.7 n), dev = next up to ceil(0.85 n), test = the rest).
    """
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a JSON array of [phrase1, phrase2, label, ...]")
    b1, b2 = split_bounds(len(data))
    expected = _PPDB_TRAIN_SIZES.get(len(data), b1)
    if b1 != expected:
        raise ValueError(f"{path}: train split should have {expected} items, computed {b1}")
    part = {"train": data[:b1], "dev": data[b1:b2], "test": data[b2:],
            "devtest": data[b1:]}.get(split)
    if part is None:
        raise ValueError(f"unknown split {split!r}")
    out: list[tuple[str, str, bool]] = []
    for i, item in enumerate(part):
        if not isinstance(item, list) or len(item) < 3 or item[2] not in ("pos", "neg"):
            raise ValueError(f"{path}: item {i} of {split} is not [p1, p2, 'pos'|'neg']")
        out.append((str(item[0]), str(item[1]), item[2] == "pos"))
    return out


def read_mentions(path: Path) -> list[list[str]]:
    """Token lists of all entity mentions of a UCTopic-format JSON-lines file (labels unused)."""
    return [tokens[a:b] for tokens, spans in read_ner_json(path) for a, b, _ in spans]


def wordnet_pairs(synsets: Sequence[Synset], max_per_synset: int, rng: random.Random
                  ) -> list[tuple[str, str]]:
    """(multi-word lemma, other member) pairs, at most ``max_per_synset`` per synset."""
    pairs: list[tuple[str, str]] = []
    for s in synsets:
        members = list(dict.fromkeys(s.members))
        cand = [(a, b) for i, a in enumerate(members) for b in members[i + 1 :]
                if (" " in a or " " in b) and normalize(a) != normalize(b)]
        if len(cand) > max_per_synset:
            cand = rng.sample(cand, max_per_synset)
        pairs.extend(cand)
    return pairs
