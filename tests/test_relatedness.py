"""Entity relatedness from co-occurring named entities: the pairs, the file, the score, dev
selection and the commands (tiny real news-like documents)."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from phrasekit.eval.relatedness import (
    RELATED_COLUMNS,
    CooccurrencePairs,
    RelatednessScorer,
    content_words,
    read_related,
    related_file,
)
from phrasekit.training.pearl.related import entity_key

#: Entity names per document, as the recogniser finds them in BBC-style news.
DOCS = [["tony blair", "gordon brown", "labour", "london"],
        ["tony blair", "gordon brown", "labour"],
        ["tony blair", "gordon brown", "westminster"],
        ["tony blair", "gordon brown", "labour", "iraq"],
        ["arsenal", "arsene wenger", "london", "chelsea"],
        ["arsenal", "arsene wenger", "chelsea"],
        ["arsenal", "arsene wenger", "highbury"],
        ["arsenal", "arsene wenger", "chelsea", "london"],
        ["microsoft", "bill gates", "windows"],
        ["microsoft", "bill gates", "windows", "london"],
        ["microsoft", "bill gates", "windows"],
        ["microsoft", "bill gates", "iraq"],
        ["iraq", "baghdad", "labour"],
        ["iraq", "westminster", "chelsea"]]


def test_entity_key_normalises_names():
    assert entity_key("The Bank of England's") == "bank of england"
    assert entity_key("  Tony   Blair’s ") == "tony blair"
    assert entity_key("Theresa May") == "theresa may"  # only a leading "the " word goes
    assert content_words("The Bank of England 2005") == {"bank", "england"}


def test_related_pairs_cooccur_and_random_pairs_never_do():
    pairs = CooccurrencePairs(n_related=10, min_docs=4, min_together=3)
    rows = pairs(DOCS)
    related = {(a, b) for a, b, y in rows if y}
    random = {(a, b) for a, b, y in rows if not y}
    assert {("gordon brown", "tony blair"), ("arsenal", "arsene wenger"),
            ("bill gates", "microsoft")} <= related
    together = {(a, b) for doc in DOCS for a in doc for b in doc}
    assert all(pair in together for pair in related)
    assert not any(pair in together or pair[::-1] in together for pair in random)
    assert all(not content_words(a) & content_words(b) for a, b, _ in rows)
    assert len(random) == len(related) == pairs.counts["related"]
    assert pairs(DOCS) == rows  # the same rows every time


#: Related and random pairs of a small file, and the topic each name belongs to.
ROWS = [("tony blair", "gordon brown", 1), ("arsenal", "arsene wenger", 1),
        ("bill gates", "microsoft", 1), ("tony blair", "arsenal", 0),
        ("gordon brown", "microsoft", 0), ("arsene wenger", "bill gates", 0)]
TOPIC = {"tony blair": 0, "gordon brown": 0, "arsenal": 1, "arsene wenger": 1,
         "bill gates": 2, "microsoft": 2}


class _Topics:
    """Encodes a name by its topic: related pairs are identical, random ones are not."""

    name, dim = "topics", 8

    def encode(self, texts, **_):
        v = np.stack([np.random.default_rng(TOPIC[t]).normal(size=self.dim) for t in texts])
        return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def _related(tmp_path: Path, rows: list[tuple[str, str, int]] = ROWS) -> Path:
    path = tmp_path / "related.tsv.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.write("\t".join(RELATED_COLUMNS) + "\n")
        fh.writelines(f"{a}\t{b}\t{y}\tdev\n" for a, b, y in rows)
    return path


def test_scorer_gives_the_auc_of_related_against_random(tmp_path):
    import phrasekit

    path = _related(tmp_path)
    scorer = RelatednessScorer(tmp_path, "dev")  # a data folder works too
    assert scorer(_Topics()) == {"related_dev": 100.0}
    assert 0.0 <= scorer(phrasekit.load("string"))["related_dev"] <= 100.0
    assert "tony blair" in scorer.strings()
    assert related_file(tmp_path / "aliases.tsv.gz") == path  # beside the alias file
    with pytest.raises(ValueError, match="needs related and random pairs"):
        RelatednessScorer(path, "test")
    _related(tmp_path, ROWS[:3])
    with pytest.raises(ValueError, match="needs related and random pairs"):
        RelatednessScorer(path, "dev")


@pytest.mark.parametrize(("line", "message"), [
    ("left\tright\n", "expected the header"),
    ("left\tright\tlabel\tsplit\na\tb\t2\tdev\n", r"related.tsv.gz:2: expected left"),
])
def test_a_malformed_file_names_the_line(tmp_path, line, message):
    path = tmp_path / "related.tsv.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.write(line)
    with pytest.raises(ValueError, match=message):
        read_related(path, "dev")


def test_dev_selection_adds_relatedness_beside_the_aliases(tmp_path, shared_data):
    from test_aliases import _alias_file

    from phrasekit.training.pearl.averaging import dev_scorer
    from phrasekit.training.pearl.config import PearlTrainingConfig

    _alias_file(tmp_path)
    cfg = PearlTrainingConfig(data_dir=str(tmp_path), out_dir=str(tmp_path / "run"))
    assert dev_scorer(cfg, shared_data).related_scorer is None  # no file yet
    _related(tmp_path)
    scorer = dev_scorer(cfg, shared_data)
    assert scorer.related_scorer is not None and "arsene wenger" in scorer.strings()
    off = PearlTrainingConfig(**{**cfg.__dict__, "related_dev": False})
    assert dev_scorer(off, shared_data).related_scorer is None


def test_pearl_data_writes_pairs_from_a_corpus(tmp_path, shared_data):
    from phrasekit.cli import app

    sentences = ["Tony Blair met Gordon Brown in Downing Street on Monday.",
                 "Arsene Wenger said Arsenal would win at Highbury.",
                 "Bill Gates said Microsoft would ship Windows next year."]
    corpus = tmp_path / "news.txt"
    corpus.write_text("\n".join(sentences * 5) + "\n", encoding="utf-8")
    out = tmp_path / "data"
    args = ["train", "pearl-data", "--out", str(out), "--related-corpus", str(corpus),
            "--aliases-only", "--shared", str(shared_data.parent), "--quiet"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == ["related.tsv.gz", "related_report.json"]
    with gzip.open(out / "related.tsv.gz", "rt", encoding="utf-8") as fh:
        rows = [line.rstrip("\n").split("\t") for line in fh][1:]
    related = {tuple(sorted(r[:2])) for r in rows if r[2] == "1"}
    assert ("bill gates", "microsoft") in related
    # every related pair comes from one sentence: names never mentioned together are random
    assert all(any(a in t.lower() and b in t.lower() for t in sentences) for a, b in related)
    assert all(not any(r[0] in t.lower() and r[1] in t.lower() for t in sentences)
               for r in rows if r[2] == "0")
    assert {r[3] for r in rows} <= {"dev", "test"}
    missing = CliRunner().invoke(app, [*args[:5], str(tmp_path / "absent")])
    assert missing.exit_code == 2 and "corpus not found" in missing.output


def test_eval_prints_relatedness_beside_the_aliases(tmp_path):
    from test_aliases import _alias_file

    from phrasekit.cli import app

    _alias_file(tmp_path)
    _related(tmp_path)
    result = CliRunner().invoke(app, ["eval", "-m", "string", "--aliases", str(tmp_path),
                                      "--quiet"])
    assert result.exit_code == 0, result.output
    assert "related_dev |" in result.output.splitlines()[0]
