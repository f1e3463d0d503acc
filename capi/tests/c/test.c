/*
 * The C ABI's test program, linked with libpagecodec.a and run by tests/c_program.rs.
 *
 *   test [PAGES_FILE [VECTORS_DIR]]
 *
 * 1. every codec round-trips real pages (this process's own memory, read through
 *    /proc/self/mem) and generated pages of every class, aligned and not, under every
 *    budget class, into pages pre-filled with 0xFF;
 * 2. every documented error comes back: NULL pointers, short buffers, wrong lengths,
 *    unknown names, bad configurations, each stream error, a full store, missing keys;
 * 3. thousands of random garbage streams and mutations of valid streams per decoder give
 *    a stream error code (page zeroed) or a page, never a crash;
 * 4. the store round-trips thousands of pages from two threads at once, per codec;
 * 5. with VECTORS_DIR (tests/data): the reference streams of XNU, the kernel and liblzo2
 *    decode to their pages, lzo-rle and wkdm write the reference bytes, and every prefix
 *    and single-bit flip of every stream gives a page or a stream error;
 * 6. ticks per page through the C ABI (printed as "ABI ..." lines); with PAGES_FILE, the
 *    real pages used are written there so that the Rust side can time the same pages.
 *
 * Exits 0 when every check passed; prints "N passed, N failed".
 */
#define _GNU_SOURCE
#include "pagecodec.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#else
#include <time.h>
#endif

static unsigned long passed, failed;

#define CHECK(cond, ...)                                                        \
    do {                                                                        \
        if (cond) {                                                             \
            passed++;                                                           \
        } else {                                                                \
            failed++;                                                           \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                \
            fprintf(stderr, __VA_ARGS__);                                       \
            fprintf(stderr, " [last error: %s]\n", pc_last_error());            \
            if (failed > 50) {                                                  \
                fprintf(stderr, "too many failures\n");                         \
                exit(1);                                                        \
            }                                                                   \
        }                                                                       \
    } while (0)

#define EXPECT(call, code)                                                      \
    do {                                                                        \
        pc_status s_ = (call);                                                  \
        CHECK(s_ == (code), "%s returned %d (%s), expected %d (%s)", #call,     \
              (int)s_, pc_strerror(s_), (int)(code), pc_strerror(code));        \
    } while (0)

static uint64_t rng(uint64_t *s) {
    /* xorshift64* */
    uint64_t x = *s ? *s : 0x9E3779B97F4A7C15ull;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1Dull;
}

static uint64_t ticks(void) {
#if defined(__x86_64__)
    unsigned int aux;
    _mm_lfence();
    uint64_t t = __rdtscp(&aux);
    _mm_lfence();
    return t;
#else
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
#endif
}

enum { CLASSES = 10 };
static const char *const class_names[CLASSES] = {
    "zero", "same-u64", "ramp", "fillmem", "sparse", "pointers", "small-ints", "text", "random", "mix"};

static void put64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }
static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }

/* Fills `len` bytes (a multiple of 4096) with a page of class `cls` made from `seed`. */
static void make_page(uint8_t *p, size_t len, int cls, uint64_t seed) {
    uint64_t s = seed * 0x100000001B3ull + (uint64_t)cls + 1;
    size_t i;
    switch (cls) {
    case 0: memset(p, 0, len); break;
    case 1: {
        uint64_t v = rng(&s);
        for (i = 0; i < len; i += 8) put64(p + i, v);
        break;
    }
    case 2: for (i = 0; i < len; i++) p[i] = (uint8_t)i; break;
    case 3: memset(p, (int)(rng(&s) % 200), len); break;
    case 4: {
        memset(p, 0, len);
        int n = 1 + (int)(rng(&s) % 16);
        for (int k = 0; k < n; k++) put32(p + 4 * (rng(&s) % (len / 4)), (uint32_t)rng(&s) | 1);
        break;
    }
    case 5: {
        uint64_t base = 0x00007f3a00000000ull | ((rng(&s) & 0xFFFF) << 16);
        for (i = 0; i < len; i += 8) {
            uint64_t r = rng(&s) % 4;
            put64(p + i, r == 0 ? 0 : r == 1 ? rng(&s) % 100 : base + (rng(&s) & 0xFFF8));
        }
        break;
    }
    case 6: for (i = 0; i < len; i += 4) put32(p + i, (uint32_t)(rng(&s) % 1000)); break;
    case 7: {
        static const char *words[] = {"page ", "memory ", "compressed ", "the ", "swap ", "zram ", "of ", "a "};
        for (i = 0; i < len;) {
            const char *w = words[rng(&s) % 8];
            for (size_t k = 0; w[k] && i < len; k++) p[i++] = (uint8_t)w[k];
        }
        break;
    }
    case 8: for (i = 0; i < len; i += 8) put64(p + i, rng(&s)); break;
    default: {
        for (i = 0; i < len;) {
            size_t run = 64 * (1 + rng(&s) % 16);
            if (run > len - i) run = len - i;
            int sub = (int)(rng(&s) % 9);
            uint8_t tmp[4096];
            make_page(tmp, 4096, sub, rng(&s));
            memcpy(p + i, tmp, run);
            i += run;
        }
        break;
    }
    }
}

static int all_zero(const uint8_t *p, size_t len) {
    for (size_t i = 0; i < len; i++)
        if (p[i]) return 0;
    return 1;
}

static int is_stream_error(pc_status s) {
    return s == PC_ERR_TRUNCATED || s == PC_ERR_CORRUPT || s == PC_ERR_WRONG_LENGTH || s == PC_ERR_TRAILING_INPUT;
}

/* ---------------------------------------------------------------- real pages */

enum { MAX_REAL = 3000 };
static uint8_t *real_pages;
static size_t real_count;

/* Copies up to MAX_REAL pages of this process's own readable memory (its code, libc, heap
 * with some structures put there first, stack), through /proc/self/mem so that an
 * unreadable page is a failed read, not a fault. Keeps one same-filled page in eight. */
static void collect_real_pages(void) {
    /* A heap of small records, strings and pointers, as a C program's heap holds. */
    enum { NODES = 20000 };
    struct node { struct node *next; uint64_t id; char name[24]; double score; } *nodes[NODES];
    for (int i = 0; i < NODES; i++) {
        nodes[i] = malloc(sizeof **nodes);
        nodes[i]->next = i ? nodes[i - 1] : NULL;
        nodes[i]->id = (uint64_t)i * 7;
        snprintf(nodes[i]->name, sizeof nodes[i]->name, "node-%d", i);
        nodes[i]->score = i / 3.0;
    }
    real_pages = malloc((size_t)MAX_REAL * PC_PAGE_SIZE);
    FILE *maps = fopen("/proc/self/maps", "r");
    int mem = open("/proc/self/mem", O_RDONLY);
    if (maps && mem >= 0) {
        char line[512];
        unsigned long same = 0;
        while (fgets(line, sizeof line, maps) && real_count < MAX_REAL) {
            unsigned long start, end;
            char perms[8];
            if (sscanf(line, "%lx-%lx %7s", &start, &end, perms) != 3 || perms[0] != 'r') continue;
            if (strstr(line, "[vvar") || strstr(line, "[vsyscall]")) continue;
            unsigned long step = (end - start) / PC_PAGE_SIZE > 400 ? ((end - start) / PC_PAGE_SIZE / 400) * PC_PAGE_SIZE : PC_PAGE_SIZE;
            for (unsigned long a = start; a < end && real_count < MAX_REAL; a += step) {
                if (a == (unsigned long)(uintptr_t)(real_pages + real_count * PC_PAGE_SIZE)) continue;
                uint8_t *dst = real_pages + real_count * PC_PAGE_SIZE;
                if (pread(mem, dst, PC_PAGE_SIZE, (off_t)a) != PC_PAGE_SIZE) continue;
                int uniform = 1;
                for (int k = 8; k < PC_PAGE_SIZE && uniform; k += 8) uniform = memcmp(dst, dst + k, 8) == 0;
                if (uniform && same++ % 8) continue;
                real_count++;
            }
        }
    }
    if (maps) fclose(maps);
    if (mem >= 0) close(mem);
    for (int i = 0; i < NODES; i++) free(nodes[i]);
    CHECK(real_count >= 200, "only %zu real pages read from this process", real_count);
}

/* ---------------------------------------------------------------- codecs */

static pc_codec *make_codec(const char *name) {
    pc_codec *c = NULL;
    EXPECT(pc_codec_create(name, &c), PC_OK);
    if (!c) exit(1);
    return c;
}

static unsigned long round_trips, refusals;

/* Compresses `page` under the full budget and a sweep of smaller ones, decompresses each
 * stream into a page pre-filled with 0xFF, and checks a stream with a byte more or less. */
static void round_trip(pc_codec *c, const uint8_t *page, uint8_t *out, uint8_t *back, const char *what) {
    size_t ps = pc_codec_page_size(c), max = pc_codec_max_compressed_len(c), n = 12345;
    pc_status s = pc_codec_compress(c, page, ps, out, max, &n);
    if (s == PC_ERR_INCOMPRESSIBLE) {
        /* WKdm's early abort (XNU's rule) refuses pages that would not shrink. */
        CHECK(strncmp(pc_codec_name(c), "wkdm", 4) == 0 && n == 0, "%s refused %s", pc_codec_name(c), what);
        refusals++;
        return;
    }
    CHECK(s == PC_OK && n > 0 && n <= max, "%s compress %s: %d, %zu bytes", pc_codec_name(c), what, (int)s, n);
    memset(back, 0xFF, ps);
    EXPECT(pc_codec_decompress(c, out, n, back, ps), PC_OK);
    CHECK(memcmp(page, back, ps) == 0, "%s round trip of %s", pc_codec_name(c), what);
    round_trips++;
    /* A byte more or a byte less never gives a page (a byte more is trailing input, or a
     * truncated entry in WKdm's sparse form). */
    out[n] = 0;
    s = pc_codec_decompress(c, out, n + 1, back, ps);
    CHECK(is_stream_error(s) && all_zero(back, ps), "%s: %s plus a byte gave %d", pc_codec_name(c), what, (int)s);
    s = pc_codec_decompress(c, out, n - 1, back, ps);
    CHECK(is_stream_error(s) && all_zero(back, ps), "%s: prefix of %s gave %d", pc_codec_name(c), what, (int)s);
    /* Smaller budgets: a stream that fits, or a refusal; never a byte past the budget. */
    size_t full = n;
    for (size_t budget = 0; budget < full + 8; budget += 1 + full / 5) {
        memset(out, 0xA5, max + 16);
        s = pc_codec_compress(c, page, ps, out, budget, &n);
        CHECK((s == PC_OK && n <= budget) || (s == PC_ERR_INCOMPRESSIBLE && n == 0), "budget %zu: %d %zu", budget, (int)s, n);
        int canary = 1;
        for (size_t k = budget; k < max + 16; k++) canary &= out[k] == 0xA5;
        CHECK(canary, "%s wrote past a budget of %zu", pc_codec_name(c), budget);
        if (s == PC_OK) {
            EXPECT(pc_codec_decompress(c, out, n, back, ps), PC_OK);
            CHECK(memcmp(page, back, ps) == 0, "round trip under budget %zu", budget);
        }
    }
}

static void test_codec_round_trips(const char *name) {
    pc_codec *c = make_codec(name);
    size_t ps = pc_codec_page_size(c), max = pc_codec_max_compressed_len(c);
    uint8_t *page = aligned_alloc(64, ps + 64), *back = aligned_alloc(64, ps + 64);
    uint8_t *out = malloc(max + 16);
    unsigned long before = round_trips;
    for (int misalign = 0; misalign <= 3; misalign += 3) {
        for (int cls = 0; cls < CLASSES; cls++) {
            for (uint64_t seed = 0; seed < 6; seed++) {
                char what[64];
                snprintf(what, sizeof what, "%s page %llu", class_names[cls], (unsigned long long)seed);
                make_page(page + misalign, ps, cls, seed);
                round_trip(c, page + misalign, out, back + misalign, what);
            }
        }
        /* Real pages, four at a time for a 16 KiB codec. */
        for (size_t i = 0; i + ps / PC_PAGE_SIZE <= real_count; i += ps / PC_PAGE_SIZE * (misalign ? 7 : 1)) {
            memcpy(page + misalign, real_pages + i * PC_PAGE_SIZE, ps);
            round_trip(c, page + misalign, out, back + misalign, "a real page");
        }
    }
    printf("codec %-8s page %5zu, largest stream %5zu: %lu round trips\n", name, ps, max, round_trips - before);
    free(page);
    free(back);
    free(out);
    pc_codec_destroy(c);
}

/* ---------------------------------------------------------------- hostile input */

static unsigned long hostile_total;

/* Decodes `n` random streams and `n` mutations of valid streams with codec `name`. */
static void test_hostile_streams(const char *name, int n) {
    pc_codec *c = make_codec(name);
    size_t ps = pc_codec_page_size(c), max = pc_codec_max_compressed_len(c);
    uint8_t *page = aligned_alloc(64, ps), *back = aligned_alloc(64, ps), *buf = malloc(2 * max + 64);
    uint64_t s = 0xC0FFEEull + ps;
    unsigned long verdicts[16] = {0};
    for (int i = 0; i < 2 * n; i++) {
        size_t len;
        if (i < n) {
            /* Random bytes; half with small values that look like headers and opcodes; a
             * quarter starting as a plausible WKdm header or LZO version byte. */
            len = (size_t)(rng(&s) % (i % 3 ? 64 : max + 32));
            for (size_t k = 0; k < len; k++) buf[k] = (uint8_t)(i % 2 ? rng(&s) % 24 : rng(&s));
            if (i % 4 == 1 && len >= 12) {
                uint32_t t = (uint32_t)(ps / 64);
                put32(buf, 3 + t + (uint32_t)(rng(&s) % 64));
                put32(buf + 4, 3 + t + (uint32_t)(rng(&s) % 600));
                put32(buf + 8, (uint32_t)(len / 4));
            }
            if (i % 4 == 3 && len >= 2) buf[0] = 0x11 + (uint8_t)(rng(&s) % 2 * 0x6F);
        } else {
            /* A valid stream of some page, then flipped bits, overwritten bytes, cut or
             * lengthened. */
            make_page(page, ps, (int)(rng(&s) % CLASSES), rng(&s));
            if (pc_codec_compress(c, page, ps, buf, max, &len) != PC_OK) continue;
            int edits = 1 + (int)(rng(&s) % 4);
            for (int e = 0; e < edits && len > 0; e++) {
                switch (rng(&s) % 4) {
                case 0: buf[rng(&s) % len] ^= (uint8_t)(1u << (rng(&s) % 8)); break;
                case 1: buf[rng(&s) % len] = (uint8_t)rng(&s); break;
                case 2: len = (size_t)(rng(&s) % len); break;
                default: {
                    size_t extra = (size_t)(rng(&s) % 16);
                    for (size_t k = 0; k < extra; k++) buf[len + k] = (uint8_t)rng(&s);
                    len += extra;
                }
                }
            }
        }
        memset(back, i % 2 ? 0xFF : 0x00, ps);
        pc_status st = pc_codec_decompress(c, buf, len, back, ps);
        CHECK(st == PC_OK || is_stream_error(st), "%s: hostile input %d gave %d", name, i, (int)st);
        if (st != PC_OK) CHECK(all_zero(back, ps), "%s: page not zeroed after error on input %d", name, i);
        verdicts[-st & 15]++;
        hostile_total++;
    }
    printf("hostile %-8s %d inputs: ok %lu, truncated %lu, corrupt %lu, wrong length %lu, trailing %lu\n", name,
           2 * n, verdicts[0], verdicts[6], verdicts[7], verdicts[8], verdicts[9]);
    free(page);
    free(back);
    free(buf);
    pc_codec_destroy(c);
}

/* ---------------------------------------------------------------- reference vectors */

static size_t read_file(const char *dir, const char *name, const char *ext, uint8_t *buf, size_t cap) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s%s", dir, name, ext);
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL, "cannot open %s", path);
    if (!f) return 0;
    size_t n = fread(buf, 1, cap, f);
    fclose(f);
    return n;
}

static unsigned long vector_mutations;

/* Every prefix and every single-bit flip of `stream` through `codec`: a page, or a stream
 * error with the page zeroed, whatever the page held before. */
static void mutate_all(pc_codec *c, const uint8_t *stream, size_t len) {
    static uint8_t buf[8192];
    static _Alignas(64) uint8_t page[PC_PAGE_SIZE];
    for (size_t cut = 0; cut < len; cut++) {
        memset(page, cut % 2 ? 0xFF : 0, PC_PAGE_SIZE);
        pc_status s = pc_codec_decompress(c, stream, cut, page, PC_PAGE_SIZE);
        CHECK(is_stream_error(s) || s == PC_OK, "prefix %zu gave %d", cut, (int)s);
        if (s != PC_OK) CHECK(all_zero(page, PC_PAGE_SIZE), "page not zeroed, prefix %zu", cut);
        vector_mutations++;
    }
    memcpy(buf, stream, len);
    for (size_t bit = 0; bit < 8 * len; bit++) {
        buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        memset(page, bit % 2 ? 0xFF : 0, PC_PAGE_SIZE);
        pc_status s = pc_codec_decompress(c, buf, len, page, PC_PAGE_SIZE);
        CHECK(is_stream_error(s) || s == PC_OK, "bit flip %zu gave %d", bit, (int)s);
        if (s != PC_OK) CHECK(all_zero(page, PC_PAGE_SIZE), "page not zeroed, flip %zu", bit);
        buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        vector_mutations++;
    }
}

static void test_vectors(const char *dir) {
    DIR *d = opendir(dir);
    CHECK(d != NULL, "cannot open %s", dir);
    if (!d) return;
    pc_codec *wk = make_codec("wkdm"), *lzo = make_codec("lzo"), *rle = make_codec("lzo-rle");
    static _Alignas(64) uint8_t page[PC_PAGE_SIZE], back[PC_PAGE_SIZE];
    static uint8_t stream[8192], out[8192];
    int cases = 0, streams = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t nl = strlen(e->d_name);
        if (nl < 6 || strcmp(e->d_name + nl - 5, ".page") != 0) continue;
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)(nl - 5), e->d_name);
        CHECK(read_file(dir, name, ".page", page, sizeof page) == PC_PAGE_SIZE, "%s.page", name);
        cases++;
        static const struct { const char *ext; int wkdm; } kinds[] = {
            {".xnu-wkdm", 1}, {".lzo1x", 0}, {".lzo-rle", 0}, {".lzo999", 0}};
        for (int k = 0; k < 4; k++) {
            size_t n = read_file(dir, name, kinds[k].ext, stream, sizeof stream);
            CHECK(n > 0, "%s%s is empty", name, kinds[k].ext);
            streams++;
            pc_codec *decoders[2] = {kinds[k].wkdm ? wk : lzo, kinds[k].wkdm ? wk : rle};
            for (int i = 0; i < 2; i++) {
                memset(back, 0xFF, sizeof back);
                EXPECT(pc_codec_decompress(decoders[i], stream, n, back, PC_PAGE_SIZE), PC_OK);
                CHECK(memcmp(back, page, PC_PAGE_SIZE) == 0, "%s%s decodes to its page", name, kinds[k].ext);
            }
            mutate_all(decoders[0], stream, n);
            /* The compressors that write a reference's exact bytes. */
            pc_codec *writer = kinds[k].wkdm ? wk : strcmp(kinds[k].ext, ".lzo-rle") == 0 ? rle : NULL;
            if (writer) {
                size_t m = 0;
                EXPECT(pc_codec_compress(writer, page, PC_PAGE_SIZE, out, sizeof out, &m), PC_OK);
                CHECK(m == n && memcmp(out, stream, n) == 0, "%s writes %s%s's bytes (%zu vs %zu)",
                      pc_codec_name(writer), name, kinds[k].ext, m, n);
            }
        }
    }
    closedir(d);
    printf("vectors: %d cases, %d reference streams decoded; %lu prefixes and bit flips of them\n", cases, streams,
           vector_mutations);
    hostile_total += vector_mutations;
    pc_codec_destroy(wk);
    pc_codec_destroy(lzo);
    pc_codec_destroy(rle);
}

/* ---------------------------------------------------------------- documented errors */

static void test_errors(void) {
    pc_codec *c = NULL, *keep = (pc_codec *)0x1;
    static _Alignas(64) uint8_t page[PC_PAGE_SIZE + 64], out[8192];
    size_t n = 7;

    EXPECT(pc_codec_create(NULL, &c), PC_ERR_NULL_POINTER);
    CHECK(strstr(pc_last_error(), "name") != NULL, "message names the argument: %s", pc_last_error());
    EXPECT(pc_codec_create("wkdm", NULL), PC_ERR_NULL_POINTER);
    EXPECT(pc_codec_create("zlib", &keep), PC_ERR_UNKNOWN_CODEC);
    CHECK(keep == (pc_codec *)0x1, "*codec changed on error");
    EXPECT(pc_codec_create("", &c), PC_ERR_UNKNOWN_CODEC);
    EXPECT(pc_codec_create("WKDM", &c), PC_ERR_UNKNOWN_CODEC);
    CHECK(pc_codec_name(NULL) == NULL && pc_codec_page_size(NULL) == 0 && pc_codec_max_compressed_len(NULL) == 0,
          "NULL codec queries");
    pc_codec_destroy(NULL);

    c = make_codec("wkdm");
    make_page(page, PC_PAGE_SIZE, 5, 1);
    EXPECT(pc_codec_compress(NULL, page, PC_PAGE_SIZE, out, sizeof out, &n), PC_ERR_NULL_POINTER);
    EXPECT(pc_codec_compress(c, NULL, PC_PAGE_SIZE, out, sizeof out, &n), PC_ERR_NULL_POINTER);
    EXPECT(pc_codec_compress(c, page, PC_PAGE_SIZE, NULL, sizeof out, &n), PC_ERR_NULL_POINTER);
    EXPECT(pc_codec_compress(c, page, PC_PAGE_SIZE, out, sizeof out, NULL), PC_ERR_NULL_POINTER);
    EXPECT(pc_codec_compress(c, page, PC_PAGE_SIZE - 1, out, sizeof out, &n), PC_ERR_PAGE_SIZE);
    EXPECT(pc_codec_compress(c, page, PC_PAGE_SIZE + 1, out, sizeof out, &n), PC_ERR_PAGE_SIZE);
    EXPECT(pc_codec_compress(c, page, 0, out, sizeof out, &n), PC_ERR_PAGE_SIZE);
    EXPECT(pc_codec_compress(c, page, PC_PAGE_SIZE_16K, out, sizeof out, &n), PC_ERR_PAGE_SIZE);
    EXPECT(pc_codec_compress(c, page, SIZE_MAX, out, sizeof out, &n), PC_ERR_INVALID_ARGUMENT);
    /* Short output buffers: the budget. */
    EXPECT(pc_codec_compress(c, page, PC_PAGE_SIZE, out, 0, &n), PC_ERR_INCOMPRESSIBLE);
    CHECK(n == 0, "out_len is 0 after a refusal");
    memset(page, 0, PC_PAGE_SIZE);
    EXPECT(pc_codec_compress(c, page, PC_PAGE_SIZE, out, 3, &n), PC_ERR_INCOMPRESSIBLE);
    EXPECT(pc_codec_compress(c, page, PC_PAGE_SIZE, out, 4, &n), PC_OK);
    CHECK(n == 4 && memcmp(out, "\x21\x43\0\0", 4) == 0, "the zero page is the empty sparse form");

    /* Decompression arguments: nothing is written on an argument error. */
    memset(page, 0x77, PC_PAGE_SIZE);
    EXPECT(pc_codec_decompress(NULL, out, n, page, PC_PAGE_SIZE), PC_ERR_NULL_POINTER);
    EXPECT(pc_codec_decompress(c, NULL, n, page, PC_PAGE_SIZE), PC_ERR_NULL_POINTER);
    EXPECT(pc_codec_decompress(c, out, n, NULL, PC_PAGE_SIZE), PC_ERR_NULL_POINTER);
    EXPECT(pc_codec_decompress(c, out, n, page, PC_PAGE_SIZE - 4), PC_ERR_PAGE_SIZE);
    EXPECT(pc_codec_decompress(c, out, n, page, 0), PC_ERR_PAGE_SIZE);
    CHECK(page[0] == 0x77 && page[PC_PAGE_SIZE - 1] == 0x77, "page written on an argument error");
    /* Each stream error. */
    EXPECT(pc_codec_decompress(c, out, 0, page, PC_PAGE_SIZE), PC_ERR_TRUNCATED);
    EXPECT(pc_codec_decompress(c, out, 2, page, PC_PAGE_SIZE), PC_ERR_TRUNCATED);
    CHECK(all_zero(page, PC_PAGE_SIZE), "page zeroed after a stream error");
    static const uint8_t disordered[12] = {1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    EXPECT(pc_codec_decompress(c, disordered, sizeof disordered, page, PC_PAGE_SIZE), PC_ERR_CORRUPT);
    CHECK(strstr(pc_last_error(), "corrupt") != NULL, "the decoder's reason: %s", pc_last_error());
    printf("wkdm reason for a bad header: %s\n", pc_last_error());
    out[4] = 0;
    EXPECT(pc_codec_decompress(c, out, 5, page, PC_PAGE_SIZE), PC_ERR_TRUNCATED); /* sparse: 1 byte of an entry */
    static const uint8_t sparse_unaligned[10] = {0x21, 0x43, 0, 0, 1, 0, 0, 0, 3, 0};
    EXPECT(pc_codec_decompress(c, sparse_unaligned, 10, page, PC_PAGE_SIZE), PC_ERR_CORRUPT);
    pc_codec_destroy(c);

    c = make_codec("lzo");
    /* A literal run of one byte and the end marker: a valid stream of 1 byte, not a page. */
    static const uint8_t one_byte[] = {0x12, 'A', 0x11, 0x00, 0x00};
    EXPECT(pc_codec_decompress(c, one_byte, sizeof one_byte, page, PC_PAGE_SIZE), PC_ERR_WRONG_LENGTH);
    static const uint8_t end_only[] = {0x11, 0x00};
    EXPECT(pc_codec_decompress(c, end_only, sizeof end_only, page, PC_PAGE_SIZE), PC_ERR_TRUNCATED);
    CHECK(strstr(pc_last_error(), "liblzo2 code -4") != NULL, "lzo reason with its code: %s", pc_last_error());
    static const uint8_t behind[] = {0x12, 'A', 0x20, 0xFF, 0xFF, 0x11, 0x00, 0x00};
    pc_status s = pc_codec_decompress(c, behind, sizeof behind, page, PC_PAGE_SIZE);
    CHECK(is_stream_error(s), "a match before the start: %d", (int)s);
    printf("lzo reason for a bad match: %s\n", pc_last_error());
    make_page(page, PC_PAGE_SIZE, 7, 3);
    EXPECT(pc_codec_compress(c, page, PC_PAGE_SIZE, out, sizeof out, &n), PC_OK);
    EXPECT(pc_codec_decompress(c, out, n + 1, page, PC_PAGE_SIZE), PC_ERR_TRAILING_INPUT);
    pc_codec_destroy(c);

    c = make_codec("wkdm16k");
    EXPECT(pc_codec_compress(c, page, PC_PAGE_SIZE, out, sizeof out, &n), PC_ERR_PAGE_SIZE);
    EXPECT(pc_codec_decompress(c, out, 4, page, PC_PAGE_SIZE), PC_ERR_PAGE_SIZE);
    pc_codec_destroy(c);

    /* Status descriptions: one per code, distinct; anything else is unknown. */
    for (int a = 0; a >= PC_ERR_PANIC; a--) {
        CHECK(strcmp(pc_strerror(a), "unknown status code") != 0, "code %d has a description", a);
        for (int b = a - 1; b >= PC_ERR_PANIC; b--) CHECK(strcmp(pc_strerror(a), pc_strerror(b)) != 0, "%d vs %d", a, b);
    }
    CHECK(strcmp(pc_strerror(1), "unknown status code") == 0 && strcmp(pc_strerror(-14), "unknown status code") == 0,
          "unknown codes");

    /* The store. */
    pc_store *st = NULL, *keep_store = (pc_store *)0x1;
    pc_store_config cfg;
    pc_store_config_default(&cfg);
    pc_store_config_default(NULL);
    CHECK(cfg.shards == 1 && cfg.same_filled == 1 && cfg.huge_threshold == 3072 && cfg.timing == 0 && cfg.mem_limit == 0,
          "defaults");
    EXPECT(pc_store_create(NULL, &cfg, &st), PC_ERR_NULL_POINTER);
    EXPECT(pc_store_create("wkdm", &cfg, NULL), PC_ERR_NULL_POINTER);
    EXPECT(pc_store_create("gzip", &cfg, &keep_store), PC_ERR_UNKNOWN_CODEC);
    EXPECT(pc_store_create("wkdm16k", &cfg, &keep_store), PC_ERR_INVALID_ARGUMENT);
    CHECK(keep_store == (pc_store *)0x1, "*store changed on error");
    pc_store_config bad = cfg;
    bad.shards = 0;
    EXPECT(pc_store_create("wkdm", &bad, &st), PC_ERR_INVALID_ARGUMENT);
    bad.shards = 65537;
    EXPECT(pc_store_create("wkdm", &bad, &st), PC_ERR_INVALID_ARGUMENT);
    bad = cfg;
    bad.huge_threshold = 0;
    EXPECT(pc_store_create("wkdm", &bad, &st), PC_ERR_INVALID_ARGUMENT);
    bad.huge_threshold = 4097;
    EXPECT(pc_store_create("wkdm", &bad, &st), PC_ERR_INVALID_ARGUMENT);
    pc_store_destroy(NULL);

    EXPECT(pc_store_create("lzo-rle", NULL, &st), PC_OK);
    make_page(page, PC_PAGE_SIZE, 6, 9);
    EXPECT(pc_store_store(NULL, 1, page, PC_PAGE_SIZE), PC_ERR_NULL_POINTER);
    EXPECT(pc_store_store(st, 1, NULL, PC_PAGE_SIZE), PC_ERR_NULL_POINTER);
    EXPECT(pc_store_store(st, 1, page, PC_PAGE_SIZE - 1), PC_ERR_PAGE_SIZE);
    EXPECT(pc_store_store(st, 1, page, PC_PAGE_SIZE_16K), PC_ERR_PAGE_SIZE);
    EXPECT(pc_store_load(st, 1, page, PC_PAGE_SIZE), PC_ERR_NOT_FOUND);
    EXPECT(pc_store_store(st, 1, page + 1, PC_PAGE_SIZE), PC_OK); /* unaligned is fine */
    EXPECT(pc_store_load(NULL, 1, out, PC_PAGE_SIZE), PC_ERR_NULL_POINTER);
    EXPECT(pc_store_load(st, 1, NULL, PC_PAGE_SIZE), PC_ERR_NULL_POINTER);
    EXPECT(pc_store_load(st, 1, out, 100), PC_ERR_PAGE_SIZE);
    EXPECT(pc_store_load(st, 1, out + 5, PC_PAGE_SIZE), PC_OK);
    CHECK(memcmp(out + 5, page + 1, PC_PAGE_SIZE) == 0, "unaligned store and load");
    EXPECT(pc_store_remove(NULL, 1), PC_ERR_NULL_POINTER);
    EXPECT(pc_store_remove(st, 2), PC_ERR_NOT_FOUND);
    EXPECT(pc_store_remove(st, 1), PC_OK);
    EXPECT(pc_store_remove(st, 1), PC_ERR_NOT_FOUND);
    pc_store_stats stats;
    EXPECT(pc_store_get_stats(NULL, &stats), PC_ERR_NULL_POINTER);
    EXPECT(pc_store_get_stats(st, NULL), PC_ERR_NULL_POINTER);
    EXPECT(pc_store_compact(NULL, NULL), PC_ERR_NULL_POINTER);
    EXPECT(pc_store_compact(st, NULL), PC_OK);
    pc_store_destroy(st);

    /* A memory limit below one chunk: the first stream that needs memory is refused. */
    cfg.mem_limit = 1;
    EXPECT(pc_store_create("wkdm", &cfg, &st), PC_OK);
    memset(page, 0, PC_PAGE_SIZE);
    EXPECT(pc_store_store(st, 1, page, PC_PAGE_SIZE), PC_OK); /* same-filled: no memory */
    make_page(page, PC_PAGE_SIZE, 5, 2);
    EXPECT(pc_store_store(st, 1, page, PC_PAGE_SIZE), PC_ERR_FULL);
    EXPECT(pc_store_load(st, 1, out, PC_PAGE_SIZE), PC_OK);
    CHECK(all_zero(out, PC_PAGE_SIZE), "the old page stays after PC_ERR_FULL");
    EXPECT(pc_store_get_stats(st, &stats), PC_OK);
    CHECK(stats.pages == 1 && stats.same_pages == 1 && stats.mem_used_total == 0 && stats.mem_limit == 1, "stats after FULL");
    pc_store_destroy(st);
}

/* ---------------------------------------------------------------- the store, two threads */

enum { PER_THREAD = 3000, THREADS = 2 };

struct worker {
    pc_store *store;
    int id;
    unsigned long ops, errors, live;
};

/* The page for `key` at `version`: a class page stamped with key and version (same-filled
 * classes stay unstamped, so the store keeps them as values). */
static void keyed_page(uint8_t *p, uint64_t key, uint64_t version) {
    int cls = (int)(key % CLASSES);
    make_page(p, PC_PAGE_SIZE, cls, key * 31 + version);
    if (cls != 0 && cls != 1 && cls != 3) {
        put64(p + 64, key);
        put64(p + 72, version);
    }
}

static void *worker_main(void *arg) {
    struct worker *w = arg;
    static _Thread_local _Alignas(64) uint8_t page[PC_PAGE_SIZE], back[PC_PAGE_SIZE];
    uint64_t s = 77 + (uint64_t)w->id;
#define KEY(i) ((uint64_t)(i) * THREADS + (uint64_t)w->id)
    for (int i = 0; i < PER_THREAD; i++) {
        keyed_page(page, KEY(i), 0);
        w->errors += pc_store_store(w->store, KEY(i), page, PC_PAGE_SIZE) != PC_OK;
        w->ops++;
        /* Read a key of the other thread: absent, or a page stamped with its key. */
        uint64_t other = (rng(&s) % PER_THREAD) * THREADS + (uint64_t)(1 - w->id);
        pc_status st = pc_store_load(w->store, other, back, PC_PAGE_SIZE);
        if (st == PC_OK && other % CLASSES != 0 && other % CLASSES != 1 && other % CLASSES != 3) {
            uint64_t k;
            memcpy(&k, back + 64, 8);
            w->errors += k != other;
        } else {
            w->errors += st != PC_OK && st != PC_ERR_NOT_FOUND;
        }
        w->ops++;
    }
    for (int i = 0; i < PER_THREAD; i++) {
        if (i % 3 == 0) {
            keyed_page(page, KEY(i), 1);
            w->errors += pc_store_store(w->store, KEY(i), page, PC_PAGE_SIZE) != PC_OK;
            w->ops++;
        }
        if (i % 7 == 0) {
            w->errors += pc_store_remove(w->store, KEY(i)) != PC_OK;
            w->ops++;
        }
        if (i % 500 == 0) {
            w->errors += pc_store_compact(w->store, NULL) != PC_OK;
            w->ops++;
        }
    }
    for (int i = 0; i < PER_THREAD; i++) {
        pc_status st = pc_store_load(w->store, KEY(i), back, PC_PAGE_SIZE);
        w->ops++;
        if (i % 7 == 0) {
            w->errors += st != PC_ERR_NOT_FOUND;
            continue;
        }
        keyed_page(page, KEY(i), i % 3 == 0);
        w->errors += st != PC_OK || memcmp(page, back, PC_PAGE_SIZE) != 0;
        w->live++;
    }
#undef KEY
    return NULL;
}

static void test_store_threads(const char *codec, uint32_t shards) {
    pc_store_config cfg;
    pc_store_config_default(&cfg);
    cfg.shards = shards;
    cfg.timing = 1; /* the statistics' timings are checked below */
    pc_store *st = NULL;
    EXPECT(pc_store_create(codec, &cfg, &st), PC_OK);
    struct worker w[THREADS];
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i] = (struct worker){.store = st, .id = i};
        CHECK(pthread_create(&t[i], NULL, worker_main, &w[i]) == 0, "pthread_create");
    }
    unsigned long ops = 0, live = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        CHECK(w[i].errors == 0, "%s: thread %d saw %lu errors", codec, i, w[i].errors);
        ops += w[i].ops;
        live += w[i].live;
    }
    pc_compact_report report;
    EXPECT(pc_store_compact(st, &report), PC_OK);
    pc_store_stats stats;
    EXPECT(pc_store_get_stats(st, &stats), PC_OK);
    CHECK(stats.pages == live && stats.orig_data_size == live * PC_PAGE_SIZE, "%s: %llu pages, expected %lu", codec,
          (unsigned long long)stats.pages, live);
    CHECK(strcmp(stats.codec, codec) == 0 && stats.shards == shards, "stats name %s, shards %u", stats.codec, stats.shards);
    CHECK(stats.stores == (unsigned long)THREADS * (PER_THREAD + (PER_THREAD + 2) / 3), "%llu stores",
          (unsigned long long)stats.stores);
    CHECK(stats.same_pages > 0 && stats.compr_data_size > 0 && stats.compr_data_size < stats.orig_data_size &&
              stats.mem_used_total >= stats.compr_data_size && stats.mem_used_max >= stats.mem_used_total,
          "mm_stat");
    CHECK(stats.compressed_size.count > 0 && stats.compressed_size.median > 0 && stats.ratio > 1.0, "codec table");
    CHECK(stats.time_unit != PC_TIME_NONE && stats.compress_time.count > 0, "timings");
    /* Every page loads after compaction. */
    static _Alignas(64) uint8_t page[PC_PAGE_SIZE], back[PC_PAGE_SIZE];
    unsigned long bad = 0;
    for (int id = 0; id < THREADS; id++)
        for (int i = 0; i < PER_THREAD; i++) {
            uint64_t key = (uint64_t)i * THREADS + (uint64_t)id;
            pc_status s = pc_store_load(st, key, back, PC_PAGE_SIZE);
            keyed_page(page, key, i % 3 == 0);
            bad += i % 7 == 0 ? s != PC_ERR_NOT_FOUND : (s != PC_OK || memcmp(page, back, PC_PAGE_SIZE) != 0);
        }
    CHECK(bad == 0, "%lu pages wrong after compaction", bad);
    printf("store %-8s %u shard(s): %d threads, %lu operations, %llu pages, ratio %.2fx, same %llu, huge %llu, "
           "compacted %llu objects\n",
           codec, shards, THREADS, ops, (unsigned long long)stats.pages, stats.ratio,
           (unsigned long long)stats.same_pages, (unsigned long long)stats.huge_pages,
           (unsigned long long)report.objects_moved);
    pc_store_destroy(st);
}

/* ---------------------------------------------------------------- ticks per page */

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Median over the real pages of each page's minimum of 5 calls, compress and decompress. */
static void time_codec(const char *name) {
    pc_codec *c = make_codec(name);
    size_t max = pc_codec_max_compressed_len(c);
    uint8_t *out = malloc(max), *back = aligned_alloc(64, PC_PAGE_SIZE), *page = aligned_alloc(64, PC_PAGE_SIZE);
    uint64_t *ct = malloc(real_count * 8), *dt = malloc(real_count * 8);
    size_t m = 0;
    for (size_t i = 0; i < real_count; i++) {
        memcpy(page, real_pages + i * PC_PAGE_SIZE, PC_PAGE_SIZE);
        uint64_t best_c = UINT64_MAX, best_d = UINT64_MAX;
        size_t n = 0;
        int ok = 1;
        for (int r = 0; r < 5 && ok; r++) {
            uint64_t t0 = ticks();
            ok = pc_codec_compress(c, page, PC_PAGE_SIZE, out, max, &n) == PC_OK;
            uint64_t t1 = ticks();
            if (!ok) break;
            ok = pc_codec_decompress(c, out, n, back, PC_PAGE_SIZE) == PC_OK;
            uint64_t t2 = ticks();
            if (t1 - t0 < best_c) best_c = t1 - t0;
            if (t2 - t1 < best_d) best_d = t2 - t1;
        }
        if (!ok) continue; /* refused pages are left out, as on the Rust side */
        ct[m] = best_c;
        dt[m] = best_d;
        m++;
    }
    qsort(ct, m, 8, cmp_u64);
    qsort(dt, m, 8, cmp_u64);
    if (m) printf("ABI %s pages %zu compress %llu decompress %llu\n", name, m, (unsigned long long)ct[m / 2],
                  (unsigned long long)dt[m / 2]);
    free(out);
    free(back);
    free(page);
    free(ct);
    free(dt);
    pc_codec_destroy(c);
}

int main(int argc, char **argv) {
    CHECK(strcmp(pc_version(), PC_VERSION) == 0, "library %s, header %s", pc_version(), PC_VERSION);
    size_t count = pc_codec_count();
    CHECK(count >= 5, "%zu codecs", count);
    CHECK(pc_codec_name_at(count) == NULL, "NULL past the end");
    static const char *const expected[] = {"wkdm", "wkdm16k", "lzo", "lzo-fast", "lzo-rle"};
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++) {
        int found = 0;
        for (size_t k = 0; k < count; k++) found |= strcmp(pc_codec_name_at(k), expected[i]) == 0;
        CHECK(found, "codec %s is listed", expected[i]);
    }

    collect_real_pages();
    if (argc > 1) {
        FILE *f = fopen(argv[1], "wb");
        CHECK(f && fwrite(real_pages, PC_PAGE_SIZE, real_count, f) == real_count, "writing %s", argv[1]);
        if (f) fclose(f);
    }
    printf("%zu real pages of this process\n", real_count);

    for (size_t i = 0; i < count; i++) test_codec_round_trips(pc_codec_name_at(i));
    printf("%lu round trips, %lu pages refused by WKdm's early abort\n", round_trips, refusals);

    test_errors();

    for (size_t i = 0; i < count; i++) test_hostile_streams(pc_codec_name_at(i), 3000);
    if (argc > 2) test_vectors(argv[2]);
    printf("%lu hostile inputs decoded through the C ABI\n", hostile_total);

    /* Every 4 KiB codec (the LZ4 and zstd adapters too, where built) behind the store. */
    for (size_t i = 0; i < count; i++)
        if (strcmp(pc_codec_name_at(i), "wkdm16k") != 0) test_store_threads(pc_codec_name_at(i), i == 0 ? 1 : 4);

    for (size_t i = 0; i < count; i++)
        if (strcmp(pc_codec_name_at(i), "wkdm16k") != 0) time_codec(pc_codec_name_at(i));

    free(real_pages);
    printf("%lu passed, %lu failed\n", passed, failed);
    return failed ? 1 : 0;
}
