"""The Ray engine gives the local engine's results: the same phrases, the same vectors up to
float rounding, the same topics with fixed seeds, the same join. Ray runs in this process
(``ray.init(num_cpus=2)``); the multi-node cluster test is test_ray_cluster.py."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from phrasekit.cli import app
from phrasekit.phrases import PhraseExtractor
from phrasekit.pipeline import RayEngine, ShardedEncoder, ShardedExtractor
from phrasekit.topics import DocumentTopicModel

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'phrasekit[ray]')")
runner = CliRunner()


@pytest.fixture(scope="module")
def engine():
    """Two actors on a Ray started for this module (and stopped after it)."""
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             logging_level="ERROR")
    try:
        yield RayEngine(workers=2)
    finally:
        ray.shutdown()


def test_driver_streams_shards_in_order(engine, glove):
    read: list[int] = []

    def texts(n):
        for i in range(n):
            read.append(i)
            yield f"phrase number {i}"

    stream = ShardedEncoder("glove-50d", engine, shard_size=5).encode_stream(texts(200))
    first = next(stream)
    # at most 2 x depth 2 x 2 actors = 8 shards of 5 past the oldest one running, not 200
    assert len(read) <= 45
    got = np.concatenate([first, *stream])
    want = glove.encode([f"phrase number {i}" for i in range(200)])
    np.testing.assert_allclose(got, want, atol=1e-5)


def test_extraction_identical(engine, small_corpus, small_corpus_phrases):
    sharded = ShardedExtractor.like(PhraseExtractor(), engine, shard_size=15)
    assert sharded.extract(small_corpus).to_dict() == small_corpus_phrases.to_dict()
    assert sharded.mentions(small_corpus[:30]) == PhraseExtractor().mentions(small_corpus[:30])


def test_vectors_within_float_tolerance(engine, minilm, small_corpus):
    texts = [d.text[:300] for d in small_corpus]
    sharded = ShardedEncoder("minilm", engine, shard_size=25)
    np.testing.assert_allclose(sharded.encode(texts), minilm.encode(texts), atol=1e-5)


def test_topics_identical_with_fixed_seed(engine, glove, small_corpus):
    def fit(encoder, extractor):
        return DocumentTopicModel(encoder=encoder, n_topics=4, min_df=3, extractor=extractor,
                                  random_state=0).fit(small_corpus)

    base = DocumentTopicModel().phrase_extractor()
    local = fit(glove, base)
    remote = fit(ShardedEncoder("glove-50d", engine, shard_size=30),
                 ShardedExtractor.like(base, engine, shard_size=30))
    assert remote.topics_ == local.topics_ and remote.k_scores_ == local.k_scores_
    np.testing.assert_array_equal(remote.doc_labels_, local.doc_labels_)


def test_cli_join_on_ray_equals_local(engine, tmp_path):
    left, right = tmp_path / "left.csv", tmp_path / "right.csv"
    left.write_text("name,id\nnew york city,1\nlos angeles,2\nparis,3\n", encoding="utf-8")
    right.write_text("title\nnew york\nparis france\n", encoding="utf-8")
    outs = {}
    for name in ("local", "ray"):
        outs[name] = tmp_path / f"{name}.csv"
        res = runner.invoke(app, ["join", str(left), str(right), "--left-on", "name",
                                  "--right-on", "title", "-m", "glove-50d", "--no-threshold",
                                  "--out", str(outs[name]), "--engine", name, "--quiet"])
        assert res.exit_code == 0, res.output
    rows = {n: list(csv.reader(p.open(encoding="utf-8"))) for n, p in outs.items()}
    assert rows["ray"] == rows["local"] and len(rows["ray"]) == 3
    assert not (tmp_path / "ray.csv.shards").exists()  # the default work folder is removed


def test_mentions_job_on_ray_equals_local(engine, small_corpus, tmp_path):
    import pyarrow.parquet as pq

    from phrasekit.pipeline.mentions import write_mentions

    docs = small_corpus[:16]
    tables = []
    for name, eng in (("local", None), ("ray", engine)):
        write_mentions(tmp_path / name, docs, model="glove-50d", doc_vectors=True, engine=eng,
                       shard_docs=4)
        tables.append([pq.read_table(tmp_path / name / part) for part in ("mentions",
                                                                         "documents")])
    for here, there in zip(*tables, strict=True):
        assert here.drop(["vector"]).equals(there.drop(["vector"]))
        np.testing.assert_allclose(np.asarray(here["vector"].to_pylist()),
                                   np.asarray(there["vector"].to_pylist()), atol=1e-6)

def test_cluster_start_waits_for_the_head_port_and_reports_the_node_log(monkeypatch):
    """No driver probes the head before its port listens (such a probe hangs for minutes),
    and a start that times out says what the nodes printed."""
    from phrasekit.pipeline.cluster import LocalCluster

    c = LocalCluster(cpus=(1,), timeout=1.5)
    (Path(c.temp_dir) / "nodes.log").write_text("raylet: could not bind port\n")
    probes: list[float] = []
    monkeypatch.setattr(c, "alive_nodes", lambda timeout: probes.append(timeout) or 0)
    with pytest.raises(TimeoutError, match="could not bind port"):
        c.wait_for_nodes(1)
    assert probes == []


def test_cluster_nodes_get_distinct_ports():
    """Each node's five ports and the head's GCS port are all different: ports drawn one at a
    time could coincide, and Ray then refuses to start the node."""
    from phrasekit.pipeline.cluster import LocalCluster

    c = LocalCluster(cpus=(1, 1, 1))
    flags = [a for i in range(3) for a in c._node_args(i)]
    ports = [int(flags[j + 1]) for j, a in enumerate(flags) if a.endswith("-port")]
    assert len(ports) == 16 and len(set(ports)) == 16 and c.port in ports


def test_an_address_where_no_head_answers_is_refused_at_once():
    """Ray retried an unreachable head for minutes, logging as it went."""
    import socket

    from phrasekit.pipeline.engines import check_reachable

    with socket.socket() as s:  # a port that was free a moment ago: nothing listens there
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ValueError, match=f"--address 127.0.0.1:{port}: no Ray head answers"):
        check_reachable(f"127.0.0.1:{port}", timeout=2)
    check_reachable("auto")  # left to Ray
