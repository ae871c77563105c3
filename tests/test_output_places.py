"""Issue 63: outputs never go into installed files or a model's folder; --save-model and --out
checked against each other before work; ``./-`` is a file; export judges its folder first."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from phrasekit.cli import app
from phrasekit.models.backbones import minilm_path, packaged_model_dir

CORPUS = Path(__file__).parent / "fixtures" / "corpus_small.jsonl"


def invoke(*args: object):
    return CliRunner().invoke(app, [str(a) for a in args])


def refused(res, *named: str) -> None:
    text = res.output.strip()
    assert res.exit_code == 2, res.output
    assert text.count("\n") == 0 and "Traceback" not in text, text
    for name in named:
        assert name in text, (name, text)


@pytest.fixture
def no_model_load(monkeypatch: pytest.MonkeyPatch) -> None:
    """A check meant to run before the model loads fails the test if it does not."""
    import phrasekit.cli.engine  # binds the real load before it is patched
    import phrasekit.registry

    def boom(*_a: object, **_k: object) -> None:
        raise AssertionError("the model was loaded before the output was checked")

    monkeypatch.setattr(phrasekit.registry, "load", boom)


@pytest.mark.parametrize(("model", "folder"), [
    ("pearl-minilm", lambda: packaged_model_dir("pearl-minilm")),
    ("minilm", minilm_path)])
def test_export_into_a_packaged_model_is_refused(model: str, folder, no_model_load) -> None:
    out = folder() / "st"
    refused(invoke("export", model, "--out", out), "--out", "st")
    assert not out.exists()


def test_export_judges_an_existing_folder_before_loading(tmp_path: Path, no_model_load
                                                         ) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.md").write_text("mine", encoding="utf-8")
    refused(invoke("export", "minilm", "--out", out), "mine")
    assert (out / "notes.md").read_text(encoding="utf-8") == "mine"


def test_output_inside_a_model_folder_input_is_refused(tmp_path: Path) -> None:
    model = tmp_path / "hf"
    model.mkdir()
    (model / "config.json").write_text("{}", encoding="utf-8")
    (tmp_path / "p.txt").write_text("paris\n", encoding="utf-8")
    refused(invoke("encode", tmp_path / "p.txt", "-m", model, "--out", model / "v.npy"),
            "inside the model folder")


@pytest.mark.parametrize("inside", ["same", "inside", "holds"])
def test_save_model_and_out_overlapping_are_refused_before_work(tmp_path: Path, inside: str
                                                                ) -> None:
    out = tmp_path / "t13"
    save = {"same": out, "inside": out / "model", "holds": tmp_path}[inside]
    if inside == "holds":
        out = tmp_path / "sub" / "t13"
    res = invoke("topics", CORPUS, "--out", out, "--save-model", save, "-m", "glove-50d",
                 "-k", "3", "-q")
    refused(res, "--save-model")
    assert not out.exists() and not (tmp_path / "t13").exists()


def test_dot_slash_dash_is_a_file_not_stdout(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "p.txt").write_text("paris\nlondon\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    res = invoke("encode", "p.txt", "-m", "glove-50d", "--out", "./-.npy", "-q")
    assert res.exit_code == 0, res.output
    res = invoke("encode", "p.txt", "-m", "glove-50d", "--out", "./-", "-q")
    assert res.exit_code == 0, res.output
    assert res.output == "" and (tmp_path / "-").is_file()
    assert np.load(tmp_path / "-").shape == (2, 50)
    res = invoke("encode", "p.txt", "-m", "glove-50d", "--out", "-", "-q")
    assert res.exit_code == 0 and res.output.count("\n") == 2
    assert os.path.getsize(tmp_path / "-") > 0


@pytest.mark.parametrize("args", [("encode", "p.txt", "-m", "glove-50d", "-o"),
                                  ("keyphrases", "p.txt", "-o"), ("phrases", "p.txt", "-o"),
                                  ("eval", "--tasks", "bird", "--json")])
def test_a_file_output_ending_in_a_separator_is_refused(args: tuple[str, ...], tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    """``-o newdir/`` names a folder: refused, rather than written as a file called newdir."""
    (tmp_path / "p.txt").write_text("paris\nlondon\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    res = invoke(*args, "newdir/", "-q")
    refused(res, "newdir/", "names a folder")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.txt"]


@pytest.mark.parametrize("args", [("keyphrases", "-", "-o", "{f}", "-q"),
                                  ("encode", "-", "-o", "{f}", "-m", "string", "-q"),
                                  ("topics", "-", "-o", "{d}", "-q")])
def test_an_output_that_is_the_file_stdin_reads_is_refused(args: tuple[str, ...],
                                                           tmp_path: Path) -> None:
    """``phrasekit keyphrases - -o c.jsonl < c.jsonl`` replaced the corpus with its keyphrases
    (the same with /dev/stdin was refused)."""
    corpus = tmp_path / "d" / "c.jsonl"
    corpus.parent.mkdir()
    corpus.write_text(CORPUS.read_text())
    before = corpus.read_bytes()
    saved = os.dup(0)
    with corpus.open("rb") as fh:
        os.dup2(fh.fileno(), 0)
        try:
            res = invoke(*(a.format(f=corpus, d=corpus.parent) for a in args))
        finally:
            os.dup2(saved, 0)
            os.close(saved)
    refused(res, "the file stdin reads ('-')")
    assert corpus.read_bytes() == before
