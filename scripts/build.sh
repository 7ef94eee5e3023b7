#!/usr/bin/env bash
# Configures and builds precdetect (build/precdetect, torch-free), and where .venv holds the torch wheel
# (scripts/setup.sh --tests) also the CUDA plugin against its libtorch.
#   (no option)   the program alone: what README's first command needs
#   --tests       also the unit tests, and the end-to-end tests registered with ctest (scripts/setup.sh --tests)
#   --sanitized   --tests, and first everything again with clang under AddressSanitizer and UndefinedBehaviorSanitizer,
#                 with the parsers' fuzz targets, in build-sanitized/; ctest in build/ runs that build's tests as
#                 well (sanitized.*, fuzz.*)
# With your own libtorch: cmake -S . -B build -DPRECDETECT_TORCH_DIR=/path/to/libtorch && cmake --build build
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-}
case "$mode" in "" | --tests | --sanitized) ;; *) echo "usage: build.sh [--tests | --sanitized]" >&2; exit 2 ;; esac
tests=OFF
[ -n "$mode" ] && tests=ON
python=()
[ -x .venv/bin/python ] && python=(-DPython_EXECUTABLE="$PWD/.venv/bin/python" -DPRECDETECT_PYTHON="$PWD/.venv/bin/python")
configure() {
  cmake -S . -G Ninja "${python[@]}" -DPRECDETECT_BUILD_TESTS="$tests" "$@" >/dev/null
}
# With the tests, the Release build goes through ccache (scripts/setup.sh --tests installs it), without precompiled
# headers (each build folder compiles its own, so objects made with one are never shared): the package tests build
# the same sources twice more (the wheel, pip's from-source install: tests/e2e/test_package.py, CACHED_BUILD) and
# take their objects from the cache. Paths under the tree are hashed relative to the build folder
# (CCACHE_BASEDIR), so that a clone's build/ matches.
cached=()
if [ "$tests" = ON ]; then
  command -v ccache >/dev/null || { echo "build.sh: $mode builds through ccache: run scripts/setup.sh --tests" >&2; exit 1; }
  cached=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_DISABLE_PRECOMPILE_HEADERS=ON)
  export CCACHE_BASEDIR=$PWD
fi
sanitized_dir=""
if [ "$mode" = "--sanitized" ]; then
  CXX=clang++ configure -B build-sanitized -DCMAKE_BUILD_TYPE=Sanitize
  cmake --build build-sanitized
  sanitized_dir="$PWD/build-sanitized"
fi
configure -B build -DCMAKE_BUILD_TYPE=Release -DPRECDETECT_SANITIZED_DIR="$sanitized_dir" "${cached[@]}"
cmake --build build
