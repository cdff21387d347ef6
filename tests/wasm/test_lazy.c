/*
 * test_lazy.c — lazy translation (PW_ENGINE_LAZY; src/wasm/jit/jit.c, docs/jit.md
 * "Lazy translation"): each function is translated alone at its first call, in the
 * middle of a run (recursion, call_indirect, a function first reached through a
 * table after other code ran), and every result and trap is the interpreter's, with
 * guard pages and explicit checks; only what ran is translated; one module's code is
 * shared by stores on several threads that call the same untranslated functions at
 * once; lazy and eager stores share a module; with a code cache, what ran is saved
 * (absent functions marked so), the next module starts with it, translates the rest
 * at first call, and saves the merged set, which passes the artifact checks; `auto`
 * on a big module with a cache that misses turns to lazy translation at once.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "guard_keep.h"
#include "peri/base.h"
#include "peri/wasm.h"
#include "wasm/jit/jit.h"
#include "wasm/runtime.h"

#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Functions by index: 0 fib (recursive), 1 sq, 2 late (reached only through the
 * table: calls fib directly and sq through the table), 3 rec (recursion through the
 * table), 4 main (fib first, then the table entry it is given), 5 oob (a load), 6 fl
 * (a float helper), 7 grow (memory.grow, then a load of the new page). */
static const char WAT[] =
    "(module (type $t (func (param i32) (result i32)))\n"
    " (memory 1) (table 4 funcref) (elem (i32.const 0) $sq $late $fib $rec)\n"
    " (func $fib (export \"fib\") (type $t) (if (result i32) (i32.lt_s (local.get 0) (i32.const "
    "2))\n"
    "   (then (local.get 0)) (else (i32.add (call $fib (i32.sub (local.get 0) (i32.const 1)))\n"
    "     (call $fib (i32.sub (local.get 0) (i32.const 2)))))))\n"
    " (func $sq (type $t) (i32.mul (local.get 0) (local.get 0)))\n"
    " (func $late (type $t) (i32.add (call $fib (local.get 0))\n"
    "   (call_indirect (type $t) (local.get 0) (i32.const 0))))\n"
    " (func $rec (type $t) (if (result i32) (i32.eqz (local.get 0)) (then (i32.const 1))\n"
    "   (else (i32.add (local.get 0) (call_indirect (type $t)\n"
    "     (i32.sub (local.get 0) (i32.const 1)) (i32.const 3))))))\n"
    " (func (export \"main\") (param i32 i32) (result i32) (local $a i32)\n"
    "   (local.set $a (call $fib (i32.const 15)))\n"
    "   (i32.add (local.get $a) (call_indirect (type $t) (local.get 1) (local.get 0))))\n"
    " (func (export \"oob\") (param i32) (result i32) (i32.load (local.get 0)))\n"
    " (func (export \"fl\") (param f64) (result i32) (i32.trunc_f64_s (f64.floor (local.get "
    "0))))\n"
    " (func (export \"grow\") (param i32) (result i32)\n"
    "   (drop (memory.grow (i32.const 1))) (i32.store (i32.const 70000) (local.get 0))\n"
    "   (i32.add (i32.load (i32.const 70000)) (memory.size))))\n";

enum { F_FIB, F_SQ, F_LATE, F_REC, F_MAIN, F_OOB, F_FL, F_GROW, F_COUNT };

typedef struct mod {
    uint8_t *bytes;
    size_t len;
    uint8_t digest[32];
    pw_module *m;
} mod;

static void mod_make(mod *x) {
    pw_error err;
    if (pw_wat_to_wasm(WAT, sizeof WAT - 1, &x->bytes, &x->len, &err) != PW_OK)
        fail_msg("wat: %s", err.message);
    pb_sha256(x->bytes, x->len, x->digest);
    x->m = pw_module_new(x->bytes, x->len, NULL, &err);
    if (!x->m) fail_msg("module: %s", err.message);
}

static void mod_free(mod *x) {
    pw_module_free(x->m);
    free(x->bytes);
}

typedef struct run {
    pw_store *s;
    pw_instance *inst;
} run;

static void run_open(run *r, const pw_module *m, int engine, int bounds) {
    pw_error err;
    pw_store_config cfg = {.engine = engine, .bounds_checks = bounds};
    guard_restore(bounds);
    r->s = pw_store_new(&cfg, &err);
    assert_non_null(r->s);
    r->inst = pw_instantiate(r->s, m, NULL, NULL, &err);
    if (!r->inst) fail_msg("instantiate: %s", err.message);
    guard_check(bounds, r->inst);
}

static void run_close(run *r) {
    pw_store_free(r->s);
}

static pw_func *fn(run *r, const char *name) {
    pw_extern ex;
    assert_true(pw_instance_export(r->inst, name, strlen(name), &ex));
    return ex.u.func;
}

/* The call's result, or ~trap code when it trapped. */
static uint64_t call(run *r, const char *name, uint64_t a, uint64_t b) {
    pw_val in[2] = {{.bits = a}, {.bits = b}}, out = {0};
    pw_error e;
    pw_func *f = fn(r, name);
    pw_status st = pw_call(r->s, f, in, f->nparams, &out, 1, &e);
    if (st == PW_ERR_TRAP) return ~(uint64_t)e.trap;
    if (st != PW_OK) fail_msg("%s: %s", name, e.message);
    return (uint32_t)out.bits;
}

static int jstate(run *r, uint32_t i) {
    return pw__jit_state(r->inst->funcs[i]);
}

/* The sequence of calls every tier must agree on (results collected in out). */
static size_t script(run *r, uint64_t *out) {
    size_t n = 0;
    double d = -2.5;
    uint64_t db;
    memcpy(&db, &d, sizeof db);
    out[n++] = call(r, "main", 1, 9);  /* late, first reached through the table */
    out[n++] = call(r, "main", 0, 12); /* sq through the table */
    out[n++] = call(r, "main", 3, 40); /* rec: 40 levels through the table */
    out[n++] = call(r, "main", 2, 20); /* fib through the table */
    out[n++] = call(r, "main", 4, 1);  /* out of the table: a trap */
    out[n++] = call(r, "fib", 22, 0);
    out[n++] = call(r, "oob", 65533, 0); /* out of bounds: a trap */
    out[n++] = call(r, "oob", 100, 0);
    out[n++] = call(r, "fl", db, 0);
    out[n++] = call(r, "grow", 77, 0);
    out[n++] = call(r, "oob", 70000, 0);
    out[n++] = call(r, "main", 3, 3000); /* deep recursion through the table */
    return n;
}

static void lazy_vs_interp(int bounds) {
    mod x;
    mod_make(&x);
    run i, l;
    run_open(&i, x.m, PW_ENGINE_INTERP, bounds);
    run_open(&l, x.m, PW_ENGINE_LAZY, bounds);
    for (uint32_t k = 0; k < F_COUNT; k++)
        assert_int_equal(jstate(&l, k), 0); /* nothing translated at instantiation */
    /* main, fib and late (and sq, which late calls through the table) run first;
     * rec, oob, fl and grow are not translated until they are called */
    assert_int_equal(call(&l, "main", 1, 9), call(&i, "main", 1, 9));
    assert_int_equal(jstate(&l, F_MAIN), 1);
    assert_int_equal(jstate(&l, F_FIB), 1);
    assert_int_equal(jstate(&l, F_LATE), 1);
    assert_int_equal(jstate(&l, F_SQ), 1);
    assert_int_equal(jstate(&l, F_REC), 0);
    assert_int_equal(jstate(&l, F_OOB), 0);
    assert_int_equal(jstate(&l, F_FL), 0);
    assert_int_equal(jstate(&l, F_GROW), 0);
    uint64_t a[16], b[16];
    size_t na = script(&i, a), nb = script(&l, b);
    assert_int_equal(na, nb);
    for (size_t k = 0; k < na; k++)
        if (a[k] != b[k])
            fail_msg("call %zu: interpreter %llx, lazy JIT %llx", k, (unsigned long long)a[k],
                     (unsigned long long)b[k]);
    assert_int_equal(b[4], ~(uint64_t)PW_TRAP_UNDEF_ELEM);
    assert_int_equal(b[6], ~(uint64_t)PW_TRAP_MEM_OOB);
    for (uint32_t k = 0; k < F_COUNT; k++)
        assert_int_equal(jstate(&l, k), 1);
    run_close(&i);
    run_close(&l);
    mod_free(&x);
}

static void test_guard(void **state) {
    (void)state;
    lazy_vs_interp(PW_BOUNDS_GUARD);
}

static void test_explicit(void **state) {
    (void)state;
    lazy_vs_interp(PW_BOUNDS_EXPLICIT);
}

/* A lazy store first, then an eager one (the whole module translated), then lazy
 * again: one module, three stores, the same results. */
static void test_mixed(void **state) {
    (void)state;
    mod x;
    mod_make(&x);
    run i, l, j, l2;
    run_open(&i, x.m, PW_ENGINE_INTERP, PW_BOUNDS_GUARD);
    run_open(&l, x.m, PW_ENGINE_LAZY, PW_BOUNDS_GUARD);
    assert_int_equal(call(&l, "fib", 10, 0), 55);
    run_open(&j, x.m, PW_ENGINE_JIT, PW_BOUNDS_GUARD);
    run_open(&l2, x.m, PW_ENGINE_LAZY, PW_BOUNDS_GUARD);
    uint64_t a[16], b[16], c[16], d[16];
    size_t n = script(&i, a);
    assert_int_equal(script(&j, b), n);
    assert_int_equal(script(&l, c), n);
    assert_int_equal(script(&l2, d), n);
    assert_memory_equal(a, b, n * sizeof *a);
    assert_memory_equal(a, c, n * sizeof *a);
    assert_memory_equal(a, d, n * sizeof *a);
    run_close(&i);
    run_close(&j);
    run_close(&l);
    run_close(&l2);
    mod_free(&x);
}

/* Threads, each with its own store on one module, call the same untranslated
 * functions at once; every result is the interpreter's. */
#define NTHREADS 4
typedef struct job {
    const pw_module *m;
    const uint64_t *want;
    size_t n;
    int bad;
    pthread_barrier_t *go;
} job;

static void *worker(void *arg) {
    job *j = arg;
    pthread_barrier_wait(j->go);
    for (int rep = 0; rep < 20; rep++) { /* a fresh store each time (grow changes state) */
        pw_error err;
        pw_store_config cfg = {.engine = PW_ENGINE_LAZY};
        run r = {.s = pw_store_new(&cfg, &err)};
        r.inst = r.s ? pw_instantiate(r.s, j->m, NULL, NULL, &err) : NULL;
        uint64_t got[16];
        if (!r.inst || script(&r, got) != j->n || memcmp(got, j->want, j->n * sizeof *got) != 0)
            j->bad = 1;
        if (r.s) pw_store_free(r.s);
    }
    return NULL;
}

static void test_threads(void **state) {
    (void)state;
    for (int round = 0; round < 5; round++) {
        mod x;
        mod_make(&x);
        run i;
        run_open(&i, x.m, PW_ENGINE_INTERP, PW_BOUNDS_GUARD);
        uint64_t want[16];
        size_t n = script(&i, want);
        run_close(&i);
        pthread_barrier_t go;
        assert_int_equal(pthread_barrier_init(&go, NULL, NTHREADS), 0);
        pthread_t t[NTHREADS];
        job jobs[NTHREADS];
        for (int k = 0; k < NTHREADS; k++) {
            jobs[k] = (job){.m = x.m, .want = want, .n = n, .go = &go};
            assert_int_equal(pthread_create(&t[k], NULL, worker, &jobs[k]), 0);
        }
        for (int k = 0; k < NTHREADS; k++) {
            pthread_join(t[k], NULL);
            assert_int_equal(jobs[k].bad, 0);
        }
        pthread_barrier_destroy(&go);
        mod_free(&x);
    }
}

/* ---------------------------------------------------------------- the code cache */

static char *tmpdir(void) {
    char *d = strdup("/tmp/peri-lazy-XXXXXX");
    assert_non_null(d);
    assert_non_null(mkdtemp(d));
    return d;
}

static void rm_rf(const char *dir) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

static void attach(mod *x, const char *dir) {
    pw_code_cache_config cfg = {.dir = dir};
    pw_code_err ce;
    if (pw_module_set_code_cache(x->m, x->digest, &cfg, &ce) != PW_CODE_OK)
        fail_msg("cache: %s", ce.message);
}

/* The one artifact in dir, read whole (*len bytes; the caller frees). */
static uint8_t *only_file(const char *dir, size_t *len) {
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    char path[600] = {0};
    int n = 0;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') {
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            n++;
        }
    closedir(d);
    assert_int_equal(n, 1);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *p = malloc((size_t)sz);
    assert_non_null(p);
    assert_int_equal(fread(p, 1, (size_t)sz, f), (size_t)sz);
    fclose(f);
    *len = (size_t)sz;
    return p;
}

/* Entry offsets of an artifact (its header's offs section; nfuncs entries). */
static int64_t art_off(const uint8_t *art, size_t len, uint32_t nfuncs, uint32_t i) {
    uint64_t offs_off; /* cc_header.offs_off (codecache.c) */
    int64_t o;
    memcpy(&offs_off, art + 128, sizeof offs_off);
    assert_true(offs_off + (uint64_t)nfuncs * 8 <= len);
    memcpy(&o, art + offs_off + (size_t)i * 8, sizeof o);
    return o;
}

static void test_cache(void **state) {
    (void)state;
    char *dir = tmpdir();
    uint64_t want[16];
    size_t n;
    {
        mod x;
        mod_make(&x);
        run i;
        run_open(&i, x.m, PW_ENGINE_INTERP, PW_BOUNDS_GUARD);
        n = script(&i, want);
        run_close(&i);
        mod_free(&x);
    }
    /* 1: only fib runs; the module's end saves it alone */
    {
        mod x;
        mod_make(&x);
        attach(&x, dir);
        run l;
        run_open(&l, x.m, PW_ENGINE_LAZY, PW_BOUNDS_GUARD);
        assert_int_equal(call(&l, "fib", 20, 0), 6765);
        run_close(&l);
        mod_free(&x);
    }
    size_t len;
    uint8_t *art = only_file(dir, &len);
    mod x;
    mod_make(&x);
    pw_code_err ce;
    assert_int_equal(pw_code_verify(x.m, x.digest, art, len, &ce), PW_CODE_OK);
    uint32_t nf = x.m->code->nfuncs;
    assert_true(art_off(art, len, nf, F_FIB) >= 0);
    for (uint32_t k = 0; k < F_COUNT; k++)
        if (k != F_FIB) assert_int_equal(art_off(art, len, nf, k), PW_JIT_ABSENT);
    free(art);
    /* 2: fib comes from the cache, the rest is translated at first call; the merged
     * set is saved */
    attach(&x, dir);
    run l;
    run_open(&l, x.m, PW_ENGINE_LAZY, PW_BOUNDS_GUARD);
    assert_int_equal(call(&l, "oob", 100, 0), 0);
    assert_int_equal(jstate(&l, F_FIB), 1); /* published with the artifact */
    assert_int_equal(jstate(&l, F_MAIN), 0);
    uint64_t got[16];
    assert_int_equal(script(&l, got), n);
    assert_memory_equal(got, want, n * sizeof *got);
    run_close(&l);
    mod_free(&x);
    art = only_file(dir, &len);
    mod_make(&x);
    assert_int_equal(pw_code_verify(x.m, x.digest, art, len, &ce), PW_CODE_OK);
    for (uint32_t k = 0; k < F_COUNT; k++)
        assert_true(art_off(art, len, x.m->code->nfuncs, k) >= 0);
    free(art);
    /* 3: everything comes from the cache, under the lazy and the eager JIT */
    attach(&x, dir);
    run_open(&l, x.m, PW_ENGINE_LAZY, PW_BOUNDS_GUARD);
    assert_int_equal(call(&l, "fib", 5, 0), 5);
    for (uint32_t k = 0; k < F_COUNT; k++)
        assert_int_equal(jstate(&l, k), 1);
    assert_int_equal(script(&l, got), n);
    assert_memory_equal(got, want, n * sizeof *got);
    run_close(&l);
    run j;
    run_open(&j, x.m, PW_ENGINE_JIT, PW_BOUNDS_GUARD);
    assert_int_equal(script(&j, got), n);
    assert_memory_equal(got, want, n * sizeof *got);
    run_close(&j);
    mod_free(&x);
    rm_rf(dir);
    free(dir);
}

/* An eager store on a module whose cached translation is partial: the saved
 * functions run from it, the absent ones are translated at their first call. */
static void test_cache_eager_partial(void **state) {
    (void)state;
    char *dir = tmpdir();
    {
        mod x;
        mod_make(&x);
        attach(&x, dir);
        run l;
        run_open(&l, x.m, PW_ENGINE_LAZY, PW_BOUNDS_EXPLICIT);
        assert_int_equal(call(&l, "fib", 12, 0), 144);
        run_close(&l);
        mod_free(&x);
    }
    mod x;
    mod_make(&x);
    run i;
    run_open(&i, x.m, PW_ENGINE_INTERP, PW_BOUNDS_EXPLICIT);
    uint64_t want[16], got[16];
    size_t n = script(&i, want);
    run_close(&i);
    attach(&x, dir);
    run j;
    run_open(&j, x.m, PW_ENGINE_JIT, PW_BOUNDS_EXPLICIT);
    assert_int_equal(script(&j, got), n);
    assert_memory_equal(got, want, n * sizeof *got);
    for (uint32_t k = 0; k < F_COUNT; k++)
        assert_int_equal(jstate(&j, k), 1);
    run_close(&j);
    mod_free(&x);
    rm_rf(dir);
    free(dir);
}

/* `auto` on a big module (more than PW_TIER_SMALL_WORDS: a filler function) with a
 * code cache that has no translation for it: the store turns to lazy translation at
 * its first entry (nothing is translated in the background; the filler, never
 * called, is never translated) and what ran is saved; the next module's store turns
 * to the saved translation. */
#define FILLER 30000
static void big_make(mod *x) {
    static const char step[] = "(local.set 0 (i32.add (local.get 0) (i32.const 1)))";
    static const char head[] = " (func (export \"filler\") (param i32) (result i32)";
    size_t n = sizeof WAT + sizeof head + FILLER * (sizeof step - 1) + 64;
    char *text = malloc(n);
    assert_non_null(text);
    size_t at = sizeof WAT - 3; /* before the module's closing ")\n" */
    assert_int_equal(WAT[at], ')');
    memcpy(text, WAT, at);
    memcpy(text + at, head, sizeof head - 1);
    at += sizeof head - 1;
    for (int k = 0; k < FILLER; k++, at += sizeof step - 1)
        memcpy(text + at, step, sizeof step - 1);
    at += (size_t)snprintf(text + at, n - at, " (local.get 0)))\n");
    pw_error err;
    if (pw_wat_to_wasm(text, at, &x->bytes, &x->len, &err) != PW_OK)
        fail_msg("wat: %s", err.message);
    free(text);
    pb_sha256(x->bytes, x->len, x->digest);
    x->m = pw_module_new(x->bytes, x->len, NULL, &err);
    if (!x->m) fail_msg("module: %s", err.message);
    if (x->m->code->ncode <= PW_TIER_SMALL_WORDS)
        fail_msg("the big module has %zu words: raise FILLER", x->m->code->ncode);
}

static void test_auto_cache(void **state) {
    (void)state;
    char *dir = tmpdir();
    mod x;
    big_make(&x);
    run i;
    run_open(&i, x.m, PW_ENGINE_INTERP, PW_BOUNDS_GUARD);
    uint64_t want[16], got[16];
    size_t n = script(&i, want);
    run_close(&i);
    attach(&x, dir);
    run a;
    run_open(&a, x.m, PW_ENGINE_AUTO, PW_BOUNDS_GUARD);
    assert_int_equal(script(&a, got), n);
    assert_memory_equal(got, want, n * sizeof *got);
    assert_true(a.s->jit_on && a.s->jit_lazy && !a.s->jit_auto);
    uint32_t filler = x.m->code->nfuncs - 1;
    assert_int_equal(jstate(&a, filler), 0);
    assert_int_equal(jstate(&a, F_MAIN), 1);
    run_close(&a);
    mod_free(&x);
    size_t len;
    uint8_t *art = only_file(dir, &len);
    big_make(&x);
    pw_code_err ce;
    assert_int_equal(pw_code_verify(x.m, x.digest, art, len, &ce), PW_CODE_OK);
    assert_int_equal(art_off(art, len, x.m->code->nfuncs, filler), PW_JIT_ABSENT);
    assert_true(art_off(art, len, x.m->code->nfuncs, F_MAIN) >= 0);
    free(art);
    attach(&x, dir);
    run_open(&a, x.m, PW_ENGINE_AUTO, PW_BOUNDS_GUARD);
    assert_int_equal(script(&a, got), n);
    assert_memory_equal(got, want, n * sizeof *got);
    assert_true(a.s->jit_on && !a.s->jit_lazy);
    run_close(&a);
    mod_free(&x);
    rm_rf(dir);
    free(dir);
}

int main(void) {
    guard_keep();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_guard),      cmocka_unit_test(test_explicit),
        cmocka_unit_test(test_mixed),      cmocka_unit_test(test_threads),
        cmocka_unit_test(test_cache),      cmocka_unit_test(test_cache_eager_partial),
        cmocka_unit_test(test_auto_cache),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
