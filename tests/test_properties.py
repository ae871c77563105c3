"""Property tests (hypothesis) over arbitrary unicode: the encoder contract, the corpus and CSV
readers, exact search and the fuzzy join. Separators (U+2028, U+0085, form feed, CR), control
characters, lone surrogates, empty and very long inputs included."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from phrasekit.io import CorpusError, read_corpus
from phrasekit.registry import load
from phrasekit.similarity.index import VectorIndex
from phrasekit.similarity.join import column_values, fuzzy_join, read_table, write_joined
from phrasekit.similarity.retrieval import EntityIndexError, read_names

SEPARATORS = "\u2028\u2029\x85\x0c\x0b\r\t\x00\x1f"
_chars = st.characters(exclude_categories=("Cs",)) | st.sampled_from(SEPARATORS)
TEXT = st.text(_chars, min_size=1, max_size=60).filter(lambda s: s.strip() != "")
SETTINGS = settings(max_examples=120, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def string_encoder():
    return load("string")


@SETTINGS
@given(texts=st.lists(TEXT, min_size=0, max_size=25), batch=st.integers(1, 9))
def test_encoder_contract(string_encoder, texts, batch):
    vecs = string_encoder.encode(texts, batch_size=batch)
    assert vecs.shape == (len(texts), string_encoder.dim) and vecs.dtype == np.float32
    assert np.isfinite(vecs).all()
    norms = np.linalg.norm(vecs, axis=1)
    assert np.all((np.abs(norms - 1) < 1e-4) | (norms == 0))
    for i in range(0, len(texts), 7):  # row i is text i, whatever the batching
        np.testing.assert_allclose(vecs[i], string_encoder.encode([texts[i]])[0], atol=1e-6)


@SETTINGS
@given(texts=st.lists(TEXT, min_size=1, max_size=5), at=st.integers(0, 5),
       bad=st.sampled_from(["a\ud800b", "\udfff", "", "  \t\u2028", None, 3, b"x"]))
def test_encoder_refuses_bad_items_naming_the_index(string_encoder, texts, at, bad):
    at = min(at, len(texts))
    with pytest.raises((ValueError, TypeError), match=rf"texts\[{at}\]"):
        string_encoder.encode([*texts[:at], bad, *texts[at:]])


def test_encoder_huge_input(string_encoder):
    vec = string_encoder.encode(["word " * 200_000])
    assert vec.shape == (1, string_encoder.dim) and np.isfinite(vec).all()


@SETTINGS
@given(docs=st.lists(TEXT, min_size=1, max_size=20))
def test_jsonl_corpus_round_trip(tmp_path_factory, docs):
    path = tmp_path_factory.mktemp("c") / "c.jsonl"
    path.write_text("".join(json.dumps({"id": str(i), "text": t}, ensure_ascii=False) + "\n"
                            for i, t in enumerate(docs)), encoding="utf-8")
    got = read_corpus(path)
    assert [d.text for d in got] == docs and [d.id for d in got] == [str(i)
                                                                   for i in range(len(docs))]


_LINE = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\n"),
                min_size=1, max_size=40).filter(lambda s: s.strip() != "")


@SETTINGS
@given(lines=st.lists(_LINE, min_size=1, max_size=20))
def test_text_corpus_one_document_per_newline(tmp_path_factory, lines):
    path = tmp_path_factory.mktemp("c") / "c.txt"
    path.write_bytes("\n".join(lines).encode("utf-8"))
    assert [d.text for d in read_corpus(path)] == [ln.strip() for ln in lines]


@SETTINGS
@given(junk=st.binary(min_size=1, max_size=200))
def test_corpus_reader_never_crashes_on_junk(tmp_path_factory, junk):
    path = tmp_path_factory.mktemp("c") / "c.jsonl"
    path.write_bytes(junk)
    try:
        docs = read_corpus(path)
    except CorpusError as exc:
        assert str(path) in str(exc)
    else:
        assert docs and all(isinstance(d.text, str) for d in docs)


@SETTINGS
@given(names=st.lists(_LINE, min_size=1, max_size=20), delimiter=st.sampled_from([",", "\t"]))
def test_csv_names_round_trip(tmp_path_factory, names, delimiter):
    path = tmp_path_factory.mktemp("n") / ("n.csv" if delimiter == "," else "n.tsv")
    with open(path, "w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh, delimiter=delimiter)
        writer.writerow(["id", "name"])
        writer.writerows([str(i), n] for i, n in enumerate(names))
    got, ids = read_names(path, column="name", id_column="id")
    assert got == [n.strip() for n in names] and ids == [str(i) for i in range(len(names))]


@SETTINGS
@given(junk=st.binary(min_size=0, max_size=200))
def test_csv_reader_never_crashes_on_junk(tmp_path_factory, junk):
    path = tmp_path_factory.mktemp("n") / "n.csv"
    path.write_bytes(b"id,name\n" + junk)
    try:
        names, _ = read_names(path, column="name")
    except EntityIndexError as exc:
        assert str(path) in str(exc)
    else:
        assert all(n.strip() for n in names)


@SETTINGS
@given(data=st.data(), n=st.integers(1, 30), d=st.integers(2, 8))
def test_exact_search_finds_each_stored_vector(data, n, d):
    values = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False, width=32)
    vecs = np.array(data.draw(st.lists(st.lists(values, min_size=d, max_size=d), min_size=n,
                                       max_size=n)), dtype=np.float32)
    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    if (norms == 0).any():
        with pytest.raises(ValueError, match=r"all zeros \(first: row"):
            VectorIndex(vecs)
        return
    unit = vecs / norms
    scores, ids = VectorIndex(unit).search(unit, k=1)
    self_scores = np.einsum("ij,ij->i", unit, unit)
    assert np.all(scores[:, 0] >= self_scores - 1e-4)  # itself, or a tie as good
    assert np.all((ids >= 0) & (ids < n))


_CELL = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"),
                min_size=1, max_size=20).filter(lambda s: s.strip() != "")


@SETTINGS
@given(values=st.lists(_CELL, min_size=1, max_size=12, unique_by=str.strip),
       extra=st.lists(_CELL, min_size=12, max_size=12), seed=st.integers(0, 99))
def test_join_finds_each_value_in_a_shuffled_copy(tmp_path_factory, string_encoder, values,
                                                  extra, seed):
    values = [v.strip() for v in values]
    order = np.random.default_rng(seed).permutation(len(values))
    root = tmp_path_factory.mktemp("join")
    for name, rows in (("left", [(values[i], extra[i]) for i in range(len(values))]),
                       ("right", [(values[i], extra[i]) for i in order])):
        with open(root / f"{name}.csv", "w", encoding="utf-8", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow(["name", "note"])
            writer.writerows(rows)
    left, right = read_table(root / "left.csv"), read_table(root / "right.csv")
    assert [r[2] for r in left.rows] == [[v, extra[i]] for i, v in enumerate(values)]
    matches = fuzzy_join(column_values(left, "name"), column_values(right, "name"),
                         string_encoder, k=1, index="exact", scorer="cosine", threshold=None)
    assert len(matches) == len(values)
    assert all(m.score >= 1 - 1e-4 for m in matches)  # its own copy is always found
    out = root / "out.csv"
    assert write_joined(out, matches, left, "name", right, "name", how="left",
                        csv_safe=False) == len(values)
    with open(out, encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["right_note"] for r in rows] == [extra[i] for i in order]
