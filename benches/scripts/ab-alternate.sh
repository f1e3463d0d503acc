#!/usr/bin/env bash
# A/B comparison of two pagebench binaries, run alternately.
#
#   ab-alternate.sh BIN_A BIN_B ROUNDS [-o OUTDIR] -- RUN-ARGS...
#
# Each round runs `BIN_A run RUN-ARGS...`, then `BIN_B run RUN-ARGS...` (so slow and quiet
# phases of a shared machine fall on both), and keeps every output in OUTDIR (default: a new
# directory under ${TMPDIR:-/tmp}): the log and tables as a-N.txt / b-N.txt, pagebench's JSON
# report beside each as a-N.json / b-N.json (which ab-ticks.py reads). At the end it prints,
# per corpus, codec and direction, the median over all of a binary's runs of the codec's
# "vs liblzo2" and "vs lz4" ratios (each run's own ratio to the C reference measured in that
# run), A beside B.
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

# Table rows of `pagebench run`: "== CORPUS: N pages ==" starts a corpus; a codec's rows are
# "NAME comp | ... | VS_LZ4 VS_LIBLZO2" and "     dec | ... | VS_LZ4 VS_LIBLZO2".
extract() {
    awk -v side="$1" '
        /^== .*: [0-9]+ pages ==/ { corpus = $2; sub(/:$/, "", corpus) }
        $2 == "comp" && $0 ~ /\|/ { codec = $1; dir = "comp" }
        $1 == "dec" && $0 ~ /\|/ { dir = "dec" }
        ($2 == "comp" || $1 == "dec") && $0 ~ /\|/ {
            lz4 = $(NF - 1); lzo = $NF; sub(/x$/, "", lz4); sub(/x$/, "", lzo)
            if (lzo ~ /^[0-9.]+$/) print corpus, codec, dir, "liblzo2", side, lzo
            if (lz4 ~ /^[0-9.]+$/) print corpus, codec, dir, "lz4", side, lz4
        }' "${@:2}"
}
# Sorted by group and value, so each group's median is its middle line.
{
    extract A "$outdir"/a-*.txt
    extract B "$outdir"/b-*.txt
} | sort -k1,1 -k2,2 -k3,3 -k4,4 -k5,5 -k6,6g | awk '
    function flush() {
        if (n == 0) return
        med[g] = sprintf("%.3fx", (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2)
        cnt[g] = n
        n = 0
    }
    {
        row = $1 " " $2 " " $3
        k = row " " $4 " " $5
        if (k != g) { flush(); g = k; if (!(row in seen)) { seen[row] = 1; order[++nr] = row } }
        v[++n] = $6
    }
    END {
        flush()
        printf "%-10s %-12s %-4s | %-22s | %-22s | runs A/B\n", "corpus", "codec", "dir", "vs liblzo2: A -> B", "vs lz4: A -> B"
        for (i = 1; i <= nr; i++) {
            r = order[i]; split(r, f, " ")
            printf "%-10s %-12s %-4s | %9s -> %-9s | %9s -> %-9s | %d/%d\n", f[1], f[2], f[3],
                med[r " liblzo2 A"], med[r " liblzo2 B"], med[r " lz4 A"], med[r " lz4 B"],
                cnt[r " liblzo2 A"] + 0 ? cnt[r " liblzo2 A"] : cnt[r " lz4 A"],
                cnt[r " liblzo2 B"] + 0 ? cnt[r " liblzo2 B"] : cnt[r " lz4 B"]
        }
    }'
echo "outputs kept in $outdir" >&2
