"""Topics on a small subset of the bundled sample, idle and beside a one-core CPU hog: the
default thread choice against 1 and 2 threads, 2 threads that sleep at once, and 2 threads
that spin as GNU OpenMP does by default (the old default).

Each run is a fresh ``phrasekit topics`` process (so OpenMP reads its environment at start)
with no vector cache and no report. The hog is a child process spinning on one core.

    python benchmarks/speed/threads_busy.py --docs 300 --rounds 1
"""

from __future__ import annotations

import argparse
import gzip
import json
import multiprocessing
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from phrasekit.encoders.cpu import cpu_model
from phrasekit.threads import usable_cpus

SAMPLE = Path(__file__).resolve().parents[2] / "src/phrasekit/data/sample_corpus"
#: name -> (extra CLI arguments, extra environment)
CONFIGS: dict[str, tuple[list[str], dict[str, str]]] = {
    "default (auto)": ([], {}),
    "--threads 1": (["--threads", "1"], {}),
    "--threads 2": (["--threads", "2"], {}),
    "2, passive (OMP_WAIT_POLICY=PASSIVE)": (["--threads", "2"], {"OMP_WAIT_POLICY": "PASSIVE"}),
    "2, spinning (old)": (["--threads", "2"], {"OMP_WAIT_POLICY": "", "KMP_BLOCKTIME": "",
                                               "GOMP_SPINCOUNT": ""}),
}


def _spin() -> None:
    while True:
        pass


def write_subset(n: int, folder: Path) -> Path:
    """The first ``n`` documents of the bundled sample as JSON lines."""
    path = folder / f"sample{n}.jsonl"
    with gzip.open(SAMPLE / "documents.jsonl.gz", "rt", encoding="utf-8") as src, \
            path.open("w", encoding="utf-8") as out:
        for i, line in enumerate(src):
            if i == n:
                break
            out.write(json.dumps({"id": json.loads(line)["id"],
                                  "text": json.loads(line)["text"]}) + "\n")
    return path


def run_once(corpus: Path, out: Path, args: list[str], env: dict[str, str]
             ) -> tuple[float, str]:
    """Seconds of one ``topics`` run and the threads it chose (``auto -> N`` or as given)."""
    cmd = [sys.executable, "-m", "phrasekit", "topics", str(corpus), "--out", str(out),
           "--no-cache", "--no-report", "--fit-docs", "all", "--workers", "1", "-v", *args]
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **env},
                          check=False)
    seconds = time.perf_counter() - t0
    if done.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{done.stderr[-2000:]}")
    chosen = re.search(r"threads auto -> (\d+)", done.stderr)
    return seconds, chosen.group(1) if chosen else args[-1]


def measure(corpus: Path, folder: Path, rounds: int, hog: bool) -> dict[str, tuple[float, str]]:
    """Best of ``rounds`` per config (configs interleaved), with or without the hog."""
    spinner = None
    if hog:
        spinner = multiprocessing.get_context("spawn").Process(target=_spin, daemon=True)
        spinner.start()
        time.sleep(1.0)
    best: dict[str, tuple[float, str]] = {}
    try:
        for r in range(rounds):
            for name, (args, env) in CONFIGS.items():
                seconds, chosen = run_once(corpus, folder / f"out{r}", args, env)
                if name not in best or seconds < best[name][0]:
                    best[name] = (seconds, chosen)
                print(f"  {'hog' if hog else 'idle'} {name}: {seconds:.1f}s (threads "
                      f"{chosen})", file=sys.stderr, flush=True)
    finally:
        if spinner is not None:
            spinner.terminate()
            spinner.join()
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=300, help="Documents of the sample.")
    parser.add_argument("--rounds", type=int, default=1, help="Best of this many runs.")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        corpus = write_subset(args.docs, folder)
        idle = measure(corpus, folder, args.rounds, hog=False)
        busy = measure(corpus, folder, args.rounds, hog=True)
    print(f"CPU: {cpu_model()}, {usable_cpus()} usable cores; `phrasekit topics` on "
          f"{args.docs} sample documents, no cache, best of {args.rounds}; load before: "
          f"{os.getloadavg()[0]:.2f}")
    print("| threads | idle s | idle vs best | one core busy s | busy vs best |")
    print("|---|---|---|---|---|")
    best_idle = min(s for s, _ in idle.values())
    best_busy = min(s for s, _ in busy.values())
    for name in CONFIGS:
        (si, ti), (sb, tb) = idle[name], busy[name]
        print(f"| {name} (idle: {ti}, busy: {tb}) | {si:.1f} | {si / best_idle:.2f}x | "
              f"{sb:.1f} | {sb / best_busy:.2f}x |")


if __name__ == "__main__":
    main()
