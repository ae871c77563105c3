"""Tables in and out: Parquet/TSV inputs, outputs by suffix, `-` as stdout, encode's --column."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import phrasekit
from phrasekit.cli import app
from phrasekit.tables import TableError, column_values, only_column, read_table, write_table


@pytest.fixture
def tables(tmp_path):
    """A left CSV, a right CSV and the left table as Parquet and TSV."""
    left, right = tmp_path / "l.csv", tmp_path / "r.csv"
    left.write_text("name,id\nNew York,1\nLos Angeles,2\n")
    right.write_text("name,x\nnew york city,a\nlos angeles ca,b\n")
    pq.write_table(pa.table({"name": ["New York", "Los Angeles"], "id": [1, 2]}),
                   tmp_path / "l.parquet")
    (tmp_path / "l.tsv").write_text("name\tid\nNew York\t1\nLos Angeles\t2\n")
    return tmp_path


def test_read_table_by_suffix(tables) -> None:
    csv_rows = [row for _, _, row in read_table(tables / "l.csv").rows]
    assert csv_rows == [row for _, _, row in read_table(tables / "l.tsv").rows]
    parquet = read_table(tables / "l.parquet")
    assert parquet.header == ["name", "id"] and parquet.rows[1][2] == ["Los Angeles", 2]
    assert column_values(parquet, "id") == [(0, "1"), (1, "2")]


def test_json_lines_are_no_table_and_a_blank_line_of_one_column_is_an_empty_cell(tmp_path):
    (tmp_path / "t.jsonl").write_text('{"name": "x"}\n', encoding="utf-8")
    with pytest.raises(TableError, match=r"t\.jsonl: JSON lines is not a table format"):
        read_table(tmp_path / "t.jsonl")
    (tmp_path / "one.csv").write_text("name\nfoo\n\nbar\n", encoding="utf-8")
    table = read_table(tmp_path / "one.csv")  # row i of a one-column table is line i + 2
    with pytest.raises(TableError, match=r"one\.csv:3: empty 'name' cell \(skip_empty=True"):
        column_values(table, "name")
    assert column_values(table, "name", skip_empty=True) == [(0, "foo"), (2, "bar")]
    (tmp_path / "end.csv").write_text("name\r\nfoo\r\n\r\n\r\n", encoding="utf-8")
    assert column_values(read_table(tmp_path / "end.csv"), "name") == [(0, "foo")]  # the end
    (tmp_path / "two.csv").write_text("name,id\nfoo,1\n\nbar,2\n", encoding="utf-8")
    assert column_values(read_table(tmp_path / "two.csv"), "name") == [(0, "foo"), (2, "bar")]


def test_empty_parquet_cell_names_the_row(tmp_path) -> None:
    pq.write_table(pa.table({"name": ["a", None]}), tmp_path / "t.parquet")
    with pytest.raises(TableError, match=r"t.parquet row 2: empty 'name' cell"):
        column_values(read_table(tmp_path / "t.parquet"), "name")


def test_only_column(tables) -> None:
    with pytest.raises(TableError, match=r"2 columns \['name', 'id'\]; choose one with --column"):
        only_column(read_table(tables / "l.csv"), None)
    assert only_column(read_table(tables / "l.csv"), "id") == "id"


def test_write_table_formats(tmp_path) -> None:
    header, rows = ["a", "b"], [["=x", 1], [None, 2]]
    write_table(tmp_path / "t.csv", header, rows)
    assert (tmp_path / "t.csv").read_text().splitlines() == ["a,b", "'=x,1", ",2"]
    write_table(tmp_path / "t.parquet", header, rows)
    assert pq.read_table(tmp_path / "t.parquet").to_pylist() == [{"a": "=x", "b": 1},
                                                                 {"a": None, "b": 2}]
    write_table(tmp_path / "t.jsonl", header, rows)
    assert [json.loads(x) for x in (tmp_path / "t.jsonl").read_text().splitlines()] == \
        [{"a": "=x", "b": 1}, {"a": None, "b": 2}]


def _join(args: list[str]):
    return CliRunner().invoke(app, ["join", *args, "--left-on", "name", "--right-on", "name",
                                    "-m", "string", "--no-threshold", "-q"])


def test_join_reads_parquet_and_writes_parquet(tables) -> None:
    result = _join([str(tables / "l.parquet"), str(tables / "r.csv"), "-o",
                    str(tables / "m.parquet")])
    assert result.exit_code == 0, result.output
    rows = pq.read_table(tables / "m.parquet").to_pylist()
    assert [(r["right_value"], r["left_value"], r["left_id"]) for r in rows] == [
        ("new york city", "New York", 1), ("los angeles ca", "Los Angeles", 2)]


def test_join_to_stdout_writes_no_file(tables) -> None:
    before = sorted(p.name for p in tables.iterdir())
    result = _join([str(tables / "l.csv"), str(tables / "r.csv"), "-o", "-"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0].startswith("right_row,right_value,left_row")
    assert "new york city,0,New York" in result.stdout
    assert sorted(p.name for p in tables.iterdir()) == before


def test_folder_output_refuses_stdout(tables) -> None:
    result = CliRunner().invoke(app, ["export", "string", "-o", "-"])
    assert result.exit_code == 2 and "not a stream to stdout" in result.output


def _encode(args: list[str]):
    return CliRunner().invoke(app, ["encode", *args, "-m", "string", "-q"])


def test_encode_table_column(tables) -> None:
    refused = _encode([str(tables / "l.csv"), "-o", str(tables / "v.npy")])
    assert refused.exit_code == 2 and "choose one with --column" in refused.output
    assert not (tables / "v.npy").exists()
    assert _encode([str(tables / "l.csv"), "--column", "name", "-o",
                    str(tables / "v.npy")]).exit_code == 0
    assert _encode([str(tables / "l.parquet"), "--column", "name", "-o",
                    str(tables / "v.parquet")]).exit_code == 0
    npy = np.load(tables / "v.npy")
    table = pq.read_table(tables / "v.parquet")
    assert table.column("text").to_pylist() == ["New York", "Los Angeles"]
    assert pa.types.is_fixed_size_list(table.schema.field("vector").type)
    vectors = np.asarray(table.column("vector").to_pylist(), dtype=np.float32)
    np.testing.assert_allclose(vectors, npy, atol=1e-6)


def test_encode_to_stdout_is_json_lines(tables) -> None:
    (tables / "p.txt").write_text("new york\nlos angeles\n")
    result = _encode([str(tables / "p.txt"), "-o", "-"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["text"] for r in rows] == ["new york", "los angeles"]
    assert abs(np.linalg.norm(rows[0]["vector"]) - 1) < 1e-5
    column = _encode([str(tables / "p.txt"), "--column", "x", "-o", "-"])
    assert column.exit_code == 2 and "--column needs a table input" in column.output


def test_keyphrases_as_a_flat_table(tmp_path) -> None:
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"id": "a", "text": "Support vector machines are used for "
                                  "text classification of news articles."}) + "\n")
    args = ["keyphrases", str(corpus), "-m", "glove-50d", "-n", "2", "-q"]
    assert CliRunner().invoke(app, [*args, "-o", str(tmp_path / "k.parquet")]).exit_code == 0
    rows = pq.read_table(tmp_path / "k.parquet").to_pylist()
    assert [(r["id"], r["rank"]) for r in rows] == [("a", 1), ("a", 2)]
    streamed = CliRunner().invoke(app, [*args, "-o", "-"])
    assert streamed.exit_code == 0, streamed.output
    assert [k["phrase"] for k in json.loads(streamed.stdout)["keyphrases"]] == \
        [r["phrase"] for r in rows]


def test_index_query_dash_prints(tmp_path) -> None:
    (tmp_path / "names.txt").write_text("New York City\nLos Angeles\n")
    runner = CliRunner()
    built = runner.invoke(app, ["index", "build", str(tmp_path / "names.txt"), "-o",
                                str(tmp_path / "idx"), "-m", "string", "-q"])
    assert built.exit_code == 0, built.output
    result = runner.invoke(app, ["index", "query", str(tmp_path / "idx"), "nyc", "-k", "1",
                                 "-o", "-", "-q"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[1].split("\t")[2] == "New York City"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["idx", "names.txt"]


def test_encode_reads_stdin(tmp_path) -> None:
    result = CliRunner().invoke(app, ["encode", "-", "-o", str(tmp_path / "v.npy"), "-m",
                                      "string", "-q"], input="new york\nlos angeles\n")
    assert result.exit_code == 0, result.output
    np.testing.assert_allclose(np.load(tmp_path / "v.npy"),
                               phrasekit.load("string").encode(["new york", "los angeles"]),
                               atol=1e-6)
    blank = CliRunner().invoke(app, ["encode", "-", "-o", str(tmp_path / "w.npy"), "-m",
                                     "string", "-q"], input="a\n\nb\n")
    assert blank.exit_code == 2 and "stdin:2: blank line" in blank.output
    assert not (tmp_path / "w.npy").exists()


def test_long_cells_are_read_and_a_malformed_row_is_named_by_line(tmp_path) -> None:
    """A cell past Python csv's 131,072-character default is a document, not an error; a
    broken quote names the file and its line."""
    long = "word " * 40_000  # 200,000 characters
    path = tmp_path / "long.csv"
    path.write_text(f'id,text\n1,short\n2,"{long}"\n', encoding="utf-8")
    table = read_table(path)
    assert [v for _, v in column_values(table, "text")] == ["short", long.strip()]
    bad = tmp_path / "bad.tsv"
    bad.write_text('id\ttext\n1\tok\n2\t"a\tb\n', encoding="utf-8")
    with pytest.raises(TableError, match=r"bad\.tsv:\d+: malformed TSV"):
        read_table(bad)
    # a TSV without quoting may start a cell with a quote: read literally (it was refused)
    plain = tmp_path / "plain.tsv"
    plain.write_text('id\tname\n1\t"Weird" Al Yankovic\n2\tCher\n', encoding="utf-8")
    assert [v for _, v in column_values(read_table(plain), "name")] == [
        '"Weird" Al Yankovic', "Cher"]
    plain.write_text('id\tname\n1\t"Weird" Al Yankovic\n2\ta\tb\n', encoding="utf-8")
    with pytest.raises(TableError, match=r"plain\.tsv:3: 3 fields"):  # the line really at fault
        read_table(plain)
    quoted = tmp_path / "quoted.tsv"  # phrasekit's own TSVs quote a cell holding a tab
    quoted.write_text('id\tname\n1\t"a\tb"\n', encoding="utf-8")
    assert [v for _, v in column_values(read_table(quoted), "name")] == ["a\tb"]


def test_a_list_cell_is_not_text(tmp_path) -> None:
    path = tmp_path / "lists.parquet"
    pq.write_table(pa.table({"name": ["Paris", "London"], "tags": [[1], [2, 3]]}), path)
    table = read_table(path)
    assert [v for _, v in column_values(table, "name")] == ["Paris", "London"]
    with pytest.raises(TableError, match=r"lists\.parquet row 1: 'tags' holds a list"):
        column_values(table, "tags")
    pq.write_table(pa.table({"name": [b"Paris"]}), path)  # binary is not text either
    with pytest.raises(TableError, match=r"'name' holds a bytes \(b'Paris'\), not text"):
        column_values(read_table(path), "name")


def test_list_and_struct_cells_are_written_as_json(tmp_path) -> None:
    """A Parquet list or struct column passed through to a CSV output (``join``'s other
    columns) is written as JSON a reader can parse, not as Python's repr."""
    write_table(tmp_path / "t.csv", ["a", "b"], [[[1, 2], {"k": "é"}]])
    row = (tmp_path / "t.csv").read_text(encoding="utf-8").splitlines()[1]
    import csv

    assert [json.loads(c) for c in next(csv.reader([row]))] == [[1, 2], {"k": "é"}]
