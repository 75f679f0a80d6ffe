#!/bin/bash
# Fails when a C++ file of the repository (git ls-files *.cc *.h) differs from what clang-format
# makes of it with the repository's .clang-format; prints the files. Fix: clang-format -i FILE.
# Usage: check-format.sh [clang-format binary]
set -u
cf=${1:-clang-format}
root=$(cd "$(dirname "$0")/.." && pwd)
if ! command -v "$cf" > /dev/null; then
  echo "check-format: $cf not found (scripts/install-deps.sh installs clang-format)" >&2
  exit 1
fi
cd "$root" || exit 1
if ! files=$(git ls-files '*.cc' '*.h'); then
  echo "check-format: not a git checkout: $root" >&2
  exit 1
fi
bad=$(printf '%s\n' "$files" | xargs -P 2 -n 16 "$cf" --dry-run -Werror 2>&1 |
      sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error:.*clang-format.*/\1/p' | sort -u)
n=$(printf '%s\n' "$files" | wc -l)
if [ -n "$bad" ]; then
  echo "check-format: not clang-formatted (clang-format -i FILE):"
  printf '  %s\n' $bad
  exit 1
fi
echo "check-format: $n files clang-formatted"
