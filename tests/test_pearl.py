"""PEARL encoder, persistence, and a tiny resumable training run (real phrases, few steps)."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from phrasekit.encoders.pearl import PearlConfig, PearlEncoder, PearlModel
from phrasekit.training.core.averaging import interpolate_weights
from phrasekit.training.core.losses import InfoNCELoss

FIXTURES = Path(__file__).parent / "fixtures"
TEXTS = ["The New York Times", "new york city", "graph neural network", "ran quickly"]

#: The shipped recipe's WordNet supersense head needs the shared WordNet; these tiny runs test
#: other parts and leave it off (tests/test_supersenses.py trains it on a fixture lexicon).
_NO_WORDNET = {"supersense_weight": 0.0}


@pytest.fixture(scope="module")
def fresh_model() -> PearlModel:
    return PearlModel(PearlConfig(types=["NP-ORG", "NP-GPE", "NP-OTHER"]))


def test_untrained_pearl_equals_backbone(fresh_model, minilm):
    a = PearlEncoder(fresh_model).encode(TEXTS)
    assert np.allclose(a, minilm.encode(TEXTS), atol=1e-5)
    assert a.shape == (4, 384)


def test_save_load_roundtrip_stores_only_deltas(tmp_path, fresh_model):
    model = PearlModel(PearlConfig(types=["A", "B"]))
    with torch.no_grad():
        model.backbone.encoder.layer[0].output.dense.weight.add_(0.01)
        model.proj.weight[:, 384:] = 0.02
    model.save_pretrained(tmp_path / "m")
    from safetensors import safe_open

    with safe_open(str(tmp_path / "m" / "model.safetensors"), framework="pt") as fh:
        keys = list(fh.keys())
    deltas = [k for k in keys if k.startswith("backbone_delta.")]
    assert deltas == ["backbone_delta.encoder.layer.0.output.dense.weight"]
    loaded = PearlEncoder.from_pretrained(tmp_path / "m")
    assert np.allclose(loaded.encode(TEXTS), PearlEncoder(model).encode(TEXTS), atol=1e-4)
    import phrasekit

    assert isinstance(phrasekit.load(str(tmp_path / "m")), PearlEncoder)


def test_interpolation_endpoints(fresh_model):
    model = PearlModel(PearlConfig(types=["A"]))
    init = {k: v.clone() for k, v in model.state_dict().items()}
    with torch.no_grad():
        model.proj.weight.add_(1.0)
    tuned = model.proj.weight.clone()
    interpolate_weights(model, init, 0.3)
    expected = 0.3 * tuned + 0.7 * init["proj.weight"]
    assert torch.allclose(model.proj.weight, expected)
    # untouched (e.g. frozen) tensors stay bit-exact, so saving stores no rounding deltas
    emb = "backbone.embeddings.word_embeddings.weight"
    assert torch.equal(model.state_dict()[emb], init[emb])
    with pytest.raises(ValueError):
        interpolate_weights(model, init, 1.5)


def test_infonce_prefers_matching_pairs():
    loss = InfoNCELoss(0.07)
    x = torch.nn.functional.normalize(torch.randn(8, 16), dim=-1)
    good = loss(x, x)
    bad = loss(x, x.roll(1, dims=0))
    assert good < bad


def test_cross_batch_memory_is_a_fifo_with_text_masks():
    from phrasekit.training.core.losses import CrossBatchMemory

    mem = CrossBatchMemory(3)
    mem.push(torch.eye(4)[:2], ["a", "b"])
    mem.push(torch.eye(4)[2:], ["c", "a"])
    assert mem.texts == ["b", "c", "a"] and len(mem) == 3
    assert torch.equal(mem.rows, torch.eye(4)[1:])
    mask = mem.mask(["a", "x"], ["c", "b"])  # anchors, then their positives
    assert mask.tolist() == [[False, True, True], [True, False, False]]
    with pytest.raises(ValueError):
        CrossBatchMemory(-1)
    with pytest.raises(ValueError):
        mem.push(torch.eye(4)[:2], ["only one"])


def test_infonce_memory_adds_negatives_and_masked_rows_do_not_count():
    loss = InfoNCELoss(0.07)
    torch.manual_seed(0)
    x = torch.nn.functional.normalize(torch.randn(6, 16), dim=-1)
    pos = torch.nn.functional.normalize(x + 0.3 * torch.randn(6, 16), dim=-1)
    memory = torch.nn.functional.normalize(torch.randn(10, 16), dim=-1)
    base = loss(x, pos)
    assert loss(x, pos, memory=memory) > base
    all_masked = torch.ones((6, 10), dtype=torch.bool)
    assert torch.allclose(loss(x, pos, memory=memory, memory_mask=all_masked), base)


def _tiny_dataset(out: Path) -> None:
    """~200 real 2-3 word phrases from the small arXiv fixture corpus."""
    words_re = re.compile(r"[A-Za-z][a-z]+")
    phrases: list[str] = []
    with open(FIXTURES / "corpus_small.jsonl", encoding="utf-8") as fh:
        for line in fh:
            words = words_re.findall(json.loads(line)["text"])
            for i in range(0, len(words) - 2, 3):
                p = " ".join(words[i : i + 2 + i % 2])
                if p not in phrases:
                    phrases.append(p)
            if len(phrases) >= 200:
                break
    out.mkdir(parents=True)
    with gzip.open(out / "phrases.jsonl.gz", "wt", encoding="utf-8") as fh:
        for p in phrases:
            fh.write(json.dumps({"text": p, "type": "NP-OTHER", "source": "test"}) + "\n")
    with gzip.open(out / "paraphrases.tsv.gz", "wt", encoding="utf-8") as fh:
        fh.write(f"{phrases[0]}\t{phrases[1]}\ttest\n")
    with gzip.open(out / "word_synonyms.json.gz", "wt", encoding="utf-8") as fh:
        json.dump({"model": ["framework"], "method": ["approach"]}, fh)
    with gzip.open(out / "hard_negatives.jsonl.gz", "wt", encoding="utf-8") as fh:
        for i, p in enumerate(phrases):
            fh.write(json.dumps({"text": p, "negatives": [phrases[(i + 7) % len(phrases)]]}) + "\n")


def _checkpoint_tensors(run: Path) -> dict[str, torch.Tensor]:
    """Every tensor of a run's checkpoint: weights, Adam moments, the negatives memory."""
    from safetensors.torch import load_file

    from phrasekit.training.core.checkpoint import CHECKPOINT

    return load_file(str(run / CHECKPOINT))


def _assert_same_checkpoint(a: Path, b: Path) -> None:
    ta, tb = _checkpoint_tensors(a), _checkpoint_tensors(b)
    assert ta.keys() == tb.keys()
    for k in ta:
        assert torch.equal(ta[k], tb[k]), k


def test_training_resumes_to_the_same_model(tmp_path):
    from phrasekit.training.pearl.config import PearlTrainingConfig
    from phrasekit.training.pearl.task import train_pearl

    _tiny_dataset(tmp_path / "data")

    def cfg(out: str, steps: int) -> PearlTrainingConfig:
        return PearlTrainingConfig(data_dir=str(tmp_path / "data"), out_dir=str(tmp_path / out),
                                   batch_size=6, max_steps=steps, checkpoint_every=2, alpha=0.5,
                                   max_seq_length=12, show_progress=False, **_NO_WORDNET)

    straight = train_pearl(cfg("a", 4))
    train_pearl(cfg("b", 2))
    resumed = train_pearl(cfg("b", 4))
    assert straight["steps"] == resumed["steps"] == 4
    assert [r["step"] for r in resumed["history"]] == [2, 4]
    assert {"nce", "type", "minutes"} <= set(resumed["history"][-1])
    _assert_same_checkpoint(tmp_path / "a", tmp_path / "b")  # bit-exact, Adam state included
    ea = PearlEncoder.from_pretrained(tmp_path / "a" / "model").encode(TEXTS)
    eb = PearlEncoder.from_pretrained(tmp_path / "b" / "model").encode(TEXTS)
    assert np.array_equal(ea, eb)
    config = json.loads((tmp_path / "a" / "model" / "config.json").read_text())
    assert config["training"]["alpha"] == 0.5
    assert config["training"]["settings"]["data_dir"] == "data"
    for saved in (tmp_path / "a" / "model" / "config.json", tmp_path / "a" / "report.json"):
        assert str(tmp_path) not in saved.read_text()  # no machine-specific folders
    assert straight["model_dir"] == str(tmp_path / "a" / "model")
    with pytest.raises(ValueError, match="different settings"):
        train_pearl(PearlTrainingConfig(**{**cfg("b", 4).__dict__, "lr": 1e-3}))


def test_training_with_memory_resumes_to_the_same_model(tmp_path):
    """The negatives memory is part of the checkpoint, so a resumed run matches a straight one."""
    from phrasekit.training.pearl.config import PearlTrainingConfig
    from phrasekit.training.pearl.task import train_pearl

    _tiny_dataset(tmp_path / "data")

    def cfg(out: str, steps: int, **kw) -> PearlTrainingConfig:
        return PearlTrainingConfig(data_dir=str(tmp_path / "data"), out_dir=str(tmp_path / out),
                                   batch_size=6, max_steps=steps, checkpoint_every=2, alpha=1.0,
                                   max_seq_length=12, lr=1e-3, show_progress=False,
                                   **_NO_WORDNET, **{"memory_size": 20, **kw})

    train_pearl(cfg("a", 4))
    train_pearl(cfg("b", 2))
    assert _checkpoint_tensors(tmp_path / "b")["extra.memory"].shape == (20, 384)  # 2 x (6 + 6)
    train_pearl(cfg("b", 4))
    train_pearl(cfg("c", 4, memory_size=0))
    _assert_same_checkpoint(tmp_path / "a", tmp_path / "b")
    ea, ec = (PearlEncoder.from_pretrained(tmp_path / r / "model").encode(TEXTS) for r in "ac")
    assert not np.allclose(ea, ec, atol=1e-4)  # the memory changed the training
    assert "extra.memory" not in _checkpoint_tensors(tmp_path / "c")
    assert cfg("a", 4).fingerprint() != cfg("c", 4, memory_size=0).fingerprint()
    with pytest.raises(ValueError, match="memory_size"):
        cfg("d", 4, memory_size=-1).validate()


def test_training_validates_before_work(tmp_path):
    from phrasekit.training.pearl.config import PearlTrainingConfig

    with pytest.raises(FileNotFoundError, match="build the dataset"):
        PearlTrainingConfig(data_dir=str(tmp_path), out_dir=str(tmp_path / "o")).validate()
    with pytest.raises(ValueError, match="type_weight"):
        PearlTrainingConfig(data_dir=str(tmp_path), out_dir="o", type_weight=-1).validate()
    with pytest.raises(ValueError, match="augmentation"):
        PearlTrainingConfig(data_dir=str(tmp_path), out_dir="o", char_aug=False,
                            token_aug=False, phrase_aug=False).validate()
    with pytest.raises(ValueError, match="device must be cpu, cuda or cuda:N"):
        PearlTrainingConfig(data_dir=str(tmp_path), out_dir="o", device="gpu").validate()
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="no CUDA GPU"):
            PearlTrainingConfig(data_dir=str(tmp_path), out_dir="o", device="cuda:0").validate()


def _tiny_run(tmp_path: Path, **settings):
    """Train a tiny PEARL run into ``tmp_path / "t"`` (α 1, so the folder holds the trained
    weights) and return its settings."""
    from phrasekit.training.pearl.config import PearlTrainingConfig
    from phrasekit.training.pearl.task import train_pearl

    _tiny_dataset(tmp_path / "data")
    cfg = PearlTrainingConfig(**{"data_dir": str(tmp_path / "data"),
                                 "out_dir": str(tmp_path / "t"), "batch_size": 6,
                                 "max_steps": 2, "alpha": 1.0, "lr": 1e-3, "max_seq_length": 12,
                                 "show_progress": False, **_NO_WORDNET, **settings})
    train_pearl(cfg)
    return cfg


def test_bf16_training_warns_only_where_the_cpu_emulates_bfloat16(monkeypatch, caplog):
    import phrasekit.encoders.transformer as transformer
    import phrasekit.training.pearl.task as task
    from phrasekit.training.pearl.config import PearlTrainingConfig

    cfg = PearlTrainingConfig(data_dir="d", out_dir="o", precision="bf16")
    for flags, warns in ((frozenset({"avx2", "fma"}), True),
                         (frozenset({"avx2", "avx512f", "avx512_bf16"}), False),
                         (frozenset({"avx2", "amx_bf16"}), False)):
        monkeypatch.setattr(transformer, "cpu_flags", lambda flags=flags: flags)
        caplog.clear()
        with caplog.at_level("WARNING", logger=task.__name__):
            task._warn_slow_bf16(cfg)
        assert ("without native bfloat16" in caplog.text) is warns, flags
    caplog.clear()
    monkeypatch.setattr(transformer, "cpu_flags", lambda: frozenset({"avx2"}))
    with caplog.at_level("WARNING", logger=task.__name__):
        task._warn_slow_bf16(PearlTrainingConfig(data_dir="d", out_dir="o"))  # fp32
    assert not caplog.text


def test_training_only_the_top_layers_leaves_the_lower_ones_as_the_backbone(tmp_path):
    from phrasekit.models.backbones import load_backbone
    from phrasekit.training.pearl.config import PearlTrainingConfig, build_model

    cfg = _tiny_run(tmp_path, train_layers=2)
    trained = PearlModel.from_pretrained(tmp_path / "t" / "model").backbone.state_dict()
    base = load_backbone("minilm")[1].state_dict()
    layer = re.compile(r"encoder\.layer\.(\d+)\.")
    changed = {int(m.group(1)) if (m := layer.match(k)) else -1
               for k in base if not torch.equal(trained[k], base[k])}
    assert changed == {4, 5}  # embeddings (-1) and layers 0-3 are the backbone's, bit for bit
    with pytest.raises(ValueError, match="train_layers must be >= 0"):
        PearlTrainingConfig(**{**cfg.__dict__, "train_layers": -1}).validate()
    with pytest.raises(ValueError, match="only 6 layers"):
        build_model(PearlTrainingConfig(**{**cfg.__dict__, "train_layers": 7}))


def test_reaverage_recovers_the_fine_tuned_weights(tmp_path):
    from phrasekit.training.pearl.averaging import reaverage_pearl
    from phrasekit.training.pearl.config import PearlTrainingConfig
    from phrasekit.training.pearl.task import train_pearl

    _tiny_dataset(tmp_path / "data")

    def cfg(out: str, alpha: float) -> PearlTrainingConfig:
        return PearlTrainingConfig(data_dir=str(tmp_path / "data"), out_dir=str(tmp_path / out),
                                   batch_size=6, max_steps=3, checkpoint_every=10, alpha=alpha,
                                   max_seq_length=12, lr=1e-3, show_progress=False, **_NO_WORDNET)

    train_pearl(cfg("half", 0.5))
    train_pearl(cfg("plain", 1.0))
    report = reaverage_pearl(tmp_path / "half" / "model", tmp_path / "re", alphas=(1.0,),
                             proj_alphas=(1.0,), show_progress=False)
    assert report["alpha"] == report["alpha_proj"] == 1.0
    assert report["reaveraged_from"] == {"alpha": 0.5, "alpha_proj": 0.5}
    plain = PearlEncoder.from_pretrained(tmp_path / "plain" / "model").encode(TEXTS)
    back = PearlEncoder.from_pretrained(tmp_path / "re" / "model").encode(TEXTS)
    half = PearlEncoder.from_pretrained(tmp_path / "half" / "model").encode(TEXTS)
    assert np.abs(plain - back).max() < 2e-3 < np.abs(plain - half).max()
    separate = reaverage_pearl(tmp_path / "half" / "model", tmp_path / "sep", alphas=(0.5,),
                               proj_alphas=(0.0,), show_progress=False)
    assert (separate["alpha"], separate["alpha_proj"]) == (0.5, 0.0)
    with pytest.raises(ValueError, match="cannot be recovered"):
        reaverage_pearl(tmp_path / "sep" / "model", tmp_path / "x", show_progress=False)


def test_soup_of_runs_that_differ_in_data_seed(tmp_path):
    from phrasekit.training.pearl.averaging import recover_finetuned_pearl
    from phrasekit.training.pearl.config import PearlTrainingConfig
    from phrasekit.training.pearl.task import train_pearl
    from phrasekit.training.soups.soup import soup_models

    _tiny_dataset(tmp_path / "data")

    def run(out: str, **kw) -> Path:
        train_pearl(PearlTrainingConfig(
            data_dir=str(tmp_path / "data"), out_dir=str(tmp_path / out), batch_size=6,
            max_steps=3, checkpoint_every=10, alpha=0.5, max_seq_length=12, lr=1e-3,
            show_progress=False, **_NO_WORDNET, **kw))
        return tmp_path / out / "model"

    a, b, other_init = run("a", data_seed=None), run("b"), run("c", seed=1)
    ea = PearlEncoder.from_pretrained(a).encode(TEXTS)
    eb = PearlEncoder.from_pretrained(b).encode(TEXTS)
    assert np.abs(ea - eb).max() > 1e-4  # another data order, another model
    report = soup_models([a, b], tmp_path / "soup", alphas=(0.5,), show_progress=False)
    # data seed None = the seed (0); 1 is the default (the shipped model's batch order)
    assert report["alpha"] == 0.5 and [r["data_seed"] for r in report["soup_of"]] == [None, 1]
    # every tensor (backbone, projection, char CNN, type head) is the mean of the two runs'
    # fine-tuned ones; backbone deltas are stored in float16, hence the tolerance
    ta, tb, ts = (recover_finetuned_pearl(d)[1].state_dict()
                  for d in (a, b, tmp_path / "soup" / "model"))
    moved = [k for k in ta if ta[k].is_floating_point() and not torch.equal(ta[k], tb[k])]
    assert any(k.startswith("char.") for k in moved) and any(k.startswith("backbone.")
                                                             for k in moved)
    for k in moved:
        assert torch.allclose(ts[k], (ta[k] + tb[k]) / 2, atol=2e-3), k
    assert PearlEncoder.from_pretrained(tmp_path / "soup" / "model").encode(TEXTS).shape == (4, 384)
    # another seed means other random char CNN / head weights: averaging them is meaningless
    with pytest.raises(ValueError, match="same initial weights"):
        soup_models([a, other_init], tmp_path / "bad", alphas=(0.5,), show_progress=False)
    (tmp_path / "odd").mkdir()
    (tmp_path / "odd" / "config.json").write_text('{"format": "other"}')
    with pytest.raises(ValueError, match="one kind"):
        soup_models([a, tmp_path / "odd"], tmp_path / "bad2")


def _tiny_phrases(tmp_path: Path) -> list[str]:
    _tiny_dataset(tmp_path / "data")
    with gzip.open(tmp_path / "data" / "phrases.jsonl.gz", "rt", encoding="utf-8") as fh:
        return [json.loads(line)["text"] for line in fh]


def test_char_mimicry_pulls_the_char_encoder_towards_the_backbone(tmp_path):
    from phrasekit.encoders.char import CharCNNConfig, bytes_batch
    from phrasekit.training.pearl.char_mimic import CharMimicConfig, backbone_targets, pretrain_char

    texts = _tiny_phrases(tmp_path)
    model = PearlModel(PearlConfig(types=["A"], char=CharCNNConfig(out_linear=True)))
    targets = backbone_targets(model, texts, show_progress=False)

    def agreement() -> float:
        with torch.no_grad():
            pred = model.char(bytes_batch(texts, 64))
        return float(torch.nn.functional.cosine_similarity(pred, targets).mean())

    proj_before = model.proj.weight.clone()
    before = agreement()
    report = pretrain_char(model, texts, CharMimicConfig(steps=60, batch_size=32, typo_prob=0.3),
                           show_progress=False)
    assert agreement() > before + 0.3
    assert report["phrases"] == len(texts) and report["history"][-1]["step"] == 60
    assert torch.equal(model.proj.weight, proj_before)  # only the char encoder trains
    with pytest.raises(ValueError, match="linear output"):
        pretrain_char(PearlModel(PearlConfig(types=["A"])), texts, CharMimicConfig(steps=1))


def test_training_with_char_mimicry_resumes_without_repeating_it(tmp_path, monkeypatch):
    from phrasekit.training.pearl.config import PearlTrainingConfig
    from phrasekit.training.pearl.task import train_pearl

    _tiny_dataset(tmp_path / "data")

    def cfg(out: str, steps: int) -> PearlTrainingConfig:
        return PearlTrainingConfig(data_dir=str(tmp_path / "data"), out_dir=str(tmp_path / out),
                                   batch_size=6, max_steps=steps, checkpoint_every=2, alpha=0.5,
                                   max_seq_length=12, show_progress=False, **_NO_WORDNET,
                                   char_pretrain_steps=5, lr_char=1e-4)

    straight = train_pearl(cfg("a", 4))
    train_pearl(cfg("b", 2))

    def repeated(*args, **kwargs):
        raise AssertionError("a resumed run repeated the char mimicry")

    monkeypatch.setattr("phrasekit.training.pearl.task.pretrain_char", repeated)
    resumed = train_pearl(cfg("b", 4))
    assert straight["char_mimicry"]["history"][-1]["step"] == 5
    assert (tmp_path / "a" / "char_mimicry" / "checkpoint.safetensors").is_file()

    def without_minutes(report: dict) -> dict:
        return {**report, "minutes": None,
                "history": [{**row, "minutes": None} for row in report["history"]]}

    # the resumed run restored the mimicry report from its checkpoint: same losses
    assert without_minutes(resumed["char_mimicry"]) == without_minutes(straight["char_mimicry"])
    _assert_same_checkpoint(tmp_path / "a", tmp_path / "b")
    config = json.loads((tmp_path / "a" / "model" / "config.json").read_text())
    assert config["pearl"]["char"]["out_linear"] is True


def test_type_head_can_read_the_output_embedding(tmp_path):
    model = PearlModel(PearlConfig(types=["A", "B", "C"], type_head_on="output"))
    assert model.head.in_features == 384
    _, logits = model(TEXTS)
    assert logits.shape == (4, 3)
    logits.sum().backward()  # the type loss reaches the projection through the embedding
    assert model.proj.weight.grad is not None and model.proj.weight.grad.abs().sum() > 0
    model.save_pretrained(tmp_path / "m")
    loaded = PearlEncoder.from_pretrained(tmp_path / "m")
    assert loaded.model.config.type_head_on == "output"
    top = loaded.predict_types(TEXTS, top=2)
    assert len(top) == 4 and all(label in {"A", "B", "C"} for label, _ in top[0])
    with pytest.raises(ValueError, match="type_head_on"):
        PearlConfig(types=["A"], type_head_on="pooled")


def test_similarity_preservation_loss_is_zero_only_for_the_same_geometry():
    from phrasekit.training.core.losses import SimilarityPreservationLoss

    loss = SimilarityPreservationLoss()
    x = torch.nn.functional.normalize(torch.randn(8, 16), dim=-1)
    rotation, _ = torch.linalg.qr(torch.randn(16, 16))
    assert loss(x, x).item() == pytest.approx(0.0, abs=1e-6)
    assert loss(x @ rotation, x).item() == pytest.approx(0.0, abs=1e-5)  # cosines kept
    assert loss(x.roll(1, dims=0), x).item() > 0.01
    with pytest.raises(ValueError, match="shapes differ"):
        loss(x, x[:4])


def test_preservation_keeps_the_trained_model_near_the_backbone_geometry(tmp_path):
    from phrasekit.training.pearl.config import PearlTrainingConfig
    from phrasekit.training.pearl.task import train_pearl

    phrases = _tiny_phrases(tmp_path)[:40]  # also writes the dataset

    def drift(weight: float) -> float:
        out = tmp_path / f"w{weight}"
        train_pearl(PearlTrainingConfig(
            data_dir=str(tmp_path / "data"), out_dir=str(out), batch_size=8, max_steps=6,
            lr=3e-4, lr_proj=3e-3, alpha=1.0, max_seq_length=12, preserve_weight=weight,
            show_progress=False, **_NO_WORDNET))
        e = PearlEncoder.from_pretrained(out / "model").encode(phrases)
        r = PearlModel(PearlConfig()).eval()
        with torch.no_grad():
            ref = r(phrases)[0].numpy()
        return float(np.mean((e @ e.T - ref @ ref.T) ** 2))

    assert drift(5.0) < drift(0.0)
    with pytest.raises(ValueError, match="preserve_weight"):
        PearlTrainingConfig(data_dir=str(tmp_path), out_dir="o", preserve_weight=-1).validate()


def test_length_covariance_counts_only_length_information_beyond_the_reference():
    from phrasekit.training.core.losses import LengthCovarianceLoss

    loss = LengthCovarianceLoss()
    g = torch.Generator().manual_seed(0)
    ref = torch.nn.functional.normalize(torch.randn(32, 16, generator=g), dim=-1)
    lengths = torch.arange(32, dtype=torch.float32)
    z = (lengths - lengths.mean()) / lengths.std()
    direction = torch.zeros(16)
    direction[0] = 1.0
    with_length = ref + 0.5 * z[:, None] * direction
    assert loss(ref, lengths, ref).item() == pytest.approx(0.0, abs=1e-9)
    assert loss(with_length, lengths, ref).item() == pytest.approx(0.25 * (31 / 32) ** 2, rel=1e-4)
    assert loss(with_length, lengths).item() > loss(ref, lengths).item()
    assert loss(with_length, torch.full((32,), 5.0)).item() == 0.0  # equal lengths: no signal
    with pytest.raises(ValueError, match="one length per row"):
        loss(ref, lengths[:3])


def test_training_with_the_length_term_runs_and_is_recorded(tmp_path):
    from phrasekit.training.pearl.config import PearlTrainingConfig
    from phrasekit.training.pearl.task import train_pearl

    _tiny_dataset(tmp_path / "data")
    cfg = PearlTrainingConfig(data_dir=str(tmp_path / "data"), out_dir=str(tmp_path / "r"),
                              batch_size=6, max_steps=2, alpha=0.5, max_seq_length=12,
                              length_weight=50.0, show_progress=False, **_NO_WORDNET)
    report = train_pearl(cfg)
    assert report["steps"] == 2 and report["settings"]["length_weight"] == 50.0
    assert cfg.fingerprint() != PearlTrainingConfig(**{**cfg.__dict__, "length_weight": 0.0}
                                                    ).fingerprint()
    with pytest.raises(ValueError, match="length_weight"):
        PearlTrainingConfig(data_dir=str(tmp_path), out_dir="o", length_weight=-1).validate()


def test_int8_deltas_halve_the_folder_and_load_to_nearly_the_same_model(tmp_path, fresh_model):
    from phrasekit.models.weights import quantize_model_folder

    model = PearlModel(PearlConfig(types=["NP-ORG", "NP-GPE", "NP-OTHER"]))
    with torch.no_grad():  # a fine-tune-sized change of every trainable backbone tensor
        g = torch.Generator().manual_seed(0)
        for name, p in model.backbone.named_parameters():
            if "word_embeddings" not in name:
                p.add_(1e-3 * torch.randn(p.shape, generator=g))
    model.save_pretrained(tmp_path / "fp16")
    (tmp_path / "fp16" / "README.md").write_text("provenance")
    sizes = quantize_model_folder(tmp_path / "fp16", tmp_path / "int8")
    assert sizes["int8_mb"] < 0.6 * sizes["source_mb"]
    assert (tmp_path / "int8" / "README.md").read_text() == "provenance"
    config = json.loads((tmp_path / "int8" / "config.json").read_text())
    assert config["format_version"] == 2 and config["delta_precision"] == "int8"
    a = PearlEncoder.from_pretrained(tmp_path / "fp16").encode(TEXTS)
    b = PearlEncoder.from_pretrained(tmp_path / "int8").encode(TEXTS)
    base = PearlModel(PearlConfig()).eval()
    with torch.no_grad():
        c = base(TEXTS)[0].numpy()
    assert np.abs(a - b).max() < 0.1 * np.abs(a - c).max()  # rounding << the fine-tune itself
    with pytest.raises(ValueError, match="another folder"):
        quantize_model_folder(tmp_path / "fp16", tmp_path / "fp16")
    with pytest.raises(ValueError, match="no float16 backbone deltas"):
        quantize_model_folder(tmp_path / "int8", tmp_path / "again")


def test_damaged_dataset_lines_are_refused_by_file_and_line(tmp_path):
    """A paraphrase line that is not tab-separated, a phrase without text, negatives that are
    no list and synonyms that are no object were dropped, read letter by letter or crashed a
    run hours in; now they are named before the first step."""
    from phrasekit.training.pearl.task import PearlData

    damage = {
        "paraphrases.tsv.gz": ("a phrase,another phrase\n", r"paraphrases\.tsv\.gz:1: not a"),
        "phrases.jsonl.gz": ('{"text": null}\n', r"phrases\.jsonl\.gz:1: not a phrase record"),
        "hard_negatives.jsonl.gz": ('{"text": "a b", "negatives": "a c"}\n',
                                    r"hard_negatives\.jsonl\.gz:1: not a hard-negative"),
        "word_synonyms.json.gz": ("[1, 2]", r"word_synonyms\.json\.gz: not an object"),
    }
    for name, (text, message) in damage.items():
        d = tmp_path / name
        _tiny_dataset(d)
        with gzip.open(d / name, "wt", encoding="utf-8") as fh:
            fh.write(text)
        with pytest.raises(ValueError, match=message):
            PearlData.load(d, ["NP-OTHER"])
    ok = tmp_path / "ok"
    _tiny_dataset(ok)
    assert len(PearlData.load(ok, ["NP-OTHER"]).paraphrases) == 1
