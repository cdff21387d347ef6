/*
 * pool.c — the mapping pool: value/frame stacks and linear-memory reservations kept
 * between stores so a short run makes no mmap/munmap/mprotect call. Those calls take
 * the process's mm lock, and unmapping or protecting touched pages interrupts every
 * other thread of the process (TLB shootdown), so with several workers per-run
 * mappings serialise them.
 *
 * Every stack has PW_STACK_GUARD bytes of PROT_NONE address space on each side, so a
 * frame or operand access that a bug (a wrong frame size, a missed check) takes past
 * either end faults instead of writing into whatever mapping the kernel placed
 * there (a fault outside linear memory is not the JIT's trap: guard.c passes it on,
 * and the process dies of it). Every frame check is exact, so no correct access
 * ever reaches a guard.
 *
 * Stacks come back as they are: the interpreter writes every frame record and
 * zeroes every frame's locals, and operands are written before they are read, so a
 * stack's old contents are never observed. A memory comes back with [0, rw) still
 * read/write (bounds are checked explicitly; a guarded memory, whose bounds check is
 * PROT_NONE, protects what it does not use again: memory.c) and the size it reached
 * as `dirty`; the next store zeroes [0, dirty) lazily, as it grows into it. A
 * store's own mapping (the struct and its interrupt poll page) comes back with the
 * poll page read-only (store.c keeps only those of stores not left interrupted) and
 * is zeroed by the next store. What
 * the pool keeps is bounded by entry counts and by the dirtied bytes it holds
 * (resident memory); anything over is unmapped.
 */
#include "wasm/runtime.h"

#include "peri/base.h"

#include <stdlib.h>
#include <sys/mman.h>

#define POOL_STACKS      4 /* two stores' value + frame stacks */
#define POOL_MEMS        4
#define POOL_STORES      2 /* stores' own mappings (the struct and its poll page) */
#define POOL_DIRTY_BYTES ((uint64_t)32 << 20) /* dirtied memory bytes kept */

typedef struct pool_stack {
    void *base;
    size_t bytes;
} pool_stack;

typedef struct pool_mem {
    uint8_t *base;
    uint64_t mapped, rw, dirty;
} pool_mem;

struct pw_pool {
    pool_stack stacks[POOL_STACKS];
    pool_mem mems[POOL_MEMS];
    void *stores[POOL_STORES];
    uint32_t nstacks, nmems, nstores;
    uint64_t dirty; /* sum of mems[].dirty */
    uint32_t users; /* stores made with this pool and not yet freed */
    bool closed;    /* pw_pool_free called while users > 0 */
};

pw_pool *pw_pool_new(void) {
    return calloc(1, sizeof(pw_pool));
}

/* The usable part of a stack of `bytes`, rounded to whole guard pages. */
static size_t stack_round(size_t bytes) {
    size_t page = PW_STACK_GUARD_PAGE;
    return (bytes + page - 1) / page * page;
}

static void stack_release(void *base, size_t bytes) {
    pb_guard_unmap(base, PW_STACK_GUARD, stack_round(bytes), PW_STACK_GUARD);
}

static void drain(pw_pool *p) {
    for (uint32_t i = 0; i < p->nstacks; i++)
        stack_release(p->stacks[i].base, p->stacks[i].bytes);
    for (uint32_t i = 0; i < p->nmems; i++)
        munmap(p->mems[i].base, p->mems[i].mapped);
    for (uint32_t i = 0; i < p->nstores; i++)
        munmap(p->stores[i], PW_STORE_MAP_BYTES);
    p->nstacks = p->nmems = p->nstores = 0;
    p->dirty = 0;
}

void pw_pool_free(pw_pool *p) {
    if (!p) return;
    drain(p);
    if (p->users)
        p->closed = true;
    else
        free(p);
}

void pw__pool_attach(pw_pool *p) {
    if (p) p->users++;
}

void pw__pool_detach(pw_pool *p) {
    if (!p) return;
    if (--p->users == 0 && p->closed) free(p);
}

void *pw__stack_map(pw_pool *p, size_t bytes) {
    if (p)
        for (uint32_t i = 0; i < p->nstacks; i++)
            if (p->stacks[i].bytes == bytes) {
                void *b = p->stacks[i].base;
                p->stacks[i] = p->stacks[--p->nstacks];
                return b;
            }
    /* guard + stack + guard, the guards never writable (pb_guard_map) */
    return pb_guard_map(PW_STACK_GUARD, stack_round(bytes), PW_STACK_GUARD, MAP_NORESERVE);
}

void pw__stack_unmap(pw_pool *p, void *base, size_t bytes) {
    if (p && !p->closed && p->nstacks < POOL_STACKS) {
        p->stacks[p->nstacks++] = (pool_stack){base, bytes};
        return;
    }
    stack_release(base, bytes);
}

void *pw__pool_take_store(pw_pool *p) {
    return p && p->nstores ? p->stores[--p->nstores] : NULL;
}

bool pw__pool_keep_store(pw_pool *p, void *base) {
    if (!p || p->closed || p->nstores >= POOL_STORES) return false;
    p->stores[p->nstores++] = base;
    return true;
}

bool pw__mem_map(pw_pool *p, pw_memory *m, uint64_t bytes) {
    if (p) {
        /* Best fit: the smallest reservation that is large enough. */
        uint32_t best = UINT32_MAX;
        for (uint32_t i = 0; i < p->nmems; i++)
            if (p->mems[i].mapped >= bytes &&
                (best == UINT32_MAX || p->mems[i].mapped < p->mems[best].mapped))
                best = i;
        if (best != UINT32_MAX) {
            pool_mem e = p->mems[best];
            p->mems[best] = p->mems[--p->nmems];
            p->dirty -= e.dirty;
            m->data = e.base;
            m->mapped = e.mapped;
            m->rw = e.rw;
            m->dirty = e.dirty;
            return true;
        }
    }
    void *b = mmap(NULL, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (b == MAP_FAILED) return false;
    m->data = b;
    m->mapped = bytes;
    m->rw = m->dirty = 0;
    return true;
}

void pw__mem_unmap(pw_pool *p, pw_memory *m) {
    uint64_t dirty = m->size > m->dirty ? m->size : m->dirty;
    if (p && !p->closed && p->nmems < POOL_MEMS && dirty <= POOL_DIRTY_BYTES - p->dirty) {
        p->mems[p->nmems++] = (pool_mem){m->data, m->mapped, m->rw, dirty};
        p->dirty += dirty;
    } else {
        munmap(m->data, m->mapped);
    }
    m->data = NULL;
    m->mapped = 0;
}

void pw__pool_stats(const pw_pool *p, uint32_t *stacks, uint32_t *mems, uint64_t *dirty) {
    *stacks = p->nstacks;
    *mems = p->nmems;
    *dirty = p->dirty;
}
