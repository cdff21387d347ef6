/*
 * wat.c — modules of the text format to the binary format (pw_wat_to_wasm).
 *
 * Three passes over the module's fields, in text order:
 *   1. names: every definition (imports first, which the grammar requires) gets its
 *      index in its index space, with its $name; inline (elem)/(data) of tables and
 *      memories create their anonymous segments here so later indices agree;
 *   2. types: (type) and (rec) definitions, encoded, with each function type's
 *      signature and each struct's field names kept for type uses and field names;
 *   3. everything else, each field appending to its section's buffer. An inline type
 *      use without a matching plain function type appends a new type after the explicit
 *      ones, in order of appearance (the reference encoder's numbering).
 * Then the sections are put together in binary order, with @custom sections placed
 * before/after the section they name. Forms: a bare list of fields, (module $id?
 * field*), (module $id? binary "..."*) and (module $id? quote "..."*).
 */
#include "wasm/text/wat.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const SPACE_NAME[WT_SP_COUNT] = {"type",   "func", "table", "memory",
                                                    "global", "tag",  "elem",  "data"};

bool pw__wt_expect(wt_ctx *c, int kind, const char *what) {
    wt_tok *t = wt_peek(c);
    if (t->kind != kind) return pw__wt_fail(c, t, "unexpected token, expected %s", what);
    c->pos++;
    return true;
}

bool pw__wt_expect_kw(wt_ctx *c, const char *kw) {
    wt_tok *t = wt_peek(c);
    if (!pw__wt_is(t, kw)) return pw__wt_fail(c, t, "unexpected token, expected \"%s\"", kw);
    c->pos++;
    return true;
}

static bool id_of(wt_ctx *c, const wt_tok *t, wt_str *s) {
    if (t->quoted) {
        if (!pw__wt_string(c, t, s)) return false;
        if (!s->len) return pw__wt_fail(c, t, "empty identifier");
        if (!pw__wt_utf8_ok(s->s, s->len)) return pw__wt_fail(c, t, "malformed UTF-8 encoding");
        return true;
    }
    s->s = t->s;
    s->len = t->len;
    return true;
}

bool pw__wt_lookup(wt_ctx *c, wt_space *sp, const wt_tok *t, uint32_t *out) {
    wt_str s;
    if (!id_of(c, t, &s)) return false;
    for (uint32_t i = 0; i < sp->n; i++)
        if (sp->names[i].s && sp->names[i].len == s.len &&
            memcmp(sp->names[i].s, s.s, s.len) == 0) {
            *out = i;
            return true;
        }
    return false;
}

bool pw__wt_peek_index(wt_ctx *c) {
    wt_tok *t = wt_peek(c);
    uint32_t v;
    return t->kind == WT_ID || pw__wt_nat32(t, &v);
}

bool pw__wt_index(wt_ctx *c, int space, uint32_t *out) {
    wt_tok *t = wt_peek(c);
    if (t->kind == WT_ID) {
        if (!pw__wt_lookup(c, &c->sp[space], t, out)) {
            if (c->failed) return false;
            return pw__wt_fail(c, t, "unknown %s", SPACE_NAME[space]);
        }
        c->pos++;
        return true;
    }
    if (pw__wt_nat32(t, out)) {
        c->pos++;
        return true;
    }
    return pw__wt_fail(c, t, "unexpected token, expected a %s index", SPACE_NAME[space]);
}

bool pw__wt_index_opt(wt_ctx *c, int space, uint32_t *out) {
    *out = 0;
    if (!pw__wt_peek_index(c)) return true;
    return pw__wt_index(c, space, out);
}

/* Adds a definition to an index space (pass 1). */
static bool define(wt_ctx *c, int space, const wt_tok *id, bool import) {
    wt_space *sp = &c->sp[space];
    if (import && c->first_def >= 0)
        return pw__wt_fail(c, id, "import after %s", SPACE_NAME[c->first_def]);
    if (!import && c->first_def < 0 && space >= WT_SP_FUNC && space <= WT_SP_TAG)
        c->first_def = space;
    if (sp->n == sp->cap) {
        uint32_t cap = sp->cap ? sp->cap * 2 : 16;
        wt_str *v = realloc(sp->names, cap * sizeof *v);
        if (!v) return pw__wt_fail(c, id, "out of memory");
        sp->names = v;
        sp->cap = cap;
    }
    wt_str s = {0};
    if (id && id->kind == WT_ID) {
        uint32_t dup;
        if (pw__wt_lookup(c, sp, id, &dup))
            return pw__wt_fail(c, id, "duplicate %s", SPACE_NAME[space]);
        if (c->failed || !id_of(c, id, &s)) return false;
    }
    sp->names[sp->n++] = s;
    if (import) sp->imports++;
    return true;
}

/* ---------------------------------------------------------------- types */

static bool heap_kw(const wt_tok *t, uint8_t *code) {
    static const struct {
        const char *n;
        uint8_t c;
    } H[] = {{"func", 0x70},  {"extern", 0x6F}, {"any", 0x6E},      {"eq", 0x6D},
             {"i31", 0x6C},   {"struct", 0x6B}, {"array", 0x6A},    {"exn", 0x69},
             {"noexn", 0x74}, {"nofunc", 0x73}, {"noextern", 0x72}, {"none", 0x71}};
    for (size_t i = 0; i < sizeof H / sizeof H[0]; i++)
        if (pw__wt_is(t, H[i].n)) return *code = H[i].c, true;
    return false;
}

static bool ref_kw(const wt_tok *t, uint8_t *code) {
    static const struct {
        const char *n;
        uint8_t c;
    } R[] = {{"funcref", 0x70},     {"externref", 0x6F},     {"anyref", 0x6E},
             {"eqref", 0x6D},       {"i31ref", 0x6C},        {"structref", 0x6B},
             {"arrayref", 0x6A},    {"exnref", 0x69},        {"nullexnref", 0x74},
             {"nullfuncref", 0x73}, {"nullexternref", 0x72}, {"nullref", 0x71}};
    for (size_t i = 0; i < sizeof R / sizeof R[0]; i++)
        if (pw__wt_is(t, R[i].n)) return *code = R[i].c, true;
    return false;
}

bool pw__wt_heaptype(wt_ctx *c, pb_buf *out, bool *unused) {
    (void)unused;
    wt_tok *t = wt_peek(c);
    uint8_t code;
    if (heap_kw(t, &code)) {
        c->pos++;
        return pw__wt_byte(out, code);
    }
    uint32_t idx;
    if (!pw__wt_peek_index(c)) return pw__wt_fail(c, t, "unexpected token, expected a heap type");
    return pw__wt_index(c, WT_SP_TYPE, &idx) && pw__wt_s64(out, idx);
}

/* A reference type; out gets the full encoding (may be NULL), heap the heap type alone. */
bool pw__wt_reftype(wt_ctx *c, pb_buf *out, bool *nullable, pb_buf *heap) {
    wt_tok *t = wt_peek(c);
    uint8_t code;
    if (ref_kw(t, &code)) {
        c->pos++;
        *nullable = true;
        return (!out || pw__wt_byte(out, code)) && (!heap || pw__wt_byte(heap, code));
    }
    if (!wt_at_form(c, "ref"))
        return pw__wt_fail(c, t, "unexpected token, expected a reference type");
    c->pos += 2;
    *nullable = false;
    if (pw__wt_is(wt_peek(c), "null")) {
        *nullable = true;
        c->pos++;
    }
    pb_buf h = {0};
    bool ok = pw__wt_heaptype(c, &h, NULL) && pw__wt_expect(c, WT_RP, "\")\"");
    ok = ok && (!out || (pw__wt_byte(out, *nullable ? 0x63 : 0x64) && pb_buf_put(out, h.p, h.len)));
    ok = ok && (!heap || pb_buf_put(heap, h.p, h.len));
    pb_buf_free(&h);
    return ok;
}

bool pw__wt_valtype(wt_ctx *c, pb_buf *out) {
    wt_tok *t = wt_peek(c);
    static const struct {
        const char *n;
        uint8_t c;
    } N[] = {{"i32", 0x7F}, {"i64", 0x7E}, {"f32", 0x7D}, {"f64", 0x7C}, {"v128", 0x7B}};
    for (size_t i = 0; i < 5; i++)
        if (pw__wt_is(t, N[i].n)) {
            c->pos++;
            return pw__wt_byte(out, N[i].c);
        }
    bool nullable;
    return pw__wt_reftype(c, out, &nullable, NULL);
}

static bool storagetype(wt_ctx *c, pb_buf *out) {
    wt_tok *t = wt_peek(c);
    if (pw__wt_is(t, "i8")) return c->pos++, pw__wt_byte(out, 0x78);
    if (pw__wt_is(t, "i16")) return c->pos++, pw__wt_byte(out, 0x77);
    return pw__wt_valtype(c, out);
}

static bool fieldtype(wt_ctx *c, pb_buf *out) {
    if (wt_at_form(c, "mut")) {
        c->pos += 2;
        return storagetype(c, out) && pw__wt_byte(out, 1) && pw__wt_expect(c, WT_RP, "\")\"");
    }
    return storagetype(c, out) && pw__wt_byte(out, 0);
}

static wt_type *new_type(wt_ctx *c) {
    if (c->ntypes == c->captypes) {
        uint32_t cap = c->captypes ? c->captypes * 2 : 16;
        wt_type *v = realloc(c->types, cap * sizeof *v);
        if (!v) return NULL;
        c->types = v;
        c->captypes = cap;
    }
    wt_type *t = &c->types[c->ntypes++];
    memset(t, 0, sizeof *t);
    return t;
}

/* (param ...)* (result ...)* into sig; param names into *names when allowed. */
static bool params_results(wt_ctx *c, wt_type *ty, wt_str **names, bool allow_names,
                           bool params_ok) {
    uint32_t capn = 0;
    while (params_ok && wt_at_form(c, "param")) {
        wt_tok *at = wt_peek(c);
        c->pos += 2;
        wt_tok *id = wt_peek(c)->kind == WT_ID ? wt_next(c) : NULL;
        if (id && !allow_names) return pw__wt_fail(c, id, "unexpected token: named parameter here");
        uint32_t k = 0;
        while (wt_peek(c)->kind != WT_RP) {
            if (!pw__wt_valtype(c, &ty->sig)) return false;
            ty->nparams++;
            k++;
            if (names) {
                if (ty->nparams > capn) {
                    capn = capn ? capn * 2 : 8;
                    wt_str *v = pw__wt_alloc(c, capn * sizeof *v);
                    if (!v) return pw__wt_fail(c, at, "out of memory");
                    if (*names) memcpy(v, *names, (ty->nparams - 1) * sizeof *v);
                    *names = v;
                }
                wt_str s = {0};
                if (id && !id_of(c, id, &s)) return false;
                (*names)[ty->nparams - 1] = s;
            }
            if (id) break;
        }
        if (id && k != 1) return pw__wt_fail(c, at, "unexpected token, expected one type");
        if (!pw__wt_expect(c, WT_RP, "\")\"")) return false;
    }
    ty->res_off = (uint32_t)ty->sig.len;
    while (wt_at_form(c, "result")) {
        c->pos += 2;
        while (wt_peek(c)->kind != WT_RP) {
            if (!pw__wt_valtype(c, &ty->sig)) return false;
            ty->nres++;
        }
        if (!pw__wt_expect(c, WT_RP, "\")\"")) return false;
    }
    return true;
}

static bool same_sig(const wt_type *a, const wt_type *b) {
    return a->kind == 0x60 && a->nparams == b->nparams && a->nres == b->nres &&
           a->res_off == b->res_off && a->sig.len == b->sig.len &&
           (a->sig.len == 0 || memcmp(a->sig.p, b->sig.p, a->sig.len) == 0);
}

typedef struct wt_mod {
    pb_buf types, inline_types, imports, funcs, tables, mems, tags, globals, exports, start, elems,
        code, datas;
    uint32_t ngroups, ninline, nimports, nfuncs, ntables, nmems, ntags, nglobals, nexports, nelems,
        ncode, ndatas;
    bool has_start, uses_data;
    uint32_t cur[WT_SP_COUNT]; /* pass 3: next index in each space */
    struct wt_custom {
        wt_str name;
        pb_buf bytes;
        int anchor; /* section id, 0: first, -1: last */
        bool after;
    } * customs;
    uint32_t ncustoms;
} wt_mod;

static bool encode_type_def(wt_ctx *c, wt_mod *m, pb_buf *out, bool in_rec);

bool pw__wt_typeuse(wt_ctx *c, uint32_t *idx, wt_str **names, uint32_t *nnames, bool allow_names) {
    bool has_type = false;
    uint32_t tidx = 0;
    wt_tok *at = wt_peek(c);
    if (wt_at_form(c, "type")) {
        c->pos += 2;
        wt_tok *it = wt_peek(c);
        if (!pw__wt_index(c, WT_SP_TYPE, &tidx) || !pw__wt_expect(c, WT_RP, "\")\"")) return false;
        (void)it; /* a numeric index past the types is the validator's "unknown type" */
        has_type = true;
    }
    wt_type tmp = {0};
    wt_str *nm = NULL;
    bool ok = params_results(c, &tmp, names ? &nm : NULL, allow_names, true);
    if (ok && has_type) {
        *idx = tidx;
        bool given = tmp.nparams || tmp.nres;
        if (tidx < c->ntypes && c->types[tidx].kind == 0x60) {
            wt_type *ty = &c->types[tidx];
            if (given && !same_sig(ty, &tmp)) ok = pw__wt_fail(c, at, "inline function type");
            if (ok && names && !tmp.nparams) {
                tmp.nparams = ty->nparams;
                nm = pw__wt_alloc(c, (ty->nparams + 1) * sizeof *nm);
                if (!nm) ok = pw__wt_fail(c, at, "out of memory");
            }
        } else if (given && tidx < c->ntypes) {
            ok = pw__wt_fail(c, at, "inline function type");
        }
    } else if (ok) {
        tmp.kind = 0x60;
        uint32_t i;
        for (i = 0; i < c->ntypes; i++)
            if (c->types[i].simple && same_sig(&c->types[i], &tmp)) break;
        if (i == c->ntypes) {
            wt_mod *m = c->mod;
            wt_type *ty = new_type(c);
            if (!ty) {
                ok = pw__wt_fail(c, at, "out of memory");
            } else {
                *ty = tmp;
                memset(&tmp.sig, 0, sizeof tmp.sig);
                ty->simple = true;
                ok = define(c, WT_SP_TYPE, NULL, false) &&
                     /* anonymous */ pw__wt_byte(&m->inline_types, 0x60) &&
                     pw__wt_u32(&m->inline_types, ty->nparams) &&
                     pb_buf_put(&m->inline_types, ty->sig.p, ty->res_off) &&
                     pw__wt_u32(&m->inline_types, ty->nres) &&
                     pb_buf_put(&m->inline_types, (const char *)ty->sig.p + ty->res_off,
                                ty->sig.len - ty->res_off);
                m->ninline++;
            }
        }
        *idx = i;
    }
    if (names) {
        *names = nm;
        *nnames = tmp.nparams;
    }
    pb_buf_free(&tmp.sig);
    return ok;
}

bool pw__wt_typeuse_block(wt_ctx *c, pb_buf *out) {
    size_t save = c->pos;
    if (!wt_at_form(c, "type")) {
        /* (result t)? alone is a value type or empty */
        wt_type tmp = {0};
        if (!wt_at_form(c, "param")) {
            bool ok = params_results(c, &tmp, NULL, false, false);
            if (ok && tmp.nres <= 1) {
                ok = tmp.nres ? pb_buf_put(out, tmp.sig.p, tmp.sig.len) : pw__wt_byte(out, 0x40);
                pb_buf_free(&tmp.sig);
                return ok;
            }
            pb_buf_free(&tmp.sig);
            if (!ok) return false;
            c->pos = save;
        }
    }
    uint32_t idx;
    return pw__wt_typeuse(c, &idx, NULL, NULL, false) && pw__wt_s64(out, idx);
}

/* comptype: (func ...) | (struct (field ...)*) | (array fieldtype) */
static bool comptype(wt_ctx *c, wt_type *ty, pb_buf *out) {
    wt_tok *t = wt_peek(c);
    if (t->kind != WT_LP) return pw__wt_fail(c, t, "unexpected token, expected a composite type");
    c->pos++;
    wt_tok *kw = wt_next(c);
    if (pw__wt_is(kw, "func")) {
        ty->kind = 0x60;
        if (!params_results(c, ty, NULL, true, true)) return false;
        size_t r = ty->res_off;
        if (!pw__wt_byte(out, 0x60) || !pw__wt_u32(out, ty->nparams) ||
            !pb_buf_put(out, ty->sig.p, r) || !pw__wt_u32(out, ty->nres) ||
            !pb_buf_put(out, (const char *)ty->sig.p + r, ty->sig.len - r))
            return false;
    } else if (pw__wt_is(kw, "struct")) {
        ty->kind = 0x5F;
        pb_buf body = {0};
        uint32_t cap = 0;
        bool ok = true;
        while (ok && wt_at_form(c, "field")) {
            c->pos += 2;
            wt_tok *id = wt_peek(c)->kind == WT_ID ? wt_next(c) : NULL;
            while (ok && wt_peek(c)->kind != WT_RP) {
                ok = fieldtype(c, &body);
                if (!ok) break;
                if (ty->nfields == cap) {
                    cap = cap ? cap * 2 : 8;
                    wt_str *v = pw__wt_alloc(c, cap * sizeof *v);
                    if (!v) {
                        ok = false;
                        break;
                    }
                    if (ty->nfields) memcpy(v, ty->fields, ty->nfields * sizeof *v);
                    ty->fields = v;
                }
                wt_str s = {0};
                if (id) {
                    for (uint32_t i = 0; i < ty->nfields; i++)
                        if (ty->fields[i].s && ty->fields[i].len == id->len &&
                            memcmp(ty->fields[i].s, id->s, id->len) == 0)
                            ok = pw__wt_fail(c, id, "duplicate field");
                    ok = ok && id_of(c, id, &s);
                }
                ty->fields[ty->nfields++] = s;
                if (id) break;
            }
            ok = ok && pw__wt_expect(c, WT_RP, "\")\"");
        }
        ok = ok && pw__wt_byte(out, 0x5F) && pw__wt_u32(out, ty->nfields) &&
             pb_buf_put(out, body.p, body.len);
        pb_buf_free(&body);
        if (!ok) return false;
    } else if (pw__wt_is(kw, "array")) {
        ty->kind = 0x5E;
        if (!pw__wt_byte(out, 0x5E) || !fieldtype(c, out)) return false;
    } else {
        return pw__wt_fail(c, kw, "unexpected token, expected func, struct or array");
    }
    return pw__wt_expect(c, WT_RP, "\")\"");
}

/* (type $id? (@name)? subtype) at the cursor ("(" "type" consumed by the caller). */
static bool encode_type_def(wt_ctx *c, wt_mod *m, pb_buf *out, bool in_rec) {
    (void)m;
    if (wt_peek(c)->kind == WT_ID) c->pos++;
    wt_type *ty = new_type(c);
    if (!ty) return pw__wt_fail(c, wt_peek(c), "out of memory");
    uint32_t self = c->ntypes - 1;
    wt_type local = {0};
    bool ok;
    if (wt_at_form(c, "sub")) {
        c->pos += 2;
        bool final = false;
        if (pw__wt_is(wt_peek(c), "final")) final = true, c->pos++;
        pb_buf supers = {0};
        uint32_t n = 0;
        ok = true;
        while (ok && pw__wt_peek_index(c)) {
            uint32_t s;
            ok = pw__wt_index(c, WT_SP_TYPE, &s) && pw__wt_u32(&supers, s);
            n++;
        }
        if (ok && final && n == 0) {
            ok = comptype(c, &local, out);
            local.simple = !in_rec;
        } else {
            ok = ok && pw__wt_byte(out, final ? 0x4F : 0x50) && pw__wt_u32(out, n) &&
                 pb_buf_put(out, supers.p, supers.len) && comptype(c, &local, out);
        }
        pb_buf_free(&supers);
        ok = ok && pw__wt_expect(c, WT_RP, "\")\"");
    } else {
        ok = comptype(c, &local, out);
        local.simple = !in_rec;
    }
    ty = &c->types[self];
    *ty = local;
    return ok && pw__wt_expect(c, WT_RP, "\")\"");
}

/* ---------------------------------------------------------------- pass 1 */

static bool skip_form(wt_ctx *c) {
    int depth = 0;
    do {
        wt_tok *t = wt_next(c);
        if (t->kind == WT_LP || t->kind == WT_ANNOT)
            depth++;
        else if (t->kind == WT_RP)
            depth--;
        else if (t->kind == WT_EOF)
            return pw__wt_fail(c, t, "unexpected end of text, expected \")\"");
    } while (depth > 0);
    return true;
}

static bool skip_name_annot(wt_ctx *c) {
    while (wt_peek(c)->kind == WT_ANNOT && wt_peek(c)->len == 4 &&
           memcmp(wt_peek(c)->s, "name", 4) == 0) {
        c->pos++;
        if (wt_peek(c)->kind != WT_STR)
            return pw__wt_fail(c, wt_peek(c), "@name annotation: string expected");
        c->pos++;
        if (!pw__wt_expect(c, WT_RP, "\")\"")) return false;
    }
    return true;
}

/* Skips (export "...")* and reports whether (import "m" "n") follows. */
static void exports_then_import(wt_ctx *c, size_t *p, bool *import) {
    size_t save = c->pos;
    c->pos = *p;
    while (wt_at_form(c, "export")) {
        if (!skip_form(c)) break;
    }
    *import = wt_at_form(c, "import");
    *p = c->pos;
    c->pos = save;
}

static int field_space(const wt_tok *kw) {
    if (pw__wt_is(kw, "func")) return WT_SP_FUNC;
    if (pw__wt_is(kw, "table")) return WT_SP_TABLE;
    if (pw__wt_is(kw, "memory")) return WT_SP_MEM;
    if (pw__wt_is(kw, "global")) return WT_SP_GLOBAL;
    if (pw__wt_is(kw, "tag")) return WT_SP_TAG;
    return -1;
}

static bool pass_names(wt_ctx *c, size_t start) {
    c->pos = start;
    while (wt_peek(c)->kind == WT_LP || wt_peek(c)->kind == WT_ANNOT) {
        size_t field = c->pos;
        if (wt_peek(c)->kind == WT_ANNOT) {
            if (!skip_form(c)) return false;
            continue;
        }
        c->pos++;
        wt_tok *kw = wt_next(c);
        wt_tok *id = wt_peek(c)->kind == WT_ID ? wt_peek(c) : NULL;
        int sp = field_space(kw);
        if (pw__wt_is(kw, "type")) {
            if (!define(c, WT_SP_TYPE, id, false)) return false;
        } else if (pw__wt_is(kw, "rec")) {
            while (wt_at_form(c, "type")) {
                c->pos += 2;
                wt_tok *tid = wt_peek(c)->kind == WT_ID ? wt_peek(c) : NULL;
                if (!define(c, WT_SP_TYPE, tid, false)) return false;
                c->pos -= 2;
                if (!skip_form(c)) return false;
            }
        } else if (pw__wt_is(kw, "import")) {
            c->pos += 2; /* module and field names (checked in pass 3) */
            if (wt_peek(c)->kind == WT_LP) {
                int isp = field_space(wt_peek2(c));
                if (isp < 0)
                    return pw__wt_fail(c, wt_peek2(c), "unexpected token, expected an import kind");
                c->pos += 2;
                wt_tok *iid = wt_peek(c)->kind == WT_ID ? wt_peek(c) : NULL;
                if (!define(c, isp, iid ? iid : wt_peek(c), true)) return false;
            }
        } else if (sp >= 0) {
            size_t p = c->pos + (id ? 1 : 0);
            if (c->t[p].kind == WT_ANNOT) {
                size_t save = c->pos;
                c->pos = p;
                if (!skip_name_annot(c)) return false;
                p = c->pos;
                c->pos = save;
            }
            bool import;
            exports_then_import(c, &p, &import);
            if (!define(c, sp, id ? id : kw, import)) return false;
            if (!import && (sp == WT_SP_TABLE || sp == WT_SP_MEM)) {
                /* inline (elem ...) / (data ...) create one segment */
                size_t save = c->pos;
                c->pos = p;
                int depth = 0;
                bool inline_seg = false;
                for (;;) {
                    wt_tok *t = wt_peek(c);
                    if (t->kind == WT_EOF) break;
                    if (t->kind == WT_LP) {
                        if (depth == 0 &&
                            pw__wt_is(wt_peek2(c), sp == WT_SP_TABLE ? "elem" : "data"))
                            inline_seg = true;
                        depth++;
                    } else if (t->kind == WT_RP) {
                        if (depth == 0) break;
                        depth--;
                    }
                    c->pos++;
                }
                c->pos = save;
                if (inline_seg &&
                    !define(c, sp == WT_SP_TABLE ? WT_SP_ELEM : WT_SP_DATA, NULL, false))
                    return false;
            }
        } else if (pw__wt_is(kw, "elem")) {
            if (!define(c, WT_SP_ELEM, id, false)) return false;
        } else if (pw__wt_is(kw, "data")) {
            if (!define(c, WT_SP_DATA, id, false)) return false;
        } else if (!pw__wt_is(kw, "export") && !pw__wt_is(kw, "start")) {
            return pw__wt_fail(c, kw, "unexpected token, expected a module field");
        }
        c->pos = field;
        if (!skip_form(c)) return false;
    }
    return true;
}

/* ---------------------------------------------------------------- pass 2: types */

static bool pass_types(wt_ctx *c, wt_mod *m, size_t start) {
    c->pos = start;
    while (wt_peek(c)->kind == WT_LP || wt_peek(c)->kind == WT_ANNOT) {
        size_t field = c->pos;
        if (wt_at_form(c, "type")) {
            c->pos += 2;
            if (!encode_type_def(c, m, &m->types, false)) return false;
            m->ngroups++;
        } else if (wt_at_form(c, "rec")) {
            c->pos += 2;
            pb_buf grp = {0};
            uint32_t n = 0;
            bool ok = true;
            while (ok && wt_at_form(c, "type")) {
                c->pos += 2;
                ok = encode_type_def(c, m, &grp, true);
                n++;
            }
            if (ok && n == 1) c->types[c->ntypes - 1].simple = false;
            ok = ok && pw__wt_expect(c, WT_RP, "\")\"");
            if (ok) {
                if (n == 1)
                    ok = pb_buf_put(&m->types, grp.p, grp.len);
                else
                    ok = pw__wt_byte(&m->types, 0x4E) && pw__wt_u32(&m->types, n) &&
                         pb_buf_put(&m->types, grp.p, grp.len);
            }
            pb_buf_free(&grp);
            if (!ok) return false;
            m->ngroups++;
        } else {
            if (!skip_form(c)) return false;
        }
        (void)field;
    }
    c->nexplicit_types = c->ntypes;
    return true;
}

/* ---------------------------------------------------------------- pass 3 */

static bool name_str(wt_ctx *c, wt_str *s) {
    wt_tok *t = wt_peek(c);
    if (t->kind != WT_STR) return pw__wt_fail(c, t, "unexpected token, expected a string");
    if (!pw__wt_string(c, t, s)) return false;
    if (!pw__wt_utf8_ok(s->s, s->len)) return pw__wt_fail(c, t, "malformed UTF-8 encoding");
    c->pos++;
    return true;
}

static bool limits(wt_ctx *c, pb_buf *out, bool is64, bool table) {
    (void)table;
    uint64_t min, max = 0;
    wt_tok *t = wt_peek(c);
    if (!pw__wt_nat64(t, &min)) return pw__wt_fail(c, t, "unexpected token, expected a limit");
    c->pos++;
    bool has_max = false;
    t = wt_peek(c);
    if (pw__wt_nat64(t, &max)) {
        has_max = true;
        c->pos++;
    }
    uint8_t flags = (uint8_t)((has_max ? 1 : 0) | (is64 ? 4 : 0));
    return pw__wt_byte(out, flags) && pw__wt_u64(out, min) && (!has_max || pw__wt_u64(out, max));
}

static bool addrtype(wt_ctx *c) {
    if (pw__wt_is(wt_peek(c), "i64")) return c->pos++, true;
    if (pw__wt_is(wt_peek(c), "i32")) c->pos++;
    return false;
}

static bool tabletype(wt_ctx *c, pb_buf *out) {
    bool is64 = addrtype(c);
    pb_buf lim = {0};
    bool ok =
        limits(c, &lim, is64, true) && pw__wt_valtype(c, out) && pb_buf_put(out, lim.p, lim.len);
    pb_buf_free(&lim);
    return ok;
}

static bool memtype(wt_ctx *c, pb_buf *out) {
    bool is64 = addrtype(c);
    return limits(c, out, is64, false);
}

static bool globaltype(wt_ctx *c, pb_buf *out) {
    if (wt_at_form(c, "mut")) {
        c->pos += 2;
        return pw__wt_valtype(c, out) && pw__wt_byte(out, 1) && pw__wt_expect(c, WT_RP, "\")\"");
    }
    return pw__wt_valtype(c, out) && pw__wt_byte(out, 0);
}

static bool const_expr(wt_ctx *c, wt_mod *m, pb_buf *out) {
    wt_func f = {0};
    bool ok = pw__wt_instrs(c, &f, out) && pw__wt_byte(out, 0x0B);
    if (f.uses_data) m->uses_data = true;
    return ok;
}

/* (export "n")* of a definition with index idx. */
static bool inline_exports(wt_ctx *c, wt_mod *m, uint8_t kind, uint32_t idx) {
    while (wt_at_form(c, "export")) {
        c->pos += 2;
        wt_str s;
        if (!name_str(c, &s) || !pw__wt_expect(c, WT_RP, "\")\"")) return false;
        if (!pw__wt_name(&m->exports, &s) || !pw__wt_byte(&m->exports, kind) ||
            !pw__wt_u32(&m->exports, idx))
            return false;
        m->nexports++;
    }
    return true;
}

static bool import_head(wt_ctx *c, wt_mod *m, uint8_t kind) {
    wt_str mod, nm;
    if (!name_str(c, &mod) || !name_str(c, &nm)) return false;
    m->nimports++;
    return pw__wt_name(&m->imports, &mod) && pw__wt_name(&m->imports, &nm) &&
           pw__wt_byte(&m->imports, kind);
}

static bool func_body(wt_ctx *c, wt_mod *m, wt_str *pnames, uint32_t np) {
    /* locals */
    pb_buf locals = {0}, body = {0};
    wt_func f = {0};
    uint32_t cap = np + 8;
    f.locals = pw__wt_alloc(c, cap * sizeof *f.locals);
    if (!f.locals) return pw__wt_fail(c, wt_peek(c), "out of memory");
    if (np) memcpy(f.locals, pnames, np * sizeof *pnames);
    f.nlocals = np;
    uint32_t ngroups = 0, run = 0;
    pb_buf last = {0}, cur = {0};
    bool ok = true;
    while (ok && wt_at_form(c, "local")) {
        c->pos += 2;
        wt_tok *id = wt_peek(c)->kind == WT_ID ? wt_next(c) : NULL;
        uint32_t k = 0;
        while (ok && wt_peek(c)->kind != WT_RP) {
            pb_buf_reset(&cur);
            ok = pw__wt_valtype(c, &cur);
            if (!ok) break;
            if (f.nlocals == cap) {
                cap *= 2;
                wt_str *v = pw__wt_alloc(c, cap * sizeof *v);
                if (!v) {
                    ok = false;
                    break;
                }
                memcpy(v, f.locals, f.nlocals * sizeof *v);
                f.locals = v;
            }
            wt_str s = {0};
            if (id) ok = id_of(c, id, &s);
            f.locals[f.nlocals++] = s;
            k++;
            if (run && cur.len == last.len && memcmp(cur.p, last.p, cur.len) == 0) {
                run++;
            } else {
                if (run) {
                    ok = ok && pw__wt_u32(&locals, run) && pb_buf_put(&locals, last.p, last.len);
                    ngroups++;
                }
                pb_buf_reset(&last);
                ok = ok && pb_buf_put(&last, cur.p, cur.len);
                run = 1;
            }
            if (id) break;
        }
        if (ok && id && k != 1) ok = pw__wt_fail(c, id, "unexpected token, expected one type");
        ok = ok && pw__wt_expect(c, WT_RP, "\")\"");
    }
    if (ok && run) {
        ok = pw__wt_u32(&locals, run) && pb_buf_put(&locals, last.p, last.len);
        ngroups++;
    }
    for (uint32_t i = 0; ok && i < f.nlocals; i++)
        for (uint32_t j = i + 1; ok && f.locals[i].s && j < f.nlocals; j++)
            if (f.locals[j].s && f.locals[j].len == f.locals[i].len &&
                memcmp(f.locals[j].s, f.locals[i].s, f.locals[i].len) == 0)
                ok = pw__wt_fail(c, wt_peek(c), "duplicate local");
    ok = ok && pw__wt_instrs(c, &f, &body) && pw__wt_byte(&body, 0x0B);
    if (f.uses_data) m->uses_data = true;
    if (ok) {
        pb_buf hdr = {0};
        ok = pw__wt_u32(&hdr, ngroups) && pb_buf_put(&hdr, locals.p, locals.len);
        ok = ok && pw__wt_u32(&m->code, (uint32_t)(hdr.len + body.len)) &&
             pb_buf_put(&m->code, hdr.p, hdr.len) && pb_buf_put(&m->code, body.p, body.len);
        m->ncode++;
        pb_buf_free(&hdr);
    }
    pb_buf_free(&locals);
    pb_buf_free(&body);
    pb_buf_free(&last);
    pb_buf_free(&cur);
    return ok;
}

static bool field_func(wt_ctx *c, wt_mod *m) {
    if (wt_peek(c)->kind == WT_ID) c->pos++;
    if (!skip_name_annot(c)) return false;
    uint32_t idx = m->cur[WT_SP_FUNC]++;
    if (!inline_exports(c, m, 0, idx)) return false;
    bool import = false;
    if (wt_at_form(c, "import")) {
        c->pos += 2;
        if (!import_head(c, m, 0) || !pw__wt_expect(c, WT_RP, "\")\"")) return false;
        import = true;
    }
    uint32_t type, np;
    wt_str *names = NULL;
    if (!pw__wt_typeuse(c, &type, &names, &np, !import)) return false;
    if (import) return pw__wt_u32(&m->imports, type);
    if (!pw__wt_u32(&m->funcs, type)) return false;
    m->nfuncs++;
    return func_body(c, m, names, np);
}

/* Active segment offset: (offset instr*) or one folded instruction. */
static bool offset_expr(wt_ctx *c, wt_mod *m, pb_buf *out) {
    if (wt_at_form(c, "offset")) {
        c->pos += 2;
        return const_expr(c, m, out) && pw__wt_expect(c, WT_RP, "\")\"");
    }
    if (wt_peek(c)->kind != WT_LP)
        return pw__wt_fail(c, wt_peek(c), "unexpected token, expected an offset");
    /* one folded instruction: parse it as an expression of exactly that form */
    size_t save_n = c->nt;
    (void)save_n;
    wt_func f = {0};
    /* Temporarily end the token stream after this form. */
    size_t p = c->pos;
    if (!skip_form(c)) return false;
    size_t end = c->pos;
    c->pos = p;
    wt_tok saved = c->t[end];
    c->t[end] = (wt_tok){.kind = WT_RP, .line = saved.line, .col = saved.col};
    bool ok = pw__wt_instrs(c, &f, out) && pw__wt_byte(out, 0x0B);
    c->t[end] = saved;
    if (f.uses_data) m->uses_data = true;
    return ok;
}

/* An element list: "func"? funcidx* (type (ref func)) or reftype item*; with `given`
 * (a table's inline elem) the type is the table's and the items are funcidx* or
 * item*. Both encodings are built: the function indices (usable when every item is
 * ref.func x) and the expressions. */
typedef struct wt_elems {
    pb_buf type, idxs, exprs;
    uint32_t n;
    bool all_funcs; /* every item is ref.func x */
    bool func_kw;   /* written as function indices: the type is (ref func) */
} wt_elems;

static bool elem_item_is_func(const pb_buf *exprs, size_t before, uint32_t *x) {
    const uint8_t *e = (const uint8_t *)exprs->p + before;
    size_t len = exprs->len - before, k = 1;
    if (len < 3 || e[0] != 0xD2 || e[len - 1] != 0x0B) return false;
    uint32_t v = 0, sh = 0;
    while (k < len - 1 && (e[k] & 0x80) && sh < 28)
        v |= (uint32_t)(e[k] & 0x7F) << sh, sh += 7, k++;
    if (k != len - 2) return false;
    *x = v | (uint32_t)(e[k] & 0x7F) << sh;
    return true;
}

static bool elem_list(wt_ctx *c, wt_mod *m, wt_elems *el, const pb_buf *given) {
    bool ok = true;
    el->all_funcs = true;
    bool func_kw = !given && pw__wt_is(wt_peek(c), "func");
    bool bare = given ? wt_peek(c)->kind != WT_LP
                      : (!func_kw && (pw__wt_peek_index(c) || wt_peek(c)->kind == WT_RP));
    if (func_kw) c->pos++;
    if (given)
        ok = pb_buf_put(&el->type, given->p, given->len);
    else if (func_kw || bare)
        ok = pw__wt_byte(&el->type, 0x64) && pw__wt_byte(&el->type, 0x70);
    else
        ok = pw__wt_valtype(c, &el->type);
    el->func_kw = func_kw || bare;
    if (func_kw || bare) {
        while (ok && pw__wt_peek_index(c)) {
            uint32_t x;
            ok = pw__wt_index(c, WT_SP_FUNC, &x) && pw__wt_u32(&el->idxs, x) &&
                 pw__wt_byte(&el->exprs, 0xD2) && pw__wt_u32(&el->exprs, x) &&
                 pw__wt_byte(&el->exprs, 0x0B);
            el->n++;
        }
        return ok;
    }
    while (ok && wt_peek(c)->kind == WT_LP) {
        size_t before = el->exprs.len;
        if (wt_at_form(c, "item")) {
            c->pos += 2;
            ok = const_expr(c, m, &el->exprs) && pw__wt_expect(c, WT_RP, "\")\"");
        } else {
            ok = offset_expr(c, m, &el->exprs);
        }
        el->n++;
        uint32_t x;
        if (ok && elem_item_is_func(&el->exprs, before, &x))
            ok = pw__wt_u32(&el->idxs, x);
        else
            el->all_funcs = false;
    }
    return ok;
}

static bool is_type(const pb_buf *t, uint8_t a, int b) {
    return t->len == (b < 0 ? 1u : 2u) && ((uint8_t *)t->p)[0] == a &&
           (b < 0 || ((uint8_t *)t->p)[1] == (uint8_t)b);
}

/* Writes one element segment. mode: 0 active, 1 passive, 2 declarative. Function
 * indices are used when the segment's type is (ref func) and every item is ref.func. */
static bool put_elem(wt_mod *m, int mode, uint32_t table, pb_buf *off, wt_elems *el) {
    bool as_idx = el->all_funcs && is_type(&el->type, 0x64, 0x70);
    pb_buf *items = as_idx ? &el->idxs : &el->exprs;
    pb_buf *b = &m->elems;
    m->nelems++;
    bool ok;
    if (mode == 0) {
        if (table == 0 && (as_idx || is_type(&el->type, 0x70, -1))) {
            ok = pw__wt_u32(b, as_idx ? 0 : 4) && pb_buf_put(b, off->p, off->len);
        } else {
            ok = pw__wt_u32(b, as_idx ? 2 : 6) && pw__wt_u32(b, table) &&
                 pb_buf_put(b, off->p, off->len);
            ok = ok && (as_idx ? pw__wt_byte(b, 0x00) : pb_buf_put(b, el->type.p, el->type.len));
        }
    } else {
        ok = pw__wt_u32(b, (as_idx ? 1u : 5u) + (mode == 2 ? 2u : 0u));
        ok = ok && (as_idx ? pw__wt_byte(b, 0x00) : pb_buf_put(b, el->type.p, el->type.len));
    }
    return ok && pw__wt_u32(b, el->n) && pb_buf_put(b, items->p, items->len);
}

static void elems_free(wt_elems *el) {
    pb_buf_free(&el->type);
    pb_buf_free(&el->idxs);
    pb_buf_free(&el->exprs);
}

static bool field_table(wt_ctx *c, wt_mod *m) {
    if (wt_peek(c)->kind == WT_ID) c->pos++;
    if (!skip_name_annot(c)) return false;
    uint32_t idx = m->cur[WT_SP_TABLE]++;
    if (!inline_exports(c, m, 1, idx)) return false;
    if (wt_at_form(c, "import")) {
        c->pos += 2;
        return import_head(c, m, 1) && pw__wt_expect(c, WT_RP, "\")\"") &&
               tabletype(c, &m->imports);
    }
    m->ntables++;
    size_t save = c->pos;
    bool is64 = addrtype(c);
    wt_tok *t = wt_peek(c);
    uint64_t dummy;
    if (!pw__wt_nat64(t, &dummy)) {
        /* at? reftype (elem ...) */
        pb_buf type = {0}, off = {0};
        wt_elems el = {0};
        bool ok = pw__wt_valtype(c, &type);
        if (ok && !wt_at_form(c, "elem"))
            ok = pw__wt_fail(c, wt_peek(c), "unexpected token, expected \"(elem\"");
        if (ok) {
            c->pos += 2;
            ok = elem_list(c, m, &el, &type) && pw__wt_expect(c, WT_RP, "\")\"");
        }
        ok = ok && pb_buf_put(&m->tables, type.p, type.len) &&
             pw__wt_byte(&m->tables, is64 ? 5 : 1) && pw__wt_u64(&m->tables, el.n) &&
             pw__wt_u64(&m->tables, el.n);
        ok = ok && pw__wt_byte(&off, is64 ? 0x42 : 0x41) && pw__wt_byte(&off, 0) &&
             pw__wt_byte(&off, 0x0B);
        if (ok && el.func_kw && is_type(&type, 0x70, -1)) {
            /* function indices into a funcref table: the plain (ref func) segment */
            pb_buf_reset(&el.type);
            ok = pw__wt_byte(&el.type, 0x64) && pw__wt_byte(&el.type, 0x70);
        }
        ok = ok && put_elem(m, 0, idx, &off, &el);
        m->cur[WT_SP_ELEM]++;
        pb_buf_free(&type);
        pb_buf_free(&off);
        elems_free(&el);
        return ok;
    }
    c->pos = save;
    pb_buf tt = {0};
    bool ok = tabletype(c, &tt);
    if (ok && wt_peek(c)->kind == WT_LP) {
        ok = pw__wt_byte(&m->tables, 0x40) && pw__wt_byte(&m->tables, 0x00) &&
             pb_buf_put(&m->tables, tt.p, tt.len) && const_expr(c, m, &m->tables);
    } else if (ok) {
        ok = pb_buf_put(&m->tables, tt.p, tt.len);
    }
    pb_buf_free(&tt);
    return ok;
}

static bool data_strings(wt_ctx *c, pb_buf *out) {
    while (wt_peek(c)->kind == WT_STR) {
        wt_str s;
        if (!pw__wt_string(c, wt_peek(c), &s)) return false;
        c->pos++;
        if (!pb_buf_put(out, s.s, s.len)) return false;
    }
    return true;
}

static bool field_memory(wt_ctx *c, wt_mod *m) {
    if (wt_peek(c)->kind == WT_ID) c->pos++;
    if (!skip_name_annot(c)) return false;
    uint32_t idx = m->cur[WT_SP_MEM]++;
    if (!inline_exports(c, m, 2, idx)) return false;
    if (wt_at_form(c, "import")) {
        c->pos += 2;
        return import_head(c, m, 2) && pw__wt_expect(c, WT_RP, "\")\"") && memtype(c, &m->imports);
    }
    m->nmems++;
    size_t save = c->pos;
    bool is64 = addrtype(c);
    if (wt_at_form(c, "data")) {
        c->pos += 2;
        pb_buf bytes = {0};
        bool ok = data_strings(c, &bytes) && pw__wt_expect(c, WT_RP, "\")\"");
        uint64_t pages = (bytes.len + 65535) / 65536;
        ok = ok && pw__wt_byte(&m->mems, is64 ? 5 : 1) && pw__wt_u64(&m->mems, pages) &&
             pw__wt_u64(&m->mems, pages);
        if (ok) {
            pb_buf *d = &m->datas;
            if (idx == 0)
                ok = pw__wt_u32(d, 0);
            else
                ok = pw__wt_u32(d, 2) && pw__wt_u32(d, idx);
            ok = ok && pw__wt_byte(d, is64 ? 0x42 : 0x41) && pw__wt_byte(d, 0) &&
                 pw__wt_byte(d, 0x0B) && pw__wt_u32(d, (uint32_t)bytes.len) &&
                 pb_buf_put(d, bytes.p, bytes.len);
            m->ndatas++;
            m->cur[WT_SP_DATA]++;
        }
        pb_buf_free(&bytes);
        return ok;
    }
    c->pos = save;
    return memtype(c, &m->mems);
}

static bool field_global(wt_ctx *c, wt_mod *m) {
    if (wt_peek(c)->kind == WT_ID) c->pos++;
    if (!skip_name_annot(c)) return false;
    uint32_t idx = m->cur[WT_SP_GLOBAL]++;
    if (!inline_exports(c, m, 3, idx)) return false;
    if (wt_at_form(c, "import")) {
        c->pos += 2;
        return import_head(c, m, 3) && pw__wt_expect(c, WT_RP, "\")\"") &&
               globaltype(c, &m->imports);
    }
    m->nglobals++;
    return globaltype(c, &m->globals) && const_expr(c, m, &m->globals);
}

static bool field_tag(wt_ctx *c, wt_mod *m) {
    if (wt_peek(c)->kind == WT_ID) c->pos++;
    if (!skip_name_annot(c)) return false;
    uint32_t idx = m->cur[WT_SP_TAG]++;
    if (!inline_exports(c, m, 4, idx)) return false;
    pb_buf *out = &m->tags;
    if (wt_at_form(c, "import")) {
        c->pos += 2;
        if (!import_head(c, m, 4) || !pw__wt_expect(c, WT_RP, "\")\"")) return false;
        out = &m->imports;
    } else {
        m->ntags++;
    }
    uint32_t type;
    return pw__wt_typeuse(c, &type, NULL, NULL, false) && pw__wt_byte(out, 0) &&
           pw__wt_u32(out, type);
}

static bool field_import(wt_ctx *c, wt_mod *m) {
    wt_str mod, nm;
    if (!name_str(c, &mod) || !name_str(c, &nm)) return false;
    if (wt_peek(c)->kind != WT_LP)
        return pw__wt_fail(c, wt_peek(c), "unexpected token, expected an import description");
    c->pos++;
    wt_tok *kw = wt_next(c);
    int sp = field_space(kw);
    if (sp < 0) return pw__wt_fail(c, kw, "unexpected token, expected an import kind");
    if (wt_peek(c)->kind == WT_ID) c->pos++;
    if (!skip_name_annot(c)) return false;
    m->cur[sp]++;
    m->nimports++;
    pb_buf *b = &m->imports;
    static const uint8_t KIND[WT_SP_COUNT] = {0, 0, 1, 2, 3, 4, 0, 0};
    bool ok = pw__wt_name(b, &mod) && pw__wt_name(b, &nm) && pw__wt_byte(b, KIND[sp]);
    uint32_t type;
    switch (sp) {
    case WT_SP_FUNC:
        ok = ok && pw__wt_typeuse(c, &type, NULL, NULL, true) && pw__wt_u32(b, type);
        break;
    case WT_SP_TABLE: ok = ok && tabletype(c, b); break;
    case WT_SP_MEM: ok = ok && memtype(c, b); break;
    case WT_SP_GLOBAL: ok = ok && globaltype(c, b); break;
    default:
        ok = ok && pw__wt_typeuse(c, &type, NULL, NULL, false) && pw__wt_byte(b, 0) &&
             pw__wt_u32(b, type);
    }
    return ok && pw__wt_expect(c, WT_RP, "\")\"");
}

static bool field_export(wt_ctx *c, wt_mod *m) {
    wt_str nm;
    if (!name_str(c, &nm)) return false;
    if (wt_peek(c)->kind != WT_LP)
        return pw__wt_fail(c, wt_peek(c), "unexpected token, expected an export description");
    c->pos++;
    wt_tok *kw = wt_next(c);
    int sp = field_space(kw);
    if (sp < 0) return pw__wt_fail(c, kw, "unexpected token, expected an export kind");
    static const uint8_t KIND[WT_SP_COUNT] = {0, 0, 1, 2, 3, 4, 0, 0};
    uint32_t x;
    if (!pw__wt_index(c, sp, &x) || !pw__wt_expect(c, WT_RP, "\")\"")) return false;
    m->nexports++;
    return pw__wt_name(&m->exports, &nm) && pw__wt_byte(&m->exports, KIND[sp]) &&
           pw__wt_u32(&m->exports, x);
}

static bool field_elem(wt_ctx *c, wt_mod *m) {
    if (wt_peek(c)->kind == WT_ID) c->pos++;
    m->cur[WT_SP_ELEM]++;
    int mode = 1;
    uint32_t table = 0;
    pb_buf off = {0};
    wt_elems el = {0};
    bool ok = true;
    if (pw__wt_is(wt_peek(c), "declare")) {
        mode = 2;
        c->pos++;
    } else if (wt_at_form(c, "table")) {
        c->pos += 2;
        ok = pw__wt_index(c, WT_SP_TABLE, &table) && pw__wt_expect(c, WT_RP, "\")\"");
        mode = 0;
        ok = ok && offset_expr(c, m, &off);
    } else if (wt_peek(c)->kind == WT_LP && !wt_at_form(c, "ref")) {
        mode = 0;
        ok = offset_expr(c, m, &off);
    } else if (pw__wt_peek_index(c)) {
        /* (elem x offset ...) with a bare table index */
        ok = pw__wt_index(c, WT_SP_TABLE, &table);
        mode = 0;
        ok = ok && offset_expr(c, m, &off);
    }
    ok = ok && elem_list(c, m, &el, NULL) && put_elem(m, mode, table, &off, &el);
    pb_buf_free(&off);
    elems_free(&el);
    return ok;
}

static bool field_data(wt_ctx *c, wt_mod *m) {
    if (wt_peek(c)->kind == WT_ID) c->pos++;
    m->cur[WT_SP_DATA]++;
    m->ndatas++;
    pb_buf *d = &m->datas;
    uint32_t mem = 0;
    bool ok = true;
    if (wt_peek(c)->kind == WT_STR || wt_peek(c)->kind == WT_RP) {
        ok = pw__wt_u32(d, 1);
    } else {
        bool explicit_mem = false;
        if (wt_at_form(c, "memory")) {
            c->pos += 2;
            ok = pw__wt_index(c, WT_SP_MEM, &mem) && pw__wt_expect(c, WT_RP, "\")\"");
            explicit_mem = true;
        } else if (pw__wt_peek_index(c)) {
            ok = pw__wt_index(c, WT_SP_MEM, &mem);
            explicit_mem = true;
        }
        (void)explicit_mem;
        ok = ok && (mem == 0 ? pw__wt_u32(d, 0) : (pw__wt_u32(d, 2) && pw__wt_u32(d, mem)));
        ok = ok && offset_expr(c, m, d);
    }
    pb_buf bytes = {0};
    ok = ok && data_strings(c, &bytes) && pw__wt_u32(d, (uint32_t)bytes.len) &&
         pb_buf_put(d, bytes.p, bytes.len);
    pb_buf_free(&bytes);
    return ok;
}

static bool field_start(wt_ctx *c, wt_mod *m) {
    wt_tok *at = wt_peek(c);
    if (m->has_start) return pw__wt_fail(c, at, "multiple start sections");
    m->has_start = true;
    uint32_t x;
    return pw__wt_index(c, WT_SP_FUNC, &x) && pw__wt_u32(&m->start, x);
}

static int section_kind(const wt_tok *t) {
    static const struct {
        const char *n;
        int id;
    } S[] = {{"type", 1},   {"import", 2},     {"func", 3},  {"table", 4}, {"memory", 5},
             {"global", 6}, {"export", 7},     {"start", 8}, {"elem", 9},  {"code", 10},
             {"data", 11},  {"datacount", 12}, {"tag", 13}};
    for (size_t i = 0; i < sizeof S / sizeof S[0]; i++)
        if (pw__wt_is(t, S[i].n)) return S[i].id;
    return -1;
}

/* (@custom "name" (before|after section)? "bytes"*) — the "(@custom" is consumed. */
static bool field_custom(wt_ctx *c, wt_mod *m) {
    wt_tok *t = wt_peek(c);
    if (t->kind != WT_STR) {
        if (t->kind == WT_RP || t->kind == WT_LP)
            return pw__wt_fail(c, t, "@custom annotation: missing section name");
        return pw__wt_fail(c, t, "@custom annotation: unexpected token");
    }
    wt_str name;
    if (!pw__wt_string(c, t, &name)) return false;
    if (!pw__wt_utf8_ok(name.s, name.len))
        return pw__wt_fail(c, t, "@custom annotation: malformed UTF-8 encoding");
    c->pos++;
    int anchor = -1;
    bool after = true;
    if (wt_peek(c)->kind == WT_LP) {
        wt_tok *p = wt_peek2(c);
        if (!pw__wt_is(p, "before") && !pw__wt_is(p, "after"))
            return pw__wt_fail(c, p, "@custom annotation: malformed placement");
        after = pw__wt_is(p, "after");
        c->pos += 2;
        wt_tok *k = wt_next(c);
        if (pw__wt_is(k, "first") && !after)
            anchor = 0;
        else if (pw__wt_is(k, "last") && after)
            anchor = -1;
        else if ((anchor = section_kind(k)) < 0)
            return pw__wt_fail(c, k, "@custom annotation: malformed section kind");
        if (wt_peek(c)->kind != WT_RP)
            return pw__wt_fail(c, wt_peek(c), "@custom annotation: malformed placement");
        c->pos++;
    }
    struct wt_custom *v = realloc(m->customs, (m->ncustoms + 1) * sizeof *v);
    if (!v) return pw__wt_fail(c, t, "out of memory");
    m->customs = v;
    struct wt_custom *cs = &v[m->ncustoms++];
    memset(cs, 0, sizeof *cs);
    cs->name = name;
    cs->anchor = anchor;
    cs->after = after;
    while (wt_peek(c)->kind == WT_STR) {
        wt_str s;
        if (!pw__wt_string(c, wt_peek(c), &s)) return false;
        c->pos++;
        if (!pb_buf_put(&cs->bytes, s.s, s.len)) return pw__wt_fail(c, t, "out of memory");
    }
    if (wt_peek(c)->kind != WT_RP)
        return pw__wt_fail(c, wt_peek(c), "@custom annotation: unexpected token");
    c->pos++;
    return true;
}

static bool pass_fields(wt_ctx *c, wt_mod *m, size_t start) {
    c->pos = start;
    for (;;) {
        wt_tok *t = wt_peek(c);
        if (t->kind == WT_ANNOT) {
            c->pos++;
            if (t->len == 6 && memcmp(t->s, "custom", 6) == 0) {
                if (!field_custom(c, m)) return false;
                continue;
            }
            if (t->len == 4 && memcmp(t->s, "name", 4) == 0)
                return pw__wt_fail(c, t, "misplaced @name annotation");
            return pw__wt_fail(c, t, "unexpected annotation");
        }
        if (t->kind != WT_LP) break;
        if (wt_at_form(c, "type") || wt_at_form(c, "rec")) {
            if (!skip_form(c)) return false;
            continue;
        }
        c->pos++;
        wt_tok *kw = wt_next(c);
        bool ok;
        if (pw__wt_is(kw, "func"))
            ok = field_func(c, m);
        else if (pw__wt_is(kw, "table"))
            ok = field_table(c, m);
        else if (pw__wt_is(kw, "memory"))
            ok = field_memory(c, m);
        else if (pw__wt_is(kw, "global"))
            ok = field_global(c, m);
        else if (pw__wt_is(kw, "tag"))
            ok = field_tag(c, m);
        else if (pw__wt_is(kw, "import"))
            ok = field_import(c, m);
        else if (pw__wt_is(kw, "export"))
            ok = field_export(c, m);
        else if (pw__wt_is(kw, "elem"))
            ok = field_elem(c, m);
        else if (pw__wt_is(kw, "data"))
            ok = field_data(c, m);
        else if (pw__wt_is(kw, "start"))
            ok = field_start(c, m);
        else
            ok = pw__wt_fail(c, kw, "unexpected token, expected a module field");
        if (!ok) return false;
        if (!pw__wt_expect(c, WT_RP, "\")\"")) return false;
    }
    return true;
}

/* ---------------------------------------------------------------- assembly */

static bool section(pb_buf *out, uint8_t id, uint32_t count, const pb_buf *body, bool always) {
    if (!count && !always) return true;
    pb_buf tmp = {0};
    bool ok = pw__wt_u32(&tmp, count) && pb_buf_put(&tmp, body->p, body->len);
    ok = ok && pw__wt_byte(out, id) && pw__wt_u32(out, (uint32_t)tmp.len) &&
         pb_buf_put(out, tmp.p, tmp.len);
    pb_buf_free(&tmp);
    return ok;
}

static bool customs_at(pb_buf *out, wt_mod *m, int anchor, bool after) {
    for (uint32_t i = 0; i < m->ncustoms; i++) {
        struct wt_custom *cs = &m->customs[i];
        if (cs->anchor != anchor || cs->after != after) continue;
        pb_buf tmp = {0};
        bool ok = pw__wt_name(&tmp, &cs->name) && pb_buf_put(&tmp, cs->bytes.p, cs->bytes.len);
        ok = ok && pw__wt_byte(out, 0) && pw__wt_u32(out, (uint32_t)tmp.len) &&
             pb_buf_put(out, tmp.p, tmp.len);
        pb_buf_free(&tmp);
        if (!ok) return false;
    }
    return true;
}

static bool assemble(wt_mod *m, pb_buf *out) {
    static const uint8_t ORDER[] = {1, 2, 3, 4, 5, 13, 6, 7, 8, 9, 12, 10, 11};
    if (!pb_buf_put(out, "\0asm\1\0\0\0", 8)) return false;
    if (!customs_at(out, m, 0, false)) return false;
    pb_buf types = {0};
    bool ok = pb_buf_put(&types, m->types.p, m->types.len) &&
              pb_buf_put(&types, m->inline_types.p, m->inline_types.len);
    for (size_t i = 0; ok && i < sizeof ORDER; i++) {
        uint8_t id = ORDER[i];
        ok = customs_at(out, m, id, false);
        switch (id) {
        case 1: ok = ok && section(out, 1, m->ngroups + m->ninline, &types, false); break;
        case 2: ok = ok && section(out, 2, m->nimports, &m->imports, false); break;
        case 3: ok = ok && section(out, 3, m->nfuncs, &m->funcs, false); break;
        case 4: ok = ok && section(out, 4, m->ntables, &m->tables, false); break;
        case 5: ok = ok && section(out, 5, m->nmems, &m->mems, false); break;
        case 13: ok = ok && section(out, 13, m->ntags, &m->tags, false); break;
        case 6: ok = ok && section(out, 6, m->nglobals, &m->globals, false); break;
        case 7: ok = ok && section(out, 7, m->nexports, &m->exports, false); break;
        case 8:
            if (ok && m->has_start)
                ok = pw__wt_byte(out, 8) && pw__wt_u32(out, (uint32_t)m->start.len) &&
                     pb_buf_put(out, m->start.p, m->start.len);
            break;
        case 9: ok = ok && section(out, 9, m->nelems, &m->elems, false); break;
        case 12:
            if (ok && m->uses_data) {
                pb_buf tmp = {0};
                ok = pw__wt_u32(&tmp, m->ndatas) && pw__wt_byte(out, 12) &&
                     pw__wt_u32(out, (uint32_t)tmp.len) && pb_buf_put(out, tmp.p, tmp.len);
                pb_buf_free(&tmp);
            }
            break;
        case 10: ok = ok && section(out, 10, m->ncode, &m->code, false); break;
        case 11: ok = ok && section(out, 11, m->ndatas, &m->datas, false); break;
        }
        ok = ok && customs_at(out, m, id, true);
    }
    ok = ok && customs_at(out, m, -1, true);
    pb_buf_free(&types);
    return ok;
}

static void mod_free(wt_mod *m) {
    pb_buf *bufs[] = {&m->types, &m->inline_types, &m->imports, &m->funcs,   &m->tables,
                      &m->mems,  &m->tags,         &m->globals, &m->exports, &m->start,
                      &m->elems, &m->code,         &m->datas};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        pb_buf_free(bufs[i]);
    for (uint32_t i = 0; i < m->ncustoms; i++)
        pb_buf_free(&m->customs[i].bytes);
    free(m->customs);
}

static void ctx_free(wt_ctx *c) {
    for (uint32_t i = 0; i < c->ntypes; i++)
        pb_buf_free(&c->types[i].sig);
    free(c->types);
    for (int i = 0; i < WT_SP_COUNT; i++)
        free(c->sp[i].names);
    for (size_t i = 0; i < c->nowned; i++)
        free(c->owned[i]);
    free(c->owned);
    free(c->t);
}

static pw_status parse_text(const char *text, size_t len, pb_buf *out, pw_error *err, int depth);
static pw_status fail_plain(pw_error *err, const char *msg);

/* The module's fields start at c->pos; parse them to `out`. */
static bool module_fields(wt_ctx *c, size_t start, pb_buf *out) {
    wt_mod *m = pw__wt_alloc(c, sizeof *m);
    if (!m) return pw__wt_fail(c, NULL, "out of memory");
    c->mod = m;
    bool ok = pw__wt_ops_init(c) && pass_names(c, start) && pass_types(c, m, start) &&
              pass_fields(c, m, start);
    if (ok && !assemble(m, out)) ok = pw__wt_fail(c, NULL, "out of memory");
    mod_free(m);
    return ok;
}

static pw_status parse_text(const char *text, size_t len, pb_buf *out, pw_error *err, int depth) {
    if (depth > 8) return fail_plain(err, "module quote nested too deep");
    wt_ctx c = {.src = text, .len = len, .err = err, .first_def = -1};
    bool ok = pw__wt_lex(&c);
    if (ok) {
        size_t start = 0;
        if (c.t[0].kind == WT_LP && pw__wt_is(&c.t[1], "module")) {
            c.pos = 2;
            if (pw__wt_is(wt_peek(&c), "definition")) c.pos++;
            if (wt_peek(&c)->kind == WT_ID) c.pos++;
            /* (@name "...") at most once */
            wt_tok *a = wt_peek(&c);
            if (a->kind == WT_ANNOT && a->len == 4 && memcmp(a->s, "name", 4) == 0 &&
                c.pos + 3 < c.nt && c.t[c.pos + 3].kind == WT_ANNOT && c.t[c.pos + 3].len == 4 &&
                memcmp(c.t[c.pos + 3].s, "name", 4) == 0)
                ok = pw__wt_fail(&c, &c.t[c.pos + 3], "@name annotation: multiple module");
            ok = ok && skip_name_annot(&c);
            wt_tok *k = wt_peek(&c);
            if (ok && (pw__wt_is(k, "binary") || pw__wt_is(k, "quote"))) {
                bool quote = pw__wt_is(k, "quote");
                c.pos++;
                pb_buf bytes = {0};
                while (ok && wt_peek(&c)->kind == WT_STR) {
                    wt_str s;
                    ok = pw__wt_string(&c, wt_next(&c), &s) && pb_buf_put(&bytes, s.s, s.len);
                }
                ok = ok && pw__wt_expect(&c, WT_RP, "\")\"") &&
                     pw__wt_expect(&c, WT_EOF, "end of text");
                if (ok) {
                    if (quote) {
                        ok = parse_text(bytes.len ? bytes.p : "", bytes.len, out, err, depth + 1) ==
                             PW_OK;
                        c.failed = !ok;
                    } else {
                        ok = pb_buf_put(out, bytes.p, bytes.len);
                    }
                }
                pb_buf_free(&bytes);
                ctx_free(&c);
                return ok ? PW_OK : (err->status ? err->status : PW_ERR_MALFORMED);
            }
            start = c.pos;
            ok = ok && module_fields(&c, start, out) && pw__wt_expect(&c, WT_RP, "\")\"") &&
                 pw__wt_expect(&c, WT_EOF, "end of text");
        } else {
            ok = module_fields(&c, 0, out) && pw__wt_expect(&c, WT_EOF, "end of text");
        }
    }
    ctx_free(&c);
    if (ok) return PW_OK;
    if (!err->status) err->status = PW_ERR_MALFORMED;
    return err->status;
}

static pw_status fail_plain(pw_error *err, const char *msg) {
    err->status = PW_ERR_MALFORMED;
    err->trap = 0;
    snprintf(err->message, sizeof err->message, "%s", msg);
    return err->status;
}

pw_status pw_wat_to_wasm(const char *text, size_t len, uint8_t **out, size_t *out_len,
                         pw_error *err) {
    memset(err, 0, sizeof *err);
    *out = NULL;
    *out_len = 0;
    pb_buf b = {0};
    pw_status st = parse_text(text, len, &b, err, 0);
    if (st != PW_OK) {
        pb_buf_free(&b);
        return st;
    }
    if (!b.p && !pb_buf_reserve(&b, 1)) {
        err->status = PW_ERR_NOMEM;
        snprintf(err->message, sizeof err->message, "out of memory");
        return PW_ERR_NOMEM;
    }
    *out = (uint8_t *)pb_buf_take(&b, out_len);
    return PW_OK;
}
