/*
 * gc.h — the Wasm 3.0 GC heap (internal to src/wasm/): struct and array objects,
 * their layouts, allocation, the precise mark-sweep collector, casts.
 *
 * Objects are laid out for direct field access: a struct is its pw_obj header
 * followed by its fields, each at a fixed byte offset computed once per module type
 * at compile time (packed i8/i16 take 1/2 bytes, i32/f32 4, i64/f64/references 8,
 * naturally aligned); an array is the header, its length and its elements inline.
 * i31 values are not objects: they are tagged references (low bit 1).
 *
 * GC objects live in their own heap (pw_store.gc_heap, gc_heap.c), apart from the store
 * objects (functions, instances, tables, host references, exception packages), which
 * are never collected and are freed with the store. The collector is non-moving, so
 * references held in slots never need updating.
 */
#ifndef PW_GC_H
#define PW_GC_H

#include "wasm/runtime.h"

#include <string.h>

/* Storage kinds of fields and array elements. */
enum { PW_GK_I8 = 0, PW_GK_I16, PW_GK_I32, PW_GK_I64, PW_GK_REF };

/* The layout of one struct or array type of a module (compile time, immutable). */
typedef struct pw_gclayout {
    uint32_t size;    /* struct: bytes of field data; array: element size */
    uint32_t nfields; /* struct only */
    uint8_t *kind;    /* struct: per field; array: kind[0] is the element kind */
    uint32_t *off;    /* struct: byte offset of each field in the data */
    uint32_t nrefs;   /* struct: reference fields */
    uint32_t *refoff; /* their offsets */
    bool all8;        /* struct: every field is 8 bytes, field i at offset 8 * i */
} pw_gclayout;

typedef struct pw_struct {
    pw_obj hdr; /* hdr.type_id: store type id */
    uint8_t data[];
} pw_struct;

typedef struct pw_array {
    pw_obj hdr;   /* hdr.flags: element kind (PW_GK_*) */
    uint32_t len; /* elements */
    uint32_t esize;
    uint8_t data[];
} pw_array;

/* The heap (gc_heap.c): small objects in size-class blocks, large ones malloc'd. */
#define PW_GC_NCLASS   16
#define PW_GC_CELL_MAX (PW_GC_NCLASS * 16)
typedef struct pw_gcheap {
    struct pw_gcblock *blocks[PW_GC_NCLASS];
    pw_obj *free[PW_GC_NCLASS]; /* free cells per class */
    pw_obj *large;              /* large objects, linked by hdr.next */
    uint64_t reserved;          /* bytes held: blocks + large objects */
    const pw_gclayout **lay;    /* struct layout by store type id (for tracing) */
    uint32_t nlay;
} pw_gcheap;

pw_gcheap *pw__gcheap_new(void);
void pw__gcheap_free(pw_gcheap *h);
uint64_t pw__gcheap_cost(size_t bytes);
bool pw__gcheap_fits(const pw_store *s, const pw_gcheap *h, size_t bytes);
pw_obj *pw__gcheap_alloc(pw_store *s, pw_gcheap *h, size_t bytes); /* zeroed; NULL: cap */
uint64_t pw__gcheap_sweep(pw_store *s, pw_gcheap *h,
                          uint64_t (*large_bytes)(const pw_gcheap *, const pw_obj *),
                          bool keep_all);
void pw__gcheap_each(pw_gcheap *h, void (*fn)(void *ctx, pw_obj *o), void *ctx);

/* A precise stack map site: code index (in its function's code) of the word right
 * after a call or allocating instruction, and where its slot list starts in
 * pw_cfunc.gc_maps ([n, slot...]). */
typedef struct pw_gcsite {
    uint32_t pc, map;
} pw_gcsite;

/* Host arguments/results of a running host call: roots for the collector. */
typedef struct pw_hostroots {
    pw_slot *args;
    const pw_func *f;
    struct pw_hostroots *prev;
} pw_hostroots;

/* The layout of module type idx (NULL unless a struct/array type). */
static inline const pw_gclayout *pw_gc_layout(const pw_module *m, uint32_t idx) {
    return m->code && m->code->gc_layouts ? &m->code->gc_layouts[idx] : NULL;
}

/* compile_gc: build the layouts of every struct/array type of m (into cm). */
bool pw__gc_build_layouts(const pw_module *m, struct pw_cmodule *cm);
void pw__gc_free_layouts(struct pw_cmodule *cm);

/* gc.c: allocation. The interpreter passes its current frame (pc just after the
 * allocating instruction, fp, instance) so the collector can scan it; host API callers
 * pass NULL pc. On failure (memory cap reached after a full collection, or the host
 * allocator failed) returns NULL and the caller ends the run with PW_ERR_OOM. */
typedef struct pw_gcframe {
    const uint32_t *pc;
    pw_slot *fp;
    pw_instance *inst;
    /* Optional extra roots (host API: the values being stored into the new object):
     * extra[i] is a reference when extra_kind[i == 0 || !extra_same ? i : 0] is
     * PW_GK_REF. */
    const pw_val *extra;
    const uint8_t *extra_kind;
    uint32_t nextra;
    bool extra_same;
    const pw_valtype *extra_vt; /* instead of extra_kind: value types of extra[] */
} pw_gcframe;

pw_struct *pw__gc_new_struct(pw_store *s, pw_instance *inst, uint32_t typeidx,
                             const pw_gcframe *cur);
pw_array *pw__gc_new_array(pw_store *s, pw_instance *inst, uint32_t typeidx, uint32_t len,
                           const pw_gcframe *cur);
/* An exception package (exnref) for tag with the payload vals (tag->nparams cells,
 * roots during the allocation); NULL when out of memory. */
pw_exn *pw__gc_new_exn(pw_store *s, pw_tag *tag, const pw_slot *vals, const pw_gcframe *cur);
/* Run a full collection now. */
void pw__gc_collect(pw_store *s, const pw_gcframe *cur);
/* Free every GC object (pw_store_free). */
void pw__gc_free_all(pw_store *s);

/* Field access: a field or element of storage kind `kind` at p, stored from or
 * loaded into a slot (i8/i16 zero- or sign-extended to 32 bits). The inline forms
 * serve the interpreter's struct and array get/set handlers (interp_gc.h), whose
 * constant kinds fold each to one load or store; the out-of-line pw__gc_store_field
 * and pw__gc_load_field (gc.c) serve a layout's run-time kind (host API, allocation
 * loops), so the interpreter's loop does not inline that switch. */
static inline void pw__gc_field_put(uint8_t *p, uint8_t kind, pw_slot v) {
    switch (kind) {
    case PW_GK_I8: *p = (uint8_t)v.u32; break;
    case PW_GK_I16: {
        uint16_t x = (uint16_t)v.u32;
        memcpy(p, &x, 2);
        break;
    }
    case PW_GK_I32: memcpy(p, &v.u32, 4); break;
    default: memcpy(p, &v.u64, 8); break;
    }
}

static inline pw_slot pw__gc_field_get(const uint8_t *p, uint8_t kind, bool sign) {
    pw_slot v = {.u64 = 0};
    switch (kind) {
    case PW_GK_I8: v.u32 = sign ? (uint32_t)(int32_t)(int8_t)*p : *p; break;
    case PW_GK_I16: {
        uint16_t x;
        memcpy(&x, p, 2);
        v.u32 = sign ? (uint32_t)(int32_t)(int16_t)x : x;
        break;
    }
    case PW_GK_I32: memcpy(&v.u32, p, 4); break;
    default: memcpy(&v.u64, p, 8); break;
    }
    return v;
}

void pw__gc_store_field(uint8_t *p, uint8_t kind, pw_slot v);
pw_slot pw__gc_load_field(const uint8_t *p, uint8_t kind, bool sign);

/* Does reference r match reference type t (heap type relative to inst's module)? */
bool pw__gc_ref_test(pw_store *s, pw_instance *inst, pw_ref r, pw_valtype t);
/* The same, with the common case inline: an object of exactly the target type. */
static inline bool pw_gc_ref_test_fast(pw_store *s, pw_instance *inst, pw_ref r, pw_valtype t) {
    uint32_t h = PW_VT_HEAP(t);
    if (r && !(r & 1) && !(h & PW_HT_ABS) && ((const pw_obj *)r)->type_id == inst->type_ids[h])
        return true;
    return pw__gc_ref_test(s, inst, r, t);
}

/* Array bulk operations; return a trap code or PW_TRAP_NONE. */
pw_trap_code pw__gc_array_fill(pw_array *a, uint32_t d, pw_slot v, uint32_t n);
pw_trap_code pw__gc_array_copy(pw_array *da, uint32_t d, pw_array *sa, uint32_t si, uint32_t n);
pw_trap_code pw__gc_array_init_data(pw_instance *inst, pw_array *a, uint32_t seg, uint32_t d,
                                    uint32_t si, uint32_t n);
pw_trap_code pw__gc_array_init_elem(pw_instance *inst, pw_array *a, uint32_t seg, uint32_t d,
                                    uint32_t si, uint32_t n);
/* array.new_data / array.new_elem: *out set on success; PW_TRAP_NONE or a trap, or
 * PW_TRAP_COUNT_ for allocation failure (OOM). */
pw_trap_code pw__gc_array_new_data(pw_store *s, pw_instance *inst, uint32_t typeidx, uint32_t seg,
                                   uint32_t off, uint32_t len, const pw_gcframe *cur,
                                   pw_array **out);
pw_trap_code pw__gc_array_new_elem(pw_store *s, pw_instance *inst, uint32_t typeidx, uint32_t seg,
                                   uint32_t off, uint32_t len, const pw_gcframe *cur,
                                   pw_array **out);

/* gc_api.c: evaluate a GC instruction of a constant expression on the evaluator's
 * stack st[*sp] (room for 64). 1: done; 0: not a GC instruction; -1: failed (err). */
struct pw_instr;
int pw__gc_const_op(pw_instance *inst, const struct pw_instr *in, pw_slot *st, uint32_t *sp,
                    pw_error *err);

/* The stack map of cf's call site whose resume point is word pc of its internal code,
 * or NULL (gc.c: the GC's frame walk; jit.c: which pins a direct call must store). */
const pw_gcsite *pw__gc_site(const pw_cfunc *cf, uint32_t pc);

#endif
