/*
 * validate_expr.c — type-checking of instruction sequences (function bodies and
 * constant expressions) with the spec's algorithm: an operand stack of value types
 * and a stack of control frames; after an unconditional branch the frame's stack is
 * polymorphic and pops from it yield the bottom type. Reference types are compared
 * with subtyping (types.c). Non-defaultable locals are tracked for the
 * initialisation rule with a stack of locals set inside each open block.
 *
 * Function bodies are decoded here, once (the decoder only delimits them), so the
 * malformed cases of instruction sequences are reported from here too.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wasm/limits.h"
#include "wasm/simd.h"
#include "wasm/validate.h"

#define VT_BOT       ((pw_valtype)PW_K_BOT)
#define ABSREF(c, n) PW_VT_ABSREF(c, n)

/* ------------------------------------------------------------------ messages */

static const char *abs_name(uint32_t c) {
    switch (c) {
    case PW_HT_NOEXN: return "noexn";
    case PW_HT_NOFUNC: return "nofunc";
    case PW_HT_NOEXTERN: return "noextern";
    case PW_HT_NONE: return "none";
    case PW_HT_FUNC: return "func";
    case PW_HT_EXTERN: return "extern";
    case PW_HT_ANY: return "any";
    case PW_HT_EQ: return "eq";
    case PW_HT_I31: return "i31";
    case PW_HT_STRUCT: return "struct";
    case PW_HT_ARRAY: return "array";
    case PW_HT_EXN: return "exn";
    default: return "bot";
    }
}

static void vt_name(pw_valtype t, char *buf, size_t n) {
    switch (PW_VT_KIND(t)) {
    case PW_K_I32: snprintf(buf, n, "i32"); return;
    case PW_K_I64: snprintf(buf, n, "i64"); return;
    case PW_K_F32: snprintf(buf, n, "f32"); return;
    case PW_K_F64: snprintf(buf, n, "f64"); return;
    case PW_K_V128: snprintf(buf, n, "v128"); return;
    case PW_K_BOT: snprintf(buf, n, "bot"); return;
    default: break;
    }
    uint32_t h = PW_VT_HEAP(t);
    const char *nul = PW_VT_NULLABLE(t) ? "null " : "";
    if (h & PW_HT_ABS)
        snprintf(buf, n, "(ref %s%s)", nul, abs_name(h & 0xFF));
    else
        snprintf(buf, n, "(ref %s%u)", nul, h);
}

static pw_status invalid(pw_vctx *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static pw_status invalid(pw_vctx *v, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    pw__failv(v->err, PW_ERR_INVALID, fmt, ap);
    va_end(ap);
    if (v->err) { /* where: the byte offset, after the message */
        size_t n = strlen(v->err->message);
        snprintf(v->err->message + n, sizeof v->err->message - n, " (at byte %zu)",
                 pw_rd_off(&v->r));
    }
    return PW_ERR_INVALID;
}

static pw_status mismatch(pw_vctx *v, pw_valtype want, pw_valtype got, bool empty) {
    char a[64], b[64];
    vt_name(want, a, sizeof a);
    vt_name(got, b, sizeof b);
    return invalid(v, "type mismatch: instruction requires [%s] but stack has [%s]", a,
                   empty ? "" : b);
}

static pw_status nomem(pw_vctx *v) {
    return pw__fail(v->err, PW_ERR_NOMEM, "out of memory while validating");
}

/* ------------------------------------------------------------------ operand stack */

static pw_status grow_vals(pw_vctx *v, uint32_t need) {
    uint32_t cap = v->capvals ? v->capvals : 256;
    while (cap < need) {
        if (cap > UINT32_MAX / 2) return nomem(v);
        cap *= 2;
    }
    pw_valtype *n = realloc(v->vals, (size_t)cap * sizeof *n);
    if (!n) return nomem(v);
    v->vals = n;
    v->capvals = cap;
    return PW_OK;
}

static inline __attribute__((always_inline)) pw_status push(pw_vctx *v, pw_valtype t) {
    if (v->nvals == v->capvals && grow_vals(v, v->nvals + 1)) return v->err->status;
    v->vals[v->nvals++] = t;
    return PW_OK;
}

static inline pw_vctl *top(pw_vctx *v) {
    return &v->ctls[v->nctls - 1];
}

/* Pop any value; BOT from a polymorphic stack. */
static inline pw_status pop_any(pw_vctx *v, pw_valtype *out) {
    pw_vctl *c = top(v);
    *out = VT_BOT;
    if (v->nvals == c->height) {
        if (c->unreachable) {
            *out = VT_BOT;
            return PW_OK;
        }
        return invalid(v, "type mismatch: instruction requires a value but stack has []");
    }
    *out = v->vals[--v->nvals];
    return PW_OK;
}

static inline __attribute__((always_inline)) pw_status pop(pw_vctx *v, pw_valtype want) {
    pw_vctl *c = top(v);
    if (v->nvals == c->height) {
        if (c->unreachable) return PW_OK;
        return mismatch(v, want, 0, true);
    }
    pw_valtype got = v->vals[--v->nvals];
    if (got == want || pw__valtype_sub(v->m, got, want)) return PW_OK;
    return mismatch(v, want, got, false);
}

static pw_status pop_ref(pw_vctx *v, pw_valtype *out) {
    if (pop_any(v, out)) return v->err->status;
    if (*out == VT_BOT) {
        *out = ABSREF(PW_HT_BOT, 0);
        return PW_OK;
    }
    if (PW_VT_KIND(*out) != PW_K_REF) {
        char b[64];
        vt_name(*out, b, sizeof b);
        return invalid(v, "type mismatch: instruction requires reference type but stack has %s", b);
    }
    return PW_OK;
}

static pw_status pop_n(pw_vctx *v, const pw_valtype *ts, uint32_t n) {
    /* Common case: the operands are exactly the expected types. */
    if (n && v->nvals - top(v)->height >= n &&
        memcmp(v->vals + v->nvals - n, ts, (size_t)n * sizeof *ts) == 0) {
        v->nvals -= n;
        return PW_OK;
    }
    for (uint32_t i = n; i-- > 0;)
        if (pop(v, ts[i])) return v->err->status;
    return PW_OK;
}

static pw_status push_n(pw_vctx *v, const pw_valtype *ts, uint32_t n) {
    if (n == 0) return PW_OK;
    if (v->nvals + n > v->capvals && grow_vals(v, v->nvals + n)) return v->err->status;
    memcpy(v->vals + v->nvals, ts, (size_t)n * sizeof *ts);
    v->nvals += n;
    return PW_OK;
}

static void set_unreachable(pw_vctx *v) {
    pw_vctl *c = top(v);
    v->nvals = c->height;
    c->unreachable = 1;
}

/* ------------------------------------------------------------------ types */

pw_status pw__check_valtype(pw_vctx *v, pw_valtype t) {
    if (PW_VT_KIND(t) == PW_K_REF) {
        uint32_t h = PW_VT_HEAP(t);
        if (!(h & PW_HT_ABS) && h >= v->m->ntypes) return invalid(v, "unknown type %u", h);
    }
    return PW_OK;
}

static pw_status type_idx(pw_vctx *v, uint32_t x, uint8_t form, const pw_deftype **out) {
    *out = NULL;
    if (x >= v->m->ntypes) return invalid(v, "unknown type %u", x);
    const pw_deftype *t = &v->m->types[x];
    if (t->form != form) {
        const char *what = form == PW_FORM_FUNC     ? "function"
                           : form == PW_FORM_STRUCT ? "structure"
                                                    : "array";
        return invalid(v, "type mismatch: non-%s type %u", what, x);
    }
    *out = t;
    return PW_OK;
}

static bool defaultable(pw_valtype t) {
    return PW_VT_KIND(t) != PW_K_REF || PW_VT_NULLABLE(t);
}

static void frame_types(const pw_module *m, const pw_vctl *c, const pw_valtype **p, uint32_t *np,
                        const pw_valtype **r, uint32_t *nr) {
    switch (c->bt) {
    case PW_BT_EMPTY: *p = *r = NULL, *np = *nr = 0; return;
    case PW_BT_VAL: *p = NULL, *np = 0, *r = &c->single, *nr = 1; return;
    default: {
        const pw_deftype *t = &m->types[c->type];
        *p = t->u.func.types;
        *np = t->u.func.nparams;
        *r = t->u.func.types + t->u.func.nparams;
        *nr = t->u.func.nresults;
    }
    }
}

/* The types a branch to label l carries (loop: params, else results). */
static pw_status label_types(pw_vctx *v, uint32_t l, const pw_valtype **ts, uint32_t *n) {
    *ts = NULL;
    *n = 0;
    if (l >= v->nctls) return invalid(v, "unknown label %u", l);
    const pw_vctl *c = &v->ctls[v->nctls - 1 - l];
    const pw_valtype *p, *r;
    uint32_t np, nr;
    frame_types(v->m, c, &p, &np, &r, &nr);
    if (c->op == 0x03)
        *ts = p, *n = np;
    else
        *ts = r, *n = nr;
    return PW_OK;
}

static pw_status read_blocktype(pw_vctx *v, const pw_instr *in, pw_vctl *c) {
    c->bt = in->bt;
    if (in->bt == PW_BT_VAL) {
        c->single = in->t1;
        return pw__check_valtype(v, in->t1);
    }
    if (in->bt == PW_BT_TYPE) {
        const pw_deftype *t;
        c->type = in->a;
        return type_idx(v, in->a, PW_FORM_FUNC, &t);
    }
    return PW_OK;
}

static pw_status push_ctl(pw_vctx *v, uint32_t op, const pw_vctl *proto) {
    if (v->nctls == v->capctls) {
        uint32_t cap = v->capctls ? v->capctls * 2 : 64;
        pw_vctl *n = realloc(v->ctls, (size_t)cap * sizeof *n);
        if (!n) return nomem(v);
        v->ctls = n;
        v->capctls = cap;
    }
    pw_vctl *c = &v->ctls[v->nctls++];
    *c = *proto;
    c->op = op;
    c->height = v->nvals;
    c->init_height = v->ninits;
    c->unreachable = 0;
    return PW_OK;
}

/* Undo the initialisations made inside the frame being left. */
static void reset_inits(pw_vctx *v, uint32_t to) {
    while (v->ninits > to)
        v->linit[v->inits[--v->ninits]] = 0;
}

/* Check the frame's results are on the stack, exactly. */
static pw_status check_frame_end(pw_vctx *v, const pw_vctl *c) {
    const pw_valtype *p, *r;
    uint32_t np, nr;
    frame_types(v->m, c, &p, &np, &r, &nr);
    pw_valtype keep = nr == 1 ? r[0] : 0; /* r may point into the frame array */
    if (nr == 1 ? pop(v, keep) : pop_n(v, r, nr)) return v->err->status;
    if (v->nvals != c->height) {
        char b[64];
        vt_name(v->vals[v->nvals - 1], b, sizeof b);
        return invalid(v, "type mismatch: block requires fewer values but stack has %s", b);
    }
    return PW_OK;
}

static pw_status set_local(pw_vctx *v, uint32_t x, pw_valtype *t) {
    if (x >= v->nlocals) return invalid(v, "unknown local %u", x);
    *t = v->ltypes[x];
    if (!v->linit[x]) {
        if (v->ninits == v->capinits) {
            uint32_t cap = v->capinits ? v->capinits * 2 : 64;
            uint32_t *n = realloc(v->inits, (size_t)cap * sizeof *n);
            if (!n) return nomem(v);
            v->inits = n;
            v->capinits = cap;
        }
        v->linit[x] = 1;
        v->inits[v->ninits++] = x;
    }
    return PW_OK;
}

/* ------------------------------------------------------------------ numeric signatures */

/* in1, in2 (0 = none), out of the plain numeric opcodes 0x45..0xC4 and 0xFC 0..7. */
static bool numsig(uint32_t op, pw_valtype *a, pw_valtype *b, pw_valtype *r) {
    const pw_valtype I = PW_VT_I32, L = PW_VT_I64, F = PW_VT_F32, D = PW_VT_F64;
#define SIG(x, y, z) (*a = (x), *b = (y), *r = (z), true)
    if (op == 0x45) return SIG(I, 0, I);
    if (op <= 0x4F) return SIG(I, I, I);
    if (op == 0x50) return SIG(L, 0, I);
    if (op <= 0x5A) return SIG(L, L, I);
    if (op <= 0x60) return SIG(F, F, I);
    if (op <= 0x66) return SIG(D, D, I);
    if (op <= 0x69) return SIG(I, 0, I);
    if (op <= 0x78) return SIG(I, I, I);
    if (op <= 0x7B) return SIG(L, 0, L);
    if (op <= 0x8A) return SIG(L, L, L);
    if (op <= 0x91) return SIG(F, 0, F);
    if (op <= 0x98) return SIG(F, F, F);
    if (op <= 0x9F) return SIG(D, 0, D);
    if (op <= 0xA6) return SIG(D, D, D);
    switch (op) {
    case 0xA7: return SIG(L, 0, I);
    case 0xA8:
    case 0xA9: return SIG(F, 0, I);
    case 0xAA:
    case 0xAB: return SIG(D, 0, I);
    case 0xAC:
    case 0xAD: return SIG(I, 0, L);
    case 0xAE:
    case 0xAF: return SIG(F, 0, L);
    case 0xB0:
    case 0xB1: return SIG(D, 0, L);
    case 0xB2:
    case 0xB3: return SIG(I, 0, F);
    case 0xB4:
    case 0xB5: return SIG(L, 0, F);
    case 0xB6: return SIG(D, 0, F);
    case 0xB7:
    case 0xB8: return SIG(I, 0, D);
    case 0xB9:
    case 0xBA: return SIG(L, 0, D);
    case 0xBB: return SIG(F, 0, D);
    case 0xBC: return SIG(F, 0, I);
    case 0xBD: return SIG(D, 0, L);
    case 0xBE: return SIG(I, 0, F);
    case 0xBF: return SIG(L, 0, D);
    case 0xC0:
    case 0xC1: return SIG(I, 0, I);
    case 0xC2:
    case 0xC3:
    case 0xC4: return SIG(L, 0, L);
    case PW_OP_FC(0):
    case PW_OP_FC(1): return SIG(F, 0, I);
    case PW_OP_FC(2):
    case PW_OP_FC(3): return SIG(D, 0, I);
    case PW_OP_FC(4):
    case PW_OP_FC(5): return SIG(F, 0, L);
    case PW_OP_FC(6):
    case PW_OP_FC(7): return SIG(D, 0, L);
    default: return false;
    }
#undef SIG
}

/* Signatures of 0x45..0xC4 as kinds (in1, in2 or 0, out), for the fast path. */
#define I_ PW_K_I32
#define L_ PW_K_I64
#define F_ PW_K_F32
#define D_ PW_K_F64
static const uint8_t numtab[0xC5 - 0x45][3] = {
    [0x45 - 0x45] = {I_, 0, I_},
    [0x46 - 0x45 ... 0x4F - 0x45] = {I_, I_, I_},
    [0x50 - 0x45] = {L_, 0, I_},
    [0x51 - 0x45 ... 0x5A - 0x45] = {L_, L_, I_},
    [0x5B - 0x45 ... 0x60 - 0x45] = {F_, F_, I_},
    [0x61 - 0x45 ... 0x66 - 0x45] = {D_, D_, I_},
    [0x67 - 0x45 ... 0x69 - 0x45] = {I_, 0, I_},
    [0x6A - 0x45 ... 0x78 - 0x45] = {I_, I_, I_},
    [0x79 - 0x45 ... 0x7B - 0x45] = {L_, 0, L_},
    [0x7C - 0x45 ... 0x8A - 0x45] = {L_, L_, L_},
    [0x8B - 0x45 ... 0x91 - 0x45] = {F_, 0, F_},
    [0x92 - 0x45 ... 0x98 - 0x45] = {F_, F_, F_},
    [0x99 - 0x45 ... 0x9F - 0x45] = {D_, 0, D_},
    [0xA0 - 0x45 ... 0xA6 - 0x45] = {D_, D_, D_},
    [0xA7 - 0x45] = {L_, 0, I_},
    [0xA8 - 0x45 ... 0xA9 - 0x45] = {F_, 0, I_},
    [0xAA - 0x45 ... 0xAB - 0x45] = {D_, 0, I_},
    [0xAC - 0x45 ... 0xAD - 0x45] = {I_, 0, L_},
    [0xAE - 0x45 ... 0xAF - 0x45] = {F_, 0, L_},
    [0xB0 - 0x45 ... 0xB1 - 0x45] = {D_, 0, L_},
    [0xB2 - 0x45 ... 0xB3 - 0x45] = {I_, 0, F_},
    [0xB4 - 0x45 ... 0xB5 - 0x45] = {L_, 0, F_},
    [0xB6 - 0x45] = {D_, 0, F_},
    [0xB7 - 0x45 ... 0xB8 - 0x45] = {I_, 0, D_},
    [0xB9 - 0x45 ... 0xBA - 0x45] = {L_, 0, D_},
    [0xBB - 0x45] = {F_, 0, D_},
    [0xBC - 0x45] = {F_, 0, I_},
    [0xBD - 0x45] = {D_, 0, L_},
    [0xBE - 0x45] = {I_, 0, F_},
    [0xBF - 0x45] = {L_, 0, D_},
    [0xC0 - 0x45 ... 0xC1 - 0x45] = {I_, 0, I_},
    [0xC2 - 0x45 ... 0xC4 - 0x45] = {L_, 0, L_},
};
#undef I_
#undef L_
#undef F_
#undef D_

/* Natural alignment (log2) of memory access opcodes 0x28..0x3E. */
static uint32_t natural_align(uint32_t op) {
    static const uint8_t nat[] = {
        2, 3, 2, 3, 0, 0, 1, 1, 0, 0, 1, 1, 2, 2, /* loads 0x28..0x35 */
        2, 3, 2, 3, 0, 1, 0, 1, 2,                /* stores 0x36..0x3E */
    };
    return nat[op - 0x28];
}

static pw_valtype mem_type(uint32_t op) {
    static const uint8_t k[] = {
        PW_K_I32, PW_K_I64, PW_K_F32, PW_K_F64, PW_K_I32, PW_K_I32, PW_K_I32, PW_K_I32,
        PW_K_I64, PW_K_I64, PW_K_I64, PW_K_I64, PW_K_I64, PW_K_I64, PW_K_I32, PW_K_I64,
        PW_K_F32, PW_K_F64, PW_K_I32, PW_K_I32, PW_K_I64, PW_K_I64, PW_K_I64,
    };
    return k[op - 0x28];
}

/* ------------------------------------------------------------------ helpers per kind */

static pw_status check_mem(pw_vctx *v, uint32_t x) {
    if (x >= v->m->nmems) return invalid(v, "unknown memory %u", x);
    return PW_OK;
}

/* Address types (memory64, table64): i64 for a memory or table with i64 addresses.
 * Only called after check_mem / check_table succeeded. */
static pw_valtype mem_at(pw_vctx *v, uint32_t x) {
    return v->m->mems[x].is64 ? PW_VT_I64 : PW_VT_I32;
}
static pw_valtype tab_at(pw_vctx *v, uint32_t x) {
    return v->m->tables[x].type.lim.is64 ? PW_VT_I64 : PW_VT_I32;
}
/* The type of a length copied between two memories or tables: i64 only when both
 * have i64 addresses. */
static pw_valtype min_at(pw_valtype a, pw_valtype b) {
    return a == PW_VT_I64 && b == PW_VT_I64 ? PW_VT_I64 : PW_VT_I32;
}

static pw_valtype simd_vt(char k) {
    switch (k) {
    case 'v': return PW_VT_V128;
    case 'i': return PW_VT_I32;
    case 'l': return PW_VT_I64;
    case 'f': return PW_VT_F32;
    default: return PW_VT_F64;
    }
}

/* One 0xFD instruction (simd.h): immediates, then operands and result. */
static pw_status simd_instr(pw_vctx *v, const pw_instr *in) {
    const pw_simd_info *si = pw__simd_op(PW_FD_SUB(in->op));
    if (!si) return pw__fail(v->err, PW_ERR_MALFORMED, "illegal opcode %x", in->op);
    bool mem = si->imm == PW_SI_MEM || si->imm == PW_SI_MEMLANE;
    pw_valtype at = PW_VT_I32;
    if (mem) {
        if (check_mem(v, in->a)) return v->err->status;
        if (in->align > si->align) return invalid(v, "alignment must not be larger than natural");
        at = mem_at(v, in->a);
        if (at == PW_VT_I32 && in->offset > UINT32_MAX) return invalid(v, "offset out of range");
    }
    if ((si->imm == PW_SI_LANE || si->imm == PW_SI_MEMLANE) && in->n >= si->lanes)
        return invalid(v, "invalid lane index");
    if (si->imm == PW_SI_SHUF)
        for (int i = 0; i < 16; i++)
            if (in->vec[i] >= 32) return invalid(v, "invalid lane index");
    for (int i = 2; i >= 0; i--)
        if (si->in[i] && pop(v, simd_vt(si->in[i]))) return v->err->status;
    if (mem && pop(v, at)) return v->err->status;
    if (si->out && push(v, simd_vt(si->out))) return v->err->status;
    return PW_OK;
}

static pw_status check_table(pw_vctx *v, uint32_t x, pw_valtype *elem) {
    *elem = 0;
    if (x >= v->m->ntables) return invalid(v, "unknown table %u", x);
    *elem = v->m->tables[x].type.elem;
    return PW_OK;
}

static pw_status check_elem(pw_vctx *v, uint32_t x, pw_valtype *t) {
    *t = 0;
    if (x >= v->m->nelems) return invalid(v, "unknown elem segment %u", x);
    *t = v->m->elems[x].type;
    return PW_OK;
}

static pw_status check_data(pw_vctx *v, uint32_t x) {
    if (!v->m->has_datacount) /* a decoding rule in the spec: malformed, not invalid */
        return pw__fail(v->err, PW_ERR_MALFORMED, "data count section required");
    if (x >= v->m->ndatas) return invalid(v, "unknown data segment %u", x);
    return PW_OK;
}

static pw_status func_sig(pw_vctx *v, const pw_deftype *t) {
    if (pop_n(v, t->u.func.types, t->u.func.nparams)) return v->err->status;
    return push_n(v, t->u.func.types + t->u.func.nparams, t->u.func.nresults);
}

/* For return_call*: the callee's results must match the caller's. */
static pw_status tail_results(pw_vctx *v, const pw_deftype *callee) {
    const pw_deftype *self = &v->m->types[v->ctls[0].type];
    uint32_t nr = callee->u.func.nresults;
    if (nr != self->u.func.nresults) goto bad;
    for (uint32_t i = 0; i < nr; i++)
        if (!pw__valtype_sub(v->m, callee->u.func.types[callee->u.func.nparams + i],
                             self->u.func.types[self->u.func.nparams + i]))
            goto bad;
    if (pop_n(v, callee->u.func.types, callee->u.func.nparams)) return v->err->status;
    set_unreachable(v);
    return PW_OK;
bad:
    return invalid(v, "type mismatch: current function requires other results than callee returns");
}

static pw_valtype unpacked(const pw_field *f) {
    return f->type;
}

static pw_status struct_field(pw_vctx *v, uint32_t x, uint32_t i, const pw_field **f) {
    *f = NULL;
    const pw_deftype *t;
    if (type_idx(v, x, PW_FORM_STRUCT, &t)) return v->err->status;
    if (i >= t->u.strct.nfields) return invalid(v, "unknown field %u", i);
    *f = &t->u.strct.fields[i];
    return PW_OK;
}

static pw_status array_field(pw_vctx *v, uint32_t x, const pw_field **f) {
    *f = NULL;
    const pw_deftype *t;
    if (type_idx(v, x, PW_FORM_ARRAY, &t)) return v->err->status;
    *f = &t->u.array;
    return PW_OK;
}

static pw_status check_reftype(pw_vctx *v, pw_valtype t) {
    return pw__check_valtype(v, t);
}

/* br_on_cast(_fail): rt2 <: rt1 and the label's last type takes `branch`. */
static pw_status br_cast(pw_vctx *v, const pw_instr *in, bool fail) {
    pw_valtype rt1 = in->t1, rt2 = in->t2;
    if (check_reftype(v, rt1) || check_reftype(v, rt2)) return v->err->status;
    if (!pw__valtype_sub(v->m, rt2, rt1))
        return invalid(v, "type mismatch on cast: target type does not match source type");
    /* rt1 minus rt2: non-null when rt2 takes the nulls. */
    pw_valtype diff = PW_VT_NULLABLE(rt2) ? (rt1 & ~0x10u) : rt1;
    pw_valtype branch = fail ? diff : rt2, stay = fail ? rt2 : diff;
    const pw_valtype *ls;
    uint32_t n;
    if (label_types(v, in->a, &ls, &n)) return v->err->status;
    if (n == 0 || !pw__valtype_sub(v->m, branch, ls[n - 1]))
        return invalid(v, "type mismatch: instruction requires reference type but label has "
                          "another type");
    if (pop(v, rt1) || pop_n(v, ls, n - 1) || push_n(v, ls, n - 1)) return v->err->status;
    return push(v, stay);
}

static pw_status check_catch(pw_vctx *v, const pw_catch *c) {
    const pw_valtype *ls;
    uint32_t n;
    const pw_deftype *tt = NULL;
    if (c->kind < 2) {
        if (c->tag >= v->m->ntags) return invalid(v, "unknown tag %u", c->tag);
        tt = &v->m->types[v->m->tag_types[c->tag]];
    }
    /* Labels are relative to the try_table's enclosing frame: the try frame is not
     * pushed yet when the clauses are checked. */
    if (label_types(v, c->label, &ls, &n)) return v->err->status;
    uint32_t np = tt ? tt->u.func.nparams : 0;
    bool ref = c->kind == 1 || c->kind == 3;
    if (n != np + ref) goto bad;
    for (uint32_t i = 0; i < np; i++)
        if (!pw__valtype_sub(v->m, tt->u.func.types[i], ls[i])) goto bad;
    if (ref && !pw__valtype_sub(v->m, ABSREF(PW_HT_EXN, 0), ls[np])) goto bad;
    return PW_OK;
bad:
    return invalid(v, "type mismatch: catch handler's types do not match the label's");
}

static bool const_op(pw_vctx *v, const pw_instr *in) {
    switch (in->op) {
    case 0x41:
    case 0x42:
    case 0x43:
    case 0x44:
    case 0x6A:
    case 0x6B:
    case 0x6C:
    case 0x7C:
    case 0x7D:
    case 0x7E:
    case 0xD0:
    case 0xD2:
    case 0x0B:
    case PW_OP_FB(0x00):
    case PW_OP_FB(0x01):
    case PW_OP_FB(0x06):
    case PW_OP_FB(0x07):
    case PW_OP_FB(0x08):
    case PW_OP_FB(0x1A):
    case PW_OP_FB(0x1B):
    case PW_OP_FB(0x1C):
    case PW_OP_FD(0x0C): return true;
    case 0x23: return in->a < v->nglobals_visible && !v->m->globals[in->a].type.mut;
    default: return false;
    }
}

/* Legacy exception handling (try, catch, catch_all, delegate, rethrow): a try frame
 * has op 0x06 in its body, 0x07 in a catch and 0x19 in its catch_all; rethrow's label
 * must be a catch frame; delegate ends a try without handlers, its label counted from
 * the try's enclosing frame. */
static pw_status legacy_eh(pw_vctx *v, const pw_instr *in) {
    pw_module *m = v->m;
    const pw_valtype *p, *r;
    uint32_t np, nr;
    switch (in->op) {
    case 0x06: {
        pw_vctl proto = {0};
        if (read_blocktype(v, in, &proto)) return v->err->status;
        frame_types(m, &proto, &p, &np, &r, &nr);
        if (pop_n(v, p, np) || push_ctl(v, 0x06, &proto) || push_n(v, p, np)) return v->err->status;
        return PW_OK;
    }
    case 0x07:
    case 0x19: {
        pw_vctl *c = top(v);
        if (c->op != 0x06 && c->op != 0x07)
            return invalid(v, in->op == 0x07 ? "catch without try" : "catch_all without try");
        if (in->op == 0x07 && in->a >= m->ntags) return invalid(v, "unknown tag %u", in->a);
        if (check_frame_end(v, c)) return v->err->status;
        reset_inits(v, c->init_height);
        c->op = in->op;
        c->unreachable = 0;
        if (in->op == 0x07) {
            const pw_deftype *tt = &m->types[m->tag_types[in->a]];
            if (push_n(v, tt->u.func.types, tt->u.func.nparams)) return v->err->status;
        }
        return PW_OK;
    }
    case 0x18: {
        pw_vctl c = *top(v);
        if (c.op != 0x06) return invalid(v, "delegate without try");
        if (check_frame_end(v, &c)) return v->err->status;
        reset_inits(v, c.init_height);
        v->nctls--;
        if (in->a >= v->nctls) return invalid(v, "unknown label %u", in->a);
        frame_types(m, &c, &p, &np, &r, &nr);
        return push_n(v, r, nr);
    }
    default: { /* 0x09 rethrow */
        if (in->a >= v->nctls) return invalid(v, "unknown label %u", in->a);
        const pw_vctl *c = &v->ctls[v->nctls - 1 - in->a];
        if (c->op != 0x07 && c->op != 0x19) return invalid(v, "invalid rethrow label");
        set_unreachable(v);
        return PW_OK;
    }
    }
}

/* ------------------------------------------------------------------ the main loop */

/* Control instructions, one function per case of run's switch (no second dispatch):
 * blocks, legacy exceptions, else, end (which sets *done at the function's end),
 * branches, br_table and return. Inlined into run: they are frequent. */
static inline __attribute__((always_inline)) pw_status block_instr(pw_vctx *v, const pw_instr *in) {
    pw_module *m = v->m;
    uint32_t op = in->op;
    pw_vctl proto = {0};
    if (read_blocktype(v, in, &proto)) return v->err->status;
    if (op == 0x04 && pop(v, PW_VT_I32)) return v->err->status;
    if (op == 0x1F) {
        pw_reader cr = v->r;
        cr.p = in->vec;
        pw_catch c;
        for (uint32_t i = 0; i < in->n; i++) {
            pw__rd_catch(&cr, &c);
            if (check_catch(v, &c)) return v->err->status;
        }
    }
    const pw_valtype *p, *r;
    uint32_t np, nr;
    frame_types(m, &proto, &p, &np, &r, &nr);
    if (pop_n(v, p, np) || push_ctl(v, op, &proto) || push_n(v, p, np)) return v->err->status;
    return PW_OK;
}

static inline __attribute__((always_inline)) pw_status legacy_instr(pw_vctx *v,
                                                                    const pw_instr *in) {
    if (legacy_eh(v, in)) return v->err->status;
    return PW_OK;
}

static inline __attribute__((always_inline)) pw_status else_instr(pw_vctx *v, const pw_instr *in) {
    pw_module *m = v->m;
    (void)in;
    pw_vctl *c = top(v);
    if (c->op != 0x04) /* the enclosing sequence ends here and wants an `end` */
        return pw__fail(v->err, PW_ERR_MALFORMED, "END opcode expected (at byte %zu)",
                        pw_rd_off(&v->r) - 1);
    if (check_frame_end(v, c)) return v->err->status;
    reset_inits(v, c->init_height);
    c->op = 0x05;
    c->unreachable = 0;
    const pw_valtype *p, *r;
    uint32_t np, nr;
    frame_types(m, c, &p, &np, &r, &nr);
    if (push_n(v, p, np)) return v->err->status;
    return PW_OK;
}

static inline __attribute__((always_inline)) pw_status end_instr(pw_vctx *v, const pw_instr *in,
                                                                 bool *done) {
    pw_module *m = v->m;
    (void)in;
    pw_vctl c = *top(v);
    if (check_frame_end(v, &c)) return v->err->status;
    const pw_valtype *p, *r;
    uint32_t np, nr;
    frame_types(m, &c, &p, &np, &r, &nr);
    if (c.op == 0x04) { /* if without else: the params must pass for results */
        bool ok = np == nr;
        for (uint32_t i = 0; ok && i < np; i++)
            ok = pw__valtype_sub(m, p[i], r[i]);
        if (!ok) return invalid(v, "type mismatch: if without else must not change types");
    }
    reset_inits(v, c.init_height);
    v->nctls--;
    if (v->nctls == 0) {
        *done = true;
        return PW_OK;
    }
    if (c.bt == PW_BT_VAL) {
        if (push(v, c.single)) return v->err->status;
    } else if (push_n(v, r, nr)) {
        return v->err->status;
    }
    return PW_OK;
}

static inline __attribute__((always_inline)) pw_status br_instr(pw_vctx *v, const pw_instr *in) {
    uint32_t op = in->op;
    const pw_valtype *ls;
    uint32_t n;
    if (label_types(v, in->a, &ls, &n)) return v->err->status;
    if (op == 0x0D) {
        if (pop(v, PW_VT_I32) || pop_n(v, ls, n) || push_n(v, ls, n)) return v->err->status;
    } else {
        if (pop_n(v, ls, n)) return v->err->status;
        set_unreachable(v);
    }
    return PW_OK;
}

static inline __attribute__((always_inline)) pw_status br_table_instr(pw_vctx *v,
                                                                      const pw_instr *in) {
    pw_module *m = v->m;
    if (pop(v, PW_VT_I32)) return v->err->status;
    const pw_valtype *ls;
    uint32_t arity;
    if (label_types(v, in->a, &ls, &arity)) return v->err->status;
    pw_reader lr = v->r;
    lr.p = in->vec;
    pw_vctl *c = top(v);
    uint32_t avail = v->nvals - c->height;
    if (arity > avail && !c->unreachable) return invalid(v, "type mismatch: br_table");
    uint32_t gen = ++v->brt_gen;
    for (uint32_t k = 0; k <= in->n; k++) {
        uint32_t l = in->a, n;
        if (k < in->n) pw_rd_u32(&lr, &l);
        if (label_types(v, l, &ls, &n)) return v->err->status;
        /* Each label once: a hostile table repeating one deep label must not
         * cost targets x arity. */
        pw_vctl *lc = &v->ctls[v->nctls - 1 - l];
        if (lc->brt_stamp == gen) continue;
        lc->brt_stamp = gen;
        if (n != arity) return invalid(v, "type mismatch: br_table targets have different arities");
        for (uint32_t i = 0; i < n; i++) {
            uint32_t depth = n - 1 - i;   /* from the top */
            if (depth >= avail) continue; /* bottom */
            if (!pw__valtype_sub(m, v->vals[v->nvals - 1 - depth], ls[i]))
                return invalid(v, "type mismatch: br_table operand");
        }
    }
    set_unreachable(v);
    return PW_OK;
}

static inline __attribute__((always_inline)) pw_status return_instr(pw_vctx *v,
                                                                    const pw_instr *in) {
    (void)in;
    pw_module *m = v->m;
    const pw_deftype *ft;
    ft = &m->types[v->ctls[0].type];
    if (pop_n(v, ft->u.func.types + ft->u.func.nparams, ft->u.func.nresults)) return v->err->status;
    set_unreachable(v);
    return PW_OK;
}

/* An operand type of a bulk instruction's signature (bulk_instr): 'a' and 'b' the
 * address type of the memory (mem) or table in->a and in->b, 'm' the smaller of the
 * two, 'e' the table's element type elem, 'i' i32. */
static pw_valtype bulk_type(pw_vctx *v, const pw_instr *in, bool mem, pw_valtype elem, char c) {
    switch (c) {
    case 'a': return mem ? mem_at(v, in->a) : tab_at(v, in->a);
    case 'b': return mem ? mem_at(v, in->b) : tab_at(v, in->b);
    case 'm': return min_at(bulk_type(v, in, mem, elem, 'a'), bulk_type(v, in, mem, elem, 'b'));
    case 'e': return elem;
    default: return PW_VT_I32;
    }
}

/* Bulk memory and table instructions (0xFC 0x08-0x11): their indices checked, then
 * one signature each (operands, result; bulk_type) popped and pushed. */
static __attribute__((noinline)) pw_status bulk_instr(pw_vctx *v, const pw_instr *in) {
    static const struct {
        const char *in, *out;
    } sig[] = {
        {"bii", ""}, /* 0x08 memory.init data mem */
        {"", ""},    /* 0x09 data.drop */
        {"abm", ""}, /* 0x0A memory.copy dst src */
        {"aia", ""}, /* 0x0B memory.fill */
        {"bii", ""}, /* 0x0C table.init elem table */
        {"", ""},    /* 0x0D elem.drop */
        {"abm", ""}, /* 0x0E table.copy dst src */
        {"ea", "a"}, /* 0x0F table.grow */
        {"", "a"},   /* 0x10 table.size */
        {"aea", ""}, /* 0x11 table.fill */
    };
    pw_module *m = v->m;
    uint32_t op = in->op;
    if (op < PW_OP_FC(0x08) || op > PW_OP_FC(0x11))
        return pw__fail(v->err, PW_ERR_MALFORMED, "illegal opcode %x", op);
    pw_valtype t = 0, t2 = 0;
    bool bad;
    switch (op) {
    case PW_OP_FC(0x08): bad = check_mem(v, in->b) || check_data(v, in->a); break;
    case PW_OP_FC(0x09): bad = check_data(v, in->a); break;
    case PW_OP_FC(0x0A): bad = check_mem(v, in->a) || check_mem(v, in->b); break;
    case PW_OP_FC(0x0B): bad = check_mem(v, in->a); break;
    case PW_OP_FC(0x0C): bad = check_table(v, in->b, &t) || check_elem(v, in->a, &t2); break;
    case PW_OP_FC(0x0D): bad = check_elem(v, in->a, &t); break;
    case PW_OP_FC(0x0E): bad = check_table(v, in->a, &t) || check_table(v, in->b, &t2); break;
    default: bad = check_table(v, in->a, &t); break; /* 0x0F-0x11 */
    }
    if (bad) return v->err->status;
    if (op == PW_OP_FC(0x0C) && !pw__valtype_sub(m, t2, t))
        return invalid(v, "type mismatch: element segment's type does not match table's");
    if (op == PW_OP_FC(0x0E) && !pw__valtype_sub(m, t2, t))
        return invalid(v, "type mismatch: source element type does not match "
                          "destination element type");
    bool mem = op <= PW_OP_FC(0x0B);
    const char *ops = sig[op - PW_OP_FC(0x08)].in, *res = sig[op - PW_OP_FC(0x08)].out;
    for (size_t k = strlen(ops); k-- > 0;)
        if (pop(v, bulk_type(v, in, mem, t, ops[k]))) return v->err->status;
    if (*res && push(v, bulk_type(v, in, mem, t, *res))) return v->err->status;
    return PW_OK;
}

/* GC instructions (0xFB): structs, arrays, casts, i31; anything else is illegal. */
static __attribute__((noinline)) pw_status gc_instr(pw_vctx *v, const pw_instr *in) {
    pw_module *m = v->m;
    uint32_t op = in->op;
    pw_valtype t, t3;
    const pw_field *fld;
    switch (op) {
    case PW_OP_FB(0x00): {
        const pw_deftype *st;
        if (type_idx(v, in->a, PW_FORM_STRUCT, &st)) return v->err->status;
        for (uint32_t i = st->u.strct.nfields; i-- > 0;)
            if (pop(v, unpacked(&st->u.strct.fields[i]))) return v->err->status;
        if (push(v, PW_VT_MAKE_REF(in->a, 0))) return v->err->status;
        return PW_OK;
    }
    case PW_OP_FB(0x01): {
        const pw_deftype *st;
        if (type_idx(v, in->a, PW_FORM_STRUCT, &st)) return v->err->status;
        for (uint32_t i = 0; i < st->u.strct.nfields; i++)
            if (!defaultable(st->u.strct.fields[i].type))
                return invalid(v, "field type is not defaultable");
        if (push(v, PW_VT_MAKE_REF(in->a, 0))) return v->err->status;
        return PW_OK;
    }
    case PW_OP_FB(0x02):
    case PW_OP_FB(0x03):
    case PW_OP_FB(0x04):
        if (struct_field(v, in->a, in->b, &fld)) return v->err->status;
        if ((op != PW_OP_FB(0x02)) != (fld->packed != PW_PACK_NONE))
            return invalid(v, fld->packed ? "field is packed" : "field is unpacked");
        if (pop(v, PW_VT_MAKE_REF(in->a, 1)) || push(v, unpacked(fld))) return v->err->status;
        return PW_OK;
    case PW_OP_FB(0x05):
        if (struct_field(v, in->a, in->b, &fld)) return v->err->status;
        if (!fld->mut) return invalid(v, "immutable field");
        if (pop(v, unpacked(fld)) || pop(v, PW_VT_MAKE_REF(in->a, 1))) return v->err->status;
        return PW_OK;
    case PW_OP_FB(0x06):
        if (array_field(v, in->a, &fld) || pop(v, PW_VT_I32) || pop(v, unpacked(fld)) ||
            push(v, PW_VT_MAKE_REF(in->a, 0)))
            return v->err->status;
        return PW_OK;
    case PW_OP_FB(0x07):
        if (array_field(v, in->a, &fld)) return v->err->status;
        if (!defaultable(fld->type)) return invalid(v, "array type is not defaultable");
        if (pop(v, PW_VT_I32) || push(v, PW_VT_MAKE_REF(in->a, 0))) return v->err->status;
        return PW_OK;
    case PW_OP_FB(0x08): {
        if (array_field(v, in->a, &fld)) return v->err->status;
        t = unpacked(fld);
        pw_vctl *c = top(v);
        uint32_t avail = v->nvals - c->height;
        if (in->b > avail && !c->unreachable)
            return invalid(v, "type mismatch: array.new_fixed needs %u operands", in->b);
        uint32_t k = in->b < avail ? in->b : avail; /* the rest are bottom */
        for (uint32_t i = 0; i < k; i++)
            if (pop(v, t)) return v->err->status;
        if (push(v, PW_VT_MAKE_REF(in->a, 0))) return v->err->status;
        return PW_OK;
    }
    case PW_OP_FB(0x09):
        if (array_field(v, in->a, &fld) || check_data(v, in->b)) return v->err->status;
        if (PW_VT_KIND(fld->type) == PW_K_REF)
            return invalid(v, "array type is not numeric or vector");
        if (pop(v, PW_VT_I32) || pop(v, PW_VT_I32) || push(v, PW_VT_MAKE_REF(in->a, 0)))
            return v->err->status;
        return PW_OK;
    case PW_OP_FB(0x0A):
        if (array_field(v, in->a, &fld) || check_elem(v, in->b, &t)) return v->err->status;
        if (!pw__valtype_sub(m, t, unpacked(fld)))
            return invalid(v, "type mismatch: element segment's type does not match array's");
        if (pop(v, PW_VT_I32) || pop(v, PW_VT_I32) || push(v, PW_VT_MAKE_REF(in->a, 0)))
            return v->err->status;
        return PW_OK;
    case PW_OP_FB(0x0B):
    case PW_OP_FB(0x0C):
    case PW_OP_FB(0x0D):
        if (array_field(v, in->a, &fld)) return v->err->status;
        if ((op != PW_OP_FB(0x0B)) != (fld->packed != PW_PACK_NONE))
            return invalid(v, fld->packed ? "array is packed" : "array is unpacked");
        if (pop(v, PW_VT_I32) || pop(v, PW_VT_MAKE_REF(in->a, 1)) || push(v, unpacked(fld)))
            return v->err->status;
        return PW_OK;
    case PW_OP_FB(0x0E):
        if (array_field(v, in->a, &fld)) return v->err->status;
        if (!fld->mut) return invalid(v, "immutable array");
        if (pop(v, unpacked(fld)) || pop(v, PW_VT_I32) || pop(v, PW_VT_MAKE_REF(in->a, 1)))
            return v->err->status;
        return PW_OK;
    case PW_OP_FB(0x0F):
        if (pop(v, ABSREF(PW_HT_ARRAY, 1)) || push(v, PW_VT_I32)) return v->err->status;
        return PW_OK;
    case PW_OP_FB(0x10):
        if (array_field(v, in->a, &fld)) return v->err->status;
        if (!fld->mut) return invalid(v, "immutable array");
        if (pop(v, PW_VT_I32) || pop(v, unpacked(fld)) || pop(v, PW_VT_I32) ||
            pop(v, PW_VT_MAKE_REF(in->a, 1)))
            return v->err->status;
        return PW_OK;
    case PW_OP_FB(0x11): {
        const pw_field *src;
        if (array_field(v, in->a, &fld) || array_field(v, in->b, &src)) return v->err->status;
        if (!fld->mut) return invalid(v, "immutable array");
        if (src->packed != fld->packed || !pw__valtype_sub(m, src->type, fld->type))
            return invalid(v, "array types do not match");
        if (pop(v, PW_VT_I32) || pop(v, PW_VT_I32) || pop(v, PW_VT_MAKE_REF(in->b, 1)) ||
            pop(v, PW_VT_I32) || pop(v, PW_VT_MAKE_REF(in->a, 1)))
            return v->err->status;
        return PW_OK;
    }
    case PW_OP_FB(0x12):
    case PW_OP_FB(0x13):
        if (array_field(v, in->a, &fld)) return v->err->status;
        if (!fld->mut) return invalid(v, "immutable array");
        if (op == PW_OP_FB(0x12)) {
            if (check_data(v, in->b)) return v->err->status;
            if (PW_VT_KIND(fld->type) == PW_K_REF)
                return invalid(v, "array type is not numeric or vector");
        } else {
            if (check_elem(v, in->b, &t)) return v->err->status;
            if (!pw__valtype_sub(m, t, unpacked(fld)))
                return invalid(v, "type mismatch: element segment's type does not match "
                                  "array's");
        }
        if (pop(v, PW_VT_I32) || pop(v, PW_VT_I32) || pop(v, PW_VT_I32) ||
            pop(v, PW_VT_MAKE_REF(in->a, 1)))
            return v->err->status;
        return PW_OK;
    case PW_OP_FB(0x14):
    case PW_OP_FB(0x15):
    case PW_OP_FB(0x16):
    case PW_OP_FB(0x17): {
        if (check_reftype(v, in->t1)) return v->err->status;
        uint32_t top_ht = pw__heaptype_top(m, PW_VT_HEAP(in->t1));
        if (pop(v, PW_VT_MAKE_REF(top_ht, 1))) return v->err->status;
        if (push(v, op <= PW_OP_FB(0x15) ? PW_VT_I32 : in->t1)) return v->err->status;
        return PW_OK;
    }
    case PW_OP_FB(0x18):
    case PW_OP_FB(0x19):
        if (br_cast(v, in, op == PW_OP_FB(0x19))) return v->err->status;
        return PW_OK;
    case PW_OP_FB(0x1A):
    case PW_OP_FB(0x1B): {
        bool to_any = op == PW_OP_FB(0x1A);
        if (pop_ref(v, &t)) return v->err->status;
        t3 = ABSREF(to_any ? PW_HT_EXTERN : PW_HT_ANY, 1);
        if (!pw__valtype_sub(m, t | 0x10u, t3)) return mismatch(v, t3, t, false);
        bool nul = PW_VT_KIND(t) == PW_K_REF && PW_VT_NULLABLE(t);
        if (PW_VT_HEAP(t) == (PW_HT_ABS | PW_HT_BOT)) nul = false;
        if (push(v, ABSREF(to_any ? PW_HT_ANY : PW_HT_EXTERN, nul))) return v->err->status;
        return PW_OK;
    }
    case PW_OP_FB(0x1C):
        if (pop(v, PW_VT_I32) || push(v, ABSREF(PW_HT_I31, 0))) return v->err->status;
        return PW_OK;
    case PW_OP_FB(0x1D):
    case PW_OP_FB(0x1E):
        if (pop(v, ABSREF(PW_HT_I31, 1)) || push(v, PW_VT_I32)) return v->err->status;
        return PW_OK;
    default: return pw__fail(v->err, PW_ERR_MALFORMED, "illegal opcode %x", op);
    }
    return PW_OK;
}

/* Validate the sequence at v->r up to its final `end`; the function (or constant)
 * frame must already be pushed. */
static pw_status run(pw_vctx *v) {
    pw_module *m = v->m;
    pw_instr in;
    pw_valtype t, t2;
    const pw_deftype *ft;
    for (;;) {
        /* Fast path, outside constant expressions: numeric operators and local.get
         * with a one-byte index, typed without building a pw_instr. */
        const uint8_t *p = v->r.p;
        if (!v->const_mode && v->r.end - p >= 2) {
            uint8_t b0 = p[0];
            if (b0 >= 0x45 && b0 <= 0xC4) {
                const uint8_t *sig = numtab[b0 - 0x45];
                v->r.p = p + 1;
                if ((sig[1] && pop(v, sig[1])) || pop(v, sig[0]) || push(v, sig[2]))
                    return v->err->status;
                continue;
            }
            if (b0 == 0x20 && p[1] < 0x80 && p[1] < v->nlocals && v->linit[p[1]]) {
                v->r.p = p + 2;
                if (push(v, v->ltypes[p[1]])) return v->err->status;
                continue;
            }
        }
        if (!pw__instr_read(&v->r, &in)) return v->err->status;
        if (v->const_mode && !const_op(v, &in)) {
            if (in.op == 0x23 && in.a >= v->nglobals_visible)
                return invalid(v, "unknown global %u", in.a);
            return invalid(v, "constant expression required");
        }
        uint32_t op = in.op;
        if (op >= 0x45 && op <= 0xC4) {
            pw_valtype a, b, r;
            numsig(op, &a, &b, &r);
            if ((b && pop(v, b)) || pop(v, a) || push(v, r)) return v->err->status;
            continue;
        }
        switch (op) {
        case 0x00: set_unreachable(v); break;
        case 0x01: break;
        case 0x02:
        case 0x03:
        case 0x04:
        case 0x1F:
            if (block_instr(v, &in)) return v->err->status;
            break;
        case 0x06:
        case 0x07:
        case 0x19:
        case 0x18:
        case 0x09:
            if (legacy_instr(v, &in)) return v->err->status;
            break;
        case 0x05:
            if (else_instr(v, &in)) return v->err->status;
            break;
        case 0x0B: {
            bool done = false;
            if (end_instr(v, &in, &done)) return v->err->status;
            if (done) return PW_OK;
            break;
        }
        case 0x0C:
        case 0x0D:
            if (br_instr(v, &in)) return v->err->status;
            break;
        case 0x0E:
            if (br_table_instr(v, &in)) return v->err->status;
            break;
        case 0x0F:
            if (return_instr(v, &in)) return v->err->status;
            break;
        case 0x10:
        case 0x12:
            if (in.a >= m->nfuncs) return invalid(v, "unknown function %u", in.a);
            ft = &m->types[m->func_types[in.a]];
            if (op == 0x12 ? tail_results(v, ft) : func_sig(v, ft)) return v->err->status;
            break;
        case 0x11:
        case 0x13:
            if (check_table(v, in.b, &t)) return v->err->status;
            if (type_idx(v, in.a, PW_FORM_FUNC, &ft)) return v->err->status;
            if (!pw__valtype_sub(m, t, ABSREF(PW_HT_FUNC, 1)))
                return invalid(v, "type mismatch: instruction requires table of function type");
            if (pop(v, tab_at(v, in.b))) return v->err->status;
            if (op == 0x13 ? tail_results(v, ft) : func_sig(v, ft)) return v->err->status;
            break;
        case 0x14:
        case 0x15:
            if (type_idx(v, in.a, PW_FORM_FUNC, &ft)) return v->err->status;
            if (pop(v, PW_VT_MAKE_REF(in.a, 1))) return v->err->status;
            if (op == 0x15 ? tail_results(v, ft) : func_sig(v, ft)) return v->err->status;
            break;
        case 0x08:
            if (in.a >= m->ntags) return invalid(v, "unknown tag %u", in.a);
            ft = &m->types[m->tag_types[in.a]];
            if (pop_n(v, ft->u.func.types, ft->u.func.nparams)) return v->err->status;
            set_unreachable(v);
            break;
        case 0x0A:
            if (pop(v, ABSREF(PW_HT_EXN, 1))) return v->err->status;
            set_unreachable(v);
            break;
        case 0x1A:
            if (pop_any(v, &t)) return v->err->status;
            break;
        case 0x1B: {
            if (pop(v, PW_VT_I32) || pop_any(v, &t) || pop_any(v, &t2)) return v->err->status;
            if (PW_VT_KIND(t) == PW_K_REF || PW_VT_KIND(t2) == PW_K_REF)
                return invalid(v, "type mismatch: select requires numeric or vector type");
            if (t == VT_BOT)
                t = t2;
            else if (t2 != VT_BOT && t2 != t)
                return mismatch(v, t, t2, false);
            if (push(v, t)) return v->err->status;
            break;
        }
        case 0x1C:
            if (in.n != 1)
                return invalid(v, "invalid result arity other than 1 is not (yet) allowed");
            if (pw__check_valtype(v, in.t1) || pop(v, PW_VT_I32) || pop(v, in.t1) ||
                pop(v, in.t1) || push(v, in.t1))
                return v->err->status;
            break;
        case 0x20:
            if (in.a >= v->nlocals) return invalid(v, "unknown local %u", in.a);
            if (!v->linit[in.a]) return invalid(v, "uninitialized local %u", in.a);
            if (push(v, v->ltypes[in.a])) return v->err->status;
            break;
        case 0x21:
        case 0x22:
            if (set_local(v, in.a, &t) || pop(v, t)) return v->err->status;
            if (op == 0x22 && push(v, t)) return v->err->status;
            break;
        case 0x23:
            if (in.a >= m->nglobals) return invalid(v, "unknown global %u", in.a);
            if (push(v, m->globals[in.a].type.type)) return v->err->status;
            break;
        case 0x24:
            if (in.a >= m->nglobals) return invalid(v, "unknown global %u", in.a);
            if (!m->globals[in.a].type.mut) return invalid(v, "immutable global %u", in.a);
            if (pop(v, m->globals[in.a].type.type)) return v->err->status;
            break;
        case 0x25:
            if (check_table(v, in.a, &t) || pop(v, tab_at(v, in.a)) || push(v, t))
                return v->err->status;
            break;
        case 0x26:
            if (check_table(v, in.a, &t) || pop(v, t) || pop(v, tab_at(v, in.a)))
                return v->err->status;
            break;
        case 0x3F:
            if (check_mem(v, in.a) || push(v, mem_at(v, in.a))) return v->err->status;
            break;
        case 0x40:
            if (check_mem(v, in.a) || pop(v, mem_at(v, in.a)) || push(v, mem_at(v, in.a)))
                return v->err->status;
            break;
        case 0x41:
        case 0x42:
        case 0x43:
        case 0x44: {
            static const pw_valtype ct[] = {PW_VT_I32, PW_VT_I64, PW_VT_F32, PW_VT_F64};
            if (push(v, ct[op - 0x41])) return v->err->status;
            break;
        }
        case 0xD0:
            if (pw__check_valtype(v, in.t1) || push(v, in.t1)) return v->err->status;
            break;
        case 0xD1:
            if (pop_ref(v, &t) || push(v, PW_VT_I32)) return v->err->status;
            break;
        case 0xD2:
            if (in.a >= m->nfuncs) return invalid(v, "unknown function %u", in.a);
            if (!m->func_declared[in.a])
                return invalid(v, "undeclared function reference %u", in.a);
            if (push(v, PW_VT_MAKE_REF(m->func_types[in.a], 0))) return v->err->status;
            break;
        case 0xD3:
            if (pop(v, ABSREF(PW_HT_EQ, 1)) || pop(v, ABSREF(PW_HT_EQ, 1)) || push(v, PW_VT_I32))
                return v->err->status;
            break;
        case 0xD4:
            if (pop_ref(v, &t) || push(v, t & ~0x10u)) return v->err->status;
            break;
        case 0xD5: {
            const pw_valtype *ls;
            uint32_t n;
            if (label_types(v, in.a, &ls, &n) || pop_ref(v, &t)) return v->err->status;
            if (pop_n(v, ls, n) || push_n(v, ls, n) || push(v, t & ~0x10u)) return v->err->status;
            break;
        }
        case 0xD6: {
            const pw_valtype *ls;
            uint32_t n;
            if (label_types(v, in.a, &ls, &n)) return v->err->status;
            if (n == 0 || PW_VT_KIND(ls[n - 1]) != PW_K_REF)
                return invalid(v, "type mismatch: instruction requires reference type but label "
                                  "has another type");
            if (pop(v, ls[n - 1] | 0x10u) || pop_n(v, ls, n - 1) || push_n(v, ls, n - 1))
                return v->err->status;
            break;
        }
        default:
            if (op >= 0x28 && op <= 0x3E) {
                if (check_mem(v, in.a)) return v->err->status;
                if (in.align > natural_align(op))
                    return invalid(v, "alignment must not be larger than natural");
                pw_valtype at = mem_at(v, in.a);
                if (at == PW_VT_I32 && in.offset > UINT32_MAX)
                    return invalid(v, "offset out of range");
                pw_valtype mt = mem_type(op);
                if (op <= 0x35) {
                    if (pop(v, at) || push(v, mt)) return v->err->status;
                } else if (pop(v, mt) || pop(v, at)) {
                    return v->err->status;
                }
                break;
            }
            if (op >= PW_OP_FC(0) && op <= PW_OP_FC(7)) {
                pw_valtype a, b, r;
                numsig(op, &a, &b, &r);
                if (pop(v, a) || push(v, r)) return v->err->status;
                break;
            }
            if (op >= PW_OP_FD(0) && op < PW_OP_FD(PW_FD_COUNT)) {
                if (simd_instr(v, &in)) return v->err->status;
                break;
            }
            goto more;
        }
        continue;
    more:
        if (op >= PW_OP_FC(0x08) && op <= PW_OP_FC(0x11)) {
            if (bulk_instr(v, &in)) return v->err->status;
        } else if (gc_instr(v, &in)) {
            return v->err->status;
        }
    }
}

static pw_status begin(pw_vctx *v, pw_span code, uint32_t functype) {
    v->r.base = v->m->bytes;
    v->r.p = v->m->bytes + code.off;
    v->r.end = v->r.p + code.len;
    v->r.err = v->err;
    v->nvals = v->nctls = v->ninits = 0;
    pw_vctl proto = {0};
    proto.bt = PW_BT_TYPE;
    proto.type = functype;
    return push_ctl(v, 0, &proto);
}

static pw_status reserve_locals(pw_vctx *v, uint32_t n) {
    if (n <= v->caplocals) return PW_OK;
    pw_valtype *t = realloc(v->ltypes, (size_t)n * sizeof *t);
    if (!t) return nomem(v);
    v->ltypes = t;
    uint8_t *f = realloc(v->linit, n);
    if (!f) return nomem(v);
    v->linit = f;
    v->caplocals = n;
    return PW_OK;
}

pw_status pw__validate_func(pw_vctx *v, uint32_t i) {
    pw_module *m = v->m;
    const pw_funcdef *f = &m->funcs[i];
    const pw_deftype *ft = &m->types[f->type];
    uint32_t np = ft->u.func.nparams;
    v->const_mode = false;
    v->nglobals_visible = m->nglobals;
    if (reserve_locals(v, np + f->nlocals)) return v->err->status;
    v->nlocals = np + f->nlocals;
    for (uint32_t k = 0; k < np; k++) {
        v->ltypes[k] = ft->u.func.types[k];
        v->linit[k] = 1;
    }
    for (uint32_t k = 0; k < f->nlocals; k++) {
        pw_valtype t = f->locals[k];
        if (pw__check_valtype(v, t)) return v->err->status;
        v->ltypes[np + k] = t;
        v->linit[np + k] = defaultable(t);
    }
    /* Read against the module's end, as the spec's decoder does; a body that does not
     * end exactly at its declared size is malformed. */
    pw_span all = {f->body.off, (uint32_t)(m->nbytes - f->body.off)};
    if (begin(v, all, f->type) || run(v)) return v->err->status;
    if (pw_rd_off(&v->r) != (size_t)f->body.off + f->body.len)
        return pw__fail(v->err, PW_ERR_MALFORMED, "section size mismatch (function %u)",
                        i + m->nfunc_imports);
    return PW_OK;
}

/* A constant expression is checked as the body of a function [] -> [t]. The frame
 * borrows a block type of one value. */
pw_status pw__validate_const(pw_vctx *v, pw_span e, pw_valtype t, uint32_t nglobals_visible) {
    v->const_mode = true;
    v->nglobals_visible = nglobals_visible;
    v->nlocals = 0;
    if (pw__check_valtype(v, t)) return v->err->status;
    /* The spec checks that every instruction is constant before typing. */
    pw_reader r = {.base = v->m->bytes, .p = v->m->bytes + e.off, .err = v->err};
    r.end = r.p + e.len;
    pw_instr in;
    v->r = r;
    while (v->r.p < v->r.end) {
        if (!pw__instr_read(&v->r, &in)) return v->err->status;
        if (!const_op(v, &in)) {
            if (in.op == 0x23 && in.a >= v->nglobals_visible)
                return invalid(v, "unknown global %u", in.a);
            return invalid(v, "constant expression required");
        }
    }
    v->r = r;
    v->nvals = v->nctls = v->ninits = 0;
    pw_vctl proto = {0};
    proto.bt = PW_BT_VAL;
    proto.single = t;
    if (push_ctl(v, 0, &proto)) return v->err->status;
    pw_status st = run(v);
    v->const_mode = false;
    return st;
}

void pw__vctx_free(pw_vctx *v) {
    free(v->vals);
    free(v->ctls);
    free(v->ltypes);
    free(v->linit);
    free(v->inits);
}
