#!/usr/bin/env python3
"""A codec's ticks against a reference codec's, from `ab-alternate.sh` output folders.

    ab-ticks.py CODEC REF OUTDIR:NAME_A:NAME_B... [--dir comp|dec] [--min-rate R]

Each OUTDIR holds the runs of one `ab-alternate.sh` call (their JSON reports, a-N.json and
b-N.json); NAME_A and NAME_B name its two binaries, so that the same build measured in both
orders (as A in one call, as B in the other) is pooled under one name. For every run (of
every process) and corpus, the ratio of CODEC's median ticks per page to REF's in that run
(pagebench prints its own ratios to two decimals; this keeps three), left out where the
corpus's core throughput probe measured below R (another hardware thread or tenant sharing
the core; default 0: every run). Prints per corpus and build the median ratio, the
quartiles and the number of runs.

Example (a change against the kept code in both orders):
    ab-ticks.py lzo-fast liblzo2 ab1:kept:change ab2:change:kept --min-rate 4.0
"""
import argparse
import glob
import json
import os
import statistics
import sys


def run_ratios(path, codec, ref, direction, min_rate):
    """{(run, corpus): CODEC / REF median ticks} for one pagebench JSON report."""
    with open(path) as f:
        report = json.load(f)
    # Core throughput per run and corpus (none without a TSC: such a corpus counts only
    # when no rate is asked for).
    rates = {(r["run"], r["corpus"]): r["median"] for r in report["core_rates"] if r["median"]}
    ticks = {}
    for s in report["results"]:
        speed = s["compress" if direction == "comp" else "decompress"]["ticks"]
        if speed["count"] > 0:
            ticks[(s["run"], s["corpus"], s["codec"])] = speed["median"]
    ratios = {}
    for (run, corpus, name), value in ticks.items():
        if name != codec or (run, corpus, ref) not in ticks:
            continue
        if rates.get((run, corpus), 0) >= min_rate:
            ratios[(run, corpus)] = value / ticks[(run, corpus, ref)]
    return ratios


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("codec")
    p.add_argument("ref")
    p.add_argument("folders", nargs="+", metavar="OUTDIR:NAME_A:NAME_B")
    p.add_argument("--dir", choices=["comp", "dec"], default="comp")
    p.add_argument("--min-rate", type=float, default=0.0)
    args = p.parse_args()
    pooled = {}
    for spec in args.folders:
        parts = spec.split(":")
        if len(parts) != 3:
            sys.exit(f"ab-ticks: {spec}: expected OUTDIR:NAME_A:NAME_B")
        folder, name_a, name_b = parts
        runs = sorted(glob.glob(os.path.join(folder, "[ab]-*.json")))
        if not runs:
            sys.exit(f"ab-ticks: {folder}: no a-N.json or b-N.json reports (ab-alternate.sh writes them)")
        for path in runs:
            build = name_a if os.path.basename(path).startswith("a-") else name_b
            for (_, corpus), ratio in run_ratios(path, args.codec, args.ref, args.dir, args.min_rate).items():
                pooled.setdefault(corpus, {}).setdefault(build, []).append(ratio)
    if not pooled:
        sys.exit(f"ab-ticks: no run has both {args.codec} and {args.ref} at --min-rate {args.min_rate}")
    print(f"{args.codec} / {args.ref} median ticks, {args.dir}, runs at core throughput >= {args.min_rate}")
    for corpus in sorted(pooled):
        cells = []
        for build, values in pooled[corpus].items():
            q = statistics.quantiles(values, n=4) if len(values) > 1 else [values[0]] * 3
            runs = f"{len(values)} run" + ("s" if len(values) != 1 else "")
            cells.append(f"{build} {statistics.median(values):.3f}x ({q[0]:.3f}-{q[2]:.3f}, {runs})")
        print(f"{corpus:8} " + "   ".join(cells))


if __name__ == "__main__":
    main()
