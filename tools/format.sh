#!/usr/bin/env bash
# Formats every C++ source file with the repository's .clang-format, or checks that it is.
#   tools/format.sh            rewrite files in place
#   tools/format.sh --check    list unformatted files and exit 1 if there are any
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.cpp' '*.h')
if [[ ${1:-} == --check ]]; then
  clang-format --dry-run --Werror "${files[@]}"
else
  clang-format -i "${files[@]}"
fi
