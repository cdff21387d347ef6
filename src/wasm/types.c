/*
 * types.c — the type section's validation and canonicalisation, and subtyping.
 *
 * Iso-recursive equivalence (Wasm 3.0) is decided once per module: every recursion
 * group is serialised into a key in which references into the group itself are
 * relative positions and references to earlier groups are those groups' canonical
 * indices. Equal keys mean equivalent groups, so each type gets `canon`, the index
 * of the first equivalent type, and equivalence becomes an integer compare.
 * `depth` (length of the supertype chain) makes declared-subtype checks a walk of
 * at most depth(a) - depth(b) steps.
 *
 * Cross-module checks (imports, call_indirect against another module's types)
 * compare groups structurally with an explicit work list: no recursion on the C
 * stack proportional to the input.
 */
#include <stdlib.h>
#include <string.h>

#include "peri/base.h"
#include "wasm/instr.h"
#include "wasm/limits.h"

/* ------------------------------------------------------------------ subtyping */

static bool is_abs(uint32_t heap) {
    return (heap & PW_HT_ABS) != 0;
}

static bool abs_sub(uint32_t a, uint32_t b) {
    if (a == b) return true;
    switch (a) {
    case PW_HT_BOT: return true;
    case PW_HT_NONE:
        return b == PW_HT_I31 || b == PW_HT_STRUCT || b == PW_HT_ARRAY || b == PW_HT_EQ ||
               b == PW_HT_ANY;
    case PW_HT_I31:
    case PW_HT_STRUCT:
    case PW_HT_ARRAY: return b == PW_HT_EQ || b == PW_HT_ANY;
    case PW_HT_EQ: return b == PW_HT_ANY;
    case PW_HT_NOFUNC: return b == PW_HT_FUNC;
    case PW_HT_NOEXTERN: return b == PW_HT_EXTERN;
    case PW_HT_NOEXN: return b == PW_HT_EXN;
    default: return false;
    }
}

bool pw__deftype_sub(const pw_module *m, uint32_t a, uint32_t b) {
    const pw_deftype *t = m->types;
    if (t[a].canon == t[b].canon) return true;
    uint32_t db = t[b].depth;
    while (t[a].depth > db)
        a = t[a].super;
    return t[a].canon == t[b].canon;
}

bool pw__heaptype_sub(const pw_module *m, uint32_t a, uint32_t b) {
    if (a == b) return true;
    if (is_abs(a)) {
        uint32_t ca = a & 0xFF;
        if (is_abs(b)) return abs_sub(ca, b & 0xFF);
        if (ca == PW_HT_BOT) return true;
        uint8_t form = m->types[b].form;
        if (ca == PW_HT_NONE) return form != PW_FORM_FUNC;
        return ca == PW_HT_NOFUNC && form == PW_FORM_FUNC;
    }
    if (is_abs(b)) {
        uint32_t cb = b & 0xFF;
        switch (m->types[a].form) {
        case PW_FORM_FUNC: return cb == PW_HT_FUNC;
        case PW_FORM_STRUCT: return cb == PW_HT_STRUCT || cb == PW_HT_EQ || cb == PW_HT_ANY;
        default: return cb == PW_HT_ARRAY || cb == PW_HT_EQ || cb == PW_HT_ANY;
        }
    }
    return pw__deftype_sub(m, a, b);
}

bool pw__valtype_sub(const pw_module *m, pw_valtype a, pw_valtype b) {
    if (a == b) return true;
    if (PW_VT_KIND(a) == PW_K_BOT) return true;
    if (PW_VT_KIND(a) != PW_K_REF || PW_VT_KIND(b) != PW_K_REF) return false;
    if (PW_VT_NULLABLE(a) && !PW_VT_NULLABLE(b)) return false;
    return pw__heaptype_sub(m, PW_VT_HEAP(a), PW_VT_HEAP(b));
}

uint32_t pw__heaptype_top(const pw_module *m, uint32_t h) {
    uint32_t c;
    if (is_abs(h)) {
        c = h & 0xFF;
    } else {
        uint8_t f = m->types[h].form;
        c = f == PW_FORM_FUNC ? PW_HT_FUNC : PW_HT_ANY;
    }
    switch (c) {
    case PW_HT_FUNC:
    case PW_HT_NOFUNC: return PW_HT_ABS | PW_HT_FUNC;
    case PW_HT_EXTERN:
    case PW_HT_NOEXTERN: return PW_HT_ABS | PW_HT_EXTERN;
    case PW_HT_EXN:
    case PW_HT_NOEXN: return PW_HT_ABS | PW_HT_EXN;
    case PW_HT_BOT: return PW_HT_ABS | PW_HT_BOT;
    default: return PW_HT_ABS | PW_HT_ANY;
    }
}

const pw_deftype *pw__functype_of(const pw_module *m, uint32_t func_index) {
    if (func_index >= m->nfuncs) return NULL;
    uint32_t t = m->func_types[func_index];
    if (t >= m->ntypes || m->types[t].form != PW_FORM_FUNC) return NULL;
    return &m->types[t];
}

static bool field_sub(const pw_module *m, const pw_field *a, const pw_field *b) {
    if (a->mut != b->mut || a->packed != b->packed) return false;
    if (!pw__valtype_sub(m, a->type, b->type)) return false;
    return !a->mut || pw__valtype_sub(m, b->type, a->type);
}

/* Does composite type a match composite type b (a <: b)? */
static bool comp_sub(const pw_module *m, const pw_deftype *a, const pw_deftype *b) {
    if (a->form != b->form) return false;
    switch (a->form) {
    case PW_FORM_FUNC: {
        uint32_t np = a->u.func.nparams, nr = a->u.func.nresults;
        if (np != b->u.func.nparams || nr != b->u.func.nresults) return false;
        for (uint32_t i = 0; i < np; i++)
            if (!pw__valtype_sub(m, b->u.func.types[i], a->u.func.types[i])) return false;
        for (uint32_t i = np; i < np + nr; i++)
            if (!pw__valtype_sub(m, a->u.func.types[i], b->u.func.types[i])) return false;
        return true;
    }
    case PW_FORM_STRUCT:
        if (a->u.strct.nfields < b->u.strct.nfields) return false;
        for (uint32_t i = 0; i < b->u.strct.nfields; i++)
            if (!field_sub(m, &a->u.strct.fields[i], &b->u.strct.fields[i])) return false;
        return true;
    default: return field_sub(m, &a->u.array, &b->u.array);
    }
}

/* ------------------------------------------------------------------ canonicalisation */

typedef struct keybuf {
    uint32_t *v;
    size_t len, cap;
} keybuf;

static bool kpush(keybuf *k, uint32_t x) {
    if (k->len == k->cap) {
        uint32_t *n = pb_grow(k->v, &k->cap, sizeof *n, 1024);
        if (!n) return false;
        k->v = n;
    }
    k->v[k->len++] = x;
    return true;
}

/* A value type inside group [g0, g0+n): internal references become relative. */
static bool key_vt(keybuf *k, const pw_module *m, uint32_t g0, uint32_t n, pw_valtype t) {
    if (PW_VT_KIND(t) != PW_K_REF || is_abs(PW_VT_HEAP(t))) return kpush(k, t);
    uint32_t h = PW_VT_HEAP(t);
    if (h >= g0 && h < g0 + n)
        return kpush(k, 0xFFFFFFFFu) && kpush(k, (t & 0xFF) | ((h - g0) << 8));
    return kpush(k, (t & 0xFF) | (m->types[h].canon << 8));
}

static bool key_field(keybuf *k, const pw_module *m, uint32_t g0, uint32_t n, const pw_field *f) {
    return kpush(k, (uint32_t)f->packed | (uint32_t)f->mut << 8) && key_vt(k, m, g0, n, f->type);
}

static bool key_group(keybuf *k, const pw_module *m, uint32_t g0, uint32_t n) {
    if (!kpush(k, n)) return false;
    for (uint32_t i = g0; i < g0 + n; i++) {
        const pw_deftype *t = &m->types[i];
        uint32_t sup = t->super;
        uint32_t supk = sup == UINT32_MAX
                            ? 0xFFFFFFFEu
                            : (sup >= g0 ? 0x80000000u | (sup - g0) : m->types[sup].canon);
        if (!kpush(k, (uint32_t)t->form | (uint32_t)t->final << 8) || !kpush(k, supk)) return false;
        switch (t->form) {
        case PW_FORM_FUNC: {
            uint32_t np = t->u.func.nparams, nr = t->u.func.nresults;
            if (!kpush(k, np) || !kpush(k, nr)) return false;
            for (uint32_t j = 0; j < np + nr; j++)
                if (!key_vt(k, m, g0, n, t->u.func.types[j])) return false;
            break;
        }
        case PW_FORM_STRUCT:
            if (!kpush(k, t->u.strct.nfields)) return false;
            for (uint32_t j = 0; j < t->u.strct.nfields; j++)
                if (!key_field(k, m, g0, n, &t->u.strct.fields[j])) return false;
            break;
        default:
            if (!key_field(k, m, g0, n, &t->u.array)) return false;
        }
    }
    return true;
}

static uint64_t key_hash(const uint32_t *v, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ v[i]) * 1099511628211ull;
    return h ^ (h >> 29);
}

typedef struct gslot {
    uint32_t first; /* first type index of the group; UINT32_MAX = empty */
    uint32_t klen;
    size_t koff;
    uint64_t hash;
} gslot;

static pw_status invalid(pw_error *err, const char *fmt, uint32_t a, uint32_t b) {
    return pw__fail(err, PW_ERR_INVALID, fmt, a, b);
}

static bool vt_ok(pw_valtype t, uint32_t bound, uint32_t *bad) {
    if (PW_VT_KIND(t) != PW_K_REF || is_abs(PW_VT_HEAP(t))) return true;
    *bad = PW_VT_HEAP(t);
    return PW_VT_HEAP(t) < bound;
}

/* Are all type references of type i below `bound`? (else *bad is the culprit) */
static bool refs_ok(const pw_deftype *t, uint32_t bound, uint32_t *bad) {
    switch (t->form) {
    case PW_FORM_FUNC:
        for (uint32_t j = 0; j < t->u.func.nparams + t->u.func.nresults; j++)
            if (!vt_ok(t->u.func.types[j], bound, bad)) return false;
        return true;
    case PW_FORM_STRUCT:
        for (uint32_t j = 0; j < t->u.strct.nfields; j++)
            if (!vt_ok(t->u.strct.fields[j].type, bound, bad)) return false;
        return true;
    default: return vt_ok(t->u.array.type, bound, bad);
    }
}

pw_status pw__types_check(pw_module *m, pw_error *err) {
    pw_status st = PW_OK;
    uint32_t ngroups = 0;
    for (uint32_t i = 0; i < m->ntypes; i += m->types[i].rec_len)
        ngroups++;
    size_t cap = 16;
    while (cap < (size_t)ngroups * 2)
        cap *= 2;
    gslot *tab = malloc(cap * sizeof *tab);
    keybuf k = {0};
    if (!tab) return pw__fail(err, PW_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < cap; i++)
        tab[i].first = UINT32_MAX;

    for (uint32_t g0 = 0; g0 < m->ntypes && st == PW_OK;) {
        uint32_t n = m->types[g0].rec_len, end = g0 + n;
        /* Indices: everything in the group may refer up to its end. */
        for (uint32_t x = g0; x < end; x++) {
            pw_deftype *t = &m->types[x];
            uint32_t bad;
            if (!refs_ok(t, end, &bad)) {
                st = invalid(err, "unknown type %u%.0u", bad, 0);
                goto out;
            }
            if (t->nsupers_extra) {
                st = invalid(err, "sub type %u has more than one super type%.0u", x, 0);
                goto out;
            }
            if (t->super != UINT32_MAX) {
                if (t->super >= end) {
                    st = invalid(err, "unknown type %u%.0u", t->super, 0);
                    goto out;
                }
                if (t->super >= x) {
                    st = invalid(err, "forward use of type %u in sub type definition%.0u", t->super,
                                 0);
                    goto out;
                }
            }
        }
        /* Canonical indices of the group. */
        size_t koff = k.len;
        if (!key_group(&k, m, g0, n)) {
            st = pw__fail(err, PW_ERR_NOMEM, "out of memory");
            goto out;
        }
        uint32_t klen = (uint32_t)(k.len - koff);
        uint64_t h = key_hash(k.v + koff, klen);
        size_t s = (size_t)h & (cap - 1);
        uint32_t first = g0;
        for (;; s = (s + 1) & (cap - 1)) {
            gslot *e = &tab[s];
            if (e->first == UINT32_MAX) {
                e->first = g0;
                e->klen = klen;
                e->koff = koff;
                e->hash = h;
                break;
            }
            if (e->hash == h && e->klen == klen &&
                memcmp(k.v + e->koff, k.v + koff, klen * sizeof(uint32_t)) == 0) {
                first = e->first;
                k.len = koff; /* duplicate key: drop it */
                break;
            }
        }
        for (uint32_t i = 0; i < n; i++)
            m->types[g0 + i].canon = m->types[first + i].canon;
        if (first == g0)
            for (uint32_t i = 0; i < n; i++)
                m->types[g0 + i].canon = g0 + i;
        for (uint32_t x = g0; x < end; x++) {
            pw_deftype *t = &m->types[x];
            t->depth = t->super == UINT32_MAX ? 0 : m->types[t->super].depth + 1;
            if (t->depth > PW_MAX_SUBTYPE_DEPTH) {
                st = invalid(err, "implementation limit: subtype depth of type %u exceeds %u", x,
                             PW_MAX_SUBTYPE_DEPTH);
                goto out;
            }
        }
        /* Declared supertypes must be open and structurally matched. */
        for (uint32_t x = g0; x < end; x++) {
            pw_deftype *t = &m->types[x];
            if (t->super == UINT32_MAX) continue;
            const pw_deftype *sup = &m->types[t->super];
            if (sup->final) {
                st = invalid(err, "sub type %u has final super type %u", x, t->super);
                goto out;
            }
            if (!comp_sub(m, t, sup)) {
                st = invalid(err, "sub type %u does not match super type %u", x, t->super);
                goto out;
            }
        }
        g0 = end;
    }
out:
    free(tab);
    free(k.v);
    return st;
}

/* ------------------------------------------------------------------ across modules */

typedef struct pairset {
    uint64_t *v; /* (a << 32 | b) + 1; 0 = empty */
    size_t cap, n;
} pairset;

/* Insert; returns 1 if new, 0 if present, -1 on allocation failure. */
static int pair_add(pairset *s, uint32_t a, uint32_t b) {
    if ((s->n + 1) * 2 > s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        uint64_t *nv = calloc(cap, sizeof *nv);
        if (!nv) return -1;
        for (size_t i = 0; i < s->cap; i++) {
            if (!s->v[i]) continue;
            size_t j = (size_t)key_hash((const uint32_t *)&s->v[i], 2) & (cap - 1);
            while (nv[j])
                j = (j + 1) & (cap - 1);
            nv[j] = s->v[i];
        }
        free(s->v);
        s->v = nv;
        s->cap = cap;
    }
    uint64_t key = (((uint64_t)a << 32) | b) + 1;
    size_t j = (size_t)key_hash((const uint32_t *)&key, 2) & (s->cap - 1);
    for (; s->v[j]; j = (j + 1) & (s->cap - 1))
        if (s->v[j] == key) return 0;
    s->v[j] = key;
    s->n++;
    return 1;
}

typedef struct xcmp {
    const pw_module *ma, *mb;
    pairset seen;
    uint32_t *work; /* pairs of group starts still to compare */
    size_t nwork, capwork;
    bool oom;
} xcmp;

static bool xpush(xcmp *c, uint32_t a, uint32_t b) {
    int r = pair_add(&c->seen, a, b);
    if (r < 0) return c->oom = true, false;
    if (r == 0) return true;
    if (c->nwork + 2 > c->capwork) {
        size_t cap = c->capwork ? c->capwork * 2 : 64;
        uint32_t *n = realloc(c->work, cap * sizeof *n);
        if (!n) return c->oom = true, false;
        c->work = n;
        c->capwork = cap;
    }
    c->work[c->nwork++] = a;
    c->work[c->nwork++] = b;
    return true;
}

/* Compare a type reference of group ga (module a) with one of group gb (module b). */
static bool xref(xcmp *c, uint32_t ga, uint32_t gb, uint32_t ha, uint32_t hb) {
    const pw_deftype *ta = &c->ma->types[ha], *tb = &c->mb->types[hb];
    uint32_t na = c->ma->types[ga].rec_len;
    bool ia = ha >= ga && ha < ga + na, ib = hb >= gb && hb < gb + c->mb->types[gb].rec_len;
    if (ia || ib) return ia && ib && ha - ga == hb - gb;
    if (ha - ta->rec_start != hb - tb->rec_start || ta->rec_len != tb->rec_len) return false;
    return xpush(c, c->ma->types[ta->rec_start].canon, c->mb->types[tb->rec_start].canon);
}

static bool xvt(xcmp *c, uint32_t ga, uint32_t gb, pw_valtype a, pw_valtype b) {
    if (PW_VT_KIND(a) != PW_K_REF || PW_VT_KIND(b) != PW_K_REF) return a == b;
    if ((a & 0xFF) != (b & 0xFF)) return false;
    uint32_t ha = PW_VT_HEAP(a), hb = PW_VT_HEAP(b);
    if (is_abs(ha) || is_abs(hb)) return ha == hb;
    return xref(c, ga, gb, ha, hb);
}

static bool xfield(xcmp *c, uint32_t ga, uint32_t gb, const pw_field *a, const pw_field *b) {
    return a->mut == b->mut && a->packed == b->packed && xvt(c, ga, gb, a->type, b->type);
}

static bool xgroup(xcmp *c, uint32_t ga, uint32_t gb) {
    const pw_module *ma = c->ma, *mb = c->mb;
    uint32_t n = ma->types[ga].rec_len;
    if (n != mb->types[gb].rec_len) return false;
    for (uint32_t i = 0; i < n; i++) {
        const pw_deftype *a = &ma->types[ga + i], *b = &mb->types[gb + i];
        if (a->form != b->form || a->final != b->final) return false;
        if ((a->super == UINT32_MAX) != (b->super == UINT32_MAX)) return false;
        if (a->super != UINT32_MAX && !xref(c, ga, gb, a->super, b->super)) return false;
        switch (a->form) {
        case PW_FORM_FUNC:
            if (a->u.func.nparams != b->u.func.nparams || a->u.func.nresults != b->u.func.nresults)
                return false;
            for (uint32_t j = 0; j < a->u.func.nparams + a->u.func.nresults; j++)
                if (!xvt(c, ga, gb, a->u.func.types[j], b->u.func.types[j])) return false;
            break;
        case PW_FORM_STRUCT:
            if (a->u.strct.nfields != b->u.strct.nfields) return false;
            for (uint32_t j = 0; j < a->u.strct.nfields; j++)
                if (!xfield(c, ga, gb, &a->u.strct.fields[j], &b->u.strct.fields[j])) return false;
            break;
        default:
            if (!xfield(c, ga, gb, &a->u.array, &b->u.array)) return false;
        }
    }
    return true;
}

bool pw__deftype_equiv(const pw_module *ma, uint32_t i, const pw_module *mb, uint32_t j) {
    if (i >= ma->ntypes || j >= mb->ntypes) return false;
    if (ma == mb) return ma->types[i].canon == mb->types[j].canon;
    const pw_deftype *a = &ma->types[i], *b = &mb->types[j];
    if (i - a->rec_start != j - b->rec_start || a->rec_len != b->rec_len) return false;
    xcmp c = {.ma = ma, .mb = mb};
    bool ok = xpush(&c, ma->types[a->rec_start].canon, mb->types[b->rec_start].canon);
    while (ok && c.nwork) {
        uint32_t gb = c.work[--c.nwork], ga = c.work[--c.nwork];
        ok = xgroup(&c, ga, gb);
    }
    free(c.seen.v);
    free(c.work);
    return ok && !c.oom;
}

bool pw__deftype_sub_cross(const pw_module *ma, uint32_t i, const pw_module *mb, uint32_t j) {
    if (i >= ma->ntypes || j >= mb->ntypes) return false;
    uint32_t db = mb->types[j].depth;
    if (ma->types[i].depth < db) return false;
    while (ma->types[i].depth > db)
        i = ma->types[i].super;
    return pw__deftype_equiv(ma, i, mb, j);
}
