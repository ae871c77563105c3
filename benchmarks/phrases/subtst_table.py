"""SubTST vs its SBERT-style baseline on MSRP and STS-B, mean ± std over seeds (paper Table 3).

Every configuration shares the frozen backbone features of a task (computed once, cached) and,
per seed, one sub-word LDA fitted on the task's training sentences; the variants differ only in
topic features (none / frozen / trainable) and pooling (mean / max). The epoch is chosen on dev
(MSRP: a fixed stratified 10% of train; STS-B: the official dev split); test is scored once.

    python benchmarks/phrases/subtst_table.py --out runs/subtst --tasks msrp,stsb --seeds 0,1,2

Resumable: finished runs are kept in ``OUT/runs.json`` and skipped; the seed-0 model of every
configuration is saved under ``OUT/models/``.
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from pathlib import Path

import numpy as np

VARIANTS = [  # (n_topics > 0, topic_trainable, pooling)
    (False, False, "mean"),
    (False, False, "max"),
    (True, False, "mean"),
    (True, False, "max"),
    (True, True, "mean"),
    (True, True, "max"),
]


def _fmt(values: list[float]) -> str:
    if not values:
        return "–"
    sd = float(np.std(values, ddof=1)) if len(values) > 1 else 0.0
    return f"{np.mean(values):.2f} ± {sd:.2f}"


def table(runs: dict[str, dict], tasks: list[str]) -> str:
    """Markdown table: rows = variants, columns = MSRP acc/F1, STS-B Spearman, minutes/config."""
    names = []
    for r in runs.values():
        if r["variant"] not in names:
            names.append(r["variant"])
    head = "| model | " + " | ".join(
        {"msrp": "MSRP acc | MSRP F1 | MSRP s/seed (LDA + train)", "stsb": "STS-B Spearman | "
         "STS-B s/seed (LDA + train)"}[t] for t in tasks) + " | seeds |"
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for name in names:
        cells, seeds = [], set()
        for t in tasks:
            rs = [r for r in runs.values() if r["variant"] == name and r["task"] == t]
            seeds |= {r["seed"] for r in rs}
            secs = _fmt([r["seconds"]["train"] + r["seconds"].get("lda", 0.0) for r in rs])
            if t == "msrp":
                cells += [_fmt([r["test"]["acc"] for r in rs]), _fmt([r["test"]["f1"] for r in rs]),
                          secs]
            else:
                cells += [_fmt([r["test"]["spearman"] for r in rs]), secs]
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {len(seeds)} |")
    return "\n".join(lines)


def main() -> None:
    """Run the grid, print the table, write OUT/runs.json and OUT/table.md."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--tasks", default="msrp,stsb")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--topics", type=int, default=80)
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--trainable-layers", type=int, default=0)
    parser.add_argument("--cache-dir", default=None,
                        help="frozen-feature cache (default OUT/cache)")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--variants", default=None,
                        help="comma-separated subset of the variant names (default: all six)")
    parser.add_argument("--lda-corpus", default=None,
                        help="extra unlabelled corpus (JSONL/text) added to the LDA's documents")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    from phrasekit.encoders.subtst import SubTSTConfig
    from phrasekit.eval.pairs import load_pair_task, task_kind
    from phrasekit.io import write_json, write_text
    from phrasekit.settings import data_dir
    from phrasekit.training.subtst.task import (
        SubTSTTrainingConfig,
        fit_lda,
        prepare_features,
        train_subtst,
    )

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    runs_path = out / "runs.json"
    runs: dict[str, dict] = json.loads(runs_path.read_text()) if runs_path.is_file() else {}
    tasks = args.tasks.split(",")
    seeds = [int(s) for s in args.seeds.split(",")]
    root = Path(args.data_dir) if args.data_dir else data_dir()
    feature_seconds: dict[str, float] = {}
    wanted = set(args.variants.split(",")) if args.variants else None
    extra_docs: list[str] = []
    if args.lda_corpus:
        from phrasekit.io import read_corpus

        extra_docs = [d.text for d in read_corpus(args.lda_corpus)]
    for task in tasks:
        data = load_pair_task(task, root)
        kind = task_kind(task)
        base = SubTSTConfig(kind=kind, trainable_layers=args.trainable_layers)
        features, secs = prepare_features(task, data, base, args.cache_dir or out / "cache")
        feature_seconds[task] = round(secs, 1)
        for seed in seeds:
            lda, lda_s = None, 0.0
            for with_topics, trainable, pooling in VARIANTS:
                cfg = SubTSTConfig(kind=kind, n_topics=args.topics if with_topics else 0,
                                   topic_trainable=trainable, pooling=pooling,
                                   trainable_layers=args.trainable_layers)
                key = f"{task}|{cfg.variant}|{seed}"
                if key in runs or (wanted and cfg.variant not in wanted):
                    continue
                if with_topics and lda is None:
                    t0 = time.perf_counter()
                    train_texts = list(dict.fromkeys(t for e in data["train"] for t in (e.a, e.b)))
                    lda = fit_lda(train_texts + extra_docs, features, args.topics, seed, 10)
                    lda_s = time.perf_counter() - t0
                model, report = train_subtst(
                    task, data, cfg, SubTSTTrainingConfig(epochs=args.epochs, seed=seed),
                    features=features, lda=lda if with_topics else None)
                # the LDA is fitted once per seed and shared, but each topic configuration
                # would need it on its own: count it in every one
                report["seconds"]["lda"] = round(lda_s, 2) if with_topics else 0.0
                runs[key] = report
                write_json(runs_path, runs)
                if seed == seeds[0]:
                    name = f"{task}-{cfg.variant.replace(' ', '_')}"
                    model.save_pretrained(out / "models" / name)
                logging.info("%s: test %s (best epoch %d, %.0f s)", key, report["test"],
                             report["best_epoch"], report["seconds"]["train"])
    text = table(runs, tasks)
    text += "\n\nFeature extraction (frozen backbone, once per task, seconds): " + json.dumps(
        feature_seconds)
    write_text(out / "table.md", text + "\n")
    print(text)


if __name__ == "__main__":
    main()
