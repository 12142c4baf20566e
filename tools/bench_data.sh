#!/usr/bin/env bash
# Corpora of any size, measured in one run: Tiny Shakespeare repeated to about 1 GB, as one file,
# as a folder of 100 files, and as bytes; `gpt prepare` time and peak memory on 1 and 2 threads
# (the token files must be identical), then `gpt train`'s start-up (to its first step) when it
# prepares the text into its cache, when it reuses the cache, and on a prepared dataset, against
# the 1 MB corpus. Prints a Markdown table.
#   tools/bench_data.sh [OLD_GPT]   OLD_GPT: a gpt binary from before prepared datasets, timed on a
#                                   300 MB corpus (it holds ~16 bytes per byte of text in memory)
#   BENCH_DATA_DIR=dir              scratch folder (default /tmp/gpt_bench_data, ~4 GB)
set -euo pipefail
cd "$(dirname "$0")/.."
old_gpt=${1:-}
tools/install_deps.sh >&2
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)" --target gpt >&2
tools/fetch_shakespeare.sh >&2
gpt=$PWD/build/gpt
shakespeare=$PWD/data/tinyshakespeare.txt
work=${BENCH_DATA_DIR:-/tmp/gpt_bench_data}
mkdir -p "$work"
export XDG_CACHE_HOME=$work/cache

# Corpora: 900 copies (1.00 GB), the same split into 100 files, and 270 copies (301 MB).
repeat() { for ((i = 0; i < $1; i++)); do cat "$shakespeare"; done > "$2"; }
[[ -f $work/1gb.txt ]] || repeat 900 "$work/1gb.txt"
[[ -f $work/300mb.txt ]] || repeat 270 "$work/300mb.txt"
if [[ ! -d $work/folder ]]; then
  mkdir -p "$work/folder" && (cd "$work/folder" && split -n l/100 -d -a 3 "$work/1gb.txt" part_ --additional-suffix=.txt)
fi
mb() { du -sb "$1" | awk '{printf "%.1f", $1 / 1e6}'; }

# measure COMMAND...: "seconds anon_MB file_MB" of one run: wall time, and the peaks of the
# process's private memory (RssAnon) and of the file pages it has mapped (RssFile: the binary and
# its libraries; the corpus is read, not mapped), sampled every 20 ms. The page
# cache is warm: the corpus was just written or read.
measure() {
  local start anon=0 file=0 a f
  start=$(date +%s.%N)
  "$@" > "$work/last.log" 2>&1 &
  local pid=$!
  while kill -0 "$pid" 2> /dev/null; do
    read -r a f < <(awk '/^RssAnon/ {a = $2} /^RssFile/ {f = $2} END {print a + 0, f + 0}' "/proc/$pid/status" 2> /dev/null \
                    || echo "0 0")
    ((a > anon)) && anon=$a
    ((f > file)) && file=$f
    sleep 0.02
  done
  wait "$pid" || { cat "$work/last.log" >&2; exit 1; }
  echo "$(echo "$start" | awk -v end="$(date +%s.%N)" '{printf "%.2f", end - $1}') $((anon / 1024)) $((file / 1024))"
}
row() { printf '| %s | %s | %s s | %s MB | %s MB |\n' "$@"; }

echo "| what | input | time | private memory (peak) | mapped file pages (peak) |"
echo "|---|---|---|---|---|"
for threads in 1 2; do
  read -r s m f < <(measure "$gpt" prepare --data "$work/1gb.txt" --out "$work/prepared_$threads" --threads "$threads" --quiet)
  row "gpt prepare, $threads thread(s)" "1 file, $(mb "$work/1gb.txt") MB" "$s" "$m" "$f"
done
cmp "$work/prepared_1/train.bin" "$work/prepared_2/train.bin"
cmp "$work/prepared_1/val.bin" "$work/prepared_2/val.bin"
read -r s m f < <(measure "$gpt" prepare --data "$work/folder" --out "$work/prepared_folder" --quiet)
row "gpt prepare, 2 threads" "folder of 100 files, $(mb "$work/folder") MB" "$s" "$m" "$f"
read -r s m f < <(measure "$gpt" prepare --data "$work/1gb.txt" --out "$work/prepared_bytes" --vocab bytes --quiet)
row "gpt prepare --vocab bytes, 2 threads" "1 file, $(mb "$work/1gb.txt") MB" "$s" "$m" "$f"

# Start-up: everything before the first training step, with the CPU recipe's model; one
# iteration and one evaluation batch, no checkpoint written. Then 200 iterations: neither memory
# grows with the windows read (they are read into the batch, not mapped).
start=(train --config configs/shakespeare_char_cpu.json --max_iters 1 --eval_iters 1 --eval_interval 1000000
       --out_dir "$work/run")
train_row() {
  local label=$1 input=$2; shift 2
  rm -rf "$work/run"
  read -r s m f < <(measure "$1" "${start[@]}" "${@:2}")
  row "$label" "$input" "$s" "$m" "$f"
}
rm -rf "$work/cache"
train_row "gpt train (1 iteration)" "Tiny Shakespeare, 1.1 MB (prepared into the cache)" "$gpt" --data_path "$shakespeare"
train_row "gpt train (1 iteration)" "Tiny Shakespeare, 1.1 MB (cached)" "$gpt" --data_path "$shakespeare"
train_row "gpt train (1 iteration)" "1 file, 1 GB (prepared into the cache)" "$gpt" --data_path "$work/1gb.txt"
train_row "gpt train (1 iteration)" "1 file, 1 GB (cached)" "$gpt" --data_path "$work/1gb.txt"
train_row "gpt train (1 iteration)" "prepared dataset, 1 GB" "$gpt" --data_path "$work/prepared_2"
train_row "gpt train (1 iteration)" "folder of 100 files, 1 GB (prepared into the cache)" "$gpt" --data_path "$work/folder"
train_row "gpt train (1 iteration)" "folder of 100 files, 1 GB (cached)" "$gpt" --data_path "$work/folder"
start=(train --config configs/shakespeare_char_cpu.json --max_iters 200 --eval_iters 1 --eval_interval 1000000
       --out_dir "$work/run")
train_row "gpt train (200 iterations)" "Tiny Shakespeare, 1.1 MB (cached)" "$gpt" --data_path "$shakespeare"
train_row "gpt train (200 iterations)" "prepared dataset, 1 GB" "$gpt" --data_path "$work/prepared_2"
start=(train --config configs/shakespeare_char_cpu.json --max_iters 1 --eval_iters 1 --eval_interval 1000000
       --out_dir "$work/run")
if [[ -n $old_gpt ]]; then
  train_row "previous gpt (reads the whole text)" "Tiny Shakespeare, 1.1 MB" "$old_gpt" --data_path "$shakespeare"
  train_row "previous gpt (reads the whole text)" "1 file, 301 MB" "$old_gpt" --data_path "$work/300mb.txt"
fi
echo
echo "$(date -u +%Y-%m-%d), $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores"
