"""Ray engine scaling: phrasekit's corpus stages on the local engine against Ray on one and on
two nodes of a real cluster started on this machine (``phrasekit.pipeline.cluster``).

Configurations, all cold processes timed from start to exit (CLI start, Ray connection,
actor start and model loading included):

- ``local``: ``--engine local`` (spaCy with ``--workers`` processes where the command has it;
  torch's own threads);
- ``ray1``: one Ray node with all ``--cpus`` CPUs, the command run with ``--engine ray
  --address``;
- ``ray2``: two Ray nodes sharing the ``--cpus`` CPUs (``ray start --head`` plus ``ray start
  --address``, as on two machines).

Stages:

- ``phrases``: ``phrasekit phrases`` (spaCy noun chunks and entities, parser and NER), the
  compute-bound stage;
- ``encode``: ``phrasekit encode`` of one line per document (whitespace folded, the first
  ``--encode-chars`` characters) with ``--model``, where the engine's own overhead shows;
- ``mentions``: ``phrasekit mentions`` with ``--model`` and ``--doc-vectors``: the streaming
  job (spaCy extraction, phrase and document vectors, Parquet output), whose driver holds
  only the shards in flight;
- ``topics``: ``phrasekit topics`` end to end (default method) with ``--model`` as the document
  encoder: reading, the phrase sample, encoding, choosing K, clustering, naming, writing.

For each run: wall seconds, documents per second, throughput relative to ``local`` on the same
input (the overhead ratio: 1.0 = as fast), the peak resident memory of the driver process
alone (``VmHWM``, polled) and of the largest process of its tree (``wait4``: the driver or a
local worker process it started; the Ray cluster's processes are not its children).
Results: ``OUT/ray_scaling.json`` and ``OUT/ray_scaling.md``.

Usage::

    python benchmarks/speed/ray_scaling.py --corpus 20newsgroups --n-docs 1000 --replicate 1,4 \\
        --stages phrases
    python benchmarks/speed/ray_scaling.py --corpus 20newsgroups --replicate 10 --stages encode
    python benchmarks/speed/ray_scaling.py --corpus 20newsgroups --replicate 1,10 --stages topics
    python benchmarks/speed/ray_scaling.py --corpus 20newsgroups --n-docs 1000 --replicate 1,10 \
        --stages mentions --configs local,ray1
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common
from _common import bench_parser, corpus_source
from corpus_throughput import stages, timed, write_corpus

from phrasekit.pipeline.cluster import LocalCluster

CONFIGS = ("local", "ray1", "ray2")
STAGES = ("phrases", "encode", "mentions", "topics")


def encode_input(corpus: Path, out: Path, chars: int) -> Path:
    """One line per document: its text with whitespace folded, cut to ``chars`` characters."""
    from phrasekit.io import read_corpus

    with open(out, "w", encoding="utf-8") as fh:
        for d in read_corpus(corpus):
            fh.write((" ".join(d.text.split())[:chars] or "empty") + "\n")
    return out


@contextlib.contextmanager
def engine_args(config: str, cpus: int) -> Iterator[list[str]]:
    """The command-line options of ``config`` (a cluster started for the Ray ones)."""
    if config == "local":
        yield ["--engine", "local"]
        return
    nodes = (cpus,) if config == "ray1" else (cpus - cpus // 2, cpus // 2)
    with LocalCluster(cpus=nodes) as cluster:
        yield ["--engine", "ray", "--address", cluster.address]


def stage_command(stage: str, data: Path, work: Path, model: str) -> list[str]:
    """The phrasekit command of one stage run."""
    base = [sys.executable, "-m", "phrasekit"]
    if stage == "phrases":
        return [*base, "phrases", str(data), "--out", str(work / "phrases.json.gz"), "-q"]
    if stage == "mentions":
        return [*base, "mentions", str(data), "--out", str(work / "mentions"), "-m", model,
                "--doc-vectors", "-q"]
    if stage == "topics":
        return [*base, "topics", str(data), "--out", str(work / "topics"), "-m", model, "-q",
                "--no-report"]
    return [*base, "encode", str(data), "--out", str(work / "vectors.npy"), "-m", model, "-q"]


def table(records: list[dict]) -> str:
    """Markdown table; throughput relative to ``local`` on the same stage and input."""
    local = {(r["stage"], r["n_docs"]): r["wall_s"] for r in records
             if r["config"] == "local" and r["rc"] == 0}
    rows = ["| stage | engine | docs | wall s | docs/s | throughput vs local | driver peak MB "
            "| tree peak MB | stages (s) |", "|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for r in records:
        key = (r["stage"], r["n_docs"])
        ratio = f"{local[key] / r['wall_s']:.2f}" if key in local and r["rc"] == 0 else "-"
        status = "" if r["rc"] == 0 else f" (rc {r['rc']})"
        rows.append(f"| {r['stage']} | {r['config']}{status} | {r['n_docs']} | "
                    f"{r['wall_s']:.1f} | {r['n_docs'] / r['wall_s']:.1f} | {ratio} | "
                    f"{r.get('own_peak_mb', 0):.0f} | {r['peak_mb']:.0f} | "
                    + ", ".join(f"{k} {v}" for k, v in r.get("stages", {}).items()) + " |")
    return "\n".join(rows)


def main() -> None:
    ap = bench_parser(__doc__, corpus="20newsgroups")
    ap.add_argument("--stages", default="phrases,encode")
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--model", default="glove-50d",
                    help="the encoder of the encode and topics stages")
    ap.add_argument("--encode-chars", type=int, default=1000)
    ap.add_argument("--cpus", type=int, default=2, help="CPUs of the Ray cluster")
    ap.add_argument("--out", default="runs/ray_scaling")
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds per run")
    args = ap.parse_args()
    src = corpus_source(args.corpus)
    out = Path(args.out)
    records: list[dict] = []
    for times in (int(x) for x in args.replicate.split(",")):
        name = f"{src.name}-{args.n_docs or 'all'}-x{times}"
        corpus, n_docs = write_corpus(src, out / "data" / f"{name}.jsonl", args.n_docs, times)
        for stage in args.stages.split(","):
            data = corpus if stage != "encode" else \
                encode_input(corpus, out / "data" / f"{name}.txt", args.encode_chars)
            for config in args.configs.split(","):
                work = out / name / stage / config
                work.mkdir(parents=True, exist_ok=True)
                print(f"[{name}] {stage} {config} ...", flush=True)
                with engine_args(config, args.cpus) as extra:
                    cmd = stage_command(stage, data, work, args.model) + extra
                    rec = timed(cmd, work / "log.txt", args.timeout)
                rec.update(stage=stage, config=config, times=times, n_docs=n_docs,
                           stages=stages(stage, work))
                records.append(rec)
                print(f"  {rec['wall_s']:.1f}s rc {rec['rc']} driver peak "
                      f"{rec['own_peak_mb']:.0f} MB (tree {rec['peak_mb']:.0f})", flush=True)
                (out / "ray_scaling.json").write_text(json.dumps(records, indent=1))
    md = table(records)
    (out / "ray_scaling.md").write_text(md + "\n")
    print(md)


if __name__ == "__main__":
    main()
