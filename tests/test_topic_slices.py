"""Topics over time and per class on 80 real arXiv abstracts (months from their arXiv ids,
archives as classes), 30 of them placed by the student; and the CLI's --time-field and
--class-field."""

from __future__ import annotations

import csv
import json
from collections import Counter
from datetime import date, datetime
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from phrasekit.cli import app
from phrasekit.io import Document
from phrasekit.topics import DocumentTopicModel
from phrasekit.topics.exploration.slices import parse_timestamp, time_bins


def _month(doc: Document) -> str:
    """The month an arXiv id (YYMM.NNNN) was first submitted in, as ISO text."""
    return f"20{doc.id[:2]}-{doc.id[2:4]}"


@pytest.fixture(scope="module")
def fitted(small_corpus: list[Document]) -> DocumentTopicModel:
    return DocumentTopicModel(encoder="glove-50d", n_topics=5, min_df=2,
                              fit_docs=50).fit(small_corpus)


def _check_table(rows: list[dict], key: str, gold: list[str], model: DocumentTopicModel
                 ) -> None:
    """Counts add up to each slice's documents, shares to 1, terms are topical terms found
    in the topic's fitted documents of that slice."""
    assert [(r[key], r["topic"]) for r in rows] == sorted((r[key], r["topic"]) for r in rows)
    per_slice = Counter()
    for r in rows:
        per_slice[r[key]] += r["frequency"]
    assert per_slice == Counter(gold)
    for name in per_slice:
        assert sum(r["share"] for r in rows if r[key] == name) == pytest.approx(1, abs=1e-3)
    generic = set(model.generic_terms_)
    labels = np.asarray(model.doc_labels_)
    texts = {i: " ".join(model.token_docs_[j]) for j, i in enumerate(model.sample_index_)}
    listed = 0
    for r in rows:
        assert r["label"] == model.topic_label(r["topic"])
        assert len(r["terms"]) <= 5 and not set(r["terms"]) & generic
        docs = [texts[i] for i in texts if labels[i] == r["topic"] and gold[i] == r[key]]
        for term in r["terms"]:
            listed += 1
            assert any(f" {term.lower()} " in f" {d} " for d in docs), (term, r)
    assert listed > len(rows)


def test_topics_over_time_by_month_and_quarter(fitted: DocumentTopicModel,
                                               small_corpus: list[Document]) -> None:
    months = [_month(d) for d in small_corpus]
    rows = fitted.topics_over_time(months, bins="month")
    _check_table(rows, "timestamp", months, fitted)
    assert {r["timestamp"] for r in rows} == set(months)
    quarters = fitted.topics_over_time([datetime.fromisoformat(m + "-15") for m in months],
                                       bins="quarter")
    assert {r["timestamp"] for r in quarters} == {"2007-Q2", "2007-Q3", "2007-Q4", "2008-Q1",
                                                  "2008-Q2"}
    two = fitted.topics_over_time(months, bins=2)
    assert len({r["timestamp"] for r in two}) == 2
    with pytest.raises(ValueError, match="timestamp 3"):
        fitted.topics_over_time([*months[:3], "soon", *months[4:]])
    with pytest.raises(ValueError, match="one per fitted document"):
        fitted.topics_over_time(months[:10])
    with pytest.raises(ValueError, match="bins"):
        fitted.topics_over_time(months, bins="fortnight")


def test_topics_per_class(fitted: DocumentTopicModel, small_corpus: list[Document],
                          tmp_path: Path) -> None:
    classes = [d.meta["label"] for d in small_corpus]
    rows = fitted.topics_per_class(classes)
    _check_table(rows, "class", classes, fitted)
    # the topic holding most astro-ph abstracts is named there by astronomy's words
    astro = max((r for r in rows if r["class"] == "astro-ph"), key=lambda r: r["frequency"])
    assert astro["share"] > 0.5
    back = DocumentTopicModel.load(fitted.save(tmp_path / "m"))  # slices as the fitted one
    assert back.topics_per_class(classes) == rows
    months = [_month(d) for d in small_corpus]
    assert back.topics_over_time(months) == fitted.topics_over_time(months)
    # NumPy's integers are the ints they hold (a column of a frame mixes them with ints)
    numbers = [i % 3 for i in range(len(classes))]
    mixed = [np.int64(n) if i % 2 else n for i, n in enumerate(numbers)]
    assert fitted.topics_per_class(mixed) == fitted.topics_per_class(numbers)


def test_timestamps_and_bins() -> None:
    assert parse_timestamp("2007") == datetime(2007, 1, 1)
    assert parse_timestamp("2007-04") == datetime(2007, 4, 1)
    assert parse_timestamp(date(2007, 4, 3)) == datetime(2007, 4, 3)
    assert parse_timestamp("2007-04-15T23:30:00-02:00") == datetime(2007, 4, 16, 1, 30)
    for bad in ("April 2007", "", 2007, None, "2007-4-x"):
        with pytest.raises(ValueError):
            parse_timestamp(bad)
    stamps = [datetime(2024, 1, 3), datetime(2024, 1, 7), datetime(2024, 1, 8)]
    assert time_bins(stamps, "week") == ["2024-01-01", "2024-01-01", "2024-01-08"]
    assert time_bins(stamps, "day") == ["2024-01-03", "2024-01-07", "2024-01-08"]
    assert time_bins(stamps, "year") == ["2024"] * 3
    # five one-day bins from Jan 3; the last one closed at the end
    assert time_bins(stamps, 5) == ["2024-01-03T00:00:00", "2024-01-07T00:00:00",
                                    "2024-01-07T00:00:00"]


def _write(path: Path, docs: list[Document], drop: int | None = None) -> Path:
    with path.open("w", encoding="utf-8") as fh:
        for i, d in enumerate(docs):
            rec = {"id": d.id, "text": d.text, "label": d.meta["label"],
                   "date": _month(d) + "-15"}
            if i == drop:
                del rec["date"]
            fh.write(json.dumps(rec) + "\n")
            if i == 2:
                fh.write("\n")  # a blank line: line numbers still name the right line
    return path


def test_cli_writes_slice_tables(small_corpus: list[Document], tmp_path: Path) -> None:
    corpus = _write(tmp_path / "dated.jsonl", small_corpus)
    out = tmp_path / "out"
    res = CliRunner().invoke(app, ["topics", str(corpus), "--out", str(out), "-m", "glove-50d",
                                   "-k", "4", "--min-df", "2", "--time-field", "date",
                                   "--time-bins", "quarter", "--class-field", "label",
                                   "--no-report", "--quiet"])
    assert res.exit_code == 0, res.output
    for name, key, n_slices in (("topics_over_time.csv", "timestamp", 5),
                                ("topics_per_class.csv", "class", 6)):
        with (out / name).open(encoding="utf-8") as fh:
            rows = list(csv.DictReader(fh))
        assert set(rows[0]) == {"topic", "label", key, "frequency", "share", "terms"}
        assert len({r[key] for r in rows}) == n_slices
        assert sum(int(r["frequency"]) for r in rows) == 80
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert "topics_over_time.csv" in json.dumps(manifest)


@pytest.mark.parametrize(("drop", "args", "message"), [
    (40, ["--time-field", "date"], "dated.jsonl:42: no field 'date'"),
    (None, ["--time-field", "label"], "dated.jsonl:1: field 'label': 'math' is not"),
    (None, ["--class-field", "nothing"], "dated.jsonl:1: no field 'nothing'"),
    (None, ["--time-field", "date", "--time-bins", "0"], "--time-bins"),
    (None, ["--class-field", "label", "--method", "pntm"], "documents method"),
    (None, ["--time-field", "date", "--time-bins", "100000000"],
     "--time-bins 100000000: more bins than the corpus has documents (80)"),
    (None, ["--time-field", "date", "--time-bins", "9" * 5000], "--time-bins"),
    (None, ["--time-field", "text"], "--time-field 'text' is the documents' text"),
    (None, ["--class-field", "id"], "--class-field 'id' is the documents' id"),
])
def test_cli_bad_slice_field_exits_2(small_corpus: list[Document], tmp_path: Path, drop,
                                     args: list[str], message: str) -> None:
    corpus = _write(tmp_path / "dated.jsonl", small_corpus, drop=drop)
    out = tmp_path / "out"
    res = CliRunner().invoke(app, ["topics", str(corpus), "--out", str(out), "-m", "glove-50d",
                                   "-k", "4", "--quiet", *args])
    assert res.exit_code == 2, res.output
    assert message in res.output and len(res.output.strip().splitlines()) == 1
    assert not out.exists()


def test_classes_that_read_alike_but_differ_are_refused_by_line(tmp_path: Path) -> None:
    """1 and "1" had been merged into one class on the command line (the Python call refuses
    them); a list was written as its text and a NaN became the class "nan"."""
    from phrasekit.io import CorpusError, read_corpus
    from phrasekit.topics.exploration.slices import read_slice_fields

    path = tmp_path / "c.jsonl"

    def fields(*values: str) -> list[str] | None:
        path.write_text("".join(f'{{"text": "t", "c": {v}}}\n' for v in values))
        return read_slice_fields(read_corpus(path), path, None, "c").classes

    assert fields("1", "2", "1") == ["1", "2", "1"]
    for values, message in ((("1", '"1"'), r"c\.jsonl:2: field 'c' is '1', which reads as 1 "
                                           r"\(.*c\.jsonl:1: field 'c'\): give the classes "
                                           r"as one type"),
                            (("1", "1.0"), r"c\.jsonl:2: field 'c' is 1\.0, which reads as 1 "),
                            (('"a"', "[1, 2]"), r"c\.jsonl:2: field 'c' is a list"),
                            (('"a"', "NaN"), r"c\.jsonl:2: field 'c' is empty")):
        with pytest.raises(CorpusError, match=message):
            fields(*values)


def test_dates_at_the_ends_of_the_range() -> None:
    assert parse_timestamp("0001-01-01T05:00:00+05:00") == datetime(1, 1, 1)
    assert parse_timestamp("9999-12-31T23:00:00+01:00") == datetime(9999, 12, 31, 22)
    for outside in ("0001-01-01T00:00:00+05:00", "9999-12-31T23:00:00-05:00"):
        with pytest.raises(ValueError, match="outside the dates supported"):
            parse_timestamp(outside)
    far = [datetime(1, 1, 1), datetime(9999, 12, 31)]
    assert time_bins(far, 10**8)[0] == "0001-01-01T00:00:00"  # only used bins are named
    assert len(set(time_bins(far, "week"))) == 2


@pytest.mark.parametrize("stamp", ["0001-01-01T00:00:00+05:00", "9999-12-31T23:00:00-05:00"])
def test_cli_date_outside_the_range_names_file_and_line(small_corpus: list[Document],
                                                         tmp_path: Path, stamp: str) -> None:
    corpus = _write(tmp_path / "dated.jsonl", small_corpus)
    lines = corpus.read_text(encoding="utf-8").splitlines()
    rec = json.loads(lines[5])
    rec["date"] = stamp
    lines[5] = json.dumps(rec)
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    res = CliRunner().invoke(app, ["topics", str(corpus), "--out", str(tmp_path / "out"), "-m",
                                   "glove-50d", "-k", "4", "--time-field", "date", "-q"])
    assert res.exit_code == 2, res.output
    assert "dated.jsonl:6: field 'date'" in res.output and "outside the dates" in res.output
    assert len(res.output.strip().splitlines()) == 1


def test_missing_and_mixed_slice_values_are_named(fitted: DocumentTopicModel,
                                                   small_corpus: list[Document]) -> None:
    """NaN, pandas' NA and NaT were classes or broke a format; 1 and "1" were one class;
    NumPy datetimes and a generator are read."""
    import pandas as pd

    classes = [d.meta["label"] for d in small_corpus]
    for missing in (float("nan"), pd.NA, None):
        with pytest.raises(ValueError, match=r"classes\[0\] is missing"):
            fitted.topics_per_class([missing, *classes[1:]])
    with pytest.raises(ValueError, match=r"classes\[40\] is '1', which reads as 1"):
        fitted.topics_per_class([1] * 40 + ["1"] * 40)
    stamps = list(pd.date_range("2020-01-01", periods=80, freq="D"))
    with pytest.raises(ValueError, match="timestamp 0: missing"):
        fitted.topics_over_time([pd.NaT, *stamps[1:]])
    rows = fitted.topics_over_time(stamps)
    assert fitted.topics_over_time(pd.DatetimeIndex(stamps).values) == rows
    assert fitted.topics_over_time(s for s in stamps) == rows
