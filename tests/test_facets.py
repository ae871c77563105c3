"""Multi-facet codebook embeddings: data building, the NNSC loss, training, save/load, scores.

Real data throughout: the 80 arXiv abstracts of ``fixtures/corpus_small.jsonl`` (phrases found
by the packaged spaCy model), and the packaged GloVe 6B 50d as the word space.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

import phrasekit
from phrasekit.encoders.facets.encoder import FacetEncoder, format_facet_table
from phrasekit.encoders.facets.loss import (
    estimate_coefficients,
    nnsc_loss,
    objective,
    reconstruction_error,
)
from phrasekit.encoders.facets.model import (
    FacetModel,
    FacetModelConfig,
    load_facet_model,
    make_batch,
)
from phrasekit.encoders.facets.scores import greedy_summary, sc_distance, summary_objective
from phrasekit.encoders.facets.words import load_word_space
from phrasekit.text import tokenize
from phrasekit.training.facets.data import (
    CorpusSpec,
    FacetDataConfig,
    FacetDataset,
    build_facet_dataset,
    corpus_specs,
)
from phrasekit.training.facets.examples import phrase_examples, sentence_examples, split_sentences
from phrasekit.training.facets.task import (
    FacetTask,
    FacetTrainingConfig,
    epoch_batches,
    train_facets,
)

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="module")
def ws():
    return load_word_space()


@pytest.fixture(scope="module")
def corpora(tmp_path_factory) -> Path:
    """A corpora folder holding the fixture corpus as ``arxiv80``."""
    root = tmp_path_factory.mktemp("corpora")
    (root / "arxiv80").mkdir()
    shutil.copy(FIXTURES / "corpus_small.jsonl", root / "arxiv80" / "documents.jsonl")
    return root


def _data_cfg(corpora: Path, out: Path, granularity: str, **kw) -> FacetDataConfig:
    return FacetDataConfig(out_dir=str(out), granularity=granularity,
                           corpora=(CorpusSpec("arxiv80"),), corpora_dir=str(corpora),
                           phrase_cache_dirs=(), val_fraction=0.1, show_progress=False,
                           exclude_eval_sentences=False, **kw)


@pytest.fixture(scope="module")
def phrase_data(corpora, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("phrase_data")
    build_facet_dataset(_data_cfg(corpora, out, "phrase", max_per_phrase=20))
    return out


@pytest.fixture(scope="module")
def sentence_data(corpora, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("sentence_data")
    build_facet_dataset(_data_cfg(corpora, out, "sentence"))
    return out


def _train_cfg(data: Path, out: Path, **kw) -> FacetTrainingConfig:
    settings = dict(n_facets=3, encoder_layers=1, decoder_layers=1, batch_size=32,
                    warmup_steps=5, lr=3e-3, max_steps=40, max_minutes=None,
                    checkpoint_every=20, val_examples=256, show_progress=False, coeff_steps=15)
    settings.update(kw)
    return FacetTrainingConfig(data_dir=str(data), out_dir=str(out), **settings)


@pytest.fixture(scope="module")
def trained(phrase_data, tmp_path_factory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("trained")
    report = train_facets(_train_cfg(phrase_data, out))
    return out, report


@pytest.fixture(scope="module")
def encoder(trained) -> FacetEncoder:
    enc = phrasekit.load(str(trained[0] / "model"))
    assert isinstance(enc, FacetEncoder)
    return enc


# ------------------------------------------------------------------------------ data
def test_phrase_windows_are_content_words_within_five_tokens(ws):
    text = ("the big red dog ate the small cat near the old river bank today and "
            "then a small cat slept")
    toks = tokenize(text)
    shard = phrase_examples([toks], [["small cat"]], ws, window=5, min_targets=1,
                            max_per_phrase=10, val_fraction=0.0)
    arrays = shard.arrays()
    assert len(shard) == 2  # both occurrences
    first = arrays["targets"][arrays["target_offsets"][0] : arrays["target_offsets"][1]]
    words = [ws.words[i] for i in first]
    # left: "big red dog ate the", right: "near the old river bank": stop words dropped
    assert words == ["big", "red", "dog", "ate", "near", "old", "river", "bank"]
    inp = arrays["inputs"][arrays["input_offsets"][0] : arrays["input_offsets"][1]]
    assert [ws.words[i] for i in inp] == ["small", "cat"]


def test_phrase_cap_keeps_at_most_max_per_phrase(ws):
    toks = tokenize(" ".join(["quantum field theory is nice for physics students"] * 30))
    stats: dict[str, int] = {}
    shard = phrase_examples([toks], [["field theory"]], ws, max_per_phrase=5, stats=stats)
    assert len(shard) == 5 and stats["occurrences"] == 30 and stats["capped_occurrences"] == 25


def test_sentence_targets_are_neighbour_sentences(ws):
    text = ("Cats chase mice in the barn. The farmer owns many cats. "
            "Dogs guard the sheep at night.")
    shard = sentence_examples([text], ["d"], ws, min_targets=1, min_tokens=3,
                              val_fraction=0.0)
    a = shard.arrays()
    assert len(shard) == 3
    mid = a["targets"][a["target_offsets"][1] : a["target_offsets"][2]]
    assert [ws.words[i] for i in mid] == ["cats", "chase", "mice", "barn", "dogs", "guard",
                                          "sheep", "night"]
    # excluded (evaluation) sentences are dropped as inputs
    stats: dict[str, int] = {}
    shard = sentence_examples([text], ["d"], ws, min_targets=1, val_fraction=0.0,
                              excluded={tuple(tokenize("The farmer owns many cats."))},
                              stats=stats)
    assert len(shard) == 2 and stats["eval_sentences_dropped"] == 1


def test_sentence_targets_subsampled_with_seed(ws):
    long = " ".join(f"word{i}" for i in range(5)) + " " + " ".join(
        ["apple banana cherry grape lemon mango olive peach pear plum"] * 1)
    text = (f"{long} orange melon kiwi lime fig date guava papaya quince berry. "
            "Short middle sentence here. "
            "Tomato potato carrot onion garlic pepper celery spinach lettuce cabbage "
            "broccoli radish turnip beet squash pumpkin.")
    a1 = sentence_examples([text], ["d"], ws, max_targets=12, val_fraction=0.0, seed=1).arrays()
    a2 = sentence_examples([text], ["d"], ws, max_targets=12, val_fraction=0.0, seed=1).arrays()
    n_t = np.diff(a1["target_offsets"])
    assert n_t.max() == 12
    assert np.array_equal(a1["targets"], a2["targets"])


def test_split_sentences():
    text = "Dr. Smith went to Washington. He met Mr. Jones!\nTitle line\n\nNew para? Yes."
    assert split_sentences(text) == ["Dr. Smith went to Washington.", "He met Mr. Jones!",
                                     "Title line", "New para?", "Yes."]
    wrapped = "a line that is\nwrapped here. Next one."
    assert split_sentences(wrapped, newline_ends_sentence=False) == [
        "a line that is wrapped here.", "Next one."]


def test_built_datasets(phrase_data, sentence_data, ws):
    ph = FacetDataset.load(phrase_data)
    se = FacetDataset.load(sentence_data)
    for ds, kind in ((ph, "phrase"), (se, "sentence")):
        assert ds.meta["granularity"] == kind and ds.meta["word_space_fingerprint"] == \
            ws.fingerprint
        assert len(ds) > 200 and 0 < len(ds.indices("val")) < len(ds)
        assert ds.targets.min() >= 0 and ds.inputs.min() >= -1
        assert ds.word_counts.sum() > 10_000
        n_t = np.diff(ds.target_offsets)
        assert n_t.min() >= 2 and n_t.max() <= (10 if kind == "phrase" else 30)
        # no stop word is ever a target
        assert not ({ws.words[i] for i in np.unique(ds.targets)} & {"the", "of", "and", "is"})
    assert np.diff(ph.input_offsets).max() <= 12  # <= 6 tokens, hyphen compounds split
    inp, tgt = ph.decode(0, ws)
    assert inp and tgt


def test_build_resumes_from_shards(phrase_data, corpora):
    shard = phrase_data / "shards" / "arxiv80.npz"
    before = shard.stat().st_mtime_ns
    ds = build_facet_dataset(_data_cfg(corpora, phrase_data, "phrase", max_per_phrase=20))
    assert shard.stat().st_mtime_ns == before  # reused, not rebuilt
    assert len(ds) == len(FacetDataset.load(phrase_data))


def test_data_config_errors(tmp_path, corpora):
    with pytest.raises(ValueError, match="bbc_news_summary"):
        build_facet_dataset(FacetDataConfig(out_dir=str(tmp_path),
                                            corpora=(CorpusSpec("bbc_news"),)))
    with pytest.raises(ValueError, match="refused"):
        corpus_specs(["arxiv80", "bbc_news"])
    assert corpus_specs(["inspec", "arxiv80"]) == (CorpusSpec("inspec", splits=("train",)),
                                                  CorpusSpec("arxiv80"))
    with pytest.raises(ValueError, match="granularity"):
        FacetDataConfig(out_dir=str(tmp_path), granularity="word").validate()
    with pytest.raises(FileNotFoundError, match="nope"):
        build_facet_dataset(FacetDataConfig(out_dir=str(tmp_path), corpora_dir=str(corpora),
                                            corpora=(CorpusSpec("nope"),), show_progress=False))
    with pytest.raises(FileNotFoundError, match=r"meta\.json"):
        FacetDataset.load(tmp_path / "missing")


# ------------------------------------------------------------------------------ loss
def test_facets_equal_to_targets_reconstruct_exactly():
    eye = torch.eye(6)[:4].unsqueeze(0)  # 4 orthonormal words in 6d, K = N = 4
    err0 = reconstruction_error(eye, eye, lam=0.0, steps=100)
    assert float(err0) < 1e-6
    # with the L1 weight λ the optimum is m = 1 - λ/2 per word: error (λ/2)^2
    err = reconstruction_error(eye, eye, lam=0.4, steps=200)
    assert float(err) == pytest.approx(0.04, abs=1e-4)


def test_coefficients_bounds_and_single_facet_closed_form():
    g = torch.Generator().manual_seed(0)
    facets = torch.randn(8, 1, 5, generator=g) * 2
    targets = torch.nn.functional.normalize(torch.randn(8, 7, 5, generator=g), dim=-1)
    m = estimate_coefficients(facets, targets, lam=0.4, steps=200)
    assert m.shape == (8, 7, 1) and m.min() >= 0 and m.max() <= 1
    c = facets[:, 0, :]
    expected = ((targets @ c.unsqueeze(-1)).squeeze(-1) - 0.2) / (c.norm(dim=-1, keepdim=True)
                                                                  ** 2)
    assert torch.allclose(m[..., 0], expected.clamp(0, 1), atol=1e-4)


def test_pgd_and_rmsprop_reach_the_same_optimum_and_masks_work():
    g = torch.Generator().manual_seed(1)
    # unit-scale facets: RMSprop's fixed lr of 0.05 does not settle when ||c_k|| >> 1
    facets = torch.nn.functional.normalize(torch.randn(4, 10, 50, generator=g), dim=-1)
    targets = torch.nn.functional.normalize(torch.randn(4, 30, 50, generator=g), dim=-1)
    m_pgd = estimate_coefficients(facets, targets, steps=300)
    m_rms = estimate_coefficients(facets, targets, steps=600, method="rmsprop")
    o_pgd, o_rms = objective(facets, targets, m_pgd), objective(facets, targets, m_rms)
    assert torch.allclose(o_pgd, o_rms, rtol=1e-3)
    assert bool((m_rms >= 0).all() and (m_rms <= 1).all())
    # padding rows do not change the error of the real rows
    mask = torch.zeros(4, 30, dtype=torch.bool)
    mask[:, :12] = True
    padded = reconstruction_error(facets, targets, mask, steps=100)
    cut = reconstruction_error(facets, targets[:, :12], steps=100)
    assert torch.allclose(padded, cut, atol=1e-5)
    assert float(estimate_coefficients(facets, targets, mask)[:, 12:].abs().sum()) == 0.0


def test_nnsc_loss_gradient_flows_to_facets_only():
    g = torch.Generator().manual_seed(2)
    facets = torch.randn(5, 3, 8, generator=g, requires_grad=True)
    targets = torch.nn.functional.normalize(torch.randn(5, 4, 8, generator=g), dim=-1)
    mask = torch.ones(5, 4, dtype=torch.bool)
    res = nnsc_loss(facets, targets, mask, shift=2)
    res["loss"].backward()
    assert facets.grad is not None and float(facets.grad.abs().sum()) > 0
    assert float(res["loss"].detach()) == pytest.approx(
        float(res["positive"] - res["negative"]), abs=1e-6)
    # facets that *are* each example's words beat the words of other examples
    own = targets.clone()
    res = nnsc_loss(own, targets, mask, shift=1, lam=0.0)
    assert float(res["positive"]) < 1e-4 and float(res["loss"]) < -0.1
    with pytest.raises(ValueError, match="at least 2"):
        nnsc_loss(facets[:1], targets[:1], mask[:1], shift=1)
    with pytest.raises(ValueError, match="shift"):
        nnsc_loss(facets, targets, mask, shift=5)
    with pytest.raises(ValueError, match="method"):
        estimate_coefficients(facets, targets, method="adam")


# ------------------------------------------------------------------------------ model
def test_model_shapes_and_config_errors(ws):
    cfg = FacetModelConfig(n_facets=4, encoder_layers=1, decoder_layers=1)
    model = FacetModel(cfg, ws.vectors).eval()
    batch = make_batch([[ws.index["heart"], ws.index["attack"]], [], [-1, ws.index["dog"]]], 50)
    assert batch.ids.shape == (3, 3) and batch.word_mask.sum(1).tolist() == [2, 1, 2]
    out = model(batch)
    assert out.facets.shape == (3, 4, 50) and out.embedding.shape == (3, 50)
    assert torch.allclose(out.unit_facets.norm(dim=-1), torch.ones(3, 4), atol=1e-5)
    # padding does not change a row's outputs
    alone = model(make_batch([[ws.index["dog"]]], 50))
    padded = model(make_batch([[ws.index["dog"]], [ws.index["big"], ws.index["dog"]]], 50))
    assert torch.allclose(alone.facets[0], padded.facets[0], atol=1e-5)
    no_cross = FacetModel(FacetModelConfig(n_facets=2, encoder_layers=1, decoder_layers=1,
                                           cross_attention=False), ws.vectors).eval()
    assert no_cross(batch).facets.shape == (3, 2, 50)
    with pytest.raises(ValueError, match="multiple of n_heads"):
        FacetModelConfig(hidden_dim=64, n_heads=5).validate()
    with pytest.raises(ValueError, match="n_facets"):
        FacetModelConfig(n_facets=0).validate()


# ------------------------------------------------------------------------------ training
def test_training_lowers_the_loss(trained):
    _, report = trained
    hist = report["history"]
    assert hist[0]["step"] == 0 and hist[-1]["step"] == 40
    # 40 small steps: the facets move towards the words around phrases (both errors fall)
    # and start to prefer each phrase's own words (the training loss, Eq. 2, goes negative)
    assert hist[-1]["val_positive"] < hist[0]["val_positive"] - 0.02
    assert hist[-1]["train_loss"] < hist[1]["train_loss"] < 0
    assert report["granularity"] == "phrase" and report["steps_per_second"] > 0


def test_save_load_round_trip_identical(trained, encoder, ws):
    model, space, counts, config = load_facet_model(trained[0] / "model")
    assert space is ws and counts is not None and counts.sum() > 0
    assert config["training"]["steps"] == 40
    texts = ["magnetic field", "dark matter halo", "graph coloring", "protein"]
    ids = [ws.text_ids(t) for t in texts]
    with torch.no_grad():
        direct = model(make_batch(ids, 50))
    assert np.allclose(encoder.facets(texts), direct.unit_facets.numpy(), atol=1e-6)
    emb = encoder.encode(texts)
    ref = direct.embedding.numpy()
    ref = ref / np.linalg.norm(ref, axis=1, keepdims=True)
    assert np.allclose(emb, ref, atol=1e-6)


def _losses(history: list[dict]) -> list[dict]:
    """History rows without their wall-clock minutes."""
    return [{k: v for k, v in row.items() if k != "minutes"} for row in history]


def test_resume_after_a_crash_matches_an_uninterrupted_run(phrase_data, trained, tmp_path,
                                                          monkeypatch, capsys):
    out = tmp_path / "resumed"
    validate = FacetTask.evaluate

    def crash_at_40(task, step):  # after step 40's update, before its checkpoint
        if step == 40:
            raise KeyboardInterrupt
        return validate(task, step)

    monkeypatch.setattr(FacetTask, "evaluate", crash_at_40)
    with pytest.raises(KeyboardInterrupt):
        train_facets(_train_cfg(phrase_data, out))
    monkeypatch.setattr(FacetTask, "evaluate", validate)
    report = train_facets(_train_cfg(phrase_data, out))  # resumes from step 20
    assert report["steps"] == 40
    a = load_facet_model(out / "model")[0].state_dict()
    b = load_facet_model(trained[0] / "model")[0].state_dict()
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert _losses(report["history"]) == _losses(trained[1]["history"])
    assert "facets[" not in capsys.readouterr().err  # show_progress=False: no bar
    for saved in (out / "report.json", out / "model" / "config.json"):
        assert str(tmp_path) not in saved.read_text() and str(phrase_data) not in saved.read_text()
    assert json.loads((out / "report.json").read_text())["model_dir"] == "model"
    with pytest.raises(ValueError, match="different settings"):
        train_facets(_train_cfg(phrase_data, out, max_steps=41, lr=1e-2))


def test_epoch_batches_cover_each_example_once_with_similar_lengths():
    lengths = np.random.default_rng(0).integers(3, 50, 1000)
    b = epoch_batches(lengths, 32, seed=0, epoch=0, buckets=5)
    assert b.shape == (31, 32) and len(np.unique(b)) == 31 * 32
    plain = epoch_batches(lengths, 32, seed=0, epoch=0, buckets=1)
    spread = lambda x: (lengths[x].max(1) - lengths[x].min(1)).mean()  # noqa: E731
    assert spread(b) < spread(plain) / 2
    assert not np.array_equal(b, epoch_batches(lengths, 32, seed=0, epoch=1, buckets=5))


def test_training_config_errors(phrase_data, tmp_path):
    with pytest.raises(FileNotFoundError, match=r"meta\.json"):
        train_facets(_train_cfg(tmp_path / "nodata", tmp_path / "o"))
    with pytest.raises(ValueError, match="batch_size"):
        _train_cfg(phrase_data, tmp_path / "o", batch_size=1).validate()
    with pytest.raises(ValueError, match="max_steps or max_minutes"):
        _train_cfg(phrase_data, tmp_path / "o", max_steps=None, max_minutes=None).validate()


# ------------------------------------------------------------------------------ scores
def test_encoder_contract_and_facets(encoder):
    vecs = encoder.encode(["spin glass", "black hole", "spin glass"])
    assert vecs.shape == (3, 50) and vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1, atol=1e-5)
    assert np.allclose(vecs[0], vecs[2])
    assert encoder.encode([]).shape == (0, 50)
    f = encoder.facets(["spin glass", "xqzzyv"])  # an unknown word still gets facets
    assert f.shape == (2, 3, 50) and np.allclose(np.linalg.norm(f, axis=-1), 1, atol=1e-5)
    table = encoder.describe("black hole", n=4)
    assert len(table) == 3 and all(len(row) == 4 for row in table)
    assert all(-1.0 <= c <= 1.0 and isinstance(w, str) for row in table for w, c in row)
    assert table[0][0][1] >= table[0][-1][1]
    text = format_facet_table("black hole", table)
    assert text.splitlines()[0] == "black hole <eos>" and text.splitlines()[1].startswith("e1 ")
    assert len(text.splitlines()) == 4


def test_sc_is_symmetric_and_self_similar(encoder):
    a = ["spin glass", "black hole", "graph theory"]
    b = ["neural network", "galaxy cluster", "graph theory"]
    ab, ba = encoder.sc_similarity(a, b), encoder.sc_similarity(b, a)
    assert ab.shape == (3,) and np.allclose(ab, ba, atol=1e-5)
    assert ab[2] >= ab[0] and ab[2] >= ab[1]  # identical texts: the smallest distance
    f = encoder.facets(a)
    assert np.all(sc_distance(f, f) >= 0)


def test_asym_is_antisymmetric(encoder):
    hypo, hyper = ["neutron star", "oak"], ["star", "tree"]
    down, up = encoder.asym_score(hypo, hyper), encoder.asym_score(hyper, hypo)
    assert down.shape == (2,) and np.allclose(down, -up, atol=1e-5)


def test_word_importance(encoder):
    ranked = encoder.word_importance("The galaxy rotation curves suggest dark matter.")
    words = [w for w, _ in ranked]
    assert words == ["the", "galaxy", "rotation", "curves", "suggest", "dark", "matter"]
    assert all(0.0 <= x <= encoder.n_facets for _, x in ranked)


def test_greedy_summary_covers_the_document():
    doc = np.eye(4, dtype=np.float32)  # four orthogonal "words"
    gamma = np.ones(4)
    sents = [doc[[0]], doc[[1, 2]], doc[[0, 1, 2, 3]] * 0.9]
    assert greedy_summary(doc, gamma, sents, n_sentences=1) == [2]
    assert greedy_summary(doc, gamma, sents, n_sentences=2)[0] == 2
    assert summary_objective(doc, gamma, [sents[2]]) == pytest.approx(3.6, abs=1e-5)
    # length-normalised gains prefer the short sentence (the paper's "W Emb" behaviour)
    assert greedy_summary(doc, gamma, sents, n_sentences=1, length_normalize=[1, 2, 4]) == [0]


def test_bad_inputs(encoder):
    with pytest.raises(TypeError):
        encoder.facets(None)
    with pytest.raises(ValueError, match="empty"):
        encoder.facets(["ok", "  "])
    with pytest.raises(ValueError, match="aligned"):
        encoder.sc_similarity(["a b"], ["c", "d"])
    with pytest.raises(ValueError, match="no word"):
        encoder.asym_score(["xqzzyv qqwxv"], ["animal"])
    with pytest.raises(ValueError, match="facet_vectors"):
        encoder.nearest_words(np.zeros((2, 7)))
    with pytest.raises(ValueError, match="precision"):
        FacetEncoder.from_pretrained(encoder.model_path, precision="bf16")
    with pytest.raises(ValueError, match="unknown model"):
        phrasekit.load("no-such-facet-model")


# ------------------------------------------------------------------------------ command line
def test_cli_facets_table_json_and_errors(trained) -> None:
    from typer.testing import CliRunner

    from phrasekit.cli import app

    runner = CliRunner()
    model = str(trained[0] / "model")
    res = runner.invoke(app, ["facets", "quantum field", "phase transition", "-m", model,
                              "-n", "3", "-q"])
    assert res.exit_code == 0, res.output
    assert "quantum field <eos>" in res.output and "e3 " in res.output
    res = runner.invoke(app, ["facets", "quantum field", "-m", model, "--json", "-q"])
    data = json.loads(res.output)
    assert len(data[0]["facets"]) == 3 and len(data[0]["facets"][0]) == 5
    assert runner.invoke(app, ["facets", "x", "-k", "7", "-q"]).exit_code == 2  # not packaged
    assert runner.invoke(app, ["facets", " ", "-m", model, "-q"]).exit_code == 2
    res = runner.invoke(app, ["train", "facets", "--data", "/no/such/dir", "--out", "x", "-q"])
    assert res.exit_code == 2 and "not a folder" in res.output


def test_packaged_models_load_and_describe() -> None:
    from typer.testing import CliRunner

    from phrasekit.cli import app
    from phrasekit.registry import available_models

    names = [f"facets-{g}-k{k}" for g in ("phrase", "sentence") for k in (1, 3, 10)]
    assert set(names) <= set(available_models())
    enc = phrasekit.load("facets-phrase-k3")
    assert isinstance(enc, FacetEncoder) and enc.n_facets == 3
    f = enc.facets(["heart attack", "stock market"])
    assert f.shape == (2, 3, 50) and np.allclose(np.linalg.norm(f, axis=-1), 1, atol=1e-5)
    res = CliRunner().invoke(app, ["facets", "heart attack", "-k", "3", "-q"])
    assert res.exit_code == 0 and res.output.count("\ne") == 3
