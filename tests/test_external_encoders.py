"""Models in from the ecosystem and out to its code: a SentenceTransformer or any object with
``encode`` in phrasekit's contract, phrasekit encoders taking sentence-transformers' keywords,
and the APIs that take a model name taking one."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import phrasekit
from phrasekit.similarity.join import fuzzy_join


class Plain:
    """A user's encoder: encode(list) -> list of lists."""

    def encode(self, texts):
        return [[len(t), t.count("a") + 1.0, 1.0] for t in texts]


def test_sentence_transformer_object_keeps_its_own_vectors(minilm) -> None:
    from sentence_transformers import SentenceTransformer

    from phrasekit.models.backbones import minilm_path

    st = SentenceTransformer(str(minilm_path()), device="cpu")
    st.max_seq_length = 16  # its own settings are honoured: the wrapper does not re-pool
    enc = phrasekit.load(st)
    texts = ["interest rates rose again this year as the central bank fought inflation, while "
             "house prices, wages and the cost of energy kept climbing across the whole "
             "country for the third year running", "bank"]
    ours = enc.encode(texts)
    theirs = st.encode(texts, normalize_embeddings=True)
    assert enc.dim == 384 and (np.sum(ours * theirs, axis=1) > 0.9999).all()
    assert np.sum(ours[0] * minilm.encode(texts[:1])[0]) < 0.999  # 16 tokens, not 256


def test_any_object_with_encode_is_wrapped_in_order_as_unit_rows() -> None:
    enc = phrasekit.load(Plain())
    out = enc.encode(["banana", "kiwi", "a"])
    assert out.dtype == np.float32 and np.allclose(np.linalg.norm(out, axis=1), 1.0)
    raw = np.asarray(Plain().encode(["kiwi"]), dtype=np.float32)
    assert np.allclose(out[1], raw[0] / np.linalg.norm(raw[0]))
    with pytest.raises(TypeError, match="no encode method"):
        phrasekit.encoders.ExternalEncoder(object())


def test_wrapped_errors_name_the_text() -> None:
    class Zero(Plain):
        def encode(self, texts):
            return [[0.0, 0.0, 0.0] if t == "bad" else [1.0, 0.0, 0.0] for t in texts]

    with pytest.raises(ValueError, match="text 1 \\('bad'\\)"):
        phrasekit.load(Zero()).encode(["good", "bad"])

    class Ragged(Plain):
        def encode(self, texts):
            return [[1.0, 0.0, 0.0] if t == "good" else [1.0] for t in texts]

    with pytest.raises(ValueError, match="rows of different lengths"):
        phrasekit.load(Ragged()).encode(["good", "bad"])


def test_encoders_take_sentence_transformers_keywords(minilm) -> None:
    texts = ["neural network", "interest rate"]
    base = minilm.encode(texts)
    same = minilm.encode(texts, batch_size=1, show_progress_bar=False, convert_to_numpy=True,
                         normalize_embeddings=True)
    assert np.allclose(base, same, atol=1e-5)
    tensor = minilm.encode(texts, convert_to_tensor=True)
    assert isinstance(tensor, torch.Tensor) and tensor.shape == (2, 384)
    assert minilm.get_sentence_embedding_dimension() == 384
    with pytest.raises(TypeError, match="unexpected keyword argument 'nonsense'"):
        minilm.encode(texts, nonsense=1)
    with pytest.raises(ValueError, match="output_value='token_embeddings'"):
        minilm.encode(texts, output_value="token_embeddings")


def test_fuzzy_join_takes_a_model_name() -> None:
    left = [(0, "New York City"), (1, "Los Angeles")]
    right = [(0, "new york city"), (1, "los angeles")]
    matches = fuzzy_join(left, right, "string")
    assert [(m.left_row, m.right_row) for m in matches] == [(0, 0), (1, 1)]


@pytest.fixture(scope="module")
def st_folder(tmp_path_factory: pytest.TempPathFactory):
    """A sentence-transformers folder of MiniLM with CLS pooling, 16 tokens, a Dense layer
    (384 -> 64, tanh) and Normalize."""
    from sentence_transformers import SentenceTransformer, models

    from phrasekit.models.backbones import minilm_path

    word = models.Transformer(str(minilm_path()), max_seq_length=16)
    pool = models.Pooling(384, pooling_mode="cls")
    torch.manual_seed(0)
    dense = models.Dense(384, 64)
    st = SentenceTransformer(modules=[word, pool, dense, models.Normalize()], device="cpu")
    path = tmp_path_factory.mktemp("st") / "cls-minilm"
    st.save(str(path))
    return path, st


def test_sentence_transformers_folder_is_honoured(st_folder) -> None:
    path, st = st_folder
    texts = ["a long sentence about interest rates and inflation that runs past sixteen "
             "tokens for certain, with more words after it", "bank"]
    ours = phrasekit.load(str(path)).encode(texts)
    theirs = st.encode(texts)
    assert ours.shape == (2, 64) and (np.sum(ours * theirs, axis=1) > 0.9999).all()
    with pytest.raises(ValueError, match="takes no precision"):
        phrasekit.load(str(path), precision="bf16")


def test_sentence_transformers_folder_with_foreign_code_or_pickles_is_refused(
        st_folder, tmp_path) -> None:
    import json
    import shutil

    path, _ = st_folder
    foreign = tmp_path / "foreign"
    shutil.copytree(path, foreign)
    modules = json.loads((foreign / "modules.json").read_text())
    modules[1]["type"] = "my_package.MyPooling"
    (foreign / "modules.json").write_text(json.dumps(modules))
    with pytest.raises(ValueError, match=r"'my_package\.MyPooling' is not supported"):
        phrasekit.load(str(foreign))
    pickled = tmp_path / "pickled"
    shutil.copytree(path, pickled)
    (pickled / "1_Pooling" / "pytorch_model.bin").write_bytes(b"not read")
    with pytest.raises(ValueError, match="pickled weights"):
        phrasekit.load(str(pickled))


def test_hub_id_only_from_the_local_cache() -> None:
    with pytest.raises(ValueError, match="local Hugging Face cache"):
        phrasekit.load("nobody-here/not-a-cached-model")


def test_export_to_sentence_transformers(tmp_path) -> None:
    import yaml
    from sentence_transformers import SentenceTransformer
    from typer.testing import CliRunner

    from phrasekit.cli import app

    out = tmp_path / "pb"
    result = CliRunner().invoke(app, ["export", "phrase-bert-minilm", "--out", str(out), "-q"])
    assert result.exit_code == 0, result.output
    texts = ["heart attack", "myocardial infarction", "protein folding"]
    theirs = SentenceTransformer(str(out), device="cpu").encode(texts)
    ours = phrasekit.load("phrase-bert-minilm").encode(texts)
    assert (np.sum(ours * theirs, axis=1) > 0.9999).all()
    # every file the usual mode (sentence-transformers' safetensors had come out 0600)
    assert len({p.stat().st_mode & 0o777 for p in out.rglob("*") if p.is_file()}) == 1
    card = (out / "README.md").read_text(encoding="utf-8")
    front = yaml.safe_load(card.split("---")[1])
    assert front["license"] == "apache-2.0" and front["library_name"] == "sentence-transformers"
    assert front["base_model"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert "| bird | turney |" in card and "| 68.2 | 53.2 |" in card
    refused = CliRunner().invoke(app, ["export", "facets-phrase-k3", "--out",
                                       str(tmp_path / "f")])
    assert refused.exit_code == 2 and "only transformer and PEARL" in refused.output
    assert not (tmp_path / "f").exists()
    weights = out / "model.safetensors"  # cut short: the damaged file is named
    weights.write_bytes(weights.read_bytes()[:1000])
    with pytest.raises(ValueError, match=r"model\.safetensors"):
        phrasekit.load(str(out))


def test_export_pearl_with_its_character_cnn(tmp_path) -> None:
    """PEARL leaves with its character CNN and projection as phrasekit's installed
    sentence-transformers modules: SentenceTransformer encodes as phrasekit, typos and case
    included, offline."""
    import json

    import yaml
    from sentence_transformers import SentenceTransformer
    from typer.testing import CliRunner

    from phrasekit.cli import app

    out = tmp_path / "pearl"
    result = CliRunner().invoke(app, ["export", "pearl-minilm", "--out", str(out), "-q"])
    assert result.exit_code == 0, result.output
    assert "trust_remote_code=True" in result.output
    kinds = [m["type"] for m in json.loads((out / "modules.json").read_text())]
    assert kinds[0] == "phrasekit.encoders.st_modules.PearlTransformer"
    assert "phrasekit.encoders.st_modules.PearlProjection" in kinds
    assert not list(out.rglob("*.bin")) and not list(out.rglob("*.pt"))
    texts = ["The New York Times", "NYTimes", "nytmies", "heart attack", "sodium chloride",
             "Université Paris-Saclay", "a" * 300]
    # sentence-transformers 6 asks for trust_remote_code for any module class outside its own
    # package, an installed one included; the folder itself holds no code
    assert not list(out.rglob("*.py"))
    model = SentenceTransformer(str(out), device="cpu", local_files_only=True,
                                trust_remote_code=True)
    theirs = model.encode(texts, batch_size=3)
    ours = phrasekit.load("pearl-minilm").encode(texts)
    assert (np.sum(ours * theirs, axis=1) > 0.9999).all()
    front = yaml.safe_load((out / "README.md").read_text(encoding="utf-8").split("---")[1])
    assert front["base_model"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert "DBpedia" in (out / "README.md").read_text(encoding="utf-8")


def test_phrasekit_loads_its_own_pearl_export(tmp_path) -> None:
    """``phrasekit.load`` and the CLI's ``--model`` read a PEARL folder written by
    ``phrasekit export`` (phrasekit's modules built here: no trust_remote_code), with the
    original model's vectors; a foreign module type next to them is still refused."""
    import json
    import shutil

    from typer.testing import CliRunner

    from phrasekit.cli import app
    from phrasekit.encoders import export_sentence_transformers

    out = tmp_path / "pearl"
    export_sentence_transformers(phrasekit.load("pearl-minilm", device="cpu"), out)
    texts = ["The New York Times", "nytmies", "heart attack", "a" * 300]
    ours = phrasekit.load(str(out)).encode(texts)
    original = phrasekit.load("pearl-minilm").encode(texts)
    assert (np.sum(ours * original, axis=1) >= 0.9999).all()
    phrases = tmp_path / "phrases.txt"
    phrases.write_text("\n".join(texts) + "\n", encoding="utf-8")
    vectors = tmp_path / "v.npy"
    result = CliRunner().invoke(app, ["encode", str(phrases), "-o", str(vectors), "--model",
                                      str(out), "-q"])
    assert result.exit_code == 0, result.output
    assert (np.sum(np.load(vectors) * original, axis=1) >= 0.9999).all()
    card = (out / "README.md").read_text(encoding="utf-8")
    assert "## Usage" in card and "trust_remote_code=True" in card
    assert 'phrasekit.load("path/to/this/folder")' in card
    foreign = tmp_path / "foreign"
    shutil.copytree(out, foreign)
    modules = json.loads((foreign / "modules.json").read_text())
    modules[2]["type"] = "phrasekit.encoders.st_modules.Evil"
    (foreign / "modules.json").write_text(json.dumps(modules))
    with pytest.raises(ValueError, match=r"'phrasekit\.encoders\.st_modules\.Evil' is not"):
        phrasekit.load(str(foreign))


def test_a_model_cards_name_is_text() -> None:
    """A folder's name went into the card's heading raw: HTML, and lines of its own."""
    from phrasekit.encoders.model_card import model_card

    card = model_card("hf<img src=x onerror=alert(1)>\n---\nlicense: mit", 384, 256)
    heading = next(line for line in card.splitlines() if line.startswith("# "))
    assert heading == r"# hf\<img src=x onerror=alert(1)\> --- license: mit (exported from " \
                      "phrasekit)"
    assert card.count("\n---\n") == 1 and "<img" not in card.replace(r"\<img", "")
