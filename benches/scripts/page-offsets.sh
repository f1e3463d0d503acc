#!/usr/bin/env bash
# How a decoder's time moves with where the output page lies modulo 4 KiB: one pagebench run
# per page offset (--page-offset), every other argument passed on, then per corpus and codec
# the median decode ticks and the "vs lz4" ratio at each offset.
#
#   page-offsets.sh PAGEBENCH STEP -- RUN-ARGS...
#
# STEP (a multiple of 64) spaces the offsets 0, STEP, 2 STEP, ... below 4096. Example:
#   benches/scripts/page-offsets.sh target/release/pagebench 256 -- \
#       --corpus dom.pages sqlite.pages --codec wkdm-avx2,lz4 --max-pages 1000 --quiet
set -euo pipefail

usage() { sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
[ $# -ge 3 ] || usage
bin=$1 step=$2
shift 2
[ "${1:-}" = "--" ] || usage
shift
[ -x "$bin" ] || { echo "page-offsets: $bin is not an executable file" >&2; exit 2; }
case $step in ''|*[!0-9]*) echo "page-offsets: STEP must be a number" >&2; exit 2 ;; esac
[ "$step" -gt 0 ] && [ $((step % 64)) -eq 0 ] || { echo "page-offsets: STEP must be a positive multiple of 64" >&2; exit 2; }

echo "\$ pagebench run $* --page-offset OFFSET   (OFFSET = 0, $step, ... < 4096)"
echo "offset corpus codec dec-median-ticks vs-lz4"
for offset in $(seq 0 "$step" 4095); do
    # Rows of a table: "== CORPUS: N pages ==" starts a corpus; a codec's decode row is
    # "     dec | min median mean p99 max | ns MB/s | VS_LZ4 VS_LIBLZO2" after its "comp" row.
    "$bin" run "$@" --page-offset "$offset" 2>&1 | awk -v off="$offset" '
        /^== .*: [0-9]+ pages ==$/ { corpus = $2; sub(":", "", corpus); next }
        $2 == "comp" && $3 == "|" { codec = $1; next }
        $1 == "dec" && $2 == "|" && corpus != "" { print off, corpus, codec, $4, $(NF - 1) }'
done
