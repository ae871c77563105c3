"""The thread count: measured free cores, the user's setting, one thread for small jobs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from phrasekit import threads
from phrasekit.threads import ThreadsError, auto_threads, choose_threads, parse_threads


@pytest.mark.parametrize(("cpus", "busy", "want"), [
    (2, 0.0, 2), (2, 1.0, 1), (2, 4.0, 1), (8, 0.0, 8), (8, 3.0, 5), (8, 2.4, 6),
    (8, 2.6, 5), (1, 0.0, 1), (4, 0.4, 4)])
def test_auto_threads_are_the_cores_not_busy_elsewhere(cpus, busy, want):
    assert auto_threads(cpus=cpus, busy=busy) == want


def test_busy_cpus_is_the_median_of_runnable_threads_not_ours(monkeypatch):
    readings = iter([3, 3, 9, 2, 3])  # one spike ignored; this process runs one thread
    monkeypatch.setattr(threads, "_runnable_now", lambda: next(readings))
    monkeypatch.setattr(threads, "_own_running", lambda: 1)
    assert threads.busy_cpus(samples=5, interval=0) == 2.0


def test_busy_cpus_without_proc_reads_the_load_average(monkeypatch):
    monkeypatch.setattr(threads, "_runnable_now", lambda: None)
    monkeypatch.setattr(os, "getloadavg", lambda: (1.5, 1.0, 1.0))
    assert threads.busy_cpus(samples=3, interval=0) == 1.5


def test_a_busy_core_of_two_leaves_one_thread(monkeypatch):
    """A 2-core machine with one core spinning elsewhere (affinity and run queue mocked)."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.setattr(threads, "_physical_cores", lambda cpus: len(cpus))
    monkeypatch.setattr(threads, "_cgroup_quota", lambda: None)
    monkeypatch.setattr(threads, "_own_running", lambda: 1)
    monkeypatch.setattr(threads, "_runnable_now", lambda: 2)  # us and the hog
    assert choose_threads(environ={}) == 1
    monkeypatch.setattr(threads, "_runnable_now", lambda: 1)  # us alone
    assert choose_threads(environ={}) == 2


def test_usable_cpus_follow_affinity_cores_and_quota(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    monkeypatch.setattr(threads, "_physical_cores", lambda cpus: 2)  # two hyperthread pairs
    monkeypatch.setattr(threads, "_cgroup_quota", lambda: None)
    assert threads.usable_cpus() == 2
    monkeypatch.setattr(threads, "_physical_cores", lambda cpus: 4)
    monkeypatch.setattr(threads, "_cgroup_quota", lambda: 1.5)  # a container of 1.5 CPUs
    assert threads.usable_cpus() == 2


def test_the_users_count_wins_and_small_jobs_run_on_one_thread(monkeypatch):
    monkeypatch.setattr(threads, "auto_threads", lambda: 7)
    assert choose_threads(environ={}) == 7
    assert choose_threads(environ={"PHRASEKIT_THREADS": "3"}) == 3
    assert choose_threads(environ={"PHRASEKIT_THREADS": "auto"}) == 7
    assert choose_threads(environ={"OMP_NUM_THREADS": "2"}) == 2
    assert choose_threads(4, environ={"PHRASEKIT_THREADS": "3"}) == 4
    assert choose_threads(environ={}, chars=100) == 1
    assert choose_threads(environ={}, chars=10**6) == 7


@pytest.mark.parametrize("bad", ["0", "-1", "two", "1.5", "99999", " "])
def test_bad_thread_counts_are_refused_in_one_line(bad):
    if not bad.strip():
        assert parse_threads(bad) is None  # blank: auto
        return
    with pytest.raises(ThreadsError, match="PHRASEKIT_THREADS must be a whole number"):
        parse_threads(bad)


def test_prepare_openmp_keeps_the_users_setting():
    env = {"OMP_WAIT_POLICY": "ACTIVE"}
    threads.prepare_openmp(env)
    assert env == {"OMP_WAIT_POLICY": "ACTIVE"}  # no spin count over the user's policy
    env = {"GOMP_SPINCOUNT": "0"}
    threads.prepare_openmp(env)
    assert env == {"GOMP_SPINCOUNT": "0", "KMP_BLOCKTIME": "0"}
    env = {}
    threads.prepare_openmp(env)
    assert env == {"GOMP_SPINCOUNT": "10000", "KMP_BLOCKTIME": "0"}


def test_limited_threads_restores_torch_and_blas():
    import torch
    from threadpoolctl import threadpool_info

    before = torch.get_num_threads()
    with threads.limited_threads(1):
        assert torch.get_num_threads() == 1
        assert all(p["num_threads"] == 1 for p in threadpool_info())
    assert torch.get_num_threads() == before


def test_compute_threads_follow_the_jobs_setting():
    import torch

    with threads.limited_threads(1):
        assert threads.compute_threads() == 1   # rapidfuzz, the n-gram search, the trees
    assert threads.compute_threads() == torch.get_num_threads()


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    src = str(Path(threads.__file__).parents[1])
    return subprocess.run([sys.executable, "-m", "phrasekit", *args], capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": src, **env}, timeout=120)


def test_the_cli_refuses_a_bad_phrasekit_threads_with_exit_2():
    done = _cli("models", env={"PHRASEKIT_THREADS": "lots"})
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "error: PHRASEKIT_THREADS must be a whole number from 1 to 1024 or 'auto', got 'lots'"]
    assert _cli("models", env={"PHRASEKIT_THREADS": "1"}).returncode == 0


def test_a_small_encode_runs_on_one_thread_and_a_large_one_as_set():
    import numpy as np
    import torch

    from phrasekit.encoders.base import Encoder

    seen: list[int] = []

    class Spy(Encoder):
        name, dim = "spy", 2

        def torch_modules(self):  # a torch encoder: its thread count is phrasekit's to set
            return [torch.nn.Identity()]

        def _encode_batch(self, texts):
            seen.append(torch.get_num_threads())
            return np.ones((len(texts), 2), dtype=np.float32)

    spy = Spy()
    with threads.limited_threads(2):
        spy.encode(["a short query"])
        spy.encode(["word " * 200])
        assert torch.get_num_threads() == 2
    assert seen == [1, 2]
    spy.backend = "onnx"  # an ONNX session keeps the count it opened with
    with threads.limited_threads(2):
        spy.encode(["a short query"])
    assert seen[-1] == 2
