#!/usr/bin/env bash
# The whole test suite under AddressSanitizer and UndefinedBehaviorSanitizer: a second build of precdetect and
# its tests (build-asan/, GCC, against .venv's libtorch), then ctest on it. Run after scripts/setup.sh.
# CI runs the parsers' unit tests and fuzz targets sanitized on every run (build-fuzz/, scripts/build.sh); this
# whole-suite build takes about half an hour on 2 cores (docs/fuzzing.md), too long for every CI run.
set -euo pipefail
cd "$(dirname "$0")/.."
torch_prefix=$(.venv/bin/python -c 'import torch; print(torch.utils.cmake_prefix_path)')
# vptr is off: libtorch's classes cross library boundaries without the type information UBSan's check needs.
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_PREFIX_PATH="$torch_prefix" \
  -DPRECDETECT_PYTHON="$PWD/.venv/bin/python" \
  -DCMAKE_CXX_FLAGS="-fsanitize=address,undefined -fno-sanitize=vptr -fno-sanitize-recover=undefined -fno-omit-frame-pointer" \
  >/dev/null
cmake --build build-asan
export ASAN_OPTIONS="abort_on_error=0:detect_odr_violation=0:${ASAN_OPTIONS:-}"
export LSAN_OPTIONS="suppressions=$PWD/tests/sanitizers/lsan.supp:print_suppressions=0:${LSAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
ctest --test-dir build-asan -j2 --output-on-failure "$@"
