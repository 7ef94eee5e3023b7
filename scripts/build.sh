#!/usr/bin/env bash
# Configures and builds precdetect (build/precdetect) against the libtorch of .venv's torch wheel.
# With your own libtorch: cmake -S . -B build -DCMAKE_PREFIX_PATH=/path/to/libtorch && cmake --build build
set -euo pipefail
cd "$(dirname "$0")/.."
torch_prefix=$(.venv/bin/python -c 'import torch; print(torch.utils.cmake_prefix_path)')
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$torch_prefix" \
  -DPRECDETECT_PYTHON="$PWD/.venv/bin/python" >/dev/null
cmake --build build
