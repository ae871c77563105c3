"""The default vector cache of `topics` and `keyphrases`: keyed by text, model, settings and
weights, reused by a re-run, bounded in size, off with --no-cache."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from phrasekit.cli import app
from phrasekit.encoders.base import Encoder
from phrasekit.encoders.cache import cached_encode, encoder_identity, prune_caches
from phrasekit.encoders.cache_files import read_marker
from phrasekit.settings import vector_cache_dir


class Counting(Encoder):
    """A deterministic toy encoder that counts the texts it encodes."""

    def __init__(self, name: str = "toy", precision: str = "fp32",
                 model_path: Path | None = None) -> None:
        self.name, self.dim, self.precision, self.model_path = name, 8, precision, model_path
        self.seen = 0

    def _encode_batch(self, texts: Sequence[str]) -> np.ndarray:
        self.seen += len(texts)
        return np.stack([np.random.default_rng(len(t) + sum(map(ord, t))).normal(size=8)
                         for t in texts]).astype(np.float32)


def _folder(path: Path, weights: bytes) -> Path:
    path.mkdir(parents=True)
    (path / "config.json").write_text("{}")
    (path / "model.safetensors").write_bytes(weights)
    return path


def test_identity_tells_settings_and_weights_apart(tmp_path: Path) -> None:
    a = _folder(tmp_path / "one" / "model", b"a" * 100)
    b = _folder(tmp_path / "two" / "model", b"b" * 100)
    same = _folder(tmp_path / "three" / "model", b"a" * 100)
    ids = {encoder_identity(Counting(model_path=a)), encoder_identity(Counting(model_path=b)),
           encoder_identity(Counting(model_path=a, precision="bf16"))}
    assert len(ids) == 3
    assert encoder_identity(Counting(model_path=a)) == encoder_identity(
        Counting(model_path=same))


def test_default_folder_reuses_vectors() -> None:
    enc = Counting()
    texts = ["alpha beta", "gamma", "alpha beta", "delta epsilon"]
    first = cached_encode(enc, texts, vector_cache_dir(), "docs")
    assert enc.seen == 3
    again = Counting()
    second = cached_encode(again, [*texts, "new one"], vector_cache_dir(), "docs")
    assert again.seen == 1
    np.testing.assert_allclose(second[:4], first, atol=1e-6)
    other = Counting(precision="bf16")  # other settings: its own file, encoded afresh
    cached_encode(other, texts, vector_cache_dir(), "docs")
    assert other.seen == 3
    assert len(list(vector_cache_dir().glob("docs-toy-*.npz"))) == 2


def test_default_folder_stays_within_its_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PHRASEKIT_VECTOR_CACHE_MB", str(1500 / 2**20))  # 1,500 bytes
    per_row = 16 + 4 * 8
    for name in ("one", "two", "three"):
        cached_encode(Counting(name), [f"{name} {i}" for i in range(40)], vector_cache_dir(),
                      "docs")
    files = sorted(vector_cache_dir().glob("*.npz"))
    assert [f.name.split("-")[1] for f in files] == ["three"]  # the older files went first
    with np.load(files[0]) as z:  # the file itself holds at most the budget's rows
        assert len(z["keys"]) == 1500 // per_row


def test_prune_keeps_the_named_file_and_foreign_files(tmp_path: Path) -> None:
    cached_encode(Counting("a"), ["x", "y"], tmp_path, "docs")
    cached_encode(Counting("b"), ["x", "y"], tmp_path, "docs")
    (tmp_path / "notes.npz").write_bytes(b"user data")
    keep = next(tmp_path.glob("docs-b-*.npz"))
    removed = prune_caches(tmp_path, 0, keep=keep)
    assert [p.name.split("-")[1] for p in removed] == ["a"]
    assert keep.exists() and (tmp_path / "notes.npz").read_bytes() == b"user data"


def _corpus(tmp_path: Path) -> Path:
    path = tmp_path / "docs.jsonl"
    texts = ["The central bank raised interest rates to fight inflation.",
             "Neural networks learn phrase representations from large corpora."]
    path.write_text("".join(json.dumps({"id": str(i), "text": t}) + "\n"
                            for i, t in enumerate(texts)))
    return path


def test_keyphrases_cache_by_default_and_not_with_no_cache(tmp_path: Path) -> None:
    corpus, runner = _corpus(tmp_path), CliRunner()
    args = ["keyphrases", str(corpus), "-m", "glove-50d", "-q"]
    first = runner.invoke(app, [*args, "-o", str(tmp_path / "a.jsonl")])
    assert first.exit_code == 0, first.output
    files = sorted(p.name.split("-")[0] for p in vector_cache_dir().glob("*.npz"))
    assert files == ["keyphrase", "phrases"]
    second = runner.invoke(app, [*args, "-o", str(tmp_path / "b.jsonl")])
    assert second.exit_code == 0, second.output
    assert (tmp_path / "a.jsonl").read_text() == (tmp_path / "b.jsonl").read_text()
    for p in vector_cache_dir().glob("*.npz"):
        p.unlink()
    off = runner.invoke(app, [*args, "--no-cache", "-o", str(tmp_path / "c.jsonl")])
    assert off.exit_code == 0, off.output
    assert not list(vector_cache_dir().glob("*.npz"))


def test_no_cache_with_cache_dir_is_refused(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["topics", str(_corpus(tmp_path)), "-o",
                                      str(tmp_path / "out"), "--no-cache", "--cache-dir",
                                      str(tmp_path / "c")])
    assert result.exit_code == 2
    assert "--no-cache and --cache-dir" in result.output


def test_cache_files_carry_a_marker(tmp_path: Path) -> None:
    cached_encode(Counting("a"), ["x", "y"], tmp_path, "docs")
    path = next(tmp_path.glob("docs-a-*.npz"))
    assert read_marker(path) == {"kind": "docs", "key": encoder_identity(Counting("a"))}
    assert read_marker(tmp_path) is None


def test_a_users_npz_is_never_evicted_or_replaced(monkeypatch: pytest.MonkeyPatch,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("PHRASEKIT_VECTOR_CACHE_MB", "0")
    folder = vector_cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    mine = folder / "my_embeddings.npz"
    np.savez(mine, encoder=np.asarray("toy"), embeddings=np.ones((3, 8), np.float32))
    before = mine.read_bytes()
    cached_encode(Counting(), ["alpha", "beta"], folder, "docs")
    assert mine.read_bytes() == before
    assert "my_embeddings.npz" in caplog.text
    # a user's file at the cache's own name is left too (named), and this run is not cached
    name = folder / f"docs-toy-{_tag(Counting())}.npz"
    assert name.exists()
    name.write_bytes(before)
    enc = Counting()
    cached_encode(enc, ["alpha"], folder, "docs")
    assert enc.seen == 1 and name.read_bytes() == before
    assert f"{name}: not an embedding cache written by phrasekit" in caplog.text


def _tag(enc: Counting) -> str:
    import hashlib

    return hashlib.blake2b(encoder_identity(enc).encode("utf-8"), digest_size=4).hexdigest()


@pytest.mark.parametrize("damage", ["flip", "cut", "empty", "flip marker"])
def test_a_damaged_cache_file_is_rebuilt(damage: str, caplog: pytest.LogCaptureFixture
                                         ) -> None:
    texts = [f"text {i}" for i in range(30)]
    first = cached_encode(Counting(), texts, vector_cache_dir(), "docs")
    path = next(vector_cache_dir().glob("docs-toy-*.npz"))
    data = bytearray(path.read_bytes())
    if damage == "flip":
        data[len(data) // 2] ^= 0xFF
    elif damage == "cut":
        data = data[: len(data) // 2]
    elif damage == "empty":
        data = bytearray()
    else:  # the marker itself damaged: no longer known as the cache's own, so left alone
        data[40] ^= 0xFF
    path.write_bytes(bytes(data))
    enc = Counting()
    again = cached_encode(enc, texts, vector_cache_dir(), "docs")
    np.testing.assert_allclose(again, first, atol=1e-6)
    assert enc.seen == 30
    if damage == "flip marker":
        assert path.read_bytes() == bytes(data)
        assert "not an embedding cache written by phrasekit" in caplog.text
    else:
        assert read_marker(path) is not None and str(path) in caplog.text
        third = Counting()
        cached_encode(third, texts, vector_cache_dir(), "docs")
        assert third.seen == 0


def test_an_earlier_versions_verified_cache_is_read_and_marked(tmp_path: Path) -> None:
    from phrasekit.encoders.cache import encode_cached, text_key
    from phrasekit.encoders.cache_files import legacy_digest

    enc = Counting()
    vecs = enc.encode(["a", "b"])
    keys = np.asarray([text_key("a"), text_key("b")], dtype="S16")
    path = tmp_path / "old.npz"
    np.savez(path, encoder=np.asarray("toy"), keys=keys, embeddings=vecs,
             sha256=np.asarray(legacy_digest("toy", keys, vecs)))
    again = Counting()
    np.testing.assert_allclose(encode_cached(again, ["a", "b", "c"], path), np.concatenate(
        [vecs, again.encode(["c"])]), atol=1e-6)
    assert read_marker(path) is not None


def test_explicit_cache_path_refuses_a_users_file(tmp_path: Path) -> None:
    from phrasekit.encoders.cache import encode_cached

    path = tmp_path / "mine.npz"
    np.savez(path, encoder=np.asarray("toy"), embeddings=np.ones((2, 8), np.float32))
    with pytest.raises(ValueError, match=r"mine\.npz: not an embedding cache written by"):
        encode_cached(Counting(), ["a"], path)


@pytest.mark.parametrize("value", ["nan", "inf", "abc", "-1", "1e400"])
def test_cache_budget_setting_is_checked_before_work(value: str, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PHRASEKIT_VECTOR_CACHE_MB", value)
    result = CliRunner().invoke(app, ["topics", str(tmp_path / "missing.jsonl"), "-o",
                                      str(tmp_path / "out"), "-q"])
    assert result.exit_code == 2
    assert result.output.strip() == ("error: PHRASEKIT_VECTOR_CACHE_MB must be a number of "
                                     f"megabytes >= 0 (at most {2**30}), got {value!r}")


@pytest.mark.parametrize(("name", "value"), [("PHRASEKIT_DEVICE", "gpu"),
                                             ("PHRASEKIT_MALLOC", "fast"),
                                             ("PHRASEKIT_VECTOR_CACHE", "FILE")])
def test_other_settings_are_checked_before_work(name: str, value: str, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a-file").write_text("x")
    monkeypatch.setenv(name, str(tmp_path / "a-file") if value == "FILE" else value)
    result = CliRunner().invoke(app, ["phrases", str(tmp_path / "missing.jsonl"), "-o",
                                      str(tmp_path / "p.json"), "-q"])
    assert result.exit_code == 2 and name in result.output
    assert result.output.count("\n") == 1


def test_a_cache_that_cannot_be_written_costs_the_cache_not_the_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A file-size limit hit while writing the cache ended the run with "File too large
    (writing <the output>)", and an unwritable PHRASEKIT_CACHE with a bare errno."""
    import errno

    import phrasekit.encoders.cache as cache_module

    texts = ["alpha beta", "gamma"]
    plain = Counting().encode(texts)

    def full(*_a: object, **_k: object) -> None:
        raise OSError(errno.EFBIG, "File too large")

    with monkeypatch.context() as m:
        m.setattr(cache_module, "atomic_write", full)
        with caplog.at_level("WARNING"):
            got = cached_encode(Counting(), texts, tmp_path / "c", "docs")
    np.testing.assert_allclose(got, plain, atol=1e-6)
    assert "not written (File too large)" in caplog.text
    (tmp_path / "file").write_text("a user's file")
    monkeypatch.setenv("PHRASEKIT_VECTOR_CACHE", str(tmp_path / "file" / "under"))
    caplog.clear()
    with caplog.at_level("WARNING"):
        got = cached_encode(Counting(), texts, vector_cache_dir(), "docs")
    np.testing.assert_allclose(got, plain, atol=1e-6)
    assert "cannot be made" in caplog.text and "PHRASEKIT_CACHE" in caplog.text
    assert (tmp_path / "file").read_text() == "a user's file"
