"""Entity retrieval: EntityIndex build / query / save / load, names files, CLI, errors.

Real data: the YAGO retrieval fixture (alias query -> canonical entity name) and AutoFJ titles.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from phrasekit.cli import app
from phrasekit.encoders import CharNgramEncoder
from phrasekit.similarity import (
    EntityIndex,
    EntityIndexError,
    build_index,
    read_column,
    read_names,
)

FIXTURES = Path(__file__).parent / "fixtures" / "eval"
YAGO = FIXTURES / "yago_retrieval" / "yago_test_samples.tsv"


def _yago() -> tuple[list[str], list[str]]:
    """(queries, gold labels) of the YAGO fixture."""
    rows = [ln.split("\t") for ln in YAGO.read_text(encoding="utf-8").splitlines() if ln]
    return [q for q, _ in rows], [lab for _, lab in rows]


def _dictionary() -> list[str]:
    """YAGO labels plus AutoFJ left titles as distractors (~120 real names)."""
    names = _yago()[1]
    for table in sorted(p for p in (FIXTURES / "autofj").iterdir() if p.is_dir()):
        names += [v for _, v in read_column(table / "left.csv", "title")]
    return list(dict.fromkeys(names))


@pytest.fixture(scope="module")
def string_enc() -> CharNgramEncoder:
    return CharNgramEncoder()


def test_query_finds_gold_entities_minilm(minilm):
    queries, labels = _yago()
    names = _dictionary()
    exact = EntityIndex.build(names, minilm, index="exact")
    ann = EntityIndex(exact.names, exact.ids, exact.vectors,  # same vectors, HNSW search
                      build_index(exact.vectors, kind="ann"), minilm, "minilm")
    assert exact.model == "minilm" and exact.kind == "exact" and ann.kind == "ann"
    hits = exact.query(queries, k=5)
    assert len(hits) == len(queries) and all(len(h) == 5 for h in hits)
    top1 = np.mean([h[0][0] == lab for h, lab in zip(hits, labels, strict=True)])
    assert top1 >= 0.9  # 0.975 measured
    for h in hits:
        assert [s for *_, s in h] == sorted((s for *_, s in h), reverse=True)
        assert all(names[int(i)] == n for n, i, _ in h)  # default id: position in the input
    ann_hits = ann.query(queries, k=5)
    assert [h[0][2] for h in ann_hits] == pytest.approx([h[0][2] for h in hits], abs=1e-5)


def test_duplicates_and_ids(string_enc):
    plain = EntityIndex.build(["Paris", " Paris ", "London", "Paris"], string_enc)
    assert plain.names == ["Paris", "London"] and plain.ids == ["0", "2"]
    ents = EntityIndex.build(["Paris", "City of Light", "Paris", "Paris", "London"], string_enc,
                             ids=["Q90", "Q90", "Q830149", "Q90", "Q84"])
    assert list(zip(ents.names, ents.ids, strict=True)) == [
        ("Paris", "Q90"), ("City of Light", "Q90"), ("Paris", "Q830149"), ("London", "Q84")]
    top = ents.query("paris", k=2)[0]
    assert {i for _, i, _ in top} == {"Q90", "Q830149"} and top[0][2] == pytest.approx(top[1][2])
    assert ents.query("londn", k=1) == [[("London", "Q84", pytest.approx(0.7, abs=0.3))]]


def test_arrow_arrays_are_names_and_queries(string_enc):
    """Arrow arrays, which ``encode`` and ``fuzzy_join`` take, were refused item by item
    ("names[0] is StringScalar")."""
    import pyarrow as pa

    ents = EntityIndex.build(pa.chunked_array([["Paris", "London"]]), string_enc,
                             ids=pa.array(["Q90", "Q84"]))
    assert ents.names == ["Paris", "London"] and ents.ids == ["Q90", "Q84"]
    assert ents.query(pa.array(["londn"]), k=1)[0][0][:2] == ("London", "Q84")


@pytest.mark.parametrize(
    ("names", "ids", "fragment"),
    [([], None, "dictionary is empty"), (["a", "  "], None, r"names\[1\] is empty"),
     (["a", "b"], ["x"], "2 names but 1 ids"), (["a"], [""], r"ids\[0\] is empty")],
)
def test_build_errors(string_enc, names, ids, fragment):
    with pytest.raises(EntityIndexError, match=fragment):
        EntityIndex.build(names, string_enc, ids=ids)


def test_build_rejects_bad_arguments(string_enc):
    with pytest.raises(TypeError, match="not a single string"):
        EntityIndex.build("Paris", string_enc)
    with pytest.raises(ValueError, match="unknown model"):
        EntityIndex.build(["Paris"], "no-such-model")
    with pytest.raises(ValueError, match="index kind"):
        EntityIndex.build(["Paris"], string_enc, index="hnsw")
    with pytest.raises(ValueError, match="'ivf' is for one-off searches"):
        EntityIndex.build(["Paris"], string_enc, index="ivf")
    with pytest.raises(ValueError, match="k must be"):
        EntityIndex.build(["Paris"], string_enc).query("x", k=0)


@pytest.mark.parametrize("kind", ["exact", "ann"])
def test_save_load_round_trip(tmp_path, kind):
    names = _dictionary()
    ents = EntityIndex.build(names, "string", index=kind)
    out = ents.save(tmp_path / "ents")
    expected = {"config.json", "names.jsonl", "vectors.npy", "manifest.json"} | (
        {"index.faiss"} if kind == "ann" else set())
    assert {p.name for p in out.iterdir()} == expected
    config = json.loads((out / "config.json").read_text(encoding="utf-8"))
    assert config["model"] == "string" and config["count"] == len(names)
    assert config["dim"] == 4096 and config["index_kind"] == kind
    back = EntityIndex.load(out)  # encoder re-created by name
    queries = _yago()[0]
    assert back.query(queries, k=3) == ents.query(queries, k=3)
    ents.save(out)  # overwriting an earlier EntityIndex is allowed, atomically
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ents"]


def test_load_errors(tmp_path, string_enc):
    with pytest.raises(EntityIndexError, match="not found"):
        EntityIndex.load(tmp_path / "missing")
    with pytest.raises(EntityIndexError, match="not a saved EntityIndex"):
        EntityIndex.load(tmp_path)
    out = EntityIndex.build(_dictionary(), string_enc).save(tmp_path / "ents")
    with pytest.raises(EntityIndexError, match="does not reproduce"):
        EntityIndex.load(out, encoder=CharNgramEncoder(ngram_range=(3, 3)))
    with pytest.raises(EntityIndexError, match="1024-d"):
        EntityIndex.load(out, encoder=CharNgramEncoder(n_features=1024))
    (out / "names.jsonl").write_text('{"name": "x", "id": "0"}\n', encoding="utf-8")
    with pytest.raises(EntityIndexError, match=r"names\.jsonl: contents differ from manifest"):
        EntityIndex.load(out)
    other = tmp_path / "other"
    other.mkdir()
    (other / "config.json").write_text("{}", encoding="utf-8")  # e.g. a model folder
    with pytest.raises(ValueError, match="not replacing"):
        EntityIndex.build(["a"], string_enc).save(other)
    assert (other / "config.json").read_text(encoding="utf-8") == "{}"


def test_load_with_other_model_name(tmp_path, minilm):
    out = EntityIndex.build(["heart attack", "protein folding"], "string").save(tmp_path / "e")
    with pytest.raises(EntityIndexError, match="built with encoder 'string'"):
        EntityIndex.load(out, encoder=minilm)


def test_read_names_formats_and_errors(tmp_path):
    txt = tmp_path / "n.txt"
    txt.write_text("Paris\n  London \n", encoding="utf-8")
    assert read_names(txt) == (["Paris", "London"], None)
    txt.write_text("Paris\r\nLondon\r\n\r\n \n", encoding="utf-8")  # blank lines at the end
    assert read_names(txt) == (["Paris", "London"], None)
    txt.write_bytes(b"New York\rCity\nBoston\n")  # lines end at \n only; a CR is named
    with pytest.raises(EntityIndexError, match=r"n\.txt:1: a carriage return"):
        read_names(txt)
    txt.write_text("Paris\n\n  London \n", encoding="utf-8")  # name i is line i: no gaps
    with pytest.raises(EntityIndexError, match=r"n\.txt:2: blank line .*names file"):
        read_names(txt)
    with pytest.raises(EntityIndexError, match=r"n\.txt:2: blank line .*queries file"):
        read_names(txt, what="queries file")
    txt.write_text("\ufeffParis\n", encoding="utf-8")  # a byte-order mark is not a name
    assert read_names(txt) == (["Paris"], None)
    tsv = tmp_path / "n.tsv"
    tsv.write_text("id\tname\nQ90\tParis\nQ84\tLondon\n", encoding="utf-8")
    assert read_names(tsv, column="name", id_column="id") == (["Paris", "London"], ["Q90", "Q84"])
    one = tmp_path / "one.csv"
    one.write_text("name\nParis\n", encoding="utf-8")
    assert read_names(one) == (["Paris"], None)
    cases = [
        ("a.csv", "id,name\nQ1,a\n", {}, "choose the name column"),
        ("b.csv", "id,name\nQ1,a\n", {"column": "title"}, "no column 'title'"),
        ("c.csv", "id,name\nQ1,\n", {"column": "name"}, "empty 'name' cell"),
        ("d.csv", "id,name\n,a\n", {"column": "name", "id_column": "id"}, "empty 'id' cell"),
        ("e.csv", 'id,name\nQ1,"a\n', {"column": "name"}, "malformed CSV"),
        ("f.csv", "id,name\nQ1,a,b\n", {"column": "name"}, "3 fields"),
        ("g.txt", "\n \t\n", {}, r"no names \(only blank lines\)"),
        ("g2.txt", "", {}, r"no names \(empty file\)"),
        ("h.txt", "a\n", {"column": "name"}, "needs a .csv or .tsv"),
        ("k.parquet", "x", {}, "not .parquet"),
        ("l.csv", "name\nfoo\n\nbar\n", {}, r"l\.csv:3: empty 'name' cell"),
        ("i.csv", "name\n", {}, "no names in column"),
        ("j.csv", "a,a\nx,y\n", {"column": "a"}, "duplicate column 'a'"),
    ]
    for fname, content, kwargs, fragment in cases:
        p = tmp_path / fname
        p.write_text(content, encoding="utf-8")
        with pytest.raises(EntityIndexError, match=fragment):
            read_names(p, **kwargs)
    bad = tmp_path / "latin.txt"
    bad.write_bytes("caf\xe9\n".encode("latin-1"))
    with pytest.raises(EntityIndexError, match="UTF-8"):
        read_names(bad)
    with pytest.raises(EntityIndexError, match="not found"):
        read_names(tmp_path / "nope.txt")


def test_cli_build_and_query(tmp_path):
    names = tmp_path / "entities.csv"
    with names.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["id", "name"])
        writer.writerows((f"E{i}", n) for i, n in enumerate(_dictionary()))
    out = tmp_path / "idx"
    runner = CliRunner()
    res = runner.invoke(app, ["index", "build", str(names), "--out", str(out), "--model",
                              "string", "--column", "name", "--id-column", "id", "--quiet"])
    assert res.exit_code == 0, res.output
    assert "indexed" in res.output and (out / "config.json").is_file()
    res = runner.invoke(app, ["index", "query", str(out), "Messier 82", "ngc 4414", "-k", "2",
                              "--quiet"])
    assert res.exit_code == 0, res.output
    lines = res.stdout.strip().splitlines()  # the fallback combiner warns once per process
    assert lines[0] == "query\trank\tname\tid\tscore" and len(lines) == 5
    assert lines[1].split("\t")[:3] == ["Messier 82", "1", "Messier 82"]
    res = runner.invoke(app, ["index", "query", str(out), "Messier\t82"])
    assert res.exit_code == 2 and "query 1 holds a tab or a line break" in res.output
    plain = tmp_path / "dup.txt"
    plain.write_text("Foo\nFoo\nBar\n", encoding="utf-8")
    res = runner.invoke(app, ["index", "build", str(plain), "--out", str(tmp_path / "i2"),
                              "--model", "string", "--quiet"])
    assert res.exit_code == 0 and "indexed 2 names" in res.output, res.output
    assert "1 repeated entry kept once" in res.output
    queries = tmp_path / "q.txt"
    queries.write_text("\n".join(_yago()[0]) + "\n", encoding="utf-8")
    res = runner.invoke(app, ["index", "query", str(out), "--queries", str(queries), "-k", "3",
                              "--out", str(tmp_path / "r.csv"), "--quiet"])
    assert res.exit_code == 0, res.output
    rows = list(csv.DictReader((tmp_path / "r.csv").open(encoding="utf-8", newline="")))
    assert len(rows) == 3 * len(_yago()[0])
    assert set(rows[0]) == {"query_row", "query", "rank", "name", "id", "score"}
    res = runner.invoke(app, ["index", "query", str(out), "Messier 82", "ngc 4414", "-k", "2",
                              "--json", "--quiet"])
    assert res.exit_code == 0, res.output
    found = json.loads(res.output)
    assert [q["query"] for q in found] == ["Messier 82", "ngc 4414"]
    assert [q["query_row"] for q in found] == [0, 1]
    assert [h["rank"] for h in found[0]["hits"]] == [1, 2]
    assert found[0]["hits"][0]["name"] == "Messier 82" and found[0]["hits"][0]["id"].startswith("E")
    assert found[0]["hits"][0]["score"] >= found[0]["hits"][1]["score"]
    both = runner.invoke(app, ["index", "query", str(out), "x", "--json", "--out",
                               str(tmp_path / "r2.csv")])
    assert both.exit_code == 2 and "give one" in both.output
    assert not (tmp_path / "r2.csv").exists()


@pytest.mark.parametrize(
    ("args", "fragment"),
    [(["index", "query", "NOPE_DIR", "x"], "not found"),
     (["index", "query", "NOPE_DIR"], "give query texts"),
     (["index", "build", "NOPE.txt", "--out", "o", "--model", "string"], "not found"),
     (["index", "build", "NAMES", "--out", "o", "--model", "string", "--index", "x"],
      "--index must be one of"),
     (["index", "build", "NAMES", "--out", "o", "--model", "string", "--index", "ivf"],
      "--index must be one of auto, exact, ann,"),  # ivf is for one-off searches
     (["index", "build", "NAMES", "--out", "o", "--model", "nope"], "unknown model")],
)
def test_cli_errors_exit_2(tmp_path, args, fragment):
    names = tmp_path / "n.txt"
    names.write_text("Paris\n", encoding="utf-8")
    args = [str(tmp_path / a) if a in ("NOPE_DIR", "NOPE.txt", "o") else
            str(names) if a == "NAMES" else a for a in args]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 2 and fragment in res.output


def test_query_reads_an_iterator_once_and_checks_k(string_enc):
    """A generator of queries gets its hits (it was read twice, so hybrid scoring saw none);
    ``k`` and a missing ``texts`` are named."""
    ix = EntityIndex.build(["New York City", "Boston"], string_enc)
    hits = ix.query(t for t in ["boston", "new york city"])
    assert [h[0][0] for h in hits] == ["Boston", "New York City"]
    for k in (1.5, True, "2"):
        with pytest.raises(TypeError, match="k must be an integer"):
            ix.query(["boston"], k=k)
    with pytest.raises(TypeError, match="texts must be a list of texts, got NoneType"):
        ix.query(None)


def test_loading_an_entity_index_as_a_model_says_what_it_is(tmp_path, string_enc):
    import phrasekit

    folder = EntityIndex.build(["Boston"], string_enc).save(tmp_path / "idx")
    with pytest.raises(ValueError, match=r"a saved entity index .*not an encoder model folder"):
        phrasekit.load(folder)


def test_missing_ids_are_refused_and_whole_float_ids_read_as_integers(string_enc):
    """An id column with nulls reads as floats in pandas: 1.0 is stored as "1", and a null
    is refused (it was stored as the id "nan" / "None")."""
    assert EntityIndex.build(["a b", "c d"], string_enc, ids=[1.0, 2]).ids == ["1", "2"]
    for missing in (None, float("nan")):
        with pytest.raises(EntityIndexError, match=r"ids\[1\] is missing"):
            EntityIndex.build(["a b", "c d"], string_enc, ids=[10, missing])


def test_cli_query_prints_names_and_scores_as_they_are(tmp_path):
    names = tmp_path / "n.csv"
    names.write_text('name,id\nThe "Big" Apple,a1\n-ABC corp,a2\n', encoding="utf-8")
    runner = CliRunner()
    res = runner.invoke(app, ["index", "build", str(names), "--column", "name", "--id-column",
                              "id", "--out", str(tmp_path / "i"), "--model", "string", "-q"])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["index", "query", str(tmp_path / "i"), "big apple", "-k", "2",
                              "--scorer", "cosine", "-q"])
    rows = [line.split("\t") for line in res.stdout.strip().splitlines()[1:]]
    assert [r[2] for r in rows] == ['The "Big" Apple', "-ABC corp"]  # no quoting, no prefix
    assert all(float(r[4]) <= 1.0 for r in rows)
    res = runner.invoke(app, ["index", "query", str(tmp_path / "i"), "x", "--no-csv-safe"])
    assert res.exit_code == 2 and "not the printed table" in res.output
