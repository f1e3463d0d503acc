#!/usr/bin/env bash
# A/B comparison of two pagebench binaries, run alternately.
#
#   ab-alternate.sh BIN_A BIN_B ROUNDS [-o OUTDIR] -- RUN-ARGS...
#
# Each round runs `BIN_A run RUN-ARGS...`, then `BIN_B run RUN-ARGS...` (so slow and quiet
# phases of a shared machine fall on both), and keeps every output in OUTDIR (default: a new
# directory under ${TMPDIR:-/tmp}): the log and tables as a-N.txt / b-N.txt, pagebench's JSON
# report beside each as a-N.json / b-N.json. At the end it prints, per corpus, codec and
# direction, the median over all of a binary's runs of the codec's median ticks over C
# liblzo2's and over C LZ4's in the same run, A beside B (`ab-ticks.py --all`, which reads
# those reports; needs python3).
#
# Example (the LZO targets; four rounds of two runs each, eight runs per binary):
#   benches/scripts/ab-alternate.sh ./pagebench-before ./pagebench-after 4 -- \
#       --corpus python.pages node.pages --codec lzo,liblzo2,lz4 \
#       --max-pages 0 --reps 5 --quiet --runs 2
set -euo pipefail

usage() { sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
[ $# -ge 4 ] || usage
bin_a=$1 bin_b=$2 rounds=$3
shift 3
outdir=""
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    case $1 in
        -o) outdir=$2; shift 2 ;;
        *) usage ;;
    esac
done
[ "${1:-}" = "--" ] || usage
shift
for b in "$bin_a" "$bin_b"; do
    [ -x "$b" ] || { echo "ab-alternate: $b is not an executable file" >&2; exit 2; }
done
case $rounds in ''|*[!0-9]*) echo "ab-alternate: ROUNDS must be a number" >&2; exit 2 ;; esac
[ -n "$outdir" ] || outdir=$(mktemp -d "${TMPDIR:-/tmp}/ab-alternate.XXXXXX")
mkdir -p "$outdir"

for r in $(seq 1 "$rounds"); do
    for side in a b; do
        if [ $side = a ]; then bin=$bin_a; else bin=$bin_b; fi
        out="$outdir/$side-$r.txt"
        echo "round $r/$rounds: $side ($bin) -> $out" >&2
        # The tables (stderr with --json) in .txt, the JSON report beside them in .json.
        { echo "\$ $bin run $*"; "$bin" run "$@" --json >"${out%.txt}.json"; } >"$out" 2>&1
    done
done

python3 "$(dirname "$0")/ab-ticks.py" --all "$outdir:A:B"
echo "outputs kept in $outdir" >&2
