"""Corruption tests: flipped, truncated, swapped and edited files of a model folder, an index, a
checkpoint and a corpus. Every case ends in exit 2 (or a ``ValueError``) naming the file, never
in exit 0 with wrong output."""

from __future__ import annotations

import gzip
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from phrasekit.artifacts import write_manifest
from phrasekit.cli import app
from phrasekit.models.backbones import packaged_model_dir
from phrasekit.similarity.retrieval import EntityIndex
from phrasekit.topics.outputs.report import render_report
from phrasekit.training.core.checkpoint import load_checkpoint, save_checkpoint
from phrasekit.training.core.trainer import Trainer

FIXTURES = Path(__file__).parent / "fixtures"
runner = CliRunner()


def invoke(*args: object):
    return runner.invoke(app, [str(a) for a in args])


def flip(path: Path, at: float = 0.5) -> None:
    """Flip one bit of the byte at relative position ``at``."""
    raw = bytearray(path.read_bytes())
    raw[int(len(raw) * at)] ^= 0x10
    path.write_bytes(bytes(raw))


def truncate(path: Path) -> None:
    raw = path.read_bytes()
    path.write_bytes(raw[: len(raw) // 2])


# ------------------------------------------------------------------ model folders
def _model_cases() -> dict[str, tuple[Callable[[Path, Path], None], str]]:
    """Damage done to a copy of pearl-minilm (given the folder and phrase-bert-minilm's), and
    the file the error must name."""
    def swap(name: str) -> Callable[[Path, Path], None]:
        return lambda m, other: shutil.copy(other / name, m / name)

    def edit_config(m: Path, _: Path) -> None:
        cfg = json.loads((m / "config.json").read_text(encoding="utf-8"))
        cfg["format_version"] = "two"
        (m / "config.json").write_text(json.dumps(cfg), encoding="utf-8")

    return {
        "flip weights": (lambda m, _: flip(m / "model.safetensors"), "model.safetensors"),
        "flip weights header": (lambda m, _: flip(m / "model.safetensors", 0.0001),
                                "model.safetensors"),
        "truncate weights": (lambda m, _: truncate(m / "model.safetensors"),
                             "model.safetensors"),
        "swap weights": (swap("model.safetensors"), "model.safetensors"),
        "swap config": (swap("config.json"), "config.json"),
        "edit config": (edit_config, "config.json"),
        "flip readme": (lambda m, _: flip(m / "README.md"), "README.md"),
        "delete manifest": (lambda m, _: (m / "manifest.json").unlink(), "manifest.json"),
        "garbage manifest": (lambda m, _: (m / "manifest.json").write_text("{", "utf-8"),
                             "manifest.json"),
        "delete weights": (lambda m, _: (m / "model.safetensors").unlink(), "model.safetensors"),
    }


@pytest.mark.parametrize("case", list(_model_cases()))
def test_damaged_model_folder_exit_2_naming_the_file(tmp_path, case):
    model = tmp_path / "model"
    shutil.copytree(packaged_model_dir("pearl-minilm"), model)
    damage, named = _model_cases()[case]
    damage(model, packaged_model_dir("phrase-bert-minilm"))
    src = tmp_path / "p.txt"
    src.write_text("new york city\n", encoding="utf-8")
    out = tmp_path / "v.npy"
    res = invoke("encode", src, "--out", out, "-m", model, "-q")
    assert res.exit_code == 2, res.output
    assert named in res.output and "Traceback" not in res.output
    assert not out.exists()


def test_pickle_only_transformer_folder_refused(tmp_path):
    folder = tmp_path / "bert"
    folder.mkdir()
    (folder / "config.json").write_text('{"model_type": "bert"}', encoding="utf-8")
    (folder / "pytorch_model.bin").write_bytes(b"not loaded")
    src = tmp_path / "p.txt"
    src.write_text("x\n", encoding="utf-8")
    res = invoke("encode", src, "--out", tmp_path / "v.npy", "-m", folder, "-q")
    assert res.exit_code == 2 and "safetensors only" in res.output and str(folder) in res.output


# ------------------------------------------------------------------ saved indexes
NAMES = ["New York City", "Los Angeles", "Chicago", "Houston", "Phoenix", "Philadelphia",
         "San Antonio", "San Diego", "Dallas", "San Francisco"]


def _resave(path: Path, array: np.ndarray, folder: Path) -> None:
    """Rewrite an array and re-sign the folder: damage a manifest cannot see."""
    np.save(path, array)
    write_manifest(folder, "entity-index")


def _index_cases() -> dict[str, tuple[Callable[[Path, Path], None], str]]:
    def reorder(d: Path, _: Path) -> None:
        v = np.load(d / "vectors.npy")
        np.save(d / "vectors.npy", v[::-1].copy())

    def edit_names(d: Path, _: Path) -> None:
        lines = (d / "names.jsonl").read_text(encoding="utf-8").splitlines()
        lines[2], lines[9] = lines[9], lines[2]
        (d / "names.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")

    def nan_signed(d: Path, _: Path) -> None:
        _resave(d / "vectors.npy", np.full((len(NAMES), 384), np.nan, np.float32), d)

    def zero_signed(d: Path, _: Path) -> None:
        _resave(d / "vectors.npy", np.zeros((len(NAMES), 384), np.float32), d)

    def count_signed(d: Path, _: Path) -> None:
        cfg = json.loads((d / "config.json").read_text(encoding="utf-8"))
        cfg["count"] = "five"
        (d / "config.json").write_text(json.dumps(cfg), encoding="utf-8")
        write_manifest(d, "entity-index")

    return {
        "flip vectors": (lambda d, _: flip(d / "vectors.npy"), "vectors.npy"),
        "truncate vectors": (lambda d, _: truncate(d / "vectors.npy"), "vectors.npy"),
        "reorder vectors": (reorder, "vectors.npy"),
        "swap faiss": (lambda d, o: shutil.copy(o / "index.faiss", d / "index.faiss"),
                       "index.faiss"),
        "edit names": (edit_names, "names.jsonl"),
        "nan vectors, re-signed": (nan_signed, "vectors.npy"),
        "zero vectors, re-signed": (zero_signed, "vectors.npy"),
        "count not a number, re-signed": (count_signed, "config.json"),
        "delete manifest": (lambda d, _: (d / "manifest.json").unlink(), "manifest.json"),
    }


@pytest.fixture(scope="module")
def saved_indexes(tmp_path_factory, minilm):
    root = tmp_path_factory.mktemp("indexes")
    EntityIndex.build(NAMES, minilm, index="ann").save(root / "a")
    EntityIndex.build(list(reversed(NAMES)), minilm, index="ann").save(root / "b")
    return root


@pytest.mark.parametrize("case", list(_index_cases()))
def test_damaged_index_exit_2_naming_the_file(tmp_path, saved_indexes, case):
    index = tmp_path / "idx"
    shutil.copytree(saved_indexes / "a", index)
    damage, named = _index_cases()[case]
    damage(index, saved_indexes / "b")
    res = invoke("index", "query", index, "chicago", "-k", "1", "-q")
    assert res.exit_code == 2, res.output
    assert named in res.output and "Traceback" not in res.output
    assert "Chicago" not in res.output and "San Francisco" not in res.output


def test_index_build_refuses_nan_and_zero_rows():
    from phrasekit.similarity.index import build_index

    vecs = np.eye(4, dtype=np.float32)
    vecs[2] = 0
    with pytest.raises(ValueError, match=r"all zeros \(first: row 2\)"):
        build_index(vecs, kind="exact")
    vecs[2, 0] = np.nan
    with pytest.raises(ValueError, match=r"non-finite values \(first: row 2\)"):
        build_index(vecs, kind="ann")


# ------------------------------------------------------------------ checkpoints
def _tiny() -> tuple[torch.nn.Module, torch.optim.Optimizer]:
    torch.manual_seed(0)
    model = torch.nn.Linear(64, 64)
    opt = torch.optim.AdamW(model.parameters(), lr=0.01)
    model(torch.randn(2, 64)).sum().backward()
    opt.step()
    return model, opt


@pytest.mark.parametrize(("damage", "message"), [
    (lambda p: flip(p, 0.7), "fail their checksum"),
    (lambda p: flip(p, 0.002), "unreadable checkpoint|fail their checksum"),
    (truncate, "unreadable checkpoint"),
    (lambda p: p.write_bytes(b""), "unreadable checkpoint"),
])
def test_damaged_checkpoint_refused(tmp_path, damage, message):
    path = tmp_path / "checkpoint.safetensors"
    model, opt = _tiny()
    save_checkpoint(path, model, opt, {"step": 3})
    assert load_checkpoint(path, *_tiny())["step"] == 3
    damage(path)
    with pytest.raises(ValueError, match=message) as err:
        load_checkpoint(path, *_tiny())
    assert str(path) in str(err.value)


def test_step_budget_below_the_checkpoint_is_an_error(tmp_path):
    from tests.test_trainer import TinyTask

    Trainer(tmp_path, total_steps=8, checkpoint_every=4, show_progress=False).fit(TinyTask())
    with pytest.raises(ValueError, match="at step 8, past the 5 steps"):
        Trainer(tmp_path, total_steps=5, checkpoint_every=4, show_progress=False).fit(TinyTask())


# ------------------------------------------------------------------ corpora and the CLI path
@pytest.mark.parametrize("command", [["phrases", "--out", "{out}/p.json"],
                                     ["topics", "--out", "{out}/t"],
                                     ["keyphrases", "--out", "{out}/k.jsonl"]])
@pytest.mark.parametrize("damage", ["flip", "truncate"])
def test_corrupt_gzip_corpus_exit_2(tmp_path, command, damage):
    corpus = tmp_path / "c.jsonl.gz"
    corpus.write_bytes(gzip.compress((FIXTURES / "corpus_small.jsonl").read_bytes()))
    (flip if damage == "flip" else truncate)(corpus)
    args = [a.format(out=tmp_path) for a in command]
    res = invoke(args[0], corpus, *args[1:], "-q")
    assert res.exit_code == 2, res.output
    assert "c.jsonl.gz" in res.output and "Traceback" not in res.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.jsonl.gz"]


def test_debug_shows_the_traceback(tmp_path):
    args = ["encode", tmp_path / "missing.txt", "--out", tmp_path / "v.npy", "-q"]
    assert invoke(*args).exit_code == 2
    res = invoke("--debug", *args)
    assert res.exit_code == 1 and res.exception is not None  # raised, not folded into a line


def test_report_title_is_filled_once_and_escaped():
    title = "__JS__ {{ js }} </script><script>alert(1)</script>"
    page = render_report({"topics": [], "doc_topics": [], "n_docs": 0}, [], {}, title=title)
    assert page.count("<script>") == 1  # the page's own script only
    assert "{{ js }} &lt;/script&gt;" in page and "alert(1)</script>" not in page
