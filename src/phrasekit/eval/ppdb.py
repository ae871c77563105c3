"""PPDB and PPDB-filtered phrase paraphrase classification with a small MLP probe.

Protocol (Phrase-BERT ``eval_ppdb_paws.py`` / PEARL ``eval.py``): ``ppdb/ppdb.json`` (23,364
items ``[p1, p2, "pos"|"neg", score]``) or ``ppdb_filtered/ppdb_filtered.json`` (15,532 items
``[p1, p2, label]``). Splits in file order, no shuffling: train = items[0:ceil(.70 n)],
dev = items[ceil(.70 n):ceil(.85 n)], test = the rest. Frozen embeddings u, v of the two
phrases; the probe is Linear(2d -> 256) - ReLU - Linear(256 -> 1) on concat(u, v), trained
with BCE-with-logits, Adam (lr 1e-3), batch 128, shuffled each epoch by a generator seeded
with the run's seed, for up to 30 epochs with early stopping (patience 5) on dev accuracy.
Reported: the test accuracy of the best-dev epoch (first best on ties), mean over seeds
0, 1, 2 (``acc``), with the sample std (``acc_std``) and the mean best dev accuracy
(``dev_acc``), all in percent. Quick mode: the first 500 train / 100 dev / 100 test items of
the same splits, 5 epochs, seed 0.

Memory: only the embeddings of the distinct phrases are kept; the (batch, 2d) inputs are
gathered per batch, so the 4096-d ``string`` encoder needs ~n_unique x 16 KiB, not n x 32 KiB.
Speed: the fused Adam kernel matters for d = 4096 (the 8192 x 256 first layer makes the
unfused optimizer step cost more than the forward and backward passes together).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch
from torch import nn

from phrasekit.encoders.base import Encoder
from phrasekit.eval.base import Task, encode_unique, percent, std_percent

logger = logging.getLogger(__name__)

FILES = {"ppdb": "ppdb/ppdb.json", "ppdb_filtered": "ppdb_filtered/ppdb_filtered.json"}
LABELS = {"pos": 1.0, "neg": 0.0}


@dataclass(frozen=True)
class ProbeConfig:
    """Hyper-parameters of the MLP probe (Phrase-BERT / PEARL defaults)."""

    hidden: int = 256
    lr: float = 1e-3
    batch_size: int = 128
    max_epochs: int = 30
    patience: int = 5
    seeds: tuple[int, ...] = (0, 1, 2)
    eval_chunk: int = 4096


FULL_PROBE = ProbeConfig()
QUICK_PROBE = ProbeConfig(max_epochs=5, patience=5, seeds=(0,))
QUICK_SIZES = (500, 100, 100)


@dataclass(frozen=True)
class ProbeResult:
    """Outcome of one seed: best dev accuracy, test accuracy at that epoch, the epoch (1-based)."""

    dev_acc: float
    test_acc: float
    best_epoch: int


def split_bounds(n: int) -> tuple[int, int]:
    """(ceil(0.70 n), ceil(0.85 n)) computed exactly in integers."""
    return (7 * n + 9) // 10, (17 * n + 19) // 20


def load_pairs(path: Path) -> list[tuple[str, str, float]]:
    """(phrase1, phrase2, label 1/0) in file order; raises ValueError on a bad item."""
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a JSON array of [phrase1, phrase2, label, ...]")
    out: list[tuple[str, str, float]] = []
    for i, item in enumerate(data):
        if not isinstance(item, list) or len(item) < 3 or item[2] not in LABELS:
            raise ValueError(
                f"{path}: item {i} is not [phrase1, phrase2, 'pos'|'neg', ...]: {item!r:.80}"
            )
        out.append((str(item[0]), str(item[1]), LABELS[item[2]]))
    return out


class PairProbe(nn.Module):
    """Linear(2d -> hidden) - ReLU - Linear(hidden -> 1) over concat(u, v); returns logits."""

    def __init__(self, dim: int, hidden: int = 256) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2 * dim, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits of shape (batch,)."""
        return self.net(x).squeeze(-1)


def _features(emb: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.cat([emb[a], emb[b]], dim=1)


def _accuracy(model: PairProbe, emb: torch.Tensor, a: torch.Tensor, b: torch.Tensor,
              y: torch.Tensor, chunk: int) -> float:
    correct = 0
    with torch.no_grad():
        for s in range(0, len(y), chunk):
            logits = model(_features(emb, a[s : s + chunk], b[s : s + chunk]))
            correct += int(((logits > 0).float() == y[s : s + chunk]).sum())
    return correct / max(len(y), 1)


def train_probe(
    emb: np.ndarray,
    pair_idx: np.ndarray,
    labels: np.ndarray,
    splits: tuple[slice, slice, slice],
    cfg: ProbeConfig,
    seed: int,
) -> ProbeResult:
    """Train one seeded probe on the train split, early-stop on dev, return dev/test accuracy.

    ``emb`` holds one row per distinct phrase, ``pair_idx`` (n, 2) the rows of each pair.
    The global torch RNG is left untouched (``fork_rng``).
    """
    E = torch.from_numpy(np.ascontiguousarray(emb, dtype=np.float32))
    A = torch.from_numpy(pair_idx[:, 0])
    B = torch.from_numpy(pair_idx[:, 1])
    Y = torch.from_numpy(labels.astype(np.float32))
    tr, dv, te = (torch.arange(len(Y))[s] for s in splits)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = PairProbe(E.shape[1], cfg.hidden)
        gen = torch.Generator().manual_seed(seed)
        opt = torch.optim.Adam(model.parameters(), lr=cfg.lr, fused=True)
        loss_fn = nn.BCEWithLogitsLoss()
        best = ProbeResult(-1.0, float("nan"), 0)
        stale = 0
        for epoch in range(1, cfg.max_epochs + 1):
            model.train()
            order = tr[torch.randperm(len(tr), generator=gen)]
            for s in range(0, len(order), cfg.batch_size):
                idx = order[s : s + cfg.batch_size]
                opt.zero_grad(set_to_none=True)
                loss = loss_fn(model(_features(E, A[idx], B[idx])), Y[idx])
                loss.backward()
                opt.step()
            model.eval()
            dev_acc = _accuracy(model, E, A[dv], B[dv], Y[dv], cfg.eval_chunk)
            if dev_acc > best.dev_acc:
                test_acc = _accuracy(model, E, A[te], B[te], Y[te], cfg.eval_chunk)
                best = ProbeResult(dev_acc, test_acc, epoch)
                stale = 0
            else:
                stale += 1
                if stale >= cfg.patience:
                    break
    logger.debug("probe seed %d: best epoch %d dev %.4f test %.4f", seed, best.best_epoch,
                 best.dev_acc, best.test_acc)
    return best


class PPDBTask(Task):
    """MLP-probe test accuracy on PPDB or PPDB-filtered (mean of seeds 0, 1, 2)."""

    main_metric = "acc"

    def __init__(self, name: str = "ppdb", config: ProbeConfig = FULL_PROBE) -> None:
        if name not in FILES:
            raise ValueError(f"unknown PPDB variant {name!r}; choose one of {sorted(FILES)}")
        self.name = name
        self.required = (FILES[name],)
        self.config = config
        self.description = f"{name}: MLP probe on concat(u, v), test accuracy"

    def evaluate(self, encoder: Encoder, data_dir: Path, quick: bool = False) -> dict[str, float]:
        """Embed the distinct phrases once, then train/evaluate the probe for every seed."""
        pairs = load_pairs(Path(data_dir) / FILES[self.name])
        n = len(pairs)
        b1, b2 = split_bounds(n)
        cfg = self.config
        if quick:
            n_tr, n_dv, n_te = QUICK_SIZES
            keep = [*range(0, min(b1, n_tr)), *range(b1, min(b2, b1 + n_dv)),
                    *range(b2, min(n, b2 + n_te))]
            sizes = (min(b1, n_tr), min(b2, b1 + n_dv) - b1, min(n, b2 + n_te) - b2)
            pairs = [pairs[i] for i in keep]
            cfg = replace(cfg, max_epochs=QUICK_PROBE.max_epochs, seeds=QUICK_PROBE.seeds)
        else:
            sizes = (b1, b2 - b1, n - b2)
        c1, c2 = sizes[0], sizes[0] + sizes[1]
        splits = (slice(0, c1), slice(c1, c2), slice(c2, len(pairs)))
        if min(sizes) == 0:
            raise ValueError(f"{self.name}: a split is empty (train/dev/test sizes {sizes})")
        m = len(pairs)
        emb, inverse = encode_unique(encoder, [p[0] for p in pairs] + [p[1] for p in pairs])
        pair_idx = np.stack([inverse[:m], inverse[m:]], axis=1)
        labels = np.array([p[2] for p in pairs], dtype=np.float32)
        results = [train_probe(emb, pair_idx, labels, splits, cfg, seed) for seed in cfg.seeds]
        test = np.array([r.test_acc for r in results])
        dev = np.array([r.dev_acc for r in results])
        logger.info("%s: sizes %s, best epochs %s, test accs %s", self.name, sizes,
                    [r.best_epoch for r in results], np.round(test * 100, 2).tolist())
        return {
            "acc": percent(test.mean()),
            "acc_std": std_percent(test),
            "dev_acc": percent(dev.mean()),
        }
