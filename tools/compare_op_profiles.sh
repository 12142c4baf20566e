#!/usr/bin/env bash
# Two builds' op profiles side by side: runs OLD and NEW profile_ops binaries (tools/profile_ops.sh
# builds one at build/profile_ops) in interleaved rounds with the same arguments, and prints each
# row's median forward and forward + backward ms with the old / new speed-up. For a kernel change:
# build the old commit elsewhere (cmake --build OLD_BUILD --target profile_ops) and compare.
#   tools/compare_op_profiles.sh OLD_PROFILE_OPS NEW_PROFILE_OPS ROUNDS [big] [bfloat16] [REPS] [WORD]
set -euo pipefail
old=$1 new=$2 rounds=$3
shift 3
runs=$(mktemp -d)
trap 'rm -rf "$runs"' EXIT
for round in $(seq "$rounds"); do
  "$old" "$@" >"$runs/old.$round"
  "$new" "$@" >"$runs/new.$round"
done
echo "date: $(date -u "+%F %H:%M") UTC, machine: $(lscpu | sed -n "s/^Model name: *//p"), $(nproc --all) cores, $(head -1 "$runs/new.1" | cut -d, -f1);" \
  "profile_ops $*, medians of $rounds interleaved rounds"
/usr/bin/python3 - "$runs" "$rounds" <<'PY'
import re, statistics, sys
folder, rounds = sys.argv[1], int(sys.argv[2])
def rows(which):
    table = {}
    for r in range(1, rounds + 1):
        for line in open(f"{folder}/{which}.{r}").read().splitlines()[2:]:
            m = re.match(r"(.*?)\s+([0-9.]+)(?:\s+([0-9.]+))?$", line)
            if m:
                table.setdefault(m[1], []).append([float(v) for v in m.groups()[1:] if v])
    return {name: [statistics.median(col) for col in zip(*vals)] for name, vals in table.items()}
old, new = rows("old"), rows("new")
print("\n| op | old fwd ms | new fwd ms | old fwd+bwd ms | new fwd+bwd ms | speed-up (fwd+bwd) |")
print("| --- | --- | --- | --- | --- | --- |")
for name, o in old.items():
    n = new[name]
    both = f"{o[1]:.2f} | {n[1]:.2f} | {o[1] / n[1]:.2f}x" if len(o) > 1 else f" | | {o[0] / n[0]:.2f}x (fwd)"
    print(f"| {name} | {o[0]:.2f} | {n[0]:.2f} | {both} |")
PY
