#!/usr/bin/env bash
# Captures two more workloads of kinds no codec here was tuned on, then measures every codec
# family against C liblzo2 and C LZ4 on them, back to back and in sweeps.
#   bash benches/scripts/unseen-corpora.sh OUTDIR RESULT.txt
# OUTDIR receives rustc.pages (rustc -O compiling a generated 1.5 MB Rust file, captured once
# it holds 400 MiB) and json.pages (python holding a parsed JSON document:
# benches/scripts/json-heap.py). Needs rustc, python3 and ptrace rights over the children
# (root or the same user). When OUTDIR already holds both page files, they are measured again
# instead of captured anew.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/corpora-lib.sh"
corpora_setup "$@"

if [ -s "$outdir/rustc.pages" ] && [ -s "$outdir/json.pages" ]; then
    echo "unseen-corpora: measuring the page files already in $outdir" >&2
else
    python3 - "$outdir/big.rs" <<'PY'
import random, sys
random.seed(11)
with open(sys.argv[1], "w") as f:
    f.write("use std::collections::HashMap;\n")
    for i in range(3000):
        f.write(f"#[derive(Debug, Clone, Default)] pub struct S{i} {{ pub a: u64, pub b: f64, pub name: String, pub tags: Vec<u32> }}\n")
        f.write(f"pub fn f{i}(x: &mut S{i}, m: &mut HashMap<String, u64>, n: usize) -> u64 {{ let mut acc = {i}u64; for k in 0..n {{ acc = acc.wrapping_mul({random.randrange(1, 1 << 30)}).wrapping_add(x.a ^ k as u64); if acc % {3 + i % 17} == 1 {{ x.tags.push(acc as u32); }} *m.entry(format!(\"k{i}-{{}}\", k % 7)).or_insert(0) += acc; }} x.name = format!(\"v{{}}-{i}\", acc); acc + x.name.len() as u64 + x.b as u64 }}\n")
    f.write("fn main() { let mut m = HashMap::new(); let mut t = 0u64;\n")
    for i in range(0, 3000, 5):
        f.write(f"  {{ let mut x = S{i}::default(); x.a = {i}; t = t.wrapping_add(f{i}(&mut x, &mut m, {i % 40})); }}\n")
    f.write('  println!("{} {}", t, m.len()); }\n')
PY
    rustc -O --edition 2021 "$outdir/big.rs" -o "$outdir/big.bin" &
    compiler=$!
    # Mid-compile on any machine: once rustc holds 400 MiB, not after a fixed time.
    rss=0
    for _ in $(seq 1200); do
        rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$compiler/status" 2>/dev/null || echo 0)
        [ "${rss:-0}" -ge $((400 * 1024)) ] && break
        sleep 0.1
    done
    [ "${rss:-0}" -ge $((400 * 1024)) ] || { echo "unseen-corpora: rustc never reached 400 MiB" >&2; exit 1; }
    "$pb" capture -o "$outdir/rustc.pages" --pid "$compiler"
    kill "$compiler" 2>/dev/null || true
    wait "$compiler" 2>/dev/null || true

    "$pb" capture -o "$outdir/json.pages" -- python3 "$here/json-heap.py"
fi

corpora_measure unseen-corpora.sh "$result" lzo,lzo-fast,lzo-rle,liblzo2,lz4,wkdm,wkdm-avx2 3000 rustc json
