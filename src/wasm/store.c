/*
 * store.c — the store: object list, limits, value/frame stacks, interrupt flag, the
 * function-type registry that gives every function type a store-wide id, and host
 * (extern) references.
 */
#include "wasm/gc.h"
#include "wasm/jit/jit.h"
#include "wasm/runtime.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define PW_DEFAULT_DEPTH 100000u
#define PW_DEFAULT_STACK ((size_t)64 << 20)
#define PW_STACK_MARGIN  1024u /* slots past stack_end for host call results */

/* The store's own mapping: the struct, then its interrupt poll page (runtime.h,
 * PW_STORE_POLL_OFF), read-only, a mapping of its own so that raising and clearing
 * the flag change one page's protection without splitting anything (which could fail
 * for want of memory at the moment a run must be stopped). Where there is no JIT,
 * nothing polls the page and the struct is an ordinary allocation. */
static pw_store *store_map(pw_pool *pool) {
#if PW_JIT_AVAILABLE
    void *p = pw__pool_take_store(pool);
    if (p) {
        memset(p, 0, sizeof(pw_store)); /* the pool's mappings are not zeroed */
        return p;
    }
    p = mmap(NULL, PW_STORE_MAP_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
    if (mprotect((char *)p + PW_STORE_POLL_OFF, PW_POLL_PAGE, PROT_READ) != 0) {
        munmap(p, PW_STORE_MAP_BYTES);
        return NULL;
    }
    return p; /* fresh anonymous pages are zero */
#else
    (void)pool;
    return calloc(1, sizeof(pw_store));
#endif
}

/* Sets the poll page's protection: PROT_NONE while interrupted. mprotect on a whole
 * mapping of one page needs no new mapping, and is async-signal-safe (a host may
 * interrupt from a signal handler). */
static void poll_page(pw_store *s, bool interrupted) {
#if PW_JIT_AVAILABLE
    mprotect((char *)s + PW_STORE_POLL_OFF, PW_POLL_PAGE, interrupted ? PROT_NONE : PROT_READ);
#else
    (void)s, (void)interrupted;
#endif
}

static void store_unmap(pw_pool *pool, pw_store *s) {
#if PW_JIT_AVAILABLE
    /* an interrupted store's poll page is PROT_NONE: not kept for another store */
    if (atomic_load(&s->interrupt) || !pw__pool_keep_store(pool, s)) munmap(s, PW_STORE_MAP_BYTES);
#else
    (void)pool;
    free(s);
#endif
}

pw_store *pw_store_new(const pw_store_config *cfg, pw_error *err) {
    pw_store *s = store_map(cfg ? cfg->pool : NULL);
    if (!s) {
        pw__fail(err, PW_ERR_NOMEM, "out of memory");
        return NULL;
    }
    if (cfg) s->cfg = *cfg;
    pw__pool_attach(s->cfg.pool);
    if (!s->cfg.memory_cap) s->cfg.memory_cap = (uint64_t)4 << 30;
    if (!s->cfg.max_call_depth) s->cfg.max_call_depth = PW_DEFAULT_DEPTH;
    if (!s->cfg.value_stack_bytes) s->cfg.value_stack_bytes = PW_DEFAULT_STACK;
    /* auto starts on the interpreter and counts calls (tier.c); jit starts on the JIT. */
    s->jit_on =
        PW_JIT_AVAILABLE && (s->cfg.engine == PW_ENGINE_JIT || s->cfg.engine == PW_ENGINE_LAZY);
    s->jit_auto = PW_JIT_AVAILABLE && s->cfg.engine == PW_ENGINE_AUTO;
    s->jit_lazy = s->cfg.engine == PW_ENGINE_LAZY;
    atomic_init(&s->interrupt, 0);
    s->empty_mem = pw__memory_create(s, 0, 0, false);
    if (!s->empty_mem) {
        pw_store_free(s);
        pw__fail(err, PW_ERR_NOMEM, "out of memory");
        return NULL;
    }
    return s;
}

/* The stacks are reserved lazily (first call) with mmap so untouched pages cost
 * nothing; with a pool they are reused mappings (pool.c: no zeroing needed). */
bool pw__store_ensure_stack(pw_store *s) {
    if (s->stack) return true;
    size_t nslots = s->cfg.value_stack_bytes / sizeof(pw_slot);
    if (nslots < 4096) nslots = 4096;
    size_t bytes = (nslots + PW_STACK_MARGIN) * sizeof(pw_slot);
    void *p = pw__stack_map(s->cfg.pool, bytes);
    if (!p) return false;
    size_t fbytes = (size_t)s->cfg.max_call_depth * sizeof(pw_frame);
    void *fpg = pw__stack_map(s->cfg.pool, fbytes);
    if (!fpg) {
        pw__stack_unmap(s->cfg.pool, p, bytes);
        return false;
    }
    s->stack = p;
    s->stack_end = s->stack + nslots;
    s->stack_top = s->stack;
    s->frames = fpg;
    s->frames_end = s->frames + s->cfg.max_call_depth;
    s->frame_top = s->frames;
    return true;
}

void *pw__store_alloc_obj(pw_store *s, size_t size, uint8_t kind) {
    pw_obj *o = calloc(1, size);
    if (!o) return NULL;
    o->kind = kind;
    o->next = s->objects;
    s->objects = o;
    return o;
}

static void free_obj(pw_pool *pool, pw_obj *o) {
    switch (o->kind) {
    case PW_OBJ_FUNC: {
        pw_func *f = (pw_func *)o;
        if (f->host) free((void *)f->ft.params);
        break;
    }
    case PW_OBJ_MEMORY: {
        pw_memory *m = (pw_memory *)o;
        if (m->data && m->mapped) pw__mem_unmap(pool, m);
        break;
    }
    case PW_OBJ_TABLE: free(((pw_table *)o)->elems); break;
    case PW_OBJ_INSTANCE: {
        pw_instance *i = (pw_instance *)o;
        if (i->elem_refs)
            for (uint32_t k = 0; k < i->mod->nelems; k++)
                free(i->elem_refs[k]);
        free(i->funcs);
        free(i->tables);
        free(i->mems);
        free(i->globals);
        free(i->tags);
        free(i->type_ids);
        free(i->elem_refs);
        free(i->elem_len);
        free(i->data_dropped);
        break;
    }
    default: break;
    }
    free(o);
}

void pw_store_free(pw_store *s) {
    if (!s) return;
    pw__gc_free_all(s);
    pw_obj *o = s->objects;
    while (o) {
        pw_obj *n = o->next;
        free_obj(s->cfg.pool, o);
        o = n;
    }
    if (s->stack)
        pw__stack_unmap(s->cfg.pool, s->stack,
                        (size_t)(s->stack_end - s->stack + PW_STACK_MARGIN) * sizeof(pw_slot));
    if (s->frames)
        pw__stack_unmap(s->cfg.pool, s->frames,
                        (size_t)(s->frames_end - s->frames) * sizeof(pw_frame));
    for (uint32_t i = 0; i < s->ntypes; i++)
        free(s->types[i].types);
    free(s->types);
    free(s->hostrefs);
    pw_pool *pool = s->cfg.pool;
    store_unmap(pool, s);
    pw__pool_detach(pool);
}

void pw_store_interrupt(pw_store *s) {
    atomic_store(&s->interrupt, 1);
    /* after the flag (both sequentially consistent): JIT code's direct calls take the
     * helper, which polls the flag (jit.c, enter_jit) */
    atomic_store(&s->jit_call_limit, UINTPTR_MAX);
    /* and the loop heads of guard-variant code, which load the poll page */
    poll_page(s, true);
}

bool pw_store_interrupted(const pw_store *s) {
    return atomic_load_explicit(&s->interrupt, memory_order_relaxed) != 0;
}

void pw_store_clear_interrupt(pw_store *s) {
    poll_page(s, false); /* before the flag: a poll that still faults stops the run */
    atomic_store(&s->interrupt, 0);
}

/* Type registry. Ids start at 1 so that 0 means "no type" in object headers. */

static uint32_t shape_of(uint32_t form, uint32_t rec_len, uint32_t pos, uint32_t np, uint32_t nr) {
    uint32_t h = form * 0x9e3779b1u;
    h = (h ^ rec_len) * 0x85ebca6bu;
    h = (h ^ pos) * 0xc2b2ae35u;
    h = (h ^ np) * 0x27d4eb2fu;
    return h ^ nr;
}

static uint32_t mod_shape(const pw_module *m, uint32_t idx) {
    const pw_deftype *t = &m->types[idx];
    uint32_t np = 0, nr = 0;
    if (t->form == PW_FORM_FUNC) {
        np = t->u.func.nparams;
        nr = t->u.func.nresults;
    } else if (t->form == PW_FORM_STRUCT) {
        np = t->u.strct.nfields;
    }
    return shape_of(t->form, t->rec_len, idx - t->rec_start, np, nr);
}

/* A host type (final, own recursion group, abstract types) against a module type. */
static bool host_eq_mod(uint32_t np, uint32_t nr, const pw_valtype *types, const pw_module *m,
                        uint32_t idx) {
    const pw_deftype *t = &m->types[idx];
    if (t->form != PW_FORM_FUNC || !t->final || t->super != UINT32_MAX || t->rec_len != 1 ||
        t->u.func.nparams != np || t->u.func.nresults != nr)
        return false;
    for (uint32_t i = 0; i < np + nr; i++) {
        pw_valtype a = types[i], b = t->u.func.types[i];
        if (a != b) return false;
        if (PW_VT_KIND(a) == PW_K_REF && !(PW_VT_HEAP(a) & PW_HT_ABS)) return false;
    }
    return true;
}

static uint32_t add_type(pw_store *s, pw_regtype e, bool *oom) {
    if (s->ntypes == s->captypes) {
        uint32_t nc = s->captypes ? s->captypes * 2 : 16;
        pw_regtype *nt = realloc(s->types, nc * sizeof *nt);
        if (!nt) {
            *oom = true;
            return 0;
        }
        s->types = nt;
        s->captypes = nc;
    }
    s->types[s->ntypes] = e;
    return ++s->ntypes;
}

uint32_t pw__store_type_id(pw_store *s, uint32_t nparams, uint32_t nresults,
                           const pw_valtype *types, bool *oom) {
    uint32_t n = nparams + nresults;
    uint32_t shape = shape_of(PW_FORM_FUNC, 1, 0, nparams, nresults);
    for (uint32_t i = 0; i < s->ntypes; i++) {
        pw_regtype *t = &s->types[i];
        if (t->shape != shape) continue;
        if (t->m ? host_eq_mod(nparams, nresults, types, t->m, t->idx)
                 : (t->nparams == nparams && t->nresults == nresults &&
                    (n == 0 || memcmp(t->types, types, n * sizeof *types) == 0)))
            return i + 1;
    }
    pw_valtype *copy = malloc((n ? n : 1) * sizeof *copy);
    if (!copy) {
        *oom = true;
        return 0;
    }
    if (n) memcpy(copy, types, n * sizeof *types);
    uint32_t id = add_type(s, (pw_regtype){NULL, 0, shape, nparams, nresults, copy}, oom);
    if (!id) free(copy);
    return id;
}

uint32_t pw__store_type_id_mod(pw_store *s, const pw_module *m, uint32_t idx, bool *oom) {
    uint32_t shape = mod_shape(m, idx);
    for (uint32_t i = 0; i < s->ntypes; i++) {
        pw_regtype *t = &s->types[i];
        if (t->shape != shape) continue;
        if (t->m ? pw__deftype_equiv(t->m, t->idx, m, idx)
                 : host_eq_mod(t->nparams, t->nresults, t->types, m, idx))
            return i + 1;
    }
    return add_type(s, (pw_regtype){m, idx, shape, 0, 0, NULL}, oom);
}

bool pw__func_type_sub(const pw_func *f, const pw_module *m, uint32_t t) {
    return f->tmod && pw__deftype_sub_cross(f->tmod, f->tidx, m, t);
}

bool pw__valtype_sub_cross(const pw_module *ma, pw_valtype a, const pw_module *mb, pw_valtype b) {
    if (a == b && (PW_VT_KIND(a) != PW_K_REF || (PW_VT_HEAP(a) & PW_HT_ABS))) return true;
    if (PW_VT_KIND(a) != PW_VT_KIND(b)) return false;
    if (PW_VT_KIND(a) != PW_K_REF) return true;
    if (PW_VT_NULLABLE(a) && !PW_VT_NULLABLE(b)) return false;
    uint32_t ha = PW_VT_HEAP(a), hb = PW_VT_HEAP(b);
    bool absa = (ha & PW_HT_ABS) != 0, absb = (hb & PW_HT_ABS) != 0;
    if (absa && absb) return pw__heaptype_sub(NULL, ha, hb);
    if (absb) return ma && pw__heaptype_sub(ma, ha, hb);
    if (absa) return mb && pw__heaptype_sub(mb, ha, hb);
    return ma && mb && pw__deftype_sub_cross(ma, ha, mb, hb);
}

/* ---------------------------------------------------------------- host references */

static uint32_t hash64(uint64_t v) {
    v ^= v >> 33;
    v *= 0xff51afd7ed558ccdull;
    v ^= v >> 33;
    return (uint32_t)v;
}

pw_ref pw_externref_new(pw_store *s, uint64_t v, pw_error *err) {
    if (s->caphostrefs) {
        uint32_t mask = s->caphostrefs - 1;
        for (uint32_t i = hash64(v) & mask;; i = (i + 1) & mask) {
            pw_hostref *h = s->hostrefs[i];
            if (!h) break;
            if (h->value == v) return (pw_ref)h;
        }
    }
    if ((s->nhostrefs + 1) * 2 > s->caphostrefs) {
        uint32_t nc = s->caphostrefs ? s->caphostrefs * 2 : 16;
        pw_hostref **nt = calloc(nc, sizeof *nt);
        if (!nt) {
            pw__fail(err, PW_ERR_NOMEM, "out of memory");
            return PW_NULL_REF;
        }
        for (uint32_t i = 0; i < s->caphostrefs; i++) {
            pw_hostref *h = s->hostrefs[i];
            if (!h) continue;
            uint32_t j = hash64(h->value) & (nc - 1);
            while (nt[j])
                j = (j + 1) & (nc - 1);
            nt[j] = h;
        }
        free(s->hostrefs);
        s->hostrefs = nt;
        s->caphostrefs = nc;
    }
    pw_hostref *h = pw__store_alloc_obj(s, sizeof *h, PW_OBJ_HOSTREF);
    if (!h) {
        pw__fail(err, PW_ERR_NOMEM, "out of memory");
        return PW_NULL_REF;
    }
    h->value = v;
    uint32_t j = hash64(v) & (s->caphostrefs - 1);
    while (s->hostrefs[j])
        j = (j + 1) & (s->caphostrefs - 1);
    s->hostrefs[j] = h;
    s->nhostrefs++;
    return (pw_ref)h;
}

bool pw_externref_value(pw_ref r, uint64_t *v) {
    if (!r || (r & 1)) return false;
    const pw_obj *o = (const pw_obj *)r;
    if (o->kind != PW_OBJ_HOSTREF) return false;
    *v = ((const pw_hostref *)o)->value;
    return true;
}
