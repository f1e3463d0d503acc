#!/usr/bin/env bash
# The kernel's zram against pagestore on the same pages, at three scales.
#
#   zram-vs-pagestore.sh [OUTFILE] [-- EXTRA-ZRAM-ARGS...]
#
# Needs root and /sys/class/zram-control. Builds pagebench, lists the zram devices before
# and after (the run hot-adds and removes its own; none may remain), and writes a header
# (command, CPU, kernel, date) and the run's output to OUTFILE (default: stdout).
set -euo pipefail

out=/dev/stdout
if [ $# -gt 0 ] && [ "$1" != "--" ]; then out=$1; shift; fi
[ "${1:-}" = "--" ] && shift

cd "$(dirname "$0")/../.."
cargo build --release -p pagebench >&2
cmd=(target/release/pagebench zram --scale captured,32k,256k "$@")
before=$(ls /sys/block | grep '^zram' || true)
{
    echo "\$ cargo run --release -p pagebench -- zram --scale captured,32k,256k${*:+ $*}"
    echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')," \
        "family $(grep -m1 'cpu family' /proc/cpuinfo | cut -d: -f2 | tr -d ' ')" \
        "model $(grep -m1 '^model[[:space:]]*:' /proc/cpuinfo | cut -d: -f2 | tr -d ' ')"
    echo "kernel: $(uname -r)"
    echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "zram devices before: $(echo $before)"
    "${cmd[@]}" 2>&1
    echo "zram devices after: $(echo $(ls /sys/block | grep '^zram'))"
} >"$out"
after=$(ls /sys/block | grep '^zram' || true)
if [ "$before" != "$after" ]; then
    echo "zram-vs-pagestore: zram devices changed during the run (before: $before; after: $after); another user may have added one, or this run left one" >&2
    exit 1
fi
