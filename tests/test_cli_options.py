"""CLI options generated from config dataclasses: the generator, and the `train` commands on it."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from phrasekit.cli import app, train_options
from phrasekit.cli.options import ConfigOptions, with_config
from phrasekit.training.facets.task import FacetTrainingConfig
from phrasekit.training.pearl.config import PearlTrainingConfig
from phrasekit.training.phrase_bert.task import PhraseBertTrainingConfig
from phrasekit.training.uctopic.task import UCTopicConfig

runner = CliRunner()


@dataclass
class Demo:
    """A config with every kind of field the generator meets."""

    data_dir: str
    steps: int = 10
    rate: float | None = None
    use_x: bool = True
    grid: tuple[float, ...] = (0.5, 1.0)
    name: str = "a"
    folder: Path | None = None
    hidden: int = 3
    notes: dict[str, Any] = field(default_factory=dict)
    either: int | str = 1


DEMO = ConfigOptions(Demo, help={"steps": "Steps.", "use_x": "Use x."}, exclude={"hidden"},
                     rename={"steps": "-n", "use_x": "--ex"})


def build(max_words: int = 5, corpora: Sequence[str] | None = None, flag: bool = False,
          shared: Any = None) -> None:
    """A data builder whose keyword parameters become options."""


def _demo_app(seen: dict[str, Any]) -> typer.Typer:
    demo = typer.Typer()

    @demo.command()
    @with_config(settings=DEMO, more=ConfigOptions(build, help={}))
    def run(out: str = "o", quiet: bool = False, *, settings: dict[str, Any],
            more: dict[str, Any]) -> None:
        seen.update(out=out, settings=settings, more=more)

    return demo


def test_defaults_come_from_the_dataclass_and_unsupported_fields_are_skipped():
    seen: dict[str, Any] = {}
    res = runner.invoke(_demo_app(seen), [])
    assert res.exit_code == 0, res.output
    assert seen["settings"] == {"steps": 10, "rate": None, "use_x": True, "grid": (0.5, 1.0),
                                "name": "a", "folder": None}
    assert seen["more"] == {"max_words": 5, "flag": False}  # Sequence and Any are no options


def test_values_renames_bools_and_comma_separated_tuples():
    seen: dict[str, Any] = {}
    res = runner.invoke(_demo_app(seen), ["-n", "3", "--rate", "0.1", "--no-ex", "--grid", "0,1",
                                          "--folder", "f", "--max-words", "7", "--flag"])
    assert res.exit_code == 0, res.output
    assert seen["settings"] == {"steps": 3, "rate": 0.1, "use_x": False, "grid": (0.0, 1.0),
                                "name": "a", "folder": Path("f")}
    assert seen["more"] == {"max_words": 7, "flag": True}


@pytest.mark.parametrize("args", [["--grid", "0,x"], ["--grid", ","], ["--hidden", "1"],
                                  ["--steps", "1"]])
def test_bad_values_and_excluded_fields_are_usage_errors(args):
    res = runner.invoke(_demo_app({}), args)
    assert res.exit_code == 2


def test_help_shows_the_dataclass_defaults():
    res = runner.invoke(_demo_app({}), ["--help"], env={"COLUMNS": "200"})
    assert res.exit_code == 0
    assert "0.5,1.0" in res.output and "--ex" in res.output and "--no-ex" in res.output
    assert "--quiet" in res.output.split("--max-words")[1]  # generated options come first


def test_a_name_generated_twice_is_refused():
    with pytest.raises(ValueError, match="generated twice"):
        with_config(a=DEMO, b=DEMO)(lambda *, a, b: None)


def test_every_generated_train_option_has_a_help_text():
    specs = [(g.source.__name__, s) for g in train_options.ALL for s in g.specs()]
    assert len(specs) >= 60
    assert [(src, s.name) for src, s in specs if not s.help.strip()] == []


def _capture(monkeypatch, target: str, report: dict[str, Any]) -> list[Any]:
    """Replace the trainer ``target`` (``module.function``; the command imports it when it runs)
    with one that records its config and returns ``report``."""
    seen: list[Any] = []

    def fake(cfg: Any) -> dict[str, Any]:
        seen.append(cfg)
        return report

    monkeypatch.setattr(target, fake)
    return seen


def test_train_pearl_defaults_are_the_config_defaults(monkeypatch, tmp_path):
    seen = _capture(monkeypatch, "phrasekit.training.pearl.task.train_pearl",
                    {"steps": 1, "train_minutes": 0, "alpha": 1, "alpha_proj": 1, "model_mb": 1,
                     "model_dir": "m"})
    args = ["train", "pearl", "--out", tmp_path / "o", "--data", tmp_path, "--shared", tmp_path]
    res = runner.invoke(app, [*map(str, args), "-q"])
    assert res.exit_code == 0, res.output
    expected = PearlTrainingConfig(
        data_dir=str(tmp_path), out_dir=str(tmp_path / "o"),
        wordnet_dir=str(tmp_path / "data" / "wordnet"), dev_data_dir=str(tmp_path / "data"),
        show_progress=False)
    assert seen == [expected]
    res = runner.invoke(app, [*map(str, args), "--no-char-encoder", "--no-type-loss", "--alphas",
                              "0.5,1", "--cliff-guard", "0", "--threads", "2",
                              "--supersense-weight", "0", "-q"])
    assert res.exit_code == 0, res.output
    assert seen[1] == dataclasses.replace(expected, use_char=False, use_type=False,
                                          alphas=(0.5, 1.0), cliff_margin=0.0, num_threads=2,
                                          supersense_weight=0.0, wordnet_dir=None)
    import torch  # --device is checked before the run: a GPU is mocked for this call

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    res = runner.invoke(app, [*map(str, args), "--teachers", "mpnet,minilm", "--distill-weight",
                              "1", "--precision", "bf16", "--device", "cuda", "-q"])
    assert res.exit_code == 0, res.output
    assert seen[2] == dataclasses.replace(expected, teachers=("mpnet", "minilm"),
                                          distill_weight=1.0, precision="bf16",
                                          device="cuda")


def test_train_phrase_bert_defaults_are_the_config_defaults(monkeypatch, tmp_path):
    seen = _capture(monkeypatch, "phrasekit.training.phrase_bert.task.train_phrase_bert",
                    {"seconds_per_step": {}, "steps": 1, "total_steps": 1, "train_minutes": 0,
                     "alpha": 1, "model_mb": 1, "model_dir": "m"})
    args = ["train", "phrase-bert", "--out", str(tmp_path / "o"), "--data", str(tmp_path), "-q"]
    assert runner.invoke(app, args).exit_code == 0
    expected = PhraseBertTrainingConfig(data_dir=str(tmp_path), out_dir=str(tmp_path / "o"),
                                        show_progress=False)
    assert seen == [expected]
    res = runner.invoke(app, [*args, "--repeat-source", "ppdb=2", "--no-context"])
    assert res.exit_code == 0, res.output
    assert seen[1] == dataclasses.replace(expected, use_context=False,
                                          source_repeat={"ppdb": 2})
    res = runner.invoke(app, [*args, "--no-paraphrase", "--repeat-source", "ppdb=2"])
    assert res.exit_code == 2, res.output  # before any data, the options named as flags
    assert "--repeat-source repeats paraphrase sources, and --paraphrase is off" in res.output
    assert len(seen) == 2


@pytest.mark.parametrize(("command", "fn", "config", "extra"), [
    ("facets", "phrasekit.training.facets.task.train_facets", FacetTrainingConfig,
     ["-k", "3", "--minutes", "5"]),
    ("uctopic", "phrasekit.training.uctopic.task.train_uctopic", UCTopicConfig,
     ["--minutes", "5", "--threads", "2"]),
])
def test_train_facets_and_uctopic_options(monkeypatch, tmp_path, command, fn, config, extra):
    (tmp_path / "meta.json").write_text("{}", encoding="utf-8")
    seen = _capture(monkeypatch, fn, {"steps": 1, "epochs": 1, "train_minutes": 0,
                                      "model_dir": "m"})
    args = ["train", command, "--data", str(tmp_path), "--out", str(tmp_path / "o"), "-q"]
    assert runner.invoke(app, args).exit_code == 0
    expected = config(data_dir=str(tmp_path), out_dir=str(tmp_path / "o"), show_progress=False)
    assert seen == [expected]
    assert runner.invoke(app, [*args, *extra]).exit_code == 0
    changed = {"-k": "n_facets", "--minutes": "max_minutes", "--threads": "num_threads"}
    values = {changed[k]: type(getattr(expected, changed[k]))(v)
              for k, v in zip(extra[::2], extra[1::2], strict=True)}
    assert seen[1] == dataclasses.replace(expected, **values)


def test_library_messages_name_the_flags():
    from phrasekit.cli.options import name_flags

    flags = {"hard_negatives": "--hard-negatives", "alpha": "--alpha", "alphas": "--alphas",
             "alpha_proj": "--alpha-proj", "use_char": "--char-encoder"}
    assert name_flags("hard_negatives must be >= 0", flags) == "--hard-negatives must be >= 0"
    # single words only where they are a config's fields; paths and longer words untouched
    text = "alpha and alphas: give one (alpha_proj too; see runs/alpha_proj/x, use_char.)"
    assert name_flags(text, flags) == ("alpha and alphas: give one (--alpha-proj too; see "
                                       "runs/alpha_proj/x, --char-encoder.)")
    assert name_flags(text, flags, {"alpha", "alphas"}).startswith("--alpha and --alphas:")
