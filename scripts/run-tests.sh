#!/usr/bin/env bash
# Set everything up, then lint and run the default test suite (tests needing ../shared are
# skipped with a reason when it is absent; heavy benchmarks live in benchmarks/, not here).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
VENV="${PHRASEKIT_VENV:-.venv}"
"$VENV/bin/ruff" check src tests benchmarks
"$VENV/bin/python" -m pytest -m "not slow" "$@"
