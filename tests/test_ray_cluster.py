"""A real 2-node Ray cluster on this machine (``ray start --head`` plus ``ray start
--address``): topics and join on it equal the local engine's, and a topics job whose worker
node is killed mid-way still completes with the same result. Slow (about 3 minutes): run by
``.ci/run`` when Ray is installed, or with ``pytest -m slow tests/test_ray_cluster.py``."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("ray", reason="Ray is not installed (pip install 'phrasekit[ray]')")

from phrasekit.pipeline.cluster import LocalCluster

pytestmark = pytest.mark.slow
PHRASEKIT = [sys.executable, "-m", "phrasekit"]
TOPICS = ["topics", "sample", "-m", "glove-50d", "-k", "8", "--no-report", "--quiet"]


def _topics(path: Path) -> dict:
    data = json.loads((path / "topics.json").read_text(encoding="utf-8"))
    data.pop("timings_s")
    return data


def _run(args: list[str], env: dict[str, str] | None = None, timeout: float = 600
         ) -> subprocess.CompletedProcess:
    res = subprocess.run(PHRASEKIT + args, capture_output=True, text=True, env=env,
                         timeout=timeout, check=False)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    return res


def _shards_done(work: Path) -> int:
    try:
        return len(json.loads((work / "manifest.json").read_text(encoding="utf-8"))["shards"])
    except (OSError, ValueError, KeyError):
        return 0


@pytest.fixture(scope="module")
def cluster():
    """Two nodes with one CPU each; stopped (bounded in time) after the module."""
    with LocalCluster(cpus=(1, 1)) as c:
        yield c


def test_join_on_cluster_equals_local(cluster, tmp_path):
    left, right = tmp_path / "left.csv", tmp_path / "right.csv"
    left.write_text("name\n" + "".join(f"city number {i}\n" for i in range(300)),
                    encoding="utf-8")
    right.write_text("name\n" + "".join(f"number {i} city\n" for i in range(0, 300, 7)),
                     encoding="utf-8")
    common = ["join", str(left), str(right), "--left-on", "name", "--right-on", "name", "-m",
              "string", "-k", "2", "--quiet"]
    _run([*common, "--out", str(tmp_path / "local.csv")])
    _run([*common, "--out", str(tmp_path / "ray.csv"), "--engine", "ray", "--address",
          cluster.address])  # the plain environment: phrasekit finds Ray's token itself
    assert (tmp_path / "ray.csv").read_bytes() == (tmp_path / "local.csv").read_bytes()


def test_topics_survive_a_lost_node(cluster, tmp_path):
    _run([*TOPICS, "--out", str(tmp_path / "local")])
    work = tmp_path / "work"
    args = [*TOPICS, "--out", str(tmp_path / "ray"), "--engine", "ray", "--address",
            cluster.address, "--work-dir", str(work)]
    job = subprocess.Popen(PHRASEKIT + args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, env=cluster.driver_env())
    deadline = time.monotonic() + 300
    while _shards_done(work) < 3 and job.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert job.poll() is None, "the job ended before a node could be killed"
    cluster.kill_node(1)
    out, _ = job.communicate(timeout=600)
    assert job.returncode == 0, out[-3000:]
    assert _topics(tmp_path / "ray") == _topics(tmp_path / "local")
