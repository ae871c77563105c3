"""Build PEARL's training data (paper §3): typed phrases, paraphrases, synonyms, hard negatives.

:func:`build_pearl_dataset` writes into ``out_dir``:

* ``phrases.jsonl.gz`` — one ``{"text", "type", "source"}`` object per line, unique texts
  (case-insensitive), shuffled with ``seed`` so that any prefix is a fair sample. Sources:

  - ``corpus:<name>``: spaCy noun chunks, entity spans, verb phrases (verb + particle /
    object / adverb, 2-4 tokens), adjective and adverb phrases (ADV + ADJ, ADV + ADV) and
    prepositional phrases (ADP + its object, <= 5 tokens) from the shared corpora (test
    splits skipped), capped at ``max_words`` words; their type comes from the in-context
    parse and NER (majority over occurrences), see :mod:`phrasekit.training.data.corpus_phrases`;
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
  :func:`phrasekit.training.pearl.word_synonyms.build_word_synonyms`).
* ``hard_negatives.jsonl.gz`` — ``{"text", "negatives"}`` for the phrases with at least one
  mined negative (:func:`phrasekit.training.pearl.mining.mine_hard_negatives`, MiniLM embeddings;
  paraphrases and paraphrases of paraphrases are never negatives).
* ``report.json`` — counts, timings, parameters and the test-string filter.

Test-string filter (:mod:`phrasekit.training.data.leakage`): every evaluation string of the
benchmark is removed from the training phrases, and every paraphrase pair with a side equal to
one is dropped, when it matches exactly after lower-casing and whitespace normalisation (test
strings are also added with their leading/trailing punctuation tokens stripped, and token-split
mentions also detokenised). The word-synonym map is not filtered: it holds single words.

Run time (2 CPU cores): spaCy parses 2-5k words/s and MiniLM embeds ~1.5k phrases/s on an
idle machine, several times less on a busy one; pass ``embeddings_cache`` to reuse embeddings
across builds.
"""

from __future__ import annotations

import json
import logging
import os
import random
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from phrasekit.encoders.cache import encode_cached
from phrasekit.io import write_json
from phrasekit.phrases.extract import load_spacy
from phrasekit.phrases.types import LEXICAL_CLASSES, analyse_phrases
from phrasekit.registry import load as load_model
from phrasekit.settings import shared_dir as find_shared
from phrasekit.training.data.corpus_phrases import extract_corpus_phrases
from phrasekit.training.data.corpus_sampling import DEFAULT_CORPORA, corpus_sample
from phrasekit.training.data.leakage import BenchmarkStringFilter, collect_test_strings
from phrasekit.training.data.sources import (
    MAX_PHRASE_CHARS,
    MAX_PHRASE_WORDS,
    Synset,
    detokenize,
    has_file,
    jsonl_lines,
    normalize,
    ppdb_path,
    read_mentions,
    read_ppdb,
    read_wordnet,
    strip_outer_punct,
    tidy,
    valid_phrase,
    wordnet_pairs,
    write_gz_bytes,
    write_gz_text,
)
from phrasekit.training.pearl.mining import (
    mine_hard_negatives,
    paraphrase_neighbourhood,
    surface_tokens,
)
from phrasekit.training.pearl.word_synonyms import build_word_synonyms

__all__ = [
    "ALL_SOURCES",
    "DEFAULT_MAX_WORDS",
    "OUTPUT_FILES",
    "build_pearl_dataset",
]

logger = logging.getLogger(__name__)

#: The files written by :func:`build_pearl_dataset`.
OUTPUT_FILES: tuple[str, ...] = ("phrases.jsonl.gz", "paraphrases.tsv.gz",
                                 "word_synonyms.json.gz", "hard_negatives.jsonl.gz",
                                 "report.json")
#: All phrase sources, in priority order (the first source of a phrase is its ``source``).
ALL_SOURCES: tuple[str, ...] = ("corpora", "conll2003", "bc5cdr", "wordnet", "ppdb",
                                "ppdb_filtered")
#: Default corpus budget: 600k words, 2-5 minutes of spaCy (2-5k words/s on two busy cores);
#: with the other sources this gives ~150-200k unique phrases.
DEFAULT_MAX_WORDS = 600_000
#: Lexical class of a WordNet lemma by its synset's part of speech.
_WN_LEX = {"n": "NP", "v": "VP", "a": "ADJP", "s": "ADJP", "r": "ADVP"}


# ---------------------------------------------------------------------------------- state
@dataclass
class _Phrase:
    text: str
    source: str
    type: str | None = None
    lex_hint: str | None = None  # "NP"/"VP"/"ADJP"/"ADVP" from WordNet POS, "mention"


class _PhrasePool:
    """The unique training phrases (the first source of a phrase wins) and offer counts."""

    def __init__(self, filt: BenchmarkStringFilter) -> None:
        self.filt = filt
        self.phrases: dict[str, _Phrase] = {}
        self.candidates: Counter[str] = Counter()
        self.dropped_invalid: Counter[str] = Counter()

    def offer(self, text: str, source: str, type_: str | None = None,
              lex_hint: str | None = None) -> None:
        """Add ``text`` unless it is invalid, already known or a benchmark test string."""
        text = tidy(text)
        self.candidates[source] += 1
        if not valid_phrase(text):
            self.dropped_invalid[source] += 1
            return
        key = normalize(text)
        if key in self.phrases or not self.filt.keep_phrase(text):
            return
        self.phrases[key] = _Phrase(text, source, type_, lex_hint)


@dataclass
class _Pairs:
    """The kept paraphrase rows ``(a, b, source)`` and the counts per source."""

    rows: list[tuple[str, str, str]] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)
    dropped: Counter[str] = field(default_factory=Counter)


class _Clock:
    """Seconds per build step (rounded to 0.1 s) for the report, logged as they end."""

    def __init__(self) -> None:
        self.start = self.last = time.perf_counter()
        self.timings: dict[str, float] = {}

    def restart(self) -> None:
        """Start the next step now (what ran since is not reported as a step)."""
        self.last = time.perf_counter()

    def lap(self, name: str) -> None:
        self.timings[name] = round(time.perf_counter() - self.last, 1)
        logger.info("%s done in %.1fs", name, self.timings[name])
        self.last = time.perf_counter()

    def total(self) -> dict[str, float]:
        self.timings["total"] = round(time.perf_counter() - self.start, 1)
        return self.timings


# ---------------------------------------------------------------------------------- sources
def _offer_corpus_phrases(pool: _PhrasePool, names: Sequence[str | Path], root: Path,
                          max_words: int, seed: int, nlp: Any, min_count: int,
                          show_progress: bool) -> dict[str, Any]:
    """Offer the corpus phrases seen ``min_count`` times or more (majority surface and type);
    returns the corpus statistics."""
    if not names or max_words <= 0:
        return {}
    corpora_root = root / "corpora" if (root / "corpora").is_dir() else None
    pieces, stats = corpus_sample(names, corpora_root, max_words, seed)
    found = extract_corpus_phrases(pieces, nlp, show_progress=show_progress)
    below = 0
    for rec in found.values():
        if sum(rec["surfaces"].values()) < min_count:
            below += 1
            continue
        surface = rec["surfaces"].most_common(1)[0][0]
        pool.offer(surface, f"corpus:{rec['corpus']}", rec["types"].most_common(1)[0][0])
    stats["_unique_candidates"] = len(found)
    stats["_below_min_count"] = below
    return stats


def _offer_lexicon_phrases(pool: _PhrasePool, data: Path, sources: Sequence[str]
                           ) -> tuple[list[Synset], dict[str, list[tuple[str, str]]]]:
    """Offer entity mentions, WordNet lemmas and PPDB sides (in that order); returns the
    synsets (also read for the word synonyms when present) and the PPDB positive pairs."""
    for corpus in ("conll2003", "bc5cdr"):
        if corpus in sources:
            for toks in read_mentions(data / corpus / "train.json"):
                pool.offer(detokenize(toks), corpus, lex_hint="mention")
    wn_dir = data / "wordnet"
    use_wn = "wordnet" in sources or has_file(wn_dir, "synsets.tsv")
    synsets = read_wordnet(wn_dir) if use_wn else []
    if "wordnet" in sources:
        for s in synsets:
            for m in s.members:
                if " " in m:
                    pool.offer(m, "wordnet", lex_hint=_WN_LEX.get(s.pos))
    ppdb_pairs = {name: _offer_ppdb(pool, data, name)
                  for name in ("ppdb", "ppdb_filtered") if name in sources}
    return synsets, ppdb_pairs


def _offer_ppdb(pool: _PhrasePool, data: Path, name: str) -> list[tuple[str, str]]:
    """Offer both sides of the positive train pairs; returns the pairs (outer punctuation cut)."""
    pairs: list[tuple[str, str]] = []
    for a, b, pos in read_ppdb(ppdb_path(data, name), "train"):
        if not pos:
            continue
        a2, b2 = strip_outer_punct(a), strip_outer_punct(b)
        for side in (a2, b2):
            if side:
                pool.offer(side, name)
        if a2 and b2:
            pairs.append((a2, b2))
    return pairs


def _label_types(pool: _PhrasePool, nlp: Any, show_progress: bool) -> None:
    """Type the phrases without an in-context label (context-free spaCy, WordNet POS hints)."""
    todo = [p for p in pool.phrases.values() if p.type is None]
    analysed = analyse_phrases([p.text for p in todo], nlp, show_progress=show_progress)
    for p, (lex, ent) in zip(todo, analysed, strict=True):
        if p.lex_hint == "mention":
            lex = "NP" if lex == "VP" else lex
        elif p.lex_hint in ("NP", "VP") or (p.lex_hint in ("ADJP", "ADVP") and lex != "PP"):
            lex = p.lex_hint
        p.type = f"{lex}-{ent}"


def _collect_phrases(pool: _PhrasePool, root: Path, names: Sequence[str | Path],
                     sources: Sequence[str], max_words: int, seed: int, nlp: Any,
                     min_corpus_count: int, show_progress: bool, clock: _Clock
                     ) -> tuple[dict[str, Any], list[Synset], dict[str, list[tuple[str, str]]]]:
    """Fill the pool from every source and type its phrases; returns the corpus statistics,
    the WordNet synsets and the PPDB positive pairs."""
    corpus_stats: dict[str, Any] = {}
    if "corpora" in sources:
        corpus_stats = _offer_corpus_phrases(pool, names, root, max_words, seed, nlp,
                                             min_corpus_count, show_progress)
        clock.lap("corpora")
    synsets, ppdb_pairs = _offer_lexicon_phrases(pool, root / "data", sources)
    clock.lap("sources")
    _label_types(pool, nlp, show_progress)
    clock.lap("context_free_labels")
    return corpus_stats, synsets, ppdb_pairs


def _paraphrases(pool: _PhrasePool, synsets: Sequence[Synset],
                 ppdb_pairs: dict[str, list[tuple[str, str]]], max_pairs_per_synset: int,
                 rng: random.Random) -> _Pairs:
    """WordNet then PPDB pairs, kept when valid, new and no test string; each side is written
    as the text of its training phrase when it is one."""
    candidates = [(a, b, "wordnet") for a, b in wordnet_pairs(synsets, max_pairs_per_synset,
                                                              rng)]
    candidates += [(a, b, name) for name, pairs in ppdb_pairs.items() for a, b in pairs]
    pairs = _Pairs()
    seen: set[tuple[str, str]] = set()
    for a, b, src in candidates:
        a, b = tidy(a), tidy(b)
        ka, kb = normalize(a), normalize(b)
        if ka == kb or not (valid_phrase(a) and valid_phrase(b)):
            pairs.dropped[f"{src}:invalid"] += 1
            continue
        key = (min(ka, kb), max(ka, kb))
        if key in seen:
            continue
        if not pool.filt.keep_pair(a, b):
            pairs.dropped[f"{src}:test_string"] += 1
            continue
        seen.add(key)
        a = pool.phrases[ka].text if ka in pool.phrases else a
        b = pool.phrases[kb].text if kb in pool.phrases else b
        pairs.rows.append((a, b, src))
        pairs.counts[src] += 1
    return pairs


def _mine_negatives(records: Sequence[_Phrase], pairs: _Pairs, encoder: Any,
                    embeddings_cache: str | Path | None, k: int, max_cos: float,
                    show_progress: bool, clock: _Clock
                    ) -> tuple[dict[str, list[str]], dict[str, Any]]:
    """Hard negatives of the phrases (paraphrases within two links never), and their report."""
    encoder = load_model(encoder) if isinstance(encoder, str) else encoder
    texts = [p.text for p in records]
    emb = encode_cached(encoder, texts, embeddings_cache, show_progress=show_progress)
    clock.lap("encode")
    negatives = mine_hard_negatives(texts, emb, k=k, max_cos=max_cos,
                                     exclude=paraphrase_neighbourhood(pairs.rows),
                                     show_progress=show_progress)
    clock.lap("hard_negatives")
    n_neg = [len(v) for v in negatives.values()]
    return negatives, {
        "phrases_with_negatives": len(negatives),
        "coverage": round(len(negatives) / max(len(records), 1), 4),
        "mean_negatives": round(float(np.mean(n_neg)), 3) if n_neg else 0.0,
        "k": k,
        "max_cos": max_cos,
        "encoder": getattr(encoder, "name", str(encoder)),
    }


# ---------------------------------------------------------------------------------- output
def _write_dataset(out: Path, records: Sequence[_Phrase], pairs: _Pairs,
                   synonyms: dict[str, list[str]], negatives: dict[str, list[str]]) -> None:
    """The four data files (gzip, reproducible bytes); see the module docstring."""
    out.mkdir(parents=True, exist_ok=True)
    write_gz_text(out / "phrases.jsonl.gz", jsonl_lines(
        {"text": p.text, "type": p.type, "source": p.source} for p in records))
    write_gz_text(out / "paraphrases.tsv.gz", (f"{a}\t{b}\t{s}\n" for a, b, s in pairs.rows))
    write_gz_bytes(out / "word_synonyms.json.gz",
                   [json.dumps(synonyms, ensure_ascii=False, sort_keys=True).encode("utf-8")])
    write_gz_text(out / "hard_negatives.jsonl.gz", jsonl_lines(
        {"text": p.text, "negatives": negatives[p.text]} for p in records
        if p.text in negatives))


def _phrase_counts(records: Sequence[_Phrase], pool: _PhrasePool) -> dict[str, Any]:
    """The report's phrase counts: per source, offered, dropped, classes and types."""
    types = Counter(p.type for p in records)
    lex_counts = Counter(str(p.type).split("-", 1)[0] for p in records)
    ent_counts = Counter(str(p.type).split("-", 1)[1] for p in records)
    return {
        "phrases": len(records),
        "phrases_per_source": dict(Counter(p.source for p in records).most_common()),
        "candidates_offered_per_source": dict(pool.candidates),
        "dropped_invalid_per_source": dict(pool.dropped_invalid),
        "lexical_classes": {c: lex_counts.get(c, 0) for c in LEXICAL_CLASSES},
        "entity_types": dict(ent_counts.most_common()),
        "phrase_types_top30": dict(types.most_common(30)),
    }


def _filter_report(filt: BenchmarkStringFilter, bench: Path) -> dict[str, Any]:
    return {
        "benchmark_dir": str(bench),
        "removed_phrases": filt.removed_phrases_unique,
        "removed_paraphrase_pairs": filt.removed_pairs_unique,
        "note": "distinct strings / unordered pairs; per_file counts one in every file "
                "that holds it",
        "per_file": filt.summary(),
    }



def _save_report(out: Path, report: dict[str, Any]) -> None:
    """Write ``report.json`` and make every output file world-readable."""
    write_json(out / "report.json", report)
    for name in OUTPUT_FILES:
        os.chmod(out / name, 0o644)  # atomic_write's temp files are private (0600)
    logger.info("PEARL data: %d phrases, %d paraphrase pairs, %d synonym words, %d with hard "
                "negatives -> %s", report["phrases"], sum(report["paraphrase_pairs"].values()),
                report["word_synonyms"]["words_with_synonyms"],
                report["hard_negatives"]["phrases_with_negatives"], out)


# ---------------------------------------------------------------------------------- build
def build_pearl_dataset(
    out_dir: str | Path, shared_dir: str | Path | None = None,
    max_words: int = DEFAULT_MAX_WORDS, seed: int = 0, show_progress: bool = True,
    corpora: Sequence[str | Path] | None = None, sources: Sequence[str] = ALL_SOURCES,
    benchmark_dir: str | Path | None = None, strict_filter: bool = True,
    encoder: Any = "minilm", glove: Any = None, nlp: Any = None,
    hard_negatives_k: int = 4, max_cos: float = 0.75,
    synonym_threshold: float = 0.85, max_synonyms: int = 8,
    max_pairs_per_synset: int = 6, min_corpus_count: int = 1,
    embeddings_cache: str | Path | None = None,
) -> dict[str, Any]:
    """Build the PEARL training data into ``out_dir`` and return the report (also written).

    Args:
        out_dir: output folder (created); files are replaced atomically.
        shared_dir: folder holding ``data/`` and ``corpora/`` (default: the shared folder).
        max_words: corpus words parsed with spaCy in total, spread evenly over the corpora.
        seed: sampling / shuffling seed; show_progress: tqdm progress bars.
        corpora: corpus folder names under ``<shared>/corpora`` or paths to corpus files or
            folders (default :data:`DEFAULT_CORPORA`; ``[]`` for none).
        sources: which phrase sources to use (subset of :data:`ALL_SOURCES`).
        benchmark_dir / strict_filter: the test-string filter's data (default
            ``<shared>/data``) and whether a missing benchmark file raises (keep True).
        encoder: encoder name for :func:`phrasekit.load` or an Encoder (hard negatives).
        glove / nlp: a loaded ``glove-50d`` encoder / spaCy pipeline (loaded when None).
        hard_negatives_k: negatives per phrase; max_cos: their cosine ceiling.
        synonym_threshold: GloVe cosine threshold for word synonyms; max_synonyms per word.
        max_pairs_per_synset: cap on WordNet paraphrase pairs per synset.
        min_corpus_count: corpus phrases seen fewer times than this are dropped.
        embeddings_cache: optional ``.npz`` file reused and extended across builds (the
            encoder pass dominates the run time), see :func:`encode_cached`.
    """
    unknown = set(sources) - set(ALL_SOURCES)
    if unknown:
        raise ValueError(f"unknown sources {sorted(unknown)}; choose from {ALL_SOURCES}")
    if max_words < 0:
        raise ValueError(f"max_words must be >= 0, got {max_words}")
    clock = _Clock()
    root = Path(shared_dir) if shared_dir is not None else find_shared(required=True)
    bench = Path(benchmark_dir) if benchmark_dir is not None else root / "data"
    rng = random.Random(seed)
    nlp = nlp if nlp is not None else load_spacy()
    clock.restart()
    pool = _PhrasePool(BenchmarkStringFilter(collect_test_strings(bench, strict=strict_filter)))
    clock.lap("test_strings")
    names = list(DEFAULT_CORPORA if corpora is None else corpora)
    corpus_stats, synsets, ppdb_pairs = _collect_phrases(
        pool, root, names, sources, max_words, seed, nlp, min_corpus_count, show_progress, clock)
    pairs = _paraphrases(pool, synsets if "wordnet" in sources else [], ppdb_pairs,
                         max_pairs_per_synset, rng)
    clock.lap("paraphrases")
    synonyms, syn_info = build_word_synonyms(
        {w for p in pool.phrases.values() for w in surface_tokens(p.text)}, synsets,
        glove if glove is not None else load_model("glove-50d"), threshold=synonym_threshold,
        max_per_word=max_synonyms, show_progress=show_progress)
    clock.lap("word_synonyms")
    records = list(pool.phrases.values())
    rng.shuffle(records)
    negatives, negative_info = _mine_negatives(records, pairs, encoder, embeddings_cache,
                                               hard_negatives_k, max_cos, show_progress, clock)
    out = Path(out_dir)
    _write_dataset(out, records, pairs, synonyms, negatives)
    clock.lap("write")
    report: dict[str, Any] = {
        "out_dir": str(out), **_phrase_counts(records, pool), "corpora": corpus_stats,
        "paraphrase_pairs": dict(pairs.counts), "paraphrase_pairs_dropped": dict(pairs.dropped),
        "word_synonyms": syn_info, "hard_negatives": negative_info,
        "test_string_filter": _filter_report(pool.filt, bench), "timings_s": clock.total(),
        "params": {
            "shared_dir": str(root), "max_words": max_words, "seed": seed,
            "corpora": [str(c) for c in names], "sources": list(sources),
            "max_pairs_per_synset": max_pairs_per_synset, "min_corpus_count": min_corpus_count,
            "max_phrase_words": MAX_PHRASE_WORDS, "max_phrase_chars": MAX_PHRASE_CHARS,
        },
    }
    _save_report(out, report)
    return report
