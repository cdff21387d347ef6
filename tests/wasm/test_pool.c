/*
 * test_pool.c — the mapping pool (pw_pool): a memory handed to a new store reads as
 * zero wherever an earlier store wrote (also after memory.grow, and after a store in
 * between that grew less far); stores with a pool give the same memory.grow results
 * as without one (declared maximum, memory cap, fatal cap, a reservation larger than
 * the new store's cap); pooled stacks still trap deep recursion; the collector is not
 * misled by what an earlier store left on pooled stacks (GC fixture under stress, and
 * ASan); what a pool keeps is bounded; a pool freed while stores still use it is safe;
 * every value and frame stack, fresh or pooled, lies between two inaccessible guards,
 * and giving a stack back unmaps all of it, guards included.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "pt_fault.h"

#include "peri/wasm.h"
#include "wasm/runtime.h" /* pw__pool_stats: white-box checks of what the pool keeps */
#include "wasm_builder.h"

#define PAGE 65536u

/* (memory (export "mem") MIN MAX?) (func (export "grow") (param i32) (result i32)
 *   (memory.grow (local.get 0)))   — built by grow_module; caller frees the bytes. */
static wb grow_module(uint32_t min, int64_t max) {
    wb b = {0}, sec = {0};
    wb_header(&b);
    static const uint8_t type[] = {0x01, 0x60, 0x01, 0x7f, 0x01, 0x7f};
    wb_bytes(&sec, type, sizeof type);
    wb_section(&b, 1, &sec);
    sec.n = 0;
    wb_bytes(&sec, "\x01\x00", 2);
    wb_section(&b, 3, &sec);
    sec.n = 0;
    wb_byte(&sec, 1);
    wb_byte(&sec, max < 0 ? 0 : 1);
    wb_u32(&sec, min);
    if (max >= 0) wb_u32(&sec, (uint32_t)max);
    wb_section(&b, 5, &sec);
    sec.n = 0;
    wb_byte(&sec, 2);
    wb_byte(&sec, 4);
    wb_bytes(&sec, "grow\x00\x00", 6);
    wb_byte(&sec, 3);
    wb_bytes(&sec, "mem\x02\x00", 5);
    wb_section(&b, 7, &sec);
    sec.n = 0;
    static const uint8_t code[] = {0x01, 0x06, 0x00, 0x20, 0x00, 0x40, 0x00, 0x0b};
    wb_bytes(&sec, code, sizeof code);
    wb_section(&b, 10, &sec);
    wb_free(&sec);
    return b;
}

/* (func $rec (export "rec") (param i32) (result i32)
 *   (if (result i32) (i32.eqz (local.get 0)) (then (i32.const 0))
 *     (else (i32.add (call $rec (i32.sub (local.get 0) (i32.const 1))) (i32.const 1))))) */
static const uint8_t REC[] = {0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x01, 0x06, 0x01,
                              0x60, 0x01, 0x7f, 0x01, 0x7f, 0x03, 0x02, 0x01, 0x00, 0x07, 0x07,
                              0x01, 0x03, 'r',  'e',  'c',  0x00, 0x00, 0x0a, 0x17, 0x01, 0x15,
                              0x00, 0x20, 0x00, 0x45, 0x04, 0x7f, 0x41, 0x00, 0x05, 0x20, 0x00,
                              0x41, 0x01, 0x6b, 0x10, 0x00, 0x41, 0x01, 0x6a, 0x0b, 0x0b};

/* One store + instance of a module. */
typedef struct run {
    pw_store *s;
    pw_instance *inst;
    pw_func *f;
    pw_memory *mem;
} run;

static run start(const pw_module *m, const pw_store_config *cfg, const char *fname) {
    pw_error err;
    run r = {0};
    r.s = pw_store_new(cfg, &err);
    assert_non_null(r.s);
    r.inst = pw_instantiate(r.s, m, NULL, NULL, &err);
    if (!r.inst) fail_msg("instantiate: %s", err.message);
    pw_extern ex;
    assert_true(pw_instance_export(r.inst, fname, strlen(fname), &ex));
    r.f = ex.u.func;
    if (pw_instance_export(r.inst, "mem", 3, &ex)) r.mem = ex.u.memory;
    return r;
}

/* Calls grow(delta); returns its result, or 1000 + status when the call failed. */
static int32_t grow(run *r, int32_t delta) {
    pw_error err;
    pw_val arg = {.i32 = delta}, res = {0};
    pw_status st = pw_call(r->s, r->f, &arg, 1, &res, 1, &err);
    return st == PW_OK ? res.i32 : 1000 + (int32_t)st;
}

static pw_module *load(const uint8_t *b, size_t n) {
    pw_error err;
    pw_module *m = pw_module_new(b, n, NULL, &err);
    if (!m) fail_msg("module: %s", err.message);
    return m;
}

static bool all_zero(const uint8_t *p, uint64_t n) {
    for (uint64_t i = 0; i < n; i++)
        if (p[i]) return false;
    return true;
}

static void test_reused_memory_reads_zero(void **state) {
    (void)state;
    wb mb = grow_module(1, -1);
    pw_module *m = load(mb.p, mb.n);
    pw_pool *pool = pw_pool_new();
    assert_non_null(pool);
    pw_store_config cfg = {.memory_cap = 64 * PAGE, .pool = pool};
    uint64_t size;

    /* Store 1 grows to 4 pages and writes every byte. */
    run r = start(m, &cfg, "grow");
    assert_int_equal(grow(&r, 3), 1);
    uint8_t *first = pw_memory_data(r.mem, &size);
    assert_int_equal(size, 4 * PAGE);
    memset(first, 0xab, size);
    pw_store_free(r.s);
    uint32_t ns, nm;
    uint64_t dirty;
    pw__pool_stats(pool, &ns, &nm, &dirty);
    assert_int_equal(nm, 1);
    assert_int_equal(ns, 2); /* value and frame stack */
    assert_int_equal(dirty, 4 * PAGE);

    /* Store 2 gets the same mapping: its page reads as zero, and so does the page
     * it grows into. It grows less far than store 1 and dirties both pages. */
    r = start(m, &cfg, "grow");
    uint8_t *d = pw_memory_data(r.mem, &size);
    assert_ptr_equal(d, first);
    assert_int_equal(size, PAGE);
    assert_true(all_zero(d, size));
    assert_int_equal(grow(&r, 1), 1);
    d = pw_memory_data(r.mem, &size);
    assert_int_equal(size, 2 * PAGE);
    assert_true(all_zero(d, size));
    memset(d, 0xcd, size);
    pw_store_free(r.s);
    pw__pool_stats(pool, &ns, &nm, &dirty);
    assert_int_equal(dirty, 4 * PAGE); /* store 1's pages 3-4 are still dirty */

    /* Store 3 grows past both: everything reads as zero. */
    r = start(m, &cfg, "grow");
    assert_int_equal(grow(&r, 7), 1);
    d = pw_memory_data(r.mem, &size);
    assert_ptr_equal(d, first);
    assert_int_equal(size, 8 * PAGE);
    assert_true(all_zero(d, size));
    pw_store_free(r.s);

    /* A host-created memory (pw_memory_new) from the pool is clean too. */
    pw_error err;
    pw_store *s = pw_store_new(&cfg, &err);
    pw_memory *hm = pw_memory_new(s, 8, UINT64_MAX, &err);
    assert_non_null(hm);
    d = pw_memory_data(hm, &size);
    assert_int_equal(size, 8 * PAGE);
    assert_true(all_zero(d, size));
    pw_store_free(s);

    pw_pool_free(pool);
    pw_module_free(m);
    wb_free(&mb);
}

/* memory.grow results for a module with MAX (or none) under cap/fatal, on a store
 * with or without pool. */
static void grow_sequence(pw_pool *pool, int32_t out[8]) {
    wb mb2 = grow_module(1, 2), mbu = grow_module(1, -1);
    pw_module *m2 = load(mb2.p, mb2.n), *mu = load(mbu.p, mbu.n);
    int k = 0;
    /* A big reservation first, so that pooled stores below get a mapping larger
     * than their own cap allows: the limits must still be the store's. */
    pw_store_config big = {.memory_cap = 64 * PAGE, .pool = pool};
    run r = start(mu, &big, "grow");
    out[k++] = grow(&r, 40);
    pw_store_free(r.s);

    pw_store_config cfg = {.memory_cap = 4 * PAGE, .pool = pool};
    r = start(m2, &cfg, "grow");
    out[k++] = grow(&r, 1);  /* 1 */
    out[k++] = grow(&r, 1);  /* -1: at the declared maximum */
    out[k++] = grow(&r, 0);  /* 2 */
    out[k++] = grow(&r, -1); /* -1: 2^32-1 pages */
    pw_store_free(r.s);

    r = start(mu, &cfg, "grow");
    out[k++] = grow(&r, 3); /* 1 */
    out[k++] = grow(&r, 1); /* -1: over the cap */
    pw_store_free(r.s);

    cfg.cap_is_fatal = true;
    r = start(mu, &cfg, "grow");
    grow(&r, 3);
    out[k++] = grow(&r, 1); /* the run ends with PW_ERR_OOM */
    pw_store_free(r.s);
    pw_module_free(m2);
    pw_module_free(mu);
    wb_free(&mb2);
    wb_free(&mbu);
}

static void test_pool_same_grow_results(void **state) {
    (void)state;
    static const int32_t want[8] = {1, 1, -1, 2, -1, 1, -1, 1000 + PW_ERR_OOM};
    int32_t plain[8], pooled[8], again[8];
    grow_sequence(NULL, plain);
    pw_pool *pool = pw_pool_new();
    grow_sequence(pool, pooled);
    grow_sequence(pool, again); /* every memory now comes from the pool */
    pw_pool_free(pool);
    for (int i = 0; i < 8; i++) {
        assert_int_equal(plain[i], want[i]);
        assert_int_equal(pooled[i], want[i]);
        assert_int_equal(again[i], want[i]);
    }
}

static void test_pooled_stacks(void **state) {
    (void)state;
    pw_module *m = load(REC, sizeof REC);
    pw_pool *pool = pw_pool_new();
    pw_store_config cfg = {.pool = pool};
    for (int round = 0; round < 3; round++) {
        run r = start(m, &cfg, "rec");
        pw_error err;
        pw_val arg = {.i32 = 10000}, res = {0};
        assert_int_equal(pw_call(r.s, r.f, &arg, 1, &res, 1, &err), PW_OK);
        assert_int_equal(res.i32, 10000);
        arg.i32 = 1000000;
        assert_int_equal(pw_call(r.s, r.f, &arg, 1, &res, 1, &err), PW_ERR_TRAP);
        assert_int_equal(err.trap, PW_TRAP_STACK_EXHAUSTED);
        arg.i32 = 5;
        assert_int_equal(pw_call(r.s, r.f, &arg, 1, &res, 1, &err), PW_OK);
        assert_int_equal(res.i32, 5);
        pw_store_free(r.s);
    }
    /* A different call depth needs another frame stack; a small one traps early. */
    pw_store_config small = {.pool = pool, .max_call_depth = 100};
    run r = start(m, &small, "rec");
    pw_error err;
    pw_val arg = {.i32 = 200}, res = {0};
    assert_int_equal(pw_call(r.s, r.f, &arg, 1, &res, 1, &err), PW_ERR_TRAP);
    assert_int_equal(err.trap, PW_TRAP_STACK_EXHAUSTED);
    pw_store_free(r.s);
    uint32_t ns, nm;
    uint64_t dirty;
    pw__pool_stats(pool, &ns, &nm, &dirty);
    assert_int_equal(ns, 3); /* one value stack, two frame stacks */
    pw_pool_free(pool);
    pw_module_free(m);
}

/* gc_test.wasm imports host.wrap; these tests never call it. */
static pw_status host_unused(pw_call_ctx *cx, void *env, const pw_val *args, pw_val *results) {
    (void)env;
    (void)args;
    (void)results;
    return pw_ctx_trap(cx, "unused");
}

static bool resolve_gc(void *ctx, pw_store *s, const pw_module *m, const pw_import_desc *d,
                       pw_extern *out) {
    (void)ctx;
    out->kind = PW_EXTERN_FUNC;
    out->u.func = pw_func_new_host_for_import(s, m, d->index, host_unused, NULL, NULL);
    return out->u.func != NULL;
}

static pw_status gc_call(pw_store *s, pw_instance *inst, const char *name, const pw_val *args,
                         uint32_t nargs, pw_val *res) {
    pw_extern ex;
    pw_error err;
    assert_true(pw_instance_export(inst, name, strlen(name), &ex));
    return pw_call(s, ex.u.func, args, nargs, res, 1, &err);
}

/* Store 1 leaves thousands of GC references in its frames; store 2 gets the same
 * stacks and collects at every allocation: a stale slot taken for a root would be a
 * use after free (ASan) or a wrong result. */
static void test_gc_over_pooled_stacks(void **state) {
    (void)state;
    FILE *f = fopen(PW_GC_FIXTURES "/gc_test.wasm", "rb");
    assert_non_null(f);
    static uint8_t bytes[1 << 16];
    size_t len = fread(bytes, 1, sizeof bytes, f);
    fclose(f);
    assert_true(len > 0 && len < sizeof bytes);
    pw_module *m = load(bytes, len);
    pw_pool *pool = pw_pool_new();
    pw_store_config cfg = {.pool = pool};
    pw_error err;
    pw_val r;
    for (int round = 0; round < 3; round++) {
        pw_store *s = pw_store_new(&cfg, &err);
        pw_instance *inst = pw_instantiate(s, m, resolve_gc, NULL, &err);
        if (!inst) fail_msg("instantiate: %s", err.message);
        s->gc_stress = round > 0;
        pw_val d[2] = {{.i32 = round ? 1500 : 20000}, {.ref = PW_NULL_REF}};
        assert_int_equal(gc_call(s, inst, "deep", d, 2, &r), PW_OK);
        assert_int_equal(r.i64, (int64_t)d[0].i32 * (d[0].i32 + 1) / 2);
        pw_val a2[2] = {{.i32 = 2000}, {.i32 = 50}};
        assert_int_equal(gc_call(s, inst, "churn", a2, 2, &r), PW_OK);
        assert_int_equal(r.i64, (int64_t)2000 * 1999 / 2);
        pw_val t = {.i32 = 300};
        assert_int_equal(gc_call(s, inst, "throw_loop", &t, 1, &r), PW_OK);
        assert_int_equal(r.i64, (int64_t)300 * 299 / 2);
        assert_int_equal(s->gc_nomap, 0);
        pw_store_free(s);
    }
    uint32_t ns, nm;
    uint64_t dirty;
    pw__pool_stats(pool, &ns, &nm, &dirty);
    assert_int_equal(ns, 2); /* the stacks were indeed reused */
    pw_pool_free(pool);
    pw_module_free(m);
}

static void test_pool_bounds(void **state) {
    (void)state;
    wb mb = grow_module(1, -1);
    pw_module *m = load(mb.p, mb.n);
    pw_pool *pool = pw_pool_new();
    pw_store_config cfg = {.memory_cap = 16 * PAGE, .pool = pool};
    run rs[6];
    for (int i = 0; i < 6; i++) {
        rs[i] = start(m, &cfg, "grow");
        assert_int_equal(grow(&rs[i], 1), 1);
    }
    for (int i = 0; i < 6; i++)
        pw_store_free(rs[i].s);
    uint32_t ns, nm;
    uint64_t dirty;
    pw__pool_stats(pool, &ns, &nm, &dirty);
    assert_int_equal(nm, 4);
    assert_int_equal(ns, 4);
    assert_int_equal(dirty, 4 * 2 * PAGE);

    pw_pool_free(pool);

    /* A memory that reached 40 MiB is over the dirty budget (32 MiB): unmapped; one
     * that reached 20 MiB is kept. */
    pool = pw_pool_new();
    pw_store_config big = {.memory_cap = (uint64_t)64 << 20, .pool = pool};
    run r = start(m, &big, "grow");
    assert_int_equal(grow(&r, 639), 1);
    pw_store_free(r.s);
    pw__pool_stats(pool, &ns, &nm, &dirty);
    assert_int_equal(nm, 0);
    assert_int_equal(dirty, 0);
    r = start(m, &big, "grow");
    assert_int_equal(grow(&r, 319), 1);
    pw_store_free(r.s);
    pw__pool_stats(pool, &ns, &nm, &dirty);
    assert_int_equal(nm, 1);
    assert_int_equal(dirty, (uint64_t)20 << 20);
    pw_pool_free(pool);
    pw_module_free(m);
    wb_free(&mb);
}

/* The protection of the mapping holding `a` from /proc/self/maps ("rw-p", "---p"),
 * with its bounds; "" when nothing is mapped there. Adjacent mappings of the same
 * protection are merged, so [*lo, *hi) is the whole run of that protection. */
static void prot_at(uintptr_t a, char prot[5], uintptr_t *lo, uintptr_t *hi) {
    FILE *f = fopen("/proc/self/maps", "r");
    assert_non_null(f);
    char line[512];
    prot[0] = 0;
    *lo = *hi = 0;
    uintptr_t plo = 0, phi = 0;
    char pprot[5] = "";
    while (fgets(line, sizeof line, f)) {
        unsigned long l, h;
        char pr[5];
        if (sscanf(line, "%lx-%lx %4s", &l, &h, pr) != 3) continue;
        if (strcmp(pr, pprot) == 0 && l == phi) {
            phi = h; /* extends the run */
        } else {
            plo = l, phi = h;
            memcpy(pprot, pr, 5);
        }
        if (a >= plo && a < phi) {
            memcpy(prot, pprot, 5);
            *lo = plo, *hi = phi;
        }
    }
    fclose(f);
}

/* [base, base + bytes) is a stack: read/write, with PW_STACK_GUARD bytes of PROT_NONE
 * directly below it and directly after its usable part. */
static void assert_guarded(const void *base, size_t bytes, const char *what) {
    uintptr_t b = (uintptr_t)base, lo, hi;
    char prot[5];
    prot_at(b, prot, &lo, &hi);
    if (strcmp(prot, "rw-p") != 0 || lo != b || hi < b + bytes)
        fail_msg("%s: [%#lx, +%zu) is %s [%#lx, %#lx), not its own read/write mapping", what,
                 (unsigned long)b, bytes, prot, (unsigned long)lo, (unsigned long)hi);
    uintptr_t end = hi;
    prot_at(b - 1, prot, &lo, &hi);
    if (strcmp(prot, "---p") != 0 || lo > b - PW_STACK_GUARD)
        fail_msg("%s: below it is %s from %#lx, not %zu bytes of guard", what, prot,
                 (unsigned long)lo, PW_STACK_GUARD);
    prot_at(end, prot, &lo, &hi);
    if (strcmp(prot, "---p") != 0 || hi < end + PW_STACK_GUARD)
        fail_msg("%s: after it is %s up to %#lx, not %zu bytes of guard", what, prot,
                 (unsigned long)hi, PW_STACK_GUARD);
}

static void check_store_stacks(pw_store *s, const char *what) {
    size_t vbytes = (size_t)(s->stack_end - s->stack) * sizeof(pw_slot);
    size_t fbytes = (size_t)(s->frames_end - s->frames) * sizeof(pw_frame);
    assert_guarded(s->stack, vbytes, what);
    assert_guarded(s->frames, fbytes, what);
    uintptr_t lo, hi;
    char prot[5];
    prot_at((uintptr_t)s->stack, prot, &lo, &hi);
    pt_assert_write_faults((volatile char *)s->stack - 1);
    pt_assert_write_faults((volatile char *)hi);
    pt_assert_write_faults((volatile char *)hi + PW_STACK_GUARD - 1);
    prot_at((uintptr_t)s->frames, prot, &lo, &hi);
    pt_assert_write_faults((volatile char *)s->frames - 1);
    pt_assert_write_faults((volatile char *)hi);
}

/* Value and frame stacks of a store without a pool, of one with a pool (fresh, then
 * handed on), and of odd sizes; a stack given back without a pool leaves nothing
 * mapped in its whole span. */
static void test_stack_guards(void **state) {
    (void)state;
    pw_module *m = load(REC, sizeof REC);
    pw_store_config plain = {
        .engine = PW_ENGINE_INTERP, .value_stack_bytes = 100000, .max_call_depth = 777};
    run r = start(m, &plain, "rec");
    pw_error err;
    pw_val arg = {.i32 = 50}, res = {0};
    assert_int_equal(pw_call(r.s, r.f, &arg, 1, &res, 1, &err), PW_OK);
    check_store_stacks(r.s, "store without a pool");
    pw_store_free(r.s);

    pw_pool *pool = pw_pool_new();
    pw_store_config cfg = {.pool = pool};
    for (int round = 0; round < 2; round++) {
        r = start(m, &cfg, "rec");
        assert_int_equal(pw_call(r.s, r.f, &arg, 1, &res, 1, &err), PW_OK);
        assert_int_equal(res.i32, 50);
        check_store_stacks(r.s, round ? "pooled store, stacks handed on" : "pooled store");
        pw_store_free(r.s);
    }
    pw_pool_free(pool);

    /* Given back without a pool: the whole span, guards included, is free again. */
    size_t bytes = 12345;
    char *b = pw__stack_map(NULL, bytes);
    assert_non_null(b);
    assert_guarded(b, bytes, "a stack of 12,345 bytes");
    memset(b, 7, bytes);
    pw__stack_unmap(NULL, b, bytes);
    size_t span = 2 * PW_STACK_GUARD + PW_STACK_GUARD_PAGE;
    void *again = mmap(b - PW_STACK_GUARD, span, PROT_NONE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    assert_ptr_equal(again, b - PW_STACK_GUARD);
    munmap(again, span);
    pw_module_free(m);
}

/* pw_pool_free with stores outstanding: they keep working, and the last one to be
 * freed releases the pool (ASan checks for leaks and use after free). */
static void test_pool_freed_first(void **state) {
    (void)state;
    wb mb = grow_module(1, -1);
    pw_module *m = load(mb.p, mb.n);
    pw_pool *pool = pw_pool_new();
    pw_store_config cfg = {.memory_cap = 16 * PAGE, .pool = pool};
    run a = start(m, &cfg, "grow");
    run b = start(m, &cfg, "grow");
    assert_int_equal(grow(&a, 1), 1);
    pw_pool_free(pool);
    assert_int_equal(grow(&a, 1), 2);
    assert_int_equal(grow(&b, 2), 1);
    uint64_t size;
    uint8_t *d = pw_memory_data(a.mem, &size);
    memset(d, 1, size);
    pw_store_free(a.s);
    assert_int_equal(grow(&b, 1), 3);
    pw_store_free(b.s);
    pw_module_free(m);
    wb_free(&mb);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reused_memory_reads_zero),
        cmocka_unit_test(test_pool_same_grow_results),
        cmocka_unit_test(test_pooled_stacks),
        cmocka_unit_test(test_gc_over_pooled_stacks),
        cmocka_unit_test(test_pool_bounds),
        cmocka_unit_test(test_pool_freed_first),
        cmocka_unit_test(test_stack_guards),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
