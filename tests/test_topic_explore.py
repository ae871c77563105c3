"""Fitted document topics kept, named and searched: save / load (checked, same placement,
same encoder only), set_topic_labels, find_topics; on 80 real arXiv abstracts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from phrasekit.artifacts import IntegrityError
from phrasekit.io import Document
from phrasekit.topics import DocumentTopicModel


@pytest.fixture(scope="module")
def fitted(small_corpus: list[Document]) -> DocumentTopicModel:
    """Fitted on 50 of the 80 abstracts, the other 30 placed by the student."""
    return DocumentTopicModel(encoder="glove-50d", n_topics=4, min_df=2, fit_docs=50).fit(
        small_corpus)


def test_saved_model_places_documents_as_the_fitted_one(
        fitted: DocumentTopicModel, small_corpus: list[Document], tmp_path: Path) -> None:
    fitted.save(tmp_path / "model")
    back = DocumentTopicModel.load(tmp_path / "model")
    new = [d.text for d in small_corpus[:12]]
    np.testing.assert_allclose(back.transform(new), fitted.transform(new), atol=1e-6)
    np.testing.assert_allclose(back.student_.predict_proba(new),
                               fitted.student_.predict_proba(new), atol=1e-6)
    assert [back.topic_label(t) for t in range(4)] == [fitted.topic_label(t) for t in range(4)]
    assert back.summary()["topic_sizes"] == fitted.summary()["topic_sizes"]
    assert back.doc_ids_ == fitted.doc_ids_


def test_a_model_saved_or_pickled_before_the_word_budget_reads_its_old_windows(
        fitted: DocumentTopicModel, tmp_path: Path) -> None:
    """A saved config without ``max_words``, or a pickle without the attribute, keeps the
    windows it was fitted with (``chunk_size`` words each), not today's default."""
    import json
    import pickle

    from phrasekit.artifacts import write_manifest
    from phrasekit.topics.exploration.explore import KIND

    assert fitted.max_words == 200  # today's default
    folder = fitted.save(tmp_path / "model")
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    del config["params"]["max_words"]
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    write_manifest(folder, KIND)
    assert DocumentTopicModel.load(folder).max_words is None
    old = pickle.loads(pickle.dumps(fitted))
    del old.__dict__["max_words"]
    assert old.max_words is None


def test_load_refuses_another_encoder_and_damaged_files(
        fitted: DocumentTopicModel, tmp_path: Path) -> None:
    folder = fitted.save(tmp_path / "model")
    with pytest.raises(ValueError, match="was fitted with encoder"):
        DocumentTopicModel.load(folder, encoder="string")
    arrays = folder / "arrays.safetensors"
    data = bytearray(arrays.read_bytes())
    data[-3] ^= 0xFF
    arrays.write_bytes(bytes(data))
    with pytest.raises(IntegrityError, match=r"arrays\.safetensors"):
        DocumentTopicModel.load(folder)


def test_a_model_fitted_on_another_runtime_loads_by_its_spec(
        fitted: DocumentTopicModel, tmp_path: Path) -> None:
    """``phrasekit topics`` may run fp32 on ONNX Runtime (``auto``, measured faster) where
    loading the saved spec gives torch: the same vectors, so the model loads; another
    precision is still refused."""
    import json

    from phrasekit.artifacts import write_manifest
    from phrasekit.encoders.cache import same_space
    from phrasekit.topics.exploration.explore import KIND

    folder = fitted.save(tmp_path / "model")
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    ident = config["encoder"]["identity"]
    config["encoder"]["identity"] = ident.replace(" ", " backend=onnx ", 1)
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    write_manifest(folder, KIND)
    assert DocumentTopicModel.load(folder).n_topics_ == fitted.n_topics_
    fp32 = "minilm TransformerEncoder backend=onnx max_seq_length=256 precision=fp32 c9f5"
    assert same_space(fp32, fp32.replace("backend=onnx ", ""))
    assert not same_space(fp32, fp32.replace("precision=fp32", "precision=int8"))
    assert not same_space(fp32, fp32.replace("c9f5", "0a1b"))


def test_save_never_replaces_a_users_folder(fitted: DocumentTopicModel, tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    with pytest.raises(ValueError):
        fitted.save(mine)
    assert (mine / "notes.txt").read_text() == "keep me"


def test_custom_labels_are_used_and_kept(fitted: DocumentTopicModel, tmp_path: Path) -> None:
    before = fitted.topic_label(1)
    fitted.set_topic_labels({1: "  quantum   gravity "})
    try:
        assert fitted.topic_label(1) == "quantum gravity"
        back = DocumentTopicModel.load(fitted.save(tmp_path / "named"))
        assert back.topic_label(1) == "quantum gravity" and back.topic_label(0) == \
            fitted.topic_label(0)
        with pytest.raises(ValueError, match="does not exist"):
            fitted.set_topic_labels({9: "nine"})
    finally:
        fitted.set_topic_labels({1: ""})
    assert fitted.topic_label(1) == before


def test_find_topics_finds_a_topic_by_its_own_terms(small_corpus: list[Document],
                                                    minilm) -> None:
    """With the default encoder's vectors, a topic's own top term finds it first (GloVe
    averages of one generic word such as "paper" are too weak a query for that)."""
    fitted = DocumentTopicModel(encoder=minilm, n_topics=4, min_df=2, fit_docs=50).fit(
        small_corpus)
    hits = 0
    for t in range(fitted.n_topics_):
        found = fitted.find_topics(fitted.topics_[t][0][0], k=2)
        assert len(found) == 2 and found[0][1] >= found[1][1]
        hits += found[0][0] == t
    assert hits >= fitted.n_topics_ - 1
    with pytest.raises(ValueError, match="non-empty"):
        fitted.find_topics("  ")


def test_cli_saves_the_model_it_fitted(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from phrasekit.cli import app

    corpus = Path(__file__).parent / "fixtures" / "corpus_small.jsonl"
    args = ["topics", str(corpus), "-m", "glove-50d", "-k", "4", "--min-df", "2",
            "--no-report", "-q", "--out", str(tmp_path / "out")]
    wrong = CliRunner().invoke(app, [*args, "--method", "clusters", "--save-model",
                                     str(tmp_path / "m")])
    assert wrong.exit_code == 2 and "--save-model" in wrong.output
    result = CliRunner().invoke(app, [*args, "--save-model", str(tmp_path / "model")])
    assert result.exit_code == 0, result.output
    back = DocumentTopicModel.load(tmp_path / "model")
    assert back.n_topics_ == 4 and len(back.doc_ids_) == 80


def test_a_registered_encoder_is_saved_by_its_name_with_precision() -> None:
    """``run_topics`` (and the CLI) fit with a loaded ``minilm@auto``: its folder alone would be
    loaded back at fp32 and refused, so the saved spec is the name with its precision."""
    from types import SimpleNamespace

    from phrasekit.topics.exploration.explore import _encoder_spec

    enc = SimpleNamespace(name="minilm@bf16", model_path=Path("site-packages/minilm/model"))
    assert _encoder_spec(SimpleNamespace(encoder=enc, encoder_=enc)) == "minilm@bf16"
    own = SimpleNamespace(name="model", model_path=Path("runs/my-encoder"))
    assert _encoder_spec(SimpleNamespace(encoder=own, encoder_=own)) == "runs/my-encoder"
