#!/usr/bin/env bash
# Captures three corpora of workloads the LZO compressor was not tuned on, then measures the
# LZO codecs against C liblzo2 and C LZ4 on them, back to back and in sweeps.
#   bash benches/scripts/fresh-corpora.sh OUTDIR RESULT.txt
# OUTDIR receives sqlite.pages (an in-memory SQLite database of 300,000 rows with two
# indexes), gcc.pages (GCC's cc1 compiling a generated 2 MB C file at -O2, once it holds 150 MiB)
# and dom.pages (node holding a browser-like heap: benches/scripts/dom-heap.js). Needs
# sqlite3, gcc, node and ptrace rights over the children (root or the same user). When OUTDIR
# already holds all three page files, they are measured again instead of captured anew (the
# same pages before and after a change).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/corpora-lib.sh"
corpora_setup "$@"

if [ -s "$outdir/sqlite.pages" ] && [ -s "$outdir/gcc.pages" ] && [ -s "$outdir/dom.pages" ]; then
    echo "fresh-corpora: measuring the page files already in $outdir" >&2
else
    "$pb" capture -o "$outdir/sqlite.pages" -- sqlite3 \
        -cmd "create table t(id integer primary key, name text, email text, city text, score real, note text);" \
        -cmd "with recursive c(x) as (select 1 union all select x+1 from c where x < 300000) insert into t select x, 'user_' || x, 'user' || x || '@example.org', char(65 + x % 26) || 'ville', (x * 37 % 1000) / 10.0, 'order ' || (x * 7919 % 100003) || ' shipped on day ' || (x % 365) from c;" \
        -cmd "create index ti on t(email);" -cmd "create index tc on t(city, score);" \
        -cmd "pragma cache_size = -200000;" -cmd "select count(*), sum(score) from t where city like 'B%';" \
        -cmd ".system sleep 120" :memory:
    pkill -f "^sleep 120$" || true

    python3 - "$outdir/big.c" <<'PY'
import random, sys
random.seed(7)
with open(sys.argv[1], "w") as f:
    f.write("#include <stdio.h>\n#include <string.h>\n")
    for i in range(6000):
        f.write("struct s%d { int a; double b; char name[%d]; struct s%d *next; };\n" % (i, 8 + i % 24, i))
        f.write("static int f%d(struct s%d *p, int n) { int acc = %d; for (int k = 0; k < n; k++) { acc += p->a * k + (int)p->b; if (acc %% %d == 3) acc ^= 0x%x; p = p->next ? p->next : p; } snprintf(p->name, sizeof p->name, \"v%%d-%d\", acc); return acc + (int)strlen(p->name); }\n" % (i, i, i, 3 + i % 17, random.randrange(1 << 20), i))
    f.write("int main(void) { int t = 0;\n")
    for i in range(0, 6000, 7):
        f.write("  { struct s%d x = {%d, %d.5, \"\", 0}; t += f%d(&x, %d); }\n" % (i, i, i, i, i % 50))
    f.write("  printf(\"%d\\n\", t); return 0; }\n")
PY
    gcc -O2 -c "$outdir/big.c" -o "$outdir/big.o" &
    # Mid-compile on any machine: once cc1 holds 150 MiB (about half its peak), not after a fixed
    # time, which a fast machine outlives.
    cc1=""
    for _ in $(seq 600); do
        cc1=$(pgrep -n -f "cc1 .*big.c" || true)
        rss=$( [ -n "$cc1" ] && awk '/^VmRSS:/ {print $2}' "/proc/$cc1/status" 2>/dev/null || echo 0)
        [ "${rss:-0}" -ge $((150 * 1024)) ] && break
        sleep 0.1
    done
    [ "${rss:-0}" -ge $((150 * 1024)) ] || { echo "fresh-corpora: cc1 never reached 150 MiB" >&2; exit 1; }
    "$pb" capture -o "$outdir/gcc.pages" --pid "$cc1"
    wait

    "$pb" capture -o "$outdir/dom.pages" -- node "$here/dom-heap.js"
fi

corpora_measure fresh-corpora.sh "$result" lzo,lzo-fast,lzo-rle,lzo-kernel,liblzo2,lz4 4000 sqlite gcc dom
