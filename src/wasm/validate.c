/*
 * validate.c — module-level validation, in the reference interpreter's order: types,
 * imports, tags, functions, memories, tables, globals, data, elements, bodies,
 * start, exports. Expressions are checked by validate_expr.c.
 *
 * Wasm 3.0 multi-memory and memory64/table64 are in: any number of memories; a
 * memory or table with i64 addresses takes i64 segment offsets (pw_limits.is64).
 */
#include <stdlib.h>
#include <string.h>

#include "wasm/validate.h"

static pw_status invalid(pw_error *err, const char *fmt, uint32_t a) {
    return pw__fail(err, PW_ERR_INVALID, fmt, a);
}

static pw_status check_functype_idx(pw_module *m, pw_error *err, uint32_t x) {
    if (x >= m->ntypes) return invalid(err, "unknown type %u", x);
    if (m->types[x].form != PW_FORM_FUNC)
        return invalid(err, "type mismatch: non-function type %u", x);
    return PW_OK;
}

static pw_status check_limits(pw_error *err, const pw_limits *l, uint64_t range, const char *msg) {
    if (l->min > range || (l->max != UINT64_MAX && l->max > range))
        return pw__fail(err, PW_ERR_INVALID, "%s", msg);
    if (l->max != UINT64_MAX && l->min > l->max)
        return pw__fail(err, PW_ERR_INVALID, "size minimum must not be greater than maximum");
    return PW_OK;
}

static pw_status check_mem(pw_error *err, const pw_limits *l) {
    if (l->is64)
        return check_limits(err, l, (uint64_t)1 << 48,
                            "memory size must be at most 2^48 pages (256 TiB) for i64");
    return check_limits(err, l, 65536, "memory size must be at most 2^16 pages (4 GiB) for i32");
}

static pw_status check_tabletype(pw_vctx *v, const pw_tabletype *t) {
    if (pw__check_valtype(v, t->elem)) return v->err->status;
    if (t->lim.is64) return check_limits(v->err, &t->lim, UINT64_MAX, "");
    return check_limits(v->err, &t->lim, 0xFFFFFFFFu, "table size must be at most 2^32-1 for i32");
}

/* The value type of addresses of a memory or table. */
static pw_valtype addr_type(const pw_limits *l) {
    return l->is64 ? PW_VT_I64 : PW_VT_I32;
}

static pw_status check_tag(pw_module *m, pw_error *err, uint32_t x) {
    if (check_functype_idx(m, err, x)) return err->status;
    if (m->types[x].u.func.nresults != 0) return invalid(err, "non-empty tag result type%.0u", 0);
    return PW_OK;
}

/* Mark every function referenced outside function bodies (C.refs in the spec). */
static pw_status collect_refs(pw_module *m, pw_error *err) {
    for (uint32_t i = 0; i < m->nexports; i++)
        if (m->exports[i].kind == PW_EXTERN_FUNC && m->exports[i].index < m->nfuncs)
            m->func_declared[m->exports[i].index] = 1;
    pw_span spans[4];
    for (uint32_t pass = 0;; pass++) {
        /* Gather each constant expression of the module in turn. */
        uint32_t ns = 0;
        pw_span *list = NULL;
        uint32_t nlist = 0;
        if (pass < m->ntables) spans[ns++] = m->tables[pass].init;
        if (pass < m->nglobals) spans[ns++] = m->globals[pass].init;
        if (pass < m->ndatas) spans[ns++] = m->datas[pass].offset;
        if (pass < m->nelems) {
            const pw_elem *e = &m->elems[pass];
            if (e->funcs)
                for (uint32_t k = 0; k < e->count; k++)
                    if (e->funcs[k] < m->nfuncs) m->func_declared[e->funcs[k]] = 1;
            list = e->exprs;
            nlist = e->exprs ? e->count : 0;
            if (e->mode == PW_SEG_ACTIVE) spans[ns++] = e->offset;
        }
        if (!ns && !nlist && pass >= m->ntables && pass >= m->nglobals && pass >= m->ndatas &&
            pass >= m->nelems)
            break;
        for (uint32_t k = 0; k < ns + nlist; k++) {
            pw_span s = k < ns ? spans[k] : list[k - ns];
            pw_reader r = {.base = m->bytes, .p = m->bytes + s.off, .err = err};
            r.end = r.p + s.len;
            pw_instr in;
            while (r.p < r.end) {
                if (!pw__instr_read(&r, &in)) return err->status;
                if (in.op == 0xD2 && in.a < m->nfuncs) m->func_declared[in.a] = 1;
            }
        }
    }
    return PW_OK;
}

static pw_status check_exports(pw_module *m, pw_error *err) {
    static const char *const kind_name[] = {"function", "table", "memory", "global", "tag"};
    const uint32_t count[] = {m->nfuncs, m->ntables, m->nmems, m->nglobals, m->ntags};
    for (uint32_t i = 0; i < m->nexports; i++) {
        const pw_export *e = &m->exports[i];
        if (e->kind <= PW_EXTERN_TAG && e->index >= count[e->kind])
            return pw__fail(err, PW_ERR_INVALID, "unknown %s %u", kind_name[e->kind], e->index);
    }
    if (m->nexports < 2) return PW_OK;
    /* Duplicate names: sort indices by name, compare neighbours. */
    uint32_t *ix = malloc((size_t)m->nexports * sizeof *ix);
    if (!ix) return pw__fail(err, PW_ERR_NOMEM, "out of memory");
    for (uint32_t i = 0; i < m->nexports; i++)
        ix[i] = i;
    /* Heap sort: no recursion, O(n log n) on hostile input. */
    uint32_t n = m->nexports;
#define NAME_LT(a, b)                                                                              \
    (memcmp(m->bytes + m->exports[a].name.off, m->bytes + m->exports[b].name.off,                  \
            m->exports[a].name.len < m->exports[b].name.len ? m->exports[a].name.len               \
                                                            : m->exports[b].name.len) < 0 ||       \
     (memcmp(m->bytes + m->exports[a].name.off, m->bytes + m->exports[b].name.off,                 \
             m->exports[a].name.len < m->exports[b].name.len ? m->exports[a].name.len              \
                                                             : m->exports[b].name.len) == 0 &&     \
      m->exports[a].name.len < m->exports[b].name.len))
    for (uint32_t start = n / 2; start-- > 0;) {
        for (uint32_t root = start;;) {
            uint32_t child = 2 * root + 1;
            if (child >= n) break;
            if (child + 1 < n && NAME_LT(ix[child], ix[child + 1])) child++;
            if (!NAME_LT(ix[root], ix[child])) break;
            uint32_t tmp = ix[root];
            ix[root] = ix[child];
            ix[child] = tmp;
            root = child;
        }
    }
    for (uint32_t end = n; end-- > 1;) {
        uint32_t tmp = ix[0];
        ix[0] = ix[end];
        ix[end] = tmp;
        for (uint32_t root = 0;;) {
            uint32_t child = 2 * root + 1;
            if (child >= end) break;
            if (child + 1 < end && NAME_LT(ix[child], ix[child + 1])) child++;
            if (!NAME_LT(ix[root], ix[child])) break;
            tmp = ix[root];
            ix[root] = ix[child];
            ix[child] = tmp;
            root = child;
        }
    }
#undef NAME_LT
    pw_status st = PW_OK;
    for (uint32_t i = 1; i < n && st == PW_OK; i++) {
        const pw_export *a = &m->exports[ix[i - 1]], *b = &m->exports[ix[i]];
        if (a->name.len == b->name.len &&
            memcmp(m->bytes + a->name.off, m->bytes + b->name.off, a->name.len) == 0)
            st = pw__fail(err, PW_ERR_INVALID, "duplicate export name \"%.*s\"", (int)a->name.len,
                          (const char *)m->bytes + a->name.off);
    }
    free(ix);
    return st;
}

static pw_status validate_module(pw_module *m, pw_vctx *v, bool full) {
    pw_error *err = v->err;
    if (pw__types_check(m, err)) return err->status;
    for (uint32_t i = 0; i < m->nimports; i++) {
        const pw_import *im = &m->imports[i];
        switch (im->kind) {
        case PW_EXTERN_FUNC:
            if (check_functype_idx(m, err, im->u.func_type)) return err->status;
            break;
        case PW_EXTERN_TABLE:
            if (check_tabletype(v, &im->u.table)) return err->status;
            break;
        case PW_EXTERN_MEMORY:
            if (check_mem(err, &im->u.memory)) return err->status;
            break;
        case PW_EXTERN_GLOBAL:
            if (pw__check_valtype(v, im->u.global.type)) return err->status;
            break;
        case PW_EXTERN_TAG:
            if (check_tag(m, err, im->u.tag_type)) return err->status;
            break;
        }
    }
    for (uint32_t i = m->ntag_imports; i < m->ntags; i++)
        if (check_tag(m, err, m->tag_types[i])) return err->status;
    for (uint32_t i = m->nfunc_imports; i < m->nfuncs; i++)
        if (check_functype_idx(m, err, m->func_types[i])) return err->status;
    for (uint32_t i = m->nmem_imports; i < m->nmems; i++)
        if (check_mem(err, &m->mems[i])) return err->status;
    if (collect_refs(m, err)) return err->status;
    for (uint32_t i = m->ntable_imports; i < m->ntables; i++) {
        const pw_table_def *t = &m->tables[i];
        if (check_tabletype(v, &t->type)) return err->status;
        if (t->init.len == 0) {
            if (!PW_VT_NULLABLE(t->type.elem))
                return pw__fail(err, PW_ERR_INVALID,
                                "type mismatch: a table of non-nullable references needs an "
                                "initializer");
        } else if (full && pw__validate_const(v, t->init, t->type.elem, m->nglobal_imports)) {
            return err->status;
        }
    }
    for (uint32_t i = 0; i < m->nglobals; i++) {
        const pw_global_def *g = &m->globals[i];
        if (pw__check_valtype(v, g->type.type)) return err->status;
        if (full && i >= m->nglobal_imports && pw__validate_const(v, g->init, g->type.type, i))
            return err->status;
    }
    for (uint32_t i = 0; i < m->ndatas; i++) {
        const pw_data *d = &m->datas[i];
        if (d->mode != PW_SEG_ACTIVE) continue;
        if (d->memory >= m->nmems) return invalid(err, "unknown memory %u", d->memory);
        if (full && pw__validate_const(v, d->offset, addr_type(&m->mems[d->memory]), m->nglobals))
            return err->status;
    }
    for (uint32_t i = 0; i < m->nelems; i++) {
        const pw_elem *e = &m->elems[i];
        if (pw__check_valtype(v, e->type)) return err->status;
        if (e->exprs) {
            for (uint32_t k = 0; full && k < e->count; k++)
                if (pw__validate_const(v, e->exprs[k], e->type, m->nglobals)) return err->status;
        } else {
            for (uint32_t k = 0; k < e->count; k++)
                if (e->funcs[k] >= m->nfuncs)
                    return invalid(err, "unknown function %u", e->funcs[k]);
        }
        if (e->mode == PW_SEG_ACTIVE) {
            if (e->table >= m->ntables) return invalid(err, "unknown table %u", e->table);
            if (!pw__valtype_sub(m, e->type, m->tables[e->table].type.elem))
                return pw__fail(err, PW_ERR_INVALID,
                                "type mismatch: element segment's type does not match the "
                                "table's element type");
            if (full && pw__validate_const(v, e->offset, addr_type(&m->tables[e->table].type.lim),
                                           m->nglobals))
                return err->status;
        }
    }
    uint32_t ndef = full ? m->nfuncs - m->nfunc_imports : 0;
    for (uint32_t i = 0; i < ndef; i++) {
        if (pw__validate_func(v, i) == PW_OK) continue;
        if (err->status != PW_ERR_INVALID) return err->status;
        /* The spec decodes every body before validating any: a malformed body later
         * on takes precedence over this invalid one. */
        pw_error first = *err;
        for (uint32_t j = i; j < ndef; j++)
            if (pw__scan_body(m, j, err) != PW_OK) return err->status;
        *err = first;
        return err->status;
    }
    if (m->start != UINT32_MAX) {
        const pw_deftype *t = pw__functype_of(m, m->start);
        if (m->start >= m->nfuncs) return invalid(err, "unknown function %u", m->start);
        if (!t || t->u.func.nparams || t->u.func.nresults)
            return pw__fail(err, PW_ERR_INVALID,
                            "start function must not have parameters or results");
    }
    if (check_exports(m, err)) return err->status;
    return PW_OK;
}

pw_status pw__validate_module(pw_module *m, bool full, pw_error *err) {
    pw_vctx v = {.m = m, .err = err};
    err->status = PW_OK;
    pw_status st = validate_module(m, &v, full);
    pw__vctx_free(&v);
    return st;
}

pw_status pw__validate(pw_module *m, pw_error *err) {
    return pw__validate_module(m, true, err);
}
