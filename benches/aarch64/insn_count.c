/*
 * A QEMU TCG plugin that counts the guest instructions a program executes and prints the
 * total when it exits ("insns: N" on stderr, through QEMU's plugin output).
 *
 * No plugin header is needed: the few functions and types of QEMU's plugin API (version 1,
 * as in QEMU 7.2) that this uses are declared here. Each translated block adds its
 * instruction count to one counter each time it runs, with an inline add (no call per
 * block), so the count is exact for a single-threaded program whose blocks run to their
 * end, which is what the benchmark harness is.
 *
 * Build: cc -O2 -shared -fPIC -o insn_count.so insn_count.c
 * Use:   qemu-aarch64 -plugin ./insn_count.so -d plugin ./program
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define EXPORT __attribute__((visibility("default")))

typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;

/* The plugin API version this plugin was written against; QEMU 7.2 accepts 1. */
EXPORT int qemu_plugin_version = 1;

/* From QEMU's plugin API: the inline operation "add an immediate to a u64" is value 0. */
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 = 0 };

typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb, enum qemu_plugin_op op, void *ptr,
                                              uint64_t imm);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb, void *userdata);
void qemu_plugin_outs(const char *string);

static uint64_t insns;

/* At translation: every later execution of this block adds its instruction count. */
static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
    (void)id;
    qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &insns,
                                             (uint64_t)qemu_plugin_tb_n_insns(tb));
}

static void report(qemu_plugin_id_t id, void *userdata) {
    (void)id;
    (void)userdata;
    char line[64];
    snprintf(line, sizeof line, "insns: %" PRIu64 "\n", insns);
    qemu_plugin_outs(line);
}

EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const void *info, int argc, char **argv) {
    (void)info;
    (void)argc;
    (void)argv;
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
    qemu_plugin_register_atexit_cb(id, report, NULL);
    return 0;
}
