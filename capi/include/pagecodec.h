/*
 * pagecodec.h: the C ABI of the page-compression crate family (libpagecodec).
 *
 * Page compressors (WKdm, byte-exact with Apple XNU; LZO1X-1 and LZO-RLE, byte-exact with
 * the Linux kernel) and a compressed page store (zram as a library), from Rust, for C.
 * Link with -lpagecodec (shared) or libpagecodec.a plus -lpthread -ldl -lm (static).
 *
 * Conventions
 * - Every symbol starts with pc_ (types pc_, constants PC_).
 * - Calls that can fail return a pc_status: PC_OK (0) or a negative code. A failing call
 *   leaves a message for its thread in pc_last_error() (a bad stream: the decoder's reason).
 * - NULL pointers, short buffers and wrong lengths are errors, never crashes; no panic or
 *   exception crosses the boundary (PC_ERR_PANIC would report a caught one).
 * - Ownership: objects made by pc_codec_create / pc_store_create belong to the caller until
 *   the matching destroy call; every string returned is static (never free it) except
 *   pc_last_error's, which lives until the next pc_ call on the same thread. The library
 *   keeps no pointer to any caller buffer after a call returns.
 * - Thread-safety is stated on every function. In short: free functions and pc_store_*
 *   (except destroy) are thread-safe; a pc_codec is used by one thread at a time.
 *
 * The Rust source (capi/src) is the implementation; a test checks that this header
 * declares exactly its functions, codes and struct fields.
 */
#ifndef PAGECODEC_H
#define PAGECODEC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version pc_version() returns for this header. */
#define PC_VERSION "0.1.0"

/* Bytes in a page: 4 KiB for every codec and the store, 16 KiB for "wkdm16k". */
#define PC_PAGE_SIZE 4096
#define PC_PAGE_SIZE_16K 16384

/* ---------------------------------------------------------------- status codes */

typedef enum pc_status {
    PC_OK = 0,                      /* success */
    PC_ERR_NULL_POINTER = -1,       /* a pointer argument that must not be NULL was NULL */
    PC_ERR_UNKNOWN_CODEC = -2,      /* no codec has this name */
    PC_ERR_PAGE_SIZE = -3,          /* the page buffer's length is not the codec's page size */
    PC_ERR_INVALID_ARGUMENT = -4,   /* an argument is out of its documented range */
    PC_ERR_INCOMPRESSIBLE = -5,     /* the stream does not fit in the budget: store the page raw */
    PC_ERR_TRUNCATED = -6,          /* the stream ends before the page or a field is complete */
    PC_ERR_CORRUPT = -7,            /* the stream is invalid for the format (see pc_last_error) */
    PC_ERR_WRONG_LENGTH = -8,       /* well formed, but not exactly one page */
    PC_ERR_TRAILING_INPUT = -9,     /* the page is complete and input is left over */
    PC_ERR_NOT_FOUND = -10,         /* no page is stored under the key */
    PC_ERR_FULL = -11,              /* the store's memory limit is reached; nothing changed */
    PC_ERR_OUT_OF_MEMORY = -12,     /* the store's memory source is exhausted; nothing changed */
    PC_ERR_PANIC = -13              /* a bug in the library was caught at the boundary */
} pc_status;

/* A static description of a status code ("unknown status code" for other values).
 * Thread-safe. */
const char *pc_strerror(int status);

/* The message of the last failing pc_ call on this thread ("" if none): the decoder's
 * reason for a bad stream, the argument for a NULL pointer. Valid until the next pc_ call
 * on this thread. Thread-safe (one message per thread). */
const char *pc_last_error(void);

/* The library's version, "major.minor.patch" (static). Thread-safe. */
const char *pc_version(void);

/* ---------------------------------------------------------------- codecs */

/* A codec value with its working memory (opaque). */
typedef struct pc_codec pc_codec;

/* The codecs offered, by index: "wkdm" (4 KiB, XNU's WKdm), "wkdm16k" (WKdm on 16 KiB
 * pages, Apple arm64's layout), "lzo" (LZO1X-1, page-tuned compressor), "lzo-fast" (LZO1X-1,
 * the fast level: larger streams in less time), "lzo-rle" (zram's default, the kernel's
 * bytes), then, in builds with the adapters (the default), "lz4-page" (LZ4 blocks, lz4_flex)
 * and "zstd" (zstd frames, level 3).
 * pc_codec_name_at returns a static string, NULL past the end. Thread-safe. */
size_t pc_codec_count(void);
const char *pc_codec_name_at(size_t index);

/* Makes the codec named `name` into *codec (free it with pc_codec_destroy).
 * Errors: PC_ERR_NULL_POINTER, PC_ERR_UNKNOWN_CODEC. Thread-safe. */
pc_status pc_codec_create(const char *name, pc_codec **codec);

/* Frees a codec; NULL is ignored. Not thread-safe for that codec (no concurrent or later
 * use). */
void pc_codec_destroy(pc_codec *codec);

/* The codec's name (static), page size (4096 or 16384) and largest stream (an output
 * buffer of that size never fails for lack of room: 4368 wkdm, 17424 wkdm16k, 4421 lzo,
 * lzo-fast and lzo-rle, 4525 lz4-page, 4174 zstd). NULL, 0 and 0 for a NULL codec. Thread-safe. */
const char *pc_codec_name(const pc_codec *codec);
size_t pc_codec_page_size(const pc_codec *codec);
size_t pc_codec_max_compressed_len(const pc_codec *codec);

/* Compresses `page` (page_len must be the codec's page size) into `out`; out_cap is the
 * budget. On PC_OK, *out_len is the stream's length (<= out_cap).
 * Errors: PC_ERR_NULL_POINTER, PC_ERR_PAGE_SIZE, PC_ERR_INCOMPRESSIBLE (does not fit, or
 * WKdm's early abort gave up: store the page raw; *out_len is 0). Never writes past
 * out + out_cap. Uniform pages get a stream too. `out` must not overlap `page`.
 * Not thread-safe for the same codec; distinct codecs on distinct threads are fine. */
pc_status pc_codec_compress(pc_codec *codec, const uint8_t *page, size_t page_len,
                            uint8_t *out, size_t out_cap, size_t *out_len);

/* Decompresses `stream` into `page` (page_len must be the codec's page size), filling it
 * whole. Errors: PC_ERR_NULL_POINTER, PC_ERR_PAGE_SIZE (page untouched), and for a bad
 * stream PC_ERR_TRUNCATED, PC_ERR_CORRUPT, PC_ERR_WRONG_LENGTH or PC_ERR_TRAILING_INPUT
 * (the page is then all zero bytes; pc_last_error has the reason). Any input is safe: no
 * crash, no access outside the two buffers, work bounded by their lengths.
 * `lzo` and `lzo-rle` read each other's streams. Not thread-safe for the same codec. */
pc_status pc_codec_decompress(pc_codec *codec, const uint8_t *stream, size_t stream_len,
                              uint8_t *page, size_t page_len);

/* ---------------------------------------------------------------- the page store */

/* A compressed page store keyed by uint64_t (opaque). Every function on it except
 * pc_store_destroy is thread-safe: shards with their own locks, pages compressed outside
 * any lock. */
typedef struct pc_store pc_store;

typedef struct pc_store_config {
    uint32_t shards;         /* 1..=65536, rounded up to a power of two; default 1 */
    uint32_t same_filled;    /* non-zero: same-filled pages kept as the value; default 1 */
    uint32_t huge_threshold; /* streams above this are stored raw; 1..=4096, default 3072 */
    uint32_t timing;         /* non-zero: time (de)compression; default 0 */
    uint64_t mem_limit;      /* most bytes held from memory; 0 = no limit (default) */
} pc_store_config;

/* Count, min, median (within 3%), mean and max of a series. */
typedef struct pc_summary {
    uint64_t count;
    uint64_t min;
    uint64_t median;
    double mean;
    uint64_t max;
} pc_summary;

/* pc_store_stats.time_unit */
#define PC_TIME_NONE 0
#define PC_TIME_TSC_TICKS 1
#define PC_TIME_NANOSECONDS 2

typedef struct pc_store_stats {
    uint64_t pages;                 /* pages stored now */
    /* zram's mm_stat, for the pages stored now */
    uint64_t orig_data_size;        /* pages x 4096 */
    uint64_t compr_data_size;       /* stream bytes (huge 4096, same-filled 0) */
    uint64_t mem_used_total;        /* bytes held from memory */
    uint64_t mem_limit;             /* 0 = none */
    uint64_t mem_used_max;          /* peak of mem_used_total */
    uint64_t same_pages;
    uint64_t pages_compacted;
    uint64_t huge_pages;
    /* the per-codec table, over every store and load since creation */
    const char *codec;              /* the codec's name (static) */
    uint64_t stores;
    uint64_t same_filled;
    uint64_t incompressible;        /* pages stored raw */
    pc_summary compressed_size;     /* streams kept compressed */
    pc_summary compress_time;       /* every compression attempt */
    pc_summary decompress_time;     /* compressed pages only */
    uint32_t time_unit;             /* PC_TIME_* */
    uint32_t shards;
    uint64_t input_bytes;
    uint64_t output_bytes;
    double ratio;                   /* input_bytes / output_bytes */
    double compressed_fraction;     /* output_bytes / input_bytes */
    double incompressible_share;
    /* the allocator */
    uint64_t pool_payload_bytes;
    uint64_t pool_objects;
    uint64_t pool_chunks_held;
    uint64_t pool_metadata_bytes;
} pc_store_stats;

typedef struct pc_compact_report {
    uint64_t objects_moved;
    uint64_t bytes_moved;
    uint64_t chunks_released;
    uint64_t pages_released;
} pc_compact_report;

/* Fills *config with the defaults (NULL ignored). Thread-safe. */
void pc_store_config_default(pc_store_config *config);

/* Makes a store compressing with the codec `codec_name` (a 4 KiB codec: not "wkdm16k")
 * under `config` (NULL: defaults) into *store (free it with pc_store_destroy).
 * Errors: PC_ERR_NULL_POINTER, PC_ERR_UNKNOWN_CODEC, PC_ERR_INVALID_ARGUMENT. Thread-safe. */
pc_status pc_store_create(const char *codec_name, const pc_store_config *config,
                          pc_store **store);

/* Frees a store and its pages; NULL is ignored. Not thread-safe for that store. */
void pc_store_destroy(pc_store *store);

/* Stores a 4 KiB page under `key`, replacing any older one. Errors: PC_ERR_NULL_POINTER,
 * PC_ERR_PAGE_SIZE, PC_ERR_FULL, PC_ERR_OUT_OF_MEMORY (every page stored before, the old
 * one under `key` included, stays intact). Thread-safe. */
pc_status pc_store_store(const pc_store *store, uint64_t key, const uint8_t *page,
                         size_t page_len);

/* Loads the page under `key` into a 4 KiB buffer. Errors: PC_ERR_NULL_POINTER,
 * PC_ERR_PAGE_SIZE, PC_ERR_NOT_FOUND (nothing written), a stream code if the stored stream
 * was damaged in memory (page all zero). Thread-safe. */
pc_status pc_store_load(const pc_store *store, uint64_t key, uint8_t *page, size_t page_len);

/* Removes the page under `key`. Errors: PC_ERR_NULL_POINTER, PC_ERR_NOT_FOUND.
 * Thread-safe. */
pc_status pc_store_remove(const pc_store *store, uint64_t key);

/* Compacts the allocator; fills *report when not NULL. Errors: PC_ERR_NULL_POINTER.
 * Thread-safe. */
pc_status pc_store_compact(const pc_store *store, pc_compact_report *report);

/* Writes the statistics into *stats. Errors: PC_ERR_NULL_POINTER. Thread-safe (shards are
 * read one after the other). */
pc_status pc_store_get_stats(const pc_store *store, pc_store_stats *stats);

#ifdef __cplusplus
}
#endif

#endif /* PAGECODEC_H */
