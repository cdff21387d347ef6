/*
 * test_simd.c — Wasm 3.0 features beyond the spec testsuite's reach through the public
 * API: v128 values crossing pw_call and a host function as two cells each (low half
 * first) with a following i32 in the right cell, a v128 global; memory64 bounds that
 * cannot be fooled by address wrap-around, memory.grow of a 64-bit delta refused;
 * multi-memory (two memories are distinct). Every test runs under the interpreter and
 * under the JIT tier (functions using these features stay on the interpreter there).
 *
 * The modules are hand-assembled binaries; their text form:
 *
 *   SIMD_MOD:
 *     (import "h" "id" (func (param v128 i32) (result v128)))
 *     (func (export "add") (param v128 v128) (result v128)
 *       (i32x4.add (local.get 0) (local.get 1)))
 *     (func (export "viahost") (param v128) (result v128)
 *       (call 0 (local.get 0) (i32.const 7)))
 *     (global (export "g") v128 (v128.const i32x4 1 2 3 4))
 *   MEM64_MOD:
 *     (memory $a i64 1) (memory $b 1)
 *     (func (export "ld") (param i64) (result i32) (i32.load $a (local.get 0)))
 *     (func (export "grow") (param i64) (result i64) (memory.grow $a (local.get 0)))
 *     (func (export "st1") (param i32 i32) (i32.store $b (local.get 0) (local.get 1)))
 *     (func (export "ld1") (param i32) (result i32) (i32.load $b (local.get 0)))
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "peri/wasm.h"

static const uint8_t SIMD_MOD[] = {
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x01, 0x12, 0x03, 0x60, 0x02, 0x7b, 0x7f, 0x01,
    0x7b, 0x60, 0x02, 0x7b, 0x7b, 0x01, 0x7b, 0x60, 0x01, 0x7b, 0x01, 0x7b, 0x02, 0x08, 0x01, 0x01,
    0x68, 0x02, 0x69, 0x64, 0x00, 0x00, 0x03, 0x03, 0x02, 0x01, 0x02, 0x06, 0x16, 0x01, 0x7b, 0x00,
    0xfd, 0x0c, 0x01, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x04, 0x00,
    0x00, 0x00, 0x0b, 0x07, 0x15, 0x03, 0x03, 0x61, 0x64, 0x64, 0x00, 0x01, 0x07, 0x76, 0x69, 0x61,
    0x68, 0x6f, 0x73, 0x74, 0x00, 0x02, 0x01, 0x67, 0x03, 0x00, 0x0a, 0x14, 0x02, 0x09, 0x00, 0x20,
    0x00, 0x20, 0x01, 0xfd, 0xae, 0x01, 0x0b, 0x08, 0x00, 0x20, 0x00, 0x41, 0x07, 0x10, 0x00, 0x0b};

static const uint8_t MEM64_MOD[] = {
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x01, 0x15, 0x04, 0x60, 0x01, 0x7e, 0x01, 0x7f,
    0x60, 0x01, 0x7e, 0x01, 0x7e, 0x60, 0x02, 0x7f, 0x7f, 0x00, 0x60, 0x01, 0x7f, 0x01, 0x7f, 0x03,
    0x05, 0x04, 0x00, 0x01, 0x02, 0x03, 0x05, 0x05, 0x02, 0x04, 0x01, 0x00, 0x01, 0x07, 0x19, 0x04,
    0x02, 0x6c, 0x64, 0x00, 0x00, 0x04, 0x67, 0x72, 0x6f, 0x77, 0x00, 0x01, 0x03, 0x73, 0x74, 0x31,
    0x00, 0x02, 0x03, 0x6c, 0x64, 0x31, 0x00, 0x03, 0x0a, 0x24, 0x04, 0x07, 0x00, 0x20, 0x00, 0x28,
    0x02, 0x00, 0x0b, 0x06, 0x00, 0x20, 0x00, 0x40, 0x00, 0x0b, 0x0a, 0x00, 0x20, 0x00, 0x20, 0x01,
    0x36, 0x42, 0x01, 0x00, 0x0b, 0x08, 0x00, 0x20, 0x00, 0x28, 0x42, 0x01, 0x00, 0x0b};

static pw_func *export_func(pw_instance *inst, const char *name) {
    pw_extern ex;
    assert_true(pw_instance_export(inst, name, strlen(name), &ex));
    assert_int_equal(ex.kind, PW_EXTERN_FUNC);
    return ex.u.func;
}

/* The host identity: checks that the i32 after the v128 is in the third cell. */
static pw_status host_id(pw_call_ctx *cx, void *env, const pw_val *args, pw_val *results) {
    (void)cx;
    int *calls = env;
    if (args[2].i32 != 7) return PW_ERR_TRAP;
    results[0] = args[0];
    results[1] = args[1];
    (*calls)++;
    return PW_OK;
}

typedef struct host {
    pw_func *id;
} host;

static bool resolve(void *ctx, pw_store *s, const pw_module *m, const pw_import_desc *imp,
                    pw_extern *out) {
    (void)s;
    (void)m;
    (void)imp;
    out->kind = PW_EXTERN_FUNC;
    out->u.func = ((host *)ctx)->id;
    return true;
}

static void run_simd(int engine) {
    pw_error err;
    pw_module *m = pw_module_new(SIMD_MOD, sizeof SIMD_MOD, NULL, &err);
    if (!m) fail_msg("module: %s", err.message);
    pw_store_config cfg = {.engine = engine};
    pw_store *s = pw_store_new(&cfg, &err);
    assert_non_null(s);
    static const pw_valtype params[] = {PW_VT_V128, PW_VT_I32}, results[] = {PW_VT_V128};
    pw_functype ft = {2, 1, params, results};
    int calls = 0;
    host h = {pw_func_new_host(s, &ft, host_id, &calls, &err)};
    assert_non_null(h.id);
    pw_instance *inst = pw_instantiate(s, m, resolve, &h, &err);
    if (!inst) fail_msg("instantiate: %s", err.message);

    /* i32x4 (1 2 3 4) + (10 20 30 40): four argument cells, two result cells */
    pw_val args[4] = {{.bits = 1 | 2ull << 32},
                      {.bits = 3 | 4ull << 32},
                      {.bits = 10 | 20ull << 32},
                      {.bits = 30 | 40ull << 32}};
    pw_val res[2] = {{0}, {0}};
    assert_int_equal(pw_call(s, export_func(inst, "add"), args, 4, res, 2, &err), PW_OK);
    assert_true(res[0].bits == (11 | 22ull << 32));
    assert_true(res[1].bits == (33 | 44ull << 32));
    /* counted in values, the call has the wrong arity */
    assert_int_equal(pw_call(s, export_func(inst, "add"), args, 2, res, 1, &err), PW_ERR_ARG);

    pw_val v[2] = {{.bits = 0x0123456789abcdefull}, {.bits = 0xfedcba9876543210ull}};
    assert_int_equal(pw_call(s, export_func(inst, "viahost"), v, 2, res, 2, &err), PW_OK);
    assert_int_equal(calls, 1);
    assert_true(res[0].bits == v[0].bits && res[1].bits == v[1].bits);

    pw_extern g;
    assert_true(pw_instance_export(inst, "g", 1, &g));
    assert_int_equal(g.kind, PW_EXTERN_GLOBAL);
    assert_true(pw_global_type(g.u.global) == PW_VT_V128);
    assert_true(pw_global_get(g.u.global).bits == (1 | 2ull << 32));
    assert_true(pw_global_get_hi(g.u.global) == (3 | 4ull << 32));
    pw_store_free(s);
    pw_module_free(m);
}

static void run_mem64(int engine) {
    pw_error err;
    pw_module *m = pw_module_new(MEM64_MOD, sizeof MEM64_MOD, NULL, &err);
    if (!m) fail_msg("module: %s", err.message);
    pw_store_config cfg = {.engine = engine};
    pw_store *s = pw_store_new(&cfg, &err);
    pw_instance *inst = pw_instantiate(s, m, NULL, NULL, &err);
    if (!inst) fail_msg("instantiate: %s", err.message);
    pw_func *ld = export_func(inst, "ld"), *grow = export_func(inst, "grow");
    pw_val a = {.i64 = 65532}, r = {0};
    assert_int_equal(pw_call(s, ld, &a, 1, &r, 1, &err), PW_OK);
    /* the last byte of the access one past the end; addresses that wrap around 2^64
     * with the access width or that only fit after truncation to 32 bits */
    static const uint64_t oob[] = {65533, UINT64_MAX, UINT64_MAX - 2, 1ull << 32, (1ull << 32) + 8};
    for (size_t i = 0; i < sizeof oob / sizeof oob[0]; i++) {
        a.bits = oob[i];
        assert_int_equal(pw_call(s, ld, &a, 1, &r, 1, &err), PW_ERR_TRAP);
        assert_int_equal(err.trap, PW_TRAP_MEM_OOB);
    }
    /* memory.grow: a delta that would wrap the page count is refused (-1) */
    a.bits = 1ull << 63;
    assert_int_equal(pw_call(s, grow, &a, 1, &r, 1, &err), PW_OK);
    assert_true(r.i64 == -1);
    a.bits = UINT64_MAX;
    assert_int_equal(pw_call(s, grow, &a, 1, &r, 1, &err), PW_OK);
    assert_true(r.i64 == -1);
    a.bits = 1;
    assert_int_equal(pw_call(s, grow, &a, 1, &r, 1, &err), PW_OK);
    assert_true(r.i64 == 1);
    a.bits = 65533;
    assert_int_equal(pw_call(s, ld, &a, 1, &r, 1, &err), PW_OK);

    /* multi-memory: a store to memory 1 is not seen in memory 0 */
    pw_val st[2] = {{.i32 = 8}, {.i32 = 0x1234}};
    assert_int_equal(pw_call(s, export_func(inst, "st1"), st, 2, NULL, 0, &err), PW_OK);
    pw_val i = {.i32 = 8};
    assert_int_equal(pw_call(s, export_func(inst, "ld1"), &i, 1, &r, 1, &err), PW_OK);
    assert_int_equal(r.i32, 0x1234);
    a.bits = 8;
    assert_int_equal(pw_call(s, ld, &a, 1, &r, 1, &err), PW_OK);
    assert_int_equal(r.i32, 0);
    pw_store_free(s);
    pw_module_free(m);
}

static void test_simd_interp(void **state) {
    (void)state;
    run_simd(PW_ENGINE_INTERP);
}
static void test_simd_jit(void **state) {
    (void)state;
    run_simd(PW_ENGINE_JIT);
}
static void test_mem64_interp(void **state) {
    (void)state;
    run_mem64(PW_ENGINE_INTERP);
}
static void test_mem64_jit(void **state) {
    (void)state;
    run_mem64(PW_ENGINE_JIT);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_simd_interp),
        cmocka_unit_test(test_simd_jit),
        cmocka_unit_test(test_mem64_interp),
        cmocka_unit_test(test_mem64_jit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
