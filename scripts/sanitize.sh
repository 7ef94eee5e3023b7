#!/usr/bin/env bash
# The whole test suite under AddressSanitizer and UndefinedBehaviorSanitizer: a second build of precdetect and
# its tests (build-asan/, GCC, against .venv's libtorch), then ctest on it. Run after scripts/setup.sh.
# CI runs the parsers' unit tests and fuzz targets sanitized on every run (build-fuzz/, scripts/build.sh); this
# whole-suite build took 24 min on the 2-core dev VM (docs/fuzzing.md), too long for every CI run.
set -euo pipefail
cd "$(dirname "$0")/.."
torch_prefix=$(.venv/bin/python -c 'import torch; print(torch.utils.cmake_prefix_path)')
# vptr is off: libtorch's classes cross library boundaries without the type information UBSan's check needs.
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_PREFIX_PATH="$torch_prefix" \
  -DPRECDETECT_PYTHON="$PWD/.venv/bin/python" \
  -DCMAKE_CXX_FLAGS="-fsanitize=address,undefined -fno-sanitize=vptr -fno-sanitize-recover=undefined -fno-omit-frame-pointer" \
  >/dev/null
cmake --build build-asan
# LeakSanitizer stays on with no suppressions: libtorch leaks nothing it reports. UB is fatal by the flags above.
export UBSAN_OPTIONS="print_stacktrace=1:${UBSAN_OPTIONS:-}"
ctest --test-dir build-asan -j2 --output-on-failure "$@"
