#!/usr/bin/env python3
"""The longest chain of dependent words in WKdm's AVX2 decoder chain, per page.

    wkdm-chain-depth.py CORPUS.pages... [--pages N]

The chain runs `d = dict[read]; w = (d & keep) | value; dict[write] = w` over a page's
words in order. A word depends on the last earlier word that wrote the entry it reads;
a chain of such words is a chain of store-to-load forwards the core cannot overlap. For N
pages of each corpus (evenly spaced, default 300; 4 KiB pages, little-endian words, the
dictionary preloaded with 1 as XNU's), prints the mean over pages of the longest such
chain, in words, for four ways of routing the words:

- one entry: every word reads and writes its slot, zero words the dump entry (the decoder
  before MISS and zero words were routed apart);
- split: MISS and zero words read entries no word writes (the kept decoder);
- exact dumped: also exact hits write an entry no word reads (measured and not kept);
- per kind: also partial hits read an entry only misses write, exact hits one only misses
  and partial hits write (measured and not kept; docs/perf/wkdm.md).

Words the chain branches past (pages with more than a third zero words) are left out. A
model of dependences, not a measurement of time.

    wkdm-chain-depth.py CORPUS.pages... [--pages N] --distances

prints instead, for the hits (EXACT and PARTIAL words), how many words before them the word
that last wrote their entry stands (in the kept routing, MISS words and hits write it): the
share at distances 1, 2, 3-4, 5-8, 9-24 and beyond, and the hits per page. A hit whose entry
was written a few words before loads what a store still in flight holds.
"""
import struct
import sys
from pathlib import Path

FORMAT = Path(__file__).resolve().parents[2] / "wkdm" / "src" / "format.rs"


def slots():
    """SLOT[] of wkdm/src/format.rs: the HASH table divided by 4."""
    text = FORMAT.read_text()
    start = text.index("HASH: [u8; 256] = [")
    body = text[text.index("[", start + 12) + 1 : text.index("];", start)]
    values = [int(v) for v in body.replace(",", " ").split()]
    assert len(values) == 256, "HASH has 256 entries"
    return [v // 4 for v in values]


def depths(words, slot_of):
    """The longest chain of the page under each routing: (one entry, split, exact dumped,
    per kind)."""
    dictionary = [1] * 16
    skip = 3 * words.count(0) > len(words)
    one, split = [0] * 17, [0] * 17
    by_miss, by_def, dumped = [0] * 16, [0] * 16, [0] * 17
    longest = [0, 0, 0, 0]
    for w in words:
        if w == 0:
            if skip:
                continue
            entry, kind = 16, "zero"
        else:
            entry = slot_of[(w >> 10) & 0xFF]
            d = dictionary[entry]
            kind = "exact" if d == w else "partial" if d >> 10 == w >> 10 else "miss"
            dictionary[entry] = w
        # Each model's chain length at this word; a word that reads an entry no word
        # writes starts a chain of 1.
        one[entry] += 1
        if kind in ("miss", "zero"):
            split[entry] = dumped[entry] = x = k = 1
            if kind == "miss":
                by_miss[entry] = by_def[entry] = 1
        elif kind == "partial":
            split[entry] += 1
            x = dumped[entry] = dumped[entry] + 1
            k = by_def[entry] = by_miss[entry] + 1
        else:
            split[entry] += 1
            x = dumped[entry] + 1
            k = by_def[entry] + 1
        longest = [
            max(longest[0], one[entry]),
            max(longest[1], split[entry]),
            max(longest[2], x),
            max(longest[3], k),
        ]
    return longest


DISTANCE_BUCKETS = ((1, 1), (2, 2), (3, 4), (5, 8), (9, 24), (25, 1 << 30))


def distances(words, slot_of):
    """Per bucket of DISTANCE_BUCKETS, the hits of the page whose entry was last written that
    many words before them (the first write of an entry is the preload, never counted)."""
    dictionary = [1] * 16
    last = [None] * 16
    counts = [0] * len(DISTANCE_BUCKETS)
    for i, w in enumerate(words):
        if w == 0:
            continue
        entry = slot_of[(w >> 10) & 0xFF]
        d = dictionary[entry]
        hit = d >> 10 == w >> 10
        if hit and last[entry] is not None:
            gap = i - last[entry]
            for b, (lo, hi) in enumerate(DISTANCE_BUCKETS):
                if lo <= gap <= hi:
                    counts[b] += 1
                    break
        dictionary[entry] = w
        last[entry] = i
    return counts


def sampled_pages(path, pages):
    """The words of `pages` pages of the page file `path`, evenly spaced."""
    data = Path(path).read_bytes()
    total = len(data) // 4096
    if total == 0:
        sys.exit(f"wkdm-chain-depth: {path} holds no whole 4 KiB page")
    step = max(1, total // pages)
    for p in range(0, total, step)[:pages]:
        yield list(struct.unpack("<1024I", data[p * 4096 : (p + 1) * 4096]))


def main():
    args = sys.argv[1:]
    by_distance = "--distances" in args
    if by_distance:
        args.remove("--distances")
    pages = 300
    if "--pages" in args:
        i = args.index("--pages")
        if i + 1 >= len(args) or not args[i + 1].isdigit() or int(args[i + 1]) == 0:
            sys.exit("wkdm-chain-depth: --pages needs a number above 0")
        pages = int(args[i + 1])
        del args[i : i + 2]
    if not args:
        sys.exit(__doc__)
    for path in args:
        if not Path(path).is_file():
            sys.exit(f"wkdm-chain-depth: no page file {path}")
    slot_of = slots()
    if by_distance:
        heads = ("1", "2", "3-4", "5-8", "9-24", ">24")
        print(f"{'corpus':<24} {'pages':>5} {'hits/page':>9} " + " ".join(f"{h:>6}" for h in heads))
        for path in args:
            sums, n = [0] * len(DISTANCE_BUCKETS), 0
            for words in sampled_pages(path, pages):
                sums = [s + c for s, c in zip(sums, distances(words, slot_of))]
                n += 1
            hits = sum(sums)
            cells = " ".join(f"{100 * c / max(hits, 1):>5.0f}%" for c in sums)
            print(f"{Path(path).name:<24} {n:>5} {hits / n:>9.0f} {cells}")
        return
    heads = ("one entry", "split", "exact dumped", "per kind")
    widths = (10, 8, 13, 9)
    print(f"{'corpus':<24} {'pages':>5} " + " ".join(f"{h:>{w}}" for h, w in zip(heads, widths)))
    for path in args:
        sums, n = [0, 0, 0, 0], 0
        for words in sampled_pages(path, pages):
            sums = [s + d for s, d in zip(sums, depths(words, slot_of))]
            n += 1
        means = [v / n for v in sums]
        cells = " ".join(f"{m:>{w}.0f}" for m, w in zip(means, widths))
        print(f"{Path(path).name:<24} {n:>5} {cells}")


if __name__ == "__main__":
    main()
