#!/usr/bin/env bash
# docs/training.md's table of config keys, between its config-keys markers, is the output of
# tools/config_keys_table.cpp (config_keys() and TrainConfig's defaults), never edited by hand.
#   tools/config_keys_table.sh            rewrite the table in docs/training.md
#   tools/config_keys_table.sh --check    exit 1 with the difference when it is out of date (the
#                                         Docs.ConfigKeysTable test)
# The tool is $GPT_CONFIG_KEYS_TABLE when set (the test's build), else built in ${GPT_BUILD_DIR:-build}.
set -euo pipefail
cd "$(dirname "$0")/.."

doc=docs/training.md
begin='<!-- config-keys:begin -->'
end='<!-- config-keys:end -->'
check=0
case ${1:-} in
  --check) check=1 ;;
  "") ;;
  *) echo "usage: tools/config_keys_table.sh [--check]" >&2; exit 2 ;;
esac

tool=${GPT_CONFIG_KEYS_TABLE:-}
if [[ -z $tool ]]; then
  build_dir=${GPT_BUILD_DIR:-build}
  cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$build_dir" -j "$(nproc)" --target config_keys_table >/dev/null
  tool=$build_dir/config_keys_table
fi

begin_line=$(grep -nxF "$begin" "$doc" | cut -d: -f1 || true)
end_line=$(grep -nxF "$end" "$doc" | cut -d: -f1 || true)
if [[ $(wc -w <<<"$begin_line") != 1 || $(wc -w <<<"$end_line") != 1 || $begin_line -ge $end_line ]]; then
  echo "$doc: expected one line '$begin' followed by one line '$end'" >&2
  exit 1
fi

table=$(mktemp)
expected=$(mktemp)
trap 'rm -f "$table" "$expected"' EXIT
"$tool" >"$table"
{
  head -n "$begin_line" "$doc"
  cat "$table"
  tail -n +"$end_line" "$doc"
} >"$expected"

if ((check)); then
  if ! diff -u --label "$doc" --label "$doc (from config_keys())" "$doc" "$expected"; then
    echo "$doc: the config-key table differs from config_keys() in src/train/train_config.cpp;" \
      "run tools/config_keys_table.sh to rewrite it" >&2
    exit 1
  fi
elif cmp -s "$doc" "$expected"; then
  echo "$doc: the config-key table is up to date"
else
  cp "$expected" "$doc"
  echo "$doc: the config-key table rewritten"
fi
