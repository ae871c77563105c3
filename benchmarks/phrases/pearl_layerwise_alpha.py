"""Layer-wise weight averaging of a trained PEARL model, scored on dev splits only.

PEARL averages all fine-tuned weights with the initial ones by one coefficient. This script
recovers a saved run's fine-tuned weights and gives the lower half of the backbone (embeddings
and the first ``--split`` layers) and the upper half (the other layers and the projection)
coefficients of their own, over a 2-D grid, scored by the same dev scorer and cliff guard as
``train pearl``. It prints the dev table as markdown and writes it as JSON. It saves no model:
a point that won on dev would first need first-class support (per-group coefficients in the
saved config, so that re-averaging and soups keep working).

    python benchmarks/phrases/pearl_layerwise_alpha.py \
        --model src/phrasekit/data/models/pearl-minilm --out OUT
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path


def parse_grid(text: str) -> tuple[float, ...]:
    """``"0.2,0.4"`` -> (0.2, 0.4)."""
    return tuple(float(a) for a in text.split(",") if a.strip())


def main() -> None:
    """Recover the fine-tuned weights, score the 2-D grid on dev, print and save the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="model folder saved by `train pearl`")
    parser.add_argument("--out", required=True, help="folder for layerwise.json")
    parser.add_argument("--low", default="0.2,0.3,0.4,0.5,0.6,0.8,1.0",
                        help="grid of alpha_low (embeddings + layers below --split)")
    parser.add_argument("--high", default="0.2,0.3,0.4,0.5,0.6,0.8,1.0",
                        help="grid of alpha_high (layers from --split on + projection)")
    parser.add_argument("--split", type=int, default=3, help="first layer of the upper group")
    parser.add_argument("--cliff-guard", type=float, default=0.5)
    parser.add_argument("--shared", default=None, help="shared folder (default: the setting)")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING if args.quiet else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    from phrasekit.encoders.pearl import PearlEncoder
    from phrasekit.eval.dev import DevScorer
    from phrasekit.io import write_json
    from phrasekit.settings import data_dir
    from phrasekit.training.core.averaging import CliffGuard, select_alphas
    from phrasekit.training.pearl.averaging import averaged_initial_weights, recover_finetuned_pearl

    try:
        cfg, model, training = recover_finetuned_pearl(args.model)
    except (FileNotFoundError, ValueError) as exc:
        parser.error(str(exc))
    n_layers = model.backbone.config.num_hidden_layers
    if not 0 < args.split < n_layers:
        parser.error(f"--split must be between 1 and {n_layers - 1}")
    layers = [f"backbone.encoder.layer.{i}." for i in range(n_layers)]
    low = ("backbone.embeddings.", *layers[:args.split])
    high = (*layers[args.split:], "backbone.pooler.", "proj.")
    initial = averaged_initial_weights(cfg)
    uncovered = [k for k in initial if not k.startswith(low + high)]
    if uncovered:
        raise SystemExit(f"tensors in no group: {uncovered[:5]}")
    shared = Path(args.shared) / "data" if args.shared else data_dir()
    scorer = DevScorer(shared)
    guards = [CliffGuard(margin=args.cliff_guard, key=k) for k in ("alpha_low", "alpha_high")]

    def admissible(table: list[dict]) -> list[bool]:
        return [all(flags) for flags in zip(*(g(table) for g in guards), strict=True)]

    model.eval()
    best, table = select_alphas(
        model, initial,
        {"alpha_low": (low, parse_grid(args.low)), "alpha_high": (high, parse_grid(args.high))},
        lambda c: scorer(PearlEncoder(model, name=str(c))), show_progress=not args.quiet,
        admissible=admissible)
    if not table:  # a one-point grid is applied without scoring; score it for the table
        table = [{**best, **scorer(PearlEncoder(model, name=str(best))), "admissible": True}]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "layerwise.json", {"model": args.model, "split": args.split,
                                        "saved_alpha": training["alpha"], "best": best,
                                        "dev": table})
    keys = [k for k in table[0] if k not in ("alpha_low", "alpha_high", "admissible")]
    print("| alpha_low | alpha_high | " + " | ".join(keys) + " | admissible |")
    print("|---" * (len(keys) + 3) + "|")
    for row in table:
        print(f"| {row['alpha_low']} | {row['alpha_high']} | "
              + " | ".join(f"{row[k]:.2f}" for k in keys) + f" | {row['admissible']} |")
    print(f"best: {best}")


if __name__ == "__main__":
    main()
