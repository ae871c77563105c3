"""PEARL's entity-relatedness dev data: named entities a corpus mentions together.

spaCy's named-entity recogniser reads every document of a corpus (e.g.
``../shared/corpora/bbc_news``); names are normalised (lower case, no leading "the", no
possessive) and any name equal to a benchmark string is dropped (counted). Pairs come from
:class:`phrasekit.eval.relatedness.CooccurrencePairs` and are written, split half and half
into dev and test by a hash, to ``related.tsv.gz`` beside the alias file, with the counts in
``related_report.json``.
"""

from __future__ import annotations

import logging
import os
import re
from collections import Counter
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from phrasekit.eval.relatedness import (
    RELATED_COLUMNS,
    RELATED_FILE,
    CooccurrencePairs,
    split_of,
)
from phrasekit.io import read_corpus, write_json
from phrasekit.phrases.extract import load_spacy
from phrasekit.training.data.leakage import BenchmarkStringFilter, collect_test_strings
from phrasekit.training.data.sources import write_gz_text

logger = logging.getLogger(__name__)

RELATED_REPORT = "related_report.json"
#: spaCy entity labels that name an entity (not dates, numbers, amounts).
ENTITY_LABELS = frozenset({"PERSON", "ORG", "GPE", "NORP", "FAC", "LOC", "PRODUCT", "EVENT",
                           "WORK_OF_ART", "LAW", "LANGUAGE"})
_POSSESSIVE = re.compile(r"\s*['’]s?$")


def entity_key(text: str) -> str:
    """A name as compared across documents: lower case, one space, no leading "the", no
    trailing possessive ("the Bank of England's" → "bank of england")."""
    key = " ".join(text.lower().split())
    key = key.removeprefix("the ")
    return _POSSESSIVE.sub("", key).strip()


def corpus_entities(texts: list[str], show_progress: bool = True) -> list[list[str]]:
    """Each document's distinct entity names (:func:`entity_key`, at least three characters)."""
    nlp = load_spacy(exclude=("lemmatizer",))
    out: list[list[str]] = []
    docs = nlp.pipe(texts, batch_size=32)
    for doc in tqdm(docs, total=len(texts), desc="entities", disable=not show_progress):
        keys = {entity_key(e.text) for e in doc.ents if e.label_ in ENTITY_LABELS}
        out.append(sorted(k for k in keys if len(k) >= 3))
    return out


def build_related_dataset(corpus: str | Path, out_dir: str | Path, benchmark_dir: str | Path,
                          show_progress: bool = True) -> dict[str, Any]:
    """Write ``out_dir/related.tsv.gz`` and ``out_dir/related_report.json`` (atomically) from
    the entities of ``corpus``; returns the report."""
    texts = [d.text for d in read_corpus(corpus)]
    if not texts:
        raise ValueError(f"{corpus}: no document")
    filt = BenchmarkStringFilter(collect_test_strings(benchmark_dir, strict=True))
    docs = [[e for e in doc if filt.keep_phrase(e)]
            for doc in corpus_entities(texts, show_progress)]
    pairs = CooccurrencePairs()
    rows = pairs(docs)
    if not any(label for *_, label in rows):
        raise ValueError(f"{corpus}: no pair of entities co-occurs often enough")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    split_rows = [(a, b, y, split_of(a, b)) for a, b, y in rows]
    header = "\t".join(RELATED_COLUMNS) + "\n"
    write_gz_text(out / RELATED_FILE,
                  [header, *(f"{a}\t{b}\t{y}\t{s}\n" for a, b, y, s in split_rows)])
    per_split = Counter(f"{s}_{'related' if y else 'random'}" for _, _, y, s in split_rows)
    report = {**pairs.counts, "pairs_per_split": dict(sorted(per_split.items())),
              "benchmark_strings_dropped": filt.removed_phrases_unique,
              "source": {"corpus": Path(corpus).name, "benchmark_dir": str(benchmark_dir)}}
    write_json(out / RELATED_REPORT, report)
    for name in (RELATED_FILE, RELATED_REPORT):
        os.chmod(out / name, 0o644)
    logger.info("related pairs: %s -> %s", report["pairs_per_split"], out / RELATED_FILE)
    return report
