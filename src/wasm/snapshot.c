/*
 * snapshot.c — instance snapshots (pw_snapshot): the state of an instance's own
 * memories, globals and tables, captured once and used to start any number of later
 * instances in that state (docs/engine.md, "Snapshots").
 *
 * Memory bytes go into one sealed memfd (each memory at a page-aligned offset).
 * A new instance maps its part MAP_PRIVATE | MAP_FIXED over the start of its own
 * reservation: the kernel shares the snapshot's pages until the instance writes one,
 * then copies that page for it alone (copy-on-write), so starting costs a mapping,
 * not a copy, and no instance can change what another sees. Zero pages of the
 * snapshot are never written to the memfd (they stay holes).
 *
 * Tables hold functions; they are recorded as function indices of the instance
 * (imports included) and turned back into the new instance's functions. Globals are
 * recorded as raw cells; reference-typed globals must be null (anything else is
 * refused, never silently dropped).
 *
 * Invariants: a snapshot is immutable after pw_snapshot_take; it refers to its
 * module only through a fingerprint (counts), so it must not outlive the module.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "wasm/snapshot.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

void pw_snapshot_free(pw_snapshot *sn) {
    if (!sn) return;
    if (sn->fd >= 0) close(sn->fd);
    free(sn->mem_off);
    free(sn->mem_size);
    free(sn->globals);
    if (sn->tables)
        for (uint32_t i = 0; i < sn->ntables; i++)
            free(sn->tables[i].funcs);
    free(sn->tables);
    free(sn->elem_dropped);
    free(sn->data_dropped);
    free(sn);
}

uint64_t pw_snapshot_bytes(const pw_snapshot *sn) {
    return sn->total;
}

bool pw__snapshot_matches(const pw_snapshot *sn, const pw_module *m) {
    return sn->mod == m;
}

typedef struct func_key {
    uintptr_t ptr;
    uint32_t idx;
} func_key;

static int cmp_key(const void *a, const void *b) {
    uintptr_t x = ((const func_key *)a)->ptr, y = ((const func_key *)b)->ptr;
    return x < y ? -1 : x > y;
}

/* Writes [0, n) of data to fd at off, skipping whole zero 4 KiB blocks (holes). */
static bool write_sparse(int fd, const uint8_t *data, uint64_t n, uint64_t off) {
    static const uint8_t zero[4096];
    for (uint64_t at = 0; at < n;) {
        uint64_t chunk = n - at < 4096 ? n - at : 4096;
        if (chunk == 4096 && memcmp(data + at, zero, 4096) == 0) {
            at += chunk;
            continue;
        }
        /* Extend the run to the next zero block to write in large pieces. */
        uint64_t end = at + chunk;
        while (end < n && end - at < (1u << 20)) {
            uint64_t c = n - end < 4096 ? n - end : 4096;
            if (c == 4096 && memcmp(data + end, zero, 4096) == 0) break;
            end += c;
        }
        uint64_t done = at;
        while (done < end) {
            ssize_t w = pwrite(fd, data + done, end - done, (off_t)(off + done));
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) return false;
            done += (uint64_t)w;
        }
        at = end;
    }
    return true;
}

static pw_snapshot *fail(pw_snapshot *sn, pw_error *err, pw_status st, const char *msg) {
    pw_snapshot_free(sn);
    pw__fail(err, st, "%s", msg);
    return NULL;
}

pw_snapshot *pw__snapshot_new(const pw_module *m) {
    pw_snapshot *sn = calloc(1, sizeof *sn);
    if (!sn) return NULL;
    sn->fd = -1;
    sn->mod = m;
    sn->nmems = m->nmems;
    sn->nglobals = m->nglobals;
    sn->ntables = m->ntables;
    sn->nelems = m->nelems;
    sn->ndatas = m->ndatas;
    sn->mem_off = calloc(m->nmems ? m->nmems : 1, sizeof *sn->mem_off);
    sn->mem_size = calloc(m->nmems ? m->nmems : 1, sizeof *sn->mem_size);
    sn->globals = calloc(m->nglobals ? m->nglobals : 1, sizeof *sn->globals);
    sn->tables = calloc(m->ntables ? m->ntables : 1, sizeof *sn->tables);
    sn->elem_dropped = calloc(m->nelems ? m->nelems : 1, 1);
    sn->data_dropped = calloc(m->ndatas ? m->ndatas : 1, 1);
    if (!sn->mem_off || !sn->mem_size || !sn->globals || !sn->tables || !sn->elem_dropped ||
        !sn->data_dropped) {
        pw_snapshot_free(sn);
        return NULL;
    }
    return sn;
}

pw_snapshot *pw_snapshot_take(pw_instance *inst, pw_error *err) {
    const pw_module *m = inst->mod;
    pw_snapshot *sn = pw__snapshot_new(m);
    if (!sn) return fail(NULL, err, PW_ERR_NOMEM, "out of memory");

    for (uint32_t i = m->nglobal_imports; i < m->nglobals; i++) {
        const pw_global *g = inst->globals[i];
        if (PW_VT_KIND(g->type) == PW_K_REF && g->val.ref != PW_NULL_REF)
            return fail(sn, err, PW_ERR_ARG, "snapshot: a global holds a reference");
        if (PW_VT_KIND(g->type) == PW_K_V128)
            return fail(sn, err, PW_ERR_ARG, "snapshot: v128 globals are not supported");
        sn->globals[i] = g->val;
    }

    if (m->ntables > m->ntable_imports) {
        func_key *keys = malloc((m->nfuncs ? m->nfuncs : 1) * sizeof *keys);
        if (!keys) return fail(sn, err, PW_ERR_NOMEM, "out of memory");
        for (uint32_t i = 0; i < m->nfuncs; i++)
            keys[i] = (func_key){(uintptr_t)inst->funcs[i], i};
        qsort(keys, m->nfuncs, sizeof *keys, cmp_key);
        for (uint32_t t = m->ntable_imports; t < m->ntables; t++) {
            const pw_table *tb = inst->tables[t];
            snap_table *st = &sn->tables[t];
            st->size = tb->size;
            st->funcs = malloc((tb->size ? tb->size : 1) * sizeof *st->funcs);
            if (!st->funcs) {
                free(keys);
                return fail(sn, err, PW_ERR_NOMEM, "out of memory");
            }
            for (uint32_t j = 0; j < tb->size; j++) {
                pw_ref r = tb->elems[j];
                if (r == PW_NULL_REF) {
                    st->funcs[j] = NULL_FUNC;
                    continue;
                }
                func_key k = {(uintptr_t)r, 0};
                const func_key *hit = pw_ref_kind_of(r) == PW_REF_FUNC
                                          ? bsearch(&k, keys, m->nfuncs, sizeof *keys, cmp_key)
                                          : NULL;
                if (!hit) {
                    free(keys);
                    return fail(sn, err, PW_ERR_ARG,
                                "snapshot: a table holds a reference that is not one of the "
                                "instance's functions");
                }
                st->funcs[j] = hit->idx;
            }
        }
        free(keys);
    }

    for (uint32_t k = 0; k < m->nelems; k++)
        sn->elem_dropped[k] = inst->elem_len[k] == 0 && m->elems[k].count != 0;
    memcpy(sn->data_dropped, inst->data_dropped, m->ndatas);

    if (m->nmems > m->nmem_imports) {
        sn->fd = memfd_create("peri-snapshot", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (sn->fd < 0) return fail(sn, err, PW_ERR_NOMEM, "snapshot: memfd_create failed");
        uint64_t off = 0;
        for (uint32_t i = m->nmem_imports; i < m->nmems; i++) {
            const pw_memory *mem = inst->mems[i];
            sn->mem_off[i] = off;
            sn->mem_size[i] = mem->size;
            off += (mem->size + PAGE - 1) / PAGE * PAGE;
        }
        sn->total = off;
        if (ftruncate(sn->fd, (off_t)off) != 0)
            return fail(sn, err, PW_ERR_NOMEM, "snapshot: cannot size the memfd");
        for (uint32_t i = m->nmem_imports; i < m->nmems; i++)
            if (!write_sparse(sn->fd, inst->mems[i]->data, sn->mem_size[i], sn->mem_off[i]))
                return fail(sn, err, PW_ERR_NOMEM, "snapshot: cannot write the memfd");
        /* Nothing may change the bytes behind the instances mapping them. */
        (void)fcntl(sn->fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
    }
    return sn;
}

bool pw__snapshot_apply(pw_instance *inst, const pw_snapshot *sn, pw_error *err) {
    const pw_module *m = inst->mod;
    pw_store *s = inst->store;
    for (uint32_t i = m->nglobal_imports; i < m->nglobals; i++)
        inst->globals[i]->val = sn->globals[i];

    for (uint32_t t = m->ntable_imports; t < m->ntables; t++) {
        pw_table *tb = inst->tables[t];
        const snap_table *st = &sn->tables[t];
        if (st->size > tb->size) {
            int64_t g = pw__table_grow(tb, st->size - tb->size, PW_NULL_REF);
            if (g < 0) {
                pw__fail(err, PW_ERR_OOM, "table allocation failed or over the store's cap");
                return false;
            }
        }
        for (uint32_t j = 0; j < st->size; j++)
            tb->elems[j] =
                st->funcs[j] == NULL_FUNC ? PW_NULL_REF : (pw_ref)inst->funcs[st->funcs[j]];
    }

    for (uint32_t k = 0; k < m->nelems; k++)
        if (sn->elem_dropped[k]) inst->elem_len[k] = 0;
    memcpy(inst->data_dropped, sn->data_dropped, m->ndatas);

    for (uint32_t i = m->nmem_imports; i < m->nmems; i++) {
        pw_memory *mem = inst->mems[i];
        uint64_t bytes = sn->mem_size[i];
        if (bytes == 0) continue;
        if (bytes > mem->reserved || s->mem_used + bytes > s->cfg.memory_cap) {
            pw__fail(err, PW_ERR_OOM, "memory allocation failed or over the store's cap");
            return false;
        }
        void *p = mmap(mem->data, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, sn->fd,
                       (off_t)sn->mem_off[i]);
        if (p == MAP_FAILED) {
            pw__fail(err, PW_ERR_NOMEM, "snapshot: cannot map the memory");
            return false;
        }
        if (bytes > mem->rw) mem->rw = bytes;
        s->mem_used += bytes - mem->size;
        mem->size = bytes;
    }
    return true;
}
