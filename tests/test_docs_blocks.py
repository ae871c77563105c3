"""Every Python block of README.md and docs/ runs as written, on a slice of the bundled sample.

Blocks run in a fresh folder holding ``corpus.jsonl`` (the first documents of the bundled
sample), ``left.csv`` / ``right.csv`` (a ``name`` column) and, for the SubTST page, a model
trained on the miniature STS-B pairs at ``runs/subtst-msrp``. Fragments may use the names a
page's prose introduces: ``phrasekit``, ``docs``, ``new_docs``, ``sentences``, ``names``,
``encoder``; the blocks of one page share their names, in order, as in a notebook. Blocks
that import BERTopic, KeyBERT or pandas need the ``bench`` extra, which
``scripts/run-tests.sh`` installs.
"""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
BLOCKS = [(page, i, block) for page in PAGES for i, block in enumerate(
    re.findall(r"^```python\n(.*?)^```", page.read_text(encoding="utf-8"), flags=re.S | re.M))]
N_DOCS = 150


def _ids() -> list[str]:
    return [f"{page.relative_to(ROOT)}:{i}" for page, i, _ in BLOCKS]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with the files the blocks name."""
    from phrasekit.datasets import resolve_corpus

    folder = tmp_path_factory.mktemp("docs")
    with gzip.open(resolve_corpus("sample"), "rt", encoding="utf-8") as f:
        lines = [next(f) for _ in range(N_DOCS)]
    (folder / "corpus.jsonl").write_text("".join(lines), encoding="utf-8")
    (folder / "left.csv").write_text(
        "name\nNew York City\nLos Angeles\nSan Francisco\nInternational Business Machines\n",
        encoding="utf-8")
    (folder / "right.csv").write_text("name\nNYC\nSan Fransisco\nIBM Corp\n", encoding="utf-8")
    return folder


def _subtst_model(folder: Path) -> None:
    """A SubTST model trained for one epoch on the miniature STS-B pairs (the SubTST page)."""
    from typer.testing import CliRunner

    from phrasekit.cli import app

    out = folder / "runs" / "subtst-msrp"
    if out.is_dir():
        return
    res = CliRunner().invoke(app, [
        "train", "subtst", "--task", "stsb", "--topics", "0", "--epochs", "1", "--data-dir",
        str(ROOT / "tests" / "fixtures" / "pairs"), "--out", str(out), "--cache-dir",
        str(folder / "cache"), "--quiet"])
    assert res.exit_code == 0, res.output


_PAGE_NAMES: dict[Path, dict] = {}


def _namespace(page: Path, folder: Path) -> dict:
    """The names a page's prose introduces before its fragments, then those its blocks made."""
    if page in _PAGE_NAMES:
        return _PAGE_NAMES[page]
    import phrasekit
    from phrasekit.io import read_corpus

    docs = read_corpus(folder / "corpus.jsonl")
    return _PAGE_NAMES.setdefault(page, {
            "__name__": "__docs__", "phrasekit": phrasekit, "docs": docs,
            "new_docs": [d.text for d in docs[:3]],
            "sentences": ["Interest rates rose again.", "The galaxy emits X-rays."],
            "names": ["New York City", "Los Angeles", "San Francisco"],
            "encoder": phrasekit.load("minilm")})


def test_pages_have_blocks() -> None:
    pages = {page.name for page, _, _ in BLOCKS}
    assert {"README.md", "ecosystem.md", "topics.md", "matching.md"} <= pages


@pytest.mark.parametrize(("page", "index", "block"), BLOCKS, ids=_ids())
def test_block_runs(page: Path, index: int, block: str, workdir: Path,
                    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    for library in ("keybert", "bertopic", "pandas"):
        if re.search(rf"^(from|import) {library}\b", block, flags=re.M):
            pytest.importorskip(library, reason=f"{library} is not installed (phrasekit[bench])")
    monkeypatch.chdir(workdir)
    if "runs/subtst-msrp" in block:
        _subtst_model(workdir)
    exec(compile(block, f"{page}:{index}", "exec"), _namespace(page, workdir))
    if re.search(r"^print\(|^\s+print\(", block, flags=re.M):
        assert capsys.readouterr().out.strip()  # a block that prints shows something
