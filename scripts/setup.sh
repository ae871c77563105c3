#!/usr/bin/env bash
# Create (or reuse) a virtual environment and install phrasekit with everything it needs.
# torch is installed first and pinned (torch==2.13.0, the CPU wheel) so that nothing pulls a
# CUDA build. Re-running is cheap: a stamp of pyproject.toml skips a reinstall when unchanged.
# Settings: PHRASEKIT_VENV (default .venv), PYTHON (default python3), PHRASEKIT_EXTRAS (default
# dev,ray: the test tools and Ray, whose engine the tests check).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${PHRASEKIT_VENV:-.venv}"
PY="${PYTHON:-python3}"
EXTRAS="${PHRASEKIT_EXTRAS:-dev,ray}"

if ! "$PY" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)'; then
  echo "phrasekit needs Python >= 3.11 ($PY is $("$PY" --version 2>&1))" >&2
  exit 2
fi
if [ ! -x "$VENV/bin/python" ]; then
  echo "[setup] creating virtual environment $VENV"
  "$PY" -m venv "$VENV"
fi
stamp="$VENV/.phrasekit-setup-stamp"
want="$(sha256sum pyproject.toml | cut -d' ' -f1) extras=$EXTRAS"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && "$VENV/bin/python" -c 'import phrasekit' 2>/dev/null; then
  echo "[setup] $VENV is up to date"
  exit 0
fi
echo "[setup] installing torch==2.13.0 (CPU) and phrasekit[$EXTRAS] into $VENV"
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet "torch==2.13.0"
"$VENV/bin/python" -m pip install --quiet -e ".[$EXTRAS]"
echo "$want" > "$stamp"
echo "[setup] done"
