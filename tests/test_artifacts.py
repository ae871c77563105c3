"""Whole-or-nothing artefact folders, manifests, stale leftovers and line reading."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from phrasekit.artifacts import (
    MANIFEST,
    IntegrityError,
    exchange,
    remove_stale_siblings,
    staged_folder,
    verify_folder,
    write_manifest,
)
from phrasekit.io import CorpusError, atomic_write
from phrasekit.lines import count_lines, iter_lines, read_lines
from phrasekit.tables import write_npy_rows


def _dead_pid() -> int:
    """The id of a process that has exited."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _set(folder, text: str) -> None:
    (folder / "a.txt").write_text(text, encoding="utf-8")
    np.save(folder / "v.npy", np.arange(6, dtype=np.float32).reshape(2, 3))


def test_manifest_lists_files_and_catches_flips_truncation_swaps(tmp_path):
    with staged_folder(tmp_path / "out", "demo") as tmp:
        _set(tmp, "one")
    out = tmp_path / "out"
    manifest = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
    assert set(manifest["files"]) == {"a.txt", "v.npy"}
    assert manifest["files"]["v.npy"]["shape"] == [2, 3]
    assert verify_folder(out, "demo")["kind"] == "demo"
    with pytest.raises(IntegrityError, match="holds a 'demo'"):
        verify_folder(out, "other")
    with pytest.raises(IntegrityError, match=r"does not list b\.txt"):
        verify_folder(out, "demo", required=("b.txt",))
    raw = (out / "v.npy").read_bytes()
    (out / "v.npy").write_bytes(raw[:-1] + bytes([raw[-1] ^ 1]))  # one flipped bit
    with pytest.raises(IntegrityError, match=r"v\.npy: contents differ"):
        verify_folder(out, "demo")
    (out / "v.npy").write_bytes(raw[:-4])  # truncated
    with pytest.raises(IntegrityError, match=r"v\.npy: contents differ"):
        verify_folder(out, "demo")
    (out / "v.npy").unlink()
    with pytest.raises(IntegrityError, match=r"v\.npy: listed in manifest\.json but missing"):
        verify_folder(out, "demo")
    (out / MANIFEST).unlink()
    with pytest.raises(IntegrityError, match=r"no manifest\.json"):
        verify_folder(out, "demo")


def test_staged_folder_replaces_whole_sets_and_never_mixes(tmp_path):
    out = tmp_path / "out"
    with staged_folder(out, "demo") as tmp:
        _set(tmp, "first")
    with pytest.raises(RuntimeError), staged_folder(out, "demo") as tmp:
        _set(tmp, "second")
        raise RuntimeError("killed half-way")
    assert (out / "a.txt").read_text(encoding="utf-8") == "first"  # the old set, untouched
    verify_folder(out, "demo")
    with staged_folder(out, "demo") as tmp:
        (tmp / "b.txt").write_text("third", encoding="utf-8")
    assert sorted(p.name for p in out.iterdir()) == ["b.txt", MANIFEST]  # no a.txt left over
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no staging folders left


def test_staged_folder_refuses_foreign_folders_before_work(tmp_path):
    other = tmp_path / "mine"
    other.mkdir()
    (other / "notes.txt").write_text("keep me", encoding="utf-8")
    with pytest.raises(ValueError, match="holds other files"), staged_folder(other, "demo"):
        pytest.fail("the block must not run")
    assert (other / "notes.txt").read_text(encoding="utf-8") == "keep me"
    with staged_folder(tmp_path / "x", "kind-a") as tmp:
        _set(tmp, "a")
    with pytest.raises(ValueError, match="not a phrasekit kind-b"), \
            staged_folder(tmp_path / "x", "kind-b"):
        pass
    (tmp_path / "file").write_text("x", encoding="utf-8")
    with pytest.raises(ValueError, match="is not a folder"), staged_folder(tmp_path / "file", "k"):
        pass
    with pytest.raises(ValueError, match="is a file, not a folder"), \
            staged_folder(tmp_path / "file" / "sub", "k"):
        pass


def test_exchange_swaps_two_folders_atomically(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / "x").write_text("a", encoding="utf-8")
    (b / "x").write_text("b", encoding="utf-8")
    if not exchange(a, b):
        pytest.skip("renameat2(RENAME_EXCHANGE) not available here; the two-rename path is used")
    assert (a / "x").read_text(encoding="utf-8") == "b"
    assert (b / "x").read_text(encoding="utf-8") == "a"


def test_leftovers_of_killed_writers_are_removed_and_old_sets_restored(tmp_path):
    pid = _dead_pid()
    out = tmp_path / "out"
    staging = tmp_path / f".out.staging-{pid}-abc"
    staging.mkdir()
    old = tmp_path / f".out.old-{pid}-abc"
    (old / "set").mkdir(parents=True)
    (old / "set" / "a.txt").write_text("old", encoding="utf-8")
    live = tmp_path / f".out.staging-{os.getpid()}-live"
    live.mkdir()
    remove_stale_siblings(out)
    assert (out / "a.txt").read_text(encoding="utf-8") == "old"  # the interrupted swap undone
    assert not staging.exists() and not old.exists()
    assert live.exists()  # a running writer's folder stays
    stale_tmp = tmp_path / f".f.txt.{pid}.xyz.tmp"
    stale_tmp.write_bytes(b"x" * 10)
    with atomic_write(tmp_path / "f.txt") as fh:
        fh.write("new")
    assert not stale_tmp.exists()


def test_write_manifest_round_trip_in_subfolders(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "w.bin").write_bytes(b"\x00\x01")
    (tmp_path / "c.json").write_text("{}", encoding="utf-8")
    manifest = write_manifest(tmp_path, "demo")
    assert set(manifest["files"]) == {"c.json", "sub/w.bin"}
    verify_folder(tmp_path, "demo")


# ------------------------------------------------------------------ line reading
_LINE = st.text(st.characters(exclude_characters="\n\r", exclude_categories=("Cs",)),
                max_size=40).filter(lambda s: s.strip() != "")


@settings(max_examples=150, deadline=None)
@given(lines=st.lists(_LINE, min_size=1, max_size=30), crlf=st.booleans(),
       final_newline=st.booleans())
def test_read_lines_row_i_is_line_i(tmp_path_factory, lines, crlf, final_newline):
    lines = [ln.rstrip("\r") for ln in lines]
    if not all(ln.strip() for ln in lines):
        return
    sep = "\r\n" if crlf else "\n"
    path = tmp_path_factory.mktemp("lines") / "in.txt"
    path.write_bytes((sep.join(lines) + (sep if final_newline else "")).encode("utf-8"))
    got, skipped = read_lines(path)
    assert skipped == 0
    assert got == [ln.strip() for ln in lines]  # U+2028, U+0085, form feeds stay inside lines


def test_read_lines_blank_lines_refused_or_counted(tmp_path):
    path = tmp_path / "in.txt"
    path.write_text("a\u2028b\n\n c \n\u000c\nd", encoding="utf-8")
    with pytest.raises(CorpusError, match=r"in\.txt:2: blank line"):
        read_lines(path)
    assert read_lines(path, skip_blank=True) == (["a\u2028b", "c", "d"], 2)
    path.write_bytes(b"\xff\xfe")
    with pytest.raises(CorpusError, match="not valid UTF-8"):
        read_lines(path)
    path.write_text("\n\n", encoding="utf-8")
    with pytest.raises(CorpusError, match="no lines"):
        read_lines(path, skip_blank=True)
    with pytest.raises(CorpusError, match="is a folder, not a text file"):
        read_lines(tmp_path)
    path.write_bytes(b"machine learning\rneural network\r")  # old Mac line ends: not one text
    with pytest.raises(CorpusError, match=r"in\.txt:1: a carriage return \(\\r\) inside"):
        read_lines(path)


def test_lines_streamed_and_checked_before_reading(tmp_path):
    path = tmp_path / "in.txt"
    path.write_text("\ufeffa\n\nb\r\n c ", encoding="utf-8")
    assert count_lines(path, skip_blank=True) == (3, 1)
    assert list(iter_lines(path, skip_blank=True)) == ["a", "b", "c"]
    path.write_bytes(b"fine\nok\n\xff\n")
    with pytest.raises(CorpusError, match=r"in\.txt:3: not valid UTF-8"):
        count_lines(path)  # the whole file is checked up front


def test_undecodable_bytes_are_reported_with_their_line(tmp_path):
    import gzip

    from phrasekit.io import read_corpus
    from phrasekit.tables import TableError, read_table

    path = tmp_path / "docs.jsonl"
    path.write_bytes(b'{"text": "a"}\n{"text": "b"}\n{"text": "caf\xe9"}\n')
    with pytest.raises(CorpusError, match=r"docs\.jsonl:3: not valid UTF-8 \(byte 0xe9"):
        read_corpus(path)
    packed = tmp_path / "docs.jsonl.gz"
    packed.write_bytes(gzip.compress(path.read_bytes()))
    with pytest.raises(CorpusError, match=r"docs\.jsonl\.gz:3: not valid UTF-8"):
        read_corpus(packed)
    table = tmp_path / "t.csv"
    table.write_bytes(b"name,city\nAcme,Paris\nCaf\xe9 Inc,Lyon\n")
    with pytest.raises(TableError, match=r"t\.csv:3: not valid UTF-8"):
        read_table(table)


def test_npy_written_from_row_chunks(tmp_path):
    rows = np.arange(21, dtype=np.float32).reshape(7, 3)
    with open(tmp_path / "v.npy", "wb") as fh:
        write_npy_rows(fh, (rows[i : i + 3] for i in range(0, 7, 3)), 7, 3)
    np.testing.assert_array_equal(np.load(tmp_path / "v.npy"), rows)
    for n_rows in (6, 8):  # the stream must hold exactly the rows announced in the header
        with open(tmp_path / "w.npy", "wb") as fh, pytest.raises(ValueError, match="rows"):
            write_npy_rows(fh, iter([rows]), n_rows, 3)


def test_topics_refuse_a_cache_inside_the_output_folder(tmp_path):
    from phrasekit.topics import check_topics_out

    out = tmp_path / "run"
    with pytest.raises(ValueError, match="inside the output folder"):
        check_topics_out(out, caches=(out / "cache" / "phrases.json.gz",))
    assert check_topics_out(out, caches=(tmp_path / "phrases.json.gz", None)) == out


def test_a_folder_the_file_system_refuses_is_caught_before_work(tmp_path, monkeypatch):
    import tempfile

    from phrasekit.artifacts import check_parent_writable

    check_parent_writable(tmp_path / "out.npy")
    assert not list(tmp_path.iterdir())  # the probe file is gone

    def refuse(*args, **kwargs):
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(tempfile, "mkstemp", refuse)  # as /proc or a read-only mount do
    with pytest.raises(ValueError, match=r"cannot write in folder .*Read-only file system"):
        check_parent_writable(tmp_path / "out.npy")
