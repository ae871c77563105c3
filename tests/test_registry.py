"""Model registry: names, folders, errors."""

from __future__ import annotations

import pytest

import phrasekit
from phrasekit.models.registry import minilm_path


def test_available_models_lists_the_baselines():
    names = phrasekit.available_models()
    assert {"minilm", "glove-50d", "string"} <= set(names)


def test_unknown_name_lists_known_ones():
    with pytest.raises(ValueError) as info:
        phrasekit.load("bert-large-nonexistent")
    msg = str(info.value)
    assert "unknown model" in msg and "minilm" in msg and "glove-50d" in msg


@pytest.mark.parametrize("bad", ["", "   ", None, 3])
def test_bad_names(bad):
    with pytest.raises(ValueError):
        phrasekit.load(bad)


def test_local_folder_loads_as_transformer():
    enc = phrasekit.load(str(minilm_path()))
    assert enc.dim == 384 and enc.encode(["x y"]).shape == (1, 384)


def test_bad_precision():
    with pytest.raises(ValueError, match="precision"):
        phrasekit.load("minilm", precision="fp8")


def test_glove_rejects_options():
    with pytest.raises(TypeError):
        phrasekit.load("glove-50d", precision="bf16")


def test_precision_shorthand():
    enc = phrasekit.load("minilm@bf16")
    assert enc.precision == "bf16" and enc.name == "minilm@bf16"
    with pytest.raises(ValueError, match="precision"):
        phrasekit.load("minilm@fp8")
