"""Sentence-pair tasks for trained pair models (SubTST, its SBERT baseline): data and metrics.

``msrp``: Microsoft Research Paraphrase Corpus, binary label (1 = paraphrase); the official
train file (4,076 pairs) and test file (1,725 pairs). MSRP has no dev split, so model selection
uses a fixed stratified 10% of train (:func:`split_dev`, seed 0, the same for every model).
``stsb``: STS Benchmark, gold score 0-5; train 5,749 / dev 1,500 / test 1,379.
Metrics: accuracy and F1 of the positive class (MSRP), Spearman / Pearson (STS-B), in percent.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from phrasekit.eval.base import numbers, percent, read_tsv, require_path

PAIR_TASKS = ("msrp", "stsb")
MSRP_FILES = {"train": "msrp/msr_paraphrase_train.txt", "test": "msrp/msr_paraphrase_test.txt"}
STSB_FILES = {"train": "stsb/sts-train.csv", "dev": "stsb/sts-dev.csv", "test": "stsb/sts-test.csv"}
DEV_FRACTION = 0.1
DEV_SEED = 0


@dataclass(frozen=True)
class PairExample:
    """One sentence pair with its label (class index) or graded score."""

    a: str
    b: str
    label: float


def check_task(task: str) -> str:
    """Return ``task`` or raise ValueError naming the known pair tasks."""
    if task not in PAIR_TASKS:
        raise ValueError(f"unknown pair task {task!r}; known: {', '.join(PAIR_TASKS)}")
    return task


def task_kind(task: str) -> str:
    """``classification`` (MSRP) or ``regression`` (STS-B)."""
    return "classification" if check_task(task) == "msrp" else "regression"


def read_msrp(path: str | Path) -> list[PairExample]:
    """Pairs of an MSRP file: ``quality, id1, id2, string1, string2`` (no header)."""
    out = []
    for i, r in enumerate(read_tsv(Path(path), min_fields=5), start=1):
        if r[0] not in ("0", "1"):
            raise ValueError(f"{path}: row {i}: label {r[0]!r} is not 0 or 1")
        if not r[3].strip() or not r[4].strip():
            raise ValueError(f"{path}: row {i}: empty sentence")
        out.append(PairExample(r[3], r[4], float(r[0])))
    return out


def read_stsb(path: str | Path) -> list[PairExample]:
    """Pairs of an STS-B split file (first 7 fields: ..., score, sentence1, sentence2)."""
    rows = read_tsv(Path(path), min_fields=7, texts=(5, 6))
    return [PairExample(r[5], r[6], score)
            for r, score in zip(rows, numbers(rows, 4, Path(path)), strict=True)]


def split_dev(examples: list[PairExample], fraction: float = DEV_FRACTION, seed: int = DEV_SEED
              ) -> tuple[list[PairExample], list[PairExample]]:
    """A stratified (train, dev) split by label, fixed by ``seed``."""
    rng = random.Random(seed)
    train, dev = [], []
    for label in sorted({e.label for e in examples}):
        group = [e for e in examples if e.label == label]
        rng.shuffle(group)
        n_dev = round(len(group) * fraction)
        dev.extend(group[:n_dev])
        train.extend(group[n_dev:])
    rng.shuffle(train)
    return train, dev


def load_pair_task(task: str, data_dir: str | Path) -> dict[str, list[PairExample]]:
    """``{"train", "dev", "test"}`` example lists of a pair task from the benchmark folder."""
    check_task(task)
    data_dir = Path(data_dir)
    if task == "msrp":
        full = read_msrp(require_path(data_dir, MSRP_FILES["train"]))
        train, dev = split_dev(full)
        return {"train": train, "dev": dev,
                "test": read_msrp(require_path(data_dir, MSRP_FILES["test"]))}
    return {split: read_stsb(require_path(data_dir, rel)) for split, rel in STSB_FILES.items()}


def pair_metrics(task: str, gold: np.ndarray, predicted: np.ndarray) -> dict[str, float]:
    """Accuracy / F1 (MSRP: predicted labels) or Spearman / Pearson (STS-B: scores), percent."""
    gold = np.asarray(gold, dtype=np.float64)
    predicted = np.asarray(predicted, dtype=np.float64)
    if gold.shape != predicted.shape or gold.ndim != 1 or len(gold) == 0:
        raise ValueError(f"gold and predicted must be equal-length vectors, got "
                         f"{gold.shape} and {predicted.shape}")
    if task_kind(task) == "classification":
        from sklearn.metrics import accuracy_score, f1_score

        return {"acc": percent(accuracy_score(gold, predicted)),
                "f1": percent(f1_score(gold, predicted, pos_label=1, zero_division=0))}
    from scipy.stats import pearsonr, spearmanr

    return {"spearman": percent(spearmanr(predicted, gold).statistic),
            "pearson": percent(pearsonr(predicted, gold).statistic)}


MAIN_METRIC = {"msrp": "f1", "stsb": "spearman"}
"""The metric that selects the best epoch on dev and that the tables lead with."""
