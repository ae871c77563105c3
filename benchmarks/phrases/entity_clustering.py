"""Entity clustering of mentions in context (UCTopic Table 1 style) for several encoders.

Datasets: the test splits of CoNLL-2003 (PER/LOC/ORG), BC5CDR (Chemical/Disease) and MIT-Movie
trivia10k13 (Actor/Director/Character_Name), loaded by
:mod:`phrasekit.eval.entity_clustering`. Every row embeds every mention instance; KMeans with
k = number of gold types (``--n-init`` starts, seeds ``--seeds``) is scored by ACC (Hungarian)
and NMI; the table shows means over seeds as fractions, like the paper.

Rows (``--row LABEL=KIND:MODEL``, repeatable; default: the Table 1 rows in ``DEFAULT_ROWS``):

- ``mention:NAME`` -- ``phrasekit.load(NAME).encode`` on the mention strings alone;
- ``span:MODEL`` / ``context:MODEL`` / ``spanmention:MODEL`` -- a
  :class:`~phrasekit.encoders.span.SpanEncoder` over MODEL (``minilm``, a span model folder, a
  transformer folder) in ``span``, ``context`` or ``mention`` mode;
- ``ccl:MODEL`` / ``inbatch:MODEL`` -- a fresh copy of that span encoder fine-tuned on the
  dataset's own mention instances, unsupervised (gold types unused; k = #types clusters), with
  cluster-assisted contrastive learning (UCTopic §3.2) or with in-batch negatives only (the
  paper's "w/ In-B." ablation), then embedded in ``span`` mode. ``--ccl-*`` options set the
  fine-tuning; CCL rows also report ``eq4_acc`` / ``eq4_nmi``, the scores of the Eq. 4 topic
  assignment (nearest re-estimated centroid) instead of a fresh KMeans.

Results are written to ``--out`` (JSON) after every (row, dataset), and rows already there
with the same settings are reused, so an interrupted run resumes (``--force`` recomputes).
``--subsample N`` clusters a fixed seeded sample of N mentions per dataset (all rows see the
same sample).

Usage: python benchmarks/phrases/entity_clustering.py [--out runs/uctopic/entity_clustering.json]
       [--dataset conll2003 ...] [--row "span-minilm (span)=span:minilm" ...] [--seeds 0 1 2 3 4]
       [--n-init 10] [--subsample N] [--threads 1]
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from pathlib import Path
from typing import Any

DEFAULT_ROWS: tuple[str, ...] = (
    "minilm (mention only)=mention:minilm",
    "pearl-minilm (mention only)=mention:pearl-minilm",
    "span-minilm, no training (span)=span:minilm",
    "uctopic-minilm, pre-trained (span)=span:uctopic-minilm",
    "uctopic-minilm + in-batch fine-tuning=inbatch:uctopic-minilm",
    "uctopic-minilm + CCL=ccl:uctopic-minilm",
)
DEFAULT_DATASETS = ("conll2003", "bc5cdr", "mit_movie_trivia10k13")
SHORT = {"conll2003": "CoNLL-2003", "bc5cdr": "BC5CDR", "mit_movie_trivia10k13": "MIT-M trivia"}
KINDS = {"mention": None, "span": "span", "context": "context", "spanmention": "mention",
         "ccl": "span", "inbatch": "span"}
FINETUNE = {"ccl": "cluster", "inbatch": "in-batch"}


def parse_row(spec: str) -> tuple[str, str, str]:
    """``LABEL=KIND:MODEL`` -> (label, kind, model)."""
    label, sep, rest = spec.partition("=")
    kind, sep2, model = rest.partition(":")
    if not (sep and sep2 and label.strip() and model.strip()) or kind not in KINDS:
        raise SystemExit(f"bad --row {spec!r}: expected LABEL=KIND:MODEL with KIND in "
                         f"{sorted(KINDS)}")
    return label.strip(), kind, model.strip()


def embed_function(kind: str, model: str, cache: dict[str, Any]) -> Any:
    """The span-embedding function of a row (encoders loaded once per model)."""
    import phrasekit
    from phrasekit.eval.entity_clustering import mention_embed_fn, span_embed_fn

    if kind == "mention":
        if ("enc", model) not in cache:
            cache["enc", model] = phrasekit.load(model)
        return mention_embed_fn(cache["enc", model])
    if ("span", model) not in cache:
        cache["span", model] = load_span_encoder(model)
    return span_embed_fn(cache["span", model], mode=KINDS[kind], show_progress=True)


def load_span_encoder(model: str) -> Any:
    """A fresh SpanEncoder over ``model`` (a span model folder or a backbone name/folder)."""
    from phrasekit.registry import load_span

    return load_span(model)


def ccl_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The fine-tuning settings of the ``ccl`` / ``inbatch`` rows (part of their result key)."""
    settings = {"steps": args.ccl_steps, "batch_size": args.ccl_batch_size, "lr": args.ccl_lr,
                "top_fraction": args.ccl_top_fraction, "keep_prob": args.ccl_keep_prob,
                "singleton_positives": args.ccl_singletons, "seed": args.ccl_seed}
    # later options join the key only when set, so results computed before them stay valid
    if args.ccl_negatives_per_cluster != 1:
        settings["negatives_per_cluster"] = args.ccl_negatives_per_cluster
    if args.ccl_shared_negatives:
        settings["shared_negatives"] = True
    if args.ccl_temperature != 0.05:
        settings["temperature"] = args.ccl_temperature
    if args.ccl_label_view != "span":
        settings["label_view"] = args.ccl_label_view
    return settings


def finetuned_embeddings(kind: str, model: str, mentions: list[Any], settings: dict[str, Any],
                         eval_every: int = 0) -> tuple[Any, dict[str, Any]]:
    """Fine-tune a fresh span encoder on the instances (no labels), embed them in span mode;
    returns (embeddings, extra scores and timings). ``eval_every`` > 0 also scores KMeans on
    the gold types every that many steps (one seed; the learning curve, for choosing
    ``--ccl-steps`` on a dev split)."""
    import numpy as np

    from phrasekit.eval.entity_clustering import acc, cluster_scores, nmi
    from phrasekit.training.uctopic.ccl import CCLConfig, ccl_finetune

    encoder = load_span_encoder(model)
    items = [m.item() for m in mentions]
    gold_types = [m.label for m in mentions]
    k = len(set(gold_types))
    cfg = CCLConfig(n_clusters=k, negatives=FINETUNE[kind], eval_every=eval_every, **settings)

    def curve(enc: Any, _step: int) -> dict[str, float]:
        sc = cluster_scores(enc.encode_spans(items, mode="span"), gold_types, seeds=(0,))
        return {"acc": sc["acc"], "nmi": sc["nmi"]}

    result = ccl_finetune(encoder, items, cfg, callback=curve if eval_every else None)
    emb = encoder.encode_spans(items, mode="span", show_progress=True)
    extra: dict[str, Any] = {"finetune_s": result.seconds, "ccl": result.summary()}
    extra["ccl"].pop("history", None)
    if not eval_every:
        extra["ccl"].pop("evaluations", None)
    extra["loss_first_last"] = ([result.history[0]["loss"], result.history[-1]["loss"]]
                                if result.history else None)
    if result.topics is not None:
        gold = np.unique([m.label for m in mentions], return_inverse=True)[1].reshape(-1)
        extra.update(eq4_acc=acc(gold, result.topics), eq4_nmi=nmi(gold, result.topics))
    return emb, extra


def format_table(results: dict[str, Any], rows: list[str], datasets: list[str],
                 params: dict[str, Any]) -> str:
    """Markdown table: one row per encoder, ACC and NMI per dataset (mean over seeds)."""
    head = "| model | " + " | ".join(f"{SHORT.get(d, d)} ACC | {SHORT.get(d, d)} NMI"
                                     for d in datasets) + " | encode (+ fine-tune) s |"
    lines = [head, "|---" * (2 * len(datasets) + 2) + "|"]
    for label in rows:
        cells, secs = [], 0.0
        for d in datasets:
            r = results.get(label, {}).get(d)
            if r is None:
                cells += ["–", "–"]
                continue
            cells += [f"{r['acc']:.3f}", f"{r['nmi']:.3f}"]
            secs += r["encode_s"]
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {secs:.0f} |")
    for label in rows:
        eq4 = [f"{SHORT.get(d, d)} ACC {r['eq4_acc']:.3f} NMI {r['eq4_nmi']:.3f}"
               for d in datasets if "eq4_nmi" in (r := results.get(label, {}).get(d) or {})]
        if eq4:
            lines.append(f"\n{label}, Eq. 4 topics (nearest centroid, no KMeans): "
                         + "; ".join(eq4))
    sizes = ", ".join(f"{SHORT.get(d, d)} {params['sizes'].get(d, '?')}" for d in datasets)
    lines += ["", f"Mentions ({params.get('split', 'test')} split): {sizes}; KMeans k = #types, "
              f"n_init={params['n_init']}, "
              f"seeds {params['seeds']} (mean); subsample: {params['subsample'] or 'none'}."]
    return "\n".join(lines) + "\n"


def main() -> None:
    """Run the rows over the datasets, resuming from --out, and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("runs/uctopic/entity_clustering.json"))
    parser.add_argument("--dataset", action="append", dest="datasets",
                        help=f"default: {' '.join(DEFAULT_DATASETS)}")
    parser.add_argument("--row", action="append", dest="rows",
                        help="LABEL=KIND:MODEL (repeat); default: DEFAULT_ROWS")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--n-init", type=int, default=10)
    parser.add_argument("--subsample", type=int, default=0,
                        help="cluster a fixed seeded sample of N mentions per dataset (0: all)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--force", action="store_true", help="recompute rows already in --out")
    parser.add_argument("--data", type=Path, help="benchmark data folder (default: settings)")
    parser.add_argument("--split", default="test",
                        help="split to cluster (test; dev to choose fine-tuning settings)")
    parser.add_argument("--ccl-steps", type=int, default=300)
    parser.add_argument("--ccl-batch-size", type=int, default=16)
    parser.add_argument("--ccl-lr", type=float, default=1e-5)
    parser.add_argument("--ccl-top-fraction", type=float, default=0.2)
    parser.add_argument("--ccl-keep-prob", type=float, default=0.5)
    parser.add_argument("--ccl-eval-every", type=int, default=0,
                        help="also score KMeans (one seed) every N fine-tuning steps")
    parser.add_argument("--ccl-singletons", action="store_true",
                        help="let mentions seen in one sentence be anchors (positive: itself "
                             "with the mention kept)")
    parser.add_argument("--ccl-seed", type=int, default=0, help="fine-tuning seed")
    parser.add_argument("--ccl-negatives-per-cluster", type=int, default=1,
                        help="negatives drawn from every other cluster per anchor")
    parser.add_argument("--ccl-shared-negatives", action="store_true",
                        help="one set of cluster negatives shared by the whole batch")
    parser.add_argument("--ccl-temperature", type=float, default=0.05)
    parser.add_argument("--ccl-label-view", choices=("span", "context", "both"), default="span",
                        help="embeddings KMeans clusters for the CCL pseudo-labels")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")

    import numpy as np
    import torch

    from phrasekit.eval.entity_clustering import evaluate_span_embeddings, load_entity_mentions
    from phrasekit.io import write_json
    from phrasekit.settings import data_dir

    torch.set_num_threads(args.threads)
    data = args.data or data_dir(required=True)
    datasets = args.datasets or list(DEFAULT_DATASETS)
    specs = [parse_row(r) for r in (args.rows or DEFAULT_ROWS)]
    params = {"seeds": args.seeds, "n_init": args.n_init, "subsample": args.subsample,
              "sizes": {}}
    if args.split != "test":
        params["split"] = args.split
    key = json.dumps({k: params[k] for k in ("seeds", "n_init", "subsample", "split")
                      if k in params}, sort_keys=True)
    saved: dict[str, Any] = {}
    if args.out.is_file():
        saved = json.loads(args.out.read_text(encoding="utf-8"))
    results: dict[str, Any] = saved.get("results", {}) if saved.get("key") == key else {}
    mentions = {}
    for d in datasets:
        ms = load_entity_mentions(d, data, split=args.split)
        if args.subsample and len(ms) > args.subsample:
            keep = np.sort(np.random.default_rng(0).choice(len(ms), args.subsample,
                                                           replace=False))
            ms = [ms[i] for i in keep]
        mentions[d] = ms
        params["sizes"][d] = len(ms)
    cache: dict[str, Any] = {}
    settings = ccl_settings(args)
    for label, kind, model in specs:
        spec = f"{kind}:{model}"
        if kind in FINETUNE:
            spec += " " + json.dumps(settings, sort_keys=True)
        for d in datasets:
            done = results.get(label, {}).get(d)
            if done and done.get("spec") == spec and not args.force:
                continue
            t0 = time.time()
            extra: dict[str, Any] = {}
            if kind in FINETUNE:
                emb, extra = finetuned_embeddings(kind, model, mentions[d], settings,
                                                  args.ccl_eval_every)
            else:
                emb = embed_function(kind, model, cache)([m.item() for m in mentions[d]])
            emb = np.asarray(emb, dtype=np.float32)
            t_enc = time.time() - t0
            t1 = time.time()
            scores = evaluate_span_embeddings(lambda _items, emb=emb: emb, mentions[d],
                                              seeds=tuple(args.seeds), n_init=args.n_init)
            scores.update(spec=spec, encode_s=round(t_enc, 1),
                          kmeans_s=round(time.time() - t1, 1), **extra)
            results.setdefault(label, {})[d] = scores
            logging.info("%s / %s: ACC %.3f NMI %.3f (encode %.0fs)", label, d, scores["acc"],
                         scores["nmi"], t_enc)
            write_json(args.out, {"key": key, "params": params, "results": results})
    table = format_table(results, [s[0] for s in specs], datasets, params)
    write_json(args.out, {"key": key, "params": params, "results": results, "table": table})
    print(table)


if __name__ == "__main__":
    main()
