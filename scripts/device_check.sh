#!/usr/bin/env bash
# Builds, tests and benchmarks precdetect on a GPU machine that reaches no package registry (the project's lent
# H100: Ubuntu 24.04, python3 with torch 2.11.0+cu130, CUDA 13.0). Fetch what it lacks first, on a machine that
# has the network: scripts/device_check.sh --fetch (Debian's .debs of the C++ dependencies and the Python test
# tools' wheels, into .deps/). Then, there: scripts/device_check.sh [--no-tests | --tests REGEX] [benchmark.py
# arguments...] (--tests: only the ctest entries matching REGEX; that machine lacks some reference writers the
# end-to-end tests need). Prints the test results and the benchmark tables; writes them under $OUT when it is set.
# Without libhdf5-dev there (Ubuntu's image has none), the build has no HDF5 helper: .h5 files are its named error.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = "--fetch" ]; then
  mkdir -p .deps/wheels && cd .deps
  apt-get download libcli11-dev nlohmann-json3-dev libfmt-dev libfmt9 libgtest-dev libgmock-dev libsqlite3-dev \
    libsqlite3-0 libssl-dev libssl3 libzstd-dev libzstd1 libbz2-dev liblzma-dev libcurl4-openssl-dev libcurl4
  # The HTML report's script is bundled at build time from node-vega and the d3 modules it imports.
  apt-get download esbuild node-vega node-d3-array node-d3-collection node-d3-color node-d3-dsv node-d3-format \
    node-d3-geo node-d3-interpolate node-d3-path node-d3-scale node-d3-shape node-d3-time node-d3-time-format \
    node-d3-timer
  python3 -m pip download -q --only-binary=:all: --python-version 3.12 --platform manylinux_2_28_x86_64 \
    --platform manylinux_2_17_x86_64 -d wheels "safetensors==0.8.*" "numpy>=2,<3"
  exit 0
fi

tests=1 only=""
if [ "${1:-}" = "--no-tests" ]; then tests=0 && shift; fi
if [ "${1:-}" = "--tests" ]; then only=$2 && shift 2; fi
out="${OUT:-/tmp/precdetect-device}"
mkdir -p "$out" /tmp/deps /tmp/pylib
for deb in .deps/*.deb; do dpkg -x "$deb" /tmp/deps; done
python3 -c 'import safetensors, numpy' 2>/dev/null ||
  python3 -m pip install -q --no-index --find-links .deps/wheels --target /tmp/pylib safetensors numpy
export PYTHONPATH=/tmp/pylib${PYTHONPATH:+:$PYTHONPATH}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"

hdf5=ON
[ -d /usr/include/hdf5 ] || hdf5=OFF
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=/tmp/deps/usr -DPRECDETECT_BUILD_TESTS=ON \
  -DPRECDETECT_HDF5_HELPER=$hdf5 \
  -DPython_EXECUTABLE="$(command -v python3)" -DPRECDETECT_PYTHON="$(command -v python3)" >"$out/configure.log"
cmake --build build -j "$(nproc)" >"$out/build.log"
if ((tests)); then
  ctest --test-dir build -j 8 --timeout 300 --output-on-failure ${only:+-R "$only"} >"$out/ctest.log" 2>&1 || true
  grep -E "tests passed|Skipped|Failed|\(Failed\)" "$out/ctest.log"
fi
python3 scripts/benchmark.py "$@" | tee "$out/benchmark.md"
