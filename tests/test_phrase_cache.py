"""The phrase cache (``--phrase-cache``) rebuilds a damaged cache it wrote and never replaces
a file it did not write."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from phrasekit.io import Document
from phrasekit.phrases.cache import check_phrase_cache, load_or_extract_vocabulary

DOCS = [Document(id=str(i), text=t, meta={}) for i, t in enumerate(
    ["The central bank raised interest rates.", "Neural networks learn phrase vectors.",
     "The central bank cut interest rates again."])]


@pytest.mark.parametrize(("name", "damage"), [
    ("p.json", lambda b: b[: len(b) // 2]), ("p.json", lambda b: b""),
    ("p.json.gz", lambda b: b[: len(b) // 2]),
    ("p.json.gz", lambda b: b[:-12] + bytes([b[-12] ^ 0xFF]) + b[-11:])])
def test_a_damaged_phrase_cache_is_rebuilt(tmp_path: Path, name: str, damage,
                                          caplog: pytest.LogCaptureFixture) -> None:
    cache = tmp_path / name
    first = load_or_extract_vocabulary(DOCS, cache)
    cache.write_bytes(damage(cache.read_bytes()))
    again = load_or_extract_vocabulary(DOCS, cache)
    assert again.surface == first.surface
    assert f"phrase cache {cache} is damaged" in caplog.text or not cache.read_bytes()
    assert load_or_extract_vocabulary(DOCS, cache).surface == first.surface


def test_a_file_phrasekit_did_not_write_is_left(tmp_path: Path) -> None:
    mine = tmp_path / "notes.json.gz"
    mine.write_bytes(gzip.compress(b'{"mine": 1}'))
    with pytest.raises(ValueError, match=r"notes\.json\.gz: not a phrase cache"):
        check_phrase_cache(mine)
    assert gzip.decompress(mine.read_bytes()) == b'{"mine": 1}'
