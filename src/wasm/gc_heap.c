/*
 * gc_heap.c — where GC objects live: size-segregated blocks for small objects and
 * plain malloc for large ones; sweeping and enumeration.
 *
 * Small objects (up to PW_GC_CELL_MAX bytes, header included) take a cell of their
 * 16-byte size class in a 64 KiB block; free cells of a class are chained through
 * their header's `next` and have kind 0. Sweeping walks each block linearly (cheap,
 * cache friendly), rebuilds the free lists, and returns blocks that became entirely
 * free. Large objects are malloc'd and linked through `next` on one list.
 *
 * Two byte counts: `s->gc_bytes` counts the cells/objects handed out since the last
 * sweep plus those it kept (the collection trigger), and `heap->reserved` counts the
 * memory actually held (blocks + large objects). The latter is also added to the
 * store's `mem_used`, the one counter that linear memories, tables and this heap share
 * against the store's memory cap (so memory.grow sees the GC heap and vice versa).
 */
#include "wasm/gc.h"

#include <stdlib.h>
#include <string.h>

#define BLOCK_BYTES    ((size_t)64 << 10)
#define LARGE_OVERHEAD 16u /* malloc's per-chunk overhead, accounted */

typedef struct pw_gcblock {
    struct pw_gcblock *next;
    uint32_t cell, ncells;
    uint64_t pad; /* cells start 16-byte aligned */
    uint8_t cells[];
} pw_gcblock;

static uint32_t class_of(size_t bytes) {
    return (uint32_t)((bytes + 15) / 16) - 1;
}

pw_gcheap *pw__gcheap_new(void) {
    return calloc(1, sizeof(pw_gcheap));
}

/* A new block for class k, its cells pushed on the free list. */
static bool add_block(pw_store *s, pw_gcheap *h, uint32_t k) {
    if (s->mem_used + BLOCK_BYTES > s->cfg.memory_cap) return false;
    pw_gcblock *b = malloc(BLOCK_BYTES);
    if (!b) return false;
    b->cell = (k + 1) * 16;
    b->ncells = (uint32_t)((BLOCK_BYTES - sizeof *b) / b->cell);
    b->next = h->blocks[k];
    h->blocks[k] = b;
    h->reserved += BLOCK_BYTES;
    s->mem_used += BLOCK_BYTES;
    for (uint32_t i = b->ncells; i-- > 0;) {
        pw_obj *o = (pw_obj *)(b->cells + (size_t)i * b->cell);
        o->kind = 0;
        o->mark = 0;
        o->next = h->free[k];
        h->free[k] = o;
    }
    return true;
}

/* Bytes accounted to an allocation of `bytes` (its cell, or malloc + overhead). */
uint64_t pw__gcheap_cost(size_t bytes) {
    return bytes <= PW_GC_CELL_MAX ? (uint64_t)(class_of(bytes) + 1) * 16 : bytes + LARGE_OVERHEAD;
}

/* Can an allocation of `bytes` be satisfied without a collection? */
bool pw__gcheap_fits(const pw_store *s, const pw_gcheap *h, size_t bytes) {
    if (bytes <= PW_GC_CELL_MAX && h->free[class_of(bytes)]) return true;
    uint64_t need = bytes <= PW_GC_CELL_MAX ? BLOCK_BYTES : bytes + LARGE_OVERHEAD;
    return s->mem_used + need <= s->cfg.memory_cap;
}

pw_obj *pw__gcheap_alloc(pw_store *s, pw_gcheap *h, size_t bytes) {
    if (bytes <= PW_GC_CELL_MAX) {
        uint32_t k = class_of(bytes);
        if (!h->free[k] && !add_block(s, h, k)) return NULL;
        pw_obj *o = h->free[k];
        h->free[k] = o->next;
        memset(o, 0, (size_t)(k + 1) * 16);
        return o;
    }
    if (s->mem_used + bytes + LARGE_OVERHEAD > s->cfg.memory_cap) return NULL;
    pw_obj *o = calloc(1, bytes);
    if (!o) return NULL;
    o->next = h->large;
    h->large = o;
    h->reserved += bytes + LARGE_OVERHEAD;
    s->mem_used += bytes + LARGE_OVERHEAD;
    return o;
}

/* Free unmarked objects, clear marks; returns the bytes kept (pw__gcheap_cost units).
 * keep_all: clear marks only. */
uint64_t pw__gcheap_sweep(pw_store *s, pw_gcheap *h,
                          uint64_t (*large_bytes)(const pw_gcheap *, const pw_obj *),
                          bool keep_all) {
    uint64_t live = 0;
    for (uint32_t k = 0; k < PW_GC_NCLASS; k++) {
        h->free[k] = NULL;
        pw_gcblock **link = &h->blocks[k];
        for (pw_gcblock *b = *link; b; b = *link) {
            pw_obj *freelist = h->free[k];
            uint32_t used = 0;
            for (uint32_t i = 0; i < b->ncells; i++) {
                pw_obj *o = (pw_obj *)(b->cells + (size_t)i * b->cell);
                if (o->kind && (o->mark || keep_all)) {
                    o->mark = 0;
                    used++;
                    continue;
                }
                o->kind = 0;
                o->next = freelist;
                freelist = o;
            }
            if (used == 0) { /* return the block; its cells leave the free list */
                *link = b->next;
                free(b);
                h->reserved -= BLOCK_BYTES;
                s->mem_used -= BLOCK_BYTES;
                continue;
            }
            h->free[k] = freelist;
            live += (uint64_t)used * b->cell;
            link = &b->next;
        }
    }
    pw_obj **link = &h->large;
    for (pw_obj *o = *link; o; o = *link) {
        uint64_t n = large_bytes(h, o);
        if (o->mark || keep_all) {
            o->mark = 0;
            live += n;
            link = &o->next;
        } else {
            *link = o->next;
            h->reserved -= n;
            s->mem_used -= n;
            free(o);
        }
    }
    return live;
}

void pw__gcheap_each(pw_gcheap *h, void (*fn)(void *ctx, pw_obj *o), void *ctx) {
    for (uint32_t k = 0; k < PW_GC_NCLASS; k++)
        for (pw_gcblock *b = h->blocks[k]; b; b = b->next)
            for (uint32_t i = 0; i < b->ncells; i++) {
                pw_obj *o = (pw_obj *)(b->cells + (size_t)i * b->cell);
                if (o->kind) fn(ctx, o);
            }
    for (pw_obj *o = h->large; o; o = o->next)
        fn(ctx, o);
}

void pw__gcheap_free(pw_gcheap *h) {
    if (!h) return;
    for (uint32_t k = 0; k < PW_GC_NCLASS; k++) {
        pw_gcblock *b = h->blocks[k];
        while (b) {
            pw_gcblock *n = b->next;
            free(b);
            b = n;
        }
    }
    pw_obj *o = h->large;
    while (o) {
        pw_obj *n = o->next;
        free(o);
        o = n;
    }
    free(h->lay);
    free(h);
}
