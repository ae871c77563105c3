"""A saved document topic model used without refitting: ``DocumentTopicModel.applied_to``,
``phrasekit topics apply`` and ``phrasekit topics search``; on 80 real arXiv abstracts."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from phrasekit.cli import app
from phrasekit.io import Document
from phrasekit.topics import DocumentTopicModel

CORPUS = Path(__file__).parent / "fixtures" / "corpus_small.jsonl"
FIT = ["-m", "glove-50d", "-k", "4", "--min-df", "2", "--no-report", "-q", "--no-cache"]


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``phrasekit topics CORPUS --save-model`` (the plain form of the command): its folder
    holds ``model/`` and the fit's outputs ``fit/``."""
    root = tmp_path_factory.mktemp("saved")
    result = CliRunner().invoke(app, ["topics", str(CORPUS), *FIT, "--out", str(root / "fit"),
                                      "--save-model", str(root / "model")])
    assert result.exit_code == 0, result.output
    return root


def test_apply_on_the_fitted_corpus_writes_the_fits_outputs(saved: Path, tmp_path: Path
                                                           ) -> None:
    out = tmp_path / "applied"
    result = CliRunner().invoke(app, ["topics", "apply", str(saved / "model"), str(CORPUS),
                                      "--out", str(out), "--no-report", "-q", "--no-cache"])
    assert result.exit_code == 0, result.output
    assert "80 documents placed in 4 topics" in result.output
    fit = json.loads((saved / "fit" / "topics.json").read_text())
    applied = json.loads((out / "topics.json").read_text())
    assert [k for k in fit if fit[k] != applied[k]] == ["timings_s"]
    assert (out / "topics.md").read_text() .split("Time:")[0] == \
        (saved / "fit" / "topics.md").read_text().split("Time:")[0]


def test_apply_refuses_another_encoder_and_a_folder_that_is_not_a_model(
        saved: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    base = [str(CORPUS), "--out", str(tmp_path / "out"), "-q", "--no-cache"]
    wrong = runner.invoke(app, ["topics", "apply", str(saved / "model"), *base, "-m", "string"])
    assert wrong.exit_code == 2 and "was fitted with encoder" in wrong.output
    not_model = runner.invoke(app, ["topics", "apply", str(saved / "fit"), *base])
    assert not_model.exit_code == 2 and "expected a 'phrasekit-document-topics'" in \
        not_model.output
    missing = runner.invoke(app, ["topics", "search", str(tmp_path / "none"), "graphs"])
    assert missing.exit_code == 2 and "no such folder" in missing.output
    for result in (wrong, not_model, missing):
        assert len(result.output.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_search_lists_the_topic_of_its_own_best_term_first(saved: Path) -> None:
    model = DocumentTopicModel.load(saved / "model")
    hits = 0
    for t in range(model.n_topics_):
        result = CliRunner().invoke(app, ["topics", "search", str(saved / "model"),
                                          model.topics_[t][0][0], "-k", "2", "--json", "-q"])
        assert result.exit_code == 0, result.output
        found = json.loads(result.output)
        assert len(found) == 2 and found[0]["label"] == model.topic_label(found[0]["topic"])
        hits += found[0]["topic"] == t
    assert hits >= model.n_topics_ - 1
    table = CliRunner().invoke(app, ["topics", "search", str(saved / "model"), "graph theory"])
    assert table.output.splitlines()[0] == "topic\tscore\tlabel"
    assert len(table.output.splitlines()) == 5  # the header and -k 5 by default, 4 topics


def test_applied_to_places_documents_as_transform(small_corpus: list[Document]) -> None:
    model = DocumentTopicModel(encoder="glove-50d", n_topics=4, min_df=2, fit_docs=50).fit(
        small_corpus)
    new = small_corpus[:30]
    applied = model.applied_to(new, placement="encoder")
    np.testing.assert_allclose(applied.doc_topics_, model.transform(new), atol=1e-6)
    assert applied.doc_ids_ == [d.id for d in new]
    assert sum(applied.topic_doc_counts_) == 30 and model.topic_doc_counts_ != \
        applied.topic_doc_counts_
    for t, typical in enumerate(applied.typical_docs_):
        assert all(applied.doc_labels_[d] == t for d, _ in typical)
    in_sample = model.sample_index_
    fitted_docs = [small_corpus[i] for i in in_sample]
    np.testing.assert_array_equal(model.applied_to(fitted_docs).doc_labels_,
                                  model.doc_labels_[in_sample])


def test_applied_to_the_fitted_corpus_gives_the_fit(small_corpus: list[Document],
                                                    tmp_path: Path) -> None:
    """Placed as the fit placed them (the sample by the encoder, the rest by the student),
    the fitted corpus gets the fit's topics, shares and sizes, after save and load too; with
    ``placement="encoder"`` some of the student's documents move."""
    corpus = small_corpus + [Document(f"again-{d.id}", d.text, {}) for d in small_corpus[:20]]
    model = DocumentTopicModel(encoder="glove-50d", n_topics=4, min_df=2, fit_docs=50).fit(
        corpus)  # a duplicate text may be sampled while its twin is placed by the student
    assert len(model.sample_index_) < len(corpus)
    loaded = DocumentTopicModel.load(model.save(tmp_path / "model"))
    for m in (model, loaded):
        applied = m.applied_to(corpus)
        np.testing.assert_array_equal(applied.doc_labels_, model.doc_labels_)
        np.testing.assert_allclose(applied.doc_topics_, model.doc_topics_, atol=1e-5)
        assert applied.topic_doc_counts_ == model.topic_doc_counts_
    moved = model.applied_to(corpus, placement="encoder").doc_labels_ != model.doc_labels_
    assert moved.any() and not moved[model.sample_index_].any()
    with pytest.raises(ValueError, match="placement must be one of"):
        model.applied_to(small_corpus, placement="student")


def test_apply_places_a_new_corpus_of_the_fitted_size(saved: Path, tmp_path: Path) -> None:
    """80 other documents (the fit read 80): placed and written, not refused as a corpus that
    differs from the fitted one."""
    docs = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines()]
    other = tmp_path / "other.jsonl"
    other.write_text("".join(json.dumps({"id": f"o{i}", "text": d["text"][::-1] + " and "
                                         + docs[-1 - i]["text"]}) + "\n"
                             for i, d in enumerate(docs)), encoding="utf-8")
    out = tmp_path / "applied"
    result = CliRunner().invoke(app, ["topics", "apply", str(saved / "model"), str(other),
                                      "--out", str(out), "--no-report", "-q", "--no-cache"])
    assert result.exit_code == 0, result.output
    assert "80 documents placed in 4 topics" in result.output
    applied = json.loads((out / "topics.json").read_text())
    assert applied["n_docs"] == 80 and sum(t["n_docs"] for t in applied["topics"]) <= 80


def test_applied_to_a_new_corpus_uses_the_student(small_corpus: list[Document]) -> None:
    """Documents outside the fitted sample are placed by the student, as the fit placed its
    own; with none encoded, typical documents are those of the highest shares."""
    model = DocumentTopicModel(encoder="glove-50d", n_topics=4, min_df=2, fit_docs=50).fit(
        small_corpus)
    new = [Document(f"n{i}", d.text + " again", {}) for i, d in enumerate(small_corpus)]
    applied = model.applied_to(new)
    shares = model.student_.predict_proba([d.text for d in new])
    np.testing.assert_allclose(applied.doc_topics_, shares, atol=1e-6)
    assert applied.n_fit_docs_ == len(model.sample_index_) < len(new)
    for t, typical in enumerate(applied.typical_docs_):
        assert typical and all(applied.doc_labels_[d] == t for d, _ in typical)


def test_apply_reads_the_corpus_before_loading_the_model(saved: Path, tmp_path: Path) -> None:
    """A bad corpus is named before the saved model and its encoder load (bad input first)."""
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "text": "fine"}\n{"id": "b", "text": \n', encoding="utf-8")
    result = CliRunner().invoke(app, ["topics", "apply", str(saved / "fit"), str(bad),
                                      "--out", str(tmp_path / "out"), "-q", "--no-cache"])
    assert result.exit_code == 2
    assert f"{bad}:2" in result.output and "phrasekit-document-topics" not in result.output
    assert not (tmp_path / "out").exists()


def test_too_small_a_corpus_is_named(tmp_path: Path) -> None:
    corpus = tmp_path / "three.jsonl"
    corpus.write_text("".join(json.dumps({"id": str(i), "text": t}) + "\n" for i, t in
                              enumerate(["graphs and trees", "protein folding", "stock markets"])),
                      encoding="utf-8")
    result = CliRunner().invoke(app, ["topics", str(corpus), *FIT, "--out", str(tmp_path / "o")])
    assert result.exit_code == 2
    assert f"{corpus}: only 3 documents" in result.output and "too few for 4 topics" in \
        result.output
    assert not (tmp_path / "o").exists()
