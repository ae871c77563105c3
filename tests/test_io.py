"""Corpus reading and atomic writes."""

from __future__ import annotations

import gzip
import json
import re

import pytest

from phrasekit.datasets import resolve_corpus, sample_corpus_path
from phrasekit.io import CorpusError, atomic_write, iter_corpus, read_corpus, write_json


def test_read_parquet_file_and_shards(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    shards = tmp_path / "shards"
    shards.mkdir()
    pq.write_table(pa.table({"id": ["a", "b"], "text": ["one", "two"], "split": ["x", "y"]}),
                   shards / "part-0.parquet")
    pq.write_table(pa.table({"id": ["c"], "text": ["three"], "split": ["x"]}),
                   shards / "part-1.PARQUET")  # a suffix in any case (was skipped silently)
    (shards / "._part-0.parquet").write_bytes(b"\x00\x05AppleDouble")  # macOS metadata
    (shards / "spark.parquet").mkdir()  # a folder is no shard
    docs = read_corpus(shards)
    assert [(d.id, d.text, d.meta) for d in docs] == [
        ("a", "one", {"split": "x"}), ("b", "two", {"split": "y"}), ("c", "three", {"split": "x"})]
    assert [d.text for d in read_corpus(shards / "part-1.PARQUET")] == ["three"]
    bad = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"body": ["no text column"]}), bad)
    with pytest.raises(CorpusError, match=r"bad.parquet: row 1: column 'text' missing"):
        read_corpus(bad)
    (tmp_path / "junk.parquet").write_bytes(b"not parquet")
    with pytest.raises(CorpusError, match="not a readable Parquet file"):
        read_corpus(tmp_path / "junk.parquet")


def test_iter_corpus_streams_batches_and_reaches_a_bad_line_only_when_read(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "c.jsonl"
    lines = [json.dumps({"id": f"d{i}", "text": f"text {i}"}) for i in range(5)]
    path.write_text("\n".join([*lines, "{broken"]) + "\n", encoding="utf-8")
    batches = iter_corpus(path, batch_size=2)
    assert [d.id for d in next(batches)] == ["d0", "d1"]  # read before the bad line is met
    assert [d.id for d in next(batches)] == ["d2", "d3"]
    with pytest.raises(CorpusError, match=r"c.jsonl:6: malformed JSON"):
        next(batches)
    shards = tmp_path / "shards"
    shards.mkdir()
    for i in range(2):
        pq.write_table(pa.table({"text": [f"t{i}{j}" for j in range(3)]}),
                       shards / f"p{i}.parquet")
    sizes = [len(b) for b in iter_corpus(shards, batch_size=2)]
    assert sizes == [2, 1, 2, 1] and [d.id for d in read_corpus(shards)] == list("012345")
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n", encoding="utf-8")
    with pytest.raises(CorpusError, match="no documents found"):
        list(iter_corpus(empty))


def test_read_jsonl_and_gz(tmp_path):
    rows = [{"id": "a", "text": "First doc.", "label": 1}, {"id": "b", "text": "Second doc."}]
    p = tmp_path / "c.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n", encoding="utf-8")
    docs = read_corpus(p)
    assert [d.id for d in docs] == ["a", "b"] and docs[0].meta == {"label": 1}
    gz = tmp_path / "c.jsonl.gz"
    with gzip.open(gz, "wt", encoding="utf-8") as fh:
        fh.write(p.read_text(encoding="utf-8"))
    assert [d.text for d in read_corpus(gz)] == ["First doc.", "Second doc."]
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "documents.jsonl").write_text(
        p.read_text(encoding="utf-8"), encoding="utf-8"
    )
    assert len(read_corpus(tmp_path / "dir")) == 2


def test_read_plain_text(tmp_path):
    p = tmp_path / "c.txt"
    p.write_text("one line\n\nanother line\n", encoding="utf-8")
    assert [d.text for d in read_corpus(p)] == ["one line", "another line"]


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ('{"id": 1, "text": "ok"}\n{"id": 2, "text": \n', ":2: malformed JSON"),
        ('{"id": 1, "body": "no text field"}\n', "field 'text' missing"),
        ('["a list"]\n', "expected a JSON object"),
        ("\n\n", "no documents"),
        ('{"id": 3, "text": "a"}\n{"text": "b"}\n{"text": "c"}\n{"text": "d"}\n',
         ":4: duplicate document id '3' (first on line 1); a line without 'id' takes its line "
         "number - 1 as its id"),
        ('{"id": "a", "text": "a"}\n{"id": "a", "text": "b"}\n',
         ":2: duplicate document id 'a' (first on line 1)"),
    ],
)
def test_malformed_jsonl(tmp_path, content, fragment):
    p = tmp_path / "bad.jsonl"
    p.write_text(content, encoding="utf-8")
    with pytest.raises(CorpusError, match=re.escape(fragment)):
        read_corpus(p)


def test_wrong_encoding_and_missing(tmp_path):
    p = tmp_path / "latin1.txt"
    p.write_bytes("caf\xe9 au lait\n".encode("latin-1"))
    with pytest.raises(CorpusError, match="UTF-8"):
        read_corpus(p)
    with pytest.raises(CorpusError, match="not found"):
        read_corpus(tmp_path / "nope.jsonl")


def test_atomic_write_leaves_old_file_on_error(tmp_path):
    target = tmp_path / "out.json"
    write_json(target, {"v": 1})
    with pytest.raises(RuntimeError), atomic_write(target) as fh:
        fh.write("partial")
        raise RuntimeError("boom")
    assert json.loads(target.read_text(encoding="utf-8")) == {"v": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_bundled_sample_corpus():
    path = sample_corpus_path()
    docs = read_corpus(path)
    assert len(docs) == 1863 and all(d.text for d in docs)
    assert resolve_corpus("sample") == path


def test_atomic_write_gives_the_usual_file_mode(tmp_path):
    import os

    from phrasekit.io import write_text

    write_text(tmp_path / "a.txt", "x")
    mask = os.umask(0)
    os.umask(mask)
    assert (tmp_path / "a.txt").stat().st_mode & 0o777 == 0o666 & ~mask


@pytest.mark.parametrize("head", [{"a": 1, "b": [1, {"x": "é"}]}, {}])
@pytest.mark.parametrize("rows", [[{"id": "1", "d": {"0": 0.5}}, [], {}], []])
def test_write_json_streams_a_last_list_into_the_same_file(tmp_path, head, rows):
    write_json(tmp_path / "whole.json", {**head, "rows": rows})
    write_json(tmp_path / "streamed.json", head, rows=("rows", iter(rows)))
    assert (tmp_path / "streamed.json").read_bytes() == (tmp_path / "whole.json").read_bytes()
    with pytest.raises(ValueError, match="non-finite"):
        write_json(tmp_path / "bad.json", head, rows=("rows", iter([{"x": float("nan")}])))
    assert not (tmp_path / "bad.json").exists()


def test_a_lone_surrogate_is_named_by_file_line_and_field(tmp_path) -> None:
    """JSON may escape a lone UTF-16 surrogate, which no tokenizer or UTF-8 writer takes: the
    record is refused where it is read (it reached spaCy's tokenizer as a codec error)."""
    path = tmp_path / "sur.jsonl"
    path.write_text('{"id": "1", "text": "fine"}\n{"id": "2", "text": "bad \\ud800 one"}\n'
                    '{"id": "3", "text": "ok", "label": "x\\udfffy"}\n', encoding="utf-8")
    with pytest.raises(CorpusError, match=r"sur\.jsonl:2: field 'text' holds an unpaired"):
        read_corpus(path)
    path.write_text('{"id": "3", "text": "ok", "label": "x\\udfffy"}\n', encoding="utf-8")
    with pytest.raises(CorpusError, match=r"sur\.jsonl:1: field 'label'"):
        read_corpus(path)
    path.write_text('{"id": "4", "text": "a pair \\ud83d\\ude00 is fine"}\n', encoding="utf-8")
    assert read_corpus(path)[0].text == "a pair \U0001f600 is fine"


def test_a_byte_order_mark_is_not_text(tmp_path) -> None:
    """Files saved by Windows editors start with U+FEFF: not part of the first document,
    and not a reason to refuse a JSONL file (gzipped too)."""
    jsonl = tmp_path / "bom.jsonl"
    jsonl.write_bytes(b'\xef\xbb\xbf{"id": "a", "text": "first"}\n{"id": "b", "text": "second"}\n')
    txt = tmp_path / "bom.txt"
    txt.write_bytes(b"\xef\xbb\xbffirst\nsecond\n")
    gz = tmp_path / "bom.jsonl.gz"
    gz.write_bytes(gzip.compress(jsonl.read_bytes()))
    for path in (jsonl, txt, gz):
        assert [d.text for d in read_corpus(path)] == ["first", "second"], path


def test_a_parquet_corpus_without_its_text_column_lists_the_real_columns(tmp_path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "c.parquet"
    pq.write_table(pa.table({"id": ["a"], "body": ["some words"]}), path)
    with pytest.raises(CorpusError, match=r"row 1: column 'text' missing \(columns: \['id', "
                                          r"'body'\]\)"):
        read_corpus(path)


def test_a_document_keeps_an_integer_id_as_its_text_and_refuses_other_ids() -> None:
    """An integer id is stored as a corpus file's is, so a document is the same after a
    model's save and load (ids come back from JSON as text)."""
    import numpy as np

    from phrasekit.io import Document, document_key

    assert Document(5, "text", {}) == Document("5", "text", {})
    assert Document(np.int64(7), "text", {}).id == "7"
    assert document_key(Document(5, "text", {})) == document_key(Document("5", "text", {}))
    for doc_id, text in ((1.0, "text"), (None, "text"), (True, "text"), ("d", None),
                         ("d", b"bytes")):
        with pytest.raises(TypeError, match="string or integer id and a string text"):
            Document(doc_id, text, {})


def test_what_a_corpus_folder_would_read_back(tmp_path):
    from phrasekit.paths import read_with_folder

    corp = tmp_path / "corp"
    corp.mkdir()
    (corp / "documents.jsonl").write_text('{"text": "a"}\n', encoding="utf-8")
    (tmp_path / "link.jsonl").symlink_to(corp / "documents.jsonl")
    assert read_with_folder(corp, corp / "documents.jsonl")
    assert read_with_folder(corp, tmp_path / "link.jsonl")  # judged by its target
    assert not read_with_folder(corp, corp / "new.parquet")  # documents.jsonl is what is read
    assert not read_with_folder(corp, corp / "keyphrases.jsonl")
    shards = tmp_path / "shards"
    shards.mkdir()
    (shards / "part-0.parquet").write_bytes(b"PAR1")
    assert read_with_folder(shards, shards / "new.parquet")  # a shard a later read would take
    assert read_with_folder(shards, shards / "documents.jsonl")  # it would replace the shards
    assert not read_with_folder(corp, corp / "out" / "documents.jsonl")
    assert not read_with_folder(tmp_path / "none", corp / "documents.jsonl")
