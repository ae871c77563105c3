"""Vector search (exact and faiss HNSW, save/load) and the fuzzy join (API and CLI) on real
fixture data (AutoFJ tables, Turney / YAGO names)."""

from __future__ import annotations

import csv
import re
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from phrasekit.cli import app
from phrasekit.encoders import CharNgramEncoder
from phrasekit.eval.autofj import AutoFJTask
from phrasekit.similarity import (
    ANN_THRESHOLD,
    ANNIndex,
    JoinError,
    VectorIndex,
    build_index,
    fuzzy_join,
    load_index,
    read_column,
)
from phrasekit.similarity.index import faiss_threads, resolve_kind
from phrasekit.similarity.ivf import IVFIndex, ivf_lists, ivf_probes
from phrasekit.similarity.join import DEFAULT_THRESHOLDS, MATCH_COLUMNS

FIXTURES = Path(__file__).parent / "fixtures" / "eval"
TABLE = FIXTURES / "autofj" / "Galaxy"


def test_index_top_k_order_and_ties():
    vecs = np.array([[1, 0], [0, 1], [1, 0], [0.6, 0.8]], dtype=np.float32)
    scores, ids = VectorIndex(vecs, chunk=1).search(np.array([[1, 0]], dtype=np.float32), k=3)
    assert ids[0].tolist() == [0, 2, 3] and np.allclose(scores[0], [1, 1, 0.6])
    _, top1 = VectorIndex(vecs).search(np.array([[1, 0], [0, 1]], dtype=np.float32), k=1)
    assert top1[:, 0].tolist() == [0, 1]
    with pytest.raises(ValueError, match="queries must be"):
        VectorIndex(vecs).search(np.zeros((1, 3), dtype=np.float32))


def test_join_accuracy_equals_benchmark_autofj():
    """Accuracy through the join API equals the benchmark's autofj task on the same tables."""
    enc = CharNgramEncoder()
    accs = []
    for table in sorted(p for p in (FIXTURES / "autofj").iterdir() if p.is_dir()):
        left = read_column(table / "left.csv", "title")
        right = read_column(table / "right.csv", "title")
        with open(table / "gt.csv", encoding="utf-8", newline="") as fh:
            gold = {r["title_r"]: r["title_l"] for r in csv.DictReader(fh)}
        matches = fuzzy_join(left, right, enc, k=1, scorer="cosine")
        hits = [m.left_value == gold[m.right_value] for m in matches if m.right_value in gold]
        accs.append(np.mean(hits))
    bench = AutoFJTask().run(enc, FIXTURES)["acc"]
    assert abs(100 * np.mean(accs) - bench) < 1e-3  # the benchmark rounds to 4 decimals


@pytest.mark.parametrize("scorer", ["cosine", "hybrid"])
def test_join_threshold_k_and_one_to_one(scorer):
    enc = CharNgramEncoder()
    left = read_column(TABLE / "left.csv", "title")
    right = read_column(TABLE / "right.csv", "title")
    top3 = fuzzy_join(left, right, enc, k=3, scorer=scorer, threshold=None)
    assert len(top3) == 3 * len(right)
    assert all(a.score >= b.score for a, b in pairwise(top3)
               if a.right_row == b.right_row)
    strict = fuzzy_join(left, right, enc, k=3, threshold=0.99, scorer=scorer)
    assert len(strict) < len(top3) and all(m.score >= 0.99 for m in strict)
    one = fuzzy_join(left, right, enc, k=3, one_to_one=True, scorer=scorer, threshold=None)
    assert len({m.left_row for m in one}) == len(one) == len({m.right_row for m in one})
    with pytest.raises(ValueError, match="k must be"):
        fuzzy_join(left, right, enc, k=0)


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ("id,name\n1,a\n", "no column 'title'"),
        ("id,title\n1,a\n2,\n", "empty 'title' cell"),
        ("id,title\n1,a,extra\n", "3 fields"),
        ('id,title\n1,"unclosed\n', "malformed CSV"),
        ("", "empty file"),
        ("id,title,id\n1,a,2\n", "duplicate column 'id'"),
    ],
)
def test_read_column_errors(tmp_path, content, fragment):
    p = tmp_path / "t.csv"
    p.write_text(content, encoding="utf-8")
    with pytest.raises(JoinError, match=fragment):
        read_column(p, "title")


def test_read_column_skip_empty_and_encoding(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("id,title\n1,a\n2,\n3,c\n", encoding="utf-8")
    assert read_column(p, "title", skip_empty=True) == [(0, "a"), (2, "c")]
    p.write_bytes("id,title\n1,caf\xe9\n".encode("latin-1"))
    with pytest.raises(JoinError, match="UTF-8"):
        read_column(p, "title")


def test_join_cli(tmp_path):
    out = tmp_path / "m.csv"
    args = ["join", str(TABLE / "left.csv"), str(TABLE / "right.csv"), "--left-on", "title",
            "--right-on", "title", "--out", str(out), "--model", "string", "-k", "2", "--quiet"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    rows = list(csv.DictReader(out.open(encoding="utf-8", newline="")))
    assert rows and list(rows[0]) == [*MATCH_COLUMNS, "left_id", "right_id"]
    bad = CliRunner().invoke(app, [*args[:3], "--left-on", "nope", *args[5:]])
    assert bad.exit_code == 2 and "no column 'nope'" in bad.output


def _galaxy_tables(tmp_path: Path) -> tuple[Path, Path]:
    """The Galaxy fixture with extra columns (one named `value`) and a right row that matches
    no left title, plus one with an empty title."""
    left_rows = list(csv.reader((TABLE / "left.csv").open(encoding="utf-8", newline="")))
    right_rows = list(csv.reader((TABLE / "right.csv").open(encoding="utf-8", newline="")))
    left, right = tmp_path / "left.csv", tmp_path / "right.csv"
    with left.open("w", encoding="utf-8", newline="") as fh:
        csv.writer(fh).writerows([["id", "title", "value"]]
                                 + [[i, t, f"L{i}"] for i, t in left_rows[1:]])
    with right.open("w", encoding="utf-8", newline="") as fh:
        csv.writer(fh).writerows([["title", "note"]]
                                 + [[t, f"R{k}"] for k, (_, t) in enumerate(right_rows[1:])]
                                 + [["qqqq xxxx zzzz", "nomatch"], ["", "empty"]])
    return left, right


def test_join_cli_carries_columns_and_how_left(tmp_path):
    """Other columns come along prefixed; `--how left` keeps every right row exactly once."""
    left, right = _galaxy_tables(tmp_path)
    n_right = len((TABLE / "right.csv").read_text(encoding="utf-8").splitlines()) - 1 + 2
    base = ["join", str(left), str(right), "--left-on", "title", "--right-on", "title",
            "--model", "string", "--threshold", "0.3", "--skip-empty", "--quiet"]
    tables = {}
    for how in ("inner", "left"):
        out = tmp_path / f"joined-{how}.csv"
        res = CliRunner().invoke(app, [*base, "--out", str(out), "--how", how])
        assert res.exit_code == 0, res.output
        tables[how] = list(csv.DictReader(out.open(encoding="utf-8", newline="")))
    inner, left_join = tables["inner"], tables["left"]
    assert list(inner[0]) == [*MATCH_COLUMNS, "left_id", "left_value_2", "right_note"]
    by_id = {i: t for i, t in csv.reader((TABLE / "left.csv").open(encoding="utf-8"))}
    for r in inner:
        assert by_id[r["left_id"]] == r["left_value"] and r["left_value_2"] == f"L{r['left_id']}"
        assert r["right_note"] == f"R{r['right_row']}" and float(r["score"]) >= 0.3
    assert "nomatch" not in {r["right_note"] for r in inner}
    assert [r["right_row"] for r in left_join] == [str(i) for i in range(n_right)]
    unmatched = [r for r in left_join if r["score"] == ""]
    assert {r["right_note"] for r in unmatched} >= {"nomatch", "empty"}
    assert all(r["left_row"] == r["left_id"] == r["left_value_2"] == "" for r in unmatched)
    assert len(left_join) == len(inner) + len(unmatched)


def test_join_cli_refuses_duplicate_columns_and_overwriting_an_input(tmp_path):
    left, right = _galaxy_tables(tmp_path)
    base = ["join", str(left), str(right), "--left-on", "title", "--right-on", "title",
            "--model", "string", "--quiet", "--skip-empty"]
    for out in (right, tmp_path / "sub" / ".." / "left.csv"):
        (tmp_path / "sub").mkdir(exist_ok=True)
        res = CliRunner().invoke(app, [*base, "--out", str(out)])
        assert res.exit_code == 2 and "is the input file" in res.output, res.output
    link = tmp_path / "link.csv"
    link.hardlink_to(left)
    res = CliRunner().invoke(app, [*base, "--out", str(link)])
    assert res.exit_code == 2 and "is the input file" in res.output
    assert left.read_text(encoding="utf-8").startswith("id,title,value")  # untouched
    dup = tmp_path / "dup.csv"
    dup.write_text("title,note,note\nAndromeda,a,b\n", encoding="utf-8")
    res = CliRunner().invoke(app, [*base[:2], str(dup), *base[3:], "--out",
                                   str(tmp_path / "m.csv")])
    assert res.exit_code == 2 and f"{dup}: duplicate column 'note'" in res.output
    assert len(res.output.strip().splitlines()) == 1
    for extra, fragment in ((["--how", "outer"], "--how must be one of"),
                            (["--threshold", "0.5", "--no-threshold"], "not both"),
                            (["--index", "ivf"], "index 'ivf' needs at least 1,000 indexed")):
        res = CliRunner().invoke(app, [*base, "--out", str(tmp_path / "m.csv"), *extra])
        assert res.exit_code == 2 and fragment in res.output
        assert not (tmp_path / "m.csv").exists()


def test_join_default_threshold_is_documented_and_applied(tmp_path):
    """The dev-chosen thresholds (hybrid probability; cosine per model) are in --help and used
    unless disabled."""
    from phrasekit.registry import JOIN_MODEL
    from phrasekit.similarity.join import default_threshold

    helptext = " ".join(re.sub("[│╭╮╰╯─]", " ",
                               CliRunner().invoke(app, ["join", "--help"]).output).split())
    cos = DEFAULT_THRESHOLDS[JOIN_MODEL]
    assert f"cosine with {JOIN_MODEL} {cos}" in helptext and "right LEFT JOIN left" in helptext
    base = ["join", str(TABLE / "left.csv"), str(TABLE / "right.csv"), "--left-on", "title",
            "--right-on", "title", "-k", "3", "--quiet"]
    for scorer in ("hybrid", "cosine"):
        value = default_threshold(JOIN_MODEL, scorer)
        counts = {}
        for extra in ([], ["--no-threshold"]):
            out = tmp_path / "m.csv"
            res = CliRunner().invoke(app, [*base, "--out", str(out), "--scorer", scorer, *extra])
            assert res.exit_code == 0, res.output
            scores = [float(r["score"]) for r in csv.DictReader(out.open(encoding="utf-8"))]
            counts[bool(extra)] = len(scores)
            assert extra or (f"threshold {value:g}" in res.output and min(scores) >= value)
        assert counts[True] == 3 * 8 >= counts[False]


# --- ANN index, index factory, persistence -------------------------------------------------


def _fixture_names() -> list[str]:
    """A few hundred distinct real phrases from the eval fixtures (Turney, AutoFJ, YAGO)."""
    names: list[str] = []
    for line in (FIXTURES / "turney2012" / "turney.txt").read_text(encoding="utf-8").splitlines():
        names += [w.strip() for w in line.split("|") if w.strip()]
    for table in sorted(p for p in (FIXTURES / "autofj").iterdir() if p.is_dir()):
        names += [v for _, v in read_column(table / "left.csv", "title")]
    for line in (FIXTURES / "yago_retrieval" / "yago_test_samples.tsv").read_text(
        encoding="utf-8"
    ).splitlines():
        names += line.split("\t")
    return list(dict.fromkeys(n for n in names if n))


@pytest.fixture(scope="module")
def name_vectors() -> tuple[list[str], np.ndarray, np.ndarray]:
    """Fixture names, their char-n-gram vectors and vectors of lower-cased, re-ordered queries."""
    names = _fixture_names()
    enc = CharNgramEncoder()
    queries = [" ".join(reversed(n.lower().split())) + "s" for n in names[::2]]
    return names, enc.encode(names), enc.encode(queries)


def test_ann_recall_against_exact_on_real_names(name_vectors):
    names, vecs, queries = name_vectors
    assert len(names) > 300
    exact = build_index(vecs, kind="exact")
    ann = build_index(vecs, kind="ann", m=16, ef_construction=40, ef_search=32)
    assert isinstance(exact, VectorIndex) and isinstance(ann, ANNIndex)
    _, ei = exact.search(queries, k=5)
    as_, ai = ann.search(queries, k=5, show_progress=False)
    recall = np.mean([len(set(a) & set(e)) / 5 for a, e in zip(ai, ei, strict=True)])
    assert recall >= 0.95
    assert np.all(np.diff(as_, axis=1) <= 1e-6)  # best first
    # HNSW stores the flat vectors: scores are exact cosines of the returned ids
    assert np.allclose(as_, np.einsum("qd,qkd->qk", queries, vecs[ai]), atol=1e-5)
    assert ann.search(queries[:3], k=10_000)[1].shape == (3, len(names))  # k clipped


def test_build_index_auto_kind_and_errors(name_vectors):
    _, vecs, _ = name_vectors
    assert build_index(vecs, kind="auto", ann_threshold=len(vecs) + 1).kind == "exact"
    assert build_index(vecs, kind="auto", ann_threshold=len(vecs)).kind == "ann"
    assert build_index(vecs, kind="auto", ann_threshold=10, n_queries=100).kind == "exact"
    # a one-off search builds the cheaper inverted lists; an index queried often the graph
    assert resolve_kind("auto", 10**6, n_queries=10**6, dim=384) == "ivf"
    assert resolve_kind("auto", 10**6, n_queries=10**6, dim=50) == "ann"  # no 4-d codes
    assert resolve_kind("auto", 10**6, n_queries=10**6, dim=4096) == "ann"  # sparse n-grams
    assert resolve_kind("auto", 10**6, dim=384) == "ann"
    # too few vectors for the codes: auto searches exactly, and ivf asked for is refused
    assert resolve_kind("auto", 999, ann_threshold=10, n_queries=10**6, dim=384) == "exact"
    with pytest.raises(ValueError, match="'ivf' needs at least 1,000 indexed vectors, got"):
        build_index(vecs, kind="ivf")
    assert ANN_THRESHOLD > 1000
    with pytest.raises(ValueError, match="index kind must be one of"):
        build_index(vecs, kind="hnsw")
    with pytest.raises(ValueError, match="queries must be"):
        build_index(vecs, kind="ann").search(np.zeros((1, 3), dtype=np.float32))
    with pytest.raises(ValueError, match="empty"):
        ANNIndex(vecs.shape[1]).search(vecs[:1])


def test_ivf_recall_and_exact_scores_on_real_names(name_vectors):
    """The inverted lists find the exact search's neighbours on real names and return exact
    cosines of the ids they return (the codes only choose the candidates)."""
    _, vecs, queries = name_vectors
    exact = build_index(vecs, kind="exact")
    nlist = ivf_lists(len(vecs))
    assert IVFIndex(vecs.shape[1], nlist=nlist).params() == {
        "nlist": nlist, "nprobe": max(1, nlist // 4), "refine": 100}
    ivf = IVFIndex(vecs.shape[1], nlist=nlist, nprobe=nlist)  # these sparse n-gram vectors
    ivf.add(vecs)  # share few cells with their queries, so every cell is read here
    _, ei = exact.search(queries, k=5)
    s, i = ivf.search(queries, k=5)
    recall = np.mean([len(set(a) & set(e)) / 5 for a, e in zip(i, ei, strict=True)])
    assert recall >= 0.95
    assert np.all(np.diff(s, axis=1) <= 1e-6)
    assert np.allclose(s, np.einsum("qd,qkd->qk", queries, vecs[i]), atol=1e-5)
    assert ivf_lists(1_000_000) == 1024 and ivf_lists(100) == 2 and ivf_lists(5000) == 64
    # half the cells where scanning is cheap, a quarter from 1M vectors, between by cost
    assert [ivf_probes(1024, n) for n in (100_000, 500_000, 800_000, 1_000_000, 10**7)] == [
        512, 512, 320, 256, 256]
    with pytest.raises(ValueError, match="divisible by 8"):
        IVFIndex(50, nlist=4)
    for bad in ({"nprobe": 9}, {"refine": 10**9}):  # as an edited config might ask
        with pytest.raises(ValueError, match="refine <= 10000"):
            IVFIndex(vecs.shape[1], nlist=8, **bad)
    with pytest.raises(ValueError, match="needs at least 64 vectors"):
        IVFIndex(vecs.shape[1], nlist=64).add(vecs[:10])


def test_index_add_continues_ids(name_vectors):
    _, vecs, _ = name_vectors
    for index in (VectorIndex(vecs[:0]), ANNIndex(vecs.shape[1]),
                  IVFIndex(vecs.shape[1], nlist=4, nprobe=4)):
        index.add(vecs[:100])
        index.add(vecs[100:200])
        assert len(index) == 200
        assert index.search(vecs[150:151], k=1)[1][0, 0] == 150
        assert np.allclose(index.reconstruct([3, 150]), vecs[[3, 150]])


@pytest.mark.parametrize("kind", ["exact", "ann", "ivf"])
def test_index_save_load_round_trip(tmp_path, name_vectors, kind):
    _, vecs, queries = name_vectors
    if kind == "ivf":  # fewer fixture names than build_index asks of inverted lists
        index = IVFIndex(vecs.shape[1], nlist=8, nprobe=3)
        index.add(vecs)
    else:
        index = build_index(vecs, kind=kind, ef_search=48)
    index.save(tmp_path / "idx")
    index.save(tmp_path / "idx")  # replacing an earlier save is fine
    assert sorted(p.name for p in tmp_path.iterdir()) == ["idx"]  # no temp folders left
    files = {p.name for p in (tmp_path / "idx").iterdir()}
    assert files == {"index.json", "manifest.json",
                     "vectors.npy" if kind == "exact" else "index.faiss"}
    back = load_index(tmp_path / "idx")
    assert back.kind == kind and back.params() == index.params() and len(back) == len(vecs)
    s1, i1 = index.search(queries, k=3)
    s2, i2 = back.search(queries, k=3)
    assert np.array_equal(i1, i2) and np.allclose(s1, s2)


def test_index_load_and_save_errors(tmp_path, name_vectors):
    _, vecs, _ = name_vectors
    with pytest.raises(FileNotFoundError, match="not found"):
        load_index(tmp_path / "nope")
    with pytest.raises(FileNotFoundError, match=r"no index\.json"):
        load_index(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    (other / "keep.txt").write_text("precious", encoding="utf-8")
    with pytest.raises(ValueError, match="not replacing"):
        VectorIndex(vecs).save(other)
    assert (other / "keep.txt").is_file()
    build_index(vecs[:50], kind="ann").save(tmp_path / "a")
    (tmp_path / "a" / "index.faiss").write_bytes(b"garbage")
    with pytest.raises(ValueError, match=r"index\.faiss: contents differ from manifest"):
        load_index(tmp_path / "a")


def test_faiss_threads_follow_torch():
    import faiss
    import torch

    before_torch, before_faiss = torch.get_num_threads(), faiss.omp_get_max_threads()
    torch.set_num_threads(1)
    try:
        with faiss_threads(None):
            assert faiss.omp_get_max_threads() == 1
        with faiss_threads(2):
            assert faiss.omp_get_max_threads() == 2
    finally:
        torch.set_num_threads(before_torch)
    assert faiss.omp_get_max_threads() == before_faiss


def test_join_ann_matches_exact_on_fixture_tables():
    enc = CharNgramEncoder()
    for table in sorted(p for p in (FIXTURES / "autofj").iterdir() if p.is_dir()):
        left = read_column(table / "left.csv", "title")
        right = read_column(table / "right.csv", "title")
        exact = fuzzy_join(left, right, enc, k=3, index="exact", scorer="cosine")
        ann = fuzzy_join(left, right, enc, k=3, index="ann", scorer="cosine")
        auto = fuzzy_join(left, right, enc, k=3, index="auto", ann_threshold=1,
                          ann_min_queries=1, scorer="cosine")
        assert fuzzy_join(left, right, enc, k=3, index="auto", ann_threshold=1,
                          scorer="cosine") == exact
        key = [(m.right_row, m.rank) for m in exact]  # ties may swap left rows
        scores = [m.score for m in exact]
        for other in (ann, auto):  # faiss and numpy sum in another order: last digit may differ
            assert [(m.right_row, m.rank) for m in other] == key
            assert [m.score for m in other] == pytest.approx(scores, abs=2e-6)
    with pytest.raises(ValueError, match="index kind"):
        fuzzy_join(left, right, enc, index="fast")


def test_join_cli_index_option(tmp_path):
    out = tmp_path / "m.csv"
    args = ["join", str(TABLE / "left.csv"), str(TABLE / "right.csv"), "--left-on", "title",
            "--right-on", "title", "--out", str(out), "--model", "string", "--quiet"]
    res = CliRunner().invoke(app, [*args, "--index", "ann", "--one-to-one"])
    assert res.exit_code == 0, res.output
    rows = list(csv.DictReader(out.open(encoding="utf-8", newline="")))
    assert rows and len({r["left_row"] for r in rows}) == len(rows)
    bad = CliRunner().invoke(app, [*args, "--index", "fast"])
    assert bad.exit_code == 2 and "--index must be one of" in bad.output


def test_join_checks_pairs_k_and_combiner_and_keeps_nul_texts_apart():
    """(row, text) pairs are checked like texts; ``k`` and ``combiner`` are named; a trailing
    NUL is not dropped on the way to the encoder (NumPy's fixed-width strings drop it)."""
    enc = CharNgramEncoder()
    with pytest.raises(ValueError, match=r"left pair 0 \(row 0\): its text is missing"):
        fuzzy_join([(0, None), (1, "boston")], ["boston"], enc)
    with pytest.raises(ValueError, match="left pair 0: its row 'New York' is not an integer"):
        fuzzy_join([("New York", "NY")], ["NY"], enc)
    with pytest.raises(ValueError, match="left pair 1: row 0 is given twice"):
        fuzzy_join([(0, "boston"), (0, "austin")], ["boston"], enc)
    with pytest.raises(TypeError, match="k must be an integer"):
        fuzzy_join(["boston"], ["boston"], enc, k=1.5)
    with pytest.raises(TypeError, match="combiner must be a fitted combiner"):
        fuzzy_join(["boston"], ["boston"], enc, combiner="x")
    with pytest.raises(TypeError, match="left must be a list of texts, got NoneType"):
        fuzzy_join(None, ["boston"], enc)
    found = fuzzy_join(["boston\x00", "boston"], ["boston"], enc, scorer="cosine",
                       threshold=None, k=2)
    assert (found[0].left_value, found[0].score) == ("boston", 1.0)
    assert found[1].left_value == "boston\x00" and found[1].score < 1.0


def test_a_decomposed_accent_matches_its_composed_form():
    """"é" as one character or as "e" and a combining accent is one text to the models and
    the character features: the join scores both forms alike and reports the text given."""
    enc = CharNgramEncoder()
    left = ["Café Réunion", "Cafe Reunion Bar"]
    composed = fuzzy_join(left, ["Café Réunion"], enc, threshold=None, k=2)
    decomposed = fuzzy_join(left, ["Cafe\u0301 Re\u0301union"], enc, threshold=None, k=2)
    assert [(m.left_value, m.score) for m in decomposed] == \
        [(m.left_value, m.score) for m in composed]
    assert decomposed[0].right_value == "Cafe\u0301 Re\u0301union"
    vecs = enc.encode(["é", "e\u0301"])
    assert float(vecs[0] @ vecs[1]) > 0.999
