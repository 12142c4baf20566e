#!/usr/bin/env bash
# Builds one libFuzzer target (clang, AddressSanitizer + UndefinedBehaviorSanitizer) and runs it.
#   tools/fuzz.sh TARGET SECONDS      TARGET: safetensors | config | utf8 | dataset | all
# The committed seed corpus is tests/fuzz/corpus/TARGET; new inputs go to build-fuzz/corpus/TARGET.
# Exit code 0 when the run ends without a finding; a finding is saved as build-fuzz/crash-* and
# fails the run: turn it into a regression test (tests/test_io.cpp) and fix it.
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:?usage: tools/fuzz.sh TARGET SECONDS (TARGET: safetensors, config, utf8, dataset, all)}
seconds=${2:?usage: tools/fuzz.sh TARGET SECONDS}
if [[ $target == all ]]; then
  for t in safetensors config utf8 dataset; do "$0" "$t" "$seconds"; done
  exit 0
fi
tools/install_deps.sh clang libclang-rt-14-dev

common=(src/core/check.cpp)
extra=()
case $target in
  safetensors) sources=(src/io/safetensors.cpp src/core/atomic_file.cpp src/data/vocab.cpp src/data/utf8.cpp src/model/gpt_config.cpp) ;;
  config) sources=(src/cli/config_loader.cpp src/train/train_config.cpp src/model/gpt_config.cpp src/core/atomic_file.cpp
                  src/data/vocab.cpp src/data/utf8.cpp) ;;
  utf8) sources=(src/data/utf8.cpp src/data/vocab.cpp) ;;
  # Dataset::open links the preparation too; one thread (cmake/no_openmp) is enough to fuzz.
  dataset) sources=(src/data/dataset.cpp src/data/dataset_manifest.cpp src/data/token_file.cpp src/data/prepare.cpp
                    src/data/text_sources.cpp src/data/vocab.cpp src/data/utf8.cpp src/core/atomic_file.cpp src/core/rng.cpp)
           extra=(-Icmake/no_openmp -lspdlog -lfmt) ;;
  *) echo "unknown target $target (safetensors, config, utf8, dataset, all)" >&2; exit 2 ;;
esac
out=build-fuzz
mkdir -p "$out/corpus/$target"
binary=$out/fuzz_$target
clang++ -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -Isrc \
  "tests/fuzz/fuzz_$target.cpp" "${common[@]}" "${sources[@]}" "${extra[@]}" -o "$binary"
echo "fuzzing $target for $seconds s"
"$binary" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$out/crash-$target-" \
  -print_final_stats=0 "$out/corpus/$target" "tests/fuzz/corpus/$target" 2>"$out/fuzz_$target.log" || {
  tail -40 "$out/fuzz_$target.log" >&2
  echo "fuzz target $target found a problem: see $out/crash-$target-*" >&2
  exit 1
}
grep -E "^#[0-9]+.*DONE|Done [0-9]+ runs" "$out/fuzz_$target.log" | tail -1 || true
