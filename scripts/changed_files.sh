#!/usr/bin/env bash
# The files a change touches, one path a line (relative to the tree), for the checks that spend their time where the
# change is (ctest's `tidy.*`: docs/benchmarks.md, "CI time"). The change is the work tree against its base:
#   PRECDETECT_CHANGE_BASE   a commit, when set;
#   else the merge base with main (origin/main, else main): a branch's whole change, committed or not;
#   else, where HEAD is that base (main itself, as CI tests it), HEAD's first parent: the last commit, or the branch
#   that HEAD's merge brought in; with --branch-only, everything instead.
# Prints `*` (everything) when there is no base to compare with (no git, a shallow clone) or PRECDETECT_FULL_CHECKS=1:
# each check then runs whole. --branch-only is for a check whose narrowing holds only against a base known to pass
# it (`tidy`: a source the change does not touch keeps the base's findings): main's tip passed CI, but its first
# parent was never tested alone, so on main itself the check runs whole.
# Usage: scripts/changed_files.sh [--branch-only]
set -euo pipefail
branch_only=0
case "${1:-}" in
  "") ;;
  --branch-only) branch_only=1 ;;
  *) echo "usage: changed_files.sh [--branch-only]" >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.."
everything() {
  echo '*'
  exit 0
}
[ "${PRECDETECT_FULL_CHECKS:-0}" = 1 ] && everything
git rev-parse -q --verify HEAD >/dev/null 2>&1 || everything
base=${PRECDETECT_CHANGE_BASE:-}
if [ -z "$base" ]; then
  for ref in origin/main main; do
    if git rev-parse -q --verify "$ref^{commit}" >/dev/null; then
      base=$(git merge-base HEAD "$ref") || base=""
      break
    fi
  done
  if [ -z "$base" ] || [ "$base" = "$(git rev-parse HEAD)" ]; then
    ((branch_only)) && everything
    base=$(git rev-parse -q --verify 'HEAD^1^{commit}') || everything
  fi
fi
git diff --name-only --no-renames "$base" --
git ls-files --others --exclude-standard
