"""Issue 63: documents with no word the model knows are left unassigned (topic -1, zero
shares), counted and warned about, in ``transform``, ``applied_to`` (``topics apply``) and by
the student, instead of all placed in one topic."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from phrasekit.cli import app
from phrasekit.io import Document
from phrasekit.topics import DocumentTopicModel

UNKNOWN = [f"qzxvk{i} blorfing{i} wuzzlepop{i} grimbly{i}" for i in range(20)]


@pytest.fixture(scope="module")
def fitted(small_corpus: list[Document]) -> DocumentTopicModel:
    return DocumentTopicModel(encoder="glove-50d", n_topics=4, min_df=2,
                              fit_docs=50).fit(small_corpus)


def test_transform_leaves_unknown_documents_unassigned(fitted: DocumentTopicModel,
                                                       small_corpus: list[Document],
                                                       caplog: pytest.LogCaptureFixture) -> None:
    shares = fitted.transform([*UNKNOWN, small_corpus[0].text])
    assert not shares[:20].any() and shares[20].sum() == pytest.approx(1, abs=1e-5)
    assert "20 of 21 documents have no word the model knows" in caplog.text


@pytest.mark.parametrize("placement", ["fit", "encoder"])
def test_applied_to_unknown_documents(fitted: DocumentTopicModel, small_corpus: list[Document],
                                      placement: str, caplog: pytest.LogCaptureFixture) -> None:
    docs = [Document(f"u{i}", t, {}) for i, t in enumerate(UNKNOWN)] + small_corpus[-5:]
    applied = fitted.applied_to(docs, placement=placement)
    assert (applied.doc_labels_[:20] == -1).all() and not applied.doc_topics_[:20].any()
    assert (applied.doc_labels_[20:] >= 0).all()
    assert applied.summary()["n_unassigned"] == 20
    assert "20 of 25 documents have no word the model knows" in caplog.text


def test_the_student_leaves_unknown_documents_unassigned(fitted: DocumentTopicModel) -> None:
    assert fitted.student_ is not None
    assert not fitted.student_.predict_proba(UNKNOWN).any()


def test_topics_apply_counts_them(fitted: DocumentTopicModel, tmp_path: Path) -> None:
    fitted.save(tmp_path / "model")
    corpus = tmp_path / "unknown.jsonl"
    corpus.write_text("".join(json.dumps({"id": str(i), "text": t}) + "\n"
                              for i, t in enumerate(UNKNOWN)), encoding="utf-8")
    res = CliRunner().invoke(app, ["topics", "apply", str(tmp_path / "model"), str(corpus),
                                   "--out", str(tmp_path / "out"), "--no-report"])
    assert res.exit_code == 0, res.output
    assert "20 documents placed in 4 topics (20 unassigned" in res.output
    data = json.loads((tmp_path / "out" / "topics.json").read_text(encoding="utf-8"))
    assert [d["topic"] for d in data["doc_topics"]] == [None] * 20
