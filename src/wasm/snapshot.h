/*
 * snapshot.h — the representation of an instance snapshot (internal to src/wasm/):
 * snapshot.c takes and applies them, snapfile.c saves them to the code-cache
 * directory and loads them back.
 *
 * Invariant: mem_off[i] is a multiple of 64 KiB into fd, and fd holds at least
 * mem_off[i] + mem_size[i] bytes for every defined memory i; fd is never written
 * after the snapshot is made (a sealed memfd, or a cache file only ever replaced by
 * rename).
 */
#ifndef PW_SNAPSHOT_H
#define PW_SNAPSHOT_H

#include "wasm/runtime.h"

#define PAGE      ((uint64_t)65536)
#define NULL_FUNC UINT32_MAX

typedef struct snap_table {
    uint32_t size;
    uint32_t *funcs; /* function index per element, NULL_FUNC for null */
} snap_table;

struct pw_snapshot {
    const pw_module *mod; /* identity check only */
    uint32_t nmems, nglobals, ntables, nelems, ndatas;
    int fd;             /* memfd (or cache file) holding every memory's bytes */
    uint64_t *mem_off;  /* offset of memory i in fd */
    uint64_t *mem_size; /* its size in bytes */
    uint64_t total;
    pw_slot *globals;
    snap_table *tables;
    uint8_t *elem_dropped; /* per elem segment: 1 when its refs are gone */
    uint8_t *data_dropped;
};

/* An empty snapshot for m: counts set, arrays zeroed, fd -1; NULL when out of
 * memory. Caller frees with pw_snapshot_free. */
pw_snapshot *pw__snapshot_new(const pw_module *m);

#endif
