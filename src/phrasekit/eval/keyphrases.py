"""Keyphrase extraction on Inspec (Hulth 2003): precision, recall and F1 at 5 and 10.

Data: ``<corpora>/inspec/documents.jsonl`` (``phrasekit.settings.corpora_dir``): 2,000 titles +
abstracts with the indexers' *uncontrolled* keyphrases (field ``keyphrases``) and Hulth's split
(``split``: train 1,000 / dev 500 / test 500). Choose settings on ``dev`` (or ``train``);
report ``test``.

Protocol (the usual one for Inspec):

- **matching**: a prediction is correct when its :func:`~phrasekit.phrases.keyphrases.phrase_key`
  equals a gold keyphrase's: both lower-cased, split into runs of letters/digits (so
  punctuation-only differences such as "anti-spam" / "anti spam" vanish), each word
  Porter-stemmed (nltk). Exact match on those keys, no partial credit.
- **duplicates**: predictions whose keys repeat an earlier prediction's are removed *before*
  cutting at k (a system gains nothing by listing "neural network" and "neural networks");
  duplicate gold keys count once.
- **absent gold**: gold keyphrases that never occur in the text still count in recall (22% of
  Inspec's do), so no extractive system can reach recall 1.
- **per document**, with ``top = the first k distinct predictions``:
  ``P@k = |top ∩ gold| / |top|`` (``|top|`` < k only when the system returned fewer than k
  distinct phrases; no prediction gives P = 0), ``R@k = |top ∩ gold| / |gold|``,
  ``F1@k`` their harmonic mean (0 when both are 0);
- **averaging**: the mean over documents of the per-document P, R and F1 (macro over
  documents, the common Inspec convention), in percent.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from phrasekit.io import Document, read_corpus
from phrasekit.phrases.keyphrase_candidates import phrase_key
from phrasekit.phrases.keyphrases import KeyphraseExtractor
from phrasekit.settings import SharedDataMissingError, corpora_dir

logger = logging.getLogger(__name__)

INSPEC = "inspec"
SPLITS = ("train", "dev", "test")
DEFAULT_KS = (5, 10)
GOLD_FIELD = "keyphrases"


def inspec_path(corpora: str | Path | None = None) -> Path:
    """``documents.jsonl`` of the shared Inspec corpus (``SharedDataMissingError`` if absent)."""
    root = Path(corpora) if corpora is not None else corpora_dir(required=True)
    assert root is not None
    path = root / INSPEC / "documents.jsonl"
    if not path.is_file():
        raise SharedDataMissingError(f"the Inspec corpus is missing: {path} not found")
    return path


def load_inspec(
    split: str = "test", corpora: str | Path | None = None, limit: int | None = None
) -> list[Document]:
    """Inspec documents of one split, in file order (the first ``limit`` when given); gold
    keyphrases are in ``doc.meta["keyphrases"]``."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be at least 1, got {limit}")
    docs = [d for d in read_corpus(inspec_path(corpora)) if d.meta.get("split") == split]
    return docs[:limit] if limit is not None else docs


def distinct_keys(phrases: Sequence[str]) -> list[str]:
    """The matching keys of ``phrases`` in order, repeats and empty keys removed."""
    if isinstance(phrases, str):
        raise TypeError("expected a list of phrases, not a single string")
    seen: set[str] = set()
    out: list[str] = []
    for p in phrases:
        if not isinstance(p, str):
            raise TypeError(f"phrases must be strings, got {type(p).__name__}: {p!r:.60}")
        key = phrase_key(p)
        if key and key not in seen:
            seen.add(key)
            out.append(key)
    return out


def prf_at_k(predicted: Sequence[str], gold: Sequence[str], k: int) -> tuple[float, float, float]:
    """(P@k, R@k, F1@k) of one document as fractions (protocol in the module docstring)."""
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    gold_keys = set(distinct_keys(gold))
    if not gold_keys:
        raise ValueError("a document needs at least one gold keyphrase to be scored")
    top = distinct_keys(predicted)[:k]
    if not top:
        return 0.0, 0.0, 0.0
    hits = sum(1 for key in top if key in gold_keys)
    p, r = hits / len(top), hits / len(gold_keys)
    f = 2 * p * r / (p + r) if p + r else 0.0
    return p, r, f


def score_keyphrases(
    predictions: Sequence[Sequence[str]],
    golds: Sequence[Sequence[str]],
    ks: Sequence[int] = DEFAULT_KS,
) -> dict[str, float]:
    """Mean over documents of P/R/F1 at every k, in percent: ``{"P@5": .., "R@5": .., "F1@5":
    .., ..., "n_docs": N}``. Documents without gold keyphrases are skipped (and counted in
    ``n_skipped``)."""
    if len(predictions) != len(golds):
        raise ValueError(f"{len(predictions)} prediction lists for {len(golds)} gold lists")
    sums = {f"{m}@{k}": 0.0 for k in ks for m in ("P", "R", "F1")}
    n = skipped = 0
    for pred, gold in zip(predictions, golds, strict=True):
        if not distinct_keys(gold):
            skipped += 1
            continue
        n += 1
        for k in ks:
            p, r, f = prf_at_k(pred, gold, k)
            sums[f"P@{k}"] += p
            sums[f"R@{k}"] += r
            sums[f"F1@{k}"] += f
    if n == 0:
        raise ValueError("no document has gold keyphrases: nothing to score")
    out: dict[str, float] = {name: 100.0 * v / n for name, v in sums.items()}
    out["n_docs"] = n
    out["n_skipped"] = skipped
    return out


def gold_of(docs: Sequence[Document], field: str = GOLD_FIELD) -> list[list[str]]:
    """The gold keyphrase lists of ``docs`` (``doc.meta[field]``, a list of strings)."""
    golds = []
    for d in docs:
        gold = d.meta.get(field)
        if not isinstance(gold, list) or not all(isinstance(g, str) for g in gold):
            raise ValueError(f"document {d.id!r}: field {field!r} missing or not a list of "
                             "strings")
        golds.append(gold)
    return golds


def evaluate_extractor(
    extractor: KeyphraseExtractor,
    docs: Sequence[Document],
    ks: Sequence[int] = DEFAULT_KS,
    gold_field: str = GOLD_FIELD,
    show_progress: bool = False,
) -> dict[str, Any]:
    """Run ``extractor`` on ``docs`` and score it against ``doc.meta[gold_field]``; the metrics
    plus ``seconds`` (wall time of the extraction)."""
    golds = gold_of(docs, gold_field)
    t0 = time.perf_counter()
    ext = extractor.set_params(top_n=max(max(ks), extractor.top_n))
    results = ext.extract(docs, show_progress=show_progress)
    secs = time.perf_counter() - t0
    metrics: dict[str, Any] = score_keyphrases([[p for p, _ in r] for r in results], golds, ks)
    metrics["seconds"] = secs
    return metrics


def evaluate_inspec(
    extractor: KeyphraseExtractor,
    split: str = "dev",
    limit: int | None = None,
    corpora: str | Path | None = None,
    show_progress: bool = False,
) -> dict[str, Any]:
    """P/R/F1@5/@10 of ``extractor`` on an Inspec split (``limit``: its first N documents)."""
    docs = load_inspec(split, corpora=corpora, limit=limit)
    metrics = evaluate_extractor(extractor, docs, show_progress=show_progress)
    metrics["split"] = split
    logger.info("inspec %s: %s", split, json.dumps(metrics))
    return metrics


def format_metrics(metrics: dict[str, Any], ks: Sequence[int] = DEFAULT_KS) -> str:
    """One line: ``P@5 .. R@5 .. F1@5 .. | P@10 ..`` (percent)."""
    parts = [" ".join(f"{m}@{k} {metrics[f'{m}@{k}']:.1f}" for m in ("P", "R", "F1")) for k in ks]
    return " | ".join(parts) + f" ({metrics['n_docs']} docs)"
