#!/usr/bin/env bash
# clang-tidy (.clang-tidy) over the sources of the torch-free parsers (precdetect_formats: discover, load's format
# readers, core; and the HDF5 helper program): the code that reads untrusted bytes. The whole tree would take longer
# than CI's budget, since every file that includes libtorch parses its headers again (docs/fuzzing.md gives the figures).
# Usage: scripts/check_tidy.sh BUILD_DIR (a configured build folder with compile_commands.json).
set -euo pipefail
build=${1:?usage: check_tidy.sh BUILD_DIR}
cd "$(dirname "$0")/.."
mapfile -t sources < <({ sed -n '/^add_library(precdetect_formats/,/^)/p' src/CMakeLists.txt
  grep '^add_executable(precdetect-hdf5' src/CMakeLists.txt; } | grep -o '[a-z0-9_/]*\.cpp' | sed 's|^|src/|')
# The build's compile commands without its precompiled header: with it, every source's checks walk all the header
# holds (nlohmann/json, fmt), which took a quarter of the time (docs/fuzzing.md); without it, a source must also
# include what it uses.
mkdir -p "$build/tidy"
sed -E 's/ -Winvalid-pch -Xclang -include-pch -Xclang [^ ]+ -Xclang -include -Xclang [^ ]+//' \
  "$build/compile_commands.json" > "$build/tidy/compile_commands.json"
printf '%s\n' "${sources[@]}" | xargs -P "$(nproc)" -n 4 clang-tidy -p "$build/tidy" --quiet
