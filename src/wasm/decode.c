/*
 * decode.c — the binary decoder: bytes to pw_module (module.h).
 *
 * It follows the reference interpreter's reading discipline so that malformed modules
 * get its messages: every section is read against the end of the module, not of the
 * section, and "section size mismatch" is reported when a section (or a function
 * body) did not end where its size said. Every vector count is checked against the
 * bytes left before anything proportional to it is allocated ("length out of
 * bounds"), so memory use is bounded by the module size (see docs/engine-frontend.md
 * for the implementation limits).
 *
 * Function bodies are only delimited here (by their sizes); the validator decodes
 * their instructions. When it finds an invalid body, it calls pw__scan_body on the
 * remaining bodies so that a malformed one still wins, as in the spec, where
 * decoding precedes validation.
 */
#include <stdlib.h>
#include <string.h>

#include "wasm/instr.h"
#include "wasm/limits.h"

typedef struct dec {
    pw_module *m;
    pw_reader r;
    pw_error *err;
    uint8_t *ctl; /* structure scan: 1 per open `if` still waiting for its else */
    size_t ctl_cap;
    bool data_used; /* some body uses a data segment index (needs a data count) */
    uint64_t total_locals;
    /* Defined entities, collected per section and merged behind imports at the end. */
    uint32_t nfuncdefs, ncode;
    uint32_t nbodies; /* bodies delimited so far (their spans are set) */
    bool has_func_section;
    uint32_t datacount;
} dec;

static bool bad(dec *d, const uint8_t *at, const char *msg) {
    pw__fail(d->err, PW_ERR_MALFORMED, "%s (at byte %zu)", msg, (size_t)(at - d->r.base));
    return false;
}

static bool limit(dec *d, const char *what, uint64_t max) {
    pw__fail(d->err, PW_ERR_MALFORMED, "implementation limit: too many %s (at most %llu)", what,
             (unsigned long long)max);
    return false;
}

/* A vector length: must not exceed the bytes left (each element takes >= 1 byte). */
static bool rd_len(dec *d, uint32_t *n) {
    const uint8_t *at = d->r.p;
    if (!pw_rd_u32(&d->r, n)) return false;
    if (*n > (size_t)(d->r.end - at)) return bad(d, at, "length out of bounds");
    return true;
}

static bool rd_name(dec *d, pw_span *out) {
    const uint8_t *at = d->r.p;
    uint32_t n;
    const uint8_t *s;
    if (!rd_len(d, &n) || !pw_rd_bytes(&d->r, n, &s)) return false;
    if (!pw__utf8_valid(s, n)) return bad(d, at, "malformed UTF-8 encoding");
    out->off = (uint32_t)(s - d->r.base);
    out->len = n;
    return true;
}

static void *alloc_array(dec *d, size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size);
    if (!p) pw__fail(d->err, PW_ERR_NOMEM, "out of memory while decoding");
    return p;
}

static bool rd_limits(dec *d, pw_limits *lim) {
    const uint8_t *at = d->r.p;
    uint8_t flags;
    if (!pw_rd_byte(&d->r, &flags)) return false;
    /* bit 0: a maximum follows; bit 2: i64 addresses. Shared memories (bit 1, threads)
     * are not supported. Both address types encode limits as u64 (Wasm 3.0); the
     * validator checks the range of each. */
    if (flags & 0xFA) return bad(d, at, "malformed limits flags");
    lim->is64 = (flags & 4) != 0;
    if (!pw__rd_u64(&d->r, &lim->min)) return false;
    lim->max = UINT64_MAX;
    if ((flags & 1) && !pw__rd_u64(&d->r, &lim->max)) return false;
    return true;
}

static bool rd_mut(dec *d, uint8_t *mut) {
    const uint8_t *at = d->r.p;
    if (!pw_rd_byte(&d->r, mut)) return false;
    if (*mut > 1) return bad(d, at, "malformed mutability");
    return true;
}

static bool rd_tabletype(dec *d, pw_tabletype *t) {
    return pw__rd_reftype(&d->r, &t->elem) && rd_limits(d, &t->lim);
}

static bool rd_globaltype(dec *d, pw_globaltype *g) {
    return pw__rd_valtype(&d->r, &g->type) && rd_mut(d, &g->mut);
}

static bool rd_zero(dec *d) {
    const uint8_t *at = d->r.p;
    uint8_t b;
    if (!pw_rd_byte(&d->r, &b)) return false;
    if (b != 0) return bad(d, at, "zero byte expected");
    return true;
}

/* ------------------------------------------------------------------ structure scan */

static bool ctl_push(dec *d, size_t depth, uint8_t v) {
    if (depth >= d->ctl_cap) {
        size_t cap = d->ctl_cap ? d->ctl_cap * 2 : 256;
        uint8_t *n = realloc(d->ctl, cap);
        if (!n) return pw__fail(d->err, PW_ERR_NOMEM, "out of memory while decoding"), false;
        d->ctl = n;
        d->ctl_cap = cap;
    }
    d->ctl[depth] = v;
    return true;
}

/* Scan an instruction sequence up to and including its final `end`. Nesting is kept
 * on an explicit stack: hostile nesting depth costs one byte per level, no C stack. */
static bool scan_expr(dec *d, pw_span *out) {
    const uint8_t *start = d->r.p;
    size_t depth = 0;
    pw_instr in;
    for (;;) {
        const uint8_t *at = d->r.p;
        if (!pw__instr_read(&d->r, &in)) return false;
        switch (in.op) {
        case 0x02:
        case 0x03:
        case 0x1F:
        case 0x06: /* legacy try: its catch/catch_all/delegate are checked by validation */
            if (!ctl_push(d, depth++, 0)) return false;
            break;
        case 0x18: /* delegate ends a legacy try like `end` */
            if (depth == 0) return bad(d, at, "illegal opcode 18");
            depth--;
            break;
        case 0x04:
            if (!ctl_push(d, depth++, 1)) return false;
            break;
        case 0x05:
            if (depth == 0 || !d->ctl[depth - 1]) {
                /* `else` ends the enclosing sequence, which then wants an `end`. */
                return bad(d, at, "END opcode expected");
            }
            d->ctl[depth - 1] = 0;
            break;
        case 0x0B:
            if (depth == 0) {
                out->off = (uint32_t)(start - d->r.base);
                out->len = (uint32_t)(d->r.p - start);
                return true;
            }
            depth--;
            break;
        case PW_OP_FC(0x08):
        case PW_OP_FC(0x09):
        case PW_OP_FB(0x09):
        case PW_OP_FB(0x12): d->data_used = true; break;
        default: break;
        }
    }
}

static pw_status scan_body(pw_module *m, uint32_t i, bool datacount, pw_error *err) {
    dec d;
    memset(&d, 0, sizeof d);
    d.m = m;
    d.err = err;
    d.r.base = m->bytes;
    d.r.p = m->bytes + m->funcs[i].body.off;
    d.r.end = m->bytes + m->nbytes;
    d.r.err = err;
    err->status = PW_OK;
    pw_span body;
    bool ok = scan_expr(&d, &body);
    free(d.ctl);
    if (!ok) return err->status;
    if (body.len != m->funcs[i].body.len)
        return bad(&d, d.r.p, "section size mismatch"), err->status;
    if (datacount && d.data_used && !m->has_datacount)
        return bad(&d, d.r.end, "data count section required"), err->status;
    return PW_OK;
}

pw_status pw__scan_body(pw_module *m, uint32_t i, pw_error *err) {
    return scan_body(m, i, true, err);
}

/* ------------------------------------------------------------------ sections */

static bool sec_types(dec *d) {
    pw_module *m = d->m;
    uint32_t ngroups;
    if (!rd_len(d, &ngroups)) return false;
    uint32_t cap = 0;
    for (uint32_t g = 0; g < ngroups; g++) {
        uint32_t gsize = 1;
        bool rec = d->r.p < d->r.end && *d->r.p == 0x4E;
        if (rec) {
            d->r.p++;
            if (!rd_len(d, &gsize)) return false;
        }
        if ((uint64_t)m->ntypes + gsize > PW_MAX_TYPES) return limit(d, "types", PW_MAX_TYPES);
        if (m->ntypes + gsize > cap) {
            uint32_t ncap = cap ? cap : 16;
            while (ncap < m->ntypes + gsize)
                ncap *= 2;
            pw_deftype *nt = realloc(m->types, (size_t)ncap * sizeof *nt);
            if (!nt) return pw__fail(d->err, PW_ERR_NOMEM, "out of memory while decoding"), false;
            memset(nt + cap, 0, (size_t)(ncap - cap) * sizeof *nt);
            m->types = nt;
            cap = ncap;
        }
        uint32_t rec_start = m->ntypes;
        for (uint32_t k = 0; k < gsize; k++) {
            pw_deftype *t = &m->types[m->ntypes++];
            t->rec_start = rec_start;
            t->rec_len = gsize;
            t->final = 1;
            t->super = UINT32_MAX;
            uint8_t b = d->r.p < d->r.end ? *d->r.p : 0;
            if (b == 0x50 || b == 0x4F) {
                d->r.p++;
                t->final = b == 0x4F;
                uint32_t nsup;
                if (!rd_len(d, &nsup)) return false;
                for (uint32_t s = 0; s < nsup; s++) {
                    uint32_t x;
                    if (!pw_rd_u32(&d->r, &x)) return false;
                    if (s == 0)
                        t->super = x;
                    else
                        t->nsupers_extra = 1;
                }
            }
            const uint8_t *at = d->r.p;
            if (!pw_rd_byte(&d->r, &b)) return false;
            t->form = b;
            if (b == PW_FORM_FUNC) {
                uint32_t np, nr;
                const uint8_t *lp = d->r.p;
                if (!rd_len(d, &np)) return false;
                if (np > PW_MAX_PARAMS) return limit(d, "parameters", PW_MAX_PARAMS);
                /* Results follow the params: read params into a temporary spot by
                 * re-reading them once the result count is known. */
                pw_valtype tmp;
                for (uint32_t i = 0; i < np; i++)
                    if (!pw__rd_valtype(&d->r, &tmp)) return false;
                if (!rd_len(d, &nr)) return false;
                if (nr > PW_MAX_RESULTS) return limit(d, "results", PW_MAX_RESULTS);
                const uint8_t *rp = d->r.p;
                t->u.func.nparams = np;
                t->u.func.nresults = nr;
                t->u.func.types = alloc_array(d, (size_t)np + nr, sizeof(pw_valtype));
                if (!t->u.func.types) return false;
                pw_reader rr = d->r;
                rr.p = lp;
                pw_rd_u32(&rr, &np);
                for (uint32_t i = 0; i < np; i++)
                    pw__rd_valtype(&rr, &t->u.func.types[i]);
                rr.p = rp;
                for (uint32_t i = 0; i < nr; i++)
                    if (!pw__rd_valtype(&d->r, &t->u.func.types[np + i])) return false;
            } else if (b == PW_FORM_STRUCT || b == PW_FORM_ARRAY) {
                uint32_t nf = 1;
                if (b == PW_FORM_STRUCT) {
                    if (!rd_len(d, &nf)) return false;
                    if (nf > PW_MAX_FIELDS) return limit(d, "struct fields", PW_MAX_FIELDS);
                }
                pw_field *fs = b == PW_FORM_STRUCT ? alloc_array(d, nf, sizeof *fs) : &t->u.array;
                if (!fs) return false;
                if (b == PW_FORM_STRUCT) {
                    t->u.strct.fields = fs;
                    t->u.strct.nfields = nf;
                }
                for (uint32_t i = 0; i < nf; i++) {
                    const uint8_t *fat = d->r.p;
                    uint8_t fb = fat < d->r.end ? *fat : 0;
                    if (fb == 0x78 || fb == 0x77) {
                        d->r.p++;
                        fs[i].type = PW_VT_I32;
                        fs[i].packed = fb == 0x78 ? PW_PACK_I8 : PW_PACK_I16;
                    } else if (!pw__rd_valtype(&d->r, &fs[i].type)) {
                        if (d->err->status == PW_ERR_MALFORMED && fat < d->r.end && !(fb & 0x80))
                            return bad(d, fat, "malformed storage type");
                        return false;
                    }
                    if (!rd_mut(d, &fs[i].mut)) return false;
                }
            } else {
                t->form = PW_FORM_FUNC; /* keep the module freeable */
                if (b & 0x80) return bad(d, at + 1, "integer representation too long");
                return bad(d, at, "malformed definition type");
            }
        }
    }
    return true;
}

static bool sec_imports(dec *d) {
    pw_module *m = d->m;
    uint32_t n;
    if (!rd_len(d, &n)) return false;
    if (n > PW_MAX_IMPORTS) return limit(d, "imports", PW_MAX_IMPORTS);
    m->imports = alloc_array(d, n, sizeof *m->imports);
    if (!m->imports) return false;
    for (uint32_t i = 0; i < n; i++) {
        pw_import *im = &m->imports[i];
        if (!rd_name(d, &im->module) || !rd_name(d, &im->name)) return false;
        const uint8_t *at = d->r.p;
        uint8_t kind;
        if (!pw_rd_byte(&d->r, &kind)) return false;
        switch (kind) {
        case 0:
            if (!pw_rd_u32(&d->r, &im->u.func_type)) return false;
            m->nfunc_imports++;
            break;
        case 1:
            if (!rd_tabletype(d, &im->u.table)) return false;
            m->ntable_imports++;
            break;
        case 2:
            if (!rd_limits(d, &im->u.memory)) return false;
            m->nmem_imports++;
            break;
        case 3:
            if (!rd_globaltype(d, &im->u.global)) return false;
            m->nglobal_imports++;
            break;
        case 4:
            if (!rd_zero(d) || !pw_rd_u32(&d->r, &im->u.tag_type)) return false;
            m->ntag_imports++;
            break;
        default: return bad(d, at, "malformed import kind");
        }
        im->kind = (pw_extern_kind)kind;
        m->nimports = i + 1;
    }
    return true;
}

/* Allocate the index space of `kind` with `ndef` defined entries behind the imports
 * and copy the imported types in. Called once per kind (section or end of module). */
static bool make_space(dec *d, pw_extern_kind kind, uint32_t ndef) {
    pw_module *m = d->m;
    uint32_t k = 0;
    switch (kind) {
    case PW_EXTERN_FUNC:
        if ((uint64_t)m->nfunc_imports + ndef > PW_MAX_FUNCS)
            return limit(d, "functions", PW_MAX_FUNCS);
        m->nfuncs = m->nfunc_imports + ndef;
        if (!(m->func_types = alloc_array(d, m->nfuncs, sizeof(uint32_t)))) return false;
        if (!(m->funcs = alloc_array(d, ndef, sizeof(pw_funcdef)))) return false;
        if (!(m->func_declared = alloc_array(d, m->nfuncs, 1))) return false;
        for (uint32_t i = 0; i < m->nimports; i++)
            if (m->imports[i].kind == kind) m->func_types[k++] = m->imports[i].u.func_type;
        return true;
    case PW_EXTERN_TABLE:
        if ((uint64_t)m->ntable_imports + ndef > PW_MAX_TABLES)
            return limit(d, "tables", PW_MAX_TABLES);
        m->ntables = m->ntable_imports + ndef;
        if (!(m->tables = alloc_array(d, m->ntables, sizeof *m->tables))) return false;
        for (uint32_t i = 0; i < m->nimports; i++)
            if (m->imports[i].kind == kind) m->tables[k++].type = m->imports[i].u.table;
        return true;
    case PW_EXTERN_MEMORY:
        if ((uint64_t)m->nmem_imports + ndef > PW_MAX_MEMORIES)
            return limit(d, "memories", PW_MAX_MEMORIES);
        m->nmems = m->nmem_imports + ndef;
        if (!(m->mems = alloc_array(d, m->nmems, sizeof *m->mems))) return false;
        for (uint32_t i = 0; i < m->nimports; i++)
            if (m->imports[i].kind == kind) m->mems[k++] = m->imports[i].u.memory;
        return true;
    case PW_EXTERN_GLOBAL:
        if ((uint64_t)m->nglobal_imports + ndef > PW_MAX_GLOBALS)
            return limit(d, "globals", PW_MAX_GLOBALS);
        m->nglobals = m->nglobal_imports + ndef;
        if (!(m->globals = alloc_array(d, m->nglobals, sizeof *m->globals))) return false;
        for (uint32_t i = 0; i < m->nimports; i++)
            if (m->imports[i].kind == kind) m->globals[k++].type = m->imports[i].u.global;
        return true;
    case PW_EXTERN_TAG:
        if ((uint64_t)m->ntag_imports + ndef > PW_MAX_TAGS) return limit(d, "tags", PW_MAX_TAGS);
        m->ntags = m->ntag_imports + ndef;
        if (!(m->tag_types = alloc_array(d, m->ntags, sizeof(uint32_t)))) return false;
        for (uint32_t i = 0; i < m->nimports; i++)
            if (m->imports[i].kind == kind) m->tag_types[k++] = m->imports[i].u.tag_type;
        return true;
    }
    return false;
}

static bool sec_funcs(dec *d) {
    uint32_t n;
    if (!rd_len(d, &n) || !make_space(d, PW_EXTERN_FUNC, n)) return false;
    d->has_func_section = true;
    d->nfuncdefs = n;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t t;
        if (!pw_rd_u32(&d->r, &t)) return false;
        d->m->funcs[i].type = t;
        d->m->func_types[d->m->nfunc_imports + i] = t;
    }
    return true;
}

static bool sec_tables(dec *d) {
    uint32_t n;
    if (!rd_len(d, &n) || !make_space(d, PW_EXTERN_TABLE, n)) return false;
    for (uint32_t i = 0; i < n; i++) {
        pw_table_def *t = &d->m->tables[d->m->ntable_imports + i];
        if (d->r.p < d->r.end && *d->r.p == 0x40) {
            const uint8_t *save = d->r.p++;
            if (d->r.p < d->r.end && *d->r.p == 0x00) {
                d->r.p++;
                if (!rd_tabletype(d, &t->type) || !scan_expr(d, &t->init)) return false;
                continue;
            }
            d->r.p = save;
        }
        if (!rd_tabletype(d, &t->type)) return false;
        t->init.off = t->init.len = 0;
    }
    return true;
}

static bool sec_mems(dec *d) {
    uint32_t n;
    if (!rd_len(d, &n) || !make_space(d, PW_EXTERN_MEMORY, n)) return false;
    for (uint32_t i = 0; i < n; i++)
        if (!rd_limits(d, &d->m->mems[d->m->nmem_imports + i])) return false;
    return true;
}

static bool sec_tags(dec *d) {
    uint32_t n;
    if (!rd_len(d, &n) || !make_space(d, PW_EXTERN_TAG, n)) return false;
    for (uint32_t i = 0; i < n; i++)
        if (!rd_zero(d) || !pw_rd_u32(&d->r, &d->m->tag_types[d->m->ntag_imports + i]))
            return false;
    return true;
}

static bool sec_globals(dec *d) {
    uint32_t n;
    if (!rd_len(d, &n) || !make_space(d, PW_EXTERN_GLOBAL, n)) return false;
    for (uint32_t i = 0; i < n; i++) {
        pw_global_def *g = &d->m->globals[d->m->nglobal_imports + i];
        if (!rd_globaltype(d, &g->type) || !scan_expr(d, &g->init)) return false;
    }
    return true;
}

static bool sec_exports(dec *d) {
    pw_module *m = d->m;
    uint32_t n;
    if (!rd_len(d, &n)) return false;
    if (n > PW_MAX_EXPORTS) return limit(d, "exports", PW_MAX_EXPORTS);
    if (!(m->exports = alloc_array(d, n, sizeof *m->exports))) return false;
    for (uint32_t i = 0; i < n; i++) {
        pw_export *e = &m->exports[i];
        if (!rd_name(d, &e->name)) return false;
        const uint8_t *at = d->r.p;
        uint8_t kind;
        if (!pw_rd_byte(&d->r, &kind)) return false;
        if (kind > 4) return bad(d, at, "malformed export kind");
        e->kind = (pw_extern_kind)kind;
        if (!pw_rd_u32(&d->r, &e->index)) return false;
        m->nexports = i + 1;
    }
    return true;
}

static bool sec_elems(dec *d) {
    pw_module *m = d->m;
    uint32_t n;
    if (!rd_len(d, &n)) return false;
    if (n > PW_MAX_SEGMENTS) return limit(d, "element segments", PW_MAX_SEGMENTS);
    if (!(m->elems = alloc_array(d, n, sizeof *m->elems))) return false;
    for (uint32_t i = 0; i < n; i++) {
        pw_elem *e = &m->elems[i];
        m->nelems = i + 1;
        const uint8_t *at = d->r.p;
        uint32_t flags;
        if (!pw_rd_u32(&d->r, &flags)) return false;
        if (flags > 7) return bad(d, d->r.p - 1, "malformed elements segment kind");
        e->mode = (flags & 1) ? ((flags & 2) ? PW_SEG_DECLARATIVE : PW_SEG_PASSIVE) : PW_SEG_ACTIVE;
        e->table = 0;
        if (e->mode == PW_SEG_ACTIVE) {
            if ((flags & 2) && !pw_rd_u32(&d->r, &e->table)) return false;
            if (!scan_expr(d, &e->offset)) return false;
        }
        bool exprs = flags & 4;
        if (flags & 3) {
            if (exprs) {
                if (!pw__rd_reftype(&d->r, &e->type)) return false;
            } else {
                const uint8_t *kat = d->r.p;
                uint8_t kind;
                if (!pw_rd_byte(&d->r, &kind)) return false;
                if (kind != 0) return bad(d, kat, "malformed element kind");
                e->type = PW_VT_ABSREF(PW_HT_FUNC, 0);
            }
        } else {
            e->type = PW_VT_ABSREF(PW_HT_FUNC, exprs ? 1 : 0);
        }
        uint32_t cnt;
        if (!rd_len(d, &cnt)) return false;
        if (cnt > PW_MAX_ELEMS) return limit(d, "elements in a segment", PW_MAX_ELEMS);
        e->count = cnt;
        if (exprs) {
            if (!(e->exprs = alloc_array(d, cnt, sizeof *e->exprs))) return false;
            for (uint32_t k = 0; k < cnt; k++)
                if (!scan_expr(d, &e->exprs[k])) return false;
        } else {
            if (!(e->funcs = alloc_array(d, cnt, sizeof *e->funcs))) return false;
            for (uint32_t k = 0; k < cnt; k++)
                if (!pw_rd_u32(&d->r, &e->funcs[k])) return false;
        }
        (void)at;
    }
    return true;
}

static bool sec_code(dec *d) {
    pw_module *m = d->m;
    uint32_t n;
    if (!rd_len(d, &n)) return false;
    d->ncode = n;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t size;
        const uint8_t *sat = d->r.p;
        if (!rd_len(d, &size)) return false;
        const uint8_t *start = d->r.p;
        pw_funcdef *f = i < d->nfuncdefs ? &m->funcs[i] : NULL;
        /* Locals: count the groups first, then expand. */
        uint32_t ngroups;
        const uint8_t *lat = d->r.p;
        if (!rd_len(d, &ngroups)) return false;
        const uint8_t *groups = d->r.p;
        uint64_t total = 0;
        for (uint32_t g = 0; g < ngroups; g++) {
            uint32_t cnt;
            pw_valtype t;
            if (!pw_rd_u32(&d->r, &cnt) || !pw__rd_valtype(&d->r, &t)) return false;
            total += cnt;
        }
        if (total >= ((uint64_t)1 << 32)) return bad(d, lat, "too many locals");
        if (total > PW_MAX_LOCALS) return bad(d, lat, "too many locals (implementation limit)");
        d->total_locals += total;
        if (d->total_locals > PW_MAX_MODULE_LOCALS + (uint64_t)m->nbytes)
            return bad(d, lat, "too many locals in module (implementation limit)");
        if (f) {
            f->nlocals = (uint32_t)total;
            if (!(f->locals = alloc_array(d, total, sizeof(pw_valtype)))) return false;
            pw_reader rr = d->r;
            rr.p = groups;
            uint32_t k = 0;
            for (uint32_t g = 0; g < ngroups; g++) {
                uint32_t cnt;
                pw_valtype t;
                pw_rd_u32(&rr, &cnt);
                pw__rd_valtype(&rr, &t);
                for (uint32_t j = 0; j < cnt; j++)
                    f->locals[k++] = t;
            }
        }
        /* The instructions are decoded once, by the validator (pw__scan_body is the
         * structure-only fallback that keeps the spec's malformed-before-invalid
         * order). Locals that overrun the body are a size mismatch. */
        if ((size_t)(d->r.end - start) < size) {
            /* The body claims bytes past the module's end: the spec's decoder reads
             * its instructions until they fail (or end early: a size mismatch). */
            pw_span ignored;
            if (!scan_expr(d, &ignored)) return false;
            return bad(d, sat, "section size mismatch");
        }
        if (d->r.p > start + size) return bad(d, sat, "section size mismatch");
        if (f) {
            f->body.off = (uint32_t)(d->r.p - d->r.base);
            f->body.len = (uint32_t)(start + size - d->r.p);
        }
        d->r.p = start + size;
        if (f) d->nbodies = i + 1;
    }
    return true;
}

static bool sec_datas(dec *d) {
    pw_module *m = d->m;
    uint32_t n;
    if (!rd_len(d, &n)) return false;
    if (n > PW_MAX_SEGMENTS) return limit(d, "data segments", PW_MAX_SEGMENTS);
    if (!(m->datas = alloc_array(d, n, sizeof *m->datas))) return false;
    for (uint32_t i = 0; i < n; i++) {
        pw_data *s = &m->datas[i];
        m->ndatas = i + 1;
        uint32_t flags;
        if (!pw_rd_u32(&d->r, &flags)) return false;
        if (flags > 2) return bad(d, d->r.p - 1, "malformed data segment kind");
        s->mode = flags == 1 ? PW_SEG_PASSIVE : PW_SEG_ACTIVE;
        s->memory = 0;
        if (flags == 2 && !pw_rd_u32(&d->r, &s->memory)) return false;
        if (flags != 1 && !scan_expr(d, &s->offset)) return false;
        uint32_t len;
        const uint8_t *bytes;
        if (!rd_len(d, &len) || !pw_rd_bytes(&d->r, len, &bytes)) return false;
        s->bytes.off = (uint32_t)(bytes - d->r.base);
        s->bytes.len = len;
    }
    return true;
}

static bool sec_custom(dec *d, uint32_t size) {
    const uint8_t *start = d->r.p;
    pw_span name;
    if (!rd_name(d, &name)) return false;
    size_t used = (size_t)(d->r.p - start);
    /* The size check allows a size that counts its own LEB bytes (as the spec's
     * does), so the content may still run past the module's end. */
    if (used > size || size - used > pw_rd_left(&d->r)) return pw__rd_fail_eof(&d->r);
    d->r.p += size - used;
    return true;
}

/* Section ids in their required order (custom sections aside). */
static int section_rank(uint8_t id) {
    static const int8_t rank[14] = {0, 1, 2, 3, 4, 5, 7, 8, 9, 10, 12, 13, 11, 6};
    return rank[id];
}

static bool decode_module(dec *d) {
    pw_module *m = d->m;
    pw_reader *r = &d->r;
    if (m->nbytes < 4) return pw__rd_fail_eof(r), false;
    if (memcmp(m->bytes, "\0asm", 4) != 0) return bad(d, r->base, "magic header not detected");
    if (m->nbytes < 8) return r->p = r->end, pw__rd_fail_eof(r);
    if (memcmp(m->bytes + 4, "\1\0\0\0", 4) != 0)
        return bad(d, r->base + 4, "unknown binary version");
    r->p += 8;
    int last = 0;
    while (r->p < r->end) {
        const uint8_t *at = r->p;
        uint8_t id = *r->p++;
        if (id > 13) return bad(d, at, "malformed section id");
        if (id != 0 && section_rank(id) <= last)
            return bad(d, at, "unexpected content after last section");
        uint32_t size;
        if (!rd_len(d, &size)) return false;
        const uint8_t *start = r->p;
        bool ok;
        switch (id) {
        case 0: ok = sec_custom(d, size); break;
        case 1: ok = sec_types(d); break;
        case 2: ok = sec_imports(d); break;
        case 3: ok = sec_funcs(d); break;
        case 4: ok = sec_tables(d); break;
        case 5: ok = sec_mems(d); break;
        case 6: ok = sec_globals(d); break;
        case 7: ok = sec_exports(d); break;
        case 8: ok = pw_rd_u32(r, &m->start); break;
        case 9: ok = sec_elems(d); break;
        case 10: ok = sec_code(d); break;
        case 11: ok = sec_datas(d); break;
        case 12:
            ok = pw_rd_u32(r, &d->datacount);
            m->has_datacount = true;
            break;
        case 13: ok = sec_tags(d); break;
        default: ok = false;
        }
        if (!ok) return false;
        if ((size_t)(r->p - start) != size) return bad(d, start, "section size mismatch");
        if (id != 0) last = section_rank(id);
    }
    if (!m->func_types && !make_space(d, PW_EXTERN_FUNC, 0)) return false;
    if (!m->tables && !make_space(d, PW_EXTERN_TABLE, 0)) return false;
    if (!m->mems && !make_space(d, PW_EXTERN_MEMORY, 0)) return false;
    if (!m->globals && !make_space(d, PW_EXTERN_GLOBAL, 0)) return false;
    if (!m->tag_types && !make_space(d, PW_EXTERN_TAG, 0)) return false;
    if (d->ncode != d->nfuncdefs)
        return bad(d, r->end, "function and code section have inconsistent lengths");
    if (m->has_datacount && d->datacount != m->ndatas)
        return bad(d, r->end, "data count and data section have inconsistent lengths");
    /* "data count section required" concerns function bodies only: the validator
     * (or pw__scan_body) reports it. */
    return true;
}

pw_status pw__decode(pw_module *m, pw_error *err) {
    dec d;
    memset(&d, 0, sizeof d);
    d.m = m;
    d.err = err;
    d.r.base = d.r.p = m->bytes;
    d.r.end = m->bytes + m->nbytes;
    d.r.err = err;
    m->start = UINT32_MAX;
    err->status = PW_OK;
    bool ok = decode_module(&d);
    free(d.ctl);
    if (!ok && err->status == PW_ERR_MALFORMED && m->funcs) {
        /* The spec decodes bodies as it meets them: a malformed body comes before any
         * error found later in the module. */
        pw_error later = *err;
        for (uint32_t i = 0; i < d.nbodies; i++)
            if (scan_body(m, i, false, err) != PW_OK) return err->status;
        *err = later;
    }
    if (!ok) return err->status != PW_OK ? err->status : PW_ERR_MALFORMED;
    return PW_OK;
}
