"""The encoder contract (``phrasekit.encoders.base``) on every registered model and every
model folder shipped under ``phrasekit/data/models`` (loaded by path).

Input order survives any batching and any permutation; rows are float32 and unit length (a
static word-vector encoder gives a text with no known word a hashed unit direction); empty
input gives ``(0, d)``; a bad item raises naming its index. The fast encoders get a
property-based check with hypothesis, the transformer-based ones a fixed list of awkward
inputs.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import phrasekit
from phrasekit.encoders.base import Encoder
from phrasekit.encoders.static import StaticWordEncoder
from phrasekit.models.backbones import packaged_model_dir
from phrasekit.registry import available_models, installed_models
from phrasekit.settings import torch_threads

NAMES = installed_models()  # optional models (e.g. mpnet) only when their extra is installed
FOLDERS = sorted(p.name for p in packaged_model_dir("").iterdir()  # and so their folders
                 if (p / "config.json").is_file()
                 and (p.name not in available_models() or p.name in NAMES))
MODELS = [f"name:{n}" for n in NAMES] + [f"folder:{f}" for f in FOLDERS]
FAST = ["name:string", "name:glove-50d", "name:facets-phrase-k3"]

#: Awkward but valid inputs: unknown words, emoji, scripts, a combining mark, characters the
#: WordPiece tokenizer drops (zero-width space, BOM, a control character), surrounding blanks,
#: a repeat, one letter and a text far beyond every encoder's length limit.
TEXTS = [
    "natural language processing", "qzxqzxqzx", "🙂", "日本語", "é", "\u200b", "\ufeff",
    "\x07", " padded ", "New York City", "natural language processing", "a",
    "a long phrase " * 60, "myocardial infarction",
]
WORDS = ["heart", "attack", "new", "york", "city", "protein", "the", "of", "rates", "qzx"]


@pytest.fixture(scope="module", autouse=True)
def _one_torch_thread():
    """One intra-op thread: tiny batches on a busy machine run many times faster."""
    with torch_threads(1):
        yield


def _load(key: str) -> Encoder:
    kind, name = key.split(":", 1)
    return phrasekit.load(name if kind == "name" else str(packaged_model_dir(name)))


@pytest.fixture(scope="module", params=MODELS)
def encoder(request) -> Encoder:
    """Each model once per module (pytest groups the tests by model)."""
    return _load(request.param)


@pytest.fixture(scope="module", params=FAST)
def fast_encoder(request) -> Encoder:
    return _load(request.param)


def check_rows(enc: Encoder, texts: list[str], vecs: np.ndarray) -> None:
    """Float32 (n, dim) unit rows from every encoder (a static one included: a text with no
    known word gets its own hashed direction, never a zero row)."""
    assert vecs.shape == (len(texts), enc.dim) and vecs.dtype == np.float32
    norms = np.linalg.norm(vecs, axis=1)
    unit = np.abs(norms - 1.0) < 1e-4
    bad = [t[:20] for t, ok in zip(texts, unit, strict=True) if not ok]
    assert not bad, f"{enc.name}: rows not unit for {bad}"


def check_order(enc: Encoder, texts: list[str], batch_sizes: tuple[int, ...],
                perm: list[int], atol: float) -> None:
    """The same rows whatever the batch size, and permuted rows for permuted input."""
    full = enc.encode(texts)
    check_rows(enc, texts, full)
    for bs in batch_sizes:
        np.testing.assert_allclose(enc.encode(texts, batch_size=bs), full, atol=atol)
    permuted = enc.encode([texts[i] for i in perm], batch_size=batch_sizes[-1])
    np.testing.assert_allclose(permuted, full[perm], atol=atol)


def test_rows_unit_float32_in_order_under_any_batching(encoder):
    n = len(TEXTS)
    check_order(encoder, TEXTS, (1, 3), [(i * 5 + 3) % n for i in range(n)], atol=1e-5)


def test_no_encoder_gives_zero_rows(encoder):
    vecs = encoder.encode(["qzxqzxqzx", "\u200b", "heart attack"])
    assert vecs.any(axis=1).all()
    if isinstance(encoder, StaticWordEncoder):
        assert encoder.known(["qzxqzxqzx", "\u200b", "heart attack"]).tolist() == [
            False, False, True]


def test_empty_input_gives_zero_by_dim(encoder):
    out = encoder.encode([])
    assert out.shape == (0, encoder.dim) and out.dtype == np.float32


@pytest.mark.parametrize(
    ("bad", "exc"),
    [(None, TypeError), (3, TypeError), (b"x", TypeError), ("", ValueError),
     (" \t\n", ValueError)],
    ids=["none", "int", "bytes", "empty", "blank"],
)
def test_bad_item_names_its_index(encoder, bad, exc):
    with pytest.raises(exc, match=r"texts\[1\]"):
        encoder.encode(["heart attack", bad, "protein folding"])


_phrase = st.lists(st.one_of(st.sampled_from(WORDS), st.text(min_size=1, max_size=6)),
                   min_size=1, max_size=4).map(" ".join).filter(str.strip)


@settings(max_examples=25, deadline=None)
@given(data=st.data(), texts=st.lists(_phrase, min_size=1, max_size=10))
def test_fast_encoders_keep_order_property(fast_encoder, data, texts):
    bs = data.draw(st.integers(min_value=1, max_value=4), label="batch_size")
    perm = data.draw(st.permutations(range(len(texts))), label="permutation")
    check_order(fast_encoder, texts, (bs,), list(perm), atol=1e-6)


def test_every_shipped_folder_is_covered():
    assert FOLDERS and {"pearl-minilm", "phrase-bert-minilm", "uctopic-minilm"} <= set(FOLDERS)
    assert all(Path(packaged_model_dir(f), "model.safetensors").is_file() for f in FOLDERS)
