#!/usr/bin/env bash
# Configures and builds precdetect (build/precdetect) against the libtorch of .venv's torch wheel.
# --sanitized (the test command) first builds everything again with clang under AddressSanitizer and
# UndefinedBehaviorSanitizer, with the parsers' fuzz targets, in build-sanitized/; ctest in build/ then runs
# that build's tests as well (sanitized.*, fuzz.*).
# With your own libtorch: cmake -S . -B build -DCMAKE_PREFIX_PATH=/path/to/libtorch && cmake --build build
set -euo pipefail
cd "$(dirname "$0")/.."
torch_prefix=$(.venv/bin/python -c 'import torch; print(torch.utils.cmake_prefix_path)')
configure() {
  cmake -S . -G Ninja -DCMAKE_PREFIX_PATH="$torch_prefix" -DPRECDETECT_PYTHON="$PWD/.venv/bin/python" "$@" >/dev/null
}
sanitized_dir=""
if [ "${1:-}" = "--sanitized" ]; then
  CXX=clang++ configure -B build-sanitized -DCMAKE_BUILD_TYPE=Sanitize
  cmake --build build-sanitized
  sanitized_dir="$PWD/build-sanitized"
fi
configure -B build -DCMAKE_BUILD_TYPE=Release -DPRECDETECT_SANITIZED_DIR="$sanitized_dir"
cmake --build build
