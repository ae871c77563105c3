"""The data-frame API: join_frames, encode_frame and fuzzy_join on series, with pandas, Arrow and
(when installed) Polars frames."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import phrasekit

LEFT = {"name": ["New York", "Los Angeles"], "id": [1, 2]}
RIGHT = {"city": ["new york city", "los angeles ca", "zzz"], "note": ["a", "b", "c"]}


def _frames(kind: str) -> tuple[object, object]:
    if kind == "pandas":
        pd = pytest.importorskip("pandas", reason="pandas is not installed")
        return pd.DataFrame(LEFT), pd.DataFrame(RIGHT)
    if kind == "polars":
        pl = pytest.importorskip("polars", reason="polars is not installed (optional)")
        return pl.DataFrame(LEFT), pl.DataFrame(RIGHT)
    return pa.table(LEFT), pa.table(RIGHT)


def _rows(frame: object) -> list[dict]:
    return pa.table(frame).to_pylist() if not isinstance(frame, pa.Table) else frame.to_pylist()


@pytest.mark.parametrize("kind", ["pandas", "polars", "arrow"])
def test_join_frames_returns_the_same_kind(kind: str) -> None:
    left, right = _frames(kind)
    out = phrasekit.join_frames(left, right, "name", "city", model="string", threshold=0.5,
                                how="left")
    assert type(out) is type(right)
    rows = _rows(out)
    assert [(r["right_value"], r["left_value"], r["left_id"], r["right_note"]) for r in rows] == [
        ("new york city", "New York", 1, "a"), ("los angeles ca", "Los Angeles", 2, "b"),
        ("zzz", None, None, "c")]
    assert rows[0]["score"] > 0.5 and rows[2]["score"] is None


@pytest.mark.parametrize("kind", ["pandas", "polars", "arrow"])
def test_encode_frame_adds_unit_vectors(kind: str) -> None:
    _, right = _frames(kind)
    out = phrasekit.encode_frame(right, "city", model="string")
    assert type(out) is type(right)
    vectors = np.asarray([row["vector"] for row in _rows(out)], dtype=np.float32)
    expected = phrasekit.load("string").encode(RIGHT["city"])
    np.testing.assert_allclose(vectors, expected, atol=1e-6)
    with pytest.raises(ValueError, match="no column 'nope'; columns are"):
        phrasekit.encode_frame(right, "nope", model="string")


def test_fuzzy_join_takes_series_and_lists() -> None:
    pd = pytest.importorskip("pandas", reason="pandas is not installed")
    matches = phrasekit.fuzzy_join(pd.Series(LEFT["name"]), RIGHT["city"], "string")
    assert [(m.right_row, m.left_value) for m in matches][:2] == [(0, "New York"),
                                                                  (1, "Los Angeles")]
    with pytest.raises(ValueError, match="right value 1 is missing"):
        phrasekit.fuzzy_join(LEFT["name"], ["a", None], "string")


def test_join_frames_names_an_empty_cell() -> None:
    with pytest.raises(ValueError, match=r"right row 1: empty 'city' cell"):
        phrasekit.join_frames(pa.table(LEFT), pa.table({"city": ["x", None]}), "name", "city",
                              model="string")
    with pytest.raises(TypeError, match="must be a pandas, Polars or PyArrow table"):
        phrasekit.join_frames([1], pa.table(LEFT), "name", model="string")


def _with_missing(kind: str, values: list) -> object:
    """A one-column frame ``city`` of ``values`` (None: that library's missing value)."""
    if kind == "pandas-none":
        pd = pytest.importorskip("pandas", reason="pandas is not installed")
        return pd.DataFrame({"city": pd.Series(values, dtype=object)})
    if kind == "pandas-nan":
        pd = pytest.importorskip("pandas", reason="pandas is not installed")
        return pd.DataFrame({"city": [np.nan if v is None else v for v in values]})
    if kind == "pandas-na":
        pd = pytest.importorskip("pandas", reason="pandas is not installed")
        return pd.DataFrame({"city": pd.array(values, dtype="string")})
    if kind == "polars":
        pl = pytest.importorskip("polars", reason="polars is not installed (optional)")
        return pl.DataFrame({"city": values})
    return pa.table({"city": values})


MISSING_KINDS = ["pandas-none", "pandas-nan", "pandas-na", "polars", "arrow"]


@pytest.mark.parametrize("kind", MISSING_KINDS)
def test_missing_join_cells_follow_the_empty_cell_rule(kind: str) -> None:
    """A missing cell is refused naming its row, or skipped with skip_empty; never the text
    "nan"."""
    right = _with_missing(kind, ["new york city", None, "los angeles ca"])
    with pytest.raises(ValueError, match=r"right row 1: empty 'city' cell"):
        phrasekit.join_frames(pa.table(LEFT), right, "name", "city", model="string")
    out = _rows(phrasekit.join_frames(_with_missing(kind, ["New York", None, "Los Angeles"]), right,
                                      "city", model="string", skip_empty=True, how="left"))
    assert [r["right_value"] for r in out] == ["new york city", None, "los angeles ca"]
    assert [r["left_row"] for r in out] == [0, None, 2] and out[1]["score"] is None


def test_pandas_integer_columns_stay_integers() -> None:
    pd = pytest.importorskip("pandas", reason="pandas is not installed")
    left, right = pd.DataFrame(LEFT), pd.DataFrame(RIGHT)
    kept = phrasekit.join_frames(left, right, "name", "city", model="string", threshold=0.5,
                                 how="left")
    for column in ("right_row", "left_row", "rank", "left_id"):
        assert str(kept[column].dtype) in ("int64", "Int64"), column
    assert str(kept["left_row"].dtype) == "Int64" and kept["left_id"].isna().tolist() == [
        False, False, True]
    inner = phrasekit.join_frames(left, right, "name", "city", model="string", threshold=0.5)
    assert {str(inner[c].dtype) for c in ("right_row", "left_row", "rank", "left_id")} == {
        "int64"}


@pytest.mark.parametrize("make", [
    lambda v: pa.array(v), lambda v: pa.chunked_array([v[:1], v[1:]]),
    lambda v: np.asarray(v, dtype=object), list])
def test_fuzzy_join_takes_arrow_arrays_and_refuses_missing_values(make) -> None:
    from phrasekit.similarity.join import join_values

    matches = phrasekit.fuzzy_join(make(LEFT["name"]), make(RIGHT["city"]), "string")
    assert [(m.right_row, m.left_value) for m in matches][:2] == [(0, "New York"),
                                                                  (1, "Los Angeles")]
    values = ["a", None, "b"] if make is not list else ["a", float("nan"), "b"]
    with pytest.raises(ValueError, match="left value 1 is missing"):
        phrasekit.fuzzy_join(make(values), ["a"], "string")
    assert join_values(make(values), "left", skip_empty=True) == [(0, "a"), (2, "b")]


def test_encode_frame_names_a_missing_row() -> None:
    pd = pytest.importorskip("pandas", reason="pandas is not installed")
    with pytest.raises(ValueError, match="row 1 of column 'city' is missing"):
        phrasekit.encode_frame(pd.DataFrame({"city": ["x", np.nan]}), "city", model="string")


def test_join_takes_the_models_default_threshold_as_the_cli(monkeypatch) -> None:
    """``threshold="default"`` (the default) is the scorer's default for the model, as
    ``phrasekit join`` takes it: the hybrid combiner's probability, or the cosine's
    ``DEFAULT_THRESHOLDS`` entry; None keeps every candidate (issue 68: "Paris" matched
    "Los Angeles" at 0.58 without one)."""
    from phrasekit.similarity import join
    from phrasekit.similarity.hybrid import shipped_combiner

    hybrid = shipped_combiner("pearl-minilm").threshold
    assert join.resolve_threshold("default", "pearl-minilm") == hybrid
    assert join.resolve_threshold("default", "pearl-minilm", "cosine") == 0.73
    assert join.resolve_threshold("default", "string", "cosine") is None
    assert join.resolve_threshold(0.2, "pearl-minilm") == 0.2
    assert join.resolve_threshold(None, "pearl-minilm") is None
    with pytest.raises(ValueError, match="'default' or None"):
        join.resolve_threshold("high", "minilm")
    monkeypatch.setitem(join.DEFAULT_THRESHOLDS, "string", 0.99)
    left, right = pa.table(LEFT), pa.table(RIGHT)
    strict = _rows(phrasekit.join_frames(left, right, "name", "city", model="string",
                                         how="left", scorer="cosine"))
    assert all(r["left_value"] is None for r in strict)  # no pair reaches 0.99
    every = _rows(phrasekit.join_frames(left, right, "name", "city", model="string",
                                        threshold=None, scorer="cosine"))
    assert len(every) == 3
    assert len(phrasekit.fuzzy_join(LEFT["name"], RIGHT["city"], "string", scorer="cosine")) == 0


def test_carried_columns_keep_their_types_and_odd_column_names_are_named() -> None:
    """Categories, nullable booleans and unsigned 64-bit integers came back as text, object
    or an overflow; integer, repeated or multi-level column names failed inside narwhals."""
    import numpy as np
    import pandas as pd

    left = pd.DataFrame({"name": ["New York City", "Bank of England"],
                         "flag": pd.array([True, None], dtype="boolean"),
                         "kind": pd.Categorical(["city", "bank"]),
                         "big": np.array([2**63 + 5, 1], dtype=np.uint64)})
    right = pd.DataFrame({"title": ["new york", "bank of england"]})
    out = phrasekit.join_frames(left, right, left_on="name", right_on="title",
                                model="glove-50d", threshold=None)
    assert str(out["left_flag"].dtype) == "boolean" and out["left_flag"].isna().tolist() == [
        False, True]
    assert str(out["left_kind"].dtype) == "category"
    assert out["left_big"].tolist() == [2**63 + 5, 1]
    for bad, message in ((pd.DataFrame({0: ["x"]}), "column names must be strings"),
                         (pd.DataFrame([["x", 1, 2]], columns=["name", "c", "c"]),
                          "the column 'c' more than once"),
                         (pd.DataFrame([["x"]], columns=pd.MultiIndex.from_tuples(
                             [("a", "name")])), "MultiIndex columns")):
        with pytest.raises(ValueError, match=message):
            phrasekit.join_frames(bad, right, left_on="name", right_on="title",
                                  model="glove-50d")


def test_result_types_hold_whether_or_not_anything_matched() -> None:
    pd = pytest.importorskip("pandas", reason="pandas is not installed")

    left = pd.DataFrame({"name": ["Paris", "Rome"]})
    none = phrasekit.join_frames(left, pd.DataFrame({"name": ["zzz"]}), "name", model="string",
                                 threshold=0.9)
    assert len(none) == 0 and none["left_row"].dtype == "int64"
    assert none["rank"].dtype == "int64" and none["score"].dtype == "float64"
    some = phrasekit.join_frames(left, pd.DataFrame({"name": ["zzz", "paris"]}), "name",
                                 model="string", threshold=0.9, how="left")
    assert str(some["left_row"].dtype) == "Int64" and str(some["rank"].dtype) == "Int64"
    assert some["left_row"].isna().sum() == 1 and some["score"].dtype == "float64"


def test_a_flag_cell_or_a_flag_for_a_number_is_refused() -> None:
    pd = pytest.importorskip("pandas", reason="pandas is not installed")

    with pytest.raises(ValueError, match=r"left row 1: 'name' holds a bool \(True\), not text"):
        phrasekit.join_frames(pd.DataFrame({"name": ["Paris", True]}),
                              pd.DataFrame({"name": ["x"]}), "name", model="string")
    with pytest.raises(TypeError, match="threshold is a number"):
        phrasekit.fuzzy_join(["Paris"], ["paris"], "string", threshold=True)
    assert phrasekit.fuzzy_join(["Paris"], ["paris"], "string", threshold=np.float32(0.2))
    with pytest.raises(TypeError, match="one_to_one is True or False"):
        phrasekit.fuzzy_join(["Paris"], ["paris"], "string", one_to_one="no")


def test_a_frame_without_rows_matches_nothing() -> None:
    """An empty frame was refused ("no values in column"), even with ``how="left"``, where a
    frame library's join keeps every right row."""
    pd = pytest.importorskip("pandas")
    left = pd.DataFrame({"name": ["Paris", "Rome"], "x": [1, 2]})
    right = pd.DataFrame({"title": ["paris", "roma"], "y": [3.0, 4.0]})
    for how in ("inner", "left"):
        none = phrasekit.join_frames(left, right.iloc[:0], "name", "title", "string", how=how)
        assert len(none) == 0 and list(none.columns)[-2:] == ["left_x", "right_y"]
    assert len(phrasekit.join_frames(left.iloc[:0], right, "name", "title", "string")) == 0
    kept = phrasekit.join_frames(left.iloc[:0], right, "name", "title", "string", how="left")
    assert kept["right_value"].tolist() == ["paris", "roma"] and kept["score"].isna().all()
    with pytest.raises(ValueError, match="no column 'nam'"):
        phrasekit.join_frames(left.iloc[:0], right, "nam", "title", "string")
    blank = pd.DataFrame({"name": ["", None], "x": [1, 2]})  # skip_empty leaves no value
    kept = phrasekit.join_frames(blank, right, "name", "title", "string", how="left",
                                 skip_empty=True)
    assert kept["right_value"].tolist() == ["paris", "roma"] and kept["score"].isna().all()
