#!/usr/bin/python3
"""Two builds of a benchmark program side by side: runs OLD and NEW (same arguments) in interleaved
rounds, so that a shared machine's drift hits both alike, and prints Markdown of the medians.
  compare_builds.py ops  OLD_PROFILE_OPS NEW_PROFILE_OPS ROUNDS [profile_ops arguments]
  compare_builds.py gemm OLD_GEMM_BENCH  NEW_GEMM_BENCH  ROUNDS
ops: each op's forward and forward + backward ms (tools/profile_ops.cpp's table); gemm: each
shape's float32 and bfloat16 GFLOP/s (tools/gemm_bench.cpp's JSON lines)."""
import datetime
import json
import os
import re
import statistics
import subprocess
import sys


def op_rows(output):
    rows = {}
    for line in output.splitlines()[2:]:
        m = re.match(r"(.*?)\s+([0-9.]+)(?:\s+([0-9.]+))?$", line)
        if m:
            rows[m[1]] = [float(v) for v in m.groups()[1:] if v]
    return rows


def gemm_rows(output):
    rows = {}
    for line in output.splitlines():
        d = json.loads(line)
        name = " ".join(d["shape"].split()[:3]) + f" {d['M']} x {d['N']} x {d['K']}"
        rows[name] = [d["ours_gflops"], d["bf16_gflops"]]
    return rows


def medians(runs):
    return {name: [statistics.median(col) for col in zip(*(run[name] for run in runs))] for name in runs[0]}


def print_ops(old, new):
    print("| op | old fwd ms | new fwd ms | old fwd+bwd ms | new fwd+bwd ms | speed-up (fwd+bwd) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, o in old.items():
        n = new[name]
        both = f"{o[1]:.2f} | {n[1]:.2f} | {o[1] / n[1]:.2f}x" if len(o) > 1 else f" | | {o[0] / n[0]:.2f}x (fwd)"
        print(f"| {name} | {o[0]:.2f} | {n[0]:.2f} | {both} |")


def print_gemm(old, new):
    print("| shape (M x N x K) | float32 old | float32 new | new / old | bfloat16 old | bfloat16 new | new / old |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, o in old.items():
        n = new[name]
        print(f"| {name} | {o[0]:.0f} | {n[0]:.0f} | {n[0] / o[0]:.2f}x | {o[1]:.0f} | {n[1]:.0f} | {n[1] / o[1]:.2f}x |")


def main():
    kind, old, new, rounds, args = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5:]
    parse, table = {"ops": (op_rows, print_ops), "gemm": (gemm_rows, print_gemm)}[kind]
    os.environ.setdefault("OPENBLAS_NUM_THREADS", str(os.cpu_count()))
    runs = {old: [], new: []}
    for _ in range(rounds):
        for program in (old, new):
            runs[program].append(parse(subprocess.run([program, *args], check=True, capture_output=True,
                                                      text=True).stdout))
    cpu = re.search(r"Model name:\s*(.*)", subprocess.run(["lscpu"], capture_output=True, text=True).stdout)
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M")
    print(f"date: {when} UTC, machine: {cpu[1] if cpu else 'unknown CPU'}, {os.cpu_count()} cores; "
          f"{' '.join([os.path.basename(new), *args])}, medians of {rounds} interleaved rounds\n")
    table(medians(runs[old]), medians(runs[new]))


main()
