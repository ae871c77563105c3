"""scripts/run-tests.sh: installs nothing system-wide unless asked (`--with-browser`), and hands
every other argument to pytest unchanged. Run in a copy of the script with stub tools."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _stub(path: Path, body: str) -> None:
    path.write_text(f"#!/bin/sh\n{body}\n", encoding="utf-8")
    path.chmod(0o755)


def _run(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess, Path]:
    """Run a copy of run-tests.sh whose setup, ruff, pytest and apt-get only log their calls;
    PATH holds no chromium, so the browser tools count as missing."""
    repo, bin_dir, log = tmp_path / "repo", tmp_path / "bin", tmp_path / "calls.log"
    (repo / "scripts").mkdir(parents=True)
    (repo / ".venv" / "bin").mkdir(parents=True)
    bin_dir.mkdir()
    shutil.copy(ROOT / "scripts" / "run-tests.sh", repo / "scripts" / "run-tests.sh")
    _stub(repo / "scripts" / "setup.sh", f'echo "setup" >> "{log}"')
    _stub(repo / ".venv" / "bin" / "ruff", f'echo "ruff $*" >> "{log}"')
    _stub(repo / ".venv" / "bin" / "python",
          f'for a in "$@"; do printf "[%s]" "$a" >> "{log}"; done; echo >> "{log}"')
    _stub(bin_dir / "apt-get", f'echo "apt-get $*" >> "{log}"')
    for tool in ("bash", "dirname", "id"):
        found = shutil.which(tool)
        if found is None:
            pytest.skip(f"{tool} not found")
        (bin_dir / tool).symlink_to(found)
    env = {k: v for k, v in os.environ.items() if k != "PHRASEKIT_VENV"}
    env["PATH"] = str(bin_dir)
    proc = subprocess.run([shutil.which("bash") or "bash", str(repo / "scripts" / "run-tests.sh"),
                           *args], capture_output=True, text=True, env=env, timeout=60)
    return proc, log


def test_default_run_installs_nothing_and_passes_arguments(tmp_path: Path) -> None:
    proc, log = _run(tmp_path, "-x", "-k", "join and not ann")
    assert proc.returncode == 0, proc.stderr
    calls = log.read_text(encoding="utf-8").splitlines()
    assert not any(c.startswith("apt-get") for c in calls), calls
    assert calls[0] == "setup" and calls[1].startswith("ruff check")
    assert calls[-1] == "[-m][pytest][-m][not slow][-x][-k][join and not ann]"


def test_with_browser_installs_and_is_not_passed_to_pytest(tmp_path: Path) -> None:
    proc, log = _run(tmp_path, "-q", "--with-browser", "tests/test_report.py")
    assert proc.returncode == 0, proc.stderr
    calls = log.read_text(encoding="utf-8").splitlines()
    if os.getuid() == 0:
        assert any(c.startswith("apt-get install") and "chromium-driver" in c for c in calls)
    else:
        assert "needs root" in proc.stdout
    assert calls[-1] == "[-m][pytest][-m][not slow][-q][tests/test_report.py]"
