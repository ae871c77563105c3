"""Build PEARL's training data (paper §3): typed phrases, paraphrases, synonyms, hard negatives.

:func:`build_pearl_dataset` writes into ``out_dir``:

* ``phrases.jsonl.gz`` — one ``{"text", "type", "source"}`` object per line, unique texts
  (case-insensitive), shuffled with ``seed`` so that any prefix is a fair sample. Sources:

  - ``corpus:<name>``: spaCy noun chunks, entity spans, verb phrases (verb + particle /
    object / adverb, 2-4 tokens), adjective and adverb phrases (ADV + ADJ, ADV + ADV) and
    prepositional phrases (ADP + its object, <= 5 tokens) from the shared corpora (test
    splits skipped), capped at ``max_words`` words; their type comes from the in-context
    parse and NER (majority over occurrences);
  - ``wordnet``: multi-word lemmas of Open English WordNet;
  - ``conll2003`` / ``bc5cdr``: entity mention strings of the TRAIN split (gold labels unused);
  - ``ppdb`` / ``ppdb_filtered``: both sides of the positive TRAIN-split pairs.

  Phrases without an in-context label are typed by :func:`phrasekit.phrases.types.label_phrases`
  (context-free spaCy), except that WordNet lemmas take their lexical class from their WordNet
  part of speech (noun -> NP, verb -> VP; adjectives/adverbs -> ADJP/ADVP unless spaCy sees a
  PP) and entity mentions are never VPs (a mention spaCy tags as a verb becomes NP).
* ``paraphrases.tsv.gz`` — ``text_a<TAB>text_b<TAB>source`` lines, no header; source
  ``wordnet`` (a multi-word lemma and another member of the same synset, at most
  ``max_pairs_per_synset`` pairs per synset) or ``ppdb`` / ``ppdb_filtered`` (positive train
  pairs, each unordered pair once).
* ``word_synonyms.json.gz`` — ``{word: [synonyms]}`` for token-level augmentation (see
  :func:`build_word_synonyms`).
* ``hard_negatives.jsonl.gz`` — ``{"text", "negatives"}`` for the phrases with at least one
  mined negative (:func:`phrasekit.training.mining.mine_hard_negatives`, MiniLM embeddings;
  paraphrases and paraphrases of paraphrases are never negatives).
* ``report.json`` — counts, timings, parameters and the test-string filter.

Test-string filter: every evaluation string of the benchmark (:func:`collect_test_strings`) is
removed from the training phrases, and every paraphrase pair with a side equal to one is
dropped, when it matches exactly after lower-casing and whitespace normalisation (test strings
are also added with their leading/trailing punctuation tokens stripped, and token-split
mentions also detokenised). The word-synonym map is not filtered: it holds single words.

Run time (2 CPU cores): spaCy parses 2-5k words/s and MiniLM embeds ~1.5k phrases/s on an
idle machine, several times less on a busy one; pass ``embeddings_cache`` to reuse embeddings
across builds.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import logging
import os
import random
import re
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from phrasekit.encoders.cache import encode_cached
from phrasekit.io import Document, atomic_write, read_corpus, write_json

logger = logging.getLogger(__name__)

#: The files written by :func:`build_pearl_dataset`.
OUTPUT_FILES: tuple[str, ...] = ("phrases.jsonl.gz", "paraphrases.tsv.gz",
                                 "word_synonyms.json.gz", "hard_negatives.jsonl.gz",
                                 "report.json")
#: Corpora of ``<shared>/corpora`` used by default (all usable without their labels).
DEFAULT_CORPORA: tuple[str, ...] = (
    "bbc_news", "20newsgroups", "arxiv_abstracts_cc0", "ag_news_test", "inspec",
    "restaurant_reviews_absa14",
)
#: Documents whose ``split`` field is one of these are never read (evaluation data).
SKIPPED_SPLITS = frozenset({"test", "testing"})
#: Corpora whose text is hard-wrapped at ~72 columns: single newlines are joined.
UNWRAP_CORPORA = frozenset({"20newsgroups"})
#: All phrase sources, in priority order (the first source of a phrase is its ``source``).
ALL_SOURCES: tuple[str, ...] = ("corpora", "conll2003", "bc5cdr", "wordnet", "ppdb",
                                "ppdb_filtered")

MAX_PHRASE_WORDS = 8
MAX_PHRASE_CHARS = 60
MIN_PHRASE_CHARS = 2

#: Default corpus budget: 600k words, 2-5 minutes of spaCy (2-5k words/s on two busy cores);
#: with the other sources this gives ~150-200k unique phrases.
DEFAULT_MAX_WORDS = 600_000
#: Longer documents contribute only their first words (more, shorter documents = diversity).
MAX_DOC_WORDS = 1500

#: Words spaCy tags VERB that make no useful verb phrase on their own (light verbs).
_LIGHT_VERBS = frozenset({
    "be", "is", "are", "was", "were", "been", "being", "am", "'s", "'re", "'m", "has", "have",
    "had", "having", "'ve", "do", "does", "did", "doing", "done", "get", "got", "let", "say",
    "said", "says",
})
_INNER_PUNCT_OK = frozenset({"-", ".", "&", "/", "'", "'s", "’s"})
_LETTER_RE = re.compile(r"[^\W\d_]", re.UNICODE)
_OUTER_PUNCT_RE = re.compile(r"^(?:[^\w$£€%]+\s+)+|(?:\s+[^\w$£€%]+)+$", re.UNICODE)
#: Train-split sizes of the full PPDB files given in their READMEs (checked when reading).
_PPDB_TRAIN_SIZES = {23364: 16355, 15532: 10873}


# ---------------------------------------------------------------------------------- helpers
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


def _open_text(path: Path) -> io.TextIOBase:
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8", newline="")
    return open(path, encoding="utf-8", newline="")


def _find(folder: Path, name: str) -> Path:
    """``folder/name`` or ``folder/name.gz``; FileNotFoundError naming both otherwise."""
    for cand in (folder / name, folder / f"{name}.gz"):
        if cand.is_file():
            return cand
    raise FileNotFoundError(f"{folder / name} (or .gz) not found")


def _write_gz_text(path: Path, lines: Iterable[str]) -> None:
    """Write lines (each ending in a newline) into a gzip file, atomically and reproducibly."""
    with atomic_write(path, "wb") as raw, gzip.GzipFile(
        filename="", mode="wb", fileobj=raw, mtime=0
    ) as gz, io.TextIOWrapper(gz, encoding="utf-8", newline="\n") as fh:
        for line in lines:
            fh.write(line)


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
    path = _find(Path(wordnet_dir), "synsets.tsv")
    out: list[Synset] = []
    with _open_text(path) as fh:
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
    from phrasekit.eval.entity_clustering import read_ner_json

    return [tokens[a:b] for tokens, spans in read_ner_json(path) for a, b, _ in spans]


# ---------------------------------------------------------------------------------- test strings
def _tsv_column_values(path: Path, columns: Sequence[int], skip_header: bool) -> list[str]:
    values: list[str] = []
    with _open_text(path) as fh:
        reader = csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE)
        for i, row in enumerate(reader):
            if i == 0 and skip_header:
                continue
            values.extend(row[c] for c in columns if c < len(row))
    return values


def _csv_titles(path: Path) -> list[str]:
    with open(path, encoding="utf-8", newline="") as fh:
        return [r.get("title") or "" for r in csv.DictReader(fh)]


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

    def add(rel: str, loader: Callable[[Path], Iterable[str]], key: str | None = None) -> None:
        path = root / rel
        if not path.is_file():
            if strict:
                raise FileNotFoundError(f"benchmark file {path} not found (test-string filter)")
            logger.warning("test-string filter: %s not found, skipped", path)
            return
        raw[key or rel] = list(loader(path))

    def turney(p: Path) -> Iterator[str]:
        with open(p, encoding="utf-8") as fh:
            for line in fh:
                yield from (f.strip() for f in line.split(" | ") if f.strip())

    def ppdb_devtest(p: Path) -> list[str]:
        return [s for a, b, _ in read_ppdb(p, "devtest") for s in (a, b)]

    def mentions(p: Path) -> Iterator[str]:
        for toks in read_mentions(p):
            yield " ".join(toks)
            yield detokenize(toks)

    add("bird/bird.tsv", lambda p: _tsv_column_values(p, (1, 2), skip_header=True))
    add("turney2012/turney.txt", turney)
    add("ppdb/ppdb.json", ppdb_devtest, "ppdb/ppdb.json [dev+test]")
    add("ppdb_filtered/ppdb_filtered.json", ppdb_devtest,
        "ppdb_filtered/ppdb_filtered.json [dev+test]")
    for corpus in ("conll2003", "bc5cdr"):
        add(f"{corpus}/dev.json", mentions)
        add(f"{corpus}/test.json", mentions)
        add(f"{corpus}/test_entity_mentions.tsv",
            lambda p: _tsv_column_values(p, (0,), skip_header=True))
    autofj = root / "autofj"
    if autofj.is_dir():
        tables = sorted(t for t in autofj.iterdir() if (t / "left.csv").is_file())
        for side in ("left", "right"):
            values: list[str] = []
            for t in tables:
                if (t / f"{side}.csv").is_file():
                    values.extend(_csv_titles(t / f"{side}.csv"))
            raw[f"autofj/*/{side}.csv ({len(tables)} tables)"] = values
    elif strict:
        raise FileNotFoundError(f"benchmark folder {autofj} not found (test-string filter)")
    add("yago_retrieval/yago_test_samples.tsv",
        lambda p: _tsv_column_values(p, (0, 1), skip_header=False))
    for split in ("dev", "test"):
        add(f"stsb/sts-{split}.csv", lambda p: _tsv_column_values(p, (5, 6), skip_header=False))

    out: dict[str, set[str]] = {}
    for rel, values in raw.items():
        keys: set[str] = set()
        for v in values:
            if v and v.strip():
                keys.add(normalize(v))
                stripped = strip_outer_punct(v)
                if stripped:
                    keys.add(normalize(stripped))
        out[rel] = keys
    return out


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


# ---------------------------------------------------------------------------------- corpora
def _span_text(span: Any) -> str:
    return " ".join(span.text.replace("’", "'").split())


def _span_ok(span: Any, reject: re.Pattern[str], min_words: int, max_words: int) -> bool:
    """Contiguous span without line breaks, odd punctuation or markup, of the right length."""
    n_words = 0
    for k, tok in enumerate(span):
        if tok.is_space or "\n" in tok.text or (k < len(span) - 1 and "\n" in tok.whitespace_):
            return False
        if tok.is_punct:
            if tok.text not in _INNER_PUNCT_OK or k in (0, len(span) - 1):
                return False
            continue
        n_words += 1
    if not min_words <= n_words <= max_words:
        return False
    return not reject.search(span.text)


def _verb_phrases(sdoc: Any) -> Iterator[Any]:
    """Verb + particle / direct object / following adverb spans of 2-4 tokens."""
    for tok in sdoc:
        if tok.pos_ != "VERB" or tok.dep_ in ("amod", "compound") or tok.lower_ in _LIGHT_VERBS:
            continue
        end = tok.i + 1
        prts = [c for c in tok.rights if c.dep_ == "prt"]
        if prts and prts[0].i == tok.i + 1:
            end = prts[0].i + 1
            yield sdoc[tok.i : end]
        for child in tok.rights:
            if child.dep_ == "dobj" and child.pos_ != "PRON" and child.left_edge.i == end:
                stop = child.right_edge.i + 1
                if stop - tok.i <= 4:
                    yield sdoc[tok.i : stop]
            elif (child.dep_ == "advmod" and child.pos_ == "ADV" and child.i == end
                  and not list(child.rights)):
                yield sdoc[tok.i : child.i + 1]


def _modifier_phrases(sdoc: Any) -> Iterator[tuple[Any, str]]:
    """(span, class): ADV+ADJ adjective phrases and ADV+ADV adverb phrases (2-4 tokens)."""
    for tok in sdoc:
        if tok.pos_ not in ("ADJ", "ADV"):
            continue
        start = tok.i
        while True:
            mods = [c for c in sdoc[start].lefts if c.dep_ == "advmod" and c.pos_ == "ADV"
                    and c.i == start - 1]
            if not mods or tok.i - mods[0].i >= 4:
                break
            start = mods[0].i
        if start < tok.i:
            yield sdoc[start : tok.i + 1], ("ADJP" if tok.pos_ == "ADJ" else "ADVP")


def _prep_phrases(sdoc: Any) -> Iterator[Any]:
    """ADP + its object (the object's whole subtree), contiguous, 2-5 tokens, no bare pronoun."""
    for tok in sdoc:
        if tok.pos_ != "ADP" or tok.dep_ != "prep":
            continue
        objs = [c for c in tok.rights if c.dep_ == "pobj"]
        if not objs:
            continue
        obj = objs[-1]
        if obj.left_edge.i != tok.i + 1 or (obj.pos_ == "PRON" and obj.left_edge == obj):
            continue  # discontinuous, or a bare pronoun object ("in him")
        stop = obj.right_edge.i + 1
        if 2 <= stop - tok.i <= 5:
            yield sdoc[tok.i : stop]


def doc_phrases(sdoc: Any, extractor: Any, reject: re.Pattern[str]) -> list[tuple[str, str]]:
    """(surface, LEX-ENT type) of every candidate phrase of one parsed document, in context."""
    from phrasekit.phrases.extract import NUMERIC_ENTITY_TYPES
    from phrasekit.phrases.types import entity_type, lexical_class

    found: dict[tuple[int, int], str] = {}
    for ent in sdoc.ents:
        if ent.label_ in NUMERIC_ENTITY_TYPES:
            span = ent if _span_ok(ent, reject, 1, MAX_PHRASE_WORDS) else None
        else:
            span = extractor.clean_span(ent, set())
        if span is not None and not reject.search(span.text):
            found.setdefault((span.start, span.end), f"{lexical_class(span)}-{ent.label_}")
    for chunk in sdoc.noun_chunks:
        span = extractor.clean_span(chunk, set())
        if span is not None and not reject.search(span.text):
            found.setdefault((span.start, span.end), f"NP-{entity_type(span)}")
    for span in _verb_phrases(sdoc):
        if _span_ok(span, reject, 2, 4):
            found.setdefault((span.start, span.end), f"VP-{entity_type(span)}")
    for span, lex in _modifier_phrases(sdoc):
        if _span_ok(span, reject, 2, 4):
            found.setdefault((span.start, span.end), f"{lex}-{entity_type(span)}")
    for span in _prep_phrases(sdoc):
        if _span_ok(span, reject, 2, 5):
            found.setdefault((span.start, span.end), f"PP-{entity_type(span)}")
    return [(_span_text(sdoc[s:e]), label) for (s, e), label in sorted(found.items())]


def _truncate_words(text: str, max_words: int) -> tuple[str, int]:
    """The first ``max_words`` whitespace words of ``text`` (layout kept) and their count."""
    count = 0
    for m in re.finditer(r"\S+", text):
        count += 1
        if count == max_words:
            return text[: m.end()], count
    return text, count


def _allocate(available: dict[str, int], budget: int) -> dict[str, int]:
    """Split ``budget`` words evenly over corpora; what small corpora leave goes to the rest."""
    shares: dict[str, int] = {}
    left = budget
    pending = sorted(available, key=lambda c: available[c])
    while pending:
        share = left // len(pending)
        name = pending.pop(0)
        shares[name] = min(available[name], share)
        left -= shares[name]
    return shares


def _resolve_corpus(item: str | Path, corpora_root: Path | None) -> tuple[str, Path]:
    path = Path(item)
    if path.exists():
        return (path.parent.name if path.is_file() else path.name), path
    if corpora_root is None:
        raise FileNotFoundError(f"corpus {item!r}: not a path and no shared corpora folder")
    cand = corpora_root / str(item)
    if not cand.exists():
        raise FileNotFoundError(f"corpus {item!r} not found under {corpora_root}")
    return str(item), cand


def corpus_sample(
    corpora: Sequence[str | Path], corpora_root: Path | None, max_words: int, seed: int
) -> tuple[list[tuple[str, str]], dict[str, dict[str, int]]]:
    """(corpus name, text) pieces to parse, ``max_words`` spread over the corpora; stats."""
    docs_by: dict[str, list[Document]] = {}
    stats: dict[str, dict[str, int]] = {}
    for item in corpora:
        name, path = _resolve_corpus(item, corpora_root)
        docs = read_corpus(path)
        kept = [d for d in docs if str(d.meta.get("split", "")).lower() not in SKIPPED_SPLITS]
        docs_by[name] = kept
        stats[name] = {"documents": len(docs), "skipped_test_split": len(docs) - len(kept)}
    available = {
        name: sum(min(len(d.text.split()), MAX_DOC_WORDS) for d in docs)
        for name, docs in docs_by.items()
    }
    shares = _allocate(available, max_words)
    rng = random.Random(seed)
    pieces: list[tuple[str, str]] = []
    for name, docs in docs_by.items():
        order = list(range(len(docs)))
        rng.shuffle(order)
        used_words = used_docs = 0
        for i in order:
            if used_words >= shares[name]:
                break
            text = docs[i].text
            if name in UNWRAP_CORPORA:
                text = re.sub(r"(?<!\n)\n(?!\n)", " ", text)
            text, n = _truncate_words(text, min(MAX_DOC_WORDS, shares[name] - used_words))
            if not text.strip():
                continue
            pieces.append((name, text))
            used_words += n
            used_docs += 1
        stats[name].update(words_used=used_words, documents_used=used_docs)
    return pieces, stats


def extract_corpus_phrases(
    pieces: Sequence[tuple[str, str]], nlp: Any, show_progress: bool = True, batch_size: int = 16
) -> dict[str, dict[str, Any]]:
    """Parse the pieces and collect ``{normalised: {surface counts, type votes, corpora}}``."""
    from phrasekit.phrases.extract import DEFAULT_REJECT_PATTERN, PhraseExtractor

    extractor = PhraseExtractor(spacy_model=nlp, exclude_entity_types=(), lowercase=False,
                                strip_numbers=True, max_tokens=MAX_PHRASE_WORDS)
    reject = re.compile(DEFAULT_REJECT_PATTERN)
    found: dict[str, dict[str, Any]] = {}
    stream = nlp.pipe(((text, name) for name, text in pieces), as_tuples=True,
                      batch_size=batch_size)
    bar = tqdm(stream, total=len(pieces), desc="corpus phrases[spaCy]", unit="doc",
               disable=not show_progress)
    for sdoc, name in bar:
        for surface, label in doc_phrases(sdoc, extractor, reject):
            if not valid_phrase(surface):
                continue
            rec = found.setdefault(normalize(surface), {
                "surfaces": Counter(), "types": Counter(), "corpus": name})
            rec["surfaces"][surface] += 1
            rec["types"][label] += 1
    return found


# ---------------------------------------------------------------------------------- synonyms
#: Prefixes that negate a word: such pairs are never synonyms ("effective"/"ineffective").
_NEGATION_PREFIXES = ("un", "in", "im", "il", "ir", "dis", "non", "non-", "anti", "anti-")
#: British -> American spelling rewrites applied to both words before comparing them.
_SPELLING_RULES: tuple[tuple[str, str], ...] = (
    ("isation", "ization"), ("ise", "ize"), ("yse", "yze"), ("our", "or"), ("ogue", "og"),
    ("tre", "ter"), ("ence", "ense"), ("ae", "e"), ("oe", "e"), ("ll", "l"),
)
#: Inflectional endings: the longer word may add one of these to the shared stem ...
_LONG_SUFFIXES = frozenset({"s", "es", "ed", "d", "ing", "er", "ers", "est", "ies", "ied"})
#: ... while the shorter one ends the stem with one of these.
_SHORT_SUFFIXES = frozenset({"", "e", "y", "s"})


def negation(a: str, b: str) -> bool:
    """True when one word is the other with a negating prefix ("intentional"/"unintentional")."""
    short, long_ = sorted((a.replace("-", ""), b.replace("-", "")), key=len)
    return any(long_ == p.rstrip("-") + short for p in _NEGATION_PREFIXES)


def _american(word: str) -> str:
    for old, new in _SPELLING_RULES:
        word = word.replace(old, new)
    return word


def spelling_variant(a: str, b: str) -> bool:
    """True for spelling / inflection variants of one word ("colour"/"color", "on-going" /
    "ongoing", "fund"/"funds", "help"/"helping"), not for derived or different words
    ("terror"/"terrorism", "grandson"/"grandfather", "qualitative"/"quantitative")."""
    a2, b2 = a.replace("-", ""), b.replace("-", "")
    if a2 == b2 or _american(a2) == _american(b2):
        return a != b
    if negation(a2, b2):
        return False
    short, long_ = sorted((a2, b2), key=len)
    for cut in range(len(short), 3, -1):
        stem = short[:cut]
        tail_s, tail_l = short[cut:], long_[cut:]
        if not long_.startswith(stem) or tail_s not in _SHORT_SUFFIXES:
            continue
        if tail_l in _LONG_SUFFIXES and (tail_s != "y" or tail_l in ("ies", "ied")):
            return True
    return False


def build_word_synonyms(
    words: Iterable[str],
    synsets: Sequence[Synset],
    glove: Any,
    threshold: float = 0.85,
    max_per_word: int = 8,
    wordnet_min_cos: float = 0.4,
    glove_vocab: int = 100_000,
    batch_size: int = 2048,
    show_progress: bool = True,
) -> tuple[dict[str, list[str]], dict[str, Any]]:
    """``{word: [synonyms]}`` for token-level augmentation, and statistics.

    Per word (lower-case, alphabetic, not a stop word, known to GloVe):

    1. its single-word WordNet synonyms (other members of any synset holding it), ranked by
       GloVe cosine, keeping those with cosine >= ``wordnet_min_cos`` (this drops most rare
       senses: "big" -> "gravid", "bank" -> "rely");
    2. GloVe 6B-50d nearest neighbours (among the ``glove_vocab`` most frequent words) with
       cosine >= ``threshold`` that are spelling or inflection variants of the word
       (:func:`spelling_variant`: "organisation" -> "organization", "colour" ->
       "color", "fund" -> "funds").

    Why only variants from GloVe: inspected samples of 50d neighbours at 0.85 and even 0.90
    are mostly related words, co-hyponyms and antonyms, not synonyms ("happy" -> "feel",
    "monday" -> "week", "york" -> "chicago", "grandson" -> "grandfather", "marriage" ->
    "divorce", "trombone" -> "saxophone"), and WordNet-based co-hyponym / POS / antonym
    filters removed only part of them. At most ``max_per_word`` synonyms per word.
    """
    from spacy.lang.en.stop_words import STOP_WORDS

    word_re = re.compile(r"^[a-z]+(?:-[a-z]+)*$")
    index: dict[str, int] = glove.index
    vectors = np.asarray(glove.vectors, dtype=np.float32)
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)

    def ok(w: str) -> bool:
        return len(w) >= 3 and w not in STOP_WORDS and bool(word_re.match(w))

    queries = sorted({w for w in words if ok(w) and w in index})
    member_of: dict[str, list[Synset]] = defaultdict(list)
    for s in synsets:
        for m in s.members:
            if " " not in m:
                member_of[m.lower()].append(s)
    inv_vocab = {i: w for w, i in index.items()}
    pool_idx = np.asarray([i for i in range(min(glove_vocab, len(vectors)))
                           if ok(inv_vocab.get(i, ""))], dtype=np.int64)
    pool_mat = unit[pool_idx]
    n_top = min(20, len(pool_idx) - 1)
    stats: Counter[str] = Counter()
    result: dict[str, list[str]] = {}
    starts = range(0, len(queries), batch_size)
    bar = tqdm(starts, total=len(starts), desc="word synonyms", unit="batch",
               disable=not show_progress, leave=False)
    for start in bar:
        batch = queries[start : start + batch_size]
        sims = unit[[index[w] for w in batch]] @ pool_mat.T
        top = np.argpartition(-sims, n_top, axis=1)[:, :n_top] if n_top > 0 else None
        for r, w in enumerate(batch):
            seen = {w}
            wn: list[tuple[float, str]] = []
            for s in member_of.get(w, ()):
                for m in s.members:
                    ml = m.lower()
                    if ml in seen or not ok(ml) or ml not in index:
                        continue
                    seen.add(ml)
                    cos = float(unit[index[w]] @ unit[index[ml]])
                    if cos >= wordnet_min_cos:
                        wn.append((cos, ml))
                    else:
                        stats["wordnet_dropped_low_cos"] += 1
            syns = [m for _, m in sorted(wn, key=lambda x: -x[0])][:max_per_word]
            stats["wordnet"] += len(syns)
            if top is not None:
                for j in top[r][np.argsort(-sims[r, top[r]])]:
                    if len(syns) >= max_per_word or sims[r, j] < threshold:
                        break
                    cand = inv_vocab[int(pool_idx[j])]
                    if cand in seen:
                        continue
                    seen.add(cand)
                    if not spelling_variant(w, cand):
                        stats["glove_dropped_not_variant"] += 1
                        continue
                    syns.append(cand)
                    stats["glove"] += 1
            if syns:
                result[w] = syns
    info = {
        "query_words": len(queries),
        "words_with_synonyms": len(result),
        "synonyms_total": sum(len(v) for v in result.values()),
        "from_wordnet": stats["wordnet"],
        "wordnet_dropped_low_cos": stats["wordnet_dropped_low_cos"],
        "from_glove": stats["glove"],
        "glove_dropped_not_variant": stats["glove_dropped_not_variant"],
        "glove_threshold": threshold,
        "wordnet_min_cos": wordnet_min_cos,
        "max_per_word": max_per_word,
    }
    return result, info


# ---------------------------------------------------------------------------------- main
@dataclass
class _Phrase:
    text: str
    source: str
    type: str | None = None
    lex_hint: str | None = None  # "NP"/"VP"/"ADJP"/"ADVP" from WordNet POS, "mention"


_WN_LEX = {"n": "NP", "v": "VP", "a": "ADJP", "s": "ADJP", "r": "ADVP"}


def _wordnet_pairs(synsets: Sequence[Synset], max_per_synset: int, rng: random.Random
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


def paraphrase_neighbourhood(pairs: Iterable[Sequence[str]], hops: int = 2
                             ) -> dict[str, set[str]]:
    """``{phrase: phrases within hops paraphrase links}`` (normalised keys), never negatives.

    Two hops also keep paraphrases of a shared paraphrase apart from each other ("thank
    everyone" and "thank you for asking", both paraphrases of "thanking you").
    """
    direct: dict[str, set[str]] = defaultdict(set)
    for a, b, *_ in pairs:
        ka, kb = normalize(a), normalize(b)
        direct[ka].add(kb)
        direct[kb].add(ka)
    out: dict[str, set[str]] = {}
    for key, first in direct.items():
        reach = set(first)
        frontier = set(first)
        for _ in range(hops - 1):
            frontier = {y for x in frontier for y in direct[x]} - reach - {key}
            reach |= frontier
        out[key] = reach
    return out


def build_pearl_dataset(
    out_dir: str | Path,
    shared_dir: str | Path | None = None,
    max_words: int = DEFAULT_MAX_WORDS,
    seed: int = 0,
    show_progress: bool = True,
    corpora: Sequence[str | Path] | None = None,
    sources: Sequence[str] = ALL_SOURCES,
    benchmark_dir: str | Path | None = None,
    strict_filter: bool = True,
    encoder: Any = "minilm",
    glove: Any = None,
    nlp: Any = None,
    hard_negatives_k: int = 4,
    max_cos: float = 0.75,
    synonym_threshold: float = 0.85,
    max_synonyms: int = 8,
    max_pairs_per_synset: int = 6,
    min_corpus_count: int = 1,
    embeddings_cache: str | Path | None = None,
) -> dict[str, Any]:
    """Build the PEARL training data into ``out_dir`` and return the report (also written).

    Args:
        out_dir: output folder (created); files are replaced atomically.
        shared_dir: folder holding ``data/`` and ``corpora/`` (default:
            ``phrasekit.settings.shared_dir()``).
        max_words: corpus words parsed with spaCy in total, spread evenly over the corpora.
        seed: sampling / shuffling seed.
        show_progress: tqdm progress bars.
        corpora: corpus folder names under ``<shared>/corpora`` or paths to corpus files or
            folders (default :data:`DEFAULT_CORPORA`; ``[]`` for none).
        sources: which phrase sources to use (subset of :data:`ALL_SOURCES`).
        benchmark_dir: benchmark data folder for the test-string filter (default
            ``<shared>/data``).
        strict_filter: raise when a benchmark file of the filter is missing (keep True for
            real builds).
        encoder: encoder name for :func:`phrasekit.load` or an Encoder (hard negatives).
        glove: a loaded ``glove-50d`` encoder (default: loaded here).
        nlp: a loaded spaCy pipeline (default :func:`phrasekit.phrases.load_spacy`).
        hard_negatives_k: negatives per phrase; max_cos: their cosine ceiling.
        synonym_threshold: GloVe cosine threshold for word synonyms; max_synonyms per word.
        max_pairs_per_synset: cap on WordNet paraphrase pairs per synset.
        min_corpus_count: corpus phrases seen fewer times than this are dropped.
        embeddings_cache: optional ``.npz`` file reused and extended across builds (the
            encoder pass dominates the run time), see :func:`encode_cached`.
    """
    from phrasekit.phrases.types import LEXICAL_CLASSES, analyse_phrases
    from phrasekit.settings import shared_dir as find_shared
    from phrasekit.training.mining import mine_hard_negatives

    unknown = set(sources) - set(ALL_SOURCES)
    if unknown:
        raise ValueError(f"unknown sources {sorted(unknown)}; choose from {ALL_SOURCES}")
    if max_words < 0:
        raise ValueError(f"max_words must be >= 0, got {max_words}")
    t_start = time.perf_counter()
    timings: dict[str, float] = {}

    def lap(name: str, t0: float) -> float:
        timings[name] = round(time.perf_counter() - t0, 1)
        logger.info("%s done in %.1fs", name, timings[name])
        return time.perf_counter()

    out = Path(out_dir)
    root = Path(shared_dir) if shared_dir is not None else find_shared(required=True)
    data = root / "data"
    bench = Path(benchmark_dir) if benchmark_dir is not None else data
    rng = random.Random(seed)
    if nlp is None:
        from phrasekit.phrases.extract import load_spacy

        nlp = load_spacy()

    t = time.perf_counter()
    filt = BenchmarkStringFilter(collect_test_strings(bench, strict=strict_filter))
    t = lap("test_strings", t)

    phrases: dict[str, _Phrase] = {}
    candidates: Counter[str] = Counter()
    dropped_invalid: Counter[str] = Counter()

    def offer(text: str, source: str, type_: str | None = None,
              lex_hint: str | None = None) -> None:
        text = " ".join(text.replace("’", "'").split())
        candidates[source] += 1
        if not valid_phrase(text):
            dropped_invalid[source] += 1
            return
        key = normalize(text)
        if key in phrases:
            return
        if not filt.keep_phrase(text):
            return
        phrases[key] = _Phrase(text, source, type_, lex_hint)

    # (a) corpora --------------------------------------------------------------------------
    corpus_stats: dict[str, Any] = {}
    if "corpora" in sources:
        names = list(DEFAULT_CORPORA if corpora is None else corpora)
        if names and max_words > 0:
            corpora_root = root / "corpora" if (root / "corpora").is_dir() else None
            pieces, corpus_stats = corpus_sample(names, corpora_root, max_words, seed)
            found = extract_corpus_phrases(pieces, nlp, show_progress=show_progress)
            below = 0
            for rec in found.values():
                n = sum(rec["surfaces"].values())
                if n < min_corpus_count:
                    below += 1
                    continue
                surface = rec["surfaces"].most_common(1)[0][0]
                offer(surface, f"corpus:{rec['corpus']}", rec["types"].most_common(1)[0][0])
            corpus_stats["_unique_candidates"] = len(found)
            corpus_stats["_below_min_count"] = below
        t = lap("corpora", t)

    # (c) entity mentions (train split only) -------------------------------------------------
    for corpus in ("conll2003", "bc5cdr"):
        if corpus in sources:
            for toks in read_mentions(data / corpus / "train.json"):
                offer(detokenize(toks), corpus, lex_hint="mention")
    # (b) WordNet multi-word lemmas -------------------------------------------------------------
    wn_dir = data / "wordnet"  # WordNet is also used for the word synonyms when present
    use_wn = "wordnet" in sources or _has(wn_dir, "synsets.tsv")
    synsets = read_wordnet(wn_dir) if use_wn else []
    if "wordnet" in sources:
        for s in synsets:
            for m in s.members:
                if " " in m:
                    offer(m, "wordnet", lex_hint=_WN_LEX.get(s.pos))
    # (d) PPDB positive train pairs -------------------------------------------------------------
    ppdb_pairs: dict[str, list[tuple[str, str]]] = {}
    for name in ("ppdb", "ppdb_filtered"):
        if name not in sources:
            continue
        items = read_ppdb(data / name / f"{name}.json", "train")
        pairs: list[tuple[str, str]] = []
        for a, b, pos in items:
            if not pos:
                continue
            a2, b2 = strip_outer_punct(a), strip_outer_punct(b)
            for side in (a2, b2):
                if side:
                    offer(side, name)
            if a2 and b2:
                pairs.append((a2, b2))
        ppdb_pairs[name] = pairs
    t = lap("sources", t)

    # labels for phrases without an in-context type ------------------------------------------
    todo = [p for p in phrases.values() if p.type is None]
    analysed = analyse_phrases([p.text for p in todo], nlp, show_progress=show_progress)
    for p, (lex, ent) in zip(todo, analysed, strict=True):
        if p.lex_hint == "mention":
            lex = "NP" if lex == "VP" else lex
        elif p.lex_hint in ("NP", "VP") or (p.lex_hint in ("ADJP", "ADVP") and lex != "PP"):
            lex = p.lex_hint
        p.type = f"{lex}-{ent}"
    t = lap("context_free_labels", t)

    # paraphrase pairs ----------------------------------------------------------------------
    pair_rows: list[tuple[str, str, str]] = []
    pair_counts: Counter[str] = Counter()
    pair_dropped: Counter[str] = Counter()
    seen_pairs: set[tuple[str, str]] = set()
    all_pairs: list[tuple[str, str, str]] = []
    if "wordnet" in sources:
        all_pairs.extend((a, b, "wordnet") for a, b in
                         _wordnet_pairs(synsets, max_pairs_per_synset, rng))
    for name, pairs in ppdb_pairs.items():
        all_pairs.extend((a, b, name) for a, b in pairs)
    for a, b, src in all_pairs:
        a, b = (" ".join(x.replace("’", "'").split()) for x in (a, b))
        ka, kb = normalize(a), normalize(b)
        if ka == kb or not (valid_phrase(a) and valid_phrase(b)):
            pair_dropped[f"{src}:invalid"] += 1
            continue
        key = (min(ka, kb), max(ka, kb))
        if key in seen_pairs:
            continue
        if not filt.keep_pair(a, b):
            pair_dropped[f"{src}:test_string"] += 1
            continue
        seen_pairs.add(key)
        a = phrases[ka].text if ka in phrases else a
        b = phrases[kb].text if kb in phrases else b
        pair_rows.append((a, b, src))
        pair_counts[src] += 1
    t = lap("paraphrases", t)

    # word synonyms -------------------------------------------------------------------------
    if glove is None:
        import phrasekit

        glove = phrasekit.load("glove-50d")
    from phrasekit.training.mining import surface_tokens

    words = {w for p in phrases.values() for w in surface_tokens(p.text)}
    synonyms, syn_info = build_word_synonyms(
        words, synsets, glove, threshold=synonym_threshold, max_per_word=max_synonyms,
        show_progress=show_progress)
    t = lap("word_synonyms", t)

    # hard negatives ------------------------------------------------------------------------
    records = list(phrases.values())
    rng.shuffle(records)
    texts = [p.text for p in records]
    if isinstance(encoder, str):
        import phrasekit

        encoder = phrasekit.load(encoder)
    emb = encode_cached(encoder, texts, embeddings_cache, show_progress=show_progress)
    t = lap("encode", t)
    negatives = mine_hard_negatives(texts, emb, k=hard_negatives_k, max_cos=max_cos,
                                     exclude=paraphrase_neighbourhood(pair_rows),
                                     show_progress=show_progress)
    t = lap("hard_negatives", t)

    # write ---------------------------------------------------------------------------------
    out.mkdir(parents=True, exist_ok=True)
    _write_gz_text(out / "phrases.jsonl.gz", (
        json.dumps({"text": p.text, "type": p.type, "source": p.source}, ensure_ascii=False)
        + "\n" for p in records))
    _write_gz_text(out / "paraphrases.tsv.gz",
                   (f"{a}\t{b}\t{s}\n" for a, b, s in pair_rows))
    with atomic_write(out / "word_synonyms.json.gz", "wb") as raw, gzip.GzipFile(
        filename="", mode="wb", fileobj=raw, mtime=0
    ) as gz:
        gz.write(json.dumps(synonyms, ensure_ascii=False, sort_keys=True).encode("utf-8"))
    _write_gz_text(out / "hard_negatives.jsonl.gz", (
        json.dumps({"text": x, "negatives": negatives[x]}, ensure_ascii=False) + "\n"
        for x in texts if x in negatives))
    t = lap("write", t)

    types = Counter(p.type for p in records)
    lex_counts = Counter(str(p.type).split("-", 1)[0] for p in records)
    ent_counts = Counter(str(p.type).split("-", 1)[1] for p in records)
    n_neg = [len(v) for v in negatives.values()]
    timings["total"] = round(time.perf_counter() - t_start, 1)
    report: dict[str, Any] = {
        "out_dir": str(out),
        "phrases": len(records),
        "phrases_per_source": dict(Counter(p.source for p in records).most_common()),
        "candidates_offered_per_source": dict(candidates),
        "dropped_invalid_per_source": dict(dropped_invalid),
        "lexical_classes": {c: lex_counts.get(c, 0) for c in LEXICAL_CLASSES},
        "entity_types": dict(ent_counts.most_common()),
        "phrase_types_top30": dict(types.most_common(30)),
        "corpora": corpus_stats,
        "paraphrase_pairs": dict(pair_counts),
        "paraphrase_pairs_dropped": dict(pair_dropped),
        "word_synonyms": syn_info,
        "hard_negatives": {
            "phrases_with_negatives": len(negatives),
            "coverage": round(len(negatives) / max(len(records), 1), 4),
            "mean_negatives": round(float(np.mean(n_neg)), 3) if n_neg else 0.0,
            "k": hard_negatives_k,
            "max_cos": max_cos,
            "encoder": getattr(encoder, "name", str(encoder)),
        },
        "test_string_filter": {
            "benchmark_dir": str(bench),
            "removed_phrases": filt.removed_phrases_unique,
            "removed_paraphrase_pairs": filt.removed_pairs_unique,
            "note": "distinct strings / unordered pairs; per_file counts one in every file "
                    "that holds it",
            "per_file": filt.summary(),
        },
        "timings_s": timings,
        "params": {
            "shared_dir": str(root), "max_words": max_words, "seed": seed,
            "corpora": [str(c) for c in (DEFAULT_CORPORA if corpora is None else corpora)],
            "sources": list(sources), "max_pairs_per_synset": max_pairs_per_synset,
            "min_corpus_count": min_corpus_count, "max_phrase_words": MAX_PHRASE_WORDS,
            "max_phrase_chars": MAX_PHRASE_CHARS,
        },
    }
    write_json(out / "report.json", report)
    for name in OUTPUT_FILES:
        os.chmod(out / name, 0o644)  # atomic_write's temp files are private (0600)
    logger.info("PEARL data: %d phrases, %d paraphrase pairs, %d synonym words, %d with hard "
                "negatives -> %s", len(records), len(pair_rows), len(synonyms), len(negatives),
                out)
    return report


def _has(folder: Path, name: str) -> bool:
    return (folder / name).is_file() or (folder / f"{name}.gz").is_file()

