"""The sharded pipeline: the shard store, resuming, and the local engine's equality with the
unsharded components (the Ray engine's equality is in test_ray_engine.py)."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from typer.testing import CliRunner

from phrasekit.cli import app
from phrasekit.phrases import PhraseExtractor
from phrasekit.pipeline import (
    LocalEngine,
    ShardedEncoder,
    ShardedExtractor,
    ShardedSearch,
    ShardStore,
    Stage,
    iter_stage,
    make_engine,
    run_stage,
)
from phrasekit.pipeline.engines import worker_lost
from phrasekit.similarity.index import build_index
from phrasekit.similarity.ivf import IVFIndex

runner = CliRunner()


class Doubler(Stage):
    """``x`` -> ``2x``; counts its calls and fails on the shard holding ``fail_on``."""

    name = "double"

    def __init__(self, fail_on: int | None = None) -> None:
        self.calls = 0
        self.fail_on = fail_on

    def fingerprint(self) -> str:
        return "double-v1"

    def __call__(self, table: pa.Table) -> pa.Table:
        xs = table.column("x").to_pylist()
        if self.fail_on in xs:
            raise RuntimeError("killed")
        self.calls += 1
        return pa.table({"y": [2 * x for x in xs]})


def _shards(n: int) -> list[pa.Table]:
    return [pa.table({"x": [i, i + 100]}) for i in range(n)]


def test_store_round_trip_and_damage(tmp_path):
    store = ShardStore(tmp_path)
    store.put("a", pa.table({"y": [1, 2]}))
    again = ShardStore(tmp_path)  # the manifest is read back
    assert "a" in again and again.get("a").column("y").to_pylist() == [1, 2]
    (tmp_path / "a.parquet").write_bytes(b"garbage")
    assert ShardStore(tmp_path).get("a") is None  # fails its checksum: recomputed
    (tmp_path / "b.parquet").write_bytes(b"left by a killed job")
    assert ShardStore(tmp_path).get("b") is None  # never in the manifest


def test_killed_run_resumes_from_finished_shards(tmp_path):
    with pytest.raises(RuntimeError, match="killed"):
        run_stage(Doubler(fail_on=3), _shards(6), LocalEngine(), tmp_path)
    assert len(ShardStore(tmp_path)) == 3  # shards 0, 1, 2 were written before the failure
    stage = Doubler()
    out = run_stage(stage, _shards(6), LocalEngine(), tmp_path)
    assert stage.calls == 3  # only shards 3, 4, 5 run again
    assert [t.column("y").to_pylist() for t in out] == [[2 * i, 2 * i + 200] for i in range(6)]
    other = Doubler()
    other_input = [pa.table({"x": [7, 8]})]
    run_stage(other, other_input, LocalEngine(), tmp_path)
    assert other.calls == 1  # another input is another shard


def test_sharded_encoder_matches_plain(glove):
    texts = [f"phrase number {i}" for i in range(50)] + ["new york city", "bank"]
    sharded = ShardedEncoder(glove, LocalEngine(), shard_size=7)
    assert sharded.name == glove.name and sharded.dim == glove.dim
    np.testing.assert_allclose(sharded.encode(texts), glove.encode(texts), atol=1e-6)
    assert sharded.encode([]).shape == (0, glove.dim)
    with pytest.raises(ValueError, match=r"texts\[1\]"):
        sharded.encode(["ok", " "])


def test_encode_stream_matches_encode_chunk_by_chunk(glove):
    texts = [f"phrase number {i}" for i in range(30)]
    for encoder in (glove, ShardedEncoder(glove, LocalEngine(), shard_size=4)):
        chunks = list(encoder.encode_stream(iter(texts), chunk_size=4))
        np.testing.assert_allclose(np.concatenate(chunks), glove.encode(texts), atol=1e-6)
        with pytest.raises(ValueError, match=r"texts\[9\]"):  # indexed in the whole stream
            list(encoder.encode_stream(iter([*texts[:9], " "]), chunk_size=4))


def test_stage_streams_its_input_and_keeps_input_order(tmp_path):
    read: list[int] = []

    def inputs(ids):
        for i in ids:
            read.append(i)
            yield pa.table({"x": [i, i + 100]})

    ids = [0, 1, 2, 1, 3, 0, 4]  # repeated shards are run once and given back in place
    stage = Doubler()
    outs = iter_stage(stage, inputs(ids), LocalEngine(), tmp_path)
    assert next(outs).column("y").to_pylist() == [0, 200]
    assert read == [0]  # nothing is read ahead of the work
    assert [t.column("y").to_pylist()[0] for t in outs] == [2 * i for i in ids[1:]]
    assert stage.calls == 5


def test_sharded_extractor_matches_plain(small_corpus, small_corpus_phrases, tmp_path):
    sharded = ShardedExtractor.like(PhraseExtractor(), LocalEngine(), tmp_path, shard_size=9)
    assert sharded.extract(small_corpus).to_dict() == small_corpus_phrases.to_dict()
    assert len(ShardStore(tmp_path)) == -(-len(small_corpus) // 9)
    assert sharded.mentions(small_corpus[:20]) == PhraseExtractor().mentions(small_corpus[:20])


@pytest.mark.parametrize("kind", ["exact", "ann", "ivf"])
def test_sharded_search_matches_index(kind):
    rng = np.random.default_rng(0)
    left = rng.normal(size=(300, 16)).astype(np.float32)
    left /= np.linalg.norm(left, axis=1, keepdims=True)
    queries = left[:40] + 0.05 * rng.normal(size=(40, 16)).astype(np.float32)
    if kind == "ivf":  # fewer rows than build_index asks of inverted lists
        index = IVFIndex(16, nlist=4, nprobe=4)
        index.add(left)
    else:
        index = build_index(left, kind=kind)
    copy = pickle.loads(pickle.dumps(index))  # what a worker receives
    want = index.search(queries, k=3)
    got = ShardedSearch(LocalEngine(), shard_size=16)(copy, left, queries, 3)
    np.testing.assert_allclose(got[0], want[0], atol=1e-6)
    np.testing.assert_array_equal(got[1], want[1])


def test_lost_workers_are_told_from_other_errors():
    class ActorDiedError(Exception):
        pass

    try:
        try:
            raise ActorDiedError("the actor died")
        except ActorDiedError as inner:
            raise RuntimeError("map_batches failed") from inner
    except RuntimeError as exc:
        assert worker_lost(exc)  # a lost worker, wrapped: its shards are submitted again
    assert not worker_lost(ValueError("texts[3] is empty"))  # a bad input is not retried

    class ObjectLostError(Exception):
        pass

    class ObjectReconstructionFailedError(ObjectLostError):
        pass

    # a shard output kept on a node that died before the driver fetched it
    assert worker_lost(ObjectReconstructionFailedError("object 45ef... cannot be reconstructed"))


def test_ray_pool_fits_the_cluster():
    from types import SimpleNamespace

    from phrasekit.pipeline import RayEngine

    def engine(workers, free, total=4.0, cpus=1.0):
        eng = RayEngine.__new__(RayEngine)  # no Ray started: only the sizing is tested
        eng.ray = SimpleNamespace(available_resources=lambda: {"CPU": free},
                                  cluster_resources=lambda: {"CPU": total})
        eng.workers, eng.cpus_per_worker = workers, cpus
        return eng

    assert engine(None, 4.0).pool_size() == 4
    assert engine(2, 4.0).pool_size() == 2
    assert engine(8, 4.0).pool_size() == 4  # more actors than CPUs would never start
    assert engine(None, 0.0, total=3.0, cpus=1.5).pool_size() == 2
    with pytest.raises(RuntimeError, match="no room"):
        engine(None, 0.0, total=0.0).pool_size()


def test_engine_settings_are_checked():
    with pytest.raises(ValueError, match="engine must be one of"):
        make_engine("spark")
    with pytest.raises(ValueError, match="--address needs --engine ray"):
        make_engine("local", address="127.0.0.1:6379")


@pytest.mark.parametrize("args, message", [
    (["phrases", "sample", "--out", "{tmp}/p.json", "--engine", "spark"], "--engine must be"),
    (["phrases", "sample", "--out", "{tmp}/p.json", "--address", "h:1"], "--address needs"),
    (["topics", "sample", "--out", "{tmp}/t", "--method", "ccl", "--work-dir", "{tmp}/w"],
     "run the methods documents, clusters, pntm"),
    (["encode", "{tmp}/in.txt", "--out", "{tmp}/o.npy", "--engine", "ray", "--worker-cpus",
      "0"], "--worker-cpus must be between"),
])
def test_cli_refuses_bad_engine_options(tmp_path, args, message):
    (tmp_path / "in.txt").write_text("a phrase\n", encoding="utf-8")
    res = runner.invoke(app, [a.format(tmp=tmp_path) for a in args])
    assert res.exit_code == 2, res.output
    assert message in res.output


def test_cli_encode_with_work_dir_equals_plain(tmp_path):
    src = tmp_path / "in.txt"
    src.write_text("".join(f"phrase {i}\n" for i in range(30)), encoding="utf-8")
    plain, sharded = tmp_path / "plain.npy", tmp_path / "sharded.npy"
    for out, extra in ((plain, []), (sharded, ["--work-dir", str(tmp_path / "w")])):
        res = runner.invoke(app, ["encode", str(src), "--out", str(out), "-m", "glove-50d",
                                  "--quiet", *extra])
        assert res.exit_code == 0, res.output
    np.testing.assert_allclose(np.load(sharded), np.load(plain), atol=1e-6)
    assert (tmp_path / "w" / "manifest.json").is_file()  # a given work folder is kept


def test_cli_topics_with_work_dir_equals_plain(tmp_path):
    corpus = Path(__file__).parent / "fixtures" / "corpus_small.jsonl"
    outs = {}
    for name, extra in (("plain", []), ("sharded", ["--work-dir", str(tmp_path / "w")])):
        outs[name] = tmp_path / name
        res = runner.invoke(app, ["topics", str(corpus), "-m", "glove-50d", "-k", "4",
                                  "--min-df", "3", "--no-report", "--quiet", "--out",
                                  str(outs[name]), *extra])
        assert res.exit_code == 0, res.output
    topics = {n: json.loads((p / "topics.json").read_text(encoding="utf-8"))
              for n, p in outs.items()}
    for data in topics.values():
        data.pop("timings_s")
    assert topics["sharded"] == topics["plain"]
    assert len(ShardStore(tmp_path / "w")) >= 2  # encoding and extraction shards kept


def test_mentions_job_streams_the_same_table_on_worker_processes(small_corpus, tmp_path):
    import pyarrow.parquet as pq

    from phrasekit.pipeline.mentions import write_mentions

    docs = small_corpus[:24]
    tables = {}
    for workers in (1, 2):  # this process, then two spawned worker processes
        out = tmp_path / f"w{workers}"
        counts = write_mentions(out, docs, model="glove-50d", doc_vectors=True,
                                engine=LocalEngine(workers), shard_docs=5, rows_per_file=150)
        assert counts["mentions_files"] == -(-counts["mentions"] // 150) > 1
        tables[workers] = (pq.read_table(out / "mentions"), pq.read_table(out / "documents"))
    (m1, d1), (m2, d2) = tables[1], tables[2]
    assert m1.drop(["vector"]).equals(m2.drop(["vector"]))
    np.testing.assert_allclose(np.asarray(m1["vector"].to_pylist()),
                               np.asarray(m2["vector"].to_pylist()), atol=1e-6)
    assert d1["doc_id"].to_pylist() == [d.id for d in docs] == d2["doc_id"].to_pylist()
    np.testing.assert_allclose(np.asarray(d1["vector"].to_pylist()),
                               np.asarray(d2["vector"].to_pylist()), atol=1e-6)
    plain = PhraseExtractor().mentions(docs)
    assert m1.select(["start", "end", "phrase", "surface", "source"]).to_pylist() == [
        dict(zip(("start", "end", "phrase", "surface", "source"), m, strict=True))
        for found in plain for m in found]
    with pytest.raises(TypeError, match="re-iterable"):
        write_mentions(tmp_path / "x", iter(docs), model="glove-50d", doc_vectors=True)
    with pytest.raises(RuntimeError, match="killed"):  # a worker's error reaches the caller
        run_stage(Doubler(fail_on=3), _shards(6), LocalEngine(2))


def test_parquet_parts_roll_over_and_keep_an_empty_output_readable(tmp_path):
    import pyarrow.parquet as pq

    from phrasekit.pipeline.mentions import ParquetParts

    parts = ParquetParts(tmp_path / "a", "rows", rows_per_file=3)
    for n in (2, 0, 5):
        parts.write(pa.table({"x": list(range(n))}))
    parts.close()
    assert parts.files == 3 and parts.rows == 7
    assert [pq.read_metadata(f).num_rows for f in sorted((tmp_path / "a").iterdir())] == [3, 3, 1]
    empty = ParquetParts(tmp_path / "b", "rows")
    empty.write(pa.table({"x": pa.array([], pa.int64())}))  # shards with no rows
    empty.close()
    assert pq.read_table(tmp_path / "b").schema.names == ["x"]
    with pytest.raises(ValueError, match="no table"):
        ParquetParts(tmp_path / "c", "rows").close()


def test_a_default_shard_folder_holding_user_files_is_refused_and_never_emptied(tmp_path):
    from phrasekit.cli.common import BadInputError
    from phrasekit.cli.engine import _check_work_folder

    folder = tmp_path / "out.npy.shards"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(BadInputError, match=r"notes\.txt"):
        _check_work_folder(folder, default=True)
    _check_work_folder(folder, default=False)  # a folder the user names is only added to
    store = ShardStore(folder)
    store.put("0" * 32, pa.table({"x": [1]}))
    store.remove()
    assert sorted(p.name for p in folder.iterdir()) == ["notes.txt"]
    # a killed run's folder (shards, manifest, a temp file) is the run's: reused, then removed
    killed = tmp_path / "killed.npy.shards"
    ShardStore(killed).put("a" * 32, pa.table({"x": [1]}))
    (killed / f".{'b' * 32}.parquet.123.x1y2.tmp").write_bytes(b"")
    _check_work_folder(killed, default=True)
    ShardStore(killed).remove()
    assert not killed.exists()
    own_manifest = tmp_path / "other.npy.shards"  # a user's manifest.json is the user's
    own_manifest.mkdir()
    (own_manifest / "manifest.json").write_text('{"mine": 1}', encoding="utf-8")
    with pytest.raises(BadInputError, match=r"manifest\.json"):
        _check_work_folder(own_manifest, default=True)
    with pytest.raises(BadInputError, match=r"not a phrasekit shard manifest"):
        _check_work_folder(own_manifest, default=False)  # named by --work-dir: still the user's
    with pytest.raises(ValueError, match=r"not a phrasekit shard manifest"):
        ShardStore(own_manifest)
    assert (own_manifest / "manifest.json").read_text(encoding="utf-8") == '{"mine": 1}'
    (tmp_path / "file.shards").write_text("mine", encoding="utf-8")
    with pytest.raises(BadInputError, match="is a file"):
        _check_work_folder(tmp_path / "file.shards", default=False)


def test_cli_refuses_a_work_dir_that_is_a_file(tmp_path):
    (tmp_path / "in.txt").write_text("a phrase\n", encoding="utf-8")
    (tmp_path / "w").write_text("mine", encoding="utf-8")
    res = runner.invoke(app, ["encode", str(tmp_path / "in.txt"), "--out",
                              str(tmp_path / "o.npy"), "-m", "glove-50d", "--quiet",
                              "--work-dir", str(tmp_path / "w")])
    assert res.exit_code == 2 and "is a file" in res.output, res.output
    assert (tmp_path / "w").read_text(encoding="utf-8") == "mine"
    assert not (tmp_path / "o.npy").exists()
