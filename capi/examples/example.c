#include <stdio.h>
#include <string.h>
#include "pagecodec.h"

int main(void) {
    static uint8_t page[PC_PAGE_SIZE], back[PC_PAGE_SIZE], stream[PC_PAGE_SIZE * 2];
    strcpy((char *)page, "hello, pages");
    size_t n = 0;
    pc_codec *codec = NULL;
    pc_status s = pc_codec_create("lzo-rle", &codec);
    if (s == PC_OK) s = pc_codec_compress(codec, page, sizeof page, stream, sizeof stream, &n);
    if (s == PC_OK) s = pc_codec_decompress(codec, stream, n, back, sizeof back);
    pc_codec_destroy(codec);
    if (s != PC_OK) {
        fprintf(stderr, "%s: %s\n", pc_strerror(s), pc_last_error());
        return 1;
    }
    printf("%zu-byte stream, %s\n", n, memcmp(page, back, sizeof page) ? "MISMATCH" : "round trip ok");

    /* A compressed page store (thread-safe), as zram keeps pages. */
    pc_store *store = NULL;
    pc_store_stats stats;
    if (pc_store_create("wkdm", NULL, &store) != PC_OK) return 1;
    pc_store_store(store, 42, page, sizeof page);
    s = pc_store_load(store, 42, back, sizeof back);
    pc_store_get_stats(store, &stats);
    printf("store: %s, %llu page(s), %llu bytes compressed\n", pc_strerror(s),
           (unsigned long long)stats.pages, (unsigned long long)stats.compr_data_size);
    pc_store_destroy(store);
    return 0;
}
