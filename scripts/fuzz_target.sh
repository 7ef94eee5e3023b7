#!/usr/bin/env bash
# Runs one libFuzzer target of the Sanitize build (ctest `fuzz.*`): every seed of tests/fuzz/seeds/TARGET and every
# input the fuzzer kept in WORK/corpus first, whatever the change, then fuzzing for a time that depends on the change
# (scripts/changed_files.sh). The targets the change touches share 120 s, each between 5 and 20 s (20 s each for up
# to 6 of them); the others fuzz for 3 s. A target is touched when the change holds its fuzz source, its seeds, a file
# its compilation read (the build's dependency record, `ninja -t deps`), or a source in the folder of a header it read
# (include/precdetect/load/gguf/gguf.h: src/load/gguf/); every target is, when the change is everything (no base to
# compare with, PRECDETECT_FULL_CHECKS=1).
# Usage: scripts/fuzz_target.sh SANITIZED_BUILD TARGET WORK
set -euo pipefail
usage="usage: fuzz_target.sh SANITIZED_BUILD TARGET WORK"
build=${1:?$usage} target=${2:?$usage} work=${3:?$usage}
cd "$(dirname "$0")/.."
mapfile -t targets < <(sed -n '/PRECDETECT_FUZZ_TARGETS/,/)/p' tests/fuzz/targets.cmake |
  sed 's/.*PRECDETECT_FUZZ_TARGETS//; s/)//' | tr ' ' '\n' | grep .)
objects=()
for name in "${targets[@]}"; do objects+=("tests/fuzz/CMakeFiles/fuzz_$name.dir/${name}_fuzz.cpp.o"); done

# The touched targets, one a line. `ninja -t deps` lists each object's dependencies indented below it, paths absolute.
touched_targets() {
  (cd "$build" && ninja -t deps "${objects[@]}") | awk -v root="$PWD/" -v changed="$(scripts/changed_files.sh)" '
    function folder_of(path) { sub(/\/[^\/]*$/, "", path); return path }
    function finish(   file) {
      if (name == "") return
      if (everything || ("tests/fuzz/seeds/" name) in changed_folders) hit = 1
      for (file in changed_files)
        if (file ~ /^src\/.*\.cpp$/ && folder_of(file) in header_sources) hit = 1
      if (hit) print name
    }
    BEGIN {
      n = split(changed, list, "\n")
      for (i = 1; i <= n; i++) {
        changed_files[list[i]] = 1
        changed_folders[folder_of(list[i])] = 1
        if (list[i] == "*") everything = 1
      }
    }
    /^[^ ]/ {  # an object: tests/fuzz/CMakeFiles/fuzz_NAME.dir/NAME_fuzz.cpp.o: #deps ...
      finish()
      name = $1
      sub(/^tests\/fuzz\/CMakeFiles\/fuzz_/, "", name)
      sub(/\.dir\/.*/, "", name)
      hit = 0
      split("", header_sources)
      next
    }
    NF && index($1, root) == 1 {  # a file of the tree it read
      path = substr($1, length(root) + 1)
      if (path in changed_files) hit = 1
      if (path ~ /^include\/precdetect\/.*\.h$/) header_sources["src/" folder_of(substr(path, 20))] = 1
    }
    END { finish() }'
}

mapfile -t touched < <(touched_targets)
seconds=3
if printf '%s\n' "${touched[@]}" | grep -qxF "$target"; then
  seconds=$((120 / ${#touched[@]}))
  seconds=$((seconds < 5 ? 5 : seconds > 20 ? 20 : seconds))
fi
echo "fuzz: $target for $seconds s after its seeds (${#touched[@]} of ${#targets[@]} targets touched by the change)"
mkdir -p "$work/corpus"
exec "$build/tests/fuzz/fuzz_$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
  -artifact_prefix="$work/" "$work/corpus" "tests/fuzz/seeds/$target"
