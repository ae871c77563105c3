"""Low-rank adapters: an adapted layer starts as its base, merges exactly, and a PEARL trained
with them stores its backbone's changes as low-rank factors that load to the same model."""

from __future__ import annotations

import logging

import numpy as np
import pytest
import torch
from safetensors import safe_open
from test_pearl import TEXTS, _tiny_run

from phrasekit.encoders.pearl import PearlEncoder, PearlModel
from phrasekit.models.backbones import load_backbone
from phrasekit.models.weights import backbone_deltas
from phrasekit.training.core.adapters import LowRankLinear, add_adapters, merge_adapters


def test_an_adapted_layer_starts_as_its_base_and_merges_exactly():
    torch.manual_seed(0)
    base = torch.nn.Linear(12, 8)
    x = torch.randn(5, 12)
    before = base(x).detach()
    layer = LowRankLinear(base, rank=2, alpha=4.0)
    assert torch.equal(layer(x), before)  # B starts at zero
    with torch.no_grad():
        layer.lora_b.normal_()
    adapted = layer(x).detach()
    assert not torch.allclose(adapted, before)
    original = base.weight.detach().clone()
    merged = layer.merged()
    assert isinstance(merged, torch.nn.Linear)
    assert torch.allclose(merged(x), adapted, atol=1e-5)
    assert int(torch.linalg.matrix_rank(merged.weight.detach() - original, rtol=1e-4)) == 2


def test_adapters_go_on_the_block_linears_only_and_train_alone():
    _, backbone = load_backbone("minilm")
    reference = {k: v.clone() for k, v in backbone.state_dict().items()}
    count = add_adapters(backbone, rank=4)
    assert count == 6 * 6  # q, k, v, attention output, intermediate, output per layer
    trainable = {n for n, p in backbone.named_parameters() if p.requires_grad}
    assert trainable and all(n.endswith(("lora_a", "lora_b")) for n in trainable)
    assert merge_adapters(backbone) == count
    assert not any(p.requires_grad for p in backbone.parameters())
    merged = backbone.state_dict()
    assert merged.keys() == reference.keys()  # a plain backbone again, unchanged (B was zero)
    assert all(torch.equal(merged[k], reference[k]) for k in reference)
    with pytest.raises(ValueError, match="rank must be > 0"):
        add_adapters(backbone, rank=0)


def test_a_full_rank_change_is_stored_whole(caplog):
    _, backbone = load_backbone("minilm")
    with torch.no_grad():
        backbone.encoder.layer[0].output.dense.weight.add_(
            0.01 * torch.randn_like(backbone.encoder.layer[0].output.dense.weight))
    with caplog.at_level(logging.WARNING, logger="phrasekit.models.weights"):
        tensors, _ = backbone_deltas(backbone, "minilm", rank=4)
    assert list(tensors) == ["backbone_delta.encoder.layer.0.output.dense.weight"]
    assert "not of rank 4" in caplog.text


def test_pearl_trained_with_adapters_saves_low_rank_factors(tmp_path):
    from phrasekit.training.pearl.config import PearlTrainingConfig

    cfg = _tiny_run(tmp_path, max_steps=3, lr=1e-2, adapter_rank=4)
    folder = tmp_path / "t" / "model"
    with safe_open(str(folder / "model.safetensors"), framework="pt") as fh:
        keys = list(fh.keys())
        shapes = {k: tuple(fh.get_slice(k).get_shape()) for k in keys}
    ups = [k for k in keys if k.startswith("backbone_delta_up.")]
    assert len(ups) == 36
    assert not [k for k in keys if k.startswith("backbone_delta.")]  # nothing stored whole
    assert all(shapes[k][1] == 4 for k in ups)
    model = PearlModel.from_pretrained(folder)
    assert model.config.delta_rank == 4
    base = load_backbone("minilm")[1].state_dict()
    trained = model.backbone.state_dict()
    changed = [k for k in base if not torch.equal(trained[k], base[k])]
    assert changed and all(".layer." in k and k.endswith(".weight") for k in changed)
    delta = trained[changed[0]] - base[changed[0]]
    assert int(torch.linalg.matrix_rank(delta, rtol=1e-3)) <= 4
    vectors = PearlEncoder(model).encode(TEXTS)
    assert not np.allclose(vectors, PearlEncoder(PearlModel(model.config)).encode(TEXTS),
                           atol=1e-3)  # the adapters trained
    for bad, match in (({"adapter_rank": -1}, "adapter_rank must be >= 0"),
                       ({"train_layers": 2}, "do not combine"),
                       ({"backbone": "bert"}, "backbone must be one of")):
        with pytest.raises(ValueError, match=match):
            PearlTrainingConfig(**{**cfg.__dict__, **bad}).validate()


def test_packaged_pearl_mpnet_is_low_rank_and_loads_where_mpnet_is_installed():
    from phrasekit.models.backbones import packaged_model_dir
    from phrasekit.models.mpnet import mpnet_installed

    folder = packaged_model_dir("pearl-mpnet")
    assert (folder / "model.safetensors").stat().st_size < 30 * 2**20
    with safe_open(str(folder / "model.safetensors"), framework="pt") as fh:
        keys = list(fh.keys())
        ranks = {tuple(fh.get_slice(k).get_shape())[1] for k in keys
                 if k.startswith("backbone_delta_up.")}
    assert ranks == {16} and not [k for k in keys if k.startswith("backbone_delta.")]
    if not mpnet_installed():
        pytest.skip("the mpnet backbone is not installed (pip install 'phrasekit[mpnet]')")
    import phrasekit

    vectors = phrasekit.load("pearl-mpnet").encode(TEXTS)
    assert vectors.shape == (4, 768)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
