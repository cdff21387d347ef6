/*
 * test_gc.c — the Wasm 3.0 GC heap and collector (src/wasm/gc.c, gc_api.c) through
 * the public API, on the fixture gc/gc_test.wasm (gc_test.wat, built by gc/build.mjs):
 * bounded memory under churn, cycles collected, host handles, the memory cap ending a
 * run with PW_ERR_OOM, host allocation with roots, tail calls in constant space and
 * deep recursion over GC values ending in the stack-exhaustion trap.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <cmocka.h>

#include "peri/wasm.h"
#include "wasm/runtime.h" /* gc_stress, gc_nomap: white-box checks of the stack maps */

#ifndef PW_GC_FIXTURES
#error "PW_GC_FIXTURES must name the directory of gc_test.wasm"
#endif

typedef struct fixture {
    pw_module *m;
    pw_store *s;
    pw_instance *inst;
    uint32_t pair_t, bytes_t;
    long wrap_calls;
} fixture;

static uint8_t *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *p = malloc(n > 0 ? (size_t)n : 1);
    if (p && fread(p, 1, (size_t)n, f) != (size_t)n) {
        free(p);
        p = NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return p;
}

/* host.wrap(p): allocates a lot (collecting) while holding only its argument, then
 * returns a new pair {a = 100, b = p}. Each pair x is immediately referenced by the
 * next allocation's fields, which must keep x alive while allocating. */
static pw_status host_wrap(pw_call_ctx *cx, void *env, const pw_val *args, pw_val *results) {
    fixture *fx = env;
    fx->wrap_calls++;
    pw_store *s = pw_ctx_store(cx);
    pw_error err;
    for (int i = 0; i < 100000; i++) {
        pw_val f1[2] = {{.i64 = i}, {.ref = args[0].ref}};
        pw_ref x = pw_struct_new(s, fx->inst, fx->pair_t, f1, &err);
        if (!x) return err.status;
        pw_val f2[2] = {{.i64 = i + 1}, {.ref = x}};
        pw_ref y = pw_struct_new(s, fx->inst, fx->pair_t, f2, &err);
        if (!y) return err.status;
        pw_val v;
        if (!pw_struct_get(s, y, 1, false, &v) || v.ref != x) return pw_ctx_trap(cx, "y.b");
        if (!pw_struct_get(s, x, 0, false, &v) || v.i64 != i) return pw_ctx_trap(cx, "x.a");
    }
    pw_val f[2] = {{.i64 = 100}, {.ref = args[0].ref}};
    results[0].ref = pw_struct_new(s, fx->inst, fx->pair_t, f, &err);
    return results[0].ref ? PW_OK : err.status;
}

static bool resolve(void *ctx, pw_store *s, const pw_module *m, const pw_import_desc *d,
                    pw_extern *out) {
    if (d->name_len != 4 || memcmp(d->name, "wrap", 4) != 0) return false;
    out->kind = PW_EXTERN_FUNC;
    out->u.func = pw_func_new_host_for_import(s, m, d->index, host_wrap, ctx, NULL);
    return out->u.func != NULL;
}

static uint32_t global_heap_type(pw_instance *inst, const char *name) {
    pw_extern ex;
    assert_true(pw_instance_export(inst, name, strlen(name), &ex));
    return PW_VT_HEAP(pw_global_type(ex.u.global));
}

static fixture *setup_cap(uint64_t cap) {
    fixture *fx = calloc(1, sizeof *fx);
    assert_non_null(fx);
    size_t len = 0;
    uint8_t *bytes = read_file(PW_GC_FIXTURES "/gc_test.wasm", &len);
    assert_non_null(bytes);
    pw_error err;
    fx->m = pw_module_new(bytes, len, NULL, &err);
    free(bytes);
    if (!fx->m) fail_msg("module: %s", err.message);
    pw_store_config cfg = {.memory_cap = cap};
    fx->s = pw_store_new(&cfg, &err);
    assert_non_null(fx->s);
    fx->inst = pw_instantiate(fx->s, fx->m, resolve, fx, &err);
    if (!fx->inst) fail_msg("instantiate: %s", err.message);
    fx->pair_t = global_heap_type(fx->inst, "pair_type");
    fx->bytes_t = global_heap_type(fx->inst, "bytes_type");
    return fx;
}

static void teardown_fx(fixture *fx) {
    pw_store_free(fx->s);
    pw_module_free(fx->m);
    free(fx);
}

static pw_status call(fixture *fx, const char *name, const pw_val *args, uint32_t nargs,
                      pw_val *res, uint32_t nres, pw_error *err) {
    pw_extern ex;
    assert_true(pw_instance_export(fx->inst, name, strlen(name), &ex));
    return pw_call(fx->s, ex.u.func, args, nargs, res, nres, err);
}

/* 10^7 short-lived structs with a live set of 100,000: the heap stays within a small
 * multiple of the live set. */
static void test_churn_bounded(void **state) {
    (void)state;
    fixture *fx = setup_cap(0);
    pw_error err;
    const uint32_t n = 10000000, keep = 100000;
    pw_val args[2] = {{.i32 = (int32_t)n}, {.i32 = (int32_t)keep}}, r;
    assert_int_equal(call(fx, "churn", args, 2, &r, 1, &err), PW_OK);
    assert_int_equal(r.i64, (int64_t)n * (n - 1) / 2);
    pw_store_gc(fx->s); /* the live set is still held by a global */
    pw_gc_stats st;
    pw_store_gc_stats(fx->s, &st);
    assert_true(st.live_bytes >= (uint64_t)keep * 32);
    assert_true(st.collections >= 10);
    assert_true(st.peak_bytes <= st.live_bytes * 5 / 2);
    assert_int_equal(call(fx, "drop_keep", NULL, 0, NULL, 0, &err), PW_OK);
    pw_store_gc(fx->s);
    pw_store_gc_stats(fx->s, &st);
    assert_int_equal(st.live_bytes, 0);
    teardown_fx(fx);
}

static void test_cycle_collected(void **state) {
    (void)state;
    fixture *fx = setup_cap(0);
    pw_error err;
    pw_val r;
    assert_int_equal(call(fx, "make_cycle", NULL, 0, NULL, 0, &err), PW_OK);
    pw_store_gc(fx->s);
    pw_gc_stats st;
    pw_store_gc_stats(fx->s, &st);
    uint64_t two = st.live_bytes;
    assert_true(two > 0);
    assert_int_equal(call(fx, "cycle_sum", NULL, 0, &r, 1, &err), PW_OK);
    assert_int_equal(r.i64, 3);
    assert_int_equal(call(fx, "drop_cycle", NULL, 0, NULL, 0, &err), PW_OK);
    pw_store_gc(fx->s);
    pw_store_gc_stats(fx->s, &st);
    assert_int_equal(st.live_bytes, 0);
    teardown_fx(fx);
}

static void test_handles(void **state) {
    (void)state;
    fixture *fx = setup_cap(0);
    pw_error err;
    pw_val a = {.i64 = 77}, r;
    assert_int_equal(call(fx, "new_pair", &a, 1, &r, 1, &err), PW_OK);
    pw_handle h = pw_handle_new(fx->s, r.ref, &err);
    assert_int_not_equal(h, 0);
    assert_int_equal(pw_ref_kind_of(r.ref), PW_REF_STRUCT);
    /* churn enough to collect many times; the handle keeps the pair alive */
    pw_val args[2] = {{.i32 = 1000000}, {.i32 = 10}};
    assert_int_equal(call(fx, "churn", args, 2, &r, 1, &err), PW_OK);
    assert_int_equal(call(fx, "drop_keep", NULL, 0, NULL, 0, &err), PW_OK);
    pw_store_gc(fx->s);
    pw_gc_stats st;
    pw_store_gc_stats(fx->s, &st);
    assert_true(st.live_bytes > 0);
    pw_val arg = {.ref = pw_handle_get(fx->s, h)};
    assert_int_equal(call(fx, "pair_a", &arg, 1, &r, 1, &err), PW_OK);
    assert_int_equal(r.i64, 77);
    pw_handle_free(fx->s, h);
    assert_int_equal(pw_handle_get(fx->s, h), PW_NULL_REF);
    pw_store_gc(fx->s);
    pw_store_gc_stats(fx->s, &st);
    assert_int_equal(st.live_bytes, 0);
    /* a freed handle cell is reused */
    assert_int_equal(pw_handle_new(fx->s, pw_i31_new(5), &err), h);
    assert_int_equal(pw_i31_get_u(pw_handle_get(fx->s, h)), 5);
    teardown_fx(fx);
}

static void test_cap_oom(void **state) {
    (void)state;
    fixture *fx = setup_cap((uint64_t)16 << 20);
    pw_error err;
    pw_val r;
    assert_int_equal(call(fx, "hoard", NULL, 0, &r, 1, &err), PW_ERR_OOM);
    assert_int_equal(err.status, PW_ERR_OOM);
    pw_gc_stats st;
    pw_store_gc_stats(fx->s, &st);
    assert_true(st.peak_bytes <= (uint64_t)16 << 20);
    /* the hoard is garbage now: the store keeps working */
    pw_val a = {.i64 = 5};
    assert_int_equal(call(fx, "new_pair", &a, 1, &r, 1, &err), PW_OK);
    pw_store_gc(fx->s);
    pw_store_gc_stats(fx->s, &st);
    assert_true(st.live_bytes < 4096);
    teardown_fx(fx);
}

static void test_host_alloc(void **state) {
    (void)state;
    fixture *fx = setup_cap(0);
    pw_error err;
    pw_val a = {.i64 = 7}, r;
    assert_int_equal(call(fx, "call_wrap", &a, 1, &r, 1, &err), PW_OK);
    assert_int_equal(r.i64, 107);
    assert_int_equal(fx->wrap_calls, 1);
    pw_gc_stats st;
    pw_store_gc_stats(fx->s, &st);
    assert_true(st.collections > 0);

    /* i8 arrays from bytes, read by Wasm and by the host */
    const uint8_t text[] = "hello, gc";
    pw_ref b = pw_array_new_bytes(fx->s, fx->inst, fx->bytes_t, text, 9, &err);
    assert_true(b != PW_NULL_REF);
    uint32_t len = 0;
    uint8_t *p = pw_array_bytes(b, &len);
    assert_int_equal(len, 9);
    assert_memory_equal(p, text, 9);
    pw_val arg = {.ref = b};
    assert_int_equal(call(fx, "bytes_sum", &arg, 1, &r, 1, &err), PW_OK);
    uint32_t sum = 0;
    for (int i = 0; i < 9; i++)
        sum += text[i];
    assert_int_equal((uint32_t)r.i32, sum);
    assert_int_equal(pw_array_len(b), 9);
    pw_val v;
    assert_true(pw_array_get(b, 0, false, &v));
    assert_int_equal(v.i32, 'h');
    assert_false(pw_array_get(b, 9, false, &v));

    /* structs of a module type; wrong kinds are refused */
    pw_val f[2] = {{.i64 = -3}, {.ref = PW_NULL_REF}};
    pw_ref st1 = pw_struct_new(fx->s, fx->inst, fx->pair_t, f, &err);
    assert_int_equal(pw_struct_field_count(fx->s, st1), 2);
    assert_true(pw_struct_get(fx->s, st1, 0, false, &v));
    assert_int_equal(v.i64, -3);
    assert_true(pw_ref_test_type(fx->s, fx->inst, st1, fx->pair_t));
    assert_false(pw_ref_test_type(fx->s, fx->inst, b, fx->pair_t));
    assert_int_equal(pw_struct_new(fx->s, fx->inst, fx->bytes_t, NULL, &err), PW_NULL_REF);
    assert_int_equal(err.status, PW_ERR_ARG);

    /* i31 */
    assert_int_equal(pw_i31_get_s(pw_i31_new((uint32_t)-5)), -5);
    assert_int_equal(pw_i31_get_u(pw_i31_new(0x7fffffffu)), 0x7fffffffu);
    assert_int_equal(pw_ref_kind_of(pw_i31_new(1)), PW_REF_I31);
    teardown_fx(fx);
}

/* Exception packages are collected: 300,000 throws in a bounded heap. */
static void test_exceptions_collected(void **state) {
    (void)state;
    fixture *fx = setup_cap(0);
    pw_error err;
    const int32_t n = 300000;
    pw_val a = {.i32 = n}, r;
    assert_int_equal(call(fx, "throw_loop", &a, 1, &r, 1, &err), PW_OK);
    assert_int_equal(r.i64, (int64_t)n * (n - 1) / 2);
    pw_gc_stats st;
    pw_store_gc_stats(fx->s, &st);
    assert_true(st.collections > 0);
    assert_true(st.peak_bytes < (uint64_t)8 << 20);
    pw_store_gc(fx->s);
    pw_store_gc_stats(fx->s, &st);
    assert_int_equal(st.live_bytes, 0);
    teardown_fx(fx);
}

/* A collection at every allocation: every allocation site and every call site on the
 * stack must have a precise map (gc_nomap stays 0) and nothing live may be freed (the
 * results are checked; ASan catches use after free). */
static void test_stress_every_allocation(void **state) {
    (void)state;
    fixture *fx = setup_cap(0);
    fx->s->gc_stress = true;
    pw_error err;
    pw_val r;
    pw_val a2[2] = {{.i32 = 20000}, {.i32 = 50}};
    assert_int_equal(call(fx, "churn", a2, 2, &r, 1, &err), PW_OK);
    assert_int_equal(r.i64, (int64_t)20000 * 19999 / 2);
    pw_val d[2] = {{.i32 = 2000}, {.ref = PW_NULL_REF}};
    assert_int_equal(call(fx, "deep", d, 2, &r, 1, &err), PW_OK);
    assert_int_equal(r.i64, (int64_t)2000 * 2001 / 2);
    pw_val t = {.i32 = 3000};
    assert_int_equal(call(fx, "throw_loop", &t, 1, &r, 1, &err), PW_OK);
    assert_int_equal(r.i64, (int64_t)3000 * 2999 / 2);
    pw_val w = {.i64 = 9};
    assert_int_equal(call(fx, "call_wrap", &w, 1, &r, 1, &err), PW_OK);
    assert_int_equal(r.i64, 109);
    assert_int_equal(call(fx, "make_cycle", NULL, 0, NULL, 0, &err), PW_OK);
    assert_int_equal(call(fx, "cycle_sum", NULL, 0, &r, 1, &err), PW_OK);
    assert_int_equal(r.i64, 3);
    pw_gc_stats st;
    pw_store_gc_stats(fx->s, &st);
    assert_true(st.collections > 200000);
    assert_int_equal(fx->s->gc_nomap, 0);
    teardown_fx(fx);
}

static long maxrss_kb(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

static void test_tail_calls_constant_space(void **state) {
    (void)state;
    fixture *fx = setup_cap(0);
    pw_error err;
    long before = maxrss_kb();
    pw_val args[2] = {{.i64 = 100000000}, {.i64 = 0}}, r;
    assert_int_equal(call(fx, "count", args, 2, &r, 1, &err), PW_OK);
    assert_int_equal(r.i64, 100000000);
    assert_true(maxrss_kb() - before < 8 * 1024);
    teardown_fx(fx);
}

static void test_deep_recursion(void **state) {
    (void)state;
    fixture *fx = setup_cap(0);
    pw_error err;
    /* 95,000 frames (under the default 100,000 limit), each allocating: collections
     * run with the whole chain reachable only from frame slots. */
    pw_val args[2] = {{.i32 = 95000}, {.ref = PW_NULL_REF}}, r;
    assert_int_equal(call(fx, "deep", args, 2, &r, 1, &err), PW_OK);
    assert_int_equal(r.i64, (int64_t)95000 * 95001 / 2);
    pw_gc_stats st;
    pw_store_gc_stats(fx->s, &st);
    assert_true(st.collections > 0);
    args[0].i32 = 1000000;
    assert_int_equal(call(fx, "deep", args, 2, &r, 1, &err), PW_ERR_TRAP);
    assert_int_equal(err.trap, PW_TRAP_STACK_EXHAUSTED);
    teardown_fx(fx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_churn_bounded),
        cmocka_unit_test(test_cycle_collected),
        cmocka_unit_test(test_handles),
        cmocka_unit_test(test_cap_oom),
        cmocka_unit_test(test_host_alloc),
        cmocka_unit_test(test_exceptions_collected),
        cmocka_unit_test(test_stress_every_allocation),
        cmocka_unit_test(test_tail_calls_constant_space),
        cmocka_unit_test(test_deep_recursion),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
