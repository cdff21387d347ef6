/*
 * module.h — the decoded form of a WebAssembly module (internal to src/wasm/).
 *
 * Owned by the front end (decode.c fills it, validate.c checks it). The back end
 * (compile.c, instance.c, interp.c) reads it and hangs its compiled code on it.
 * A pw_module is immutable once pw_module_new returns, so it can be shared between
 * threads; only its compiled code grows, each function compiled once at its first use
 * under the module's lock (compile.c).
 *
 * Type indices are module-relative. Two type indices denote equivalent types
 * (iso-recursive equivalence, Wasm 3.0) exactly when their `canon` fields are equal;
 * the front end computes `canon` so that the validator compares integers. Link-time
 * and run-time comparisons across modules go through the store's type registry (see
 * docs/engine.md), never through global state.
 */
#ifndef PW_MODULE_H
#define PW_MODULE_H

#include "peri/wasm.h"

#include <stdarg.h>

/* A byte range within pw_module.bytes. */
typedef struct pw_span {
    uint32_t off, len;
} pw_span;

typedef enum pw_typeform {
    PW_FORM_FUNC = 0x60,
    PW_FORM_STRUCT = 0x5F,
    PW_FORM_ARRAY = 0x5E,
} pw_typeform;

/* Storage types of struct/array fields: a value type, or a packed i8/i16. */
enum { PW_PACK_NONE = 0, PW_PACK_I8 = 1, PW_PACK_I16 = 2 };

typedef struct pw_field {
    pw_valtype type; /* for packed fields: PW_VT_I32 */
    uint8_t packed;  /* PW_PACK_* */
    uint8_t mut;
} pw_field;

/* One defined type (a "subtype" entry of a recursion group). */
typedef struct pw_deftype {
    uint8_t form;          /* pw_typeform */
    uint8_t final;         /* 1 unless declared with a non-final `sub` */
    uint32_t super;        /* supertype index, or UINT32_MAX */
    uint32_t rec_start;    /* first type index of its recursion group */
    uint32_t rec_len;      /* size of its recursion group */
    uint32_t canon;        /* module-local canonical representative (see header) */
    uint32_t depth;        /* length of the supertype chain (0 = no supertype) */
    uint8_t nsupers_extra; /* decoder: more than one supertype was declared (invalid) */
    union {
        struct {
            uint32_t nparams, nresults;
            pw_valtype *types; /* params then results */
        } func;
        struct {
            uint32_t nfields;
            pw_field *fields;
        } strct;
        pw_field array;
    } u;
} pw_deftype;

/* Limits of a memory (in pages) or table (in elements). is64: the memory or table
 * has i64 addresses (memory64 / table64); its indices, sizes and segment offsets are
 * then i64 values, else i32. */
typedef struct pw_limits {
    uint64_t min, max; /* max == UINT64_MAX when absent */
    bool is64;
} pw_limits;

typedef struct pw_tabletype {
    pw_valtype elem;
    pw_limits lim;
} pw_tabletype;

typedef struct pw_globaltype {
    pw_valtype type;
    uint8_t mut;
} pw_globaltype;

typedef struct pw_import {
    pw_span module, name; /* UTF-8 validated */
    pw_extern_kind kind;
    union {
        uint32_t func_type; /* type index */
        pw_tabletype table;
        pw_limits memory;
        pw_globaltype global;
        uint32_t tag_type; /* type index of the tag's function type */
    } u;
} pw_import;

typedef struct pw_export {
    pw_span name;
    pw_extern_kind kind;
    uint32_t index; /* in the kind's index space (imports first) */
} pw_export;

/* A defined function: its type, locals and body (the body excludes the locals). */
typedef struct pw_funcdef {
    uint32_t type;      /* type index */
    uint32_t nlocals;   /* declared locals, not counting params */
    pw_valtype *locals; /* nlocals entries, expanded */
    pw_span body;       /* instructions up to and including the final `end` */
} pw_funcdef;

typedef struct pw_table_def {
    pw_tabletype type;
    pw_span init; /* constant expression, or len 0 for ref.null of elem type */
} pw_table_def;

typedef struct pw_global_def {
    pw_globaltype type;
    pw_span init; /* constant expression including its `end` */
} pw_global_def;

typedef enum pw_segmode {
    PW_SEG_ACTIVE = 0,
    PW_SEG_PASSIVE = 1,
    PW_SEG_DECLARATIVE = 2,
} pw_segmode;

typedef struct pw_elem {
    pw_segmode mode;
    uint32_t table;  /* active only */
    pw_span offset;  /* active only: constant expression */
    pw_valtype type; /* element reference type */
    uint32_t count;
    /* Either function indices (exprs == NULL) or constant expressions. */
    uint32_t *funcs;
    pw_span *exprs;
} pw_elem;

typedef struct pw_data {
    pw_segmode mode; /* ACTIVE or PASSIVE */
    uint32_t memory;
    pw_span offset; /* active only */
    pw_span bytes;
} pw_data;

struct pw_cmodule; /* the back end's compiled code (compile.h) */

struct pw_module {
    uint8_t *bytes; /* owned copy of the binary; every pw_span points into it */
    size_t nbytes;
    size_t bytes_map; /* nonzero: bytes is a read-only mapping of that length (never
                         written), unmapped instead of freed */

    uint32_t ntypes;
    pw_deftype *types;

    uint32_t nimports;
    pw_import *imports;

    /* Index spaces: imports come first. func_types[i] is the type index of function i
     * (imported or defined); likewise for tables, memories, globals, tags. */
    uint32_t nfuncs, nfunc_imports;
    uint32_t *func_types;
    pw_funcdef *funcs; /* nfuncs - nfunc_imports defined functions */

    uint32_t ntables, ntable_imports;
    pw_table_def *tables; /* all tables; for imports only .type is meaningful */

    uint32_t nmems, nmem_imports;
    pw_limits *mems;

    uint32_t nglobals, nglobal_imports;
    pw_global_def *globals; /* for imports only .type is meaningful */

    uint32_t ntags, ntag_imports;
    uint32_t *tag_types; /* type index (a function type with no results) */

    uint32_t nexports;
    pw_export *exports;

    uint32_t start; /* UINT32_MAX when absent */

    uint32_t nelems;
    pw_elem *elems;

    uint32_t ndatas;
    pw_data *datas;
    bool has_datacount;

    /* Functions that may be referenced by ref.func outside of function bodies
     * (exports, elem segments, globals), as required by the validator. */
    uint8_t *func_declared; /* nfuncs flags */

    struct pw_cmodule *code; /* set by pw__compile_module */
};

/* decode.c: parse the binary into m (already zeroed, m->bytes set). On failure returns
 * PW_ERR_MALFORMED (or PW_ERR_INVALID for checks the spec places in validation but
 * that are convenient during decoding) with err filled. */
pw_status pw__decode(pw_module *m, pw_error *err);

/* decode.c: check the structure of the body of defined function i (opcodes,
 * immediates, nesting, size, data count use) without type-checking it. */
pw_status pw__scan_body(pw_module *m, uint32_t i, pw_error *err);

/* validate.c: validate everything decode did not: function bodies, constant
 * expressions, indices, limits, types. */
pw_status pw__validate(pw_module *m, pw_error *err);

/* module.c: release everything a module owns (the module itself too). */
void pw__module_destroy(pw_module *m);
/* module.c: the export named name (export names are unique), or NULL. */
const pw_export *pw__export_find(const pw_module *m, const char *name, size_t name_len);
/* module.c: the public view of function type t (pointers into t). */
void pw__functype_view(const pw_deftype *t, pw_functype *out);

/* Type helpers shared by validator, compiler and linker (types.c). */
const pw_deftype *pw__functype_of(const pw_module *m, uint32_t func_index);
/* Subtyping between value types of the same module (a <: b). Type indices inside
 * the types may be any of an equivalence class: comparisons go through `canon`. */
bool pw__valtype_sub(const pw_module *m, pw_valtype a, pw_valtype b);
/* Heap types (PW_VT_HEAP values) of the same module: a <: b. */
bool pw__heaptype_sub(const pw_module *m, uint32_t a, uint32_t b);
/* Defined types i, j of the same module: is i a (declared, transitive) subtype of j
 * or equivalent to it? */
bool pw__deftype_sub(const pw_module *m, uint32_t i, uint32_t j);
/* The top of heap type h's hierarchy (any, func, extern or exn) as a heap type. */
uint32_t pw__heaptype_top(const pw_module *m, uint32_t h);
/* Across modules (import matching, call_indirect with a table shared between
 * modules): is type i of module a iso-recursively equivalent to type j of module b?
 * Is type i of a a subtype of type j of b (a's supertype chain reaches a type
 * equivalent to j)? Both are exact Wasm 3.0 rules; they allocate a small work list
 * internally (false on allocation failure) and work for ma == mb too. Both modules
 * must have been validated. */
bool pw__deftype_equiv(const pw_module *ma, uint32_t i, const pw_module *mb, uint32_t j);
bool pw__deftype_sub_cross(const pw_module *ma, uint32_t i, const pw_module *mb, uint32_t j);
/* types.c, for validate.c: check the type section and compute canon/depth. */
pw_status pw__types_check(pw_module *m, pw_error *err);

/* Fill err (status, message) printf-style; returns st. NULL err: nothing is written. */
pw_status pw__fail(pw_error *err, pw_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
pw_status pw__failv(pw_error *err, pw_status st, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

#endif
