"""Build Phrase-BERT's two triplet datasets (paper §3) from offline data.

:func:`build_phrase_bert_dataset` writes into ``out_dir``:

* ``paraphrase_triplets.jsonl.gz`` — ``{"anchor", "positive", "negative", "source"}``: a
  phrase p, a *lexically diverse* paraphrase p+ and a corrupted phrase p−, in a seeded random
  order (any prefix is a fair sample).

  **Substitution.** The paper makes p+ with a GPT-2 diverse paraphraser (nucleus sampling,
  lexical constraints) and p− by paraphrasing a corrupted p. No generative paraphraser runs
  offline here, so p+ comes from existing paraphrase lists instead: positive pairs of the PPDB
  and PPDB-filtered **train** splits (the dev/test parts are never read) and WordNet synonyms
  where at least one side is a multi-word lemma (at most ``max_pairs_per_synset`` per synset).
  A pair is kept only when the two sides share no non-stopword (:func:`lexically_disjoint`:
  no common content word, nor two that are variants: one inside the other, the same first
  min(5, length) >= 4 letters, or a close spelling, so "sedge"/"nutsedge", "thank"/"thanking"
  and "cappella"/"capella" count as shared). p− keeps the paper's first step — one randomly
  chosen non-stopword of p replaced by a random word of the vocabulary (the backbone
  tokenizer's whole words, :func:`word_vocabulary`; seeded; never a word of p or p+) —
  without the second paraphrasing step, so p− differs from p in exactly one content word: a
  lexically close, semantically broken negative.
  The anchor is a random side of each unordered pair
  (:mod:`phrasekit.training.phrase_bert.paraphrases`).
* ``context_triplets.jsonl.gz`` — ``{"anchor", "positive", "negative", "source"}``: a phrase
  p, a window c+ of about ``context_tokens`` (120) WordPiece tokens around one occurrence of p
  in which that occurrence is replaced by the tokenizer's mask token (``[MASK]``), and c−, the
  masked window of *another* phrase from another document (so both contexts hold one mask and
  the mask itself is no cue), which does not contain p. Phrases are multi-word spaCy noun
  chunks and named entities (:class:`phrasekit.phrases.PhraseExtractor` cleaning: determiners,
  numbers and outer punctuation stripped; numeric entity types dropped; at most 8 words), or
  the multi-word keys of cached :class:`~phrasekit.phrases.PhraseVocabulary` files
  (``phrase_vocabs``, located by a word n-gram scan, which skips spaCy for that corpus). One
  triplet per phrase; phrases in order of frequency in the sample (ties in seeded random
  order), as the paper keeps the most frequent phrases. Texts come from
  :func:`phrasekit.training.data.corpus_sampling.corpus_sample` (a word budget spread over the
  corpora; documents of a ``test`` split are never read). The default corpora have no dev split; a
  corpus with one (e.g. ``inspec``) should not be named
  (:mod:`phrasekit.training.phrase_bert.contexts`).
* ``report.json`` — counts per source, drop reasons, the test-string filter, timings, params.

Test-string filter: a paraphrase pair with a side that is a benchmark test/dev string
(:func:`phrasekit.training.data.leakage.collect_test_strings`, exact match after lower-casing)
is dropped before any other filter, a negative that is one is redrawn, and a context phrase
that is one gets no triplet; the removals are counted per kind and per benchmark file in the
report. Contexts are ~120-token windows, never benchmark strings themselves.

Run time with the defaults (400k corpus words): about 80 s on this 2-core machine (spaCy
~6k words/s), giving ~19.6k paraphrase and 30k context triplets.
"""


from __future__ import annotations

import logging
import random
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from phrasekit.io import write_json
from phrasekit.models.backbones import minilm_path
from phrasekit.settings import shared_dir as find_shared
from phrasekit.training.data.corpus_sampling import corpus_sample
from phrasekit.training.data.leakage import BenchmarkStringFilter, collect_test_strings
from phrasekit.training.data.sources import gz_json_lines, jsonl_lines, write_gz_text
from phrasekit.training.phrase_bert.contexts import (
    CONTEXT_TOKENS,
    build_context_triplets,
    context_occurrences,
    load_phrase_vocabs,
)
from phrasekit.training.phrase_bert.paraphrases import (
    build_paraphrase_triplets,
    labelled_ppdb_triplets,
    paraphrase_pairs,
)
from phrasekit.training.phrase_bert.words import (
    word_vocabulary,
)

__all__ = [
    "CONTEXT_FILE",
    "DEFAULT_CONTEXT_CORPORA",
    "DEFAULT_MAX_CONTEXT",
    "DEFAULT_MAX_PARAPHRASE",
    "DEFAULT_MAX_WORDS",
    "LABELLED_SOURCES",
    "OUTPUT_FILES",
    "PARAPHRASE_FILE",
    "PARAPHRASE_SOURCES",
    "build_phrase_bert_dataset",
    "read_triplets",
]

logger = logging.getLogger(__name__)

PARAPHRASE_FILE = "paraphrase_triplets.jsonl.gz"
CONTEXT_FILE = "context_triplets.jsonl.gz"
#: The files written by :func:`build_phrase_bert_dataset`.
OUTPUT_FILES: tuple[str, ...] = (PARAPHRASE_FILE, CONTEXT_FILE, "report.json")
#: Paraphrase sources (PPDB files are read on their train split only).
PARAPHRASE_SOURCES: tuple[str, ...] = ("ppdb", "ppdb_filtered", "wordnet")
#: Sources of :func:`labelled_ppdb_triplets` (opt-in: ``labelled_ppdb=True``).
LABELLED_SOURCES: tuple[str, ...] = ("ppdb:labelled", "ppdb_filtered:labelled")
#: Corpora used for contexts by default: long documents (120-token windows) and no dev split.
DEFAULT_CONTEXT_CORPORA: tuple[str, ...] = ("bbc_news", "20newsgroups", "arxiv_abstracts_cc0")
#: Corpus words sampled for contexts (spaCy parses ~2-5k words/s on two busy cores).
DEFAULT_MAX_WORDS = 400_000
DEFAULT_MAX_PARAPHRASE = 100_000
DEFAULT_MAX_CONTEXT = 30_000


def read_triplets(path: str | Path, limit: int | None = None) -> list[dict[str, str]]:
    """The first ``limit`` triplets (all when None) of a ``*_triplets.jsonl.gz`` file."""
    out: list[dict[str, str]] = []
    if limit == 0:
        return out
    for lineno, rec in gz_json_lines(Path(path)):
        fields = ("anchor", "positive", "negative")
        if not isinstance(rec, dict) or not all(isinstance(rec.get(k), str) for k in fields):
            raise ValueError(f"{path}:{lineno}: not a triplet record (an object whose "
                             "'anchor', 'positive' and 'negative' are strings)")
        row = {k: rec[k] for k in fields}
        if not all(v.strip() for v in row.values()):
            raise ValueError(f"{path}:{lineno}: empty anchor, positive or negative")
        row["source"] = str(rec.get("source", ""))
        out.append(row)
        if limit is not None and len(out) >= limit:
            break
    return out


# ---------------------------------------------------------------------------------- steps
def _check_args(paraphrase_sources: Sequence[str], max_paraphrase: int, max_context: int,
                max_words: int, context_tokens: int) -> None:
    unknown = set(paraphrase_sources) - set(PARAPHRASE_SOURCES)
    if unknown:
        raise ValueError(f"unknown paraphrase sources {sorted(unknown)}; "
                         f"choose from {PARAPHRASE_SOURCES}")
    for name, value in (("max_paraphrase", max_paraphrase), ("max_context", max_context),
                        ("max_words", max_words)):
        if value < 0:
            raise ValueError(f"{name} must be >= 0, got {value}")
    if max_paraphrase == 0 and max_context == 0:
        raise ValueError("max_paraphrase and max_context are both 0: nothing to build")
    if context_tokens < 8:
        raise ValueError(f"context_tokens must be >= 8, got {context_tokens}")


def _default_tokenizer() -> Any:
    """The MiniLM backbone's tokenizer (transformers is imported only when it is needed)."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(minilm_path()))


def _paraphrase_part(data: Path, sources: Sequence[str], max_paraphrase: int,
                     max_pairs_per_synset: int, drop_binomials: bool, labelled_ppdb: bool,
                     seed: int, filters: Sequence[BenchmarkStringFilter], tokenizer: Any
                     ) -> tuple[list[dict[str, str]], dict[str, Any]]:
    """Up to ``max_paraphrase`` paraphrase triplets (+ the labelled ones), and statistics."""
    if max_paraphrase <= 0:
        return [], {}
    pair_filter, neg_filter = filters
    source_stats: dict[str, Any] = {}
    pairs = paraphrase_pairs(data, sources, max_pairs_per_synset, random.Random(seed),
                             drop_binomials, source_stats)
    para, stats = build_paraphrase_triplets(pairs, pair_filter, neg_filter,
                                            random.Random(seed + 1), word_vocabulary(tokenizer))
    stats.update(source_stats)
    stats["available"] = len(para)
    para = para[:max_paraphrase]
    if labelled_ppdb:
        names = [n for n in ("ppdb", "ppdb_filtered") if n in sources]
        labelled, stats["labelled"] = labelled_ppdb_triplets(
            data, names, pair_filter, neg_filter, random.Random(seed + 3))
        para += labelled
    return para, stats


def _context_part(root: Path, names: Sequence[str | Path], max_words: int, max_context: int,
                  context_tokens: int, vocabs: Mapping[str, list[str]], seed: int, nlp: Any,
                  tokenizer: Any, ctx_filter: BenchmarkStringFilter, show_progress: bool,
                  timings: dict[str, float]
                  ) -> tuple[list[dict[str, str]], dict[str, Any], dict[str, Any]]:
    """Up to ``max_context`` context triplets, their statistics and the corpus statistics."""
    if max_context <= 0:
        return [], {}, {}
    t = time.perf_counter()
    if not names or max_words == 0:
        raise ValueError("context triplets need corpora and max_words > 0 "
                         "(or set max_context to 0)")
    corpora_root = root / "corpora" if (root / "corpora").is_dir() else None
    pieces, corpus_stats = corpus_sample(names, corpora_root, max_words, seed)
    occurrences = context_occurrences(pieces, vocabs, nlp, show_progress)
    timings["context_phrases"] = round(time.perf_counter() - t, 1)
    ctx, stats = build_context_triplets(pieces, occurrences, tokenizer, ctx_filter,
                                        random.Random(seed + 2), max_context, context_tokens)
    stats["mask_token"] = tokenizer.mask_token
    stats["phrases_from"] = {n: ("vocabulary" if n in vocabs else "spacy")
                             for n in corpus_stats}
    return ctx, stats, corpus_stats


def _filter_report(bench: Path, test_strings: dict[str, set[str]],
                   pair_filter: BenchmarkStringFilter, neg_filter: BenchmarkStringFilter,
                   ctx_filter: BenchmarkStringFilter) -> dict[str, Any]:
    return {
        "benchmark_dir": str(bench),
        "removed_paraphrase_pairs": pair_filter.removed_pairs_unique,
        "redrawn_negatives": neg_filter.removed_phrases_unique,
        "removed_context_phrases": ctx_filter.removed_phrases_unique,
        "note": "distinct pairs / strings, counted before the size caps; per_file counts "
                "one in every benchmark file that holds the string",
        "per_file": {
            rel: {"test_strings": len(keys),
                  "removed_paraphrase_pairs": pair_filter.removed_pairs.get(rel, 0),
                  "redrawn_negatives": neg_filter.removed_phrases.get(rel, 0),
                  "removed_context_phrases": ctx_filter.removed_phrases.get(rel, 0)}
            for rel, keys in test_strings.items()},
    }


# ---------------------------------------------------------------------------------- build
def build_phrase_bert_dataset(
    out_dir: str | Path, shared_dir: str | Path | None = None,
    max_paraphrase: int = DEFAULT_MAX_PARAPHRASE, max_context: int = DEFAULT_MAX_CONTEXT,
    max_words: int = DEFAULT_MAX_WORDS, corpora: Sequence[str | Path] | None = None,
    paraphrase_sources: Sequence[str] = PARAPHRASE_SOURCES,
    phrase_vocabs: Mapping[str, Any] | None = None, context_tokens: int = CONTEXT_TOKENS,
    max_pairs_per_synset: int = 6, drop_binomials: bool = False, labelled_ppdb: bool = False,
    benchmark_dir: str | Path | None = None, strict_filter: bool = True, seed: int = 0,
    nlp: Any = None, tokenizer: Any = None, show_progress: bool = True,
) -> dict[str, Any]:
    """Build both triplet datasets into ``out_dir``; returns the report (also written).

    Args:
        out_dir: output folder (created; files replaced atomically).
        shared_dir: folder holding ``data/`` and ``corpora/`` (default: the shared folder).
        max_paraphrase / max_context: triplets kept of each kind (0 skips that kind).
        max_words: corpus words sampled for contexts (spread over ``corpora``).
        corpora: names under ``<shared>/corpora`` or paths (default
            :data:`DEFAULT_CONTEXT_CORPORA`).
        paraphrase_sources: subset of :data:`PARAPHRASE_SOURCES`.
        phrase_vocabs: ``{corpus name: PhraseVocabulary or its JSON path}``: for those
            corpora, the vocabulary's multi-word phrases replace the spaCy pass.
        context_tokens: WordPiece tokens per context window (mask included).
        drop_binomials: leave out WordNet's Latin binomials (:func:`is_binomial`), which made
            up ~45% of the WordNet triplets (a common name and its Linnaean name).
        labelled_ppdb: add :func:`labelled_ppdb_triplets` of the PPDB sources named in
            ``paraphrase_sources`` (sources ``ppdb:labelled`` / ``ppdb_filtered:labelled``),
            after the ``max_paraphrase`` cap, so the other triplets stay exactly as without.
        benchmark_dir / strict_filter: the test-string filter's data (default
            ``<shared>/data``) and whether a missing benchmark file is an error.
        nlp / tokenizer: a loaded spaCy pipeline / the backbone tokenizer (loaded when None).
    """
    _check_args(paraphrase_sources, max_paraphrase, max_context, max_words, context_tokens)
    t_start = time.perf_counter()
    timings: dict[str, float] = {}
    root = Path(shared_dir) if shared_dir is not None else find_shared(required=True)
    bench = Path(benchmark_dir) if benchmark_dir is not None else root / "data"
    names = list(DEFAULT_CONTEXT_CORPORA if corpora is None else corpora)
    vocabs = load_phrase_vocabs(phrase_vocabs)
    test_strings = collect_test_strings(bench, strict=strict_filter)
    tokenizer = tokenizer if tokenizer is not None else _default_tokenizer()
    pair_filter, neg_filter, ctx_filter = (BenchmarkStringFilter(test_strings) for _ in range(3))
    t = time.perf_counter()
    para, para_stats = _paraphrase_part(
        root / "data", paraphrase_sources, max_paraphrase, max_pairs_per_synset,
        drop_binomials, labelled_ppdb, seed, (pair_filter, neg_filter), tokenizer)
    timings["paraphrases"] = round(time.perf_counter() - t, 1)
    t = time.perf_counter()
    ctx, ctx_stats, corpus_stats = _context_part(
        root, names, max_words, max_context, context_tokens, vocabs, seed, nlp, tokenizer,
        ctx_filter, show_progress, timings)
    timings["contexts"] = round(time.perf_counter() - t, 1)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    write_gz_text(out / PARAPHRASE_FILE, jsonl_lines(para))
    write_gz_text(out / CONTEXT_FILE, jsonl_lines(ctx))
    timings["total"] = round(time.perf_counter() - t_start, 1)
    report: dict[str, Any] = {
        "out_dir": str(out), "paraphrase_triplets": len(para), "context_triplets": len(ctx),
        "paraphrase": para_stats, "context": ctx_stats, "corpora": corpus_stats,
        "test_string_filter": _filter_report(bench, test_strings, pair_filter, neg_filter,
                                             ctx_filter),
        "examples": {"paraphrase": para[:3], "context": ctx[:2]},
        "timings_s": timings,
        "params": {
            "shared_dir": str(root), "max_paraphrase": max_paraphrase,
            "max_context": max_context, "max_words": max_words,
            "corpora": [str(c) for c in names], "paraphrase_sources": list(paraphrase_sources),
            "phrase_vocabs": {k: str(v) for k, v in (phrase_vocabs or {}).items()},
            "context_tokens": context_tokens, "max_pairs_per_synset": max_pairs_per_synset,
            "drop_binomials": drop_binomials, "labelled_ppdb": labelled_ppdb, "seed": seed,
        },
    }
    write_json(out / "report.json", report)
    logger.info("Phrase-BERT data: %d paraphrase and %d context triplets -> %s", len(para),
                len(ctx), out)
    return report
