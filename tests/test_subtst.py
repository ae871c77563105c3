"""SubTST: sub-word LDA, frozen-feature cache, the pair model, training, save/load, CLI.

Runs on a miniature STS-B task folder (320 real train-split pairs, tests/fixtures/pairs).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

import phrasekit
from phrasekit.cli import app
from phrasekit.encoders.subtst import (
    SubTST,
    SubTSTConfig,
    TokenFeatures,
    build_model,
    pad_features,
)
from phrasekit.encoders.subword_lda import SubwordLDA
from phrasekit.eval.pairs import (
    PairExample,
    load_pair_task,
    pair_metrics,
    read_msrp,
    split_dev,
    task_kind,
)
from phrasekit.models.folders import SUBTST_FORMAT, model_folder_format
from phrasekit.training.subtst.task import (
    SubTSTTask,
    SubTSTTrainingConfig,
    feature_cache_path,
    prepare_features,
    train_subtst,
)

PAIRS = Path(__file__).parent / "fixtures" / "pairs"


@pytest.fixture(scope="module")
def stsb_small() -> dict[str, list[PairExample]]:
    return load_pair_task("stsb", PAIRS)


@pytest.fixture(scope="module")
def msrp_like(stsb_small) -> dict[str, list[PairExample]]:
    """The same pairs as a binary task: paraphrase when the gold score is >= 3."""
    return {k: [PairExample(e.a, e.b, float(e.label >= 3.0)) for e in v]
            for k, v in stsb_small.items()}


@pytest.fixture(scope="module")
def features(stsb_small) -> TokenFeatures:
    f = TokenFeatures("minilm", max_seq_length=48)
    f.add([t for v in stsb_small.values() for e in v for t in (e.a, e.b)])
    return f


@pytest.fixture(scope="module")
def lda(stsb_small, features) -> SubwordLDA:
    texts = list(dict.fromkeys(t for e in stsb_small["train"] for t in (e.a, e.b)))
    return SubwordLDA(n_topics=6, max_iter=5, seed=0).fit(texts, features.tokenizer)


def test_pair_task_loading_and_metrics(stsb_small, tmp_path):
    assert [len(stsb_small[s]) for s in ("train", "dev", "test")] == [200, 60, 60]
    assert all(0.0 <= e.label <= 5.0 for e in stsb_small["train"])
    assert task_kind("msrp") == "classification" and task_kind("stsb") == "regression"
    with pytest.raises(ValueError, match="unknown pair task"):
        task_kind("quora")
    f = tmp_path / "msrp.txt"
    f.write_text("\ufeff1\t1\t2\tA cat sat.\tThe cat sat.\n0\t3\t4\tRain today.\tSun tomorrow.\n",
                 encoding="utf-8")
    ex = read_msrp(f)
    assert [e.label for e in ex] == [1.0, 0.0] and ex[0].a == "A cat sat."
    f.write_text("2\t1\t2\ta\tb\n", encoding="utf-8")
    with pytest.raises(ValueError, match="not 0 or 1"):
        read_msrp(f)
    f.write_text("1\t1\t2\ta\n", encoding="utf-8")
    with pytest.raises(ValueError, match="expected >= 5"):
        read_msrp(f)
    m = pair_metrics("msrp", np.array([1, 0, 1, 1]), np.array([1, 0, 0, 1]))
    assert m["acc"] == 75.0 and m["f1"] == pytest.approx(80.0)
    assert pair_metrics("stsb", np.arange(5.0), np.arange(5.0) ** 2)["spearman"] == 100.0
    train, dev = split_dev([PairExample("a", "b", float(i % 2)) for i in range(100)])
    assert len(dev) == 10 and sum(e.label for e in dev) == 5 and len(train) == 90


def test_subword_lda(lda, features, tmp_path):
    tok = features.tokenizer
    table = lda.token_topics()
    assert table.shape == (len(tok), 6)
    np.testing.assert_allclose(table.sum(axis=1), 1.0, rtol=1e-5)
    # stop words, punctuation and special tokens carry no topic: uniform
    for piece in ("the", ",", "[CLS]"):
        np.testing.assert_allclose(table[tok.convert_tokens_to_ids(piece)], 1 / 6, rtol=1e-4)
    # content words seen in training are topical (not uniform)
    assert table[tok.convert_tokens_to_ids("man")].max() > 0.3
    assert len(lda.top_tokens(tok, n=5)) == 6
    lda.save(tmp_path / "lda.safetensors")
    back = SubwordLDA.load(tmp_path / "lda.safetensors")
    np.testing.assert_array_equal(back.token_topics(), table)
    with pytest.raises(ValueError, match="at least n_topics"):
        SubwordLDA(n_topics=50).fit(["a man", "a dog"], tok)
    with pytest.raises(RuntimeError, match="not fitted"):
        SubwordLDA().token_topics()


def test_config_validation():
    with pytest.raises(ValueError, match="pooling"):
        SubTSTConfig(pooling="cls")
    with pytest.raises(ValueError, match="n_topics"):
        SubTSTConfig(n_topics=1)
    with pytest.raises(ValueError, match="kind"):
        SubTSTConfig(kind="ranking")
    assert SubTSTConfig(n_topics=0, pooling="max").variant == "SBERT-max"
    assert SubTSTConfig(topic_trainable=True).variant == "SubTST-mean-train topic"
    with pytest.raises(ValueError, match="unknown SubTST config keys"):
        SubTSTConfig.from_dict({"n_topic": 3})


def test_feature_cache_roundtrip_and_top_layers(features, stsb_small, tmp_path):
    path = feature_cache_path(tmp_path, features, "stsb")
    features.save(path)
    other = TokenFeatures("minilm", max_seq_length=48)
    assert other.load(path) == len(features)
    text = stsb_small["dev"][0].a
    a, b = features.get([text])[0], other.get([text])[0]
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    lower = TokenFeatures("minilm", layer=-1, max_seq_length=48)
    with pytest.raises(ValueError, match="features for"):
        lower.load(path)
    # the copied top layer over layer-5 features reproduces the backbone's last layer
    net = build_model(SubTSTConfig(n_topics=0, trainable_layers=1, max_seq_length=48), lower)
    texts = [e.a for e in stsb_small["dev"][:4]]
    _, hidden, mask = pad_features(lower.get(texts))
    _, top, _ = pad_features(features.get(texts))
    with torch.no_grad():
        out = net.contextualize(hidden, mask)
    m = mask.unsqueeze(-1).bool()
    assert torch.allclose(out.masked_fill(~m, 0), top.masked_fill(~m, 0), atol=2e-2)
    with pytest.raises(ValueError, match="features come from layer"):
        build_model(SubTSTConfig(n_topics=0, trainable_layers=2), lower)


def test_more_topics_than_texts_is_refused_before_the_backbone_pass(stsb_small):
    """The backbone's pass over every text ran first, then LDA refused the topic count."""
    cfg = SubTSTConfig(kind="regression", n_topics=100_000_000, pooling="mean")
    with pytest.raises(ValueError, match="--topics 100000000 is more than the"):
        train_subtst("stsb", stsb_small, cfg, features=object())  # type: ignore[arg-type]


def test_train_regression_save_load(stsb_small, features, lda, tmp_path):
    cfg = SubTSTConfig(kind="regression", n_topics=6, pooling="mean", max_seq_length=48)
    model, report = train_subtst("stsb", stsb_small, cfg, SubTSTTrainingConfig(epochs=3, seed=1),
                                 features=features, lda=lda)
    curve = report["dev_curve"]
    assert len(curve) == 3 and curve[-1]["loss"] < curve[0]["loss"]
    assert 1 <= report["best_epoch"] <= 3
    assert report["dev"]["spearman"] == max(c["spearman"] for c in curve)
    # starting from frozen MiniLM features, a short fit still ranks test pairs sensibly
    assert report["test"]["spearman"] > 30.0
    emb = model.encode(["A man is playing a guitar.", "A woman slices an onion."])
    assert emb.shape == (2, 384 + 6)
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, rtol=1e-5)
    score = model.similarity("A man is playing a guitar.", "A man plays the guitar.")
    assert isinstance(score, float) and -5.0 <= score <= 5.0
    out = tmp_path / "model"
    model.save_pretrained(out)
    assert model_folder_format(out) == SUBTST_FORMAT and model_folder_format(tmp_path) is None
    back = phrasekit.load(str(out))
    assert isinstance(back, SubTST)
    pairs = [(e.a, e.b) for e in stsb_small["test"][:10]]
    np.testing.assert_allclose(back.predict(pairs), model.predict(pairs), atol=1e-5)
    assert back.training_report["best_epoch"] == report["best_epoch"]


def test_training_resumes_from_the_last_epoch(stsb_small, features, monkeypatch, tmp_path):
    """A run interrupted in its second epoch resumes from the first epoch's checkpoint and ends
    with the straight run's weights, dev curve and best epoch."""
    cfg = SubTSTConfig(kind="regression", n_topics=0, max_seq_length=48)
    training = SubTSTTrainingConfig(epochs=3, batch_size=50, seed=2)  # 4 steps an epoch

    def run(out: str) -> tuple[SubTST, dict]:
        return train_subtst("stsb", stsb_small, cfg, training, features=features,
                            out_dir=tmp_path / out)

    straight, report = run("a")
    step_loss = SubTSTTask.step_loss

    def crash_in_epoch_two(self, step, rng):
        if step == 6:
            raise KeyboardInterrupt
        return step_loss(self, step, rng)

    monkeypatch.setattr(SubTSTTask, "step_loss", crash_in_epoch_two)
    with pytest.raises(KeyboardInterrupt):
        run("b")
    monkeypatch.undo()
    resumed, again = run("b")
    assert [c["epoch"] for c in again["dev_curve"]] == [1, 2, 3]
    assert again["dev_curve"] == report["dev_curve"] and again["best_epoch"] == report["best_epoch"]
    theirs = resumed.model.state_dict()
    for name, value in straight.model.state_dict().items():
        assert torch.equal(value, theirs[name]), name


def test_train_classification_trainable_topics(msrp_like, features, lda, tmp_path):
    cfg = SubTSTConfig(kind="classification", n_topics=6, topic_trainable=True, pooling="max",
                       max_seq_length=48)
    before = lda.token_topics().copy()
    model, report = train_subtst("msrp", msrp_like, cfg, SubTSTTrainingConfig(epochs=2),
                                 features=features, lda=lda)
    assert set(report["test"]) == {"acc", "f1"}
    assert model.model.topics.weight.requires_grad
    assert not np.allclose(model.model.topics.weight.detach().numpy(), before)
    np.testing.assert_array_equal(lda.token_topics(), before)  # the LDA itself is untouched
    labels = model.predict([(e.a, e.b) for e in msrp_like["test"][:8]])
    assert set(labels.tolist()) <= {0, 1}
    sim = model.similarity(["A dog runs.", "It rains."], ["A dog is running."])
    assert sim.shape == (2, 1) and np.all((sim >= 0) & (sim <= 1))
    with pytest.raises(TypeError, match="pairs\\[0\\]"):
        model.predict(["not a pair"])
    with pytest.raises(ValueError, match="empty"):
        model.predict([("", "b")])
    model.save_pretrained(tmp_path / "m")
    back = SubTST.from_pretrained(tmp_path / "m")
    assert torch.equal(back.model.topics.weight, model.model.topics.weight)
    with pytest.raises(ValueError, match="task msrp needs"):
        train_subtst("msrp", msrp_like, SubTSTConfig(kind="regression"), features=features)


def test_cli_train_and_score(tmp_path):
    runner = CliRunner()
    out = tmp_path / "baseline"
    res = runner.invoke(app, ["train", "subtst", "--task", "stsb", "--topics", "0",
                              "--epochs", "1", "--data-dir", str(PAIRS), "--out", str(out),
                              "--cache-dir", str(tmp_path / "cache"), "--quiet"])
    assert res.exit_code == 0, res.output
    assert "SBERT-mean on stsb" in res.output and (out / "report.json").is_file()
    assert list((tmp_path / "cache").glob("features-stsb-*.safetensors"))
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("A man plays a guitar.\tA man is playing guitar.\nA cat.\tThe stock fell.\n",
                     encoding="utf-8")
    res = runner.invoke(app, ["pairs", "--model", str(out), str(pairs), "--quiet"])
    assert res.exit_code == 0, res.output
    lines = [line.split("\t") for line in res.output.strip().splitlines()]
    assert len(lines) == 2 and float(lines[0][2]) > float(lines[1][2])
    res = runner.invoke(app, ["pairs", "--model", str(out), str(pairs), "--out",
                              str(tmp_path / "scored.tsv"), "--quiet"])
    assert res.exit_code == 0, res.output
    scored = (tmp_path / "scored.tsv").read_text(encoding="utf-8").splitlines()
    assert [line.split("\t") for line in scored] == lines
    pairs.write_text("only one column\n", encoding="utf-8")
    res = runner.invoke(app, ["pairs", "--model", str(out), str(pairs)])
    assert res.exit_code == 2 and "two non-empty" in res.output
    pairs.write_text("a\tb\nc\td\textra\n", encoding="utf-8")  # a third field is refused
    res = runner.invoke(app, ["pairs", "--model", str(out), str(pairs)])
    assert res.exit_code == 2 and "pairs.tsv:2:" in res.output and "3 field" in res.output
    pairs.write_text("a\tb\n\nc\td\n", encoding="utf-8")  # a blank line inside: refused
    res = runner.invoke(app, ["pairs", "--model", str(out), str(pairs)])
    assert res.exit_code == 2 and "pairs.tsv:2: blank line" in res.output
    pairs.write_text("a\tb\nc\td\n\n", encoding="utf-8")  # at the end: ignored
    res = runner.invoke(app, ["pairs", "--model", str(out), str(pairs), "--quiet"])
    assert res.exit_code == 0 and len(res.output.strip().splitlines()) == 2, res.output
    pairs.write_bytes(b"a\tb\ncaf\xe9\tx\n")
    res = runner.invoke(app, ["pairs", "--model", str(out), str(pairs)])
    assert res.exit_code == 2 and "pairs.tsv:2: not valid UTF-8" in res.output
    pairs.write_text("", encoding="utf-8")
    res = runner.invoke(app, ["pairs", "--model", str(out), str(pairs), "--out",
                              str(tmp_path / "empty.tsv")])
    assert res.exit_code == 2 and "no sentence pairs" in res.output
    assert not (tmp_path / "empty.tsv").exists()
    res = runner.invoke(app, ["train", "subtst", "--task", "quora", "--out", str(tmp_path / "x"),
                              "--data-dir", str(PAIRS)])
    assert res.exit_code == 2 and "unknown pair task" in res.output


def test_cli_topics_with_lda_corpus(tmp_path):
    out = tmp_path / "subtst"
    corpus = Path(__file__).parent / "fixtures" / "corpus_small.jsonl"
    res = CliRunner().invoke(app, [
        "train", "subtst", "--task", "stsb", "--topics", "4", "--pooling", "max",
        "--train-topics", "--epochs", "1", "--data-dir", str(PAIRS), "--out", str(out),
        "--lda-corpus", str(corpus), "--quiet"])
    assert res.exit_code == 0, res.output
    assert "SubTST-max-train topic on stsb" in res.output
    model = phrasekit.load(str(out))
    assert model.config.n_topics == 4 and model.lda is not None
    # the corpus's words took part in the topics: a physics term is topical, not uniform
    table = model.lda.token_topics()
    assert table[model.features.tokenizer.convert_tokens_to_ids("quantum")].max() > 0.5


def test_prepare_features_reuses_cache(stsb_small, tmp_path):
    cfg = SubTSTConfig(kind="regression", n_topics=0, max_seq_length=48)
    small = {k: v[:5] for k, v in stsb_small.items()}
    _, first = prepare_features("stsb", small, cfg, tmp_path)
    again, second = prepare_features("stsb", small, cfg, tmp_path)
    assert first > 0 and second < first
    assert len(again) == len({t for v in small.values() for e in v for t in (e.a, e.b)})



def test_prepare_features_rebuilds_its_damaged_cache_and_leaves_other_files(stsb_small,
                                                                             tmp_path, caplog):
    from phrasekit.training.subtst.task import feature_cache_path

    cfg = SubTSTConfig(kind="regression", n_topics=0, max_seq_length=48)
    small = {k: v[:3] for k, v in stsb_small.items()}
    features, _ = prepare_features("stsb", small, cfg, tmp_path)
    path = feature_cache_path(tmp_path, features, "stsb")
    for damage in (lambda b: b[:-9] + bytes([b[-9] ^ 0xFF]) + b[-8:], lambda b: b""):
        path.write_bytes(damage(path.read_bytes()))
        again, seconds = prepare_features("stsb", small, cfg, tmp_path)
        assert seconds > 0 and len(again) == len(features) and str(path) in caplog.text
    path.write_bytes(b"my own notes, not a cache")
    with pytest.raises(ValueError, match="unreadable feature cache"):
        prepare_features("stsb", small, cfg, tmp_path)
    assert path.read_bytes() == b"my own notes, not a cache"


@pytest.mark.shared
def test_real_pair_tasks(shared_data):
    msrp = load_pair_task("msrp", shared_data)
    assert [len(msrp[s]) for s in ("train", "dev", "test")] == [3669, 407, 1725]
    assert not {(e.a, e.b) for e in msrp["dev"]} & {(e.a, e.b) for e in msrp["train"]}
    stsb = load_pair_task("stsb", shared_data)
    assert [len(stsb[s]) for s in ("train", "dev", "test")] == [5749, 1500, 1379]
