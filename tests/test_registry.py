"""Model registry: names, folders, errors."""

from __future__ import annotations

import gzip
import re
import struct
from pathlib import Path

import numpy as np
import pytest

import phrasekit
from phrasekit.models.backbones import minilm_path


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
    with pytest.raises(ValueError, match="takes no precision"):
        phrasekit.load("glove-50d", precision="bf16")


def test_precision_shorthand():
    enc = phrasekit.load("minilm@bf16")
    assert enc.precision == "bf16" and enc.name == "minilm@bf16"
    with pytest.raises(ValueError, match="precision"):
        phrasekit.load("minilm@fp8")


def test_precision_shorthand_of_a_model_folder(tmp_path):
    """``FOLDER@bf16`` loads a saved PEARL folder in bf16 under its own name (so its vectors
    never share a cache with the fp32 ones); a bad precision is refused by name."""
    from phrasekit.encoders.pearl import PearlConfig, PearlModel

    folder = PearlModel(PearlConfig()).save_pretrained(tmp_path / "pearl")
    texts = ["The New York Times", "graph neural network"]
    fp32, bf16 = phrasekit.load(str(folder)), phrasekit.load(f"{folder}@bf16")
    assert (fp32.precision, fp32.name) == ("fp32", "pearl")
    assert (bf16.precision, bf16.name) == ("bf16", "pearl@bf16")
    # bf16 runs eager attention (SDPA's bf16 CPU kernel is slower on short texts)
    assert bf16.model.backbone.config._attn_implementation == "eager"
    cos = np.sum(fp32.encode(texts) * bf16.encode(texts), axis=1)
    assert cos.min() > 0.99
    with pytest.raises(ValueError, match="precision"):
        phrasekit.load(f"{folder}@fp8")


def test_packaged_phrase_bert_loads_offline_and_differs_from_minilm(minilm):
    """The shipped Phrase-BERT weights load by name and are a real fine-tune of MiniLM."""
    enc = phrasekit.load("phrase-bert-minilm")
    texts = ["interest rates", "the cost of borrowing", "a red car"]
    a, b = enc.encode(texts), minilm.encode(texts)
    assert enc.name == "phrase-bert-minilm" and a.shape == (3, 384)
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-4)
    assert not np.allclose(a, b, atol=1e-3)
    assert "phrase-bert-minilm" in phrasekit.available_models()


def _readable_bytes(path: Path) -> bytes:
    """What a path could hide in: a safetensors file's JSON header, a gzip file's content, or
    the file itself."""
    data = path.read_bytes()
    if path.suffix == ".safetensors":
        (size,) = struct.unpack("<Q", data[:8])
        return data[8 : 8 + size]
    return gzip.decompress(data) if path.suffix == ".gz" else data


def test_packaged_data_holds_no_absolute_machine_paths():
    """Shipped configs and cards must not record where they were built (e.g. /work/shared)."""
    root = Path(phrasekit.__file__).parent / "data"
    files = [p for p in root.rglob("*") if p.is_file()]
    assert len(files) > 10
    absolute = re.compile(rb"/(?:work|home|root|tmp)/")
    assert [str(p.relative_to(root)) for p in files
            if absolute.search(_readable_bytes(p))] == []


def test_precision_request_sends_auto_only_to_models_that_take_it():
    """`encode --precision auto` (its default) reaches the transformer models only: a model
    with one precision, a folder or a name carrying its own precision is loaded as it is."""
    from phrasekit.registry import precision_request

    assert precision_request("pearl-minilm", "auto") == {"precision": "auto"}
    assert precision_request("phrase-bert-minilm", "auto") == {"precision": "auto"}
    assert precision_request("string", "auto") == {} == precision_request("glove-50d", "auto")
    assert precision_request("minilm@int8", "auto") == {}
    assert precision_request(str(minilm_path()), "auto") == {}
    assert precision_request("minilm", "fp32") == {}
    assert precision_request("string", "bf16") == {"precision": "bf16"}  # refused by load
    assert precision_request("minilm@int8", "int8") == {}
    # fast goes to the models that take it, as auto to those that take only auto
    assert precision_request("minilm", "fast") == {"precision": "fast"}
    assert precision_request("pearl-minilm", "fast") == {"precision": "auto"}
    assert precision_request("string", "fast") == {}
    with pytest.raises(ValueError, match="--precision must be one of"):
        precision_request("minilm", "fp16")  # before any model is loaded


def test_a_precision_beside_a_name_carrying_another_is_refused(tmp_path):
    from typer.testing import CliRunner

    from phrasekit.cli import app

    (tmp_path / "p.txt").write_text("paris\n", encoding="utf-8")
    res = CliRunner().invoke(app, ["encode", str(tmp_path / "p.txt"), "-o",
                                   str(tmp_path / "e.npy"), "-m", "minilm@int8",
                                   "--precision", "bf16", "-q"])
    assert res.exit_code == 2 and res.output.count("\n") == 1
    assert "--precision bf16 contradicts the model name 'minilm@int8'" in res.output
    assert not (tmp_path / "e.npy").exists()


def test_a_precision_in_the_name_and_as_an_argument():
    assert phrasekit.load("glove-50d", precision=None).name == "glove-50d"  # None: the default
    with pytest.raises(ValueError, match="contradicts the model name 'minilm@bf16'"):
        phrasekit.load("minilm@bf16", precision="fp32")
    with pytest.raises(ValueError, match="has no precision 'fp8'; its precisions: fp32, bf16"):
        phrasekit.load("minilm", precision="fp8")
