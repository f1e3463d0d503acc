#!/usr/bin/env bash
# Runs the 2001 paper's fillmem and mmap001 workloads for real at two memory limits: over a
# uswap region with four codecs, with readahead (the default, up to 16 pages per fault) and
# without (one page per fault, as the kernel's zram swap), and in a memory cgroup swapping
# to the kernel's zram with two codecs. Each configuration runs REPS times (default 5); the
# table gives the median wall time and the figures of the median run, then the ratio of
# each uswap time to the kernel's with the same codec family (lzo-rle, and lz4-page to lz4;
# wkdm and hybrid to lzo-rle, zram's default).
#   bash benches/scripts/uswap-workloads.sh benches/results/<cpu>/<date>-uswap-workloads.txt
# Needs root (userfaultfd, zram, memory cgroups).
set -euo pipefail
out=${1:?output file}
reps=${REPS:-5}
cd "$(dirname "$0")/../.."
cargo build --release -p pagebench
bin="${CARGO_TARGET_DIR:-target}/release/pagebench"
runs=$(mktemp)
trap 'rm -f "$runs"' EXIT
for w in fillmem mmap001; do
    for n in 16 64; do
        for r in $(seq "$reps"); do
            for c in lzo-rle lz4-page wkdm hybrid; do
                for ra in 16 1; do
                    echo "uswap $w $n $c $ra $("$bin" swap --workload "$w" --ram-mb "$n" --codec "$c" --readahead "$ra" --json | tr -d '\n ')" >>"$runs"
                done
            done
            for k in lzo-rle lz4; do
                echo "kernel $w $n $k 0 $("$bin" swap --kernel-zram --workload "$w" --ram-mb "$n" --codec "$k" --json | tr -d '\n ')" >>"$runs"
            done
        done
        echo "done: $w $n MiB" >&2
    done
done
{
    echo "\$ REPS=$reps bash benches/scripts/uswap-workloads.sh FILE"
    echo "  (pagebench swap --workload W --ram-mb N --codec C --readahead R --json, and"
    echo "   pagebench swap --kernel-zram --workload W --ram-mb N --codec K --json)"
    echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs"
    echo "kernel: $(uname -r)"
    echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    python3 - "$runs" <<'EOF'
import json, statistics, sys
from collections import defaultdict

groups = defaultdict(list)
for line in open(sys.argv[1]):
    runner, w, n, codec, ra, blob = line.split(" ", 5)
    groups[(w, int(n), runner, codec, int(ra))].append(json.loads(blob))

def median_run(runs):
    runs = sorted(runs, key=lambda r: r["seconds"])
    return runs[len(runs) // 2]

print()
print("median of %d runs; swaps and faults of the median run; memory = the store's (uswap) or"
      % len(next(iter(groups.values()))))
print("zram's (kernel) mem_used_total at the end; fault ns = uswap's fault handling, median/p99")
print("(reading the fault to resolving it, eviction included); ratio = wall time / the kernel's")
print()
head = "%-8s %4s  %-6s %-9s %3s %8s %7s %8s %8s %8s %15s %10s %6s" % (
    "workload", "MiB", "runner", "codec", "ra", "seconds", "min-max", "swap-in", "swap-out",
    "faults", "fault ns", "memory", "ratio")
print(head)
print("-" * len(head))
twin = {"lzo-rle": "lzo-rle", "lz4-page": "lz4", "wkdm": "lzo-rle", "hybrid": "lzo-rle"}
for w in ("fillmem", "mmap001"):
    for n in (16, 64):
        kernel = {k[3]: median_run(v)["seconds"] for k, v in groups.items()
                  if k[:3] == (w, n, "kernel")}
        rows = sorted((k for k in groups if k[:2] == (w, n)),
                      key=lambda k: (k[2] != "kernel", k[3], -k[4]))
        for key in rows:
            runs = groups[key]
            r = median_run(runs)
            secs = [x["seconds"] for x in runs]
            spread = "%.2f-%.2f" % (min(secs), max(secs))
            if key[2] == "kernel":
                faults, ns, mem, ratio = "-", "-", r["mm"]["mem_used_total"], ""
            else:
                faults = r["store_faults"] + r["zero_fills"]
                ns = "%d/%d" % (r["fault_ns"][0], r["fault_ns"][1])
                mem = r["mem_used_total"]
                base = kernel.get(twin[key[3]])
                ratio = "%.2fx" % (r["seconds"] / base) if base else "?"
            print("%-8s %4d  %-6s %-9s %3s %8.3f %7s %8d %8d %8s %15s %10d %6s" % (
                w, n, key[2], key[3], key[4] or "-", r["seconds"], spread, r["swap_ins"],
                r["swap_outs"], faults, ns, mem, ratio))
        print()
EOF
} | tee "$out"
