#!/usr/bin/env bash
# Set everything up, then run the main job: phrase topics on the bundled sample corpus
# (1,863 CC0 arXiv abstracts) with the bundled default model. Output: runs/demo/topics.{md,json}.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
VENV="${PHRASEKIT_VENV:-.venv}"
"$VENV/bin/phrasekit" topics sample --out "${1:-runs/demo}"
