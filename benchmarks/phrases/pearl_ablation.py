"""PEARL ablations in the style of the paper's Table 3, on a short CPU schedule.

Every variant is trained with the same (reduced) number of steps from the same dataset, the
weight-averaging coefficient fixed (no dev selection, so only the removed component differs),
then scored on a benchmark subset. Rows: full recipe, then one component removed at a time.

    python benchmarks/phrases/pearl_ablation.py --data runs/pearl/data --out runs/ablation \
        --steps 300 --tasks bird,turney,ppdb_filtered,conll2003,bc5cdr

Resumable: a variant whose ``model/`` folder exists is not retrained, and finished scores are
kept in ``OUT/ablation.json``.
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from pathlib import Path

VARIANTS: dict[str, dict[str, object]] = {
    "full": {},
    "- char encoder": {"use_char": False},
    "- type classification": {"use_type": False},
    "- supersense head": {"supersense_weight": 0.0},
    "- char augmentation": {"char_aug": False},
    "- token augmentation": {"token_aug": False},
    "- phrase augmentation": {"phrase_aug": False},
    "- hard negatives": {"hard_negatives": 0},
}


def main() -> None:
    """Train each variant, evaluate it, print a markdown table and write JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="dataset from `phrasekit train pearl-data`")
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--alpha", type=float, default=0.5)
    parser.add_argument("--tasks", default="bird,turney,ppdb_filtered,conll2003,bc5cdr")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING if args.quiet else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    from phrasekit.encoders.pearl import PearlEncoder
    from phrasekit.eval.runner import run_benchmark
    from phrasekit.io import write_json
    from phrasekit.training.pearl.config import PearlTrainingConfig
    from phrasekit.training.pearl.task import train_pearl

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    report_path = out / "ablation.json"
    report = json.loads(report_path.read_text()) if report_path.is_file() else {}
    tasks = [t for t in args.tasks.split(",") if t]
    names = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = [n for n in names if n not in VARIANTS]
    if unknown:
        parser.error(f"unknown variants {unknown}; known: {list(VARIANTS)}")
    for name in names:
        if name in report:
            continue
        run_dir = out / name.replace(" ", "").replace("-", "no-", 1)
        t0 = time.perf_counter()
        cfg = PearlTrainingConfig(data_dir=args.data, out_dir=str(run_dir), max_steps=args.steps,
                                  alpha=args.alpha, num_threads=args.threads,
                                  show_progress=not args.quiet, **VARIANTS[name])
        if not (run_dir / "model" / "config.json").is_file():
            train_pearl(cfg)
        train_s = time.perf_counter() - t0
        encoder = PearlEncoder.from_pretrained(run_dir / "model", name=name)
        result = run_benchmark([encoder], tasks=tasks, show_progress=not args.quiet,
                               num_threads=args.threads)
        row = {t: r.main for t, r in result.models[0].tasks.items()}
        report[name] = {"scores": row, "train_s": round(train_s, 1)}
        write_json(report_path, report)
    header = "| variant | " + " | ".join(tasks) + " | mean |"
    lines = [header, "|" + "---|" * (len(tasks) + 2)]
    for name in names:
        scores = report[name]["scores"]
        vals = [float(scores[t]) for t in tasks]
        cells = " | ".join(f"{v:.1f}" for v in vals)
        lines.append(f"| {name} | {cells} | {sum(vals) / len(vals):.1f} |")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
