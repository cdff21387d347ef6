/*
 * memory.c — linear memories.
 *
 * The data is a PROT_NONE reservation of which [0, size) is read/write; growing
 * makes more of it read/write in place, so the base address never moves and host
 * pointers stay valid across memory.grow. Two sizes of reservation:
 *   - guarded (m->guarded; a 32-bit memory, unless the store asks for explicit
 *     checks): PW_GUARD_RESERVE bytes, every address a 32-bit access can form, so
 *     JIT code needs no bounds check and an access out of bounds faults (jit/guard.c
 *     turns the fault into the trap). Invariant: rw == size, nothing past the size
 *     is accessible. If the reservation fails (a small address space, RLIMIT_AS) or
 *     the fault handler is not in place, the memory is reserved as below instead;
 *   - otherwise the largest size the memory may reach (its maximum, capped by the
 *     store's memory cap), with explicit checks everywhere.
 * Growth is bounded by m->reserved (the maximum, capped) either way. The interpreter
 * and the bulk-memory helpers always check explicitly. With a pool (pool.c) the
 * mapping may come from an earlier store: [0, rw) is then already read/write and
 * [0, dirty) is zeroed as the memory grows into it; a guarded memory first makes
 * the part past its initial size PROT_NONE again. See docs/engine.md and
 * docs/jit.md.
 */
#include "wasm/runtime.h"

#include <string.h>
#include <sys/mman.h>

#define PAGE ((uint64_t)65536)

/* Makes [0, bytes) the memory's contents: read/write, and zero where a previous
 * store (a pooled mapping) left data. */
static bool extend(pw_memory *m, uint64_t bytes) {
    if (bytes > m->rw) {
        if (mprotect(m->data + m->rw, bytes - m->rw, PROT_READ | PROT_WRITE) != 0) return false;
        m->rw = bytes;
    }
    if (m->dirty > m->size) {
        uint64_t end = bytes < m->dirty ? bytes : m->dirty;
        memset(m->data + m->size, 0, end - m->size);
    }
    m->size = bytes;
    return true;
}

/* Maps the reservation: guarded when wanted and possible, else just `reserved`. */
static bool reserve(pw_store *s, pw_memory *m, bool is64, uint64_t keep) {
    if (!is64 && s->cfg.bounds_checks != PW_BOUNDS_EXPLICIT && pw__guard_ready() &&
        pw__mem_map(s->cfg.pool, m, PW_GUARD_RESERVE)) {
        m->guarded = true;
        if (m->rw <= keep) return true;
        /* A pooled mapping: what a previous store left read/write past the initial
         * size must fault again (those bytes stay dirty: zeroed when the memory grows
         * into them). */
        if (mprotect(m->data + keep, m->rw - keep, PROT_NONE) == 0) {
            m->rw = keep;
            return true;
        }
        pw__mem_unmap(NULL, m);
        m->guarded = false;
    }
    return pw__mem_map(s->cfg.pool, m, m->reserved);
}

pw_memory *pw__memory_create(pw_store *s, uint64_t min_pages, uint64_t max_pages, bool is64) {
    uint64_t cap_pages = s->cfg.memory_cap / PAGE;
    if (cap_pages > 65536) cap_pages = 65536;
    if (min_pages > 65536 || min_pages * PAGE + s->mem_used > s->cfg.memory_cap) return NULL;
    pw_memory *m = pw__store_alloc_obj(s, sizeof *m, PW_OBJ_MEMORY);
    if (!m) return NULL;
    m->store = s;
    m->max_pages = max_pages;
    m->is64 = is64;
    uint64_t limit = max_pages < cap_pages ? max_pages : cap_pages;
    if (limit < min_pages) limit = min_pages;
    m->reserved = limit * PAGE;
    m->size = 0;
    if (m->reserved == 0) {
        m->data = NULL;
        return m;
    }
    if (!reserve(s, m, is64, min_pages * PAGE)) {
        m->reserved = 0;
        return NULL;
    }
    if (!extend(m, min_pages * PAGE)) return NULL; /* the store frees the mapping */
    s->mem_used += m->size;
    return m;
}

int64_t pw__memory_grow(pw_memory *m, uint64_t delta) {
    uint64_t old = m->size / PAGE;
    if (delta == 0) return (int64_t)old;
    if (delta > 65536) return -1; /* memory64: keeps old + delta from wrapping */
    uint64_t np = old + delta;
    if (np > 65536 || np > m->max_pages) return -1;
    pw_store *s = m->store;
    /* The reservation is capped by the store's memory cap, so running past it is the
     * cap's doing too. */
    if (np * PAGE > m->reserved || s->mem_used + delta * PAGE > s->cfg.memory_cap)
        return PW_GROW_OVER_CAP;
    if (!extend(m, np * PAGE)) return -1;
    s->mem_used += delta * PAGE;
    return (int64_t)old;
}

static pw_memory *memory_new(pw_store *s, uint64_t min_pages, uint64_t max_pages, bool is64,
                             pw_error *err) {
    pw_memory *m = pw__memory_create(s, min_pages, max_pages, is64);
    if (!m) pw__fail(err, PW_ERR_OOM, "memory allocation failed or over the store's cap");
    return m;
}

pw_memory *pw_memory_new(pw_store *s, uint64_t min_pages, uint64_t max_pages, pw_error *err) {
    return memory_new(s, min_pages, max_pages, false, err);
}

pw_memory *pw_memory_new64(pw_store *s, uint64_t min_pages, uint64_t max_pages, pw_error *err) {
    return memory_new(s, min_pages, max_pages, true, err);
}

uint8_t *pw_memory_data(pw_memory *mem, uint64_t *size) {
    if (size) *size = mem->size;
    return mem->data;
}
