#!/usr/bin/env bash
# Instructions and memory operations per call of given functions, from callgrind.
#   ops-per-page.sh PAGEBENCH CORPUS PAGES CODECS FUNCTION...
# Runs `PAGEBENCH run --codec CODECS --reps 1 --sweep` over PAGES pages of CORPUS under
# callgrind (with its cache model, which counts data reads and writes), then prints, for
# each FUNCTION (the end of a function's name, as `avx2::decompress` or
# `LZ4_decompress_safe`), how often it was called and, per call and including what it
# calls, the instructions executed (Ir), the data reads (Dr) and writes (Dw), and both. A
# decoder called once per decoded page gives its cost per page; pages a codec stores raw
# are not decoded. Counts of a simulator, not a measurement of time: an instruction that
# reads and writes memory counts once in each, a vector load once.
# Needs valgrind (callgrind) and python3.
set -euo pipefail
[ $# -ge 5 ] || { sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
pb=$1 corpus=$2 pages=$3 codecs=$4
shift 4
. "$(dirname "$0")/valgrind-lib.sh"
valgrind_args ops-per-page "$pb" "$corpus" "$pages" valgrind python3
work=$(mktemp -d "${TMPDIR:-/tmp}/ops-per-page.XXXXXX")
trap 'rm -rf "$work"' EXIT
valgrind --tool=callgrind --cache-sim=yes --callgrind-out-file="$work/out" \
    "$pb" run --corpus "$corpus" --codec "$codecs" --max-pages "$pages" --reps 1 --sweep \
    --quiet --runs 1 >"$work/log" 2>&1 || { cat "$work/log" >&2; exit 1; }
echo "== $(basename "$corpus"), $pages pages, codecs $codecs: per call, including callees"
python3 - "$work/out" "$@" <<'PY'
import re
import sys

path, wanted = sys.argv[1], sys.argv[2:]
names, events, current = {}, [], None
totals = {w: [0, None] for w in wanted}
lines = open(path).read().splitlines()
for i, line in enumerate(lines):
    if line.startswith("events:"):
        events = line.split()[1:]
        continue
    # Callgrind names a function once, `fn=(id) name`, and by `(id)` after that; `cfn=`
    # lines name the callee of the `calls=` line that follows, whose next line holds the
    # call's inclusive cost (a position, then one count per event).
    m = re.match(r"(c?fn)=\((\d+)\)(?: (.*))?$", line)
    if m:
        if m.group(3):
            names[m.group(2)] = m.group(3)
        if m.group(1) == "cfn":
            current = names.get(m.group(2), "")
        continue
    m = re.match(r"calls=(\d+)", line)
    if m and current:
        for w in wanted:
            if current.endswith(w):
                costs = [int(x) for x in lines[i + 1].split()[1:]]
                costs += [0] * (len(events) - len(costs))
                total = totals[w]
                total[0] += int(m.group(1))
                total[1] = costs if total[1] is None else [a + b for a, b in zip(total[1], costs)]
print(f"{'calls':>8} {'Ir':>8} {'Dr':>8} {'Dw':>8} {'Dr+Dw':>8}  function")
for w in wanted:
    calls, costs = totals[w]
    if not calls:
        print(f"{'-':>8} {'':>8} {'':>8} {'':>8} {'':>8}  {w} (never called)")
        continue
    per = dict(zip(events, (c / calls for c in costs)))
    ir, dr, dw = per.get("Ir", 0), per.get("Dr", 0), per.get("Dw", 0)
    print(f"{calls:>8} {ir:>8.0f} {dr:>8.0f} {dw:>8.0f} {dr + dw:>8.0f}  {w}")
PY
