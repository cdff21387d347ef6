/*
 * table.c — tables of references. Elements are pw_ref cells; growing reallocates, so
 * the interpreter re-reads the element pointer on every access (no caching).
 */
#include "wasm/runtime.h"

#include <stdlib.h>

#define PW_TABLE_LIMIT 10000000u /* elements; the spec lets an engine fail growth */

pw_table *pw__table_create(pw_store *s, pw_valtype elem, const pw_module *tmod, uint32_t min,
                           uint64_t max, pw_ref init) {
    if (min > PW_TABLE_LIMIT || (uint64_t)min * sizeof(pw_ref) + s->mem_used > s->cfg.memory_cap)
        return NULL;
    pw_table *t = pw__store_alloc_obj(s, sizeof *t, PW_OBJ_TABLE);
    if (!t) return NULL;
    t->store = s;
    t->elem = elem;
    t->tmod = tmod;
    t->max = max;
    t->cap = min;
    t->elems = malloc((min ? min : 1) * sizeof(pw_ref));
    if (!t->elems) return NULL;
    for (uint32_t i = 0; i < min; i++)
        t->elems[i] = init;
    t->size = min;
    s->mem_used += (uint64_t)min * sizeof(pw_ref);
    return t;
}

int64_t pw__table_grow(pw_table *t, uint32_t delta, pw_ref init) {
    uint32_t old = t->size;
    uint64_t n = (uint64_t)old + delta;
    if (n > t->max || n > PW_TABLE_LIMIT) return -1;
    pw_store *s = t->store;
    if (s->mem_used + (uint64_t)delta * sizeof(pw_ref) > s->cfg.memory_cap) return PW_GROW_OVER_CAP;
    if (n > t->cap) {
        uint64_t nc = (uint64_t)t->cap * 2;
        if (nc < n) nc = n;
        if (nc > PW_TABLE_LIMIT) nc = n;
        pw_ref *ne = realloc(t->elems, nc * sizeof(pw_ref));
        if (!ne) return -1;
        t->elems = ne;
        t->cap = (uint32_t)nc;
    }
    for (uint64_t i = old; i < n; i++)
        t->elems[i] = init;
    t->size = (uint32_t)n;
    s->mem_used += (uint64_t)delta * sizeof(pw_ref);
    return old;
}

pw_table *pw_table_new(pw_store *s, pw_valtype elem, uint32_t min, uint32_t max, pw_ref init,
                       pw_error *err) {
    pw_table *t = pw__table_create(s, elem, NULL, min, max == UINT32_MAX ? UINT64_MAX : max, init);
    if (!t) pw__fail(err, PW_ERR_OOM, "table allocation failed or over the store's cap");
    return t;
}

pw_table *pw_table_new64(pw_store *s, pw_valtype elem, uint32_t min, uint64_t max, pw_ref init,
                         pw_error *err) {
    pw_table *t = pw__table_create(s, elem, NULL, min, max, init);
    if (!t) {
        pw__fail(err, PW_ERR_OOM, "table allocation failed or over the store's cap");
        return NULL;
    }
    t->is64 = true;
    return t;
}
