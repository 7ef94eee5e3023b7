#!/usr/bin/env bash
# clang-tidy (.clang-tidy; the release requirements-tests.txt pins, in .venv) over the sources of the torch-free
# parsers (precdetect_formats: discover, load's format readers, core; and the HDF5 helper program): the code that
# reads untrusted bytes. The whole tree would take longer than CI's budget, since every file that includes libtorch
# parses its headers again (docs/fuzzing.md gives the figures).
# Usage: scripts/check_tidy.sh BUILD_DIR [--all] [--shard I/N]   (a built folder with compile_commands.json)
# On a branch it lints the sources the branch's change touches (scripts/changed_files.sh --branch-only): those
# changed, and those whose compilation includes a changed file (the build's own dependency record, `ninja -t deps`);
# a source the change does not touch cannot gain a finding from it, since it and every file it includes are the
# base's. It lints all of them with --all, with PRECDETECT_FULL_CHECKS=1, when .clang-tidy, this script or the
# pinned release (requirements-tests.txt) changed, where there is no base to compare with, and on main itself (CI's
# clean clone): no commit before main's tip is known to have passed, so CI, the only gate, always lints the whole.
# --shard I/N lints the I-th of N interleaved parts of those sources (I from 0), one clang-tidy at a time: ctest runs
# N such entries (tidy.0 ...), so that the whole pass (CI's, or a change to a header most sources include) is N entries
# each far inside its timeout, which ctest's -j spreads over the cores. Without --shard, one clang-tidy per core.
set -euo pipefail
usage="usage: check_tidy.sh BUILD_DIR [--all] [--shard I/N]"
build=${1:?$usage}
shift
all=0 shard=0 shards=1 jobs=$(nproc)
while (($#)); do
  case $1 in
    --all) all=1 ;;
    --shard) [[ ${2:-} =~ ^([0-9]+)/([1-9][0-9]*)$ ]] && ((BASH_REMATCH[1] < BASH_REMATCH[2])) || {
        echo "$usage" >&2
        exit 2
      }
      shard=${BASH_REMATCH[1]} shards=${BASH_REMATCH[2]} jobs=1
      shift ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
  shift
done
cd "$(dirname "$0")/.."
tidy=$PWD/.venv/bin/clang-tidy
[ -x "$tidy" ] || { echo "check_tidy.sh: no $tidy: run scripts/setup.sh --tests" >&2; exit 1; }
mapfile -t sources < <({ sed -n '/^add_library(precdetect_formats/,/^)/p' src/CMakeLists.txt
  grep '^add_executable(precdetect-hdf5' src/CMakeLists.txt; } | grep -o '[a-z0-9_/]*\.cpp' | sed 's|^|src/|')
mapfile -t changed < <(if ((all)); then echo '*'; else scripts/changed_files.sh --branch-only; fi)
# "built SOURCE" for every object the build made, "touched SOURCE" where it or a file it includes changed: each
# object's dependencies are listed indented, paths absolute as the compile commands give them; its source is the
# first .cpp of the tree among them (clang lists its sanitizer ignore list before it).
touched_sources() {
  (cd "$build" && ninja -t deps) | awk -v root="$PWD/" -v changed="$(printf '%s\n' "${changed[@]}")" '
    function finish() { if (source != "") { print "built", source; if (hit) print "touched", source } }
    BEGIN { n = split(changed, list, "\n"); for (i = 1; i <= n; i++) touched[list[i]] = 1 }
    /^[^ ]/ { finish(); source = ""; hit = 0; next }
    NF { if (index($1, root) != 1) next
         path = substr($1, length(root) + 1)
         if (source == "" && path ~ /\.cpp$/) source = path
         if (path in touched) hit = 1 }
    END { finish() }' | sort -u
}
linted=("${sources[@]}")
if ! printf '%s\n' "${changed[@]}" | grep -qxF -e '*' -e .clang-tidy -e scripts/check_tidy.sh -e requirements-tests.txt; then
  declare -A built=() touched=()
  while read -r kind source; do
    if [ "$kind" = built ]; then built[$source]=1; else touched[$source]=1; fi
  done < <(touched_sources)
  linted=()
  for source in "${sources[@]}"; do  # one the build has no record of (not built yet) is linted too
    if [ -n "${touched[$source]:-}" ] || [ -z "${built[$source]:-}" ]; then linted+=("$source"); fi
  done
  echo "tidy: ${#linted[@]} of ${#sources[@]} sources touched by the change (scripts/changed_files.sh); --all lints all"
fi
part=()
for i in "${!linted[@]}"; do
  if ((i % shards == shard)); then part+=("${linted[i]}"); fi
done
((shards == 1)) || echo "tidy: shard $shard of $shards: ${#part[@]} sources"
((${#part[@]})) || exit 0
# The build's compile commands without its precompiled header: with it, every source's checks walk all the header
# holds (nlohmann/json, fmt), which took a quarter of the time (docs/fuzzing.md); without it, a source must also
# include what it uses. A folder of its own for each run: ctest runs the shards at once.
commands=$(mktemp -d "$build/tidy.XXXXXX")
trap 'rm -rf "$commands"' EXIT
sed -E 's/ -Winvalid-pch -Xclang -include-pch -Xclang [^ ]+ -Xclang -include -Xclang [^ ]+//' \
  "$build/compile_commands.json" > "$commands/compile_commands.json"
printf '%s\n' "${part[@]}" | xargs -P "$jobs" -n 4 "$tidy" -p "$commands" --quiet
