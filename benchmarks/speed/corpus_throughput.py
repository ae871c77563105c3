"""Corpus throughput: phrasekit's corpus commands against sentence-transformers and BERTopic.

Every run is a fresh process started cold (no phrase or vector cache), timed from process
start to exit, so imports, model loading and CLI start count, as they do for a user:

- ``topics``: ``phrasekit topics CORPUS --out ... -q`` (the default method);
- ``topics_pntm``: the same with ``--method pntm``;
- ``keyphrases``: ``phrasekit keyphrases CORPUS --out ... -q``;
- ``topics_again``, ``keyphrases_again``: the same command run a second time with the vector
  cache the first run filled (a user's re-run); every other run starts with an empty cache;
- ``st_encode``: sentence-transformers' ``SentenceTransformer(all-MiniLM-L6-v2).encode`` of
  the documents (the packaged weights phrasekit uses), the baseline of the bbc_news check;
- ``bertopic``: BERTopic 0.17 end to end with that model as its embedding model
  (``BERTopic(embedding_model=st).fit_transform(texts)``: its own encoding, UMAP, HDBSCAN,
  c-TF-IDF), the baseline of the 20newsgroups check.

For each run: wall seconds, documents per second, the ratio of its wall time to the baseline's
(``--baseline``, measured in the same invocation), peak resident memory of the process
(``wait4`` rusage), and for ``topics`` the per-stage seconds its ``topics.json`` records
(encoding, clustering / K choice, extraction, reading). ``--replicate 1,4`` also runs on the
corpus repeated 4 times (document ids suffixed) for the growth of time per document and memory.

Usage::

    python benchmarks/speed/corpus_throughput.py --corpus bbc_news --n-docs 1000 \\
        --runs st_encode,topics,keyphrases --baseline st_encode
    python benchmarks/speed/corpus_throughput.py --corpus 20newsgroups \\
        --runs bertopic,topics,topics_pntm,keyphrases --baseline bertopic --replicate 1,4,10

``--repeats N`` runs every command N times, in rounds (each round runs them all in turn, so a
slow spell of a shared machine falls on every run alike); the table gives each run's median
round and lists every round's wall seconds.

Results: ``OUT/throughput.json`` (every run) and ``OUT/throughput.md`` (the table).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common
from _common import bench_parser, corpus_source, cpu_name, use_group

RUNS = ("st_encode", "bertopic", "topics", "topics_pntm", "keyphrases", "topics_again",
        "keyphrases_again")


def write_corpus(src: Path, out: Path, n_docs: int | None, times: int) -> tuple[Path, int]:
    """The first ``n_docs`` documents of ``src`` (all with None), repeated ``times`` times
    with ids suffixed ``#r``, as JSONL at ``out``; returns the path and document count."""
    from phrasekit.io import read_corpus

    docs = read_corpus(src)[:n_docs]
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", encoding="utf-8") as fh:
        for r in range(times):
            for d in docs:
                doc_id = d.id if times == 1 else f"{d.id}#{r}"
                fh.write(json.dumps({"id": doc_id, "text": d.text}) + "\n")
    return out, len(docs) * times


def own_peak_mb(pid: int) -> float:
    """The peak resident memory (MB) of process ``pid`` alone (``VmHWM``; 0 when gone)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def timed(cmd: list[str], log: Path, timeout: float, env: dict[str, str] | None = None
          ) -> dict:
    """Run ``cmd``; its wall seconds, exit code, peak RSS (MB) of the largest process of its
    tree (``wait4``: the command or a worker process it started) and of the command's own
    process (``own_peak_mb``, polled), output kept in ``log``."""
    t0 = time.perf_counter()
    own = 0.0
    with open(log, "w", encoding="utf-8") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env)
        deadline = t0 + timeout
        while True:
            own = max(own, own_peak_mb(proc.pid))
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                proc.kill()
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.2)
    wall = time.perf_counter() - t0
    return {"wall_s": round(wall, 2), "rc": os.waitstatus_to_exitcode(status),
            "peak_mb": round(usage.ru_maxrss / 1024, 1), "own_peak_mb": round(own, 1),
            "timed_out": wall > timeout}


def command(run: str, corpus: Path, work: Path, extra: list[str] | None = None) -> list[str]:
    """The command line of one run (``extra``: options added to the phrasekit commands)."""
    cli = [sys.executable, "-m", "phrasekit"]
    run = run.removesuffix("_again")
    extra = extra or []
    if run == "topics":
        return [*cli, "topics", str(corpus), "--out", str(work / "topics"), "-q", "--no-report",
                *extra]
    if run == "topics_pntm":
        return [*cli, "topics", str(corpus), "--method", "pntm", "--out", str(work / "pntm"),
                "-q", "--no-report"]
    if run == "keyphrases":
        return [*cli, "keyphrases", str(corpus), "--out", str(work / "keyphrases.jsonl"), "-q",
                *extra]
    return [sys.executable, __file__, "--worker", run, "--corpus", str(corpus),
            "--out", str(work / f"{run}.json")]


def worker(run: str, corpus: Path, out: Path) -> None:
    """``st_encode`` / ``bertopic`` in this process; writes its inner timings to ``out``."""
    from sentence_transformers import SentenceTransformer

    from phrasekit.io import read_corpus
    from phrasekit.models.backbones import minilm_path

    texts = [d.text for d in read_corpus(corpus)]
    st = SentenceTransformer(str(minilm_path()), device="cpu")
    t0 = time.perf_counter()
    if run == "st_encode":
        st.encode(texts, batch_size=32)
        result = {"encode_s": time.perf_counter() - t0}
    else:
        from bertopic import BERTopic

        topics, _ = BERTopic(embedding_model=st).fit_transform(texts)
        result = {"fit_transform_s": time.perf_counter() - t0, "n_topics": len(set(topics))}
    out.write_text(json.dumps(result))


def stages(run: str, work: Path) -> dict:
    """Per-stage seconds a run records about itself (topics: ``topics.json``'s timings)."""
    folder = {"topics": "topics", "topics_pntm": "pntm"}.get(run.removesuffix("_again"))
    if folder and (work / folder / "topics.json").is_file():
        data = json.loads((work / folder / "topics.json").read_text(encoding="utf-8"))
        return {k: round(float(v), 1) for k, v in (data.get("timings_s") or {}).items()}
    if (work / f"{run}.json").is_file():
        return {k: round(v, 1) if isinstance(v, float) else v
                for k, v in json.loads((work / f"{run}.json").read_text()).items()}
    return {}


def topic_scores(corpus: str, work: Path, n_docs: int | None) -> dict:
    """NMI against the gold labels and NPMI of a ``topics`` run's ``topics.json``, by the
    scorer of ``benchmarks/topics/topics_vs_peers.py`` (the same topic terms and tokenisation)."""
    use_group("topics")
    from topics_vs_peers import load_corpus, score

    from phrasekit.settings import corpora_dir
    from phrasekit.text import tokenize

    path = work / "topics" / "topics.json"
    if not path.is_file():
        return {}
    found = json.loads(path.read_text(encoding="utf-8"))
    docs, gold, mask = load_corpus(corpora_dir(), corpus)
    mask = np.asarray(mask)[:n_docs]  # gold holds the evaluated documents' labels, in order
    docs, gold = docs[:n_docs], list(gold)[: int(mask.sum())]
    by_id = {r["id"]: r["topic"] for r in found["doc_topics"]}
    labels = [-1 if by_id.get(d.id) is None else by_id[d.id] for d in docs]
    topics = [[t["term"] for t in topic["top_terms"]] for topic in found["topics"]]
    got = score({"topics": topics, "labels": labels}, [tokenize(d.text) for d in docs],
                gold, mask)
    return {"k": got["n_topics"], "nmi": round(got["nmi"], 3), "npmi": round(got["npmi"], 3),
            "unassigned": round(got["unassigned"], 4)}


def median_rounds(records: list[dict]) -> list[dict]:
    """One record per run and size: the round with the median wall time (the lower middle
    one for an even count), with every round's wall seconds in ``rounds_s``."""
    groups: dict[tuple[int, str], list[dict]] = {}
    for r in records:
        groups.setdefault((r["times"], r["run"]), []).append(r)
    out = []
    for group in groups.values():
        ranked = sorted(group, key=lambda r: r["wall_s"])
        out.append({**ranked[(len(ranked) - 1) // 2],
                    "rounds_s": [r["wall_s"] for r in group]})
    return out


def table(records: list[dict], baseline: str) -> str:
    """Markdown table of the runs, ratios against ``baseline`` of the same corpus size."""
    base = {r["n_docs"]: r["wall_s"] for r in records if r["run"] == baseline and r["rc"] == 0}
    one = {r["run"]: r["wall_s"] / r["n_docs"] for r in records if r["times"] == 1}
    rows = ["| run | x | docs | wall s | docs/s | vs " + baseline + " | s/doc vs x1 | peak MB "
            "| stages (s) |", "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in records:
        ratio = f"{r['wall_s'] / base[r['n_docs']]:.2f}" if r["n_docs"] in base else "-"
        growth = (f"{(r['wall_s'] / r['n_docs']) / one[r['run']]:.2f}"
                  if r["run"] in one else "-")
        status = "" if r["rc"] == 0 else f" (rc {r['rc']}{', timed out' if r['timed_out'] else ''})"
        st = ", ".join(f"{k} {v}" for k, v in r["stages"].items())
        if len(r.get("rounds_s", [])) > 1:
            rounds = f"rounds {'/'.join(f'{w:.1f}' for w in r['rounds_s'])}"
            st = f"{rounds}; {st}" if st else rounds
        if r.get("scores"):
            st += "; " + ", ".join(f"{k} {v}" for k, v in r["scores"].items())
        rows.append(f"| {r['run']}{status} | {r['times']} | {r['n_docs']} | {r['wall_s']:.1f} "
                    f"| {r['n_docs'] / r['wall_s']:.1f} | {ratio} | {growth} "
                    f"| {r['peak_mb']:.0f} | {st} |")
    return "\n".join(rows)


def main() -> None:
    ap = bench_parser(__doc__, corpus="bbc_news")
    ap.add_argument("--runs", default="st_encode,topics,keyphrases")
    ap.add_argument("--baseline", default="st_encode", choices=RUNS)
    ap.add_argument("--out", default="runs/corpus_throughput")
    ap.add_argument("--timeout", type=float, default=7200.0, help="seconds per run")
    ap.add_argument("--score", action="store_true",
                    help="score topics runs against the corpus' gold labels (NMI, NPMI)")
    ap.add_argument("--extra", default="", help="options added to every phrasekit command "
                                                 "(e.g. '--fit-docs 3000')")
    ap.add_argument("--repeats", type=int, default=1,
                    help="rounds of every run (each round runs them all in turn); the table "
                         "gives each run's median round")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.worker, Path(args.corpus), Path(args.out))
        return
    runs = [r.strip() for r in args.runs.split(",") if r.strip()]
    unknown = sorted(set(runs) - set(RUNS))
    if unknown:
        raise SystemExit(f"unknown runs {unknown}; choose from {RUNS}")
    src = corpus_source(args.corpus)
    out = Path(args.out)
    records = []
    for times in (int(x) for x in args.replicate.split(",")):
        name = f"{src.name}-{args.n_docs or 'all'}-x{times}"
        corpus, n_docs = write_corpus(src, out / "data" / f"{name}.jsonl", args.n_docs, times)
        rounds = [(rep, run) for rep in range(args.repeats) for run in runs]
        for rep, run in rounds:
            work = out / name / run
            work.mkdir(parents=True, exist_ok=True)
            print(f"[{name}] {run} (round {rep + 1}) ...", flush=True)
            cache = out / name / f"vectors-{run.removesuffix('_again')}"
            if not run.endswith("_again"):
                shutil.rmtree(cache, ignore_errors=True)  # cold: an empty vector cache
            env = {**os.environ, "PHRASEKIT_VECTOR_CACHE": str(cache)}
            rec = timed(command(run, corpus, work, shlex.split(args.extra)), work / "log.txt",
                        args.timeout, env)
            rec.update(run=run, times=times, n_docs=n_docs, corpus=name, round=rep + 1,
                       stages=stages(run, work))
            if args.score and run.startswith("topics") and times == 1:
                rec["scores"] = topic_scores(args.corpus, work, args.n_docs)
            records.append(rec)
            print(f"[{name}] {run}: {rec['wall_s']:.1f}s rc {rec['rc']} "
                  f"peak {rec['peak_mb']:.0f} MB {rec['stages']}", flush=True)
            (out / "throughput.json").write_text(json.dumps(records, indent=1))
    records = median_rounds(records)
    md = f"CPU: {cpu_name()}\n\n" + table(records, args.baseline)
    (out / "throughput.md").write_text(md + "\n")
    print(md)


if __name__ == "__main__":
    main()
