"""Ticks per page through the Python binding next to the Rust call, same pages, same run.

    python boundary.py [--pages N]

The pages are this Python process's own memory (its heap, its code, the interpreter's),
read through /proc/self/mem (Linux). For each codec: the median over pages of each page's
minimum of 5 calls, compress and decompress, measured around the Python call with the
native `_ticks()` (TSC ticks on x86_64, nanoseconds elsewhere) minus the cost of an empty
`_ticks()` pair, and around the Rust call inside the extension (`_rust_ticks`).
"""

import argparse
import os
import sys

from pagecodec import _native, lzo, lzo_rle, wkdm

PAGE = 4096


def own_pages(limit: int) -> "list[bytes]":
    # A heap of Python objects first, as a real workload's.
    heap = [{"id": i, "name": f"object-{i}", "tags": [i, i * 2.5, str(i)]} for i in range(50_000)]
    pages = []
    with open("/proc/self/maps") as maps, open("/proc/self/mem", "rb", buffering=0) as mem:
        regions = []
        for line in maps:
            fields = line.split()
            if fields[1].startswith("r") and not line.rstrip().endswith(("[vvar]", "[vsyscall]", "[vvar_vclock]")):
                start, end = (int(x, 16) for x in fields[0].split("-"))
                regions.append((start, end))
        per_region = max(1, limit // max(1, len(regions)) * 2)
        for start, end in regions:
            step = max(PAGE, (end - start) // per_region // PAGE * PAGE)
            for at in range(start, end, step):
                try:
                    mem.seek(at)
                    data = mem.read(PAGE)
                except OSError:
                    continue
                if len(data) == PAGE and data != bytes(PAGE):
                    pages.append(data)
                if len(pages) >= limit:
                    break
            if len(pages) >= limit:
                break
    del heap
    return pages


def median(xs: "list[int]") -> int:
    return sorted(xs)[len(xs) // 2]


def python_ticks(compress, decompress, pages: "list[bytes]", overhead: int) -> "tuple[int, int]":
    ticks = _native._ticks
    ct, dt = [], []
    for page in pages:
        best_c = best_d = 1 << 62
        for _ in range(5):
            t0 = ticks()
            stream = compress(page)
            t1 = ticks()
            decompress(stream)
            t2 = ticks()
            best_c = min(best_c, t1 - t0)
            best_d = min(best_d, t2 - t1)
        ct.append(best_c - overhead)
        dt.append(best_d - overhead)
    return median(ct), median(dt)


def main(argv: "list[str]") -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pages", type=int, default=2000)
    args = parser.parse_args(argv)
    if not os.path.exists("/proc/self/mem"):
        print("needs /proc/self/mem (Linux)", file=sys.stderr)
        return 1
    pages = own_pages(args.pages)
    blob = b"".join(pages)
    ticks = _native._ticks
    empty = []
    for _ in range(2001):
        t0 = ticks()
        t1 = ticks()
        empty.append(t1 - t0)
    overhead = median(empty)
    unit = "TSC ticks" if os.uname().machine == "x86_64" else "ns"
    print(f"{len(pages)} pages of this process; median {unit} per page, each page's minimum of 5")
    print(f"(an empty _ticks() pair costs {overhead}, subtracted from the Python figures)")
    print(f"{'codec':<8} {'Python call':>16} {'Rust call':>16} {'Python - Rust':>14}")
    for name, module in (("wkdm", wkdm), ("lzo", lzo), ("lzo-rle", lzo_rle)):
        pc, pd = python_ticks(module.compress, module.decompress, pages, overhead)
        _, rc, rd = _native._rust_ticks(name, blob)
        print(f"{name:<8} {f'{pc} / {pd}':>16} {f'{rc} / {rd}':>16} {f'{pc - rc} / {pd - rd}':>14}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
