#!/usr/bin/env python3
"""A codec's ticks against a reference codec's, from `ab-alternate.sh` output folders.

    ab-ticks.py CODEC REF OUTDIR:NAME_A:NAME_B... [--dir comp|dec] [--min-rate R]

Each OUTDIR holds the runs of one `ab-alternate.sh` call (a-N.txt and b-N.txt); NAME_A and
NAME_B name its two binaries, so that the same build measured in both orders (as A in one
call, as B in the other) is pooled under one name. For every run and corpus, the ratio of
CODEC's median ticks per page to REF's in that run (pagebench prints its own ratios to two
decimals; this keeps three), left out where the corpus's core throughput probe measured
below R (another hardware thread or tenant sharing the core; default 0: every run). Prints
per corpus and build the median ratio, the quartiles and the number of runs.

Example (a change against the kept code in both orders):
    ab-ticks.py lzo-fast liblzo2 ab1:kept:change ab2:change:kept --min-rate 4.0
"""
import argparse
import glob
import os
import re
import statistics
import sys

CORPUS = re.compile(r"== (\S+): \d+ pages ==")
ROW = re.compile(r"(\S*)\s+(comp|dec)\s+\|\s+\d+\s+(\d+)")
RATE = re.compile(r"core throughput while measuring: median ([\d.]+)")


def run_ratios(path, codec, ref, direction, min_rate):
    """{corpus: CODEC / REF median ticks} for one pagebench output."""
    ratios, corpus, name, ticks = {}, None, None, {}

    def close(rate):
        # A corpus without the probe's line (no TSC) counts only when no rate is asked for.
        if corpus and (rate >= min_rate if rate is not None else min_rate <= 0):
            if codec in ticks and ref in ticks:
                ratios[corpus] = ticks[codec] / ticks[ref]

    with open(path) as f:
        for line in f:
            m = CORPUS.match(line)
            if m:
                close(None)
                corpus, name, ticks = m.group(1), None, {}
                continue
            m = ROW.match(line)
            if m and corpus:
                # A codec's "dec" row leaves the name out: it is the "comp" row's above.
                name = m.group(1) or name
                if m.group(2) == direction:
                    ticks[name] = int(m.group(3))
                continue
            m = RATE.search(line)
            if m and corpus:
                # The probe's line ends a corpus's section.
                close(float(m.group(1)))
                corpus = None
    close(None)
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
        runs = sorted(glob.glob(os.path.join(folder, "[ab]-*.txt")))
        if not runs:
            sys.exit(f"ab-ticks: {folder}: no a-N.txt or b-N.txt runs")
        for path in runs:
            build = name_a if os.path.basename(path).startswith("a-") else name_b
            for corpus, ratio in run_ratios(path, args.codec, args.ref, args.dir, args.min_rate).items():
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
