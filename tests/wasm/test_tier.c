/*
 * test_tier.c — the `auto` execution tier, the default (src/wasm/tier.c,
 * docs/jit.md "Choosing the tier"): a store starts on the interpreter and counts
 * calls per compiled module; at the threshold the module is translated on a
 * background thread and stores turn to the JIT once all of it is published; a module
 * already translated turns a new store at its first entry; the interrupt (CPU limit)
 * stops an endless loop in every phase; `interp` never translates.
 * A small module is translated at its first call.
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

/* The module: fib(n) recursive, spin() = loop { br 0 }, and a filler function of
 * FILLER steps `x = x + 1` that makes the module bigger than PW_TIER_SMALL_WORDS
 * (small modules are translated at their first call; this one must be counted). */
#define FILLER 24000
static const uint8_t HEAD[] = {0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
                               /* types: (i32)->i32, ()->() */
                               0x01, 0x09, 0x02, 0x60, 0x01, 0x7f, 0x01, 0x7f, 0x60, 0x00, 0x00,
                               /* funcs: fib, spin, filler */
                               0x03, 0x04, 0x03, 0x00, 0x01, 0x00,
                               /* exports "fib" "spin" */
                               0x07, 0x0e, 0x02, 0x03, 0x66, 0x69, 0x62, 0x00, 0x00, 0x04, 0x73,
                               0x70, 0x69, 0x6e, 0x00, 0x01};
static const uint8_t FIB[] = {0x1c, 0x00, 0x20, 0x00, 0x41, 0x02, 0x48, 0x04, 0x7f, 0x20,
                              0x00, 0x05, 0x20, 0x00, 0x41, 0x01, 0x6b, 0x10, 0x00, 0x20,
                              0x00, 0x41, 0x02, 0x6b, 0x10, 0x00, 0x6a, 0x0b, 0x0b};
static const uint8_t SPIN[] = {0x07, 0x00, 0x03, 0x40, 0x0c, 0x00, 0x0b, 0x0b};
static const uint8_t STEP[] = {0x20, 0x00, 0x41, 0x01, 0x6a, 0x21, 0x00};

static size_t leb(uint8_t *p, uint32_t v) {
    size_t n = 0;
    do {
        uint8_t b = v & 0x7f;
        v >>= 7;
        p[n++] = (uint8_t)(b | (v ? 0x80 : 0));
    } while (v);
    return n;
}

/* The module bytes (static buffer, built once). */
static const uint8_t *mod_bytes(size_t *len) {
    static uint8_t buf[sizeof HEAD + 32 + sizeof FIB + sizeof SPIN + FILLER * sizeof STEP];
    static size_t n;
    if (n) {
        *len = n;
        return buf;
    }
    uint32_t body = 1 + FILLER * (uint32_t)sizeof STEP + 3; /* locals, steps, get 0, end */
    uint8_t bl[5], cl[5];
    size_t nbl = leb(bl, body);
    uint32_t code = 1 + (uint32_t)sizeof FIB + (uint32_t)sizeof SPIN + (uint32_t)nbl + body;
    size_t ncl = leb(cl, code);
    memcpy(buf, HEAD, sizeof HEAD);
    n = sizeof HEAD;
    buf[n++] = 0x0a;
    memcpy(buf + n, cl, ncl);
    n += ncl;
    buf[n++] = 3;
    memcpy(buf + n, FIB, sizeof FIB);
    n += sizeof FIB;
    memcpy(buf + n, SPIN, sizeof SPIN);
    n += sizeof SPIN;
    memcpy(buf + n, bl, nbl);
    n += nbl;
    buf[n++] = 0; /* no locals */
    for (int i = 0; i < FILLER; i++, n += sizeof STEP)
        memcpy(buf + n, STEP, sizeof STEP);
    buf[n++] = 0x20;
    buf[n++] = 0x00;
    buf[n++] = 0x0b;
    *len = n;
    return buf;
}

typedef struct st {
    pw_store *s;
    pw_instance *inst;
} st;

static pw_module *module(void) {
    pw_error err;
    size_t len;
    const uint8_t *b = mod_bytes(&len);
    pw_module *m = pw_module_new(b, len, NULL, &err);
    if (!m) fail_msg("module: %s", err.message);
    if (m->code->ncode <= PW_TIER_SMALL_WORDS)
        fail_msg("the test module has %zu words: raise FILLER", m->code->ncode);
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

/* Waits (at most 20 s: a loaded machine) for the background translation of x's module
 * to be published whole: the JIT publishes the entries in order, so the last
 * function's (the filler's, not exported) comes last. */
static void wait_translated(st *x) {
    const struct pw_cmodule *cm = x->inst->mod->code;
    pw_func last = {.inst = x->inst, .code = &cm->funcs[cm->nfuncs - 1]};
    for (int i = 0; i < 2000 && pw__jit_state(&last) == 0; i++) {
        struct timespec d = {0, 10 * 1000 * 1000};
        nanosleep(&d, NULL);
    }
    assert_int_not_equal(pw__jit_state(&last), 0);
    assert_int_equal(pw__jit_state(fn(x, "fib")), 1);
}

static void test_counts_then_turns(void **state) {
    (void)state;
    if (!PW_JIT_AVAILABLE) skip();
    pw_module *m = module();
    const struct pw_cmodule *cm = m->code;
    const uint64_t need = cm->ncode / PW_TIER_WORDS_PER_CALL;
    st a;
    open_store(&a, m, PW_ENGINE_AUTO); /* engine 0: the default */
    assert_true(a.s->jit_auto && !a.s->jit_on);
    /* fib(3) makes 4 interpreted calls: counted, added to the module at the return. */
    assert_int_equal(fib(&a, 3), 2);
    assert_int_equal(atomic_load(&cm->tier_calls), 4);
    assert_int_equal(atomic_load(&cm->tier_state), 0);
    /* A second store adds to the same module's count (the room's cache shares it);
     * the translation starts in the entry whose calls reach the threshold, exactly. */
    st b;
    open_store(&b, m, PW_ENGINE_AUTO);
    uint64_t before;
    do {
        before = atomic_load(&cm->tier_calls);
        assert_int_equal(atomic_load(&cm->tier_state), 0);
        assert_int_equal(fib(&b, 3), 2);
    } while (atomic_load(&cm->tier_state) == 0 && before < need);
    assert_true(before < need && before + 4 >= need);
    assert_int_equal(atomic_load(&cm->tier_state), 1);
    /* in the background: the running store keeps interpreting meanwhile */
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

/* A small module is translated at its first call, as under `jit`. */
static void test_small_module_at_once(void **state) {
    (void)state;
    if (!PW_JIT_AVAILABLE) skip();
    static const uint8_t small[] = {
        0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x01, 0x09, 0x02, 0x60, 0x01, 0x7f, 0x01,
        0x7f, 0x60, 0x00, 0x00, 0x03, 0x03, 0x02, 0x00, 0x01, 0x07, 0x0e, 0x02, 0x03, 0x66, 0x69,
        0x62, 0x00, 0x00, 0x04, 0x73, 0x70, 0x69, 0x6e, 0x00, 0x01, 0x0a, 0x26, 0x02};
    uint8_t bytes[sizeof small + sizeof FIB + sizeof SPIN];
    memcpy(bytes, small, sizeof small);
    memcpy(bytes + sizeof small, FIB, sizeof FIB);
    memcpy(bytes + sizeof small + sizeof FIB, SPIN, sizeof SPIN);
    pw_error err;
    pw_module *m = pw_module_new(bytes, sizeof bytes, NULL, &err);
    if (!m) fail_msg("module: %s", err.message);
    assert_true(m->code->ncode <= PW_TIER_SMALL_WORDS);
    st a;
    open_store(&a, m, PW_ENGINE_AUTO);
    assert_int_equal(fib(&a, 1), 1);
    assert_true(a.s->jit_on);
    assert_int_equal(pw__jit_state(fn(&a, "fib")), 1);
    assert_int_equal(atomic_load(&m->code->tier_state), 0); /* no background job */
    pw_store_free(a.s);
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
    assert_int_equal(pw__jit_state(fn(&a, "fib")), 0);
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
        assert_int_equal(fib(&a, 25), 75025); /* past the threshold: translation starts */
        if (PW_JIT_AVAILABLE) assert_int_equal(atomic_load(&m->code->tier_state), 1);
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
    assert_int_equal(fib(&a, 25), 75025);
    if (PW_JIT_AVAILABLE) {
        wait_translated(&a);
        assert_int_equal(fib(&a, 2), 1);
        assert_true(a.s->jit_on);
        spin_stops(&a); /* turned: the JIT */
        assert_int_equal(pw__jit_state(fn(&a, "spin")), 1);
    }
    assert_int_equal(fib(&a, 10), 55);
    pw_store_free(a.s);
    pw_module_free(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts_then_turns),
        cmocka_unit_test(test_small_module_at_once),
        cmocka_unit_test(test_interp_never_translates),
        cmocka_unit_test(test_free_during_translation),
        cmocka_unit_test(test_interrupt_both_phases),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
