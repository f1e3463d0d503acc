#!/usr/bin/env bash
# The AVX2 WKdm decoder measured apart (docs/perf/wkdm.md, "AMD Zen 5: the chain's dictionary
# store"). Builds pagebench from the checked-out commit in a temporary git worktree, as it is
# and once per variant below, each with pagebench's round-trip check switched off (the
# variants that cut the decoder short no longer decode; the check is outside the timed
# decode, so the kept build loses nothing by it). Then compares each variant with the kept
# build in both orders (ab-alternate.sh, ROUNDS rounds each, pinned to CPU ${CPU:-1}) on the
# five captured corpora and prints ab-ticks.py's medians of decode / C LZ4, back to back.
#
#   wkdm-avx2-breakdown.sh CORPORA OUTDIR ROUNDS [VARIANT...]
#
# CORPORA holds dom.pages, sqlite.pages, json.pages, gcc.pages and rustc.pages
# (fresh-corpora.sh, unseen-corpora.sh); OUTDIR receives the binaries and every run's output.
# MIN_RATE (default 0) leaves out runs whose core throughput probe read below it. Variants
# (default: all):
#   no-stage1      validation, the misses' slots and the tags pass; no stage 1, no chain
#   no-chain       everything but the chain (stage 2 does nothing)
#   no-dict-store  the chain without its dictionary store (the dictionary hidden from the
#                  compiler, which would otherwise fold its loads to the preload value)
#   unread-store   the chain's dictionary stores go to entries no word reads (the same
#                  instructions; no load depends on a store)
#   fixed-store    the chain's dictionary stores all go to one entry no word reads (no load
#                  depends on a store, and the store's address needs no instructions)
#   no-page-store  the chain without its page store (the dictionary kept)
#   exact-dump     exact hits write an entry no word reads (stage 1 sets route bit 0x80 where
#                  the tag is EXACT; the chain reads `route & 0x3F`, writes `route & 0x9F`)
#   ordered        each dictionary load waits for the address of the store before it (that
#                  store's entry AND-ed with 0 behind an `asm!`, added to the load's index)
# The last two still decode. Each variant is a source edit that fails loudly when the code
# it edits has changed.
set -euo pipefail

usage() { sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
[ $# -ge 3 ] || usage
corpora=$(cd "$1" && pwd) outdir=$2 rounds=$3
shift 3
variants=("$@")
[ ${#variants[@]} -gt 0 ] ||
    variants=(no-stage1 no-chain no-dict-store unread-store fixed-store no-page-store exact-dump ordered)
for name in dom sqlite json gcc rustc; do
    [ -s "$corpora/$name.pages" ] || { echo "wkdm-avx2-breakdown: no $corpora/$name.pages" >&2; exit 2; }
done
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
mkdir -p "$outdir"
outdir=$(cd "$outdir" && pwd)
tree=$(mktemp -d "${TMPDIR:-/tmp}/wkdm-breakdown.XXXXXX")
trap 'git -C "$repo" worktree remove --force "$tree" >/dev/null 2>&1 || rm -rf "$tree"' EXIT
git -C "$repo" worktree add --detach -q "$tree" HEAD

# edit FILE VARIANT: applies VARIANT's replacements to FILE (in the worktree).
edit() {
    python3 - "$tree/$1" "$2" <<'PY'
import sys
path, variant = sys.argv[1], sys.argv[2]
text = open(path).read()
CHAIN = "        chain_words::<W, 8, SKIP, true>(&mut dict, s, 8 * (k - CHAIN_LAG), page);\n"
TAIL = (
    "    for k in W / 8 - CHAIN_LAG..W / 8 {\n"
    "        chain_words::<W, 8, SKIP, true>(&mut dict, s, 8 * k, page);\n"
    "    }\n"
)
STEP = "        unsafe { step::<V, W>(s, page, &mut at) };\n"
STORE = "        dict[usize::from(if SPLIT { route & STORE_BITS } else { route })] = w;\n"
LOAD = "        let w = (dict[usize::from(route)] & keep) | value;\n"
DICT = "    let mut dict = new_dictionary(preload);\n"
PAGE = "        word.copy_from_slice(&w.to_le_bytes());\n"
ROUTES = "        V::store_routes(indices, hit, slots, miss, s.word_routes.as_mut_ptr().add(i));\n"
NO_CHAIN = [(CHAIN, ""), (TAIL, "    core::hint::black_box(&mut dict);\n")]
edits = {
    "check-off": [(
        "if *back != *page {",
        "if false && *back != *page {",
    )],
    "no-chain": NO_CHAIN,
    "no-stage1": NO_CHAIN + [(STEP, "")],
    "no-dict-store": [
        (STORE, "        if !SPLIT { dict[usize::from(route)] = w; }\n"),
        (DICT, DICT + "    core::hint::black_box(&mut dict);\n"),
    ],
    "unread-store": [(STORE, "        dict[usize::from(if SPLIT { (route & STORE_BITS) + 64 } else { route })] = w;\n")],
    "fixed-store": [(STORE, "        dict[usize::from(if SPLIT { STORE_BITS } else { route })] = w;\n")],
    "no-page-store": [(PAGE, "        if !SPLIT { word.copy_from_slice(&w.to_le_bytes()); }\n")],
    "exact-dump": [
        (ROUTES, ROUTES +
            "        let t = core::ptr::read_unaligned(s.tags.as_ptr().add(i).cast::<u64>());\n"
            "        let r = s.word_routes.as_mut_ptr().add(i).cast::<u64>();\n"
            "        let exact = t & (t >> 1) & 0x0101_0101_0101_0101;\n"
            "        core::ptr::write_unaligned(r, core::ptr::read_unaligned(r) | (exact << 7));\n"),
        (LOAD, "        let w = (dict[usize::from(if SPLIT { route & 0x3F } else { route })] & keep) | value;\n"),
        (STORE, "        dict[usize::from(if SPLIT { route & 0x9F } else { route })] = w;\n"),
    ],
    "ordered": [
        ("    for ((word, &route), &keep) in words.zip(routes).zip(keeps) {\n",
         "    let mut before: usize = 0;\n"
         "    for ((word, &route), &keep) in words.zip(routes).zip(keeps) {\n"),
        (LOAD,
         "        let mut t = before;\n"
         "        #[cfg(target_arch = \"x86_64\")]\n"
         "        unsafe { core::arch::asm!(\"and {t}, 0\", t = inout(reg) t, options(pure, nomem, nostack)) };\n"
         "        let w = (dict[(usize::from(route) + t) & 255] & keep) | value;\n"),
        (STORE,
         "        let entry = usize::from(if SPLIT { route & STORE_BITS } else { route });\n"
         "        dict[entry] = w;\n"
         "        before = entry;\n"),
    ],
}
if variant not in edits:
    sys.exit(f"wkdm-avx2-breakdown: unknown variant {variant}")
for old, new in edits[variant]:
    count = text.count(old)
    if count == 0:
        sys.exit(f"wkdm-avx2-breakdown: {variant}: {path} no longer holds {old.strip()!r}")
    text = text.replace(old, new)
open(path, "w").write(text)
PY
}

# build NAME: builds the worktree's pagebench into $outdir/pagebench-NAME.
build() {
    echo "wkdm-avx2-breakdown: building $1" >&2
    (cd "$tree" && cargo build -q --release -p pagebench)
    cp "$tree/target/release/pagebench" "$outdir/pagebench-$1"
}

edit benches/src/measure.rs check-off
build kept
for v in "${variants[@]}"; do
    git -C "$tree" checkout -q -- wkdm
    edit wkdm/src/arch/expand.rs "$v"
    build "$v"
done

args=(--corpus dom.pages sqlite.pages json.pages gcc.pages rustc.pages --codec wkdm-avx2,lz4
    --max-pages 3000 --reps 5 --quiet --runs 1)
cd "$corpora"
echo "\$ cd CORPORA && taskset -c ${CPU:-1} benches/scripts/ab-alternate.sh KEPT VARIANT $rounds -o D1 -- ${args[*]}"
echo "\$ (then VARIANT KEPT into D2) benches/scripts/ab-ticks.py wkdm-avx2 lz4 D1:kept:VARIANT D2:VARIANT:kept --dir dec --min-rate ${MIN_RATE:-0}"
for v in "${variants[@]}"; do
    taskset -c "${CPU:-1}" "$here/ab-alternate.sh" "$outdir/pagebench-kept" "$outdir/pagebench-$v" "$rounds" \
        -o "$outdir/$v-1" -- "${args[@]}" >/dev/null 2>&1
    taskset -c "${CPU:-1}" "$here/ab-alternate.sh" "$outdir/pagebench-$v" "$outdir/pagebench-kept" "$rounds" \
        -o "$outdir/$v-2" -- "${args[@]}" >/dev/null 2>&1
    echo
    echo "## $v, back to back, decode / C LZ4"
    python3 "$here/ab-ticks.py" wkdm-avx2 lz4 "$outdir/$v-1:kept:$v" "$outdir/$v-2:$v:kept" \
        --dir dec --min-rate "${MIN_RATE:-0}" | tail -n +2
done
