/*
 * wat.h — internal interface of the WebAssembly text-format parser (src/wasm/text/).
 *
 * lex.c    tokens (with line:column), strings and their escapes, numeric literals
 * ops.c    the instruction name table (name -> opcode and immediate kind)
 * expr.c   instructions: plain and folded forms, labels, block types, immediates
 * wat.c    modules: fields, index spaces and names, type uses, sections, the binary
 *
 * The parser turns text into the binary format and leaves validation to the
 * binary decoder/validator: it rejects only what the text grammar rejects
 * (PW_ERR_MALFORMED, message "<what> (at line:column)"). It allocates only through
 * its context (freed by wt_free); no global mutable state.
 */
#ifndef PW_WAT_H
#define PW_WAT_H

#include "peri/base.h"
#include "peri/wasm.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- tokens */
enum { WT_LP, WT_RP, WT_ATOM, WT_STR, WT_ID, WT_ANNOT, WT_RESERVED, WT_EOF };

typedef struct wt_tok {
    uint8_t kind;
    uint32_t line, col;
    const char *s; /* WT_ATOM: the keyword/number; WT_STR: inside the quotes (raw);
                      WT_ID: after '$' (raw; quoted ids are decoded in `dec`);
                      WT_ANNOT: the annotation name after "(@" */
    uint32_t len;
    bool quoted; /* WT_ID written $"..." */
} wt_tok;

/* A decoded byte string (names, data, quoted ids). */
typedef struct wt_str {
    const char *s;
    uint32_t len;
} wt_str;

/* ---- index spaces */
enum {
    WT_SP_TYPE,
    WT_SP_FUNC,
    WT_SP_TABLE,
    WT_SP_MEM,
    WT_SP_GLOBAL,
    WT_SP_TAG,
    WT_SP_ELEM,
    WT_SP_DATA,
    WT_SP_COUNT
};

typedef struct wt_space {
    wt_str *names; /* names[i].s == NULL: index i has no name */
    uint32_t n, cap;
    uint32_t imports; /* how many of the first entries are imports */
} wt_space;

/* One type definition (explicit, or an inline function type appended at the end). */
typedef struct wt_type {
    uint8_t kind;           /* 0x60 func, 0x5F struct, 0x5E array */
    bool simple;            /* final, no supertypes, alone in its rec group */
    uint32_t nparams, nres; /* func */
    pb_buf sig;             /* func: encoded param types then result types */
    uint32_t res_off;       /* func: where the results start in sig */
    wt_str *fields;         /* struct: field names */
    uint32_t nfields;
} wt_type;

typedef struct wt_ctx {
    const char *src;
    size_t len;
    wt_tok *t;
    size_t nt, cap, pos;
    pw_error *err;
    bool failed;
    /* owned allocations to free at the end (decoded strings) */
    void **owned;
    size_t nowned, capowned;
    /* index spaces and types */
    wt_space sp[WT_SP_COUNT];
    wt_type *types;
    uint32_t ntypes, captypes;
    uint32_t nexplicit_types;
    void *mod;     /* wat.c's module record (section buffers) */
    int first_def; /* index space of the first definition (imports must precede it), or -1 */
    /* sorted instruction table (indices into the static table) */
    uint16_t *opidx;
    size_t nops;
    int depth; /* nesting guard */
} wt_ctx;

/* lex.c */
bool pw__wt_lex(wt_ctx *c);
bool pw__wt_fail(wt_ctx *c, const wt_tok *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void *pw__wt_alloc(wt_ctx *c, size_t n); /* zeroed, owned by the context */
/* Decode a string token's escapes; false (error set) on bad escapes. */
bool pw__wt_string(wt_ctx *c, const wt_tok *t, wt_str *out);
bool pw__wt_utf8_ok(const char *s, size_t n);
bool pw__wt_is(const wt_tok *t, const char *kw);
bool pw__wt_nat32(const wt_tok *t, uint32_t *out);
bool pw__wt_nat64(const wt_tok *t, uint64_t *out);
/* Integer literals of N bits (iN: unsigned or signed forms), result as bits. */
bool pw__wt_int(const wt_tok *t, int bits, uint64_t *out);
bool pw__wt_f32(const wt_tok *t, uint32_t *out);
bool pw__wt_f64(const wt_tok *t, uint64_t *out);
bool pw__wt_is_num(const wt_tok *t);

/* ops.c */
enum {
    WI_NONE,  /* no immediates */
    WI_BLOCK, /* block, loop, if */
    WI_TRY_TABLE,
    WI_TRY,   /* legacy try */
    WI_CATCH, /* legacy catch x */
    WI_CATCH_ALL,
    WI_DELEGATE,
    WI_ELSE,
    WI_END,
    WI_LABEL, /* br, br_if, br_on_null, br_on_non_null, rethrow */
    WI_BR_TABLE,
    WI_FUNC, /* call, return_call, ref.func */
    WI_CALL_INDIRECT,
    WI_TYPE, /* call_ref, struct.new, array.* with one type index */
    WI_LOCAL,
    WI_GLOBAL,
    WI_TABLE, /* optional table index */
    WI_TABLE_COPY,
    WI_TABLE_INIT,
    WI_ELEM,
    WI_MEMORY, /* optional memory index */
    WI_MEMORY_COPY,
    WI_MEMORY_INIT,
    WI_DATA,
    WI_MEMARG, /* loads and stores; align = natural log2 */
    WI_I32,
    WI_I64,
    WI_F32,
    WI_F64,
    WI_SELECT,
    WI_REF_NULL,
    WI_REF_TEST, /* ref.test / ref.cast: reftype picks the opcode */
    WI_BR_ON_CAST,
    WI_FIELD, /* struct.get/set: type, field */
    WI_ARRAY_FIXED,
    WI_ARRAY_DATA, /* type, data */
    WI_ARRAY_ELEM, /* type, elem */
    WI_ARRAY_COPY, /* type, type */
    WI_TAG,        /* throw */
    WI_SIMD,       /* immediates from the engine's SIMD table */
};

typedef struct wt_op {
    const char *name;
    uint32_t code; /* single byte, or 0xFB00|sub, 0xFC00|sub, 0xFD0000|sub */
    uint8_t imm;
    uint8_t align; /* WI_MEMARG: natural alignment log2 */
} wt_op;

const wt_op *pw__wt_op_find(wt_ctx *c, const char *s, size_t n);
bool pw__wt_ops_init(wt_ctx *c);

/* wat.c: shared with expr.c */
bool pw__wt_valtype(wt_ctx *c, pb_buf *out); /* one value type at the cursor */
bool pw__wt_heaptype(wt_ctx *c, pb_buf *out, bool *nullable_out);
bool pw__wt_reftype(wt_ctx *c, pb_buf *out, bool *nullable, pb_buf *heap);
bool pw__wt_index(wt_ctx *c, int space, uint32_t *out);     /* required */
bool pw__wt_index_opt(wt_ctx *c, int space, uint32_t *out); /* absent: 0 */
bool pw__wt_peek_index(wt_ctx *c);
/* Type use: (type x)? (param ...)* (result ...)*; names of params go to `names` when
 * non-NULL. Returns the type index (appending an inline type when needed). */
bool pw__wt_typeuse(wt_ctx *c, uint32_t *idx, wt_str **names, uint32_t *nnames, bool allow_names);
bool pw__wt_typeuse_block(wt_ctx *c, pb_buf *out);
bool pw__wt_lookup(wt_ctx *c, wt_space *sp, const wt_tok *t, uint32_t *out);

static inline wt_tok *wt_peek(wt_ctx *c) {
    return &c->t[c->pos];
}
static inline wt_tok *wt_peek2(wt_ctx *c) {
    return c->pos + 1 < c->nt ? &c->t[c->pos + 1] : &c->t[c->nt - 1];
}
static inline wt_tok *wt_next(wt_ctx *c) {
    wt_tok *t = &c->t[c->pos];
    if (t->kind != WT_EOF) c->pos++;
    return t;
}
/* Is the cursor at "(" followed by keyword kw? */
static inline bool wt_at_form(wt_ctx *c, const char *kw) {
    return wt_peek(c)->kind == WT_LP && pw__wt_is(wt_peek2(c), kw);
}
bool pw__wt_expect(wt_ctx *c, int kind, const char *what);
bool pw__wt_expect_kw(wt_ctx *c, const char *kw);

/* LEB128 and small encoders */
bool pw__wt_u32(pb_buf *b, uint32_t v);
bool pw__wt_u64(pb_buf *b, uint64_t v);
bool pw__wt_s32(pb_buf *b, int32_t v);
bool pw__wt_s64(pb_buf *b, int64_t v);
bool pw__wt_byte(pb_buf *b, uint8_t v);
bool pw__wt_name(pb_buf *b, const wt_str *s);

/* expr.c: a function body / constant expression until ")" (not consumed). Labels
 * and locals come from the function context. */
typedef struct wt_func {
    wt_str *locals; /* names of params then locals */
    uint32_t nlocals;
    wt_str *labels; /* label stack, innermost last */
    uint32_t nlabels, caplabels;
    bool uses_data; /* memory.init / data.drop: needs a data count section */
} wt_func;
bool pw__wt_instrs(wt_ctx *c, wt_func *f, pb_buf *out);

#endif
