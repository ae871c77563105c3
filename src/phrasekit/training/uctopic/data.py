"""UCTopic pre-training pairs: two different sentences that contain the same phrase mention.

``build_uctopic_dataset(out_dir)`` (UCTopic §3.1, §4.1, with spaCy phrases instead of Wikipedia
hyperlinks):

1. samples ``max_words`` words of the shared corpora (:func:`phrasekit.training.
   corpus_sampling.corpus_sample`: spread over the corpora, documents of a ``test`` split
   never read);
2. parses them with spaCy and keeps, per sentence (spaCy's sentence boundaries, 5 to
   ``max_sentence_words`` words), the noun chunks and named entities that
   :class:`~phrasekit.phrases.extract.PhraseExtractor` keeps (determiners stripped, pronouns,
   numbers, dates and markup dropped), with their character offsets in the sentence. The
   parse is cached in ``out_dir/cache/`` (keyed by every setting that changes it), so
   rebuilding with other pair settings skips spaCy;
3. drops sentences that also occur in any split of the entity-clustering datasets
   (:data:`phrasekit.eval.entity_clustering.DATASETS`; compared on their lower-cased letters
   and digits only, so tokenised and raw text match), and
   duplicate sentences (a pair must be two *different* sentences);
4. groups the mention instances by normalised text (the extractor key: lower-cased, whitespace
   folded); a mention seen in >= 2 sentences yields up to ``max_pairs_per_mention`` distinct
   sentence pairs (drawn from at most ``max_instances_per_mention`` sampled instances, so
   frequent mentions do not swamp the data).

Files (compact gzip JSON lines):

- ``sentences.jsonl.gz``: line ``i`` is sentence ``i`` as a JSON string;
- ``mentions.jsonl.gz``: line ``j`` is ``[key, n_sentences]`` of mention ``j``;
- ``pairs.jsonl.gz``: ``[mention, sent_a, start_a, end_a, sent_b, start_b, end_b]`` per
  pair, shuffled with the seed;
- ``report.json``: settings, counts (sentences, instances, mentions, pairs, exclusions) and
  timings.
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
import time
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from phrasekit.eval.entity_clustering import DATASETS, load_sentences
from phrasekit.io import write_json
from phrasekit.phrases.extract import DEFAULT_SPACY_MODEL, PhraseExtractor, load_spacy
from phrasekit.settings import shared_dir as find_shared
from phrasekit.training.data.corpus_sampling import DEFAULT_CORPORA, corpus_sample
from phrasekit.training.data.sources import gz_json_lines, jsonl_lines, write_gz_bytes

logger = logging.getLogger(__name__)

SENTENCES_FILE = "sentences.jsonl.gz"
MENTIONS_FILE = "mentions.jsonl.gz"
PAIRS_FILE = "pairs.jsonl.gz"
REPORT_FILE = "report.json"
CACHE_DIR = "cache"
#: Everything a build writes into its folder (a rerun replaces them; nothing else is there).
OUTPUT_NAMES = (SENTENCES_FILE, MENTIONS_FILE, PAIRS_FILE, REPORT_FILE, CACHE_DIR)

#: Corpus words parsed by default (spaCy parses ~2-5k words/s on two busy cores).
DEFAULT_MAX_WORDS = 600_000
MIN_SENTENCE_WORDS = 5
DEFAULT_MAX_SENTENCE_WORDS = 80
DEFAULT_MAX_INSTANCES = 64
DEFAULT_MAX_PAIRS = 16


@dataclass
class PairData:
    """Loaded pre-training data: sentences, mention keys and the pair table."""

    sentences: list[str]
    mentions: list[str]
    pairs: np.ndarray  # (n, 7) int64: mention, sent_a, start_a, end_a, sent_b, start_b, end_b

    def __len__(self) -> int:
        return len(self.pairs)

    def pair_items(self, i: int) -> tuple[tuple[str, int, int], tuple[str, int, int]]:
        """The two ``(sentence, start, end)`` instances of pair ``i``."""
        _, sa, a0, a1, sb, b0, b1 = (int(v) for v in self.pairs[i])
        return (self.sentences[sa], a0, a1), (self.sentences[sb], b0, b1)


# ---------------------------------------------------------------------------------- helpers
def normalize_sentence(text: str) -> str:
    """The lower-cased letters and digits of a sentence: the key of the evaluation-overlap
    check and of deduplication, blind to tokenisation ("U.S. , he" = "U.S., he")."""
    return "".join(ch for ch in text.lower() if ch.isalnum())


def evaluation_sentences(data_dir: Path | None) -> set[str]:
    """Normalised sentences of every split of the entity-clustering datasets (kept out)."""
    out: set[str] = set()
    if data_dir is None:
        logger.warning("no benchmark data folder: the evaluation-overlap filter is skipped")
        return out
    for name, spec in DATASETS.items():
        for split in spec.files:
            try:
                out.update(normalize_sentence(s) for s in load_sentences(name, data_dir, split))
            except FileNotFoundError:
                logger.warning("%s/%s missing: not used by the overlap filter", name, split)
    return out


def _clean_sentence(text: str) -> tuple[str, int]:
    """Line breaks/tabs -> spaces (length kept), then stripped; returns (text, chars cut left)."""
    flat = text.replace("\r", " ").replace("\n", " ").replace("\t", " ")
    stripped = flat.lstrip()
    return stripped.rstrip(), len(flat) - len(stripped)


def sentence_mentions(sdoc: Any, extractor: Any, max_sentence_words: int,
                      min_sentence_words: int = MIN_SENTENCE_WORDS
                      ) -> Iterator[tuple[str, list[tuple[int, int, str, str]]]]:
    """``(sentence, [(start, end, key, source), ...])`` for every sentence of a parse with
    ``min_sentence_words`` to ``max_sentence_words`` words and at least one mention."""
    by_sent: dict[int, list[Any]] = defaultdict(list)
    for span, key, _surface, source in extractor.doc_spans(sdoc):
        by_sent[span.sent.start].append((span, key, source))
    for sent in sdoc.sents:
        found = by_sent.get(sent.start)
        if not found:
            continue
        n_words = sum(1 for t in sent if not (t.is_space or t.is_punct))
        if not min_sentence_words <= n_words <= max_sentence_words:
            continue
        text, cut = _clean_sentence(sent.text)
        offset = sent.start_char + cut
        mentions = []
        for span, key, source in found:
            s, e = span.start_char - offset, span.end_char - offset
            if 0 <= s < e <= len(text) and text[s:e].strip():
                mentions.append((s, e, key, source))
        if mentions:
            yield text, mentions


def _fingerprint(obj: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()[:16]


def _write_jsonl_gz(path: Path, rows: Iterable[Any]) -> None:
    write_gz_bytes(path, (line.encode("utf-8") for line in jsonl_lines(rows, compact=True)))


def _read_jsonl_gz(path: Path) -> list[Any]:
    return [value for _, value in gz_json_lines(path)]


# ---------------------------------------------------------------------------------- parsing
def parse_corpora(pieces: Sequence[tuple[str, str]], cache: Path, max_sentence_words: int,
                  spacy_model: str | None = None, batch_size: int = 16,
                  show_progress: bool = True) -> list[list[Any]]:
    """``[corpus, sentence, [[start, end, key, source], ...]]`` per usable sentence, cached."""
    if cache.is_file():
        logger.info("reading cached parse %s", cache)
        return _read_jsonl_gz(cache)
    nlp = load_spacy(spacy_model or DEFAULT_SPACY_MODEL)
    extractor = PhraseExtractor(spacy_model=nlp)
    rows: list[list[Any]] = []
    stream = nlp.pipe(((text, name) for name, text in pieces), as_tuples=True,
                      batch_size=batch_size)
    bar = tqdm(stream, total=len(pieces), desc="uctopic pairs[spaCy]", unit="doc",
               disable=not show_progress)
    for sdoc, name in bar:
        for text, mentions in sentence_mentions(sdoc, extractor, max_sentence_words):
            rows.append([name, text, [list(m) for m in mentions]])
    _write_jsonl_gz(cache, rows)
    return rows


def mine_pairs(instances: Sequence[tuple[int, int, int, str]], max_instances_per_mention: int,
               max_pairs_per_mention: int, seed: int
               ) -> tuple[list[str], list[int], list[list[int]]]:
    """Group ``(sentence id, start, end, key)`` instances by key; pair different sentences.

    Sentence ids must denote distinct sentence texts. Returns (mention keys, sentences per
    key, pair rows ``[m, sa, a0, a1, sb, b0, b1]``, shuffled). A key keeps its first instance
    per sentence; keys in < 2 sentences are dropped.
    """
    if max_instances_per_mention < 2 or max_pairs_per_mention < 1:
        raise ValueError("max_instances_per_mention must be >= 2 and max_pairs_per_mention >= 1")
    groups: dict[str, dict[int, tuple[int, int]]] = {}
    for sid, s, e, key in instances:
        groups.setdefault(key, {}).setdefault(sid, (s, e))
    rng = random.Random(seed)
    keys: list[str] = []
    counts: list[int] = []
    pairs: list[list[int]] = []
    for key in sorted(groups):
        occ = sorted(groups[key].items())
        if len(occ) < 2:
            continue
        m = len(keys)
        keys.append(key)
        counts.append(len(occ))
        if len(occ) > max_instances_per_mention:
            occ = rng.sample(occ, max_instances_per_mention)
        n = len(occ)
        total = n * (n - 1) // 2
        if total <= max_pairs_per_mention:
            chosen = list(combinations(range(n), 2))
        else:
            picked: set[tuple[int, int]] = set()
            while len(picked) < max_pairs_per_mention:
                i, j = sorted(rng.sample(range(n), 2))
                picked.add((i, j))
            chosen = sorted(picked)
        for i, j in chosen:
            a, b = (occ[i], occ[j]) if rng.random() < 0.5 else (occ[j], occ[i])
            pairs.append([m, a[0], a[1][0], a[1][1], b[0], b[1][0], b[1][1]])
    rng.shuffle(pairs)
    return keys, counts, pairs


# ---------------------------------------------------------------------------------- build
@dataclass
class _Kept:
    """The distinct sentences outside the evaluation data and their mention instances."""

    sentences: list[str] = field(default_factory=list)
    instances: list[tuple[int, int, int, str]] = field(default_factory=list)
    per_corpus: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    n_eval: int = 0
    n_dup: int = 0


def _keep_sentences(rows: Sequence[list[Any]], blocked: set[str]) -> _Kept:
    """Drop evaluation and duplicate sentences; number the rest and their instances."""
    kept = _Kept()
    seen: dict[str, int] = {}
    for name, text, mentions in rows:
        key = normalize_sentence(text)
        if key in blocked:
            kept.n_eval += 1
            continue
        if key in seen:
            kept.n_dup += 1
            continue
        sid = seen[key] = len(kept.sentences)
        kept.sentences.append(text)
        kept.per_corpus[name] += 1
        kept.instances.extend((sid, int(s), int(e), str(k)) for s, e, k, _src in mentions)
    return kept


def _renumber(pairs: list[list[int]]) -> tuple[list[int], list[list[int]]]:
    """The sentence ids used by the pairs (sorted), and the pairs with ids into that list."""
    used = sorted({p[1] for p in pairs} | {p[4] for p in pairs})
    remap = {old: new for new, old in enumerate(used)}
    return used, [[m, remap[sa], a0, a1, remap[sb], b0, b1]
                  for m, sa, a0, a1, sb, b0, b1 in pairs]


def _counts(n_pieces: int, n_rows: int, kept: _Kept, n_keys: int, n_pairs: int,
            n_used: int) -> dict[str, Any]:
    return {
        "pieces_parsed": n_pieces,
        "sentences_with_mentions": n_rows,
        "sentences_dropped_eval_overlap": kept.n_eval,
        "sentences_dropped_duplicate": kept.n_dup,
        "sentences_kept": len(kept.sentences),
        "sentences_kept_per_corpus": dict(kept.per_corpus),
        "instances": len(kept.instances),
        "distinct_mentions": len({k for *_, k in kept.instances}),
        "mentions_in_2plus_sentences": n_keys,
        "pairs": n_pairs,
        "sentences_in_pairs": n_used,
    }


def build_uctopic_dataset(
    out_dir: str | Path,
    corpora: Sequence[str | Path] | None = None,
    shared_dir: str | Path | None = None,
    max_words: int = DEFAULT_MAX_WORDS,
    max_sentence_words: int = DEFAULT_MAX_SENTENCE_WORDS,
    max_instances_per_mention: int = DEFAULT_MAX_INSTANCES,
    max_pairs_per_mention: int = DEFAULT_MAX_PAIRS,
    seed: int = 0,
    spacy_model: str | None = None,
    show_progress: bool = True,
) -> dict[str, Any]:
    """Build the pre-training pairs into ``out_dir`` (see the module docstring); the report."""
    if max_words < 1:
        raise ValueError(f"max_words must be >= 1, got {max_words}")
    if max_sentence_words < MIN_SENTENCE_WORDS:
        raise ValueError(f"max_sentence_words must be >= {MIN_SENTENCE_WORDS}")
    t0 = time.time()
    out = Path(out_dir)
    root = Path(shared_dir) if shared_dir else find_shared(required=False)
    corpora_root = root / "corpora" if root and (root / "corpora").is_dir() else None
    data_root = root / "data" if root and (root / "data").is_dir() else None
    names = list(DEFAULT_CORPORA if corpora is None else corpora)
    if not names:
        raise ValueError("no corpora given")
    pieces, corpus_stats = corpus_sample(names, corpora_root, max_words, seed)
    if not pieces:
        raise ValueError(f"the corpora {names} gave no text")
    out.mkdir(parents=True, exist_ok=True)  # once the corpora are read: no folder on an error
    settings = {"corpora": [str(c) for c in names], "max_words": max_words, "seed": seed,
                "max_sentence_words": max_sentence_words,
                "spacy_model": spacy_model or "default", "format": 1}
    cache = out / CACHE_DIR / f"parse-{_fingerprint(settings)}.jsonl.gz"
    t1 = time.time()
    rows = parse_corpora(pieces, cache, max_sentence_words, spacy_model,
                         show_progress=show_progress)
    t_parse = time.time() - t1
    kept = _keep_sentences(rows, evaluation_sentences(data_root))
    keys, counts, pairs = mine_pairs(kept.instances, max_instances_per_mention,
                                     max_pairs_per_mention, seed)
    if not pairs:
        raise ValueError("no mention occurs in two different sentences: give more text "
                         "(max_words) or other corpora")
    used, pairs = _renumber(pairs)
    _write_jsonl_gz(out / SENTENCES_FILE, (kept.sentences[i] for i in used))
    _write_jsonl_gz(out / MENTIONS_FILE, ([k, c] for k, c in zip(keys, counts, strict=True)))
    _write_jsonl_gz(out / PAIRS_FILE, pairs)
    order = np.argsort(-np.asarray(counts))[:20]
    report = {
        "settings": {**settings, "max_instances_per_mention": max_instances_per_mention,
                     "max_pairs_per_mention": max_pairs_per_mention},
        "corpora": corpus_stats,
        "counts": _counts(len(pieces), len(rows), kept, len(keys), len(pairs), len(used)),
        "top_mentions": [[keys[i], counts[i]] for i in order],
        "seconds": {"parse": round(t_parse, 1), "total": round(time.time() - t0, 1)},
        "parse_cache": str(cache),
    }
    write_json(out / REPORT_FILE, report)
    logger.info("UCTopic pairs: %s", report["counts"])
    return report


def load_pair_data(data_dir: str | Path, limit: int | None = None) -> PairData:
    """Read the files written by :func:`build_uctopic_dataset` (``limit``: first pairs only);
    a row that is not what the build writes is named by file and line."""
    d = Path(data_dir)
    for name in (SENTENCES_FILE, MENTIONS_FILE, PAIRS_FILE):
        if not (d / name).is_file():
            raise FileNotFoundError(f"{d / name} missing: build the data first "
                                    "(build_uctopic_dataset / phrasekit train uctopic-data)")
    sentences, mentions = [], []
    for lineno, value in gz_json_lines(d / SENTENCES_FILE):
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"{d / SENTENCES_FILE}:{lineno}: not a sentence (a JSON string)")
        sentences.append(value)
    for lineno, value in gz_json_lines(d / MENTIONS_FILE):
        if not (isinstance(value, list) and value and isinstance(value[0], str)):
            raise ValueError(f"{d / MENTIONS_FILE}:{lineno}: not a [mention, count] row")
        mentions.append(value[0])
    rows = []
    for lineno, row in gz_json_lines(d / PAIRS_FILE):
        _check_pair_row(row, f"{d / PAIRS_FILE}:{lineno}", sentences, len(mentions))
        rows.append(row)
        if limit is not None and len(rows) >= limit:
            break
    if not rows:
        raise ValueError(f"{d / PAIRS_FILE} holds no pairs")
    return PairData(sentences, mentions, np.asarray(rows, dtype=np.int64))


def _check_pair_row(row: Any, where: str, sentences: list[str], n_mentions: int) -> None:
    """A pair row: seven whole numbers, a known mention and two spans of known sentences that
    hold text."""
    if not (isinstance(row, list) and len(row) == 7
            and all(isinstance(v, int) and not isinstance(v, bool) for v in row)):
        raise ValueError(f"{where}: not a pair row [mention, sentence_a, start_a, end_a, "
                         "sentence_b, start_b, end_b] of whole numbers")
    if not 0 <= row[0] < n_mentions:
        raise ValueError(f"{where}: mention {row[0]} is not in 0..{n_mentions - 1} "
                         "(files from different builds?)")
    for sent, start, end in (row[1:4], row[4:7]):
        if not 0 <= sent < len(sentences):
            raise ValueError(f"{where}: sentence {sent} is not in 0..{len(sentences) - 1} "
                             "(files from different builds?)")
        if not (0 <= start < end <= len(sentences[sent])
                and sentences[sent][start:end].strip()):
            raise ValueError(f"{where}: span ({start}, {end}) is no text of sentence {sent} "
                             f"({len(sentences[sent])} characters)")
