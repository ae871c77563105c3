"""``--json`` run summaries of the commands that write files: counts, seconds and output
paths as JSON on stdout, the usual last line on stderr; refused with ``-o -``."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from phrasekit.cli import app


def _run(args: list[str]) -> dict:
    result = CliRunner().invoke(app, [*args, "--json", "-q"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_encode_and_join_print_a_summary(tmp_path) -> None:
    phrases = tmp_path / "p.txt"
    phrases.write_text("new york\nlos angeles\nparis\n", encoding="utf-8")
    summary = _run(["encode", str(phrases), "-o", str(tmp_path / "v.npy"), "--model",
                    "string"])
    assert summary["command"] == "encode" and summary["texts"] == 3
    assert summary["output"] == str(tmp_path / "v.npy") and summary["seconds"] >= 0
    left, right = tmp_path / "l.csv", tmp_path / "r.csv"
    left.write_text("name\nNew York\nParis\n", encoding="utf-8")
    right.write_text("city\nnew york city\nparis france\nzzz\n", encoding="utf-8")
    summary = _run(["join", str(left), str(right), "--left-on", "name", "--right-on", "city",
                    "-o", str(tmp_path / "m.csv"), "--model", "string", "--no-threshold"])
    assert (summary["left_rows"], summary["right_rows"], summary["matches"]) == (2, 3, 3)
    assert summary["rows_written"] == 3 and summary["output"] == str(tmp_path / "m.csv")


def test_keyphrases_summary_and_stdout_refused(tmp_path) -> None:
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("\n".join(json.dumps({"id": str(i), "text": t}) for i, t in enumerate([
        "Interest rates rose as the central bank fought inflation.",
        "The football club signed a new striker before the transfer deadline."])) + "\n",
                      encoding="utf-8")
    summary = _run(["keyphrases", str(corpus), "-o", str(tmp_path / "k.jsonl"), "-n", "2",
                    "--model", "string", "--no-cache"])
    assert summary["documents"] == 2 and 2 <= summary["keyphrases"] <= 4
    refused = CliRunner().invoke(app, ["keyphrases", str(corpus), "-o", "-", "--json"])
    assert refused.exit_code == 2 and "--json" in refused.output


@pytest.mark.slow
def test_topics_summary(tmp_path) -> None:
    summary = _run(["topics", "sample", "-o", str(tmp_path / "t"), "-k", "3", "--no-report"])
    assert summary["topics"] == 3 and summary["documents"] > 0
    assert set(summary["files"]) >= {"markdown"} and "encoding" in summary["timings"]
