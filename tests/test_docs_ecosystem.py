"""Every Python block of docs/ecosystem.md runs as written (the BERTopic and KeyBERT ones need
the optional `bench` extra)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parents[1] / "docs" / "ecosystem.md"
BLOCKS = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.S)


def test_page_has_blocks() -> None:
    assert len(BLOCKS) == 3


@pytest.mark.parametrize("block", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_block_runs(block: str, capsys) -> None:
    for library in ("keybert", "bertopic", "pandas"):
        if re.search(rf"^(from|import) {library}\b", block, flags=re.M):
            pytest.importorskip(library, reason=f"{library} is not installed (phrasekit[bench])")
    exec(compile(block, str(PAGE), "exec"), {"__name__": "__docs__"})
    assert capsys.readouterr().out.strip()  # each block prints what it shows
