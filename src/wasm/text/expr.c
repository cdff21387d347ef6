/*
 * expr.c — instructions of the text format, plain ("i32.add", "block ... end") and
 * folded ("(i32.add (local.get 0) (i32.const 1))", "(if (then ...) (else ...))"),
 * encoded straight into the binary code. Folded operands are emitted before their
 * instruction; immediates are parsed first into a small buffer and appended after.
 * Labels are a stack of names in wt_func (innermost last); a label written after
 * "end"/"else" must repeat the block's label ("mismatching label").
 */
#include "wasm/simd.h"
#include "wasm/text/wat.h"

#include <string.h>

#define MAX_DEPTH 1000 /* about 250 KiB of C stack at most */

static bool emit_op(pb_buf *b, uint32_t code) {
    if (code < 0x100) return pw__wt_byte(b, (uint8_t)code);
    if (code >= 0xFD0000) return pw__wt_byte(b, 0xFD) && pw__wt_u32(b, code & 0xFFFF);
    return pw__wt_byte(b, (uint8_t)(code >> 8)) && pw__wt_u32(b, code & 0xFF);
}

static bool nomem(wt_ctx *c) {
    return pw__wt_fail(c, wt_peek(c), "out of memory");
}

static bool id_str(wt_ctx *c, const wt_tok *t, wt_str *s) {
    if (t->quoted) {
        if (!pw__wt_string(c, t, s)) return false;
        if (!s->len) return pw__wt_fail(c, t, "empty identifier");
        return true;
    }
    s->s = t->s;
    s->len = t->len;
    return true;
}

static bool push_label(wt_ctx *c, wt_func *f, const wt_tok *id) {
    if (f->nlabels == f->caplabels) {
        uint32_t cap = f->caplabels ? f->caplabels * 2 : 16;
        wt_str *v = pw__wt_alloc(c, cap * sizeof *v);
        if (!v) return nomem(c);
        if (f->nlabels) memcpy(v, f->labels, f->nlabels * sizeof *v);
        f->labels = v;
        f->caplabels = cap;
    }
    wt_str s = {0};
    if (id && !id_str(c, id, &s)) return false;
    f->labels[f->nlabels++] = s;
    return true;
}

/* Optional label after block/loop/if/try; pushes it (or an anonymous one). */
static bool opt_label(wt_ctx *c, wt_func *f) {
    wt_tok *t = wt_peek(c);
    if (t->kind == WT_ID) {
        c->pos++;
        return push_label(c, f, t);
    }
    return push_label(c, f, NULL);
}

/* Optional id after end/else/catch: must equal the block's label. */
static bool end_label(wt_ctx *c, wt_func *f) {
    wt_tok *t = wt_peek(c);
    if (t->kind != WT_ID) return true;
    c->pos++;
    wt_str s, *l = &f->labels[f->nlabels - 1];
    if (!id_str(c, t, &s)) return false;
    if (!l->s || l->len != s.len || memcmp(l->s, s.s, s.len) != 0)
        return pw__wt_fail(c, t, "mismatching label");
    return true;
}

static bool label_index(wt_ctx *c, wt_func *f, uint32_t *out) {
    wt_tok *t = wt_peek(c);
    if (t->kind == WT_ID) {
        wt_str s;
        if (!id_str(c, t, &s)) return false;
        for (uint32_t i = f->nlabels; i-- > 0;) {
            wt_str *l = &f->labels[i];
            if (l->s && l->len == s.len && memcmp(l->s, s.s, s.len) == 0) {
                *out = f->nlabels - 1 - i;
                c->pos++;
                return true;
            }
        }
        return pw__wt_fail(c, t, "unknown label");
    }
    if (pw__wt_nat32(t, out)) {
        c->pos++;
        return true;
    }
    return pw__wt_fail(c, t, "unexpected token, expected a label");
}

static bool local_index(wt_ctx *c, wt_func *f, uint32_t *out) {
    wt_tok *t = wt_peek(c);
    if (t->kind == WT_ID) {
        wt_str s;
        if (!id_str(c, t, &s)) return false;
        for (uint32_t i = 0; i < f->nlocals; i++) {
            wt_str *l = &f->locals[i];
            if (l->s && l->len == s.len && memcmp(l->s, s.s, s.len) == 0) {
                *out = i;
                c->pos++;
                return true;
            }
        }
        return pw__wt_fail(c, t, "unknown local");
    }
    if (pw__wt_nat32(t, out)) {
        c->pos++;
        return true;
    }
    return pw__wt_fail(c, t, "unexpected token, expected a local");
}

static bool is_index_tok(const wt_tok *t) {
    uint32_t v;
    return t->kind == WT_ID || pw__wt_nat32(t, &v);
}

/* "key=value" immediates (offset=, align=). */
static bool keyval(const wt_tok *t, const char *key, uint64_t *out, bool *bad) {
    size_t k = strlen(key);
    if (t->kind != WT_ATOM || t->len <= k || memcmp(t->s, key, k) != 0) return false;
    wt_tok v = *t;
    v.s += k;
    v.len -= (uint32_t)k;
    *bad = !pw__wt_nat64(&v, out);
    return true;
}

static bool memarg_mem(wt_ctx *c, pb_buf *b, uint32_t natural, uint32_t mem) {
    uint64_t offset = 0, align = (uint64_t)1 << natural;
    bool bad = false;
    wt_tok *t = wt_peek(c);
    if (keyval(t, "offset=", &offset, &bad)) {
        if (bad) return pw__wt_fail(c, t, "unknown operator: malformed offset");
        c->pos++;
        t = wt_peek(c);
    }
    if (keyval(t, "align=", &align, &bad)) {
        if (bad || align == 0 || (align & (align - 1)))
            return pw__wt_fail(c, t, "alignment must be a power of two");
        c->pos++;
    }
    uint32_t lg = 0;
    while (((uint64_t)1 << lg) < align)
        lg++;
    if (mem) lg |= 0x40;
    return pw__wt_u32(b, lg) && (!mem || pw__wt_u32(b, mem)) && pw__wt_u64(b, offset);
}

static bool memarg(wt_ctx *c, pb_buf *b, uint32_t natural, bool may_index) {
    uint32_t mem = 0;
    if (may_index && is_index_tok(wt_peek(c)) && !pw__wt_index(c, WT_SP_MEM, &mem)) return false;
    return memarg_mem(c, b, natural, mem);
}

static bool lane(wt_ctx *c, pb_buf *b) {
    wt_tok *t = wt_peek(c);
    uint32_t v;
    if (!pw__wt_nat32(t, &v) || t->s[0] == '+')
        return pw__wt_fail(c, t, "unexpected token, expected a lane index");
    if (v > 255) return pw__wt_fail(c, t, "malformed lane index");
    c->pos++;
    return pw__wt_byte(b, (uint8_t)v);
}

static bool v128_const(wt_ctx *c, pb_buf *b) {
    wt_tok *shape = wt_next(c);
    static const struct {
        const char *name;
        int lanes, bits, fl;
    } shapes[] = {{"i8x16", 16, 8, 0}, {"i16x8", 8, 16, 0}, {"i32x4", 4, 32, 0},
                  {"i64x2", 2, 64, 0}, {"f32x4", 4, 32, 1}, {"f64x2", 2, 64, 1}};
    for (size_t s = 0; s < 6; s++) {
        if (!pw__wt_is(shape, shapes[s].name)) continue;
        for (int i = 0; i < shapes[s].lanes; i++) {
            wt_tok *t = wt_peek(c);
            uint64_t v = 0;
            bool ok;
            if (shapes[s].fl && shapes[s].bits == 32) {
                uint32_t f;
                ok = pw__wt_f32(t, &f);
                v = f;
            } else if (shapes[s].fl) {
                ok = pw__wt_f64(t, &v);
            } else {
                ok = pw__wt_int(t, shapes[s].bits, &v);
            }
            if (!ok) {
                if (t->kind == WT_ATOM && pw__wt_is_num(t))
                    return pw__wt_fail(c, t, "constant out of range");
                return pw__wt_fail(c, t, "wrong number of lane literals");
            }
            c->pos++;
            for (int k = 0; k < shapes[s].bits / 8; k++)
                if (!pw__wt_byte(b, (uint8_t)(v >> (8 * k)))) return nomem(c);
        }
        return true;
    }
    return pw__wt_fail(c, shape, "unexpected token, expected a v128 shape");
}

static bool simd_imm(wt_ctx *c, const wt_op *op, pb_buf *b) {
    const pw_simd_info *info = pw__simd_op(op->code & 0xFFFF);
    if (!info) return pw__wt_fail(c, wt_peek(c), "unknown operator");
    switch (info->imm) {
    case PW_SI_MEM: return memarg(c, b, info->align, true);
    case PW_SI_MEMLANE: {
        /* A memory index is there when an index is followed by another number or a
         * memarg (the lane index alone is the last number). */
        wt_tok *t = wt_peek(c), *t2 = wt_peek2(c);
        bool idx = t->kind == WT_ID ||
                   (pw__wt_is_num(t) &&
                    (pw__wt_is_num(t2) ||
                     (t2->kind == WT_ATOM && (t2->len > 6 && (memcmp(t2->s, "offset=", 7) == 0 ||
                                                              memcmp(t2->s, "align=", 6) == 0)))));
        uint32_t mem = 0;
        if (idx && !pw__wt_index(c, WT_SP_MEM, &mem)) return false;
        return memarg_mem(c, b, info->align, mem) && lane(c, b);
    }
    case PW_SI_LANE: return lane(c, b);
    case PW_SI_V128: return v128_const(c, b);
    case PW_SI_SHUF:
        for (int i = 0; i < 16; i++)
            if (!lane(c, b)) return false;
        return true;
    default: return true;
    }
}

static bool index_then(wt_ctx *c, int space, pb_buf *b) {
    uint32_t x;
    return pw__wt_index(c, space, &x) && pw__wt_u32(b, x);
}

static bool field_index(wt_ctx *c, uint32_t type, uint32_t *out) {
    wt_tok *t = wt_peek(c);
    if (t->kind == WT_ID) {
        wt_str s;
        if (!id_str(c, t, &s)) return false;
        if (type < c->ntypes) {
            wt_type *ty = &c->types[type];
            for (uint32_t i = 0; i < ty->nfields; i++)
                if (ty->fields[i].s && ty->fields[i].len == s.len &&
                    memcmp(ty->fields[i].s, s.s, s.len) == 0) {
                    *out = i;
                    c->pos++;
                    return true;
                }
        }
        return pw__wt_fail(c, t, "unknown field");
    }
    if (pw__wt_nat32(t, out)) {
        c->pos++;
        return true;
    }
    return pw__wt_fail(c, t, "unexpected token, expected a field");
}

/* Immediates of every instruction without a body (written to b after the opcode,
 * which this function writes too: select and ref.test pick it from immediates). */
static bool immediates(wt_ctx *c, wt_func *f, const wt_op *op, const wt_tok *at, pb_buf *b) {
    uint32_t x, y;
    switch (op->imm) {
    case WI_NONE: return emit_op(b, op->code);
    case WI_LABEL: return emit_op(b, op->code) && label_index(c, f, &x) && pw__wt_u32(b, x);
    case WI_BR_TABLE: {
        pb_buf tmp = {0};
        uint32_t n = 0;
        bool ok = true;
        while (ok && is_index_tok(wt_peek(c))) {
            ok = label_index(c, f, &x) && pw__wt_u32(&tmp, x);
            n++;
        }
        if (ok && n == 0) ok = pw__wt_fail(c, wt_peek(c), "unexpected token, expected a label");
        ok = ok && emit_op(b, op->code) && pw__wt_u32(b, n - 1) && pb_buf_put(b, tmp.p, tmp.len);
        pb_buf_free(&tmp);
        return ok;
    }
    case WI_FUNC: return emit_op(b, op->code) && index_then(c, WT_SP_FUNC, b);
    case WI_CALL_INDIRECT: {
        uint32_t table = 0, type;
        if (is_index_tok(wt_peek(c)) && !pw__wt_index(c, WT_SP_TABLE, &table)) return false;
        if (!pw__wt_typeuse(c, &type, NULL, NULL, false)) return false;
        return emit_op(b, op->code) && pw__wt_u32(b, type) && pw__wt_u32(b, table);
    }
    case WI_TYPE: return emit_op(b, op->code) && index_then(c, WT_SP_TYPE, b);
    case WI_LOCAL: return emit_op(b, op->code) && local_index(c, f, &x) && pw__wt_u32(b, x);
    case WI_GLOBAL: return emit_op(b, op->code) && index_then(c, WT_SP_GLOBAL, b);
    case WI_TABLE:
        return emit_op(b, op->code) && pw__wt_index_opt(c, WT_SP_TABLE, &x) && pw__wt_u32(b, x);
    case WI_TABLE_COPY:
        x = y = 0;
        if (is_index_tok(wt_peek(c)))
            if (!pw__wt_index(c, WT_SP_TABLE, &x) || !pw__wt_index(c, WT_SP_TABLE, &y))
                return false;
        return emit_op(b, op->code) && pw__wt_u32(b, x) && pw__wt_u32(b, y);
    case WI_TABLE_INIT:
        x = 0;
        if (is_index_tok(wt_peek2(c)) && is_index_tok(wt_peek(c)) &&
            !pw__wt_index(c, WT_SP_TABLE, &x))
            return false;
        return pw__wt_index(c, WT_SP_ELEM, &y) && emit_op(b, op->code) && pw__wt_u32(b, y) &&
               pw__wt_u32(b, x);
    case WI_ELEM: return emit_op(b, op->code) && index_then(c, WT_SP_ELEM, b);
    case WI_MEMORY:
        return emit_op(b, op->code) && pw__wt_index_opt(c, WT_SP_MEM, &x) && pw__wt_u32(b, x);
    case WI_MEMORY_COPY:
        x = y = 0;
        if (is_index_tok(wt_peek(c)))
            if (!pw__wt_index(c, WT_SP_MEM, &x) || !pw__wt_index(c, WT_SP_MEM, &y)) return false;
        return emit_op(b, op->code) && pw__wt_u32(b, x) && pw__wt_u32(b, y);
    case WI_MEMORY_INIT:
        x = 0;
        f->uses_data = true;
        if (is_index_tok(wt_peek2(c)) && is_index_tok(wt_peek(c)) &&
            !pw__wt_index(c, WT_SP_MEM, &x))
            return false;
        return pw__wt_index(c, WT_SP_DATA, &y) && emit_op(b, op->code) && pw__wt_u32(b, y) &&
               pw__wt_u32(b, x);
    case WI_DATA: f->uses_data = true; return emit_op(b, op->code) && index_then(c, WT_SP_DATA, b);
    case WI_MEMARG: return emit_op(b, op->code) && memarg(c, b, op->align, true);
    case WI_I32: {
        uint64_t v;
        wt_tok *t = wt_peek(c);
        if (!pw__wt_int(t, 32, &v))
            return pw__wt_fail(c, t,
                               pw__wt_is_num(t) ? "constant out of range"
                                                : "unexpected token, expected an i32");
        c->pos++;
        return emit_op(b, op->code) && pw__wt_s32(b, (int32_t)(uint32_t)v);
    }
    case WI_I64: {
        uint64_t v;
        wt_tok *t = wt_peek(c);
        if (!pw__wt_int(t, 64, &v))
            return pw__wt_fail(c, t,
                               pw__wt_is_num(t) ? "constant out of range"
                                                : "unexpected token, expected an i64");
        c->pos++;
        return emit_op(b, op->code) && pw__wt_s64(b, (int64_t)v);
    }
    case WI_F32: {
        uint32_t v;
        wt_tok *t = wt_peek(c);
        if (!pw__wt_f32(t, &v))
            return pw__wt_fail(c, t,
                               pw__wt_is_num(t) || wt_peek(c)->kind == WT_ATOM
                                   ? "constant out of range or malformed"
                                   : "unexpected token, expected an f32");
        c->pos++;
        return emit_op(b, op->code) && pb_buf_put(b, &v, 4);
    }
    case WI_F64: {
        uint64_t v;
        wt_tok *t = wt_peek(c);
        if (!pw__wt_f64(t, &v))
            return pw__wt_fail(c, t,
                               pw__wt_is_num(t) || wt_peek(c)->kind == WT_ATOM
                                   ? "constant out of range or malformed"
                                   : "unexpected token, expected an f64");
        c->pos++;
        return emit_op(b, op->code) && pb_buf_put(b, &v, 8);
    }
    case WI_SELECT: {
        pb_buf tmp = {0};
        uint32_t n = 0;
        bool ok = true, any = false;
        while (ok && wt_at_form(c, "result")) {
            any = true;
            c->pos += 2;
            while (ok && wt_peek(c)->kind != WT_RP) {
                ok = pw__wt_valtype(c, &tmp);
                n++;
            }
            ok = ok && pw__wt_expect(c, WT_RP, "\")\"");
        }
        if (ok) {
            if (any)
                ok = pw__wt_byte(b, 0x1C) && pw__wt_u32(b, n) && pb_buf_put(b, tmp.p, tmp.len);
            else
                ok = pw__wt_byte(b, 0x1B);
        }
        pb_buf_free(&tmp);
        return ok;
    }
    case WI_REF_NULL: return emit_op(b, op->code) && pw__wt_heaptype(c, b, NULL);
    case WI_REF_TEST: {
        pb_buf heap = {0};
        bool nullable = false;
        bool ok = pw__wt_reftype(c, NULL, &nullable, &heap) &&
                  emit_op(b, op->code + (nullable ? 1 : 0)) && pb_buf_put(b, heap.p, heap.len);
        pb_buf_free(&heap);
        return ok;
    }
    case WI_BR_ON_CAST: {
        pb_buf h1 = {0}, h2 = {0};
        bool n1 = false, n2 = false;
        bool ok = label_index(c, f, &x) && pw__wt_reftype(c, NULL, &n1, &h1) &&
                  pw__wt_reftype(c, NULL, &n2, &h2) && emit_op(b, op->code) &&
                  pw__wt_byte(b, (uint8_t)((n1 ? 1 : 0) | (n2 ? 2 : 0))) && pw__wt_u32(b, x) &&
                  pb_buf_put(b, h1.p, h1.len) && pb_buf_put(b, h2.p, h2.len);
        pb_buf_free(&h1);
        pb_buf_free(&h2);
        return ok;
    }
    case WI_FIELD:
        return pw__wt_index(c, WT_SP_TYPE, &x) && field_index(c, x, &y) && emit_op(b, op->code) &&
               pw__wt_u32(b, x) && pw__wt_u32(b, y);
    case WI_ARRAY_FIXED: {
        if (!pw__wt_index(c, WT_SP_TYPE, &x)) return false;
        wt_tok *t = wt_peek(c);
        if (!pw__wt_nat32(t, &y)) return pw__wt_fail(c, t, "unexpected token, expected a count");
        c->pos++;
        return emit_op(b, op->code) && pw__wt_u32(b, x) && pw__wt_u32(b, y);
    }
    case WI_ARRAY_DATA:
        f->uses_data = true;
        return pw__wt_index(c, WT_SP_TYPE, &x) && pw__wt_index(c, WT_SP_DATA, &y) &&
               emit_op(b, op->code) && pw__wt_u32(b, x) && pw__wt_u32(b, y);
    case WI_ARRAY_ELEM:
        return pw__wt_index(c, WT_SP_TYPE, &x) && pw__wt_index(c, WT_SP_ELEM, &y) &&
               emit_op(b, op->code) && pw__wt_u32(b, x) && pw__wt_u32(b, y);
    case WI_ARRAY_COPY:
        return pw__wt_index(c, WT_SP_TYPE, &x) && pw__wt_index(c, WT_SP_TYPE, &y) &&
               emit_op(b, op->code) && pw__wt_u32(b, x) && pw__wt_u32(b, y);
    case WI_TAG: return emit_op(b, op->code) && index_then(c, WT_SP_TAG, b);
    case WI_SIMD: return emit_op(b, op->code) && simd_imm(c, op, b);
    default: return pw__wt_fail(c, at, "unexpected token");
    }
}

static bool instr_list(wt_ctx *c, wt_func *f, pb_buf *out);

static bool is_stop(const wt_tok *t) {
    return pw__wt_is(t, "end") || pw__wt_is(t, "else") || pw__wt_is(t, "catch") ||
           pw__wt_is(t, "catch_all") || pw__wt_is(t, "delegate");
}

/* try_table catch clauses: (catch x l) (catch_ref x l) (catch_all l) (catch_all_ref l). */
static bool catches(wt_ctx *c, wt_func *f, pb_buf *b) {
    pb_buf tmp = {0};
    uint32_t n = 0;
    bool ok = true;
    for (;;) {
        int kind = -1;
        if (wt_at_form(c, "catch"))
            kind = 0;
        else if (wt_at_form(c, "catch_ref"))
            kind = 1;
        else if (wt_at_form(c, "catch_all"))
            kind = 2;
        else if (wt_at_form(c, "catch_all_ref"))
            kind = 3;
        if (kind < 0) break;
        c->pos += 2;
        uint32_t tag, l;
        ok = pw__wt_byte(&tmp, (uint8_t)kind);
        if (ok && kind < 2) ok = pw__wt_index(c, WT_SP_TAG, &tag) && pw__wt_u32(&tmp, tag);
        /* the try_table's own label is not yet in scope for its catch clauses */
        f->nlabels--;
        ok = ok && label_index(c, f, &l);
        f->nlabels++;
        ok = ok && pw__wt_u32(&tmp, l) && pw__wt_expect(c, WT_RP, "\")\"");
        n++;
        if (!ok) break;
    }
    ok = ok && pw__wt_u32(b, n) && pb_buf_put(b, tmp.p, tmp.len);
    pb_buf_free(&tmp);
    return ok;
}

/* block/loop/if/try_table/try header: label, block type (and catches) -> hdr. */
static bool block_head(wt_ctx *c, wt_func *f, const wt_op *op, pb_buf *hdr) {
    if (!opt_label(c, f)) return false;
    if (!pw__wt_typeuse_block(c, hdr)) return false;
    if (op->imm == WI_TRY_TABLE && !catches(c, f, hdr)) return false;
    return true;
}

static bool plain_block(wt_ctx *c, wt_func *f, const wt_op *op, pb_buf *out) {
    pb_buf hdr = {0};
    bool ok =
        emit_op(out, op->code) && block_head(c, f, op, &hdr) && pb_buf_put(out, hdr.p, hdr.len);
    pb_buf_free(&hdr);
    if (!ok) return false;
    if (!instr_list(c, f, out)) return false;
    if (op->code == 0x04 && pw__wt_is(wt_peek(c), "else")) {
        c->pos++;
        if (!end_label(c, f) || !pw__wt_byte(out, 0x05) || !instr_list(c, f, out)) return false;
    }
    if (op->imm == WI_TRY) {
        bool handlers = false;
        while (pw__wt_is(wt_peek(c), "catch")) {
            c->pos++;
            handlers = true;
            uint32_t tag;
            if (!pw__wt_index(c, WT_SP_TAG, &tag) || !pw__wt_byte(out, 0x07) ||
                !pw__wt_u32(out, tag) || !instr_list(c, f, out))
                return false;
        }
        if (pw__wt_is(wt_peek(c), "catch_all")) {
            c->pos++;
            handlers = true;
            if (!end_label(c, f) || !pw__wt_byte(out, 0x19) || !instr_list(c, f, out)) return false;
        }
        if (!handlers && pw__wt_is(wt_peek(c), "delegate")) {
            c->pos++;
            f->nlabels--;
            uint32_t l;
            return label_index(c, f, &l) && pw__wt_byte(out, 0x18) && pw__wt_u32(out, l);
        }
    }
    if (!pw__wt_is(wt_peek(c), "end"))
        return pw__wt_fail(c, wt_peek(c), "unexpected token, expected \"end\"");
    c->pos++;
    if (!end_label(c, f)) return false;
    f->nlabels--;
    return pw__wt_byte(out, 0x0B);
}

static bool folded(wt_ctx *c, wt_func *f, pb_buf *out);

static bool folded_block(wt_ctx *c, wt_func *f, const wt_op *op, pb_buf *out) {
    pb_buf hdr = {0};
    bool ok = true;
    if (op->code == 0x04) {
        /* (if label? bt cond* (then ...) (else ...)?): the condition is outside the if */
        wt_tok *lt = wt_peek(c)->kind == WT_ID ? wt_next(c) : NULL;
        ok = push_label(c, f, NULL) && pw__wt_typeuse_block(c, &hdr);
        f->nlabels--;
        while (ok && wt_peek(c)->kind == WT_LP && !wt_at_form(c, "then"))
            ok = folded(c, f, out);
        ok =
            ok && push_label(c, f, lt) && pw__wt_byte(out, 0x04) && pb_buf_put(out, hdr.p, hdr.len);
        pb_buf_free(&hdr);
        if (!ok) return false;
        if (!wt_at_form(c, "then"))
            return pw__wt_fail(c, wt_peek(c), "unexpected token, expected \"(then\"");
        c->pos += 2;
        if (!instr_list(c, f, out) || !pw__wt_expect(c, WT_RP, "\")\"")) return false;
        if (wt_at_form(c, "else")) {
            c->pos += 2;
            if (!pw__wt_byte(out, 0x05) || !instr_list(c, f, out) ||
                !pw__wt_expect(c, WT_RP, "\")\""))
                return false;
        }
    } else if (op->imm == WI_TRY) {
        ok =
            emit_op(out, op->code) && block_head(c, f, op, &hdr) && pb_buf_put(out, hdr.p, hdr.len);
        pb_buf_free(&hdr);
        if (!ok) return false;
        if (!wt_at_form(c, "do"))
            return pw__wt_fail(c, wt_peek(c), "unexpected token, expected \"(do\"");
        c->pos += 2;
        if (!instr_list(c, f, out) || !pw__wt_expect(c, WT_RP, "\")\"")) return false;
        bool handlers = false;
        while (wt_at_form(c, "catch")) {
            c->pos += 2;
            handlers = true;
            uint32_t tag;
            if (!pw__wt_index(c, WT_SP_TAG, &tag) || !pw__wt_byte(out, 0x07) ||
                !pw__wt_u32(out, tag) || !instr_list(c, f, out) ||
                !pw__wt_expect(c, WT_RP, "\")\""))
                return false;
        }
        if (wt_at_form(c, "catch_all")) {
            c->pos += 2;
            handlers = true;
            if (!pw__wt_byte(out, 0x19) || !instr_list(c, f, out) ||
                !pw__wt_expect(c, WT_RP, "\")\""))
                return false;
        }
        if (!handlers && wt_at_form(c, "delegate")) {
            c->pos += 2;
            f->nlabels--;
            uint32_t l;
            return label_index(c, f, &l) && pw__wt_byte(out, 0x18) && pw__wt_u32(out, l) &&
                   pw__wt_expect(c, WT_RP, "\")\"") && pw__wt_expect(c, WT_RP, "\")\"");
        }
    } else {
        ok =
            emit_op(out, op->code) && block_head(c, f, op, &hdr) && pb_buf_put(out, hdr.p, hdr.len);
        pb_buf_free(&hdr);
        if (!ok || !instr_list(c, f, out)) return false;
    }
    f->nlabels--;
    return pw__wt_expect(c, WT_RP, "\")\"") && pw__wt_byte(out, 0x0B);
}

static bool folded(wt_ctx *c, wt_func *f, pb_buf *out) {
    if (++c->depth > MAX_DEPTH) return pw__wt_fail(c, wt_peek(c), "nesting too deep");
    c->pos++; /* ( */
    wt_tok *t = wt_next(c);
    const wt_op *op = t->kind == WT_ATOM ? pw__wt_op_find(c, t->s, t->len) : NULL;
    bool ok;
    if (!op || op->imm == WI_ELSE || op->imm == WI_END || op->imm == WI_CATCH ||
        op->imm == WI_CATCH_ALL || op->imm == WI_DELEGATE) {
        ok = pw__wt_fail(c, t, "unknown operator");
    } else if (op->imm == WI_BLOCK || op->imm == WI_TRY_TABLE || op->imm == WI_TRY) {
        ok = folded_block(c, f, op, out);
    } else {
        pb_buf tmp = {0};
        ok = immediates(c, f, op, t, &tmp);
        while (ok && wt_peek(c)->kind == WT_LP)
            ok = folded(c, f, out);
        ok = ok && pw__wt_expect(c, WT_RP, "\")\"") && pb_buf_put(out, tmp.p, tmp.len);
        pb_buf_free(&tmp);
    }
    c->depth--;
    return ok;
}

static bool instr_list(wt_ctx *c, wt_func *f, pb_buf *out) {
    if (++c->depth > MAX_DEPTH) return pw__wt_fail(c, wt_peek(c), "nesting too deep");
    bool ok = true;
    for (;;) {
        wt_tok *t = wt_peek(c);
        if (t->kind == WT_RP || t->kind == WT_EOF) break;
        if (t->kind == WT_LP) {
            if (!(ok = folded(c, f, out))) break;
            continue;
        }
        if (t->kind != WT_ATOM) {
            ok =
                pw__wt_fail(c, t, t->kind == WT_RESERVED ? "unknown operator" : "unexpected token");
            break;
        }
        if (is_stop(t)) break;
        const wt_op *op = pw__wt_op_find(c, t->s, t->len);
        if (!op) {
            ok = pw__wt_fail(c, t, "unknown operator");
            break;
        }
        c->pos++;
        if (op->imm == WI_BLOCK || op->imm == WI_TRY_TABLE || op->imm == WI_TRY)
            ok = plain_block(c, f, op, out);
        else
            ok = immediates(c, f, op, t, out);
        if (!ok) break;
    }
    c->depth--;
    return ok;
}

bool pw__wt_instrs(wt_ctx *c, wt_func *f, pb_buf *out) {
    if (!instr_list(c, f, out)) return false;
    wt_tok *t = wt_peek(c);
    if (t->kind != WT_RP) return pw__wt_fail(c, t, "unexpected token");
    return true;
}
