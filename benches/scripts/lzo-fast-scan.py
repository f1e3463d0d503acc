#!/usr/bin/env python3
"""What `Lzo1xFast`'s scan meets on a corpus's pages, per page.

    lzo-fast-scan.py CORPUS.pages [--pages N]

A model of the scan in `lzo/src/compress/fast.rs` (probes at multiples of 4 from 12, the
recent distance first, then a 2048-entry table of positions by the kernel's hash of 4
bytes, the probed position and the one 2 bytes on entered on a miss; matches reaching back
up to 8 bytes over the pending literals and forward to the first differing byte, the next
probe at the first multiple of 4 at or after the match's end). For N pages (evenly spaced,
default 300; 4 KiB pages, zero pages left out), prints the mean per page of: probes, probes
that hit at the recent distance and in the table, matches by total length, by the literals
before them and by form (M2: at most 8 bytes and 2048 back; M3 otherwise), 4-byte matches
too far back for M2, matches whose first 8 and first 12 bytes agree, and the stream's
length from those pieces, which pagebench's mean compressed size for `lzo-fast` on the same
pages checks. A model of the scan's decisions, not of its time: each hit-or-miss and each
length class is a branch the compressor takes per probe or per match.
"""
import argparse
import collections
import struct
import sys

PAGE = 4096
IP_END = PAGE - 20
TABLE_BITS = 11


def hash_bits(v):
    return ((v * 0x1824429D) & 0xFFFFFFFF) >> (32 - TABLE_BITS)


def le64(page, at):
    return struct.unpack_from("<Q", page, at)[0]


def literal_bytes(t, first):
    """Bytes a run of t literals takes with its header (t >= 1)."""
    if first and t <= 238:
        return 1 + t
    if t <= 3:
        return t
    if t <= 18:
        return 1 + t
    return 1 + (t - 18 - 1) // 255 + 1 + t


def scan(page, count):
    table = [0] * (1 << TABLE_BITS)
    lit, ip, rep, size = 0, 12, 4, 0
    while ip < IP_END:
        count["probes"] += 1
        word = le64(page, ip)
        # A probe compares 4 bytes; the length is measured from byte 4 on (below).
        if (word ^ le64(page, ip - rep)) & 0xFFFFFFFF == 0:
            count["hits at the recent distance"] += 1
            m_pos = ip - rep
        else:
            h = hash_bits(word & 0xFFFFFFFF)
            cand, table[h] = table[h], ip
            if (word ^ le64(page, cand)) & 0xFFFFFFFF:
                table[hash_bits((word >> 16) & 0xFFFFFFFF)] = ip + 2
                ip += 4
                continue
            count["hits in the table"] += 1
            m_pos = cand
        back = 0
        while back < min(ip - lit, m_pos, 8) and page[ip - 1 - back] == page[m_pos - 1 - back]:
            back += 1
        # Forward: 8 bytes at a time from byte 4 (bytes 0..4 agree), the next probe the
        # first multiple of 4 at or after the end; the compares from bytes 4 and 12 always
        # run, later ones while they start below IP_END.
        fwd = 4
        while True:
            v = le64(page, ip + fwd) ^ le64(page, m_pos + fwd)
            if v:
                end = ip + fwd
                nxt = end if v & 0xFF else end + 4 if v & 0xFFFFFFFFFF else end + 8
                fwd += ((v & -v).bit_length() - 1) // 8
                break
            fwd += 8
            if fwd > 12 and ip + fwd >= IP_END:
                nxt = ip + fwd
                break
        if fwd >= 8:
            count["matches extended past 8 bytes"] += 1
        if fwd >= 12:
            count["matches extended past 12 bytes"] += 1
        length, dist, t = back + fwd, ip - m_pos, ip - back - lit
        count["matches"] += 1
        kind = "4" if length == 4 else "5-8" if length <= 8 else "9-16" if length <= 16 else "17+"
        count[f"matches of {kind} bytes"] += 1
        if length == 4 and dist > 2048:
            count["matches of 4 bytes more than 2048 back"] += 1
        run = "0" if t == 0 else "1-3" if t <= 3 else "4-16" if t <= 16 else "17+"
        count[f"matches after {run} literals"] += 1
        m2 = length <= 8 and dist <= 2048
        count["matches in the M2 form" if m2 else "matches in the M3 form"] += 1
        if t:
            size += literal_bytes(t, lit == 0)
        size += 2 if m2 else 3 if length <= 33 else 3 + (length - 33 - 1) // 255 + 1
        rep, lit, ip = dist, ip + fwd, nxt
    if PAGE - lit:
        size += literal_bytes(PAGE - lit, lit == 0)
    return size + 3


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", help="a page file (4 KiB pages)")
    parser.add_argument("--pages", type=int, default=300, help="pages to scan, evenly spaced")
    args = parser.parse_args()
    data = open(args.corpus, "rb").read()
    total = len(data) // PAGE
    pages = min(max(args.pages, 1), total)
    count, sizes = collections.Counter(), []
    for k in range(pages):
        at = (k * total // pages) * PAGE
        page = data[at : at + PAGE]
        if any(page):
            sizes.append(scan(page, count))
    if not sizes:
        sys.exit(f"{args.corpus}: no non-zero page among {pages}")
    n = len(sizes)
    print(f"{args.corpus}: {n} non-zero pages of {pages}; per page:")
    for key in sorted(count):
        print(f"  {count[key] / n:8.1f}  {key}")
    print(f"  {sum(sizes) / n:8.1f}  stream bytes")


if __name__ == "__main__":
    main()
