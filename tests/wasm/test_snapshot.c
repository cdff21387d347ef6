/*
 * test_snapshot.c — instance snapshots (pw_snapshot, src/wasm/snapshot.c): an instance
 * made from a snapshot starts in exactly the snapshotted state (memory, data segments'
 * effects, globals, tables), and no write of any instance — the original after the
 * snapshot, or another snapshot instance — is seen by any other. Also
 * pw_module_new_owned, the start-up path that keeps the caller's buffer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "peri/wasm.h"
#include "wasm_builder.h"

/* set(x): mem[0] = x, g = x.  get_mem, get_glob, call0 (table[0] = get_glob), get16
 * (the data segment's word at 16). One page of memory, one funcref table. */
static wb module(void) {
    wb b = {0}, s = {0};
    wb_header(&b);
    static const uint8_t types[] = {0x02, 0x60, 0x00, 0x01, 0x7f, 0x60, 0x01, 0x7f, 0x00};
    wb_bytes(&s, types, sizeof types);
    wb_section(&b, 1, &s);
    wb_free(&s);
    static const uint8_t funcs[] = {0x05, 0x01, 0x00, 0x00, 0x00, 0x00};
    wb_bytes(&s, funcs, sizeof funcs);
    wb_section(&b, 3, &s);
    wb_free(&s);
    static const uint8_t table[] = {0x01, 0x70, 0x00, 0x01};
    wb_bytes(&s, table, sizeof table);
    wb_section(&b, 4, &s);
    wb_free(&s);
    static const uint8_t mem[] = {0x01, 0x00, 0x01};
    wb_bytes(&s, mem, sizeof mem);
    wb_section(&b, 5, &s);
    wb_free(&s);
    static const uint8_t glob[] = {0x01, 0x7f, 0x01, 0x41, 0x00, 0x0b};
    wb_bytes(&s, glob, sizeof glob);
    wb_section(&b, 6, &s);
    wb_free(&s);
    static const char *const names[] = {"set", "get_mem", "get_glob", "call0", "get16"};
    wb_byte(&s, 5);
    for (uint8_t i = 0; i < 5; i++) {
        wb_u32(&s, (uint32_t)strlen(names[i]));
        wb_bytes(&s, names[i], strlen(names[i]));
        wb_byte(&s, 0);
        wb_byte(&s, i);
    }
    wb_section(&b, 7, &s);
    wb_free(&s);
    static const uint8_t elem[] = {0x01, 0x00, 0x41, 0x00, 0x0b, 0x01, 0x02};
    wb_bytes(&s, elem, sizeof elem);
    wb_section(&b, 9, &s);
    wb_free(&s);
    static const uint8_t code[] = {0x05,
                                   /* set */ 0x0d,
                                   0x00,
                                   0x41,
                                   0x00,
                                   0x20,
                                   0x00,
                                   0x36,
                                   0x02,
                                   0x00,
                                   0x20,
                                   0x00,
                                   0x24,
                                   0x00,
                                   0x0b,
                                   /* get_mem */ 0x07,
                                   0x00,
                                   0x41,
                                   0x00,
                                   0x28,
                                   0x02,
                                   0x00,
                                   0x0b,
                                   /* get_glob */ 0x04,
                                   0x00,
                                   0x23,
                                   0x00,
                                   0x0b,
                                   /* call0 */ 0x07,
                                   0x00,
                                   0x41,
                                   0x00,
                                   0x11,
                                   0x00,
                                   0x00,
                                   0x0b,
                                   /* get16 */ 0x07,
                                   0x00,
                                   0x41,
                                   0x10,
                                   0x28,
                                   0x02,
                                   0x00,
                                   0x0b};
    wb_bytes(&s, code, sizeof code);
    wb_section(&b, 10, &s);
    wb_free(&s);
    static const uint8_t data[] = {0x01, 0x00, 0x41, 0x10, 0x0b, 0x04, 0x2a, 0x00, 0x00, 0x00};
    wb_bytes(&s, data, sizeof data);
    wb_section(&b, 11, &s);
    wb_free(&s);
    return b;
}

static int32_t call(pw_store *s, pw_instance *in, const char *name, int32_t arg, bool has_arg) {
    pw_extern ex;
    assert_true(pw_instance_export(in, name, strlen(name), &ex));
    pw_val a = {.i32 = arg}, r = {0};
    pw_error e;
    assert_int_equal(pw_call(s, ex.u.func, &a, has_arg ? 1 : 0, &r, has_arg ? 0 : 1, &e), PW_OK);
    return r.i32;
}

static int32_t get(pw_store *s, pw_instance *in, const char *name) {
    return call(s, in, name, 0, false);
}

static void test_snapshot_isolation(void **state) {
    (void)state;
    wb bin = module();
    pw_error e;
    pw_module *m = pw_module_new(bin.p, bin.n, NULL, &e);
    assert_non_null(m);
    pw_store *a = pw_store_new(NULL, &e);
    pw_instance *ia = pw_instantiate(a, m, NULL, NULL, &e);
    assert_non_null(ia);
    call(a, ia, "set", 7, true);
    pw_snapshot *snap = pw_snapshot_take(ia, &e);
    assert_non_null(snap);
    assert_true(pw_snapshot_bytes(snap) >= 65536);
    call(a, ia, "set", 99, true); /* after the snapshot: not part of it */

    pw_store *b = pw_store_new(NULL, &e);
    pw_instance *ib = pw_instantiate_snapshot(b, m, snap, NULL, NULL, &e);
    assert_non_null(ib);
    assert_int_equal(get(b, ib, "get_mem"), 7);
    assert_int_equal(get(b, ib, "get_glob"), 7);
    assert_int_equal(get(b, ib, "call0"), 7);  /* the table, rebuilt for this instance */
    assert_int_equal(get(b, ib, "get16"), 42); /* the data segment's effect */
    call(b, ib, "set", 55, true);
    assert_int_equal(get(b, ib, "get_mem"), 55);

    pw_store_free(a); /* the snapshot outlives the store it came from */
    pw_store *c = pw_store_new(NULL, &e);
    pw_instance *ic = pw_instantiate_snapshot(c, m, snap, NULL, NULL, &e);
    assert_non_null(ic);
    assert_int_equal(get(c, ic, "get_mem"), 7); /* b's write is b's alone */
    assert_int_equal(get(c, ic, "get_glob"), 7);
    assert_int_equal(get(b, ib, "get_glob"), 55);
    pw_store_free(b);
    pw_store_free(c);

    /* A snapshot belongs to its module. */
    wb bin2 = module();
    pw_module *m2 = pw_module_new(bin2.p, bin2.n, NULL, &e);
    pw_store *d = pw_store_new(NULL, &e);
    assert_null(pw_instantiate_snapshot(d, m2, snap, NULL, NULL, &e));
    assert_int_equal(e.status, PW_ERR_ARG);
    pw_store_free(d);
    pw_module_free(m2);
    wb_free(&bin2);

    pw_snapshot_free(snap);
    pw_module_free(m);
    wb_free(&bin);
}

/* pw_module_new_owned: the module keeps the buffer (no copy) and behaves as one made
 * by pw_module_new; invalid or truncated bytes are refused and the buffer freed. */
static void test_module_owned(void **state) {
    (void)state;
    wb bin = module();
    pw_error e;
    uint8_t *own = malloc(bin.n);
    assert_non_null(own);
    memcpy(own, bin.p, bin.n);
    pw_module *m = pw_module_new_owned(own, bin.n, NULL, &e);
    assert_non_null(m);
    pw_export_desc ex;
    pw_module_export(m, 0, &ex);
    assert_int_equal(ex.name_len, 3);
    assert_memory_equal(ex.name, "set", 3);
    pw_store *s = pw_store_new(NULL, &e);
    pw_instance *in = pw_instantiate(s, m, NULL, NULL, &e);
    assert_non_null(in);
    assert_int_equal(get(s, in, "get16"), 42);
    call(s, in, "set", 9, true);
    assert_int_equal(get(s, in, "get_mem"), 9);
    pw_store_free(s);
    pw_module_free(m);

    uint8_t *bad = malloc(bin.n);
    assert_non_null(bad);
    memcpy(bad, bin.p, bin.n);
    bad[8] = 0x7e; /* the first section's id: no such section */
    assert_null(pw_module_new_owned(bad, bin.n, NULL, &e));
    assert_int_not_equal(e.status, PW_OK);
    uint8_t *cut = malloc(bin.n);
    assert_non_null(cut);
    memcpy(cut, bin.p, bin.n);
    assert_null(pw_module_new_owned(cut, bin.n - 3, NULL, &e));
    assert_int_equal(e.status, PW_ERR_MALFORMED);
    assert_null(pw_module_new_owned(NULL, 0, NULL, &e));
    assert_int_not_equal(e.status, PW_OK);
    wb_free(&bin);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_snapshot_isolation),
                                       cmocka_unit_test(test_module_owned)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
