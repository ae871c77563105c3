"""PEARL training steps per second: precision, threads, distillation, frozen layers, one run.

Every variant trains ``--steps`` steps (after ``--warmup`` untimed ones) of the shipped recipe on
the same dataset, without checkpoints; the table gives steps/s, anchors/s and the ratio of
anchors/s to the first variant (the fp32 loop on one thread that trained the previous model).

    python benchmarks/speed/pearl_step_speed.py --data runs/pearl-data --steps 20
"""

from __future__ import annotations

import argparse
import logging
import tempfile

import torch

from phrasekit.phrases.types import PHRASE_TYPES
from phrasekit.training.core.trainer import Trainer
from phrasekit.training.pearl.config import PearlTrainingConfig, build_model
from phrasekit.training.pearl.task import PearlData, PearlTask

VARIANTS: dict[str, dict[str, object]] = {
    "fp32, 1 thread": {"num_threads": 1},
    "fp32, 2 threads": {"num_threads": 2},
    "bf16 autocast, 2 threads": {"num_threads": 2, "precision": "bf16"},
    "fp32, 2 threads, + distillation (minilm teacher)": {
        "num_threads": 2, "teachers": ("minilm",), "distill_weight": 1.0,
        "distill_phrases": 2000, "distill_names": 500},
    "fp32, 2 threads, batch 128": {"num_threads": 2, "batch_size": 128},
    "GPU (--device cuda), batch 64": {"device": "cuda"},
    "fp32, 2 threads, top 3 of 6 layers trained": {"num_threads": 2, "train_layers": 3},
    "mpnet, rank-16 adapters, fp32, 2 threads": {
        "num_threads": 2, "backbone": "mpnet", "adapter_rank": 16, "lr": 3e-4},
    "mpnet, rank-16 adapters, bf16 autocast, 2 threads": {
        "num_threads": 2, "backbone": "mpnet", "adapter_rank": 16, "lr": 3e-4,
        "precision": "bf16"},
}
#: Variants run when --variants is not given (the GPU one, 5, needs a GPU; 7 and 8 train
#: adapters on the larger mpnet backbone, the ``mpnet`` extra).
CPU_VARIANTS = "0,1,2,3,4,6"


def steps_per_second(cfg: PearlTrainingConfig, data: PearlData, steps: int,
                     warmup: int) -> float:
    """Steps/s of ``steps`` training steps after ``warmup`` untimed ones (from the trainer's
    per-step history: cumulative minutes, 0.01 min resolution)."""
    torch.manual_seed(cfg.seed)
    task = PearlTask(cfg, data, build_model(cfg).to(cfg.device))
    result = Trainer(None, total_steps=warmup + steps, checkpoint_every=1,
                     num_threads=cfg.num_threads, show_progress=False).fit(task)
    minutes = {row["step"]: row["minutes"] for row in result.history}
    return steps / (60 * (minutes[warmup + steps] - minutes[warmup]))


def main() -> None:
    """Time every variant and print a markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="dataset from `phrasekit train pearl-data`")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--variants", default=CPU_VARIANTS,
                        help="comma-separated indices into the variant list (5: a GPU)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    data = PearlData.load(args.data, list(PHRASE_TYPES))
    names = [list(VARIANTS)[int(i)] for i in args.variants.split(",")]
    print("| variant | steps/s | anchors/s | anchors/s vs first row |\n|---|---:|---:|---:|")
    base = None
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            cfg = PearlTrainingConfig(data_dir=args.data, out_dir=tmp, show_progress=False,
                                      **VARIANTS[name])  # type: ignore[arg-type]
            rate = steps_per_second(cfg, data, args.steps, args.warmup)
            anchors = rate * cfg.batch_size
            base = base or anchors
            print(f"| {name} | {rate:.3f} | {anchors:.1f} | {anchors / base:.2f} |", flush=True)


if __name__ == "__main__":
    main()
