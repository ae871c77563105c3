"""The phrase benchmark (phrasekit.eval): protocols checked by hand, on tiny real fixtures and
(marked ``shared``) in quick mode on the real shared data."""

from __future__ import annotations

import csv
import json
import logging
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

import phrasekit
from phrasekit.encoders import CharNgramEncoder
from phrasekit.encoders.base import Encoder
from phrasekit.eval import (
    AVG7,
    TASKS,
    BenchmarkResult,
    ModelResult,
    TaskResult,
    avg7,
    embed_unique,
    format_table,
    load_report,
    parse_tasks,
    run_benchmark,
)
from phrasekit.eval.autofj import AutoFJTask, quick_tables, table_dirs
from phrasekit.eval.clustering import EntityClusteringTask, cluster_accuracy
from phrasekit.eval.ppdb import PPDBTask, ProbeConfig, split_bounds
from phrasekit.eval.stsb import load_stsb
from phrasekit.eval.turney import TurneyTask, load_turney, tie_aware_accuracy
from phrasekit.eval.yago import YagoProxyTask

FIX = Path(__file__).parent / "fixtures" / "eval"


class TableEncoder(Encoder):
    """Hand-set vectors; strings not in the table get ``default``. Records what it encoded."""

    def __init__(self, vectors: dict[str, Sequence[float]], default: Sequence[float]) -> None:
        self.name = "table"
        self.dim = len(default)
        self.vectors = {k: np.asarray(v, dtype=np.float32) for k, v in vectors.items()}
        self.default = np.asarray(default, dtype=np.float32)
        self.seen: list[str] = []

    def _encode_batch(self, texts: Sequence[str]) -> np.ndarray:
        self.seen.extend(texts)
        return np.stack([self.vectors.get(t, self.default) for t in texts])


class RecordingEncoder(Encoder):
    """Wraps an encoder and records every string it is asked to embed."""

    def __init__(self, inner: Encoder) -> None:
        self.inner, self.name, self.dim = inner, inner.name, inner.dim
        self.seen: list[str] = []

    def _encode_batch(self, texts: Sequence[str]) -> np.ndarray:
        self.seen.extend(texts)
        return self.inner.encode(list(texts))


@pytest.fixture(scope="module")
def string_encoder() -> Encoder:
    return CharNgramEncoder()


def _write_csv(path: Path, header: list[str], rows: list[list[str]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)


# --- helpers -------------------------------------------------------------------------------


def test_embed_unique_encodes_each_string_once_and_keeps_alignment():
    enc = TableEncoder({"a": [1, 0], "b": [0, 1], "c": [1, 1]}, default=[1, 0])
    strings = ["b", "a", "b", "c", "a", "b"]
    out = embed_unique(enc, strings)
    assert sorted(enc.seen) == ["a", "b", "c"]
    expected = enc.encode(strings)
    np.testing.assert_allclose(out, expected, atol=1e-6)
    assert embed_unique(enc, []).shape == (0, 2)


def test_split_bounds_match_the_readmes():
    assert split_bounds(23364) == (16355, 19860)
    assert split_bounds(15532) == (10873, 13203)
    assert split_bounds(60) == (42, 51)
    assert split_bounds(10) == (7, 9)  # exact integers: no float round-up


def test_cluster_accuracy_uses_the_best_one_to_one_mapping():
    assert cluster_accuracy(np.array([0, 0, 1, 1, 2]), np.array([2, 2, 0, 0, 0])) == 0.8
    labels = np.array(["PER", "PER", "LOC", "LOC", "ORG", "ORG"])
    assert cluster_accuracy(labels, np.array([5, 5, 3, 3, 9, 9])) == 1.0
    # more clusters than classes: the extra cluster maps to nothing
    assert cluster_accuracy(np.array([0, 0, 0, 1]), np.array([0, 1, 2, 2])) == 0.5


def test_tie_aware_accuracy_splits_credit():
    scores = np.array([[1.0, 0.5, 1.0], [0.9, 0.1, 0.2], [0.1, 0.9, 0.2]])
    assert tie_aware_accuracy(scores) == pytest.approx((0.5 + 1 + 0) / 3)


# --- protocols checked by hand ---------------------------------------------------------------


def test_turney5_and_turney10_by_hand(tmp_path):
    lines = [
        "a b | good | a | b | d1 | d2 | d3 | d4",  # right in both
        "c d | right | c | d | e1 | e2 | e3 | e4",  # a distractor wins: wrong in both
        "f g | ok | f | g | g1 | g2 | g3 | g4",  # order-blind: tie with "g f" -> 1/2 in turney10
        "h i | yes | h | i | h1 | h2 | h3 | h4",  # reversed bigram wins: wrong in turney10 only
    ]
    (tmp_path / "turney2012").mkdir()
    (tmp_path / "turney2012" / "turney.txt").write_text("\n".join(lines) + "\n")
    enc = TableEncoder(
        {
            "a b": [1, 0, 0], "b a": [0, 1, 0], "good": [1, 0, 0],
            "c d": [1, 0, 0], "right": [0.6, 0.8, 0], "e1": [0.9, 0.1, 0],
            "f g": [1, 0, 0], "g f": [1, 0, 0], "ok": [1, 0, 0],
            "h i": [1, 0, 0], "i h": [0.8, 0.6, 0], "yes": [0.8, 0.6, 0],
        },
        default=[0, 0, 1],
    )
    assert TurneyTask().run(enc, tmp_path) == {"acc": 75.0}
    assert TurneyTask(with_reversed=True).run(enc, tmp_path) == {"acc": 37.5}
    # constituents (fields 3-4) are never scored
    assert "a" not in enc.seen and "h" not in enc.seen


def test_autofj_by_hand_with_na_strings_and_empty_titles(tmp_path, caplog):
    root = tmp_path / "autofj"
    _write_csv(root / "T1" / "left.csv", ["id", "title"],
               [["0", "NA"], ["1", "None"], ["2", "alpha"], ["3", "beta"], ["4", ""]])
    _write_csv(root / "T1" / "right.csv", ["id", "title"],
               [["0", "N/A"], ["1", "nothing"], ["2", "alfa"], ["3", "bet"], ["4", " "]])
    _write_csv(root / "T1" / "gt.csv", ["id_l", "title_l", "id_r", "title_r"],
               [["0", "NA", "0", "N/A"], ["1", "None", "1", "nothing"],
                ["2", "alpha", "2", "alfa"], ["3", "beta", "3", "bet"], ["2", "alpha", "4", " "]])
    _write_csv(root / "T2" / "left.csv", ["id", "title"], [["0", "x"], ["1", "y"]])
    _write_csv(root / "T2" / "right.csv", ["id", "title"], [["0", "xx"]])
    _write_csv(root / "T2" / "gt.csv", ["id_l", "title_l", "id_r", "title_r"],
               [["0", "x", "0", "xx"]])
    enc = TableEncoder(
        {
            "NA": [1, 0, 0, 0], "N/A": [1, 0, 0, 0], "None": [0, 1, 0, 0],
            "nothing": [0, 1, 0, 0], "alpha": [0, 0, 1, 0], "alfa": [0, 0, 1, 0],
            "beta": [0, 0, 0, 1], "bet": [0, 0, 1, 0.1],  # closer to alpha: wrong
            "x": [1, 0, 0, 0], "y": [0, 1, 0, 0], "xx": [1, 0.1, 0, 0],
        },
        default=[1, 1, 1, 1],
    )
    with caplog.at_level(logging.WARNING, logger="phrasekit.eval.autofj"):
        metrics = AutoFJTask().run(enc, tmp_path)
    assert metrics == {"acc": 87.5, "micro_acc": 80.0}  # (3/4 + 1/1) / 2 and 4/5
    assert "dropped 1 left rows" in caplog.text and "skipped 1 gt rows" in caplog.text


def test_yago_proxy_by_hand(tmp_path):
    (tmp_path / "yago_retrieval").mkdir()
    (tmp_path / "yago_retrieval" / "yago_test_samples.tsv").write_text(
        'q1\tL1\nq2\tL2\n"q3\tL1\n'
    )
    enc = TableEncoder(
        {"L1": [1, 0], "L2": [0, 1], "q1": [1, 0.1], "q2": [1, 0.2], '"q3': [0.9, 0.3]},
        default=[1, 1],
    )
    assert YagoProxyTask().run(enc, tmp_path)["acc"] == pytest.approx(200 / 3, abs=1e-3)


def test_entity_clustering_by_hand(tmp_path):
    rows = ["entity\tlabel"]
    vectors = {}
    for label, vec in (("PER", [1, 0, 0]), ("LOC", [0, 1, 0]), ("ORG", [0, 0, 1])):
        for i in range(6):
            rows.append(f"{label.lower()}{i}\t{label}")
            vectors[f"{label.lower()}{i}"] = [v + 0.01 * i for v in vec]
    (tmp_path / "conll2003").mkdir()
    (tmp_path / "conll2003" / "test_entity_mentions.tsv").write_text("\n".join(rows) + "\n")
    enc = TableEncoder(vectors, default=[1, 1, 1])
    metrics = EntityClusteringTask("conll2003").run(enc, tmp_path)
    assert metrics["nmi"] == pytest.approx(100.0) and metrics["acc"] == pytest.approx(100.0)
    assert metrics["nmi_std"] == 0.0


def test_ppdb_probe_learns_a_linearly_decodable_label(tmp_path):
    items, vectors = [], {}
    rng = np.random.default_rng(0)
    for i in range(200):
        label = "pos" if i % 2 == 0 else "neg"
        p1, p2 = f"left {i}", f"right {i}"
        vectors[p1] = rng.normal(size=8).tolist()
        vectors[p2] = [5.0 if label == "pos" else -5.0, *rng.normal(size=7).tolist()]
        items.append([p1, p2, label, None])
    (tmp_path / "ppdb").mkdir()
    (tmp_path / "ppdb" / "ppdb.json").write_text(json.dumps(items))
    enc = TableEncoder(vectors, default=[0] * 8)
    task = PPDBTask("ppdb", ProbeConfig(lr=1e-2, seeds=(0, 1)))
    metrics = task.run(enc, tmp_path)
    assert metrics["acc"] == 100.0 and metrics["acc_std"] == 0.0
    assert task.run(enc, tmp_path) == metrics  # seeded: identical on a rerun


# --- loaders on the real-format fixtures --------------------------------------------------


def test_loaders_read_the_fixture_formats():
    items = load_turney(FIX)
    assert len(items) == 30 and items[0].bigram == "double star"
    assert items[0].reversed_bigram == "star double"
    assert items[0].candidates == ("binary", "dual", "lumen", "neutralism", "keratoplasty")
    sts = load_stsb(FIX / "stsb" / "sts-test.csv")
    assert len(sts) == 26 and all(0 <= s <= 5 for _, _, s in sts)
    assert any('"When in doubt, throw it out!' in b for _, b, _ in sts)  # quotes kept literally
    assert [p.name for p in quick_tables(table_dirs(FIX))] == [
        "RugbyLeague", "Galaxy", "TennisTournament"
    ]


# --- every task on the fixtures with real encoders --------------------------------------------


@pytest.mark.parametrize("task_name", list(TASKS))
def test_every_task_runs_on_fixtures(task_name, string_encoder, glove):
    task = TASKS[task_name]
    for enc in (string_encoder, glove):
        metrics = task.run(enc, FIX)
        assert task.main_metric in metrics
        for key, value in metrics.items():
            assert isinstance(value, float) and math.isfinite(value), (key, value)
            assert -100.0 <= value <= 100.0, (key, value)
        assert task.run(enc, FIX) == metrics  # deterministic
    assert math.isfinite(task.run(string_encoder, FIX, quick=True)[task.main_metric])


def test_run_benchmark_table_and_json(tmp_path, string_encoder, glove):
    out = tmp_path / "runs" / "eval.json"
    result = run_benchmark([string_encoder, glove], data_dir=FIX, json_path=out,
                           show_progress=False)
    assert [m.model for m in result.models] == ["string", "glove-50d"]
    report = json.loads(out.read_text())
    assert report["tasks"] == list(TASKS) and report["quick"] is False
    assert report["avg7_tasks"] == list(AVG7)
    model = report["models"][0]
    assert model["model"] == "string" and model["dim"] == 4096
    assert set(model["tasks"]) == set(TASKS)
    for name, entry in model["tasks"].items():
        assert entry["seconds"] >= 0
        assert TASKS[name].main_metric in entry["metrics"]
    summary = model["summary"]
    assert summary["conll2003"] == model["tasks"]["conll2003"]["metrics"]["nmi"]
    assert summary["conll2003_acc"] == model["tasks"]["conll2003"]["metrics"]["acc"]
    expected = sum(model["tasks"][t]["metrics"][TASKS[t].main_metric] for t in AVG7) / 7
    assert summary["avg7"] == pytest.approx(expected)

    table = format_table(result, timings=True)
    lines = table.splitlines()
    assert [c.strip() for c in lines[0].split("|")[1:-1]] == [
        "model", "bird", "turney", "turney10", "ppdb", "ppdb_filtered", "conll2003 (NMI)",
        "bc5cdr (NMI)", "autofj", "autofj_join", "autofj_join_cosine", "yago_proxy", "stsb",
        "avg7",
    ]
    assert "conll2003 (ACC)" in table and "seconds" in table
    assert f"{summary['avg7']:.1f}" in lines[2]
    assert format_table(load_report(out)) == format_table(result)  # the report round-trips


def test_avg7_and_table_with_missing_tasks():
    scores = {"ppdb": 90.0, "ppdb_filtered": 60.0, "turney": 50.0, "bird": 70.0,
              "conll2003": 40.0, "bc5cdr": 50.0, "autofj": 70.0}
    assert avg7(scores) == pytest.approx(430 / 7)
    assert avg7({**scores, "autofj": math.nan}) is None
    partial = {k: v for k, v in scores.items() if k != "bc5cdr"}
    assert avg7(partial) is None
    metrics = {t: {TASKS[t].main_metric: v, "acc": v} for t, v in partial.items()}
    model = ModelResult("m", 4, tasks={t: TaskResult(t, metrics[t], 1.0) for t in partial})
    table = format_table(BenchmarkResult([model], list(partial), quick=True, data_dir="x"))
    row = [c.strip() for c in table.splitlines()[2].split("|")[1:-1]]
    assert row == ["m", "70.0", "50.0", "-", "90.0", "60.0", "40.0", "-", "70.0", "-", "-", "-",
                   "-", "-"]


def test_unknown_task_is_rejected_before_any_model_loads(monkeypatch):
    def boom(*args, **kwargs):
        raise AssertionError("a model was loaded")

    monkeypatch.setattr(phrasekit.registry, "load", boom)
    with pytest.raises(ValueError, match="known tasks: bird, turney"):
        run_benchmark(["minilm"], tasks=["bird", "no-such-task"], data_dir=FIX)
    with pytest.raises(ValueError, match="known tasks"):
        parse_tasks("bird,nope")
    assert parse_tasks("bird, turney10,bird") == ["bird", "turney10"]
    assert parse_tasks(None) == list(TASKS) == parse_tasks("")
    with pytest.raises(ValueError, match="unknown model"):
        run_benchmark(["no-such-model"], tasks=["bird"], data_dir=FIX)


def test_missing_data_names_the_file_and_the_setting(tmp_path, string_encoder, monkeypatch):
    (tmp_path / "bird").mkdir()
    with pytest.raises(FileNotFoundError, match=r"bird\.tsv.*PHRASEKIT_DATA"):
        run_benchmark([string_encoder], tasks=["bird"], data_dir=tmp_path)
    with pytest.raises(FileNotFoundError, match="PHRASEKIT_SHARED"):
        run_benchmark([string_encoder], tasks=["autofj"], data_dir=tmp_path)
    with pytest.raises(FileNotFoundError, match="PHRASEKIT_DATA"):
        run_benchmark([string_encoder], tasks=["bird"], data_dir=tmp_path / "absent")
    monkeypatch.setenv("PHRASEKIT_DATA", str(tmp_path / "absent"))
    with pytest.raises(FileNotFoundError, match="PHRASEKIT_DATA"):
        run_benchmark([string_encoder], tasks=["bird"])
    monkeypatch.setenv("PHRASEKIT_DATA", str(FIX))  # data_dir=None follows the setting
    result = run_benchmark(string_encoder, tasks="bird", show_progress=False)
    assert result.data_dir == str(FIX) and "pearson" in result.models[0].tasks["bird"].metrics


def test_run_options_are_validated_and_threads_restored(tmp_path, string_encoder):
    import torch

    before = torch.get_num_threads()
    result = run_benchmark([string_encoder], tasks="bird", data_dir=FIX, num_threads=1,
                           show_progress=False)
    assert torch.get_num_threads() == before and result.num_threads == 1
    with pytest.raises(ValueError, match="num_threads"):
        run_benchmark([string_encoder], tasks="bird", data_dir=FIX, num_threads=0)
    with pytest.raises(ValueError, match="directory"):
        run_benchmark([string_encoder], tasks="bird", data_dir=FIX, json_path=tmp_path)


# --- the real shared data -------------------------------------------------------------------


@pytest.mark.shared
def test_quick_benchmark_on_shared_data_with_minilm(shared_data, minilm, tmp_path):
    result = run_benchmark([minilm], data_dir=shared_data, quick=True, show_progress=False,
                           json_path=tmp_path / "quick.json", num_threads=1)
    s = result.models[0].summary()
    assert s["avg7"] is not None
    assert s["bird"] > 55 and s["stsb"] > 75 and s["yago_proxy"] > 80
    assert s["turney"] > 40 and s["turney10"] < s["turney"]
    assert all(s[t] is not None for t in TASKS)
    assert json.loads((tmp_path / "quick.json").read_text())["quick"] is True


# --- typo robustness (noise) -----------------------------------------------------------------


def test_perturb_is_seeded_per_string_and_matches_typo_noise():
    import random

    from phrasekit.eval.base import NOISE_SEED, TYPO_P, perturb
    from phrasekit.phrases.augment import typo_noise

    strings = ["Sagittarius Dwarf Spheroidal Galaxy", "access information", "of",
               "access information"]
    noisy = perturb(strings, "typo")
    assert noisy[0] != strings[0] and noisy[2] == "of"
    assert noisy[1] == noisy[3]  # same string, same noise: independent of position
    assert perturb(strings[::-1], "typo") == noisy[::-1]
    assert perturb(strings, "typo", seed=NOISE_SEED + 1) != noisy
    expected = typo_noise(strings[0], random.Random(f"{NOISE_SEED}\x00typo\x00{strings[0]}"),
                          p=TYPO_P)
    assert noisy[0] == expected
    assert perturb(strings, None) == strings
    with pytest.raises(ValueError, match="known noise kinds: typo"):
        perturb(strings, "blur")


def test_noisy_tasks_are_named_and_validated():
    from phrasekit.eval.bird import BirdTask

    assert BirdTask(noise="typo").name == "bird+typo" and BirdTask().name == "bird"
    assert AutoFJTask(noise="typo").name == "autofj+typo"
    assert TASKS["bird"].with_noise("typo").name == "bird+typo"
    assert TASKS["bird"].name == "bird" and TASKS["bird"].noise is None  # registry untouched
    with pytest.raises(ValueError, match="does not support noise"):
        TASKS["turney"].with_noise("typo")
    with pytest.raises(ValueError, match="unknown noise"):
        BirdTask(noise="blur")


def test_bird_noise_perturbs_term2_only(string_encoder):
    from phrasekit.eval.bird import BirdTask, load_bird

    triples = load_bird(FIX)
    enc = RecordingEncoder(string_encoder)
    BirdTask(noise="typo").run(enc, FIX)
    seen = set(enc.seen)
    assert {t[0] for t in triples} <= seen  # term1 clean
    term2 = {t[1] for t in triples}
    assert 0 < len(term2 - seen) < len(term2)  # some (not all) term2 perturbed
    clean = BirdTask().run(string_encoder, FIX)
    noisy = BirdTask(noise="typo").run(string_encoder, FIX)
    assert noisy == BirdTask(noise="typo").run(string_encoder, FIX)  # same seed, same strings
    assert noisy["pearson"] != clean["pearson"]


def test_autofj_noise_perturbs_right_titles_only():
    from phrasekit.eval.autofj import load_table

    enc = TableEncoder({}, default=[1.0, 0.0])  # constant vectors: only what is encoded matters
    AutoFJTask(noise="typo").run(enc, FIX)
    seen = set(enc.seen)
    lefts, rights = set(), set()
    for folder in table_dirs(FIX):
        table = load_table(folder)
        lefts |= set(table.left)
        rights |= {q[0] for q in table.queries}
    assert lefts <= seen  # the left "dictionary" stays clean
    assert rights - lefts - seen  # some right titles were only seen perturbed
    quick = TableEncoder({}, default=[1.0, 0.0])
    AutoFJTask(noise="typo").run(quick, FIX, quick=True)
    assert set(quick.seen) - lefts  # perturbed queries in quick mode too
    assert set(quick.seen) <= seen  # quick mode perturbs its queries the same way


def test_run_benchmark_with_noise(tmp_path):
    enc = phrasekit.load("string")
    out = tmp_path / "noisy.json"
    result = run_benchmark([enc], tasks="bird,autofj", data_dir=FIX, noise="typo",
                           json_path=out, show_progress=False)
    assert result.tasks == ["bird+typo", "autofj+typo"] and result.noise == "typo"
    task_results = result.models[0].tasks
    assert task_results["bird+typo"].main == task_results["bird+typo"].metrics["pearson"]
    report = json.loads(out.read_text())
    assert report["noise"] == "typo"
    assert report["main_metrics"] == {"bird+typo": "pearson", "autofj+typo": "acc"}
    table = format_table(result)
    header = [c.strip() for c in table.splitlines()[0].split("|")[1:-1]]
    assert header[:3] == ["model", "bird", "bird+typo"]
    assert header.index("autofj+typo") == header.index("autofj") + 1
    row = [c.strip() for c in table.splitlines()[2].split("|")[1:-1]]
    assert row[1] == "-" and row[2] == f"{task_results['bird+typo'].main:.1f}"
    assert format_table(load_report(out)) == table  # round-trips
    # the default tasks with noise are the noise-capable ones
    again = run_benchmark([enc], data_dir=FIX, noise="typo", show_progress=False)
    assert again.tasks == ["bird+typo", "autofj+typo", "autofj_join+typo",
                           "autofj_join_cosine+typo"]
    scores = again.models[0].main_scores()
    assert {t: scores[t] for t in result.tasks} == result.models[0].main_scores()  # seeded


def test_noise_with_unsupported_task_is_rejected_before_loading(monkeypatch):
    def boom(*args, **kwargs):
        raise AssertionError("a model was loaded")

    monkeypatch.setattr(phrasekit.registry, "load", boom)
    with pytest.raises(ValueError, match="tasks with noise support: bird, autofj"):
        run_benchmark(["minilm"], tasks="bird,turney", data_dir=FIX, noise="typo")
    with pytest.raises(ValueError, match="unknown noise"):
        run_benchmark(["minilm"], tasks="bird", data_dir=FIX, noise="blur")


def test_cli_eval_noise(tmp_path):
    from typer.testing import CliRunner

    from phrasekit.cli import app

    runner = CliRunner()
    res = runner.invoke(app, ["eval", "--model", "string", "--tasks", "bird", "--noise", "typo",
                              "--data-dir", str(FIX), "--quiet", "--no-timings"])
    assert res.exit_code == 0, res.output
    assert "bird+typo" in res.output.splitlines()[0]
    res = runner.invoke(app, ["eval", "--model", "string", "--tasks", "stsb", "--noise", "typo",
                              "--data-dir", str(FIX), "--quiet"])
    assert res.exit_code == 2 and "noise support" in res.output


def test_dev_scorer_reads_dev_splits_and_clusters_with_the_test_protocol(tmp_path):
    import shutil

    from phrasekit.eval.dev import DevScorer

    words = {"PER": ["john smith", "mary jones", "paul brown"],
             "LOC": ["new york", "paris", "berlin"], "ORG": ["acme corp", "ibm", "the un"],
             "Chemical": ["aspirin", "caffeine", "ethanol"],
             "Disease": ["asthma", "heart failure", "diabetes"]}
    for name, types in (("conll2003", ("PER", "LOC", "ORG", "MISC")),
                        ("bc5cdr", ("Chemical", "Disease"))):
        lines = []
        for label in types:
            for w in words.get(label, ["euro"]):
                toks = w.split()
                lines.append(json.dumps({"sentences": [["in", *toks, "."]],
                                         "ner": [[[1, len(toks), label]]]}))
        (tmp_path / name).mkdir()
        (tmp_path / name / "dev.json").write_text("\n".join(lines) + "\n")
    for name in ("ppdb", "ppdb_filtered"):
        shutil.copytree(FIX / name, tmp_path / name)
    scorer = DevScorer(tmp_path, kmeans_seeds=(0, 1))
    assert len(scorer.mentions["conll2003"][0]) == 9  # MISC is not a test-set type
    scores = scorer(phrasekit.load("string"))
    assert set(scores) == {"conll2003_dev", "bc5cdr_dev", "ppdb_dev", "ppdb_filtered_dev",
                           "score"}
    assert all(0 <= v <= 100 for v in scores.values())
    assert scores["score"] == round(float(np.mean([v for k, v in scores.items()
                                                   if k != "score"])), 2)
    assert scorer(phrasekit.load("string")) == scores  # deterministic


def test_a_bad_benchmark_file_is_named(tmp_path) -> None:
    """Benchmark data of the user's (``--data-dir``): bytes that are not UTF-8, no rows, or
    a score that is not a number are named with the file (and line)."""
    import shutil

    from phrasekit.eval.bird import load_bird

    shutil.copytree(FIX, tmp_path / "d")
    path = tmp_path / "d" / "bird" / "bird.tsv"
    good = path.read_bytes()
    header, first = good.split(b"\n")[:2]
    cells = first.split(b"\t")
    cells[6] = b"abc"
    nan, blank = list(cells), list(cells)
    nan[6], blank[1] = b"nan", b" "  # a NaN score was scored as a missing row (exit 0)
    for content, fragment in ((good + b"caf\xe9\n", r"bird\.tsv:\d+: not valid UTF-8"),
                              (header + b"\n", r"bird\.tsv: no data rows"),
                              (header + b"\n" + b"\t".join(cells) + b"\n",
                               r"bird\.tsv:2: 'abc' is not a finite number"),
                              (header + b"\n" + b"\t".join(nan) + b"\n",
                               r"bird\.tsv:2: 'nan' is not a finite number"),
                              (header + b"\n" + b"\t".join(blank) + b"\n",
                               r"bird\.tsv:2: field 'term1' is empty")):
        path.write_bytes(content)
        with pytest.raises(ValueError, match=fragment):
            load_bird(tmp_path / "d")
    unused = first.split(b"\t")
    unused[4] = unused[5] = b""  # source and relation: columns the task does not read
    path.write_bytes(header + b"\n" + b"\t".join(unused) + b"\n" + good.split(b"\n", 2)[2])
    assert load_bird(tmp_path / "d")[0][:2] == (unused[1].decode(), unused[2].decode())
