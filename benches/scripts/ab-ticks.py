#!/usr/bin/env python3
"""A codec's ticks against a reference codec's, from `ab-alternate.sh` output folders.

    ab-ticks.py CODEC REF OUTDIR:NAME_A:NAME_B... [--dir comp|dec] [--min-rate R]
    ab-ticks.py --all OUTDIR:NAME_A:NAME_B... [--min-rate R]

Each OUTDIR holds the runs of one `ab-alternate.sh` call (their JSON reports, a-N.json and
b-N.json); NAME_A and NAME_B name its two binaries, so that the same build measured in both
orders (as A in one call, as B in the other) is pooled under one name. For every run (of
every process) and corpus, the ratio of CODEC's median ticks per page to REF's in that run
(pagebench prints its own ratios to two decimals; this keeps three), left out where the
corpus's core throughput probe measured below R (another hardware thread or tenant sharing
the core; default 0: every run). Prints per corpus and build the median ratio, the
quartiles and the number of runs.

With --all, every codec against C liblzo2 and C LZ4 (those of them in the runs), in both
directions, one row per corpus, codec and direction: the median ratio of each build, A -> B
(the summary `ab-alternate.sh` prints).

Example (a change against the kept code in both orders):
    ab-ticks.py lzo-fast liblzo2 ab1:kept:change ab2:change:kept --min-rate 4.0
"""
import argparse
import glob
import json
import os
import statistics
import sys

# The references --all measures every codec against.
REFS = ("liblzo2", "lz4")
DIRECTIONS = ("comp", "dec")


def run_ratios(path, pairs, directions, min_rate):
    """{(run, corpus, codec, ref, direction): CODEC / REF median ticks} for one pagebench
    JSON report, for the (codec, ref) `pairs` (None: every codec against each of REFS)."""
    with open(path) as f:
        report = json.load(f)
    # Core throughput per run and corpus (none without a TSC: such a corpus counts only
    # when no rate is asked for).
    rates = {(r["run"], r["corpus"]): r["median"] for r in report["core_rates"] if r["median"]}
    ticks = {}
    for s in report["results"]:
        for direction in directions:
            speed = s["compress" if direction == "comp" else "decompress"]["ticks"]
            if speed["count"] > 0:
                ticks[(s["run"], s["corpus"], s["codec"], direction)] = speed["median"]
    ratios = {}
    for (run, corpus, codec, direction), value in ticks.items():
        if rates.get((run, corpus), 0) < min_rate:
            continue
        refs = [r for c, r in pairs if c == codec] if pairs else [r for r in REFS if r != codec]
        for ref in refs:
            base = ticks.get((run, corpus, ref, direction))
            if base:
                ratios[(run, corpus, codec, ref, direction)] = value / base
    return ratios


def pool(folders, pairs, directions, min_rate):
    """{(corpus, codec, ref, direction): {build: [ratio of each run]}} over the folders."""
    pooled = {}
    for spec in folders:
        parts = spec.split(":")
        if len(parts) != 3:
            sys.exit(f"ab-ticks: {spec}: expected OUTDIR:NAME_A:NAME_B")
        folder, name_a, name_b = parts
        runs = sorted(glob.glob(os.path.join(folder, "[ab]-*.json")))
        if not runs:
            sys.exit(f"ab-ticks: {folder}: no a-N.json or b-N.json reports (ab-alternate.sh writes them)")
        for path in runs:
            build = name_a if os.path.basename(path).startswith("a-") else name_b
            for (_, *key), ratio in run_ratios(path, pairs, directions, min_rate).items():
                pooled.setdefault(tuple(key), {}).setdefault(build, []).append(ratio)
    return pooled


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("args", nargs="+", metavar="[CODEC REF] OUTDIR:NAME_A:NAME_B")
    p.add_argument("--all", action="store_true", help="every codec against liblzo2 and lz4")
    p.add_argument("--dir", choices=DIRECTIONS, default="comp")
    p.add_argument("--min-rate", type=float, default=0.0)
    args = p.parse_args()
    if args.all:
        pooled = pool(args.args, None, DIRECTIONS, args.min_rate)
        builds = args.args[0].split(":")[1:]
        print(f"{'corpus':<10} {'codec':<12} {'dir':<4} | {'vs liblzo2: A -> B':<22} | {'vs lz4: A -> B':<22} | runs A/B")
        rows = sorted({(corpus, codec, d) for corpus, codec, _, d in pooled})
        for corpus, codec, d in rows:
            by_ref = [pooled.get((corpus, codec, ref, d), {}) for ref in REFS]
            cells = []
            for values in by_ref:
                med = [f"{statistics.median(values[b]):.3f}x" if b in values else "-" for b in builds]
                cells.append(f"{med[0]:>9} -> {med[1]:<9}")
            # Runs per build, of the first reference the runs have.
            counted = next(values for values in by_ref if values)
            runs = "/".join(str(len(counted.get(b, []))) for b in builds)
            print(f"{corpus:<10} {codec:<12} {d:<4} | {cells[0]} | {cells[1]} | {runs}")
        return
    if len(args.args) < 3:
        p.error("CODEC REF and at least one OUTDIR:NAME_A:NAME_B (or --all)")
    codec, ref, folders = args.args[0], args.args[1], args.args[2:]
    pooled = pool(folders, [(codec, ref)], [args.dir], args.min_rate)
    if not pooled:
        sys.exit(f"ab-ticks: no run has both {codec} and {ref} at --min-rate {args.min_rate}")
    print(f"{codec} / {ref} median ticks, {args.dir}, runs at core throughput >= {args.min_rate}")
    for corpus, _, _, _ in sorted(pooled):
        cells = []
        for build, values in pooled[(corpus, codec, ref, args.dir)].items():
            q = statistics.quantiles(values, n=4) if len(values) > 1 else [values[0]] * 3
            runs = f"{len(values)} run" + ("s" if len(values) != 1 else "")
            cells.append(f"{build} {statistics.median(values):.3f}x ({q[0]:.3f}-{q[2]:.3f}, {runs})")
        print(f"{corpus:8} " + "   ".join(cells))


if __name__ == "__main__":
    main()
