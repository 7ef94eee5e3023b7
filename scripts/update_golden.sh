#!/usr/bin/env bash
# Rewrites the golden files (tests/golden/) and README's output block from build/precdetect, after a change to
# what a user reads was intended: review the diff (git diff tests/golden README.md) before committing it.
set -euo pipefail
cd "$(dirname "$0")/../tests/e2e"
PRECDETECT_UPDATE_GOLDEN=1 PRECDETECT_BIN="${PRECDETECT_BIN:-$PWD/../../build/precdetect}" \
  ../../.venv/bin/python -m unittest -q test_golden
git -C ../.. diff --stat -- tests/golden README.md
