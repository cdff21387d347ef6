/*
 * interp.h — the internal instruction set shared by compile.c (which emits it) and
 * interp.c (which runs it).
 *
 * An instruction is one handler word followed by operand words, all uint32_t:
 *   slot operands   index of a 64-bit cell relative to the frame pointer
 *   immediates      32-bit values (64-bit ones take two words, low first)
 *   branch offsets  signed, in words, relative to the first word of the instruction
 * The operand layout of each group is given next to it. The handler word holds the
 * offset of the handler label from the interpreter's base label (direct threading
 * without absolute addresses in the code, so compiled code is position independent
 * and the same for every process).
 */
#ifndef PW_INTERP_H
#define PW_INTERP_H

/* i32 binary operators: X(NAME, expression over uint32_t a, b). */
#define PW_I32_BINOPS(X)                                                                           \
    X(ADD, a + b)                                                                                  \
    X(SUB, a - b)                                                                                  \
    X(MUL, a *b)                                                                                   \
    X(AND, a &b)                                                                                   \
    X(OR, a | b)                                                                                   \
    X(XOR, a ^ b)                                                                                  \
    X(SHL, a << (b & 31))                                                                          \
    X(SHR_S, (uint32_t)((int32_t)a >> (b & 31)))                                                   \
    X(SHR_U, a >> (b & 31))                                                                        \
    X(ROTL, (a << (b & 31)) | (a >> ((32 - (b & 31)) & 31)))                                       \
    X(ROTR, (a >> (b & 31)) | (a << ((32 - (b & 31)) & 31)))                                       \
    X(EQ, a == b)                                                                                  \
    X(NE, a != b)                                                                                  \
    X(LT_S, (int32_t)a < (int32_t)b)                                                               \
    X(LT_U, a < b)                                                                                 \
    X(GT_S, (int32_t)a > (int32_t)b)                                                               \
    X(GT_U, a > b)                                                                                 \
    X(LE_S, (int32_t)a <= (int32_t)b)                                                              \
    X(LE_U, a <= b)                                                                                \
    X(GE_S, (int32_t)a >= (int32_t)b)                                                              \
    X(GE_U, a >= b)

/* i64 binary operators over uint64_t a, b; compares give an i32. */
#define PW_I64_BINOPS(X)                                                                           \
    X(ADD, a + b)                                                                                  \
    X(SUB, a - b)                                                                                  \
    X(MUL, a *b)                                                                                   \
    X(AND, a &b)                                                                                   \
    X(OR, a | b)                                                                                   \
    X(XOR, a ^ b)                                                                                  \
    X(SHL, a << (b & 63))                                                                          \
    X(SHR_S, (uint64_t)((int64_t)a >> (b & 63)))                                                   \
    X(SHR_U, a >> (b & 63))                                                                        \
    X(ROTL, (a << (b & 63)) | (a >> ((64 - (b & 63)) & 63)))                                       \
    X(ROTR, (a >> (b & 63)) | (a << ((64 - (b & 63)) & 63)))

#define PW_I64_CMPOPS(X)                                                                           \
    X(EQ, a == b)                                                                                  \
    X(NE, a != b)                                                                                  \
    X(LT_S, (int64_t)a < (int64_t)b)                                                               \
    X(LT_U, a < b)                                                                                 \
    X(GT_S, (int64_t)a > (int64_t)b)                                                               \
    X(GT_U, a > b)                                                                                 \
    X(LE_S, (int64_t)a <= (int64_t)b)                                                              \
    X(LE_U, a <= b)                                                                                \
    X(GE_S, (int64_t)a >= (int64_t)b)                                                              \
    X(GE_U, a >= b)

/* Float binary operators: X(NAME, expression over float/double a, b). */
#define PW_F_ARITH(X)                                                                              \
    X(ADD, a + b)                                                                                  \
    X(SUB, a - b)                                                                                  \
    X(MUL, a *b)                                                                                   \
    X(DIV, a / b)

#define PW_F_CMP(X)                                                                                \
    X(EQ, a == b)                                                                                  \
    X(NE, a != b)                                                                                  \
    X(LT, a < b)                                                                                   \
    X(GT, a > b)                                                                                   \
    X(LE, a <= b)                                                                                  \
    X(GE, a >= b)

/* Loads: X(NAME, C type read, slot field written, conversion). Each also has an _A
 * form (dst a k off: address (a + k) mod 2^32) and an _R form (dst a b off: address
 * (a + b) mod 2^32), the i32.add that computes an address fused into the access;
 * stores likewise (a k val off / a b val off). */
#define PW_LOADS(X)                                                                                \
    X(I32_LOAD, uint32_t, u32, v)                                                                  \
    X(I64_LOAD, uint64_t, u64, v)                                                                  \
    X(F32_LOAD, uint32_t, u32, v)                                                                  \
    X(F64_LOAD, uint64_t, u64, v)                                                                  \
    X(I32_LOAD8_S, int8_t, i32, v)                                                                 \
    X(I32_LOAD8_U, uint8_t, u32, v)                                                                \
    X(I32_LOAD16_S, int16_t, i32, v)                                                               \
    X(I32_LOAD16_U, uint16_t, u32, v)                                                              \
    X(I64_LOAD8_S, int8_t, i64, v)                                                                 \
    X(I64_LOAD8_U, uint8_t, u64, v)                                                                \
    X(I64_LOAD16_S, int16_t, i64, v)                                                               \
    X(I64_LOAD16_U, uint16_t, u64, v)                                                              \
    X(I64_LOAD32_S, int32_t, i64, v)                                                               \
    X(I64_LOAD32_U, uint32_t, u64, v)

/* Stores: X(NAME, C type written, slot field read). */
#define PW_STORES(X)                                                                               \
    X(I32_STORE, uint32_t, u32)                                                                    \
    X(I64_STORE, uint64_t, u64)                                                                    \
    X(F32_STORE, uint32_t, u32)                                                                    \
    X(F64_STORE, uint64_t, u64)                                                                    \
    X(I32_STORE8, uint8_t, u32)                                                                    \
    X(I32_STORE16, uint16_t, u32)                                                                  \
    X(I64_STORE8, uint8_t, u64)                                                                    \
    X(I64_STORE16, uint16_t, u64)                                                                  \
    X(I64_STORE32, uint32_t, u64)

/* Unary operators with a plain expression: X(NAME, in field, out field, expr over a). */
#define PW_UNOPS(X)                                                                                \
    X(I32_EQZ, u32, u32, a == 0)                                                                   \
    X(I32_CLZ, u32, u32, a ? (uint32_t)__builtin_clz(a) : 32u)                                     \
    X(I32_CTZ, u32, u32, a ? (uint32_t)__builtin_ctz(a) : 32u)                                     \
    X(I32_POPCNT, u32, u32, (uint32_t)__builtin_popcount(a))                                       \
    X(I32_EXTEND8_S, u32, i32, (int8_t)a)                                                          \
    X(I32_EXTEND16_S, u32, i32, (int16_t)a)                                                        \
    X(I64_EQZ, u64, u32, a == 0)                                                                   \
    X(I64_CLZ, u64, u64, a ? (uint64_t)__builtin_clzll(a) : 64u)                                   \
    X(I64_CTZ, u64, u64, a ? (uint64_t)__builtin_ctzll(a) : 64u)                                   \
    X(I64_POPCNT, u64, u64, (uint64_t)__builtin_popcountll(a))                                     \
    X(I64_EXTEND8_S, u64, i64, (int8_t)a)                                                          \
    X(I64_EXTEND16_S, u64, i64, (int16_t)a)                                                        \
    X(I64_EXTEND32_S, u64, i64, (int32_t)a)                                                        \
    X(F32_ABS, u32, u32, a & 0x7fffffffu)                                                          \
    X(F32_NEG, u32, u32, a ^ 0x80000000u)                                                          \
    X(F32_CEIL, f32, f32, pw_ceilf(a))                                                             \
    X(F32_FLOOR, f32, f32, pw_floorf(a))                                                           \
    X(F32_TRUNC, f32, f32, pw_truncf(a))                                                           \
    X(F32_NEAREST, f32, f32, pw_nearbyintf(a))                                                     \
    X(F32_SQRT, f32, f32, pw_sqrtf(a))                                                             \
    X(F64_ABS, u64, u64, a & 0x7fffffffffffffffull)                                                \
    X(F64_NEG, u64, u64, a ^ 0x8000000000000000ull)                                                \
    X(F64_CEIL, f64, f64, pw_ceil(a))                                                              \
    X(F64_FLOOR, f64, f64, pw_floor(a))                                                            \
    X(F64_TRUNC, f64, f64, pw_trunc(a))                                                            \
    X(F64_NEAREST, f64, f64, pw_nearbyint(a))                                                      \
    X(F64_SQRT, f64, f64, pw_sqrt(a))                                                              \
    X(I32_WRAP_I64, u64, u32, (uint32_t)a)                                                         \
    X(I64_EXTEND_I32_S, u32, i64, (int32_t)a)                                                      \
    X(I64_EXTEND_I32_U, u32, u64, a)                                                               \
    X(F32_CONVERT_I32_S, i32, f32, (float)a)                                                       \
    X(F32_CONVERT_I32_U, u32, f32, (float)a)                                                       \
    X(F32_CONVERT_I64_S, i64, f32, (float)a)                                                       \
    X(F32_CONVERT_I64_U, u64, f32, (float)a)                                                       \
    X(F32_DEMOTE_F64, f64, f32, (float)a)                                                          \
    X(F64_CONVERT_I32_S, i32, f64, (double)a)                                                      \
    X(F64_CONVERT_I32_U, u32, f64, (double)a)                                                      \
    X(F64_CONVERT_I64_S, i64, f64, (double)a)                                                      \
    X(F64_CONVERT_I64_U, u64, f64, (double)a)                                                      \
    X(F64_PROMOTE_F32, f32, f64, (double)a)                                                        \
    X(I32_TRUNC_SAT_F32_S, f32, i32, pw_sat_i32(a))                                                \
    X(I32_TRUNC_SAT_F32_U, f32, u32, pw_sat_u32(a))                                                \
    X(I32_TRUNC_SAT_F64_S, f64, i32, pw_sat_i32(a))                                                \
    X(I32_TRUNC_SAT_F64_U, f64, u32, pw_sat_u32(a))                                                \
    X(I64_TRUNC_SAT_F32_S, f32, i64, pw_sat_i64(a))                                                \
    X(I64_TRUNC_SAT_F32_U, f32, u64, pw_sat_u64(a))                                                \
    X(I64_TRUNC_SAT_F64_S, f64, i64, pw_sat_i64(a))                                                \
    X(I64_TRUNC_SAT_F64_U, f64, u64, pw_sat_u64(a))

/* Trapping float -> int truncations: X(NAME, in field, out field, C type, lo, hi) where
 * the conversion is valid for lo < a < hi (exclusive bounds, exact in the float type). */
#define PW_TRUNCS(X)                                                                               \
    X(I32_TRUNC_F32_S, f32, i32, int32_t, -2147483904.0f, 2147483648.0f)                           \
    X(I32_TRUNC_F32_U, f32, u32, uint32_t, -1.0f, 4294967296.0f)                                   \
    X(I32_TRUNC_F64_S, f64, i32, int32_t, -2147483649.0, 2147483648.0)                             \
    X(I32_TRUNC_F64_U, f64, u32, uint32_t, -1.0, 4294967296.0)                                     \
    X(I64_TRUNC_F32_S, f32, i64, int64_t, -9223373136366403584.0f, 9223372036854775808.0f)         \
    X(I64_TRUNC_F32_U, f32, u64, uint64_t, -1.0f, 18446744073709551616.0f)                         \
    X(I64_TRUNC_F64_S, f64, i64, int64_t, -9223372036854777856.0, 9223372036854775808.0)           \
    X(I64_TRUNC_F64_U, f64, u64, uint64_t, -1.0, 18446744073709551616.0)

/* Every other instruction, with its operand layout. */
#define PW_MISC_OPS(X)                                                                             \
    X(UNREACHABLE)   /* */                                                                         \
    X(BR)            /* off */                                                                     \
    X(BR_IF)         /* cond off: jump when i32 cond != 0 */                                       \
    X(BR_IFZ)        /* cond off: jump when i32 cond == 0 */                                       \
    X(BR_IF64)       /* cond off: jump when i64/ref != 0 */                                        \
    X(BR_IF64Z)      /* cond off */                                                                \
    X(BR_TABLE)      /* idx n off[0..n] (off[n] is the default) */                                 \
    X(RETURN)        /* */                                                                         \
    X(CALL)          /* func argbase: defined function of this module */                           \
    X(CALL_IMPORT)   /* func argbase: through the instance's function table */                     \
    X(CALL_INDIRECT) /* type table idx argbase */                                                  \
    X(COPY)          /* dst src */                                                                 \
    X(COPY2)         /* dst src dst2 src2 */                                                       \
    X(CONST32)       /* dst imm */                                                                 \
    X(CONST64)       /* dst lo hi */                                                               \
    X(SELECT)        /* dst a b cond */                                                            \
    X(GLOBAL_GET)    /* dst idx */                                                                 \
    X(GLOBAL_SET)    /* idx src */                                                                 \
    X(I32_DIV_S)     /* dst a b */                                                                 \
    X(I32_DIV_U)                                                                                   \
    X(I32_REM_S)                                                                                   \
    X(I32_REM_U)                                                                                   \
    X(I64_DIV_S)                                                                                   \
    X(I64_DIV_U)                                                                                   \
    X(I64_REM_S)                                                                                   \
    X(I64_REM_U)                                                                                   \
    X(F32_MIN)                                                                                     \
    X(F32_MAX)                                                                                     \
    X(F32_COPYSIGN)                                                                                \
    X(F64_MIN)                                                                                     \
    X(F64_MAX)                                                                                     \
    X(F64_COPYSIGN)                                                                                \
    X(MEMORY_SIZE)        /* dst */                                                                \
    X(MEMORY_GROW)        /* dst delta */                                                          \
    X(MEMORY_FILL)        /* d v n */                                                              \
    X(MEMORY_COPY)        /* d s n */                                                              \
    X(MEMORY_INIT)        /* seg d s n */                                                          \
    X(DATA_DROP)          /* seg */                                                                \
    X(TABLE_GET)          /* dst table idx */                                                      \
    X(TABLE_SET)          /* table idx val */                                                      \
    X(TABLE_SIZE)         /* dst table */                                                          \
    X(TABLE_GROW)         /* dst table init n */                                                   \
    X(TABLE_FILL)         /* table i v n */                                                        \
    X(TABLE_COPY)         /* dtable stable d s n */                                                \
    X(TABLE_INIT)         /* table seg d s n */                                                    \
    X(ELEM_DROP)          /* seg */                                                                \
    X(REF_FUNC)           /* dst func */                                                           \
    X(REF_AS_NON_NULL)    /* src: trap when null */                                                \
    X(CALL_REF)           /* ref argbase */                                                        \
    X(TAIL_CALL)          /* func: arguments already in slots 0.. */                               \
    X(TAIL_CALL_IMPORT)   /* func */                                                               \
    X(TAIL_CALL_INDIRECT) /* type table idx */                                                     \
    X(TAIL_CALL_REF)      /* ref */                                                                \
    X(TRY)                /* skip n (kind tag dst off)*n: catch clauses, jumped over */            \
    X(THROW)              /* tag argbase */                                                        \
    X(THROW_REF)          /* exn */                                                                \
    X(XOP)                /* kind ...: one extension instruction (PW_XOPS below) */

/* Wasm 3.0 GC instructions (compile_gc.h emits them, interp_gc.h runs them). Struct
 * field offsets are byte offsets into the object's data; `vt` is a reference type
 * whose concrete heap type is a type index of the instance's module. */
#define PW_GC_OPS(X)                                                                               \
    X(STRUCT_NEW)         /* dst type argbase (allocates) */                                       \
    X(STRUCT_NEW_DEFAULT) /* dst type (allocates) */                                               \
    X(STRUCT_GET8S)       /* dst obj off */                                                        \
    X(STRUCT_GET8U)                                                                                \
    X(STRUCT_GET16S)                                                                               \
    X(STRUCT_GET16U)                                                                               \
    X(STRUCT_GET32)                                                                                \
    X(STRUCT_GET64)                                                                                \
    X(STRUCT_SET8) /* obj val off */                                                               \
    X(STRUCT_SET16)                                                                                \
    X(STRUCT_SET32)                                                                                \
    X(STRUCT_SET64)                                                                                \
    X(ARRAY_NEW)         /* dst type val len (allocates) */                                        \
    X(ARRAY_NEW_DEFAULT) /* dst type len (allocates) */                                            \
    X(ARRAY_NEW_FIXED)   /* dst type argbase n (allocates) */                                      \
    X(ARRAY_NEW_DATA)    /* dst type seg off len (allocates) */                                    \
    X(ARRAY_NEW_ELEM)    /* dst type seg off len (allocates) */                                    \
    X(ARRAY_GET8S)       /* dst arr idx */                                                         \
    X(ARRAY_GET8U)                                                                                 \
    X(ARRAY_GET16S)                                                                                \
    X(ARRAY_GET16U)                                                                                \
    X(ARRAY_GET32)                                                                                 \
    X(ARRAY_GET64)                                                                                 \
    X(ARRAY_SET8) /* arr idx val */                                                                \
    X(ARRAY_SET16)                                                                                 \
    X(ARRAY_SET32)                                                                                 \
    X(ARRAY_SET64)                                                                                 \
    X(ARRAY_LEN)       /* dst arr */                                                               \
    X(ARRAY_FILL)      /* arr d val n */                                                           \
    X(ARRAY_COPY)      /* darr d sarr s n */                                                       \
    X(ARRAY_INIT_DATA) /* seg arr d s n */                                                         \
    X(ARRAY_INIT_ELEM) /* seg arr d s n */                                                         \
    X(REF_I31)         /* dst src */                                                               \
    X(I31_GET_S)       /* dst src */                                                               \
    X(I31_GET_U)                                                                                   \
    X(REF_TEST)        /* dst src vt */                                                            \
    X(REF_CAST)        /* src vt: trap unless it matches */                                        \
    X(BR_ON_CAST)      /* src vt off: jump when it matches */                                      \
    X(BR_ON_CAST_FAIL) /* src vt off: jump when it does not match */

/* Extension instructions: memory64 and multi-memory accesses off the i32 memory 0
 * fast path, table64 index saturation, SIMD. They share one internal instruction,
 * XOP, whose second word is the kind, so the interpreter's dispatch loop gains one
 * handler (and one call to a noinline helper) for all of them: adding handlers to
 * run() perturbs gcc's register allocation of the hot loop. X(NAME, words
 * including the handler and kind words, operands after the kind word). */
#define PW_XOPS(X)                                                                                 \
    X(MEM_LOAD, 8)      /* dst addr mem wop off_lo off_hi: any memory but an i32 memory 0 */       \
    X(MEM_STORE, 8)     /* addr val mem wop off_lo off_hi (wop: the Wasm opcode) */                \
    X(MEMORY_SIZE_X, 4) /* dst mem: memory.size of any memory, as a 64-bit value */                \
    X(MEMORY_GROW_X, 5) /* dst mem delta */                                                        \
    X(MEMORY_FILL_X, 6) /* mem d v n */                                                            \
    X(MEMORY_COPY_X, 7) /* dmem smem d s n */                                                      \
    X(MEMORY_INIT_X, 7) /* mem seg d s n */                                                        \
    X(CLAMP32, 4)       /* dst src: an i64 table index as u32, saturated (table64) */              \
    X(SIMD, 11)         /* sub dst a b c x0 x1 x2 x3: one 0xFD instruction (simd.h) */

enum pw_xop {
#define PW_E_X(n, w) PW_XOP_##n,
    PW_XOPS(PW_E_X)
#undef PW_E_X
        PW_XOP_COUNT_
};

enum pw_iop {
#define PW_E_BIN(n, e) PW_OP_I32_##n, PW_OP_I32_##n##_I, PW_OP_BR_I32_##n, PW_OP_BR_I32_##n##_I,
    PW_I32_BINOPS(PW_E_BIN)
#undef PW_E_BIN
#define PW_E_BIN(n, e) PW_OP_I64_##n, PW_OP_I64_##n##_I,
        PW_I64_BINOPS(PW_E_BIN) PW_I64_CMPOPS(PW_E_BIN)
#undef PW_E_BIN
#define PW_E_F(n, e)  PW_OP_F32_##n, PW_OP_F64_##n,
#define PW_E_FA(n, e) PW_OP_F32_##n, PW_OP_F64_##n, PW_OP_F32_##n##_I, PW_OP_F64_##n##_I,
            PW_F_ARITH(PW_E_FA) PW_F_CMP(PW_E_F)
#undef PW_E_FA
#undef PW_E_F
#define PW_E_L(n, ...)  PW_OP_##n,
#define PW_E_LA(n, ...) PW_OP_##n, PW_OP_##n##_A, PW_OP_##n##_R,
                PW_LOADS(PW_E_LA) PW_STORES(PW_E_LA) PW_UNOPS(PW_E_L) PW_TRUNCS(PW_E_L)
#undef PW_E_L
#undef PW_E_LA
#define PW_E_M(n) PW_OP_##n,
                    PW_MISC_OPS(PW_E_M) PW_GC_OPS(PW_E_M)
#undef PW_E_M
                        PW_OP_COUNT_
};

#endif
