"""The transformer's pass over long texts with glibc's own allocator settings and with
phrasekit's (``phrasekit.encoders.allocator``): wall seconds, kernel CPU seconds, page faults.

Each run is a fresh process that loads MiniLM at ``--precision`` and encodes the first
``--n-docs`` articles of a corpus (first 256 tokens each, as keyphrases' document pass);
``PHRASEKIT_MALLOC=default`` gives glibc's settings. Rounds alternate the two; medians.

    python benchmarks/speed/allocator_speed.py --corpus bbc_news --n-docs 400 --rounds 3
"""

from __future__ import annotations

import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common
from _common import bench_parser, child_json, corpus_source, cpu_name

CHILD = r"""
import json, os, resource, sys, time
source, n_docs, precision = sys.argv[1], int(sys.argv[2]), sys.argv[3]
import torch
from phrasekit.io import read_corpus
from phrasekit.registry import load
texts = [d.text for d in read_corpus(source)[:n_docs]]
enc = load("minilm@" + precision)
enc.encode(texts[:8])
faults, cpu, t = resource.getrusage(resource.RUSAGE_SELF).ru_minflt, os.times(), time.perf_counter()
enc.encode(texts)
after = os.times()
print(json.dumps({"wall": time.perf_counter() - t, "sys": after.system - cpu.system,
                  "user": after.user - cpu.user,
                  "faults": resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults}))
"""

SETTINGS = {"glibc": "default", "phrasekit": ""}


def run(setting: str, source: str, n_docs: int, precision: str) -> dict:
    env = {**os.environ, "PHRASEKIT_MALLOC": SETTINGS[setting]}
    return child_json(CHILD, [source, str(n_docs), precision], env)


def main() -> None:
    ap = bench_parser(__doc__, corpus="bbc_news")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--precision", default="auto")
    args = ap.parse_args()
    source, n_docs = str(corpus_source(args.corpus)), args.n_docs or 400
    results: dict[str, list[dict]] = {s: [] for s in SETTINGS}
    for _ in range(args.rounds):
        for setting in SETTINGS:
            results[setting].append(run(setting, source, n_docs, args.precision))
    print(f"CPU: {cpu_name()}; {n_docs} {args.corpus} documents, minilm@{args.precision}, "
          f"median of {args.rounds} rounds\n")
    print("| allocator | encode s | rounds s | kernel CPU s | user CPU s | page faults | "
          "x glibc |")
    print("|---|---:|---|---:|---:|---:|---:|")
    base = statistics.median(r["wall"] for r in results["glibc"])
    for setting, rows in results.items():
        wall = statistics.median(r["wall"] for r in rows)
        med = {k: statistics.median(r[k] for r in rows) for k in ("sys", "user", "faults")}
        rounds = "/".join(f"{r['wall']:.2f}" for r in rows)
        print(f"| {setting} | {wall:.2f} | {rounds} | {med['sys']:.2f} | {med['user']:.2f} | "
              f"{med['faults']:,.0f} | {base / wall:.2f} |")


if __name__ == "__main__":
    main()
