"""Data that ships inside the package (small, redistributable, with its source and license)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

SAMPLE_CORPUS_NAME = "sample"


def sample_corpus_path() -> Path:
    """Path of the bundled CC0 arXiv sample corpus (1,863 titles + abstracts, JSONL.gz)."""
    path = Path(str(resources.files("phrasekit") / "data" / "sample_corpus" / "documents.jsonl.gz"))
    if not path.is_file():  # pragma: no cover - broken installation
        raise FileNotFoundError(f"bundled sample corpus missing at {path}; reinstall phrasekit")
    return path


def resolve_corpus(corpus: str | Path) -> Path:
    """``sample`` names the bundled corpus (unless a file of that name exists); else a path."""
    path = Path(corpus)
    if str(corpus) == SAMPLE_CORPUS_NAME and not path.exists():
        return sample_corpus_path()
    return path
