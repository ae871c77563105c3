"""The package's layers: imports point down only (the import-linter contract in pyproject.toml)."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_layers_contract_is_kept():
    """A module importing from a higher layer (at module top or inside a function) fails."""
    cli = pytest.importorskip("importlinter.cli", reason="import-linter is a dev dependency")
    assert cli.lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True) == 0
