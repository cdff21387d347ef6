/*
 * instr.h — decoding one instruction (opcode + immediates) and the value/heap/block
 * types of the binary format. Shared by the decoder (structure scan of function
 * bodies), the validator and the compiler, so that immediates are parsed in one place.
 *
 * Nothing here allocates. Type indices are returned as written (module-relative, not
 * canonicalised and not yet checked against the type count: that is validation).
 */
#ifndef PW_INSTR_H
#define PW_INSTR_H

#include "wasm/reader.h"

/* Opcodes of prefixed instructions are (prefix << 8) | subopcode for 0xFB and 0xFC
 * (subopcodes < 256); SIMD 0xFD instructions are PW_OP_FD(sub) (simd.h), as relaxed
 * SIMD's subopcodes reach 0x113. */
#define PW_OP_FB(sub) (0xFB00u | (sub))
#define PW_OP_FC(sub) (0xFC00u | (sub))

/* Block type kinds. */
enum { PW_BT_EMPTY = 0, PW_BT_VAL = 1, PW_BT_TYPE = 2 };

/* Heap type used only by the validator: the heap type of a reference popped from an
 * unreachable (polymorphic) stack. Never produced by decoding. */
#define PW_HT_BOT 0x7F

/* The largest type index a pw_valtype can carry (24-bit heap field, minus the
 * abstract flag). Larger indices are clamped to it and are then unknown. */
#define PW_TYPEIDX_MAX (PW_HT_ABS - 1u)

typedef struct pw_instr {
    uint32_t op;
    uint32_t a, b;      /* index immediates, in the order they are encoded
                           (call_indirect: a = type, b = table; memarg: a = memory) */
    uint32_t align;     /* memarg: log2 of the alignment */
    uint64_t offset;    /* memarg offset */
    uint64_t bits;      /* i32/i64 const (sign-extended), f32/f64 const bit pattern */
    pw_valtype t1, t2;  /* block value type; select type; ref.null / ref.test / ref.cast
                           (as a reference type); br_on_cast source and target */
    uint8_t bt;         /* PW_BT_* for block, loop, if, try_table (type index in a) */
    uint32_t n;         /* br_table: number of targets (default excluded); try_table:
                           number of catch clauses; select t*: number of types */
    const uint8_t *vec; /* br_table targets / try_table catch clauses, re-readable */
} pw_instr;

/* Read one instruction at r->p. On success r->p is past it. Errors are MALFORMED.
 * Only the fields the opcode uses are written; the others keep stale values. */
bool pw__instr_read(pw_reader *r, pw_instr *in);

bool pw__rd_valtype(pw_reader *r, pw_valtype *out);
bool pw__rd_reftype(pw_reader *r, pw_valtype *out);
bool pw__rd_heaptype(pw_reader *r, uint32_t *heap);

/* One try_table catch clause (re-read from pw_instr.vec). */
typedef struct pw_catch {
    uint8_t kind; /* 0 catch, 1 catch_ref, 2 catch_all, 3 catch_all_ref */
    uint32_t tag, label;
} pw_catch;
bool pw__rd_catch(pw_reader *r, pw_catch *c);

#endif
