#!/usr/bin/env bash
# Conditional branches and their mispredictions per page, by function, from cachegrind's
# branch simulator (a table of 2-bit counters indexed by the branch's address: no history,
# so it predicts as a core that has not seen the page; a model, not a measurement).
#   branch-sim.sh PAGEBENCH CORPUS PAGES CODEC...
# Per codec: one `PAGEBENCH run --sweep --reps 1` over PAGES pages of CORPUS under
# cachegrind, then the five functions with the most mispredictions, each with its
# instructions (Ir), conditional branches (Bc) and mispredictions (Bcm) divided by PAGES.
# Needs valgrind (cachegrind, cg_annotate).
set -euo pipefail
[ $# -ge 4 ] || { sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
pb=$1 corpus=$2 pages=$3
. "$(dirname "$0")/valgrind-lib.sh"
valgrind_args branch-sim "$pb" "$corpus" "$pages" valgrind cg_annotate
shift 3
work=$(mktemp -d "${TMPDIR:-/tmp}/branch-sim.XXXXXX")
trap 'rm -rf "$work"' EXIT
for codec in "$@"; do
    valgrind --tool=cachegrind --cache-sim=no --branch-sim=yes \
        --cachegrind-out-file="$work/$codec.out" \
        "$pb" run --corpus "$corpus" --codec "$codec" --max-pages "$pages" --reps 1 --sweep --quiet \
        >"$work/$codec.log" 2>&1 || { cat "$work/$codec.log" >&2; exit 1; }
    echo "== $codec: per page of $(basename "$corpus") ($pages pages; compress and decompress)"
    printf '%10s %10s %10s  %s\n' Ir Bc Bcm function
    # Function rows of cg_annotate: "Ir (pct) Bc (pct) Bcm (pct) file:function", one per
    # function and source file; summed per function (inlined code keeps its own file).
    cg_annotate --show=Ir,Bc,Bcm --sort=Bcm --threshold=0 --auto=no "$work/$codec.out" 2>/dev/null \
        | awk -v n="$pages" '
            /file:function/ { on = 1; getline; next }
            on && !/[0-9]/ { on = 0 }
            on {
                line = $0
                # Three counts, each followed by its share in parentheses unless it is 0,
                # then file:function.
                for (f = 1; f <= 3; f++) {
                    sub(/^ */, "", line)
                    v[f] = line; sub(/ .*/, "", v[f]); gsub(",", "", v[f])
                    if (line ~ /^[0-9,]+ +\(/) sub(/^[0-9,]+ +\([^)]*\) */, "", line)
                    else sub(/^[0-9,]+ */, "", line)
                }
                name = line; sub(/^[^:]*:/, "", name)
                if (!(name in m)) order[++k] = name
                i[name] += v[1]; c[name] += v[2]; m[name] += v[3]
            }
            END {
                for (j = 1; j <= k; j++)
                    printf "%10.0f %10.0f %10.0f  %s\n", i[order[j]] / n, c[order[j]] / n, m[order[j]] / n, order[j]
            }' | sort -k3,3nr -s | head -5
done
