#!/usr/bin/env bash
# Set everything up (phrasekit[dev,ray,bench]), then lint and run the default test suite (tests needing ../shared are
# skipped with a reason when it is absent; heavy benchmarks live in benchmarks/, not here).
#
# Usage: bash scripts/run-tests.sh [--with-browser] [pytest arguments...]
#   --with-browser  also install Debian's chromium and chromium-driver (as root, with apt-get)
#                   so that the report's browser test runs. Without it nothing is installed
#                   outside .venv, and that test is skipped with the reason when they are absent.
# Every other argument goes to pytest unchanged.
set -euo pipefail
cd "$(dirname "$0")/.."
WITH_BROWSER=0
PYTEST_ARGS=()
for arg in "$@"; do
  if [ "$arg" = "--with-browser" ]; then
    WITH_BROWSER=1
  else
    PYTEST_ARGS+=("$arg")
  fi
done
# The tests also run the docs' BERTopic and KeyBERT blocks, so the bench extra comes too.
PHRASEKIT_EXTRAS="${PHRASEKIT_EXTRAS:-dev,ray,bench}" bash scripts/setup.sh
if [ "$WITH_BROWSER" = 1 ] && \
   { ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; }; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "[tests] --with-browser: installing chromium and chromium-driver (apt-get)"
    { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
        chromium chromium-driver; } >/dev/null 2>&1 \
      || echo "[tests] could not install chromium; the browser test will be skipped"
  else
    echo "[tests] --with-browser needs root and apt-get to install chromium; the browser" \
         "test will be skipped"
  fi
fi
VENV="${PHRASEKIT_VENV:-.venv}"
"$VENV/bin/ruff" check src tests benchmarks
"$VENV/bin/python" -m pytest -m "not slow" ${PYTEST_ARGS[@]+"${PYTEST_ARGS[@]}"}
