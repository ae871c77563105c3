"""Real aliases from DBpedia redirects: parsing, leakage filter, kinds, splits, the alias score,
the alias training term and the commands (a handful of real redirect lines)."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from phrasekit.eval.aliases import AliasScorer, read_alias_split, sample_queries
from phrasekit.training.data.leakage import BenchmarkStringFilter
from phrasekit.training.pearl.redirects import (
    ALIAS_FILE,
    alias_kind,
    check_redirects,
    filter_redirects,
    read_redirects,
    split_of,
    write_aliases,
)

#: Real lines of the redirects file (DBpedia, CC BY-SA 3.0), plus two made-up faults.
REDIRECTS = """alias\tcanonical\tn_tokens
miata\tmazda mx-5\t1
mariner8\tmariner 8\t1
michael david rann\tmike rann\t3
cultc\tcambridge university lawn tennis club\t1
zeroconf\tzero configuration networking\t1
john jarvey\tjohn alfred jarvey\t2
heiferman\tscott heiferman\t1
aperture sight\tpeep sight\t2
the bairns\tfalkirk f.c.\t2
whufc\twest ham united f.c.\t1
angola/geography\tgeography of angola\t1
strong anthropic principle\tanthropic principle\t3
happiness...\thappiness... is not a fish that you can catch\t1
egg-nog\teggnog\t1
Egg-Nog\teggnog\t1
evo devo\tevolutionary developmental biology\t2
momordica charantia\tbitter melon\t2
gold chalocogenides\tgold chalcogenides\t2
"""


def _redirects(tmp_path: Path, text: str = REDIRECTS) -> Path:
    path = tmp_path / "redirects.tsv.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.write(text)
    return path


def _filter() -> BenchmarkStringFilter:
    # "Mike Rann" stands for a benchmark title (AutoFJ is built from DBpedia too)
    return BenchmarkStringFilter({"autofj/*/right.csv": {"mike rann"}, "bird/bird.tsv": set()})


def test_read_redirects_names_the_bad_line(tmp_path):
    rows = list(read_redirects(_redirects(tmp_path)))
    assert rows[0] == ("miata", "mazda mx-5") and len(rows) == 18
    bad = _redirects(tmp_path, "alias\tcanonical\tn_tokens\nmiata\tmazda mx-5\t1\nonly-one\n")
    with pytest.raises(ValueError, match=r"redirects.tsv.gz:3: expected alias<TAB>canonical"):
        list(read_redirects(bad))
    with pytest.raises(ValueError, match=r":1: expected the header"):
        list(read_redirects(_redirects(tmp_path, "miata\tmazda mx-5\t1\n")))
    latin1 = tmp_path / "latin1.tsv"
    latin1.write_bytes("alias\tcanonical\tn_tokens\nmi\xe4ta\tmazda\t1\n".encode("latin-1"))
    with pytest.raises(ValueError, match=r"latin1\.tsv: not UTF-8 text"):
        list(read_redirects(latin1))
    with pytest.raises(IsADirectoryError, match="is a folder, not a redirects file"):
        check_redirects(tmp_path)


@pytest.mark.parametrize(("alias", "canonical", "kind"), [
    ("mariner8", "mariner 8", "surface"),
    ("egg-nog", "eggnog", "surface"),
    ("gold chalocogenides", "gold chalcogenides", "surface"),
    ("alexander quarels holladay", "alexander q. holladay", "surface"),
    ("john jarvey", "john alfred jarvey", "partial"),
    ("heiferman", "scott heiferman", "partial"),
    ("cultc", "cambridge university lawn tennis club", "abbreviation"),
    ("zeroconf", "zero configuration networking", "abbreviation"),
    ("miata", "mazda mx-5", "different"),
    ("the bairns", "falkirk f.c.", "different"),
    ("momordica charantia", "bitter melon", "different"),
])
def test_alias_kinds(alias, canonical, kind):
    assert alias_kind(alias, canonical) == kind


def test_filter_drops_benchmark_strings_and_loose_redirects():
    filt = _filter()
    pairs, report = filter_redirects(read_redirects_list(), filt)
    kept = {(p.alias, p.canonical) for p in pairs}
    steps = report["steps"]
    assert ("michael david rann", "mike rann") not in kept
    assert steps["dropped_benchmark_string"] == 1
    assert filt.removed_pairs["autofj/*/right.csv"] == 1
    assert steps["dropped_loose_subpage"] == 1  # angola/geography
    assert steps["dropped_loose_subtopic"] == 1  # strong anthropic principle
    assert steps["dropped_loose_long_canonical"] == 1
    assert steps["dropped_duplicate"] == 1  # Egg-Nog is egg-nog once normalised
    assert ("miata", "mazda mx-5") in kept and report["pairs"] == len(pairs) == 13
    assert sum(sum(k.values()) for k in report["pairs_per_split_and_kind"].values()) == 13


def read_redirects_list() -> list[tuple[str, str]]:
    lines = REDIRECTS.strip().split("\n")[1:]
    return [tuple(line.split("\t")[:2]) for line in lines]  # type: ignore[misc]


def test_splits_are_by_canonical_deterministic_and_disjoint():
    rows = [(f"{a} {i}", f"{c} {i}") for i in range(60) for a, c in read_redirects_list()[:4]]
    rows += [("alt mazda", "mazda mx-5 3")]  # a second alias of one canonical
    pairs, report = filter_redirects(rows, _filter())
    splits: dict[str, set[str]] = {}
    for p in pairs:
        splits.setdefault(p.canonical, set()).add(p.split)
        assert p.split == split_of(p.canonical)
    assert all(len(s) == 1 for s in splits.values())  # no canonical in two splits
    assert {p.split for p in pairs} == {"train", "dev", "test"}
    train_strings = {s for p in pairs if p.split == "train" for s in (p.alias, p.canonical)}
    assert not any(p.alias in train_strings for p in pairs if p.split != "train")
    again, _ = filter_redirects(rows, _filter())
    assert again == pairs
    assert sum(report["canonicals"].values()) == len(splits)


def _alias_file(tmp_path: Path, split: str = "dev") -> Path:
    pairs, _ = filter_redirects(read_redirects_list(), _filter())
    path = tmp_path / ALIAS_FILE
    write_aliases(path, [type(p)(p.alias, p.canonical, p.kind, split) for p in pairs])
    return path


class _Oracle:
    """Encodes an alias like its canonical: every retrieval is right (``name`` for the table)."""

    name, dim = "oracle", 8

    def __init__(self, mapping: dict[str, str]) -> None:
        self.mapping = mapping

    def encode(self, texts, **_):
        out = []
        for t in texts:
            rng = np.random.default_rng(abs(hash(self.mapping.get(t, t))) % 2**32)
            out.append(rng.normal(size=self.dim))
        v = np.asarray(out, dtype=np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_alias_scorer_per_kind_and_mean(tmp_path):
    path = _alias_file(tmp_path)
    rows = read_alias_split(path, "dev")
    queries = sample_queries(rows, per_kind=2)
    assert all(len(v) <= 2 for v in queries.values())
    assert all(len({c for _, c in v}) == len(v) for v in queries.values())  # one per canonical
    scorer = AliasScorer(tmp_path, "dev", per_kind=50)  # a data folder works too
    scores = scorer(_Oracle({a: c for a, c, _ in rows}))
    assert scores == {"alias_dev_abbreviation": 100.0, "alias_dev_different": 100.0,
                      "alias_dev_partial": 100.0, "alias_dev_surface": 100.0, "alias_dev": 100.0}
    import phrasekit

    string = scorer(phrasekit.load("string"))
    assert string["alias_dev_surface"] == 100.0  # spelling variants: character n-grams suffice
    assert string["alias_dev_different"] < 100.0  # 'miata' shares no n-gram with 'mazda mx-5'
    with pytest.raises(ValueError, match="no pair in the 'test' split"):
        AliasScorer(path, "test")
    blank = tmp_path / "blank.tsv"  # an empty alias was named only as "texts[0]"
    blank.write_text("alias\tcanonical\tkind\tsplit\nnyc\tnew york\tpartial\tdev\n"
                     " \tmiata\tdifferent\tdev\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"blank\.tsv:3: empty alias field"):
        read_alias_split(blank, "dev")


def test_alias_term_trains_and_is_recorded(tmp_path):
    from test_pearl import _NO_WORDNET, _tiny_dataset

    from phrasekit.training.pearl.config import PearlTrainingConfig
    from phrasekit.training.pearl.task import train_pearl

    _tiny_dataset(tmp_path / "data")
    _alias_file(tmp_path / "data", split="train")
    cfg = PearlTrainingConfig(data_dir=str(tmp_path / "data"), out_dir=str(tmp_path / "run"),
                              batch_size=6, max_steps=2, checkpoint_every=2, alpha=0.5,
                              max_seq_length=12, show_progress=False, alias_weight=0.5,
                              alias_batch=4, **_NO_WORDNET)
    report = train_pearl(cfg)
    assert report["history"][-1]["alias"] > 0
    assert report["settings"]["alias_weight"] == 0.5
    with pytest.raises(ValueError, match=r"alias_file .*no not found"):
        train_pearl(PearlTrainingConfig(**{**cfg.__dict__, "alias_file": str(tmp_path / "no")}))
    with pytest.raises(ValueError, match="alias_weight needs"):  # the data folder has none
        train_pearl(PearlTrainingConfig(**{**cfg.__dict__, "data_dir": str(tmp_path / "run"),
                                           "alias_file": None}))


def test_pearl_data_writes_the_alias_file(tmp_path, shared_data):
    from phrasekit.cli import app

    out = tmp_path / "data"
    result = CliRunner().invoke(app, ["train", "pearl-data", "--out", str(out), "--redirects",
                                      str(_redirects(tmp_path)), "--aliases-only",
                                      "--shared", str(shared_data.parent), "--quiet"])
    assert result.exit_code == 0, result.output
    assert "aliases ->" in result.output
    assert sorted(p.name for p in out.iterdir()) == ["aliases.tsv.gz", "aliases_report.json"]
    with gzip.open(out / ALIAS_FILE, "rt", encoding="utf-8") as fh:
        header = fh.readline()
    assert header == "alias\tcanonical\tkind\tsplit\n"
    result = CliRunner().invoke(app, ["train", "pearl-data", "--out", str(out),
                                      "--aliases-only"])
    assert result.exit_code == 2 and "--aliases-only needs --redirects" in result.output


def test_eval_scores_aliases(tmp_path):
    from phrasekit.cli import app

    _alias_file(tmp_path)
    result = CliRunner().invoke(app, ["eval", "-m", "string", "--aliases", str(tmp_path),
                                      "--quiet"])
    assert result.exit_code == 0, result.output
    assert "| string | " in result.output and "alias_dev" in result.output
    result = CliRunner().invoke(app, ["eval", "-m", "string", "--aliases", str(tmp_path / "x")])
    assert result.exit_code == 2


def test_dev_selection_scores_aliases_when_the_data_folder_has_them(tmp_path, shared_data):
    from phrasekit.training.pearl.averaging import dev_scorer
    from phrasekit.training.pearl.config import PearlTrainingConfig

    _alias_file(tmp_path)
    cfg = PearlTrainingConfig(data_dir=str(tmp_path), out_dir=str(tmp_path / "run"))
    scorer = dev_scorer(cfg, shared_data)
    assert scorer.alias_scorer is not None
    assert "mazda mx-5" in scorer.strings()  # dev strings, for leakage checks
    assert dev_scorer(PearlTrainingConfig(**{**cfg.__dict__, "alias_dev": False}),
                      shared_data).alias_scorer is None
    assert dev_scorer(PearlTrainingConfig(data_dir=str(tmp_path / "none"), out_dir="x"),
                      shared_data).alias_scorer is None


def test_alias_table_cells_stay_cells():
    """A kind holding '|' split the Markdown header into extra columns."""
    from phrasekit.eval.aliases import format_alias_table

    table = format_alias_table([("m\nodel|x", {"alias_dev_abbr|x": 50.0, "alias_dev": 50.0})],
                               "dev")
    header, _, row = table.splitlines()
    assert header.count(" | ") == row.count(" | ") == 2 and r"abbr\|x" in header
