#!/usr/bin/env bash
# Builds the consumer crate with cargo's default release profile and with the workspace's
# profile, runs each build RUNS times (default 3) alternately, and prints the median of
# each figure and the ratio default / workspace per codec and direction.
#
#   bash benches/consumer/run.sh        # from anywhere
set -euo pipefail
cd "$(dirname "$0")"
runs="${1:-3}"
cargo build -q --release
cargo build -q --profile workspace-like
dir="${CARGO_TARGET_DIR:-target}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for i in $(seq "$runs"); do
    "$dir/release/pagecodec-consumer" | tail -n +3 >>"$tmp/default"
    "$dir/workspace-like/pagecodec-consumer" | tail -n +3 >>"$tmp/workspace"
done
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(date -u +%Y-%m-%d)"
echo "median over $runs runs of each build; ns per page (median over pages of each page's minimum)"
printf '%-12s %9s %9s %7s   %9s %9s %7s\n' codec comp-def comp-ws ratio dec-def dec-ws ratio
awk '
    FNR == 1 { file++ }
    { key = $1; n[file, key]++; c[file, key, n[file, key]] = $2; d[file, key, n[file, key]] = $3
      if (file == 1 && !(key in seen)) { seen[key] = 1; order[++count] = key } }
    function median(arr, f, k, m,    i, j, t, v) {
        for (i = 1; i <= m; i++) v[i] = arr[f, k, i]
        for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
        return v[int((m + 1) / 2)]
    }
    END {
        for (i = 1; i <= count; i++) {
            k = order[i]; m = n[1, k]
            cd = median(c, 1, k, m); cw = median(c, 2, k, m); dd = median(d, 1, k, m); dw = median(d, 2, k, m)
            printf "%-12s %9d %9d %6.2fx   %9d %9d %6.2fx\n", k, cd, cw, cd / cw, dd, dw, dd / dw
        }
    }' "$tmp/default" "$tmp/workspace"
