"""Exact vector search and the fuzzy join (API and CLI) on real AutoFJ fixture tables."""

from __future__ import annotations

import csv
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from phrasekit.cli import app
from phrasekit.encoders import CharNgramEncoder
from phrasekit.eval.autofj import AutoFJTask
from phrasekit.similarity import JoinError, VectorIndex, fuzzy_join, read_column

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
        matches = fuzzy_join(left, right, enc, k=1)
        hits = [m.left_value == gold[m.right_value] for m in matches if m.right_value in gold]
        accs.append(np.mean(hits))
    bench = AutoFJTask().run(enc, FIXTURES)["acc"]
    assert abs(100 * np.mean(accs) - bench) < 1e-3  # the benchmark rounds to 4 decimals


def test_join_threshold_k_and_one_to_one():
    enc = CharNgramEncoder()
    left = read_column(TABLE / "left.csv", "title")
    right = read_column(TABLE / "right.csv", "title")
    top3 = fuzzy_join(left, right, enc, k=3)
    assert len(top3) == 3 * len(right)
    assert all(a.score >= b.score for a, b in pairwise(top3)
               if a.right_row == b.right_row)
    strict = fuzzy_join(left, right, enc, k=3, threshold=0.99)
    assert len(strict) < len(top3) and all(m.score >= 0.99 for m in strict)
    one = fuzzy_join(left, right, enc, k=3, one_to_one=True)
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
    assert rows and set(rows[0]) == {"right_row", "right_value", "left_row", "left_value",
                                     "rank", "score"}
    bad = CliRunner().invoke(app, [*args[:3], "--left-on", "nope", *args[5:]])
    assert bad.exit_code == 2 and "no column 'nope'" in bad.output
