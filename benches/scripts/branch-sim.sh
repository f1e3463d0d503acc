#!/usr/bin/env bash
# Conditional branches and their mispredictions per page, by function, from cachegrind's
# branch simulator (a table of 2-bit counters indexed by the branch's address: no history,
# so it predicts as a core that has not seen the page; a model, not a measurement).
#   branch-sim.sh PAGEBENCH CORPUS PAGES CODEC...
# Per codec: one `PAGEBENCH run --sweep --reps 1` over PAGES pages of CORPUS under
# cachegrind, then the five functions with the most mispredictions, each with its
# instructions (Ir), conditional branches (Bc) and mispredictions (Bcm) divided by PAGES.
# With LINES=N in the environment, also the N source lines with the most mispredictions
# (inlined code under its own file), each with its Bc and Bcm per page.
# Needs valgrind (cachegrind, cg_annotate).
set -euo pipefail
[ $# -ge 4 ] || { sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
lines=${LINES:-0}
case $lines in ''|*[!0-9]*) echo "branch-sim: LINES must be a number" >&2; exit 2 ;; esac
pb=$1 corpus=$2 pages=$3
. "$(dirname "$0")/valgrind-lib.sh"
valgrind_args branch-sim "$pb" "$corpus" "$pages" valgrind cg_annotate
shift 3
work=$(mktemp -d "${TMPDIR:-/tmp}/branch-sim.XXXXXX")
trap 'rm -rf "$work"' EXIT
# An awk function for cg_annotate's rows: three counts, each followed by its share in
# parentheses unless it is 0, then text. Puts the counts in v[1..3], returns the text.
counts='
function counts(line,    f) {
    for (f = 1; f <= 3; f++) {
        sub(/^ */, "", line)
        v[f] = line; sub(/ .*/, "", v[f]); gsub(",", "", v[f])
        if (line ~ /^[0-9,]+ +\(/) sub(/^[0-9,]+ +\([^)]*\) */, "", line)
        else sub(/^[0-9,]+ */, "", line)
    }
    return line
}'
for codec in "$@"; do
    valgrind --tool=cachegrind --cache-sim=no --branch-sim=yes \
        --cachegrind-out-file="$work/$codec.out" \
        "$pb" run --corpus "$corpus" --codec "$codec" --max-pages "$pages" --reps 1 --sweep --quiet \
        >"$work/$codec.log" 2>&1 || { cat "$work/$codec.log" >&2; exit 1; }
    echo "== $codec: per page of $(basename "$corpus") ($pages pages; compress and decompress)"
    printf '%10s %10s %10s  %s\n' Ir Bc Bcm function
    # Function rows of cg_annotate: the counts, then file:function, one per function and
    # source file; summed per function (inlined code keeps its own file).
    cg_annotate --show=Ir,Bc,Bcm --sort=Bcm --threshold=0 --auto=no "$work/$codec.out" 2>/dev/null \
        | awk -v n="$pages" "$counts"'
            /file:function/ { on = 1; getline; next }
            on && !/[0-9]/ { on = 0 }
            on {
                name = counts($0); sub(/^[^:]*:/, "", name)
                if (!(name in m)) order[++k] = name
                i[name] += v[1]; c[name] += v[2]; m[name] += v[3]
            }
            END {
                for (j = 1; j <= k; j++)
                    printf "%10.0f %10.0f %10.0f  %s\n", i[order[j]] / n, c[order[j]] / n, m[order[j]] / n, order[j]
            }' | sort -k3,3nr -s | awk 'NR <= 5'
    [ "$lines" -gt 0 ] || continue
    echo "-- the $lines source lines with the most mispredictions, per page"
    printf '%10s %10s  %s\n' Bc Bcm line
    # Annotated sources: "-- Auto-annotated source: PATH", then chunks of lines between two
    # "-- line N ---" markers, each line its counts and its text.
    cg_annotate --show=Ir,Bc,Bcm --auto=yes --context=0 "$work/$codec.out" 2>/dev/null \
        | awk -v n="$pages" "$counts"'
            /^-- Auto-annotated source: / { file = $NF; sub(/.*\//, "", file); open = 0; next }
            /^-- line [0-9]+ / { open = !open; at = $3; next }
            open && /^ *[0-9][0-9,]* / {
                line = counts($0)
                if (v[3] > 0) printf "%10.0f %10.0f  %s:%s  %s\n", v[2] / n, v[3] / n, file, at, line
                at++
            }' | sort -k2,2nr -s | awk -v k="$lines" 'NR <= k'
done
