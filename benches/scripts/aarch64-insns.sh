#!/usr/bin/env bash
# Instructions per page of WKdm (scalar and NEON paths), lzokit's `Lzo1x`, `Lzo1xFast` and
# `LzoRle`, C LZ4 and C liblzo2 (miniLZO, the same code) on aarch64, counted under qemu-user
# by a TCG plugin (benches/aarch64/insn_count.c): the harness (benches/aarch64) runs once
# with 0 and once with ITERATIONS passes over the pages, and the difference, divided by the
# pages processed, is the figure, so loading and setup do not count. These are guest
# instruction counts, not time: they say nothing of latencies, stalls or memory.
#
#   bash benches/scripts/aarch64-insns.sh [ITERATIONS [FILE.pages...]] > insns.txt
#
# Needs the aarch64 cross toolchain (aarch64-linux-gnu-gcc) and qemu-aarch64 with plugin
# support (7.2 here), as installed by .ci/setup. Without files the pages are the real ones
# among wkdm's test vectors (two each of python, node and rustc processes); with files (4096-
# byte pages back to back, e.g. from `pagebench capture`) each file is one row set, of at
# most MAX_PAGES (default 3000) evenly spaced pages.
set -euo pipefail
iterations="${1:-200}"
shift || true
# Page files as given (for the header) and as absolute paths (the script runs from the root).
names=("$@")
files=()
for f in "$@"; do
    [ -f "$f" ] || { echo "aarch64-insns: $f: no such file" >&2; exit 2; }
    files+=("$(realpath "$f")")
done
cd "$(dirname "$0")/../.."
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
export CC_aarch64_unknown_linux_gnu=aarch64-linux-gnu-gcc
export AR_aarch64_unknown_linux_gnu=aarch64-linux-gnu-ar
mkdir -p target/aarch64-insns
plugin=target/aarch64-insns/insn_count.so
cc -O2 -Wall -Wextra -shared -fPIC -o "$plugin" benches/aarch64/insn_count.c
cargo build -q --release --target aarch64-unknown-linux-gnu \
    --manifest-path benches/aarch64/Cargo.toml --target-dir target
harness=target/aarch64-unknown-linux-gnu/release/wkdm-insns

# Prints "PAGES INSNS" for one run.
count() {
    qemu-aarch64 -L /usr/aarch64-linux-gnu -plugin "$plugin" -d plugin "$harness" "$@" 2>&1 |
        awk '/^pages/ { p = $2 } /^insns:/ { n = $2 } END { print p, n }'
}

# Prints instructions per page of one codec, direction and set of pages, and the pages
# processed (WKdm decompresses only the pages it keeps a stream of).
per_page() {
    local codec=$1 direction=$2
    shift 2
    read -r _ base < <(count "$codec" "$direction" 0 "$@")
    read -r pages total < <(count "$codec" "$direction" "$iterations" "$@")
    awk -v b="$base" -v t="$total" -v p="$pages" -v n="$iterations" 'BEGIN { printf "%.0f %d", (t - b) / (n * p), p }'
}

if [ ${#files[@]} -gt 0 ]; then
    export WKDM_INSNS_MAX_PAGES="${MAX_PAGES:-3000}"
fi
echo "# ${WKDM_INSNS_MAX_PAGES:+MAX_PAGES=$WKDM_INSNS_MAX_PAGES }bash benches/scripts/aarch64-insns.sh $iterations${names[*]:+ ${names[*]}}"
echo "# $(qemu-aarch64 --version | head -1), $(aarch64-linux-gnu-gcc --version | head -1), $(rustc --version)"
echo "# commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- wkdm lzo pagecodec benches/aarch64 || echo ' (modified)'), $(date -u +%Y-%m-%d)"
echo "# guest instructions per page (4096 bytes), $iterations passes minus 0 passes; not time"
echo "# columns: instructions per page, and in brackets the pages measured (compress: all;"
echo "# decompress: those with a stream, so WKdm's zero and single-value pages are left out)"
printf '%-10s %-12s %18s %18s\n' pages codec compress decompress
declare -A result
if [ ${#files[@]} -eq 0 ]; then
    sets=(python node rustc all)
else
    sets=("${files[@]}" all)
fi
for set in "${sets[@]}"; do
    if [ ${#files[@]} -eq 0 ]; then
        if [ "$set" = all ]; then
            pages=(wkdm/tests/data/{python,node,rustc}_*.page)
        else
            pages=(wkdm/tests/data/"$set"_*.page)
        fi
        label=$set
    elif [ "$set" = all ]; then
        pages=("${files[@]}")
        label=all
    else
        pages=("$set")
        label=$(basename "$set" .pages)
    fi
    for codec in wkdm-scalar wkdm-neon lz4 lzo lzo-fast lzo-rle liblzo2; do
        read -r c cp <<<"$(per_page "$codec" compress "${pages[@]}")"
        read -r d dp <<<"$(per_page "$codec" decompress "${pages[@]}")"
        result[$set,$codec]="$c $d"
        printf '%-10s %-12s %18s %18s\n' "$label" "$codec" "$c [$cp]" "$d [$dp]"
    done
done
echo
echo "# all pages, as ratios"
read -r sc sd <<<"${result[all,wkdm-scalar]}"
read -r nc nd <<<"${result[all,wkdm-neon]}"
read -r lc ld <<<"${result[all,lz4]}"
read -r zc zd <<<"${result[all,lzo]}"
read -r fc fd <<<"${result[all,lzo-fast]}"
read -r rc rd <<<"${result[all,lzo-rle]}"
read -r oc od <<<"${result[all,liblzo2]}"
awk -v sc="$sc" -v sd="$sd" -v nc="$nc" -v nd="$nd" -v lc="$lc" -v ld="$ld" \
    -v zc="$zc" -v zd="$zd" -v fc="$fc" -v fd="$fd" -v rc="$rc" -v rd="$rd" -v oc="$oc" -v od="$od" 'BEGIN {
    printf "%-28s %8s %10s\n", "", "compress", "decompress"
    printf "%-28s %7.2fx %9.2fx\n", "wkdm-neon / wkdm-scalar", nc / sc, nd / sd
    printf "%-28s %7.2fx %9.2fx\n", "wkdm-neon / C LZ4", nc / lc, nd / ld
    printf "%-28s %7.2fx %9.2fx\n", "wkdm-scalar / C LZ4", sc / lc, sd / ld
    printf "%-28s %7.2fx %9.2fx\n", "lzo / C liblzo2", zc / oc, zd / od
    printf "%-28s %7.2fx %9.2fx\n", "lzo-fast / C liblzo2", fc / oc, fd / od
    printf "%-28s %7.2fx %9.2fx\n", "lzo-rle / C liblzo2", rc / oc, rd / od
    printf "%-28s %7.2fx %9.2fx\n", "lzo / C LZ4", zc / lc, zd / ld
}'
