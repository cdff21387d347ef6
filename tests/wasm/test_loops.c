/*
 * test_loops.c — the interrupt flag (behind the room's CPU and wall limits) stops every
 * endless loop a guest can write (finding 2 and acceptance 3). Each export of
 * gc/loops.wasm (gc/loops.wat, built by gc/build.mjs) loops forever through one kind of
 * control transfer; a thread raises the flag 20 ms into the call, and the call must
 * trap with PW_TRAP_INTERRUPTED (a generous 5 s bound for "did not hang" on a loaded
 * machine; without the check the call never returns and ctest's timeout fails it).
 *
 * Control transfers tested:
 *   branches   br, br_if, br_if on a fused i32 / i64 compare, br_table (a case and the
 *              default), br_on_null, br_on_non_null, br_on_cast, br_on_cast_fail (all to a
 *              loop label);
 *   calls      return_call (self), return_call_indirect, return_call_ref, mutual tail
 *              calls (indirect + direct), a call inside a br loop;
 *   exceptions try_table catch of the loop's own throw, catch_all of a tag with a
 *              payload, catch_ref, catch_all_ref to a loop label with an exnref
 *              parameter, throw_ref of a caught exnref, unwinding through two frames,
 *              unwinding from a tail-called thrower, a host function that throws
 *              (pw_ctx_throw), the same host function reached by a tail call;
 *   host       a host function that re-enters Wasm (pw_call of a function without
 *              loops or calls) again and again.
 * The flag is also shown to stop a call that starts after it is raised.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "peri/wasm.h"
#include "raiser.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef PW_GC_FIXTURES
#error "PW_GC_FIXTURES must name the directory of loops.wasm"
#endif

typedef struct env {
    pw_store *s;
    pw_instance *inst;
    pw_tag *tag;
    pw_func *leaf;
    unsigned long reentries;
} env;

static pw_status h_throw(pw_call_ctx *cx, void *e, const pw_val *args, pw_val *results) {
    (void)args, (void)results;
    return pw_ctx_throw(cx, ((env *)e)->tag, NULL, 0);
}

static pw_status h_reenter(pw_call_ctx *cx, void *e, const pw_val *args, pw_val *results) {
    (void)args, (void)results, (void)cx;
    env *en = e;
    for (;;) {
        pw_error err;
        pw_status st = pw_call(en->s, en->leaf, NULL, 0, NULL, 0, &err);
        if (st != PW_OK) return st;
        en->reentries++;
    }
}

static bool resolve(void *ctx, pw_store *s, const pw_module *m, const pw_import_desc *imp,
                    pw_extern *out) {
    pw_error err;
    pw_host_fn fn = imp->name_len == 5 && memcmp(imp->name, "throw", 5) == 0 ? h_throw : h_reenter;
    out->kind = PW_EXTERN_FUNC;
    out->u.func = pw_func_new_host_for_import(s, m, imp->index, fn, ctx, &err);
    return out->u.func != NULL;
}

static uint8_t *bytes;
static size_t nbytes;
static pw_module *mod;

static void instance(env *en) {
    pw_error err;
    memset(en, 0, sizeof *en);
    en->s = pw_store_new(NULL, &err);
    assert_non_null(en->s);
    en->inst = pw_instantiate(en->s, mod, resolve, en, &err);
    if (!en->inst) fail_msg("instantiate: %s", err.message);
    pw_extern ex;
    assert_true(pw_instance_export(en->inst, "t", 1, &ex));
    en->tag = ex.u.tag;
    assert_true(pw_instance_export(en->inst, "leaf", 4, &ex));
    en->leaf = ex.u.func;
}

/* Calls export name in a fresh store; the flag goes up 20 ms in. */
static void stops(const char *name) {
    env en;
    instance(&en);
    pw_extern ex;
    if (!pw_instance_export(en.inst, name, strlen(name), &ex)) fail_msg("no export %s", name);
    raiser r = {en.s, 20, 0};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, raise_later, &r), 0);
    pw_error err;
    pw_status st = pw_call(en.s, ex.u.func, NULL, 0, NULL, 0, &err);
    double stopped = now_ms();
    pthread_join(th, NULL);
    if (st != PW_ERR_TRAP || err.trap != PW_TRAP_INTERRUPTED)
        fail_msg("%s: status %d trap %d (%s)", name, st, err.trap, err.message);
    if (stopped - r.at > 5000) fail_msg("%s: stopped %.0f ms after the flag", name, stopped - r.at);
    /* still raised: the next call stops at once, before any back-edge */
    st = pw_call(en.s, en.leaf, NULL, 0, NULL, 0, &err);
    assert_int_equal(st, PW_ERR_TRAP);
    assert_int_equal(err.trap, PW_TRAP_INTERRUPTED);
    pw_store_free(en.s);
}

static void test_branches(void **st) {
    (void)st;
    static const char *const names[] = {"br",         "br_if",
                                        "br_if_cmp",  "br_if_cmp_imm64",
                                        "br_table",   "br_table_default",
                                        "br_on_null", "br_on_non_null",
                                        "br_on_cast", "br_on_cast_fail"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        stops(names[i]);
}

static void test_calls(void **st) {
    (void)st;
    static const char *const names[] = {"return_call", "return_call_indirect", "return_call_ref",
                                        "return_call_mutual", "call_in_loop"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        stops(names[i]);
}

static void test_exceptions(void **st) {
    (void)st;
    static const char *const names[] = {
        "catch",         "catch_all",   "catch_ref",  "catch_all_ref_loop", "throw_ref",
        "unwind_frames", "unwind_tail", "host_throw", "host_throw_tail"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        stops(names[i]);
}

static void test_host_reentry(void **st) {
    (void)st;
    stops("host_reenter");
}

static int setup(void **st) {
    (void)st;
    FILE *f = fopen(PW_GC_FIXTURES "/loops.wasm", "rb");
    if (!f) return -1;
    fseek(f, 0, SEEK_END);
    nbytes = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    bytes = malloc(nbytes);
    if (!bytes || fread(bytes, 1, nbytes, f) != nbytes) nbytes = 0;
    fclose(f);
    pw_error err;
    mod = nbytes ? pw_module_new(bytes, nbytes, NULL, &err) : NULL;
    if (!mod) fprintf(stderr, "loops.wasm: %s\n", nbytes ? err.message : "unreadable");
    return mod ? 0 : -1;
}

static int teardown(void **st) {
    (void)st;
    pw_module_free(mod);
    free(bytes);
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_branches),
        cmocka_unit_test(test_calls),
        cmocka_unit_test(test_exceptions),
        cmocka_unit_test(test_host_reentry),
    };
    return cmocka_run_group_tests_name("wasm.loops", tests, setup, teardown);
}
