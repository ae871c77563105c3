"""Three cheap probes of a trained PEARL model on dev splits only, no training.

- ``agreement``: for each averaging coefficient α, the Spearman correlation between the model's
  cosines and the teacher's (``mpnet``) on pairs of dev entity mentions (CoNLL-2003 and BC5CDR
  dev; each mention with its 5 nearest teacher neighbours and 5 random mentions). Asks whether
  a teacher-agreement term in the dev score would choose a different α.
- ``isotropy``: all-but-the-top post-processing (subtract the mean and the top D principal
  directions, fitted on 20,000 WordNet lemmas, then re-normalise), scored by the α-selection
  scorer for each D.
- ``merge``: task arithmetic on MiniLM: the model's fine-tuning delta plus β times another
  MiniLM-based model's delta (``uctopic-minilm`` by default), scored by the α-selection scorer.

    python benchmarks/phrases/pearl_dev_probes.py --probe agreement,isotropy,merge
"""

from __future__ import annotations

import argparse
import gzip
import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from scipy.stats import spearmanr

import phrasekit
from phrasekit.encoders.base import Encoder
from phrasekit.encoders.pearl import PearlEncoder, PearlModel
from phrasekit.eval.dev import CLUSTER_TYPES, DevScorer, dev_mentions
from phrasekit.settings import data_dir
from phrasekit.training.core.averaging import interpolate_weights
from phrasekit.training.pearl.averaging import averaged_initial_weights, recover_finetuned_pearl

ALPHAS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.85, 1.0)
DEV_COLUMNS = ("conll2003_dev", "bc5cdr_dev", "ppdb_dev", "ppdb_filtered_dev", "score")
DEV_HEADER = ("| CoNLL dev | BC5CDR dev | PPDB dev | PPDB-f dev | dev score |\n"
              "|---|---|---|---|---|---|")


def dev_row(label: object, scores: dict[str, float]) -> str:
    """One markdown row of the dev scorer's columns."""
    return f"| {label} | " + " | ".join(f"{scores[c]:.2f}" for c in DEV_COLUMNS) + " |"


def dev_names(data: Path) -> list[str]:
    """Unique CoNLL-2003 and BC5CDR dev mentions (the dev scorer's first 6,000 of each)."""
    names: list[str] = []
    for name, types in CLUSTER_TYPES.items():
        names.extend(dev_mentions(data / name / "dev.json", types)[0][:6000])
    return list(dict.fromkeys(names))


class AgreementProbe:
    """Spearman (×100) of a model's cosines against a teacher's on fixed pairs of ``names``."""

    def __init__(self, names: Sequence[str], teacher: Encoder, k: int = 5, seed: int = 0) -> None:
        self.names = list(names)
        t = teacher.encode(self.names)
        sim = t @ t.T
        np.fill_diagonal(sim, -np.inf)
        rows = np.repeat(np.arange(len(t)), k)
        near = np.argpartition(-sim, k, axis=1)[:, :k].ravel()
        rand = np.random.default_rng(seed).integers(0, len(t), len(rows))
        i, j = np.concatenate([rows, rows]), np.concatenate([near, rand])
        self.i, self.j = i[i != j], j[i != j]
        self.target = np.sum(t[self.i] * t[self.j], axis=1)

    def __call__(self, encoder: Encoder) -> float:
        e = encoder.encode(self.names)
        ours = np.sum(e[self.i] * e[self.j], axis=1)
        return round(100 * float(spearmanr(ours, self.target).statistic), 2)


class AllButTheTop(Encoder):
    """``base`` with the mean and the top ``d`` principal directions of ``fit_texts`` removed."""

    def __init__(self, base: Encoder, fit_texts: Sequence[str], d: int) -> None:
        x = base.encode(list(fit_texts))
        self.base, self.mean = base, x.mean(axis=0)
        self.top = np.linalg.svd(x - self.mean, full_matrices=False)[2][:d]
        self.name, self.dim = f"{base.name}-abtt{d}", base.dim

    def _encode_batch(self, texts: Sequence[str]) -> np.ndarray:
        e = self.base.encode(list(texts)) - self.mean
        return e - (e @ self.top.T) @ self.top


def wordnet_lemmas(data: Path, n: int = 20_000, seed: int = 0) -> list[str]:
    """A seeded sample of ``n`` distinct WordNet lemmas (a public lexicon, no benchmark)."""
    with gzip.open(data / "wordnet" / "synsets.tsv.gz", "rt", encoding="utf-8") as fh:
        next(fh)
        lemmas = [m for line in fh for m in line.split("\t")[3].split("|") if m]
    lemmas = list(dict.fromkeys(lemmas))
    return [lemmas[i] for i in np.random.default_rng(seed).choice(len(lemmas), n, replace=False)]


def merged(model: PearlModel, finetuned: dict[str, torch.Tensor],
           initial: dict[str, torch.Tensor], alpha: float,
           other: dict[str, torch.Tensor], beta: float) -> PearlEncoder:
    """``model`` set to θ₀ + α·Δ(model) + β·Δ(other) on the backbone (α on the projection)."""
    model.load_state_dict(finetuned)
    interpolate_weights(model, initial, alpha)
    with torch.no_grad():
        for name, value in model.state_dict().items():
            if name.startswith("backbone.") and name in other and name in initial:
                value.add_(beta * (other[name].float() - initial[name]))
    return PearlEncoder(model, name=f"a{alpha}-b{beta}")


def main() -> None:
    """Run the chosen probes and print one markdown table per probe."""
    shipped_dir = Path(phrasekit.__file__).parent / "data" / "models" / "pearl-minilm"
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for flag, default in (("--model", str(shipped_dir)), ("--probe", "agreement,isotropy,merge"),
                          ("--teacher", "mpnet"), ("--other", "uctopic-minilm")):
        parser.add_argument(flag, default=default)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    logging.basicConfig(level=logging.WARNING)
    data = data_dir()  # raises, naming PHRASEKIT_SHARED, when the shared data is absent
    probes = args.probe.split(",")
    cfg, model, training = recover_finetuned_pearl(args.model)
    model.eval()
    initial = averaged_initial_weights(cfg)
    finetuned = {k: v.clone() for k, v in model.state_dict().items()}
    scorer = DevScorer(data)
    if "agreement" in probes:
        probe = AgreementProbe(dev_names(data), phrasekit.load(args.teacher))
        print(f"\n| α | agreement with {args.teacher} |\n|---|---:|")
        print(f"| minilm (raw) | {probe(phrasekit.load('minilm'))} |")
        for a in ALPHAS:
            print(f"| {a} | {probe(merged(model, finetuned, initial, a, {}, 0.0))} |", flush=True)
    alpha = float(training["alpha"])
    shipped = merged(model, finetuned, initial, alpha, {}, 0.0)
    if "isotropy" in probes:
        lemmas = wordnet_lemmas(data)
        print(f"\n| D {DEV_HEADER}")
        for d in (None, 0, 1, 2, 4, 8):
            enc = shipped if d is None else AllButTheTop(shipped, lemmas, d)
            print(dev_row("none" if d is None else d, scorer(enc)), flush=True)
    if "merge" in probes:
        other = phrasekit.load(args.other).model.state_dict()
        print(f"\n| β ({args.other}) {DEV_HEADER}")
        for beta in (0.0, 0.25, 0.5, 1.0):
            enc = merged(model, finetuned, initial, alpha, other, beta)
            print(dev_row(beta, scorer(enc)), flush=True)


if __name__ == "__main__":
    main()
