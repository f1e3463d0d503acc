#!/usr/bin/env bash
# Runs the 2001 paper's fillmem and mmap001 workloads for real at two memory limits: over a
# uswap region with three codecs, and in a memory cgroup swapping to the kernel's zram with
# two codecs; writes the output with the machine's description.
#   bash benches/scripts/uswap-workloads.sh benches/results/<cpu>/<date>-uswap-workloads.txt
# Needs root (userfaultfd, zram, memory cgroups).
set -euo pipefail
out=${1:?output file}
cd "$(dirname "$0")/../.."
cargo build --release -p pagebench
{
    echo "\$ pagebench swap --workload W --ram-mb N --codec C   (W: fillmem, mmap001; N: 16, 64; C: lzo-rle, wkdm, hybrid)"
    echo "\$ pagebench swap --kernel-zram --workload W --ram-mb N --codec K   (K: lzo-rle, lz4)"
    echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs"
    echo "kernel: $(uname -r)"
    echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    for w in fillmem mmap001; do
        for n in 16 64; do
            for c in lzo-rle wkdm hybrid; do
                echo
                "${CARGO_TARGET_DIR:-target}/release/pagebench" swap --workload "$w" --ram-mb "$n" --codec "$c"
            done
            for k in lzo-rle lz4; do
                echo
                "${CARGO_TARGET_DIR:-target}/release/pagebench" swap --kernel-zram --workload "$w" --ram-mb "$n" --codec "$k"
            done
        done
    done
} | tee "$out"
