"""Crash tests: `kill -9` a command at seeded random moments, then rerun it.

For `topics`, `index build`, `join` and `train facets`, each kill must leave the output either as
it was (an older complete set, or nothing) or as a complete new set whose manifest verifies; no
mix of old and new. The rerun must then produce what an uninterrupted run produces. Point 0 of
`index build` and `join` runs in the default suite; the other 38 are marked ``slow``.
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from safetensors.torch import load_file

from phrasekit.artifacts import verify_folder
from phrasekit.training.facets.data import CorpusSpec, FacetDataConfig, build_facet_dataset

FIXTURES = Path(__file__).parent / "fixtures"
CORPUS = FIXTURES / "corpus_small.jsonl"
N_POINTS = 10


def run_cli(args: list[str], kill_after: float | None = None, timeout: float = 300) -> int:
    """Run ``phrasekit ARGS`` in a subprocess; with ``kill_after``, SIGKILL it after that many
    seconds (if still running). Returns the exit code (negative: killed)."""
    proc = subprocess.Popen([sys.executable, "-m", "phrasekit", *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONHASHSEED": "0"})
    if kill_after is not None:
        try:
            proc.wait(timeout=kill_after)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
    _, err = proc.communicate(timeout=timeout)
    if kill_after is None and proc.returncode != 0:
        raise AssertionError(f"phrasekit {' '.join(args)} failed: {err.decode()[-2000:]}")
    return proc.returncode


# ------------------------------------------------------------------ what each command leaves
def _topics_state(out: Path) -> Any:
    if not out.exists():
        return None
    verify_folder(out, "topics", required=("topics.json", "topics.md", "report.html"))
    data = json.loads((out / "topics.json").read_text(encoding="utf-8"))
    data.pop("timings_s", None)
    return data


def _index_state(out: Path) -> Any:
    if not out.exists():
        return None
    verify_folder(out, "entity-index", required=("config.json", "names.jsonl", "vectors.npy"))
    return (out / "names.jsonl").read_bytes(), (out / "vectors.npy").read_bytes()


def _join_state(out: Path) -> Any:
    if not out.exists():
        return None
    with open(out, encoding="utf-8", newline="") as fh:
        return list(csv.reader(fh))


def _train_state(out: Path) -> Any:
    model = out / "model"
    if not model.exists():
        return None
    verify_folder(model, "model", required=("config.json", "model.safetensors"))
    return {k: v.tolist() for k, v in load_file(str(model / "model.safetensors")).items()}


@dataclass
class Case:
    """A command line writing ``out``, an older command writing the same path, and the reader
    of what ``out`` holds (which verifies it)."""

    args: Callable[[Path], list[str]]
    old_args: Callable[[Path], list[str]] | None
    state: Callable[[Path], Any]
    resumable_folder: bool = False


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("crash_inputs")
    docs = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines()]
    names = root / "names.txt"
    names.write_text("".join(d["text"].split(".")[0][:60].strip() + "\n" for d in docs),
                     encoding="utf-8")
    for side, rows in (("left", docs[:60]), ("right", docs[20:80])):
        with open(root / f"{side}.csv", "w", encoding="utf-8", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow(["id", "title"])
            writer.writerows([d["id"], d["text"][:80]] for d in rows)
    corpora = root / "corpora"
    (corpora / "arxiv80").mkdir(parents=True)
    shutil.copy(CORPUS, corpora / "arxiv80" / "documents.jsonl")
    build_facet_dataset(FacetDataConfig(
        out_dir=str(root / "facet_data"), granularity="phrase", corpora=(CorpusSpec("arxiv80"),),
        corpora_dir=str(corpora), phrase_cache_dirs=(), val_fraction=0.1, show_progress=False,
        exclude_eval_sentences=False, max_per_phrase=20))
    return {"names": names, "left": root / "left.csv", "right": root / "right.csv",
            "facet_data": root / "facet_data"}


def _cases(inputs: dict[str, Path]) -> dict[str, Case]:
    def topics(k: int) -> Callable[[Path], list[str]]:
        return lambda out: ["topics", str(CORPUS), "-m", "string", "-k", str(k), "--min-df",
                            "2", "--out", str(out), "-q"]

    def index(model: str) -> Callable[[Path], list[str]]:
        return lambda out: ["index", "build", str(inputs["names"]), "-m", model, "--out",
                            str(out), "-q"]

    def join(k: int) -> Callable[[Path], list[str]]:
        return lambda out: ["join", str(inputs["left"]), str(inputs["right"]), "--left-on",
                            "title", "--right-on", "title", "-m", "string", "-k", str(k),
                            "--out", str(out), "-q"]

    return {
        "topics": Case(topics(4), topics(3), _topics_state),
        "index": Case(index("string"), index("minilm"), _index_state),
        "join": Case(join(2), join(1), _join_state),
        "train": Case(lambda out: ["train", "facets", "--data", str(inputs["facet_data"]),
                                   "--batch-size", "32", "--max-steps", "60", "--out", str(out),
                                   "-q"], None, _train_state, resumable_folder=True),
    }


@pytest.fixture(scope="module")
def references(inputs, tmp_path_factory) -> Callable[[str], tuple[float, Any, Path | None]]:
    """Per command (computed once, on first use): the uninterrupted run's duration and state,
    and the path of an older output set."""
    root = tmp_path_factory.mktemp("crash_refs")
    cache: dict[str, tuple[float, Any, Path | None]] = {}

    def get(name: str) -> tuple[float, Any, Path | None]:
        if name not in cache:
            case = _cases(inputs)[name]
            suffix = ".csv" if name == "join" else ""
            out = root / f"{name}-ref{suffix}"
            t0 = time.perf_counter()
            run_cli(case.args(out))
            seconds = time.perf_counter() - t0
            old = None
            if case.old_args is not None:
                old = root / f"{name}-old{suffix}"
                run_cli(case.old_args(old))
            cache[name] = (seconds, case.state(out), old)
        return cache[name]

    return get


#: (command, kill point): point 0 of the fast commands runs in the default suite.
CASES = [pytest.param(c, i, marks=() if i == 0 and c in ("index", "join") else pytest.mark.slow)
         for c in ("topics", "index", "join", "train") for i in range(N_POINTS)]


@pytest.mark.parametrize(("command", "point"), CASES)
def test_kill_9_leaves_old_or_whole_new_output_and_rerun_matches(
        command, point, inputs, references, tmp_path):
    case = _cases(inputs)[command]
    seconds, expected, old = references(command)
    out = tmp_path / ("out.csv" if command == "join" else "out")
    if old is not None:  # an earlier output set sits at the path
        (shutil.copy if old.is_file() else shutil.copytree)(old, out)
    before = case.state(out) if old is not None else None
    kill_after = random.Random(f"{command}-{point}").uniform(0.3, seconds)
    code = run_cli(case.args(out), kill_after=kill_after)
    after = case.state(out)  # verifies the manifest of whatever is there
    if case.resumable_folder:
        assert after in (None, expected), "a partial model folder was left"
    else:
        assert after in (before, expected), f"mixed or partial output (exit {code})"
    run_cli(case.args(out))
    rerun_equal = case.state(out) == expected
    leftovers = [p.name for p in out.parent.iterdir() if p.name.startswith(f".{out.name}.")]
    _report(command=command, point=point, kill_after_s=round(kill_after, 2), exit=code,
            left=("nothing" if after is None else "new set" if after == expected
                  else "old set"), rerun_equal=rerun_equal, leftovers=len(leftovers))
    assert rerun_equal
    assert leftovers == [], leftovers


def _report(**row: Any) -> None:
    """Append one kill's outcome to $PHRASEKIT_CRASH_REPORT (JSON lines) when it is set."""
    path = os.environ.get("PHRASEKIT_CRASH_REPORT")
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(row) + "\n")


def test_sigterm_unwinds_like_ctrl_c_and_leaves_no_temporary_output(tmp_path):
    """`kill PID` (SIGTERM) mid-write: exit 143, "terminated", no hidden partial file."""
    phrases = tmp_path / "in.txt"
    phrases.write_text("".join(f"three word phrase {i % 997}\n" for i in range(400_000)),
                       encoding="utf-8")
    out = tmp_path / "out.npy"
    proc = subprocess.Popen([sys.executable, "-m", "phrasekit", "encode", "-m", "glove-50d",
                             "-q", str(phrases), "-o", str(out)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline:
        if any(p.name.startswith(".out.npy.") for p in tmp_path.iterdir()):
            break  # the temporary output exists: terminate while it is being written
        time.sleep(0.05)
    if proc.poll() is not None:
        pytest.skip("the encode finished before it could be terminated")
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143 and b"terminated" in err, (proc.returncode, err[-500:])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.txt"]


def _children(pid: int) -> list[int]:
    """The live child processes of ``pid`` (Linux /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid and fields[0] != "Z":
                found.append(int(stat.parent.name))
    return found


def _with_workers(args: list[str]) -> tuple[subprocess.Popen, list[int]]:
    """``phrasekit ARGS`` started, once its worker processes are seen (skips if never)."""
    proc = subprocess.Popen([sys.executable, "-m", "phrasekit", *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline, workers = time.monotonic() + 120, []
    while proc.poll() is None and not workers and time.monotonic() < deadline:
        workers = _children(proc.pid)
        time.sleep(0.05)
    if not workers:
        proc.communicate(timeout=120)
        pytest.skip("the command finished before its workers could be seen")
    return proc, workers


def _left_alive(workers: list[int]) -> list[int]:
    """The ``workers`` still alive after up to 20 s (then killed, so no test leaks them)."""
    deadline = time.monotonic() + 20
    while any(Path(f"/proc/{w}").exists() for w in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    alive = [w for w in workers if Path(f"/proc/{w}").exists()]
    for w in alive:
        os.kill(w, signal.SIGKILL)
    return alive


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
def test_kill_9_of_a_command_leaves_no_spacy_worker_behind(tmp_path):
    """The forked spaCy workers die with the command instead of waiting on their task queue."""
    proc, workers = _with_workers(["topics", str(CORPUS), "-m", "string", "-k", "4",
                                   "--min-df", "2", "--out", str(tmp_path / "t"), "-q",
                                   "--workers", "2"])
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    assert _left_alive(workers) == []


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
def test_sigterm_while_spacy_workers_parse_ends_the_command_at_once(tmp_path):
    """SIGTERM mid-parse: exit 143 without waiting for the workers' shares, none left."""
    corpus = tmp_path / "big.jsonl"
    docs = CORPUS.read_text(encoding="utf-8").splitlines()
    corpus.write_text("".join(json.dumps({"id": f"{r}-{i}", "text": json.loads(d)["text"]})
                              + "\n" for r in range(8) for i, d in enumerate(docs)),
                      encoding="utf-8")
    proc, workers = _with_workers(["phrases", str(corpus), "-o", str(tmp_path / "p.json"),
                                   "-q", "--workers", "2"])
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    waited = time.monotonic() - t0
    assert proc.returncode == 143 and b"terminated" in err, err[-300:]
    assert _left_alive(workers) == [] and waited < 5, waited
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.jsonl"]
