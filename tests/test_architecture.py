"""The house rules that keep the package readable: layers, file and function sizes."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 80


def test_layers_contract_is_kept():
    """A module importing from a higher layer (at module top or inside a function) fails.

    import-linter runs in its own process: its logging set-up disables every existing logger,
    which would silence the log assertions of later tests.
    """
    pytest.importorskip("importlinter", reason="import-linter is a dev dependency")
    code = ("import sys; from importlinter.cli import lint_imports; "
            "sys.exit(lint_imports(config_filename=sys.argv[1], no_cache=True))")
    done = subprocess.run([sys.executable, "-c", code, str(ROOT / "pyproject.toml")],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


def _python_files() -> list[Path]:
    return sorted((ROOT / "src" / "phrasekit").rglob("*.py"))


def test_files_and_functions_fit_on_a_screen():
    """No module over 600 lines and no function over 80: the house's size limits."""
    long_files, long_funcs = [], []
    for path in _python_files():
        text = path.read_text(encoding="utf-8")
        rel = path.relative_to(ROOT)
        if text.count("\n") > MAX_FILE_LINES:
            long_files.append(f"{rel}: {text.count(chr(10))} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    long_funcs.append(f"{rel}:{node.lineno} {node.name}: {length} lines")
    assert not long_files, long_files
    assert not long_funcs, long_funcs


def test_quick_commands_do_not_import_torch_or_scikit_learn():
    """`import phrasekit`, `phrasekit models` and the `neighbors` command's module start in well
    under a second: torch and scikit-learn are imported only by what uses them."""
    probe = ("import sys, phrasekit, phrasekit.cli, phrasekit.cli.match, phrasekit.cli.models\n"
             "phrasekit.available_models()\n"
             "print(sorted({'torch', 'sklearn', 'transformers'} & set(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, timeout=120)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_the_root_command_table_lists_every_command():
    import typer
    from typer.core import TyperGroup

    from phrasekit.cli import COMMANDS, app

    root = typer.main.get_command(app)
    assert isinstance(root, TyperGroup)
    for name in COMMANDS:  # each name resolves to the command (or group) of that name
        command = root.get_command(None, name)
        assert command is not None and command.name == name
    assert list(root.list_commands(None)) == list(COMMANDS)
