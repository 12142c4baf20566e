#!/usr/bin/env bash
# Every config key has a test that fails when the key's effect is removed: tests/config_key_tests.txt
# names, for each key of docs/training.md's table (generated from config_keys() and checked by
# Docs.ConfigKeysTable), the tests that pin it, and each named test must be one ctest knows. A new
# key without such a test, or a renamed test, fails this check, naming it.
#   tests/config_key_tests.sh BUILD_DIR mpi|no_mpi   (no_mpi: the build has no Distributed tests)
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=$1 mpi=$2
map=tests/config_key_tests.txt
keys=$(grep -oE '^\| `[a-z_0-9]+` \|' docs/training.md | tr -d '|` ')
known_tests=$(cd "$build_dir" && ctest -N | sed -nE 's/^ *Test +#[0-9]+: ([^ ]+)$/\1/p')
[[ -n $keys && -n $known_tests ]] || { echo "FAIL: no keys or no tests found" >&2; exit 1; }
failures=0
for key in $keys; do
  line=$(grep -E "^$key:" "$map" | sed 's/#.*//') || true
  tests=${line#*:}
  if [[ -z $line || -z ${tests// /} ]]; then
    echo "FAIL: config key '$key' has no test in $map that fails when its effect is removed" >&2
    failures=$((failures + 1))
    continue
  fi
  for t in $tests; do
    grep -qxF "$t" <<<"$known_tests" && continue
    [[ $mpi == no_mpi && $t == Distributed.* ]] && continue
    echo "FAIL: $map names '$t' for '$key', which is no test" >&2
    failures=$((failures + 1))
  done
done
for listed in $(sed -nE 's/^([a-z_0-9]+):.*/\1/p' "$map"); do
  grep -qxF "$listed" <<<"$keys" || { echo "FAIL: $map lists '$listed', which is no config key" >&2; failures=$((failures + 1)); }
done
((failures == 0)) || exit 1
echo "every one of the $(wc -w <<<"$keys") config keys has a test of its effect"
