/*
 * test_compile_lazy.c — compiling to internal code on first use (src/wasm/compile.c,
 * "Compiling on first use"; docs/engine.md): a module's functions are compiled at
 * their first call, only those, with the same results as a module compiled eagerly
 * (pw_module_config.compile_eagerly) on the interpreter, the JIT and lazy
 * translation; traps and exceptions unwind through lazily compiled functions; the
 * collector finds the references of a frame whose function was compiled lazily; two
 * stores on two threads call the same uncompiled functions at once; a small module is
 * compiled whole and packed when made; a function whose
 * code does not fit its slot runs from its own allocation (and stays interpreted); a
 * saved translation's functions are compiled at their first call, not when it is
 * mapped, also from two threads at once.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "peri/base.h"
#include "peri/wasm.h"
#include "wasm/jit/jit.h"
#include "wasm/runtime.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Functions by index: 0 fib, 1 ind (through the table), 2 boom (traps at 0), 3 thrower,
 * 4 mid (calls thrower), 5 catch (catches what mid lets through), 6 main, 7 trap, 8 unused. */
static const char WAT[] =
    "(module (type $t (func (param i32) (result i32)))\n"
    " (table 2 funcref) (elem (i32.const 0) $ind $boom) (tag $e (param i32))\n"
    " (func $fib (export \"fib\") (type $t) (if (result i32) (i32.lt_s (local.get 0) (i32.const "
    "2))\n"
    "   (then (local.get 0)) (else (i32.add (call $fib (i32.sub (local.get 0) (i32.const 1)))\n"
    "     (call $fib (i32.sub (local.get 0) (i32.const 2)))))))\n"
    " (func $ind (type $t) (i32.mul (local.get 0) (i32.const 3)))\n"
    " (func $boom (type $t) (if (i32.eqz (local.get 0)) (then unreachable))\n"
    "   (i32.div_s (i32.const 100) (local.get 0)))\n"
    " (func $thrower (param i32) (throw $e (i32.add (local.get 0) (i32.const 1))))\n"
    " (func $mid (param i32) (result i32) (call $thrower (local.get 0)) (i32.const -1))\n"
    " (func (export \"catch\") (param i32) (result i32)\n"
    "   (block $h (result i32) (try_table (catch $e $h) (drop (call $mid (local.get 0))))\n"
    "     (i32.const -2)))\n"
    " (func (export \"main\") (param i32) (result i32)\n"
    "   (i32.add (call $fib (local.get 0)) (call_indirect (type $t) (local.get 0) (i32.const "
    "0))))\n"
    " (func (export \"trap\") (param i32) (result i32)\n"
    "   (call_indirect (type $t) (local.get 0) (i32.const 1)))\n"
    " (func (export \"unused\") (param i32) (result i32) (i32.const 42)))\n";

enum { F_FIB, F_IND, F_BOOM, F_THROWER, F_MID, F_CATCH, F_MAIN, F_TRAP, F_UNUSED, F_COUNT };

/* The caller keeps a struct in a local across a call to churn, which allocates until
 * the collector runs; the kept struct and the one it points to must survive. */
static const char GC_WAT[] =
    "(module (type $s (struct (field (mut i32)) (field (ref null $s))))\n"
    " (func $churn (param i32)\n"
    "   (loop $l (drop (struct.new $s (local.get 0) (ref.null $s)))\n"
    "     (local.set 0 (i32.sub (local.get 0) (i32.const 1))) (br_if $l (local.get 0))))\n"
    " (func (export \"gc\") (param i32) (result i32) (local $keep (ref null $s))\n"
    "   (local.set $keep (struct.new $s (i32.const 1234) (struct.new $s (i32.const 5) (ref.null "
    "$s))))\n"
    "   (call $churn (local.get 0))\n"
    "   (i32.add (struct.get $s 0 (local.get $keep))\n"
    "     (struct.get $s 0 (struct.get $s 1 (local.get $keep))))))\n";

/* wat (a module text ending in ")\n") with nsmall more small functions and a ballast
 * function of 36 KB of code after its own: a module above PW_COMPILE_SMALL_WORDS,
 * whose functions are compiled at first use (smaller ones are compiled whole). */
static char *grown(const char *wat, int nsmall) {
    size_t len = strlen(wat), cap = len + (size_t)nsmall * 64 + 12000 * 24 + 256;
    char *w = malloc(cap);
    assert_non_null(w);
    size_t n = len - 2; /* without the last ")\n" */
    memcpy(w, wat, n);
    for (int i = 0; i < nsmall; i++)
        n += (size_t)snprintf(w + n, cap - n, " (func (result i32) (i32.const %d))", i);
    n += (size_t)snprintf(w + n, cap - n, " (func (result i32) i32.const 0");
    for (int i = 0; i < 12000; i++)
        n += (size_t)snprintf(w + n, cap - n, " i32.const 1 i32.add");
    n += (size_t)snprintf(w + n, cap - n, "))\n");
    assert_true(n < cap);
    return w;
}

/* The module of wat; with dir, the code cache at dir attached. */
static pw_module *module_cached(const char *wat, bool eager, const char *dir) {
    pw_error err;
    uint8_t *b = NULL;
    size_t n = 0;
    if (pw_wat_to_wasm(wat, strlen(wat), &b, &n, &err) != PW_OK) fail_msg("wat: %s", err.message);
    pw_module_config mc = {.compile_eagerly = eager};
    uint8_t digest[32];
    pb_sha256(b, n, digest);
    pw_module *m = pw_module_new(b, n, &mc, &err);
    free(b);
    if (!m) fail_msg("module: %s", err.message);
    pw_code_cache_config cc = {.dir = dir};
    pw_code_err ce;
    if (dir && pw_module_set_code_cache(m, digest, &cc, &ce) != PW_CODE_OK)
        fail_msg("cache: %s", ce.message);
    return m;
}

/* The module of wat grown past PW_COMPILE_SMALL_WORDS (grown). */
static pw_module *module_of(const char *wat, bool eager) {
    char *w = grown(wat, 0);
    pw_module *m = module_cached(w, eager, NULL);
    free(w);
    return m;
}

static bool ready(const pw_module *m, uint32_t i) {
    return pw__cfunc_ready(&m->code->funcs[i]);
}

typedef struct run {
    pw_store *s;
    pw_instance *inst;
} run;

static bool run_open(run *r, const pw_module *m, int engine) {
    pw_error err;
    pw_store_config cfg = {.engine = engine};
    r->inst = NULL;
    r->s = pw_store_new(&cfg, &err);
    if (!r->s) return false;
    r->inst = pw_instantiate(r->s, m, NULL, NULL, &err);
    return r->inst != NULL;
}

/* The call's result, or ~trap code when it trapped; UINT64_MAX - 100 on another error. */
static uint64_t call(run *r, const char *name, uint32_t a) {
    pw_extern ex;
    if (!pw_instance_export(r->inst, name, strlen(name), &ex)) return UINT64_MAX - 101;
    pw_val in = {.bits = a}, out = {0};
    pw_error e;
    pw_status st = pw_call(r->s, ex.u.func, &in, 1, &out, 1, &e);
    if (st == PW_ERR_TRAP) return ~(uint64_t)e.trap;
    if (st != PW_OK) return UINT64_MAX - 100;
    return (uint32_t)out.bits;
}

static const int ENGINES[] = {PW_ENGINE_INTERP, PW_ENGINE_JIT, PW_ENGINE_LAZY, PW_ENGINE_AUTO};

/* The calls every tier and both compile modes must agree on. */
static size_t script(run *r, uint64_t *out) {
    size_t n = 0;
    out[n++] = call(r, "main", 10);
    out[n++] = call(r, "trap", 0); /* unreachable in boom, reached through the table */
    out[n++] = call(r, "trap", 5);
    out[n++] = call(r, "trap", 0);
    out[n++] = call(r, "catch", 5); /* thrown two lazily compiled frames down */
    out[n++] = call(r, "main", 20);
    return n;
}

static void test_first_use(void **state) {
    (void)state;
    for (size_t e = 0; e < sizeof ENGINES / sizeof *ENGINES; e++) {
        pw_module *lz = module_of(WAT, false), *eg = module_of(WAT, true);
        for (uint32_t i = 0; i < F_COUNT; i++) {
            assert_false(ready(lz, i)); /* nothing compiled when the module is made */
            assert_true(ready(eg, i));  /* everything */
        }
        run a, b;
        assert_true(run_open(&a, lz, ENGINES[e]));
        assert_true(run_open(&b, eg, ENGINES[e]));
        assert_int_equal(call(&a, "main", 10), 55 + 30);
        assert_true(ready(lz, F_MAIN) && ready(lz, F_FIB) && ready(lz, F_IND));
        /* the JIT (and `auto` on a small module) translates, so compiles, everything */
        bool whole = ENGINES[e] == PW_ENGINE_JIT || ENGINES[e] == PW_ENGINE_AUTO;
        if (!whole)
            for (uint32_t i = F_BOOM; i <= F_CATCH; i++)
                assert_false(ready(lz, i));
        uint64_t x[8], y[8];
        size_t n = script(&a, x);
        assert_int_equal(script(&b, y), n);
        for (size_t k = 0; k < n; k++)
            if (x[k] != y[k])
                fail_msg("engine %d call %zu: lazy %llx, eager %llx", ENGINES[e], k,
                         (unsigned long long)x[k], (unsigned long long)y[k]);
        assert_int_equal(x[1], ~(uint64_t)PW_TRAP_UNREACHABLE);
        assert_int_equal(x[2], 20);
        assert_int_equal(x[4], 6);
        if (!whole) assert_false(ready(lz, F_UNUSED));
        pw_store_free(a.s);
        pw_store_free(b.s);
        pw_module_free(lz);
        pw_module_free(eg);
    }
}

/* A small module is compiled whole when made, into one packed array. */
static void test_small_packed(void **state) {
    (void)state;
    pw_module *m = module_cached(WAT, false, NULL);
    assert_true(m->code->packed);
    for (uint32_t i = 0; i < F_COUNT; i++) {
        assert_true(ready(m, i));
        const pw_cfunc *cf = &m->code->funcs[i];
        assert_ptr_equal(cf->code, m->code->code + cf->slot);
        if (i + 1 < F_COUNT) assert_int_equal(cf[1].slot, cf->slot + cf->ncode + 1);
        assert_ptr_equal(pw__cfunc_at(m->code, cf->code + cf->ncode), cf);
    }
    run r;
    assert_true(run_open(&r, m, PW_ENGINE_INTERP));
    assert_int_equal(call(&r, "main", 10), 85);
    pw_store_free(r.s);
    pw_module_free(m);
}

static void test_gc_frame(void **state) {
    (void)state;
    for (size_t e = 0; e < sizeof ENGINES / sizeof *ENGINES; e++)
        for (int eager = 0; eager < 2; eager++) {
            pw_module *m = module_of(GC_WAT, eager);
            run r;
            assert_true(run_open(&r, m, ENGINES[e]));
            assert_int_equal(call(&r, "gc", 300000), 1234 + 5);
            pw_gc_stats st;
            pw_store_gc_stats(r.s, &st);
            assert_true(st.collections > 0); /* the collector did scan the frames */
            pw_store_free(r.s);
            pw_module_free(m);
        }
}

/* Two threads, each with its own store on one module, call the same functions, none
 * compiled yet, at the same moment. */
typedef struct job {
    const pw_module *m;
    int engine;
    pthread_barrier_t *go;
    uint64_t out[8];
    size_t n;
    bool ok;
} job;

static void *thread_main(void *arg) {
    job *j = arg;
    run r;
    j->ok = run_open(&r, j->m, j->engine);
    pthread_barrier_wait(j->go);
    if (j->ok) j->n = script(&r, j->out);
    if (r.s) pw_store_free(r.s);
    return NULL;
}

static void test_threads(void **state) {
    (void)state;
    for (int round = 0; round < 40; round++) {
        pw_module *m = module_of(WAT, false);
        pthread_barrier_t go;
        pthread_barrier_init(&go, NULL, 2);
        /* the interpreter on both, or the interpreter against lazy translation */
        job a = {.m = m, .engine = PW_ENGINE_INTERP, .go = &go};
        job b = {.m = m, .engine = round % 2 ? PW_ENGINE_LAZY : PW_ENGINE_INTERP, .go = &go};
        pthread_t ta, tb;
        assert_int_equal(pthread_create(&ta, NULL, thread_main, &a), 0);
        assert_int_equal(pthread_create(&tb, NULL, thread_main, &b), 0);
        pthread_join(ta, NULL);
        pthread_join(tb, NULL);
        pthread_barrier_destroy(&go);
        assert_true(a.ok && b.ok);
        assert_int_equal(a.n, b.n);
        assert_memory_equal(a.out, b.out, a.n * sizeof *a.out);
        assert_int_equal(a.out[0], 85);
        pw_module_free(m);
    }
}

/* A body whose code is far larger than its slot (compile.c, slot_words): 40 values
 * moved to a block's results at each of 60 br_ifs. */
static char *big_wat(void) {
    size_t cap = 1 << 16, n = 0;
    char *w = malloc(cap);
    assert_non_null(w);
    n += (size_t)snprintf(w + n, cap - n,
                          "(module (func (export \"big\") (param i32) (result i32) (local i32)\n"
                          " (block (result");
    for (int i = 0; i < 40; i++)
        n += (size_t)snprintf(w + n, cap - n, " i32");
    n += (size_t)snprintf(w + n, cap - n, ") (i32.const 7)");
    for (int i = 0; i < 40; i++)
        n += (size_t)snprintf(w + n, cap - n, " (local.get 0)");
    for (int i = 0; i < 60; i++)
        n += (size_t)snprintf(w + n, cap - n, " (br_if 0 (local.get 1))");
    n += (size_t)snprintf(w + n, cap - n, " (br 0))");
    for (int i = 0; i < 39; i++)
        n += (size_t)snprintf(w + n, cap - n, " (i32.add)");
    n += (size_t)snprintf(w + n, cap - n, "))\n");
    assert_true(n < cap - 1);
    return w;
}

static void test_slot_overflow(void **state) {
    (void)state;
    char *w = big_wat();
    for (size_t e = 0; e < sizeof ENGINES / sizeof *ENGINES; e++)
        for (int eager = 0; eager < 2; eager++) {
            pw_module *m = module_of(w, eager);
            run r;
            assert_true(run_open(&r, m, ENGINES[e]));
            assert_int_equal(call(&r, "big", 3), 40 * 3);
            const pw_cfunc *cf = &m->code->funcs[0];
            assert_true(pw__cfunc_ready(cf));
            assert_ptr_not_equal(cf->code, m->code->code + cf->slot); /* its own block */
            assert_ptr_equal(pw__cfunc_at(m->code, cf->code + 5), cf);
            if (ENGINES[e] == PW_ENGINE_JIT) /* no fixed offset: it stays interpreted */
                assert_int_equal(pw__jit_state(r.inst->funcs[0]), 2);
            pw_store_free(r.s);
            pw_module_free(m);
        }
    free(w);
}

static void *cached_thread(void *arg) {
    job *j = arg;
    run r;
    j->ok = run_open(&r, j->m, PW_ENGINE_JIT);
    pthread_barrier_wait(j->go);
    if (j->ok) j->n = script(&r, j->out);
    if (r.s) pw_store_free(r.s);
    return NULL;
}

static void test_cached(void **state) {
    (void)state;
    /* 600 more functions: a GOT of more than a page, whose whole pages hold the slots
     * of WAT's functions (jit.c: a slot that shares a page with code is not held) */
    char *wat = grown(WAT, 600);
    char dir[] = "/tmp/peri-compile-lazy-XXXXXX";
    assert_non_null(mkdtemp(dir));
    uint64_t want[8];
    size_t nwant;
    { /* the reference, and a whole translation saved in the cache */
        pw_module *m = module_cached(wat, true, dir);
        run r;
        assert_true(run_open(&r, m, PW_ENGINE_JIT));
        nwant = script(&r, want);
        pw_store_free(r.s);
        pw_module_free(m);
    }
    pw_module *m = module_cached(wat, false, dir);
    run r;
    assert_true(run_open(&r, m, PW_ENGINE_JIT));
    assert_int_equal(call(&r, "main", 10), 85);
    /* the saved translation is mapped, but only what ran was compiled */
    assert_true(ready(m, F_MAIN) && ready(m, F_FIB) && ready(m, F_IND));
    assert_int_equal(pw__jit_state(r.inst->funcs[F_FIB]), 1);
    for (uint32_t i = F_BOOM; i <= F_MID; i++)
        assert_false(ready(m, i));
    assert_false(ready(m, F_UNUSED));
    assert_int_equal(pw__jit_state(r.inst->funcs[F_UNUSED]), 0); /* held until called */
    assert_int_equal(call(&r, "unused", 0), 42);
    assert_true(ready(m, F_UNUSED));
    assert_int_equal(pw__jit_state(r.inst->funcs[F_UNUSED]), 1);
    uint64_t got[8];
    assert_int_equal(script(&r, got), nwant);
    assert_memory_equal(got, want, nwant * sizeof *got);
    pw_store_free(r.s);
    pw_module_free(m);
    /* two threads, each with its own store, calling the held functions at once */
    for (int round = 0; round < 20; round++) {
        pw_module *mt = module_cached(wat, false, dir);
        pthread_barrier_t go;
        pthread_barrier_init(&go, NULL, 2);
        job a = {.m = mt, .go = &go}, b = {.m = mt, .go = &go};
        pthread_t ta, tb;
        assert_int_equal(pthread_create(&ta, NULL, cached_thread, &a), 0);
        assert_int_equal(pthread_create(&tb, NULL, cached_thread, &b), 0);
        pthread_join(ta, NULL);
        pthread_join(tb, NULL);
        pthread_barrier_destroy(&go);
        assert_true(a.ok && b.ok);
        assert_int_equal(a.n, nwant);
        assert_int_equal(b.n, nwant);
        assert_memory_equal(a.out, want, nwant * sizeof *want);
        assert_memory_equal(b.out, want, nwant * sizeof *want);
        pw_module_free(mt);
    }
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
    free(wat);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_first_use),     cmocka_unit_test(test_small_packed),
        cmocka_unit_test(test_gc_frame),      cmocka_unit_test(test_threads),
        cmocka_unit_test(test_slot_overflow), cmocka_unit_test(test_cached),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
