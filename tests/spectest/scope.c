/*
 * scope.c — the runner's own additions to scope.json: scripts of its "later" stage
 * (SIMD, relaxed SIMD, memory64, multi-memory) that the engine now implements and
 * that pass under every tier. They run with scope wasm3, after the wasm3 list.
 *
 * Also the custom/ and legacy/ scripts (EXTRA), which scope.json does not list.
 *
 * scope.json belongs to the read-only data folder, so the stage of a script the
 * engine has caught up with is recorded here; a script is added only when it passes
 * with --engine interp and with --engine jit. Invariant: every name is in
 * scope.json's "later" list (others are ignored).
 */
#include "st.h"

#include <string.h>

static const char *const PROMOTED[] = {
    /* memory64, table64 and multi-memory (no SIMD) */
    "address0",
    "address1",
    "address64",
    "align0",
    "align64",
    "binary0",
    "binary_leb128_64",
    "bulk64",
    "call_indirect64",
    "data0",
    "data1",
    "data_drop0",
    "endianness64",
    "exports0",
    "float_exprs0",
    "float_exprs1",
    "float_memory0",
    "float_memory64",
    "imports0",
    "imports1",
    "imports2",
    "imports3",
    "imports4",
    "instance",
    "linking0",
    "linking1",
    "linking2",
    "linking3",
    "load0",
    "load1",
    "load2",
    "load64",
    "memory-multi",
    "memory64",
    "memory64-imports",
    "memory_copy0",
    "memory_copy1",
    "memory_copy64",
    "memory_fill0",
    "memory_fill64",
    "memory_grow",
    "memory_grow64",
    "memory_init0",
    "memory_init64",
    "memory_redundancy64",
    "memory_size0",
    "memory_size1",
    "memory_size2",
    "memory_size_import",
    "memory_trap0",
    "memory_trap1",
    "memory_trap64",
    "start0",
    "store0",
    "store1",
    "store2",
    "table64",
    "table_copy64",
    "table_copy_mixed",
    "table_fill64",
    "table_get64",
    "table_grow64",
    "table_init64",
    "table_set64",
    "table_size64",
    "traps0",
    /* SIMD and relaxed SIMD */
    "i16x8_relaxed_q15mulr_s",
    "i32x4_relaxed_trunc",
    "i8x16_relaxed_swizzle",
    "relaxed_dot_product",
    "relaxed_laneselect",
    "relaxed_madd_nmadd",
    "relaxed_min_max",
    "simd_address",
    "simd_align",
    "simd_bit_shift",
    "simd_bitwise",
    "simd_boolean",
    "simd_const",
    "simd_conversions",
    "simd_f32x4",
    "simd_f32x4_arith",
    "simd_f32x4_cmp",
    "simd_f32x4_pmin_pmax",
    "simd_f32x4_rounding",
    "simd_f64x2",
    "simd_f64x2_arith",
    "simd_f64x2_cmp",
    "simd_f64x2_pmin_pmax",
    "simd_f64x2_rounding",
    "simd_i16x8_arith",
    "simd_i16x8_arith2",
    "simd_i16x8_cmp",
    "simd_i16x8_extadd_pairwise_i8x16",
    "simd_i16x8_extmul_i8x16",
    "simd_i16x8_q15mulr_sat_s",
    "simd_i16x8_sat_arith",
    "simd_i32x4_arith",
    "simd_i32x4_arith2",
    "simd_i32x4_cmp",
    "simd_i32x4_dot_i16x8",
    "simd_i32x4_extadd_pairwise_i16x8",
    "simd_i32x4_extmul_i16x8",
    "simd_i32x4_trunc_sat_f32x4",
    "simd_i32x4_trunc_sat_f64x2",
    "simd_i64x2_arith",
    "simd_i64x2_arith2",
    "simd_i64x2_cmp",
    "simd_i64x2_extmul_i32x4",
    "simd_i8x16_arith",
    "simd_i8x16_arith2",
    "simd_i8x16_cmp",
    "simd_i8x16_sat_arith",
    "simd_int_to_int_extend",
    "simd_lane",
    "simd_linking",
    "simd_load",
    "simd_load16_lane",
    "simd_load32_lane",
    "simd_load64_lane",
    "simd_load8_lane",
    "simd_load_extend",
    "simd_load_splat",
    "simd_load_zero",
    "simd_memory-multi",
    "simd_select",
    "simd_splat",
    "simd_store",
    "simd_store16_lane",
    "simd_store32_lane",
    "simd_store64_lane",
    "simd_store8_lane",
};

bool st_scope_promoted(const char *name) {
    for (size_t i = 0; i < sizeof PROMOTED / sizeof PROMOTED[0]; i++)
        if (strcmp(PROMOTED[i], name) == 0) return true;
    return false;
}

/* The scripts outside scope.json's core lists (MANIFEST.md §3.1): the custom-section
 * and annotation scripts, and legacy exception handling. They run with scope wasm3,
 * after the core scripts. */
static const char *const EXTRA[] = {
    "custom/custom_annot", "custom/name_annot", "legacy/rethrow",
    "legacy/throw",        "legacy/try_catch",  "legacy/try_delegate",
};

size_t st_scope_extra(const char *const **names) {
    *names = EXTRA;
    return sizeof EXTRA / sizeof EXTRA[0];
}
