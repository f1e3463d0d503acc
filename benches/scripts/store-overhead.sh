#!/usr/bin/env bash
# The store's own cost over its bare codec: `pagebench store` on the given page files (or,
# without any, on a freshly captured python heap), RUNS times (default 3), every codec
# the store is compared with zram on.
#   bash benches/scripts/store-overhead.sh RESULT.txt [PAGE-FILE...]
set -euo pipefail
result=${1:?result file}
shift
runs=${RUNS:-3}
files=()
for f in "$@"; do files+=("$(cd "$(dirname "$f")" && pwd)/$(basename "$f")"); done
cd "$(dirname "$0")/../.."
cargo build --release -p pagebench
pb="${CARGO_TARGET_DIR:-target}/release/pagebench"
corpus=()
if [ ${#files[@]} -gt 0 ]; then corpus=(--corpus "${files[@]}"); fi
{
    echo "\$ RUNS=$runs bash benches/scripts/store-overhead.sh RESULT.txt ${*:-}"
    echo "\$ pagebench store ${corpus[*]:+--corpus <files>} --codec wkdm,lzo-rle,lz4-page,hybrid --max-pages 20000"
    for r in $(seq "$runs"); do
        echo
        echo "## run $r"
        "$pb" store "${corpus[@]}" --codec wkdm,lzo-rle,lz4-page,hybrid --max-pages 20000 2>&1
    done
} | tee "$result"
