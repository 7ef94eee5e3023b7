#!/usr/bin/env bash
# Configures and builds precdetect (build/precdetect) against the libtorch of .venv's torch wheel, and, where
# clang's libFuzzer is installed, the parsers' fuzz targets (build-fuzz/, run by the test suite).
# With your own libtorch: cmake -S . -B build -DCMAKE_PREFIX_PATH=/path/to/libtorch && cmake --build build
set -euo pipefail
cd "$(dirname "$0")/.."
fuzz_dir=""
if command -v clang++ >/dev/null && clang++ -fsanitize=fuzzer -x c++ - -o /dev/null <<<'
    #include <cstdint>
    #include <cstddef>
    extern "C" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }' 2>/dev/null; then
  CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPRECDETECT_FUZZ=ON >/dev/null
  cmake --build build-fuzz
  fuzz_dir="$PWD/build-fuzz/tests/fuzz"
fi
torch_prefix=$(.venv/bin/python -c 'import torch; print(torch.utils.cmake_prefix_path)')
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$torch_prefix" \
  -DPRECDETECT_PYTHON="$PWD/.venv/bin/python" -DPRECDETECT_FUZZ_DIR="$fuzz_dir" >/dev/null
cmake --build build
