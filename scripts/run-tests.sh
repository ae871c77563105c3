#!/usr/bin/env bash
# Set everything up, then lint and run the default test suite (tests needing ../shared are
# skipped with a reason when it is absent; heavy benchmarks live in benchmarks/, not here).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# The report's browser test needs Chromium + chromedriver (Debian packages); install them when
# we can (root with apt-get), otherwise that one test is skipped with the reason.
if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "[tests] installing chromium and chromium-driver for the report's browser test"
    { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
        chromium chromium-driver; } >/dev/null 2>&1 \
      || echo "[tests] could not install chromium; the browser test will be skipped"
  else
    echo "[tests] chromium/chromedriver not found; the browser test will be skipped"
  fi
fi
VENV="${PHRASEKIT_VENV:-.venv}"
"$VENV/bin/ruff" check src tests benchmarks
"$VENV/bin/python" -m pytest -m "not slow" "$@"
