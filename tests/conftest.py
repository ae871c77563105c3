"""Shared pytest fixtures: encoders loaded once per session, the shared-data location."""

from __future__ import annotations

from pathlib import Path

import pytest

import phrasekit
from phrasekit.settings import corpora_dir, data_dir

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(autouse=True)
def _own_vector_cache(tmp_path_factory: pytest.TempPathFactory,
                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test gets an empty default vector cache: none writes to the user's cache folder
    or sees another test's vectors. ONNX graphs go to one folder of the session's own."""
    monkeypatch.setenv("PHRASEKIT_VECTOR_CACHE", str(tmp_path_factory.mktemp("vectors")))
    monkeypatch.setenv("PHRASEKIT_ONNX_CACHE", str(tmp_path_factory.getbasetemp() / "onnx"))


@pytest.fixture(autouse=True)
def _bf16_not_timed(monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process, ``precision="auto"`` follows the CPU flags without timing torch bf16, so
    that a test faking the flags gets the flags' choice on any machine; the timing's own tests
    put :func:`~phrasekit.encoders.transformer.measured_bf16_speed` back."""
    from phrasekit.encoders import transformer

    monkeypatch.setattr(transformer, "measured_bf16_speed", lambda: None)


@pytest.fixture(scope="session")
def minilm():
    """The packaged all-MiniLM-L6-v2 encoder (loaded once)."""
    return phrasekit.load("minilm")


@pytest.fixture(scope="session")
def glove():
    """GloVe 6B 50d average encoder (loaded once)."""
    return phrasekit.load("glove-50d")


@pytest.fixture(scope="session")
def small_corpus() -> list:
    """80 arXiv abstracts of six archives (``fixtures/corpus_small.jsonl``, with ``label``)."""
    from phrasekit.io import read_corpus

    return read_corpus(FIXTURES / "corpus_small.jsonl")


@pytest.fixture(scope="session")
def small_corpus_phrases(small_corpus: list):
    """spaCy phrases of ``small_corpus`` (extracted once)."""
    from phrasekit.phrases import PhraseExtractor

    return PhraseExtractor().extract(small_corpus)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The shared benchmark data folder, or skip with the reason when it is absent."""
    path = data_dir(required=False)
    if path is None:
        pytest.skip("shared benchmark data not found (set PHRASEKIT_SHARED or PHRASEKIT_DATA)")
    return path


@pytest.fixture(scope="session")
def shared_corpora() -> Path:
    """The shared corpora folder, or skip with the reason when it is absent."""
    path = corpora_dir(required=False)
    if path is None:
        pytest.skip("shared corpora not found (set PHRASEKIT_SHARED or PHRASEKIT_CORPORA)")
    return path
