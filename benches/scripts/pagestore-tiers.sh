#!/usr/bin/env bash
# pagestore beyond RAM on captured pages: recompression of huge and idle pages with
# secondary codecs, writeback to a file (through the page cache and with O_DIRECT), loads
# from the file, and simulate's replay with a backing file.
#
#   pagestore-tiers.sh [OUTFILE]
#
# Builds pagebench (release), captures two python3 heaps into a scratch directory under
# target/ (a disk file system: O_DIRECT needs one), runs every command with its command
# line and a header (CPU, kernel, date) before its output, and removes the scratch directory.
set -euo pipefail

out=${1:-/dev/stdout}
cd "$(dirname "$0")/../.."
cargo build --release -p pagebench >&2
bin=target/release/pagebench
scratch=$(mktemp -d target/pagestore-tiers.XXXXXX)
trap 'rm -rf "$scratch"' EXIT

# A heap of records, dicts and JSON text (what the default run captures).
records='
import random, json, time
random.seed(7)
cities = ["Lisbon", "Oslo", "Kyoto", "Lima", "Cairo", "Perth", "Quito", "Tunis"]
orders = [{"order": n, "customer": "customer-%06d" % random.randrange(40000),
           "city": random.choice(cities), "amount": round(random.uniform(1, 500), 2),
           "items": [random.randrange(1000) for _ in range(random.randrange(1, 5))],
           "paid": n % 3 != 0} for n in range(150000)]
report = json.dumps(orders[:15000], indent=1)
time.sleep(600)
'
# A heap holding what LZ77 leaves raw: hex digests as keys and as a log, base64 of random
# bytes (binary data in JSON), zlib-compressed blobs, random floats.
mixed='
import array, base64, hashlib, json, random, time, zlib
random.seed(7)
index = {hashlib.sha256(b"%d" % i).hexdigest(): i for i in range(80000)}
hexlog = "".join(hashlib.sha512(b"%d" % i).hexdigest() for i in range(40000))
b64 = base64.b64encode(random.randbytes(3000000)).decode()
blobs = [zlib.compress(json.dumps([random.random() for _ in range(60)]).encode(), 6) for _ in range(4000)]
samples = array.array("d", (random.gauss(0.0, 1.0) for _ in range(300000)))
time.sleep(600)
'

run() {
    echo "\$ pagebench $*"
    "$bin" "$@" 2>&1
    echo
}

{
    echo "\$ benches/scripts/pagestore-tiers.sh"
    echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')," \
        "family $(grep -m1 'cpu family' /proc/cpuinfo | cut -d: -f2 | tr -d ' ')" \
        "model $(grep -m1 '^model[[:space:]]*:' /proc/cpuinfo | cut -d: -f2 | tr -d ' ')"
    echo "kernel: $(uname -r)"
    echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "file system of the writeback files: $(df -T target | awk 'NR == 2 { print $2 }')"
    echo
    run capture --settle-ms 1500 -o "$scratch/records.pages" -- python3 -c "$records"
    run capture --settle-ms 1500 -o "$scratch/mixed.pages" -- python3 -c "$mixed"
    pages=("$scratch/records.pages" "$scratch/mixed.pages")
    # zram's defaults as the primary codecs, zstd at zram's level as the secondary; then the
    # strongest level alone (huge pages included); then both in slot order (huge pages zstd
    # could not shrink are marked incompressible and not tried again, zram's rule).
    run store --corpus "${pages[@]}" --codec lzo-rle,lzo --recompress zstd
    run store --corpus "${pages[@]}" --codec lzo-rle --recompress zstd-22 --max-pages 5000
    run store --corpus "${pages[@]}" --codec lzo-rle --recompress zstd,zstd-22 --max-pages 2000
    # Without zstd (no_std users): lzokit's minimum-cost LZO1X, same decoder as the primary.
    run store --corpus "${pages[@]}" --codec lzo-rle --recompress lzo-999
    # Writeback of every page, streams, then pages, through the page cache and O_DIRECT.
    run store --corpus "${pages[@]}" --codec lzo-rle --writeback "$scratch/wb.slots"
    run store --corpus "${pages[@]}" --codec lzo-rle --writeback "$scratch/wb.slots" --direct
    run store --corpus "${pages[@]}" --codec lzo-rle --writeback "$scratch/wb.slots" --direct --write-pages
    run store --corpus "${pages[@]}" --codec lzo-rle --writeback "$scratch/wb.slots" --direct --sync --batch 256
    # The 2001 paper's workloads with idle pages going to a file.
    run simulate --workload mmap002 --ram-mb 16 --writeback "$scratch/sim.slots"
    run simulate --workload mmap002 --ram-mb 16
    # The store's metadata per page beside the kernel's zram (root, zram-control).
    if [ -w /sys/class/zram-control/hot_add ]; then
        run zram --corpus "$scratch/records.pages" --scale captured --codec lzo-rle
    fi
} >"$out"
