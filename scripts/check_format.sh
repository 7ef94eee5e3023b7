#!/usr/bin/env bash
# The tree's formatting, as CI checks it (ctest's `format` test): every tracked C++ file as clang-format writes it
# (.clang-format), and no source line ending in spaces or file without its final newline. Fix C++ with
#   git ls-files '*.cpp' '*.h' | xargs clang-format -i
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
git ls-files -z '*.cpp' '*.h' | xargs -0 clang-format --dry-run --Werror || status=1
mapfile -d '' sources < <(git ls-files -z '*.cpp' '*.h' '*.py' '*.sh' '*.js' '*.cmake' '*CMakeLists.txt' '.ci/run')
for file in "${sources[@]}"; do
  if grep -nE ' +$' "$file" /dev/null; then status=1; fi
  if [ -s "$file" ] && [ "$(tail -c 1 "$file" | od -An -c | tr -d ' ')" != '\n' ]; then
    echo "$file: no newline at the end"
    status=1
  fi
done
exit $status
