#!/usr/bin/env bash
# The corpus runs of benches/results/<cpu>/<date>-corpus-runs.txt: every codec on the given
# page files, once back to back (warm predictors) and once with --sweep (cold), each output
# preceded by its command line.
#
#   corpus-runs.sh PAGEBENCH CORPUS.pages... [-- EXTRA-ARGS...]
#
# PAGEBENCH is a release pagebench binary (cargo build --release -p pagebench;
# target/release/pagebench). EXTRA-ARGS are added to both commands (e.g. --runs 16).
# Example:
#   benches/scripts/corpus-runs.sh target/release/pagebench python.pages node.pages \
#       > benches/results/<cpu>/$(date -u +%F)-corpus-runs.txt
set -euo pipefail

[ $# -ge 2 ] || { sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
bin=$1
shift
[ -x "$bin" ] || { echo "corpus-runs: $bin is not an executable file" >&2; exit 2; }
corpora=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    [ -f "$1" ] || { echo "corpus-runs: no page file $1" >&2; exit 2; }
    corpora+=("$1")
    shift
done
[ "${1:-}" = "--" ] && shift
extra=("$@")

# The dispatched WKdm path, every other x86_64 path this CPU has, the LZO codecs and the C
# references; CODECS=... replaces the list.
if [ -z "${CODECS:-}" ]; then
    CODECS=wkdm
    # Linux names the flag avx512_vbmi2 (older kernels avx512vbmi2).
    if grep -qwE 'avx512_?vbmi2' /proc/cpuinfo 2>/dev/null; then CODECS+=",wkdm-avx2"; fi
    if grep -qw sse4_1 /proc/cpuinfo 2>/dev/null; then CODECS+=",wkdm-sse4.1"; fi
    CODECS+=",wkdm-scalar,lzo,lzo-rle,liblzo2,lz4"
fi
codecs=$CODECS

for order in "" "--sweep"; do
    # shellcheck disable=SC2206 # an empty $order adds no argument
    cmd=(run --corpus "${corpora[@]}" --codec "$codecs" --max-pages 3000 --reps 5 --quiet $order "${extra[@]}")
    echo "\$ pagebench ${cmd[*]}"
    "$bin" "${cmd[@]}"
    echo
done
