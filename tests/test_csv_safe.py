"""Issue 63: one formula-safe writer for every CSV/TSV output, stdout included, with the same
--csv-safe/--no-csv-safe option (join, pairs, keyphrases, topics' slice tables)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from typer.testing import CliRunner

from phrasekit.cli import app

FIXTURES = Path(__file__).parent / "fixtures"
FORMULAS = ['=HYPERLINK("x")', "+1", "-2", "@SUM(A1)"]


def invoke(*args: object):
    return CliRunner().invoke(app, [str(a) for a in args])


def test_join_to_stdout_is_formula_safe(tmp_path: Path) -> None:
    table = "id,title\n" + "".join(f'{i},"{v.replace(chr(34), 2 * chr(34))}"\n'
                                   for i, v in enumerate(FORMULAS))
    (tmp_path / "t.csv").write_text(table, encoding="utf-8")
    args = ["join", tmp_path / "t.csv", tmp_path / "t.csv", "--left-on", "title", "--right-on",
            "title", "--out", "-", "-m", "string", "-q"]
    res = invoke(*args)
    assert res.exit_code == 0, res.output
    cells = [c for row in csv.reader(res.output.splitlines()[1:]) for c in row]
    assert not [c for c in cells if c[:1] in "=+-@" and c]
    assert "'+1" in cells and "'-2" in cells
    raw = invoke(*args, "--no-csv-safe")
    assert "+1" in [c for row in csv.reader(raw.output.splitlines()[1:]) for c in row]


def test_topics_per_class_is_formula_safe(small_corpus, tmp_path: Path) -> None:
    corpus = tmp_path / "c.jsonl"
    with corpus.open("w", encoding="utf-8") as fh:
        for i, d in enumerate(small_corpus):
            fh.write(json.dumps({"id": d.id, "text": d.text,
                                 "label": ("=1+1" if i % 2 else "@x")}) + "\n")
    for flag, want in (("--csv-safe", {"'=1+1", "'@x"}), ("--no-csv-safe", {"=1+1", "@x"})):
        out = tmp_path / f"out{flag}"
        res = invoke("topics", corpus, "--out", out, "-m", "glove-50d", "-k", "3", "--min-df",
                     "2", "--class-field", "label", "--no-report", "-q", flag)
        assert res.exit_code == 0, res.output
        with (out / "topics_per_class.csv").open(encoding="utf-8") as fh:
            rows = list(csv.DictReader(fh))
        assert {r["class"] for r in rows} == want
