"""`phrasekit neighbors` latency: each call is a fresh process, as a user at a shell runs it.

On one vocabulary, in a fresh folder (so no cached vectors at the start), five calls:
the first query (the vocabulary is encoded and its vectors kept beside it), the same query
again, a query that is a vocabulary entry, a new query outside the vocabulary, and that query
again. Each row gives the wall time and the peak memory of the process.

``--baseline-src DIR`` runs the same calls with ``PYTHONPATH=DIR`` (the ``src`` folder of
another checkout, e.g. a ``git worktree`` at an earlier commit) in the same run, and prints
each call's time as a ratio to the baseline's.

The vocabulary is ``--vocab`` (text, one entry per line, or a ``phrasekit phrases`` JSON), or
by default the phrases of the bundled sample corpus (``phrasekit phrases sample``).

Usage: python benchmarks/speed/neighbors_latency.py [--vocab FILE] [--model pearl-minilm]
       [--baseline-src DIR]
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from phrasekit.eval.lexical_diversity import read_vocabulary_file

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common
from _common import bench_parser

CALLS = ("first query (cold)", "same query", "a vocabulary entry", "new query", "new query again")


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of one process running ``cmd``."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {proc.stderr.read().decode()[-500:]}")
    return wall, usage.ru_maxrss / 1024


def run_calls(vocab: Path, model: str, queries: list[str], src: str | None
              ) -> list[tuple[float, float]]:
    """The five calls of the module docstring on a fresh copy of ``vocab``."""
    env = dict(os.environ)
    if src:
        env["PYTHONPATH"] = src
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / vocab.name
        shutil.copy(vocab, copy)
        base = [sys.executable, "-m", "phrasekit", "neighbors"]
        opts = ["--vocab", str(copy), "-m", model, "-k", "10", "-q"]
        return [timed([*base, q, *opts], env) for q in queries]


def main() -> None:
    ap = bench_parser(__doc__)
    ap.add_argument("--vocab", type=Path, help="vocabulary file (default: the sample's)")
    ap.add_argument("--model", default="pearl-minilm")
    ap.add_argument("--baseline-src", help="PYTHONPATH of the baseline checkout's src folder")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        vocab = args.vocab
        if vocab is None:
            vocab = Path(tmp) / "phrases.json.gz"
            subprocess.run([sys.executable, "-m", "phrasekit", "phrases", "sample", "--out",
                            str(vocab), "-q"], check=True)
        entries = read_vocabulary_file(vocab)
        queries = ["language models", "language models", entries[len(entries) // 2],
                   "a phrase nobody wrote", "a phrase nobody wrote"]
        print(f"vocabulary: {len(entries)} entries ({vocab.name}), model {args.model}")
        now = run_calls(vocab, args.model, queries, None)
        before = run_calls(vocab, args.model, queries, args.baseline_src) \
            if args.baseline_src else None
    head = "| call | wall s | peak MB |" + (" baseline s | baseline MB | ratio |"
                                            if before else "")
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for i, name in enumerate(CALLS):
        row = f"| {name} | {now[i][0]:.2f} | {now[i][1]:.0f} |"
        if before:
            row += f" {before[i][0]:.2f} | {before[i][1]:.0f} | {now[i][0] / before[i][0]:.2f} |"
        print(row)


if __name__ == "__main__":
    main()
