"""The root of the CLI: `--help` lists every command without importing one, `--version`."""

from __future__ import annotations

import json
import subprocess
import sys

import click
import typer
from typer.testing import CliRunner

import phrasekit
from phrasekit.cli import COMMANDS, SHORT_HELP, app


def test_short_help_matches_each_command() -> None:
    group = typer.main.get_command(app)
    ctx = click.Context(group)
    assert list(SHORT_HELP) == list(COMMANDS)
    for name in COMMANDS:
        assert group.get_command(ctx, name).get_short_help_str(limit=300) == SHORT_HELP[name]


def heavy_modules_after_help(*commands: str, also: tuple[str, ...] = ()) -> list[str]:
    """Which of torch, spaCy, scikit-learn (and ``also``) a fresh Python holds after
    printing ``phrasekit COMMAND --help`` for each of ``commands`` ("" is the root; a group's
    help lists its commands, a command's shows its example)."""
    code = ("import json, sys\nfrom typer.testing import CliRunner\n"
            "from phrasekit.cli import app\n"
            f"for name in {commands!r}:\n"
            "    r = CliRunner().invoke(app, [*name.split(), '--help'])\n"
            "    assert r.exit_code == 0 and ('Example' in r.output or 'Commands' in r.output), "
            "r.output\n"
            f"print(json.dumps(sorted(m for m in ('torch', 'spacy', 'sklearn', *{also!r}) "
            "if m in sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout)


def test_root_help_imports_no_command_module() -> None:
    assert heavy_modules_after_help("", also=("phrasekit.cli.topics",)) == []
    result = CliRunner().invoke(app, ["--help"])
    assert "keyphrases" in result.output and "Fuzzy-join" in result.output


#: Commands whose `--help` loads neither torch, spaCy nor scikit-learn.
LIGHT_HELP = ("models", "quantize", "export", "encode", "eval", "neighbors", "pairs", "join",
              "index build", "index query", "phrases", "mentions", "topics", "keyphrases",
              "facets", "topics apply", "topics search")

#: The `train` subcommands: their options come from the training configs, kept apart from the
#: trainers (torch, scikit-learn), which a command imports only when it runs.
TRAIN_HELP = ("pearl-data", "pearl-reaverage", "soup", "pearl", "subtst", "phrase-bert-data",
              "phrase-bert", "facets-data", "facets", "uctopic-data", "uctopic")


def test_light_commands_help_imports_no_heavy_library() -> None:
    assert heavy_modules_after_help(*LIGHT_HELP) == []


def test_train_help_imports_no_heavy_library() -> None:
    root = typer.main.get_command(app)
    group = root.get_command(click.Context(root), "train")
    assert sorted(TRAIN_HELP) == sorted(group.commands)  # every train subcommand is checked
    train = ("train", *(f"train {name}" for name in TRAIN_HELP))
    assert heavy_modules_after_help(*train, also=("transformers",)) == []


def test_version() -> None:
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0 and result.output.strip() == f"phrasekit {phrasekit.__version__}"


def test_output_named_for_another_or_no_known_format_is_refused(tmp_path) -> None:
    phrases = tmp_path / "p.txt"
    phrases.write_text("interest rates\n")
    left, right = tmp_path / "l.csv", tmp_path / "r.csv"
    left.write_text("name\nNew York\n")
    right.write_text("name\nnew york\n")
    runner = CliRunner()
    enc = runner.invoke(app, ["encode", str(phrases), "-m", "string", "-o",
                              str(tmp_path / "q.csv")])
    assert enc.exit_code == 2 and "name the output .npy or .parquet" in enc.output
    join = runner.invoke(app, ["join", str(left), str(right), "--left-on", "name",
                               "--right-on", "name", "-m", "string", "-o",
                               str(tmp_path / "m.npy")])
    assert join.exit_code == 2 and "name the output .csv or" in join.output
    enc = runner.invoke(app, ["encode", str(phrases), "-m", "string", "-o",
                              str(tmp_path / "q.xyz")])  # no format is guessed
    assert enc.exit_code == 2 and "not a .xyz file" in enc.output, enc.output
    kp = runner.invoke(app, ["keyphrases", str(phrases), "-m", "string", "-o",
                             str(tmp_path / "k.xyz")])
    assert kp.exit_code == 2 and "name the output .jsonl or" in kp.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["l.csv", "p.txt", "r.csv"]


def test_usage_errors_are_one_line() -> None:
    """A missing or unknown option or a value of the wrong type: one line naming the command
    and the option, exit code 2 (no usage panel)."""
    runner = CliRunner()
    for args, named in ((["encode", "x.txt"], "Missing option '--out'"),
                        (["encode", "x.txt", "-o", "x.npy", "--batch-size", "abc"],
                         "'--batch-size'"),
                        (["eval", "--task", "x"], "No such option: --task"),
                        (["--nope"], "No such option: --nope"),
                        (["topics", "apply"], "Missing argument")):
        res = runner.invoke(app, args)
        assert res.exit_code == 2, res.output
        assert res.output.count("\n") == 1 and named in res.output, res.output
        assert res.output.startswith("error: phrasekit") and "Usage:" not in res.output


def test_topics_help_is_compact_with_whole_examples_and_the_saved_model_commands() -> None:
    """Issue 68: `topics --help` was about 200 lines, showed flags as <bool> and wrapped its
    examples mid-command; apply and search appeared only in a closing note."""
    result = CliRunner().invoke(app, ["topics", "--help"], env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert len(lines) < 80 and max(map(len, lines)) <= 100
    usage = [line for line in lines[:4] if "topics" in line]
    assert "CORPUS" in usage[0] and " apply DIR CORPUS" in usage[1] and " search DIR" in usage[2]
    for example in ("phrasekit topics sample --out runs/demo",
                    "phrasekit topics corpus.jsonl --method pntm -k 50 --sentences 5 --out "
                    "runs/pntm", 'phrasekit topics search runs/model "interest rates" -k 3'):
        assert f"  {example}" in lines
    assert "<bool>" not in result.output and "--cache/--no-cache" in result.output
    assert any(line.startswith("  --seed N") and "[default: 0]" in line for line in lines)


def test_the_run_summary_gives_one_total() -> None:
    from phrasekit.topics.outputs.markdown import format_timings

    stages = {"encoding": 2.0, "clustering": 1.0}
    assert format_timings(stages).endswith("(total 3.0s)")
    assert "total" not in format_timings(stages, total=False)
