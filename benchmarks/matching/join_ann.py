"""Fuzzy join at scale: exact vs ANN (faiss HNSW) search for a 100k x 10k join.

Data: real AutoFJ titles (all 50 tables). ``--right`` right rows are sampled with a fixed seed;
the left side holds the gold left title of every sampled right row that has one, filled up to
``--left`` rows with other left rows sampled with the same seed. Every distinct string is
encoded once (timed); then each index kind is built and searched (timed separately), so the
table shows search throughput alone (right rows/s, build included) and end to end (encoding
of all 110k strings included).

Recall of ANN against exact is tie-aware (the left side repeats titles, so equal vectors can
swap ids): an ANN candidate counts as found when its cosine is at least the exact k-th best
cosine (minus 1e-5). recall@1 is then "ANN's top-1 is an exact top-1", recall@10 the mean
fraction of the exact top-10 recovered. ``acc`` is top-1 accuracy against the AutoFJ gold.

Columns: build_s (index build), search_s (10k queries), search_rows_s = right rows / (build +
search), query_only_rows_s = right rows / search, e2e_rows_s = right rows / (encoding + build +
search). The ANN rows share one HNSW graph searched at each efSearch.

Usage: python benchmarks/matching/join_ann.py [--model minilm|string] [--left 100000]
       [--right 10000] [--seed 0] [--ef-search 64 128] [--json out.json] [--cache DIR]
"""

from __future__ import annotations

import csv
import json
import logging
import os
import sys
import time
from pathlib import Path

import numpy as np

import phrasekit
from phrasekit.settings import data_dir
from phrasekit.similarity import build_index
from phrasekit.similarity.index import resolve_kind

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common
from _common import bench_parser


def sample_tables(
    root: Path, n_left: int, n_right: int, seed: int
) -> tuple[list[str], list[str], list[str | None]]:
    """Left titles, right titles and each right row's gold left title (None when unmatched)."""
    lefts: list[str] = []
    rights: list[tuple[str, str | None]] = []
    for table in sorted(p for p in root.iterdir() if p.is_dir()):
        with open(table / "gt.csv", encoding="utf-8", newline="") as fh:
            gold = {r["title_r"]: r["title_l"] for r in csv.DictReader(fh)}
        with open(table / "left.csv", encoding="utf-8", newline="") as fh:
            lefts += [r["title"].strip() for r in csv.DictReader(fh) if r["title"].strip()]
        with open(table / "right.csv", encoding="utf-8", newline="") as fh:
            rights += [(r["title"].strip(), gold.get(r["title"])) for r in csv.DictReader(fh)
                       if r["title"].strip()]
    rng = np.random.default_rng(seed)
    if n_right > len(rights) or n_left > len(lefts):
        raise SystemExit(f"only {len(lefts)} left / {len(rights)} right rows available")
    right = [rights[i] for i in sorted(rng.choice(len(rights), n_right, replace=False))]
    golds = [g for _, g in right if g is not None]
    need = set(golds)
    left = list(dict.fromkeys(g for g in golds))[:n_left]
    rest = [t for t in lefts if t not in need]
    left += [rest[i] for i in rng.choice(len(rest), n_left - len(left), replace=False)]
    order = rng.permutation(len(left))
    return [left[i] for i in order], [r for r, _ in right], [g for _, g in right]


def encode(model: str, texts: list[str], cache: Path | None, key: str) -> tuple[np.ndarray, float]:
    """Embed ``texts`` (each distinct string once); reuse a cached .npy when ``--cache`` is set."""
    path = cache / f"{key}.npy" if cache else None
    if path is not None and path.is_file():
        meta = json.loads(path.with_suffix(".json").read_text())
        return np.load(path, allow_pickle=False), float(meta["encode_s"])
    enc = phrasekit.load(model)
    t0 = time.perf_counter()
    uniq, inverse = np.unique(np.asarray(texts, dtype=object).astype(str), return_inverse=True)
    vecs = enc.encode(uniq.tolist(), show_progress=True)[inverse.reshape(-1)]
    secs = time.perf_counter() - t0
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        np.save(path, vecs)
        path.with_suffix(".json").write_text(json.dumps({"encode_s": secs, "n": len(texts)}))
    return vecs, secs


def tie_aware_recall(exact: np.ndarray, ann: np.ndarray, k: int, eps: float = 1e-5) -> float:
    """Mean fraction of the exact top-k that ANN recovers, counting equal-score swaps as hits."""
    kth = exact[:, k - 1 : k] - eps
    found = (ann[:, :k] >= kth).sum(axis=1)
    return float(np.mean(np.minimum(found, k) / k))


def main() -> None:
    ap = bench_parser(__doc__)
    ap.add_argument("--model", default="minilm", help="phrasekit model (string: quick run)")
    ap.add_argument("--left", type=int, default=100_000)
    ap.add_argument("--right", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("-k", type=int, default=10, help="candidates per right row (recall@k)")
    ap.add_argument("--ef-search", type=int, nargs="+", default=[64, 128],
                    help="HNSW efSearch values to run (one ANN row each)")
    ap.add_argument("--ef-construction", type=int, default=None, help="HNSW efConstruction")
    ap.add_argument("--m", type=int, default=None, help="HNSW M (links per node)")
    ap.add_argument("--json", type=Path, default=None, help="also write the results here")
    ap.add_argument("--cache", type=Path, default=None, help="folder to cache the embeddings")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    import faiss

    load_before = os.getloadavg()
    left, right, gold = sample_tables(data_dir() / "autofj", args.left, args.right, args.seed)
    key = f"autofj_{args.model.replace('/', '_')}_{args.left}x{args.right}_s{args.seed}"
    vecs, enc_s = encode(args.model, left + right, args.cache, key)
    lv, rv = vecs[: len(left)], vecs[len(left) :]
    ann_params = {k: v for k, v in (("ef_construction", args.ef_construction), ("m", args.m))
                  if v is not None}
    auto = resolve_kind("auto", len(left), n_queries=len(right))
    rows = []
    exact_scores: np.ndarray | None = None
    runs: list[tuple[str, int | None]] = [("exact", None)]
    runs += [("ann", ef) for ef in args.ef_search]
    ann_index = None
    build_s = 0.0
    for kind, ef in runs:
        if kind == "exact" or ann_index is None:  # one HNSW graph, searched at each efSearch
            t0 = time.perf_counter()
            index = build_index(lv, kind=kind, show_progress=True, **ann_params)
            build_s = time.perf_counter() - t0
            ann_index = index if kind == "ann" else None
        else:
            index = ann_index
        if ef is not None:
            index.ef_search = ef
        t0 = time.perf_counter()
        scores, ids = index.search(rv, k=args.k, show_progress=True)
        search_s = time.perf_counter() - t0
        if exact_scores is None:
            exact_scores = scores
        top1 = [left[int(j)] for j in ids[:, 0]]
        hits = [t == g for t, g in zip(top1, gold, strict=True) if g is not None]
        rows.append({
            "index": kind if kind == "exact" else f"ann {index.describe().split('(', 1)[1][:-1]}",
            "build_s": round(build_s, 1), "search_s": round(search_s, 2),
            "search_rows_s": round(len(right) / (build_s + search_s), 1),
            "query_only_rows_s": round(len(right) / search_s, 1),
            "e2e_rows_s": round(len(right) / (enc_s + build_s + search_s), 1),
            "recall@1": round(tie_aware_recall(exact_scores, scores, 1), 4),
            f"recall@{args.k}": round(tie_aware_recall(exact_scores, scores, args.k), 4),
            "acc": round(100 * float(np.mean(hits)), 2),
        })
    result = {
        "model": args.model, "left": len(left), "right": len(right), "k": args.k,
        "seed": args.seed, "encode_s": round(enc_s, 1), "encoded_strings": len(vecs),
        "auto_picks": auto,
        "torch_threads": __import__("torch").get_num_threads(),
        "faiss_threads": faiss.omp_get_max_threads(), "cpu_count": os.cpu_count(),
        "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in os.getloadavg()], "rows": rows,
    }
    print(f"\n{args.left} x {args.right} join, model {args.model}, k={args.k}; encoding "
          f"{len(vecs)} strings: {enc_s:.1f} s; index=auto picks {auto}; loadavg "
          f"{result['loadavg_before']} -> {result['loadavg_after']}\n")
    cols = list(rows[0])
    print("| " + " | ".join(cols) + " |")
    print("|" + "|".join("---" for _ in cols) + "|")
    for r in rows:
        print("| " + " | ".join(str(r[c]) for c in cols) + " |")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
