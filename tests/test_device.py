"""`--device cpu|cuda|auto`: the rule (auto is CUDA only when torch sees one), encoders that
move their modules and inputs, and the CLI's clear refusal where no GPU exists. The GPU is
mocked: torch reports one, and moving a module or tensor records the device instead."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

import phrasekit
from phrasekit.cli import app
from phrasekit.encoders.base import resolve_device


@pytest.fixture
def fake_gpu(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """torch reports a CUDA device; every module or tensor moved records where to."""
    moved: list[str] = []
    module_to_real, tensor_to_real = torch.nn.Module.to, torch.Tensor.to

    def to_device(real):  # a move to a cuda device is recorded; anything else is real
        def to(self, *args: object, **kwargs: object):
            where = args[0] if args else kwargs.get("device")
            if isinstance(where, str | torch.device):
                moved.append(str(where))
                if str(where).startswith("cuda"):
                    return self
            return real(self, *args, **kwargs)
        return to

    module_to, tensor_to = to_device(module_to_real), to_device(tensor_to_real)

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.nn.Module, "to", module_to)
    monkeypatch.setattr(torch.Tensor, "to", tensor_to)
    return moved


def test_auto_is_cuda_only_when_torch_sees_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PHRASEKIT_DEVICE", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("auto") == resolve_device(None) == "cpu"
    with pytest.raises(ValueError, match="no CUDA device"):
        resolve_device("cuda")
    with pytest.raises(ValueError, match="device must be one of"):
        resolve_device("tpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert resolve_device("auto") == "cuda"
    assert resolve_device("cuda:1") == "cuda:1"
    monkeypatch.setenv("PHRASEKIT_DEVICE", "cpu")
    assert resolve_device(None) == "cpu"


def test_transformer_moves_model_and_batches(fake_gpu: list[str], minilm) -> None:
    texts = ["interest rates", "central bank", "a much longer phrase about neural networks"]
    on_cpu = minilm.encode(texts)
    enc = phrasekit.load("minilm", device="cuda")
    assert enc.device == "cuda" and "cuda" in fake_gpu
    fake_gpu.clear()
    on_gpu = enc.encode(texts)
    assert fake_gpu.count("cuda") >= 2  # the token ids and the mask went to the device
    assert (np.sum(on_cpu * on_gpu, axis=1) > 0.999).all()


def test_encoders_without_torch_stay_on_the_cpu(fake_gpu: list[str]) -> None:
    enc = phrasekit.load("string", device="cuda")
    assert enc.device == "cpu" and enc.encode(["abc"]).shape == (1, enc.dim)


def test_cli_refuses_cuda_without_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.delenv("PHRASEKIT_DEVICE", raising=False)
    runner = CliRunner()
    out, texts = tmp_path / "v.npy", tmp_path / "phrases.txt"
    texts.write_text("interest rates\n")
    bad = runner.invoke(app, ["encode", str(texts), "-m", "string", "--device", "cuda",
                              "-o", str(out)])
    assert bad.exit_code == 2 and "--device" in bad.output and "no CUDA device" in bad.output
    assert not out.exists()
    good = runner.invoke(app, ["encode", str(texts), "-m", "string", "--device", "cpu",
                               "-o", str(out), "-q"])
    assert good.exit_code == 0, good.output
    assert np.load(out).shape[0] == 1
    assert "PHRASEKIT_DEVICE" not in __import__("os").environ


def test_a_model_without_torch_loads_without_importing_torch() -> None:
    import subprocess
    import sys

    code = ("import sys, phrasekit\nphrasekit.load('string', device='auto').encode(['abc'])\n"
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"
