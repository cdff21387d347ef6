/*
 * test_tier.c — the `auto` execution tier, the default (issue 18; src/wasm/tier.c,
 * docs/jit.md "Choosing the tier"): a store starts on the interpreter and counts
 * calls per compiled module; at the threshold the module is translated on a
 * background thread and stores turn to the JIT once all of it is published; a module
 * already translated turns a new store at its first entry; the interrupt (CPU limit)
 * stops an endless loop in every phase; `interp` never translates.
 * The module (hand-assembled): fib(n) recursive, spin() = loop { br 0 }.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "peri/wasm.h"
#include "wasm/jit/jit.h"
#include "wasm/runtime.h"

#include <pthread.h>
#include <string.h>
#include <time.h>

static const uint8_t MOD[] = {
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x01, 0x09, 0x02, 0x60, 0x01, 0x7f, 0x01, 0x7f,
    0x60, 0x00, 0x00, 0x03, 0x03, 0x02, 0x00, 0x01, 0x07, 0x0e, 0x02, 0x03, 0x66, 0x69, 0x62, 0x00,
    0x00, 0x04, 0x73, 0x70, 0x69, 0x6e, 0x00, 0x01, 0x0a, 0x26, 0x02, 0x1c, 0x00, 0x20, 0x00, 0x41,
    0x02, 0x48, 0x04, 0x7f, 0x20, 0x00, 0x05, 0x20, 0x00, 0x41, 0x01, 0x6b, 0x10, 0x00, 0x20, 0x00,
    0x41, 0x02, 0x6b, 0x10, 0x00, 0x6a, 0x0b, 0x0b, 0x07, 0x00, 0x03, 0x40, 0x0c, 0x00, 0x0b, 0x0b};

typedef struct st {
    pw_store *s;
    pw_instance *inst;
} st;

static pw_module *module(void) {
    pw_error err;
    pw_module *m = pw_module_new(MOD, sizeof MOD, NULL, &err);
    if (!m) fail_msg("module: %s", err.message);
    return m;
}

static void open_store(st *x, pw_module *m, int engine) {
    pw_error err;
    pw_store_config cfg = {.engine = engine};
    x->s = pw_store_new(&cfg, &err);
    assert_non_null(x->s);
    x->inst = pw_instantiate(x->s, m, NULL, NULL, &err);
    if (!x->inst) fail_msg("instantiate: %s", err.message);
}

static pw_func *fn(st *x, const char *name) {
    pw_extern ex;
    assert_true(pw_instance_export(x->inst, name, strlen(name), &ex));
    return ex.u.func;
}

static int32_t fib(st *x, int32_t n) {
    pw_val a = {.bits = (uint32_t)n}, out = {0};
    pw_error e;
    if (pw_call(x->s, fn(x, "fib"), &a, 1, &out, 1, &e) != PW_OK) fail_msg("fib: %s", e.message);
    return (int32_t)out.bits;
}

/* Waits (at most 20 s: a loaded machine) for the background translation of x's module. */
static void wait_translated(st *x) {
    for (int i = 0; i < 2000 && pw_jit_state(fn(x, "fib")) == 0; i++) {
        struct timespec d = {0, 10 * 1000 * 1000};
        nanosleep(&d, NULL);
    }
    assert_int_equal(pw_jit_state(fn(x, "fib")), 1);
}

static void test_counts_then_turns(void **state) {
    (void)state;
    if (!PW_JIT_AVAILABLE) skip();
    pw_module *m = module();
    const struct pw_cmodule *cm = m->code;
    st a;
    open_store(&a, m, PW_ENGINE_AUTO); /* engine 0: the default */
    assert_true(a.s->jit_auto && !a.s->jit_on);
    /* fib(3) makes 4 interpreted calls: counted, added to the module at the return. */
    assert_int_equal(fib(&a, 3), 2);
    assert_int_equal(atomic_load(&cm->tier_calls), 4);
    assert_int_equal(atomic_load(&cm->tier_state), 0);
    /* A second store adds to the same module's count (the room's cache shares it). */
    st b;
    open_store(&b, m, PW_ENGINE_AUTO);
    for (int i = 0; i < 14; i++)
        assert_int_equal(fib(&b, 3), 2);
    assert_int_equal(atomic_load(&cm->tier_calls), 60);
    assert_int_equal(atomic_load(&cm->tier_state), 0);
    assert_int_equal(pw_jit_state(fn(&b, "fib")), 0);
    /* 64 (the minimum threshold) reached: the translation starts, in the background;
     * the running store keeps interpreting, results unchanged. */
    assert_int_equal(fib(&b, 3), 2);
    assert_int_equal(atomic_load(&cm->tier_state), 1);
    wait_translated(&b);
    assert_false(b.s->jit_on); /* turns at its next call that finds it translated */
    assert_int_equal(fib(&b, 20), 6765);
    assert_true(b.s->jit_on && !b.s->jit_auto);
    /* Store a turns at its next entry from the host. */
    assert_int_equal(fib(&a, 1), 1);
    assert_true(a.s->jit_on);
    /* A new store on the translated module runs JIT code from its first entry. */
    st c;
    open_store(&c, m, PW_ENGINE_AUTO);
    assert_int_equal(fib(&c, 1), 1);
    assert_true(c.s->jit_on);
    assert_int_equal(fib(&c, 25), 75025);
    pw_store_free(a.s);
    pw_store_free(b.s);
    pw_store_free(c.s);
    pw_module_free(m);
}

static void test_interp_never_translates(void **state) {
    (void)state;
    pw_module *m = module();
    st a;
    open_store(&a, m, PW_ENGINE_INTERP);
    assert_int_equal(fib(&a, 20), 6765);
    assert_int_equal(atomic_load(&m->code->tier_calls), 0);
    assert_int_equal(atomic_load(&m->code->tier_state), 0);
    assert_int_equal(pw_jit_state(fn(&a, "fib")), 0);
    assert_false(a.s->jit_on || a.s->jit_auto);
    pw_store_free(a.s);
    pw_module_free(m);
}

/* A module freed while its translation may still run: pw_module_free waits for it
 * (ASan would see a use after free otherwise). */
static void test_free_during_translation(void **state) {
    (void)state;
    for (int i = 0; i < 20; i++) {
        pw_module *m = module();
        st a;
        open_store(&a, m, PW_ENGINE_AUTO);
        assert_int_equal(fib(&a, 10), 55);
        pw_store_free(a.s);
        pw_module_free(m);
    }
}

typedef struct raiser {
    pw_store *s;
} raiser;

static void *raise_later(void *arg) {
    raiser *r = arg;
    struct timespec d = {0, 50 * 1000 * 1000};
    nanosleep(&d, NULL);
    pw_store_interrupt(r->s);
    return NULL;
}

static void spin_stops(st *x) {
    raiser r = {x->s};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, raise_later, &r), 0);
    pw_error e;
    pw_status s = pw_call(x->s, fn(x, "spin"), NULL, 0, NULL, 0, &e);
    pthread_join(th, NULL);
    assert_int_equal(s, PW_ERR_TRAP);
    assert_int_equal(e.trap, PW_TRAP_INTERRUPTED);
    pw_store_clear_interrupt(x->s);
}

/* The interrupt (the room's CPU limit) stops an endless loop before and after the
 * store turns. */
static void test_interrupt_both_phases(void **state) {
    (void)state;
    pw_module *m = module();
    st a;
    open_store(&a, m, PW_ENGINE_AUTO);
    spin_stops(&a); /* counting phase: the interpreter */
    assert_int_equal(fib(&a, 15), 610);
    if (PW_JIT_AVAILABLE) {
        wait_translated(&a);
        assert_int_equal(fib(&a, 2), 1);
        assert_true(a.s->jit_on);
        spin_stops(&a); /* turned: the JIT */
        assert_int_equal(pw_jit_state(fn(&a, "spin")), 1);
    }
    assert_int_equal(fib(&a, 10), 55);
    pw_store_free(a.s);
    pw_module_free(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts_then_turns),
        cmocka_unit_test(test_interp_never_translates),
        cmocka_unit_test(test_free_during_translation),
        cmocka_unit_test(test_interrupt_both_phases),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
