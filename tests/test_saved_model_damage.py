"""Issue 63: a saved topic model whose files verify (re-signed) but disagree with each other is
refused in one line naming the file and the field."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from phrasekit.artifacts import write_manifest
from phrasekit.cli import app
from phrasekit.io import Document
from phrasekit.topics import DocumentTopicModel
from phrasekit.topics.exploration.explore import KIND


@pytest.fixture(scope="module")
def saved(small_corpus: list[Document], tmp_path_factory: pytest.TempPathFactory) -> Path:
    model = DocumentTopicModel(encoder="glove-50d", n_topics=3, min_df=2).fit(small_corpus)
    return model.save(tmp_path_factory.mktemp("saved") / "model")


def _edit(config: dict) -> None:
    config["n_topics_"] += 1


EDITS: dict[str, tuple[Callable[[dict], None], str]] = {
    "topics": (_edit, "n_topics_: 4 topics but cluster_centers"),
    "doc ids": (lambda c: c["doc_ids"].pop(), "doc_ids: 79 document ids but doc_labels"),
    "vocabulary": (lambda c: c["vocabulary"]["terms"].pop(),
                   "vocabulary: terms, surface and doc_freq"),
    "encoder": (lambda c: c["encoder"].update(spec="/etc"),
                "encoder.spec '/etc': /etc: a folder, but not a model folder"),
    "missing": (lambda c: c.pop("topic_names"), "field 'topic_names' missing"),
}


@pytest.mark.parametrize("name", list(EDITS))
def test_damage_names_file_and_field(saved: Path, tmp_path: Path, name: str) -> None:
    edit, message = EDITS[name]
    model = tmp_path / "model"
    shutil.copytree(saved, model)
    config = json.loads((model / "config.json").read_text(encoding="utf-8"))
    edit(config)
    (model / "config.json").write_text(json.dumps(config), encoding="utf-8")
    write_manifest(model, KIND)
    with pytest.raises(ValueError) as err:
        DocumentTopicModel.load(model)
    assert str(err.value).startswith(f"{model / 'config.json'}: ") and message in str(err.value)
    corpus = Path(__file__).parent / "fixtures" / "corpus_small.jsonl"
    res = CliRunner().invoke(app, ["topics", "apply", str(model), str(corpus), "--out",
                                   str(tmp_path / "out"), "-q"])
    assert res.exit_code == 2 and res.output.count("\n") == 1
    assert "config.json: " in res.output and message in res.output
