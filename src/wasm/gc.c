/*
 * gc.c — the GC heap: layouts of struct/array types, allocation against the store's
 * memory cap, the precise mark-sweep collector, run-time casts and the array bulk
 * operations.
 *
 * Collection is triggered by allocation volume: when the bytes allocated since the
 * heap was last traced exceed max(PW_GC_MIN, 2 x live-after-last-collection), or when
 * an allocation would cross the store's memory cap (shared with linear memories and
 * tables). An allocation that still does not fit after a full collection fails; the
 * run then ends with PW_ERR_OOM.
 *
 * Roots: the slots of every live Wasm frame named by the precise stack map of the
 * frame's current site (compile_gc.h records one at every call and allocating
 * instruction), globals, tables, element segments held by instances, exception
 * packages (store objects, never collected), arguments/results of running host
 * calls, and host handles. Marking uses an explicit stack; if growing it fails, the
 * collector rescans the heap for marked objects with unmarked children until done.
 */
#include "wasm/gc.h"

#include <stdlib.h>
#include <string.h>

#define PW_GC_MIN ((uint64_t)4 << 20) /* bytes allocated before the first collection */

/* ---------------------------------------------------------------- layouts */

static uint8_t field_kind(const pw_field *f) {
    if (f->packed == PW_PACK_I8) return PW_GK_I8;
    if (f->packed == PW_PACK_I16) return PW_GK_I16;
    switch (PW_VT_KIND(f->type)) {
    case PW_K_I32:
    case PW_K_F32: return PW_GK_I32;
    case PW_K_REF: return PW_GK_REF;
    default: return PW_GK_I64;
    }
}

static uint32_t kind_size(uint8_t k) {
    static const uint8_t sz[] = {1, 2, 4, 8, 8};
    return sz[k];
}

bool pw__gc_build_layouts(const pw_module *m, struct pw_cmodule *cm) {
    cm->gc_layouts = calloc(m->ntypes ? m->ntypes : 1, sizeof *cm->gc_layouts);
    if (!cm->gc_layouts) return false;
    cm->gc_nlayouts = m->ntypes;
    for (uint32_t i = 0; i < m->ntypes; i++) {
        const pw_deftype *t = &m->types[i];
        pw_gclayout *l = &cm->gc_layouts[i];
        if (t->form == PW_FORM_ARRAY) {
            l->kind = malloc(1);
            if (!l->kind) return false;
            l->kind[0] = field_kind(&t->u.array);
            l->size = kind_size(l->kind[0]);
        } else if (t->form == PW_FORM_STRUCT) {
            uint32_t n = t->u.strct.nfields;
            l->nfields = n;
            l->kind = malloc(n ? n : 1);
            l->off = malloc((n ? n : 1) * sizeof *l->off);
            l->refoff = malloc((n ? n : 1) * sizeof *l->refoff);
            if (!l->kind || !l->off || !l->refoff) return false;
            uint32_t off = 0;
            for (uint32_t j = 0; j < n; j++) {
                uint8_t k = field_kind(&t->u.strct.fields[j]);
                uint32_t sz = kind_size(k);
                off = (off + sz - 1) & ~(sz - 1);
                l->kind[j] = k;
                l->off[j] = off;
                if (k == PW_GK_REF) l->refoff[l->nrefs++] = off;
                off += sz;
            }
            l->size = (off + 7) & ~7u;
            l->all8 = true;
            for (uint32_t j = 0; j < n; j++)
                if (l->kind[j] < PW_GK_I64) l->all8 = false;
        }
    }
    return true;
}

void pw__gc_free_layouts(struct pw_cmodule *cm) {
    if (!cm->gc_layouts) return;
    for (uint32_t i = 0; i < cm->gc_nlayouts; i++) {
        free(cm->gc_layouts[i].kind);
        free(cm->gc_layouts[i].off);
        free(cm->gc_layouts[i].refoff);
    }
    free(cm->gc_layouts);
    cm->gc_layouts = NULL;
}

/* The layout of a struct's type (cached per store type id at allocation). */
static const pw_gclayout *obj_layout(const pw_store *s, const pw_obj *o) {
    return s->gc_heap->lay[o->type_id];
}

/* Size of a large object as accounted by gc_heap.c (allocation size + overhead). */
static uint64_t large_bytes(const pw_gcheap *h, const pw_obj *o) {
    if (o->kind == PW_OBJ_EXN)
        return pw__gcheap_cost(sizeof(pw_exn) + ((const pw_exn *)o)->n * sizeof(pw_slot));
    if (o->kind == PW_OBJ_ARRAY) {
        const pw_array *a = (const pw_array *)o;
        return pw__gcheap_cost(sizeof(pw_array) + (size_t)a->len * a->esize);
    }
    return pw__gcheap_cost(sizeof(pw_struct) + h->lay[o->type_id]->size);
}

/* ---------------------------------------------------------------- field access */

void pw__gc_store_field(uint8_t *p, uint8_t kind, pw_slot v) {
    pw__gc_field_put(p, kind, v);
}

pw_slot pw__gc_load_field(const uint8_t *p, uint8_t kind, bool sign) {
    return pw__gc_field_get(p, kind, sign);
}

/* ---------------------------------------------------------------- marking */

typedef struct gcctx {
    pw_store *s;
    pw_obj **stk;
    size_t n, cap;
    bool overflow;
    bool nomap; /* a frame without a stack map: keep everything (never expected) */
} gcctx;

static void push_obj(gcctx *g, pw_obj *o) {
    if (g->n == g->cap) {
        size_t nc = g->cap ? g->cap * 2 : 1024;
        pw_obj **ns = realloc(g->stk, nc * sizeof *ns);
        if (!ns) {
            g->overflow = true; /* o is marked; the rescan finds its children */
            return;
        }
        g->stk = ns;
        g->cap = nc;
    }
    g->stk[g->n++] = o;
}

static inline void mark_ref(gcctx *g, pw_ref r) {
    if (!r || (r & 1)) return;
    pw_obj *o = (pw_obj *)r;
    if ((o->kind != PW_OBJ_STRUCT && o->kind != PW_OBJ_ARRAY && o->kind != PW_OBJ_EXN) || o->mark)
        return;
    o->mark = 1;
    push_obj(g, o);
}

static const pw_valtype *exn_types(const pw_exn *e) {
    return e->tag->tmod->types[e->tag->type].u.func.types; /* tags come from modules */
}

static void trace(gcctx *g, pw_obj *o) {
    if (o->kind == PW_OBJ_EXN) {
        pw_exn *e = (pw_exn *)o;
        /* payload cells; a v128 parameter takes two */
        const pw_valtype *t = exn_types(e);
        for (uint32_t i = 0, k = 0; k < e->n; k += 1 + (t[i] == PW_VT_V128), i++)
            if (PW_VT_KIND(t[i]) == PW_K_REF) mark_ref(g, e->vals[k].ref);
        return;
    }
    if (o->kind == PW_OBJ_ARRAY) {
        pw_array *a = (pw_array *)o;
        if (o->flags != PW_GK_REF) return;
        for (uint32_t i = 0; i < a->len; i++) {
            pw_ref r;
            memcpy(&r, a->data + (size_t)i * 8, sizeof r);
            mark_ref(g, r);
        }
        return;
    }
    const pw_gclayout *l = obj_layout(g->s, o);
    pw_struct *st = (pw_struct *)o;
    for (uint32_t i = 0; i < l->nrefs; i++) {
        pw_ref r;
        memcpy(&r, st->data + l->refoff[i], sizeof r);
        mark_ref(g, r);
    }
}

static void drain(gcctx *g) {
    while (g->n)
        trace(g, g->stk[--g->n]);
}

const pw_gcsite *pw__gc_site(const pw_cfunc *cf, uint32_t pc) {
    uint32_t lo = 0, hi = cf->gc_nsites;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (cf->gc_sites[mid].pc < pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < cf->gc_nsites && cf->gc_sites[lo].pc == pc ? &cf->gc_sites[lo] : NULL;
}

static void scan_frame(gcctx *g, const pw_instance *inst, const uint32_t *pc, pw_slot *fp) {
    /* a frame's function ran, so it is compiled (the interpreter and the JIT compile
     * a function before running it) */
    const pw_cfunc *cf = pw__cfunc_at(inst->mod->code, pc);
    const pw_gcsite *site = pw__cfunc_ready(cf) ? pw__gc_site(cf, (uint32_t)(pc - cf->code)) : NULL;
    if (!site) {
        g->nomap = true;
        return;
    }
    const uint32_t *map = cf->gc_maps + site->map;
    const uint32_t *locals = cf->gc_maps + map[0];
    for (uint32_t i = 1; i <= locals[0]; i++)
        mark_ref(g, fp[locals[i]].ref);
    for (uint32_t i = 0; i < map[1]; i++)
        mark_ref(g, fp[map[2 + i]].ref);
}

static void mark_valtype(gcctx *g, pw_valtype t, pw_slot v) {
    if (PW_VT_KIND(t) == PW_K_REF) mark_ref(g, v.ref);
}

static void mark_roots(gcctx *g, const pw_gcframe *cur) {
    pw_store *s = g->s;
    if (cur && cur->pc) scan_frame(g, cur->inst, cur->pc, cur->fp);
    if (cur)
        for (uint32_t i = 0, k = 0; k < cur->nextra; i++) {
            /* extra_vt: value types of cells (a v128 takes two); else kinds per cell */
            bool ref = cur->extra_vt ? PW_VT_KIND(cur->extra_vt[i]) == PW_K_REF
                                     : cur->extra_kind[cur->extra_same ? 0 : i] == PW_GK_REF;
            if (ref) mark_ref(g, cur->extra[k].ref);
            k += 1 + (cur->extra_vt && cur->extra_vt[i] == PW_VT_V128);
        }
    if (s->exn) mark_ref(g, (pw_ref)s->exn); /* escaped to the embedder */
    if (s->frames)
        for (pw_frame *fr = s->frame_top; fr > s->frames;) {
            fr--;
            if (fr->ret_pc) scan_frame(g, fr->inst, fr->ret_pc, fr->fp);
        }
    for (pw_hostroots *h = s->hostroots; h; h = h->prev) {
        /* args: the parameters' cells, then the results' (a v128 takes two) */
        const pw_functype *ft = &h->f->ft;
        uint32_t k = 0;
        for (uint32_t i = 0; i < ft->nparams; k += 1 + (ft->params[i] == PW_VT_V128), i++)
            mark_valtype(g, ft->params[i], h->args[k]);
        k = h->f->nparams;
        for (uint32_t i = 0; i < ft->nresults; k += 1 + (ft->results[i] == PW_VT_V128), i++)
            mark_valtype(g, ft->results[i], h->args[k]);
    }
    for (uint32_t i = 0; i < s->nhandles; i++)
        mark_ref(g, s->handles[i]);
    for (pw_obj *o = s->objects; o; o = o->next) {
        switch (o->kind) {
        case PW_OBJ_GLOBAL: {
            pw_global *gl = (pw_global *)o;
            mark_valtype(g, gl->type, gl->val);
            break;
        }
        case PW_OBJ_TABLE: {
            pw_table *t = (pw_table *)o;
            for (uint32_t i = 0; i < t->size; i++)
                mark_ref(g, t->elems[i]);
            break;
        }
        case PW_OBJ_INSTANCE: {
            pw_instance *in = (pw_instance *)o;
            if (!in->elem_refs) break;
            for (uint32_t k = 0; k < in->mod->nelems; k++)
                if (in->elem_refs[k])
                    for (uint32_t j = 0; j < in->mod->elems[k].count; j++)
                        mark_ref(g, in->elem_refs[k][j]);
            break;
        }
        default: break;
        }
        drain(g);
    }
    drain(g);
}

/* After a mark-stack overflow: push unmarked children of marked objects. */
static void rescan_one(void *ctx, pw_obj *o) {
    gcctx *g = ctx;
    if (!o->mark) return;
    trace(g, o);
    drain(g);
}

static void rescan(gcctx *g) {
    while (g->overflow) {
        g->overflow = false;
        pw__gcheap_each(g->s->gc_heap, rescan_one, g);
    }
}

void pw__gc_collect(pw_store *s, const pw_gcframe *cur) {
    if (!s->gc_heap) return;
    gcctx g = {.s = s};
    mark_roots(&g, cur);
    rescan(&g);
    free(g.stk);
    uint64_t live = pw__gcheap_sweep(s, s->gc_heap, large_bytes, g.nomap);
    s->gc_nomap += g.nomap;
    s->gc_bytes = live;
    s->gc_live = live;
    s->gc_threshold = live * 2 > PW_GC_MIN ? live * 2 : PW_GC_MIN;
    s->gc_count++;
}

void pw__gc_free_all(pw_store *s) {
    pw__gcheap_free(s->gc_heap);
    s->gc_heap = NULL;
    free(s->handles);
    s->handles = NULL;
}

/* ---------------------------------------------------------------- allocation */

static void *gc_alloc(pw_store *s, size_t bytes, uint8_t kind, const pw_gcframe *cur) {
    pw_gcheap *h = s->gc_heap;
    /* Fast path: a free cell of the size class, below the collection threshold. */
    if (__builtin_expect(h && bytes <= PW_GC_CELL_MAX, 1)) {
        uint32_t k = (uint32_t)((bytes + 15) / 16) - 1, acct = (k + 1) * 16;
        pw_obj *o = h->free[k];
        if (__builtin_expect(o && s->gc_bytes + acct <= s->gc_threshold && !s->gc_stress, 1)) {
            h->free[k] = o->next;
            memset(o, 0, acct);
            o->kind = kind;
            s->gc_bytes += acct;
            if (s->gc_bytes > s->gc_peak) s->gc_peak = s->gc_bytes;
            return o;
        }
    }
    if (!h && !(h = s->gc_heap = pw__gcheap_new())) return NULL;
    uint64_t acct = pw__gcheap_cost(bytes);
    if (!s->gc_threshold) s->gc_threshold = PW_GC_MIN;
    if (!s->gc_inhibit &&
        (s->gc_stress || s->gc_bytes + acct > s->gc_threshold || !pw__gcheap_fits(s, h, bytes)))
        pw__gc_collect(s, cur);
    pw_obj *o = pw__gcheap_alloc(s, h, bytes);
    if (!o) return NULL;
    o->kind = kind;
    s->gc_bytes += acct;
    if (s->gc_bytes > s->gc_peak) s->gc_peak = s->gc_bytes;
    return o;
}

pw_struct *pw__gc_new_struct(pw_store *s, pw_instance *inst, uint32_t typeidx,
                             const pw_gcframe *cur) {
    const pw_gclayout *l = &inst->mod->code->gc_layouts[typeidx];
    uint32_t id = inst->type_ids[typeidx];
    pw_gcheap *h = s->gc_heap;
    if (!h || id >= h->nlay || !h->lay[id]) { /* first struct of this store type */
        if (!h && !(h = s->gc_heap = pw__gcheap_new())) return NULL;
        if (id >= h->nlay) {
            uint32_t n = id + 16;
            const pw_gclayout **nl = realloc(h->lay, n * sizeof *nl);
            if (!nl) return NULL;
            memset(nl + h->nlay, 0, (n - h->nlay) * sizeof *nl);
            h->lay = nl;
            h->nlay = n;
        }
        h->lay[id] = l;
    }
    pw_struct *st = gc_alloc(s, sizeof(pw_struct) + l->size, PW_OBJ_STRUCT, cur);
    if (st) st->hdr.type_id = id;
    return st;
}

pw_array *pw__gc_new_array(pw_store *s, pw_instance *inst, uint32_t typeidx, uint32_t len,
                           const pw_gcframe *cur) {
    const pw_gclayout *l = &inst->mod->code->gc_layouts[typeidx];
    uint64_t bytes = sizeof(pw_array) + (uint64_t)len * l->size;
    if (bytes > s->cfg.memory_cap) return NULL;
    pw_array *a = gc_alloc(s, (size_t)bytes, PW_OBJ_ARRAY, cur);
    if (!a) return NULL;
    a->hdr.type_id = inst->type_ids[typeidx];
    a->hdr.flags = l->kind[0];
    a->len = len;
    a->esize = l->size;
    return a;
}

pw_exn *pw__gc_new_exn(pw_store *s, pw_tag *tag, const pw_slot *vals, const pw_gcframe *cur) {
    pw_gcframe f = cur ? *cur : (pw_gcframe){0};
    f.extra = (const pw_val *)vals;
    f.nextra = tag->nparams;
    f.extra_vt = tag->tmod->types[tag->type].u.func.types;
    pw_exn *e = gc_alloc(s, sizeof *e + tag->nparams * sizeof(pw_slot), PW_OBJ_EXN, &f);
    if (!e) return NULL;
    e->tag = tag;
    e->n = tag->nparams;
    if (tag->nparams) memcpy(e->vals, vals, tag->nparams * sizeof(pw_slot));
    return e;
}

/* ---------------------------------------------------------------- casts */

static bool type_sub_slow(pw_store *s, pw_obj *o, pw_instance *inst, uint32_t h) {
    uint32_t a = o->type_id, b = inst->type_ids[h];
    uint64_t key = ((uint64_t)a << 32) | b;
    uint32_t slot = (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 56);
    if (s->cast_cache[slot] >> 1 == key) return s->cast_cache[slot] & 1;
    bool r;
    if (o->kind == PW_OBJ_FUNC) {
        r = pw__func_type_sub((pw_func *)o, inst->mod, h);
    } else {
        const pw_regtype *rt = &s->types[a - 1];
        r = rt->m && pw__deftype_sub_cross(rt->m, rt->idx, inst->mod, h);
    }
    if (a < 0x80000000u) s->cast_cache[slot] = (key << 1) | r;
    return r;
}

bool pw__gc_ref_test(pw_store *s, pw_instance *inst, pw_ref r, pw_valtype t) {
    if (!r) return PW_VT_NULLABLE(t);
    uint32_t h = PW_VT_HEAP(t);
    bool i31 = r & 1;
    uint8_t kind = i31 ? 0 : ((const pw_obj *)r)->kind;
    if (h & PW_HT_ABS) {
        switch (h & 0xFF) {
        case PW_HT_EQ: return i31 || kind == PW_OBJ_STRUCT || kind == PW_OBJ_ARRAY;
        case PW_HT_I31: return i31;
        case PW_HT_STRUCT: return kind == PW_OBJ_STRUCT;
        case PW_HT_ARRAY: return kind == PW_OBJ_ARRAY;
        case PW_HT_NONE:
        case PW_HT_NOFUNC:
        case PW_HT_NOEXTERN:
        case PW_HT_NOEXN: return false;
        default: return true; /* any, func, extern, exn: validation fixed the hierarchy */
        }
    }
    if (i31 || (kind != PW_OBJ_STRUCT && kind != PW_OBJ_ARRAY && kind != PW_OBJ_FUNC)) return false;
    pw_obj *o = (pw_obj *)r;
    if (o->type_id == inst->type_ids[h]) return true;
    return type_sub_slow(s, o, inst, h);
}

/* ---------------------------------------------------------------- arrays */

pw_trap_code pw__gc_array_fill(pw_array *a, uint32_t d, pw_slot v, uint32_t n) {
    if ((uint64_t)d + n > a->len) return PW_TRAP_ARRAY_OOB;
    uint8_t k = (uint8_t)a->hdr.flags;
    uint32_t es = a->esize;
    for (uint32_t i = 0; i < n; i++)
        pw__gc_store_field(a->data + (size_t)(d + i) * es, k, v);
    return PW_TRAP_NONE;
}

pw_trap_code pw__gc_array_copy(pw_array *da, uint32_t d, pw_array *sa, uint32_t si, uint32_t n) {
    if ((uint64_t)d + n > da->len || (uint64_t)si + n > sa->len) return PW_TRAP_ARRAY_OOB;
    if (n)
        memmove(da->data + (size_t)d * da->esize, sa->data + (size_t)si * sa->esize,
                (size_t)n * da->esize);
    return PW_TRAP_NONE;
}

pw_trap_code pw__gc_array_init_data(pw_instance *inst, pw_array *a, uint32_t seg, uint32_t d,
                                    uint32_t si, uint32_t n) {
    const pw_data *ds = &inst->mod->datas[seg];
    uint64_t len = inst->data_dropped[seg] ? 0 : ds->bytes.len;
    if ((uint64_t)d + n > a->len) return PW_TRAP_ARRAY_OOB;
    if ((uint64_t)si + (uint64_t)n * a->esize > len) return PW_TRAP_DATA_SEG_OOB;
    if (n)
        memcpy(a->data + (size_t)d * a->esize, inst->mod->bytes + ds->bytes.off + si,
               (size_t)n * a->esize);
    return PW_TRAP_NONE;
}

pw_trap_code pw__gc_array_init_elem(pw_instance *inst, pw_array *a, uint32_t seg, uint32_t d,
                                    uint32_t si, uint32_t n) {
    uint64_t len = inst->elem_len[seg];
    if ((uint64_t)d + n > a->len) return PW_TRAP_ARRAY_OOB;
    if ((uint64_t)si + n > len) return PW_TRAP_ELEM_SEG_OOB;
    if (n) memcpy(a->data + (size_t)d * 8, inst->elem_refs[seg] + si, (size_t)n * sizeof(pw_ref));
    return PW_TRAP_NONE;
}

pw_trap_code pw__gc_array_new_data(pw_store *s, pw_instance *inst, uint32_t typeidx, uint32_t seg,
                                   uint32_t off, uint32_t len, const pw_gcframe *cur,
                                   pw_array **out) {
    const pw_data *ds = &inst->mod->datas[seg];
    uint64_t dlen = inst->data_dropped[seg] ? 0 : ds->bytes.len;
    uint32_t es = inst->mod->code->gc_layouts[typeidx].size;
    if ((uint64_t)off + (uint64_t)len * es > dlen) return PW_TRAP_DATA_SEG_OOB;
    pw_array *a = pw__gc_new_array(s, inst, typeidx, len, cur);
    if (!a) return PW_TRAP_COUNT_;
    if (len) memcpy(a->data, inst->mod->bytes + ds->bytes.off + off, (size_t)len * es);
    *out = a;
    return PW_TRAP_NONE;
}

pw_trap_code pw__gc_array_new_elem(pw_store *s, pw_instance *inst, uint32_t typeidx, uint32_t seg,
                                   uint32_t off, uint32_t len, const pw_gcframe *cur,
                                   pw_array **out) {
    if ((uint64_t)off + len > inst->elem_len[seg]) return PW_TRAP_ELEM_SEG_OOB;
    pw_array *a = pw__gc_new_array(s, inst, typeidx, len, cur);
    if (!a) return PW_TRAP_COUNT_;
    if (len) memcpy(a->data, inst->elem_refs[seg] + off, (size_t)len * sizeof(pw_ref));
    *out = a;
    return PW_TRAP_NONE;
}
