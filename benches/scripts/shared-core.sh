#!/usr/bin/env bash
# How much each codec slows down when another hardware thread shares its core: runs pagebench
# many times over the same pages, then compares every codec's median ticks on the corpora
# measured at the core's full throughput with those measured on a shared core.
#   shared-core.sh PAGEBENCH ROUNDS CORPUS...
# Each round runs `PAGEBENCH run --runs 10` once on each CPU the shell may use, in turn
# (taskset), 1000 pages per corpus, codecs $CODECS (default: wkdm-scalar,wkdm-avx2,lzo,
# liblzo2,lz4). Each corpus of each run counts as "full" when its core throughput (the
# median printed under its table) is at least 90% of the highest seen, as "shared" below 70%
# of it, and is left out in between. Prints, per corpus, codec and direction, the median over
# the full and over the shared corpus-runs of the per-run median ticks, and their ratio.
# Another tenant on the core comes and goes on its own: a run with no shared readings says
# so and prints nothing more. Reads pagebench's JSON reports (`--json`); needs python3 (for the
# summary) and taskset.
set -euo pipefail
[ $# -ge 3 ] || { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
pb=$1 rounds=$2
shift 2
[ -x "$pb" ] || { echo "shared-core: $pb is not an executable file" >&2; exit 2; }
case $rounds in ''|*[!0-9]*|0) echo "shared-core: ROUNDS must be a number above 0" >&2; exit 2 ;; esac
for tool in python3 taskset; do
    command -v "$tool" >/dev/null || { echo "shared-core: $tool not found" >&2; exit 2; }
done
codecs=${CODECS:-wkdm-scalar,wkdm-avx2,lzo,liblzo2,lz4}
work=$(mktemp -d "${TMPDIR:-/tmp}/shared-core.XXXXXX")
trap 'rm -rf "$work"' EXIT
# The CPUs this shell may run on ("0-3,6" style list), one per word.
cpus=""
for part in $(taskset -pc $$ | sed 's/.*: //' | tr ',' ' '); do
    case $part in
        *-*) cpus="$cpus $(seq -s ' ' "${part%-*}" "${part#*-}")" ;;
        *) cpus="$cpus $part" ;;
    esac
done
cpus=${cpus# }
echo "\$ pagebench run --corpus $* --codec $codecs --max-pages 1000 --reps 5 --quiet --runs 10 --json"
echo "($rounds rounds, once on each of CPUs $cpus per round)"
for r in $(seq 1 "$rounds"); do
    for cpu in $cpus; do
        taskset -c "$cpu" "$pb" run --corpus "$@" --codec "$codecs" --max-pages 1000 --reps 5 \
            --quiet --runs 10 --json >"$work/round-$r-cpu-$cpu.json" 2>/dev/null
    done
done
python3 - "$work"/round-*.json <<'PY'
import json, statistics, sys
rows = []  # (core rate, corpus, codec, direction, median ticks)
readings = []  # (core rate, corpus), one per corpus per run
for path in sys.argv[1:]:
    with open(path) as f:
        report = json.load(f)
    rates = {(r["run"], r["corpus"]): r["median"] for r in report["core_rates"] if r["median"]}
    readings += [(rate, corpus) for (_, corpus), rate in rates.items()]
    for s in report["results"]:
        rate = rates.get((s["run"], s["corpus"]))
        for d, speed in (("comp", s["compress"]), ("dec", s["decompress"])):
            if rate is not None and speed["ticks"]["count"] > 0:
                rows.append((rate, s["corpus"], s["codec"], d, speed["ticks"]["median"]))
if not rows:
    sys.exit("shared-core: no core throughput readings (no TSC?)")
highest = max(r[0] for r in rows)
full = sum(1 for rate, _ in readings if rate >= 0.9 * highest)
shared = sum(1 for rate, _ in readings if rate < 0.7 * highest)
print(f"core throughput (median per corpus and run): highest {highest:.2f}; "
      f"{full} corpus-runs at >= 90% of it (full), {shared} below 70% (shared), "
      f"{len(readings) - full - shared} between (left out)")
if shared == 0:
    print("no corpus was measured on a shared core")
    sys.exit(0)
groups = {}
for rate, corpus, codec, d, ticks in rows:
    g = "full" if rate >= 0.9 * highest else "shared" if rate < 0.7 * highest else None
    if g:
        groups.setdefault((corpus, codec, d, g), []).append(ticks)
print(f"{'corpus':<10} {'codec':<12} {'dir':<4} | {'full: median ticks (n)':>24} | "
      f"{'shared (n)':>16} | shared / full")
for corpus, codec, d in sorted({k[:3] for k in groups}):
    a, b = groups.get((corpus, codec, d, "full")), groups.get((corpus, codec, d, "shared"))
    if a and b:
        ma, mb = statistics.median(a), statistics.median(b)
        print(f"{corpus:<10} {codec:<12} {d:<4} | {ma:>18.0f} ({len(a):3}) | "
              f"{mb:>10.0f} ({len(b):3}) | {mb / ma:.2f}x")
PY
