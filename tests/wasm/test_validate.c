/*
 * test_validate.c — the validator on hand-assembled modules: valid modules pass,
 * each class of invalid module ends in PW_ERR_INVALID with the spec's message first,
 * 100,000-deep nesting is handled without recursion, and type canonicalisation gives
 * iso-recursive equivalence within and across modules.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <cmocka.h>

#include "peri/wasm.h"
#include "wasm/module.h"
#include "wasm_builder.h"

#define HDR    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00
#define B(...) ((const uint8_t[]){__VA_ARGS__}), sizeof((const uint8_t[]){__VA_ARGS__})

static void expect(const uint8_t *b, size_t n, pw_status st, const char *prefix) {
    pw_error e;
    memset(&e, 0, sizeof e);
    pw_status got = pw_module_validate(b, n, &e);
    if (got != st || strncmp(e.message, prefix, strlen(prefix)) != 0)
        fail_msg("want status %d \"%s\", got %d \"%s\"", st, prefix, got, e.message);
}

/* A module with one function of type `type` (a functype encoding, 0x60 ...), one
 * memory page, a funcref table of 1, and `code` = locals + instructions + end. */
static void expect_func(const uint8_t *type, size_t tn, const uint8_t *code, size_t cn,
                        pw_status st, const char *prefix) {
    wb m = {0}, s = {0};
    wb_header(&m);
    wb_u32(&s, 1);
    wb_bytes(&s, type, tn);
    wb_section(&m, 1, &s);
    s.n = 0;
    wb_section(&m, 3, &(wb){(uint8_t *)"\x01\x00", 2, 2});
    wb_section(&m, 4, &(wb){(uint8_t *)"\x01\x70\x00\x01", 4, 4});
    wb_section(&m, 5, &(wb){(uint8_t *)"\x01\x00\x01", 3, 3});
    wb_u32(&s, 1);
    wb_u32(&s, (uint32_t)cn);
    wb_bytes(&s, code, cn);
    wb_section(&m, 10, &s);
    expect(m.p, m.n, st, prefix);
    wb_free(&m);
    wb_free(&s);
}

#define T_V    0x60, 0x00, 0x00       /* [] -> [] */
#define T_I    0x60, 0x00, 0x01, 0x7f /* [] -> [i32] */
#define T_II_I 0x60, 0x02, 0x7f, 0x7f, 0x01, 0x7f

static void test_valid_functions(void **state) {
    (void)state;
    expect_func(B(T_II_I), B(0x00, 0x20, 0x00, 0x20, 0x01, 0x6a, 0x0b), PW_OK, "");
    /* multi-value block, loop with params, br_if, br_table */
    expect_func(B(T_I),
                B(0x00, 0x02, 0x7f, 0x41, 0x02, 0x41, 0x00, 0x0d, 0x00, 0x41, 0x00, 0x0e, 0x01,
                  0x00, 0x00, 0x0b, 0x0b),
                PW_OK, "");
    /* polymorphic stack after unreachable: i32.add pops bottoms; select too */
    expect_func(B(T_I), B(0x00, 0x00, 0x6a, 0x0b), PW_OK, "");
    expect_func(B(T_I), B(0x00, 0x00, 0x1b, 0x0b), PW_OK, "");
    expect_func(B(T_V), B(0x00, 0x00, 0xd4, 0x1a, 0x0b), PW_OK, "");
    /* memory access with natural alignment, memory.grow */
    expect_func(B(T_I), B(0x00, 0x41, 0x00, 0x28, 0x02, 0x00, 0x41, 0x01, 0x40, 0x00, 0x6a, 0x0b),
                PW_OK, "");
    /* ref.func of a function never declared outside bodies */
    expect_func(B(T_V), B(0x01, 0x01, 0x64, 0x70, 0xd2, 0x00, 0x21, 0x00, 0x20, 0x00, 0x1a, 0x0b),
                PW_ERR_INVALID, "undeclared function reference");
}

static void test_invalid_functions(void **state) {
    (void)state;
    expect_func(B(T_I), B(0x00, 0x42, 0x00, 0x0b), PW_ERR_INVALID, "type mismatch");
    expect_func(B(T_I), B(0x00, 0x0b), PW_ERR_INVALID, "type mismatch");
    expect_func(B(T_V), B(0x00, 0x41, 0x00, 0x0b), PW_ERR_INVALID, "type mismatch");
    expect_func(B(T_V), B(0x00, 0x20, 0x00, 0x1a, 0x0b), PW_ERR_INVALID, "unknown local");
    expect_func(B(T_V), B(0x00, 0x0c, 0x01, 0x0b), PW_ERR_INVALID, "unknown label");
    expect_func(B(T_V), B(0x00, 0x10, 0x05, 0x0b), PW_ERR_INVALID, "unknown function");
    expect_func(B(T_V), B(0x00, 0x23, 0x00, 0x1a, 0x0b), PW_ERR_INVALID, "unknown global");
    expect_func(B(T_I), B(0x00, 0x41, 0x00, 0x28, 0x03, 0x00, 0x0b), PW_ERR_INVALID,
                "alignment must not be larger than natural");
    /* memory index 1 does not exist (multi-memory immediates decode, then fail) */
    expect_func(B(T_I), B(0x00, 0x41, 0x00, 0x28, 0x42, 0x01, 0x00, 0x0b), PW_ERR_INVALID,
                "unknown memory 1");
    /* select on references needs the typed form */
    expect_func(B(T_V), B(0x00, 0xd0, 0x70, 0xd0, 0x70, 0x41, 0x00, 0x1b, 0x1a, 0x0b),
                PW_ERR_INVALID, "type mismatch");
    /* if without else must not change the types */
    expect_func(B(T_I), B(0x00, 0x41, 0x00, 0x04, 0x7f, 0x41, 0x01, 0x0b, 0x0b), PW_ERR_INVALID,
                "type mismatch");
    /* a non-nullable local read before it is set */
    expect_func(B(T_V), B(0x01, 0x01, 0x64, 0x70, 0x20, 0x00, 0x1a, 0x0b), PW_ERR_INVALID,
                "uninitialized local");
    /* i32.const as the operand of i64.add */
    expect_func(B(T_V), B(0x00, 0x41, 0x00, 0x42, 0x00, 0x7c, 0x1a, 0x0b), PW_ERR_INVALID,
                "type mismatch");
}

static void test_module_rules(void **state) {
    (void)state;
    expect(B(HDR, 0x05, 0x05, 0x01, 0x00, 0x81, 0x80, 0x04), PW_ERR_INVALID, "memory size");
    expect(B(HDR, 0x05, 0x04, 0x01, 0x01, 0x02, 0x01), PW_ERR_INVALID,
           "size minimum must not be greater than maximum");
    /* multi-memory (Wasm 3.0): two memories are valid */
    expect(B(HDR, 0x05, 0x05, 0x02, 0x00, 0x01, 0x00, 0x01), PW_OK, "");
    /* memory64: up to 2^48 pages; an i64 memory of 2^56 pages is invalid */
    expect(B(HDR, 0x05, 0x0b, 0x01, 0x04, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01),
           PW_ERR_INVALID, "memory size");
    expect(B(HDR, 0x05, 0x09, 0x01, 0x04, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x40), PW_OK, "");
    /* table of 2^32 entries; memory of 2^32 pages (limits are read as u64) */
    expect(B(HDR, 0x04, 0x08, 0x01, 0x70, 0x00, 0x80, 0x80, 0x80, 0x80, 0x10), PW_ERR_INVALID,
           "table size");
    expect(B(HDR, 0x05, 0x08, 0x01, 0x01, 0x00, 0x80, 0x80, 0x80, 0x80, 0x10), PW_ERR_INVALID,
           "memory size");
    /* 65536 pages is the largest valid memory */
    expect(B(HDR, 0x05, 0x05, 0x01, 0x00, 0x80, 0x80, 0x04), PW_OK, "");
    expect(B(HDR, 0x04, 0x05, 0x01, 0x70, 0x01, 0x02, 0x01), PW_ERR_INVALID,
           "size minimum must not be greater than maximum");
    /* duplicate export name (two exports of memory 0 as "m") */
    expect(B(HDR, 0x05, 0x03, 0x01, 0x00, 0x01, 0x07, 0x09, 0x02, 0x01, 'm', 0x02, 0x00, 0x01, 'm',
             0x02, 0x00),
           PW_ERR_INVALID, "duplicate export name");
    /* global initialiser: not constant; refers to a later global */
    expect(B(HDR, 0x06, 0x07, 0x01, 0x7f, 0x00, 0x41, 0x00, 0x45, 0x0b), PW_ERR_INVALID,
           "constant expression required");
    expect(B(HDR, 0x06, 0x0b, 0x02, 0x7f, 0x00, 0x23, 0x01, 0x0b, 0x7f, 0x00, 0x41, 0x00, 0x0b),
           PW_ERR_INVALID, "unknown global");
    /* extended constant expressions are fine */
    expect(B(HDR, 0x06, 0x09, 0x01, 0x7f, 0x00, 0x41, 0x01, 0x41, 0x02, 0x6a, 0x0b), PW_OK, "");
    /* start function with a result */
    expect(B(HDR, 0x01, 0x05, 0x01, T_I, 0x03, 0x02, 0x01, 0x00, 0x08, 0x01, 0x00, 0x0a, 0x06, 0x01,
             0x04, 0x00, 0x41, 0x00, 0x0b),
           PW_ERR_INVALID, "start function");
    /* tag with results */
    expect(B(HDR, 0x01, 0x05, 0x01, T_I, 0x0d, 0x03, 0x01, 0x00, 0x00), PW_ERR_INVALID,
           "non-empty tag result type");
    /* type index out of range in a function declaration */
    expect(B(HDR, 0x03, 0x02, 0x01, 0x00, 0x0a, 0x04, 0x01, 0x02, 0x00, 0x0b), PW_ERR_INVALID,
           "unknown type");
}

/* 100,000 nested blocks: validated without recursion, in bounded memory. */
static void nested(int depth, bool bad, pw_status want) {
    wb code = {0};
    wb_byte(&code, 0x00);
    for (int i = 0; i < depth; i++)
        wb_bytes(&code, "\x02\x40", 2);
    if (bad) wb_bytes(&code, "\x42\x00", 2); /* leaves an i64 in an empty block */
    for (int i = 0; i < depth; i++)
        wb_byte(&code, 0x0b);
    wb_byte(&code, 0x0b);
    expect_func(B(T_V), code.p, code.n, want, want == PW_OK ? "" : "type mismatch");
    wb_free(&code);
}

static void test_deep_nesting(void **state) {
    (void)state;
    nested(100000, false, PW_OK);
    nested(100000, true, PW_ERR_INVALID);
    /* unterminated: 100,000 opened blocks and no ends */
    wb code = {0};
    wb_byte(&code, 0x00);
    for (int i = 0; i < 100000; i++)
        wb_bytes(&code, "\x02\x40", 2);
    expect_func(B(T_V), code.p, code.n, PW_ERR_MALFORMED, "unexpected end");
    wb_free(&code);
}

static pw_module *load(const uint8_t *b, size_t n) {
    pw_module *m = calloc(1, sizeof *m);
    assert_non_null(m);
    m->bytes = malloc(n);
    assert_non_null(m->bytes);
    memcpy(m->bytes, b, n);
    m->nbytes = n;
    pw_error e;
    if (pw__decode(m, &e) != PW_OK || pw__validate(m, &e) != PW_OK) fail_msg("load: %s", e.message);
    return m;
}

static void test_canonical_types(void **state) {
    (void)state;
    /* 0: (rec (struct (field (ref null 0))))   1: the same, spelled with index 1
     * 2: (struct) */
    pw_module *a = load(B(HDR, 0x01, 0x11, 0x03, 0x4e, 0x01, 0x5f, 0x01, 0x63, 0x00, 0x00, 0x4e,
                          0x01, 0x5f, 0x01, 0x63, 0x01, 0x00, 0x5f, 0x00));
    assert_int_equal(a->types[0].canon, 0);
    assert_int_equal(a->types[1].canon, 0);
    assert_int_equal(a->types[2].canon, 2);
    assert_true(pw__valtype_sub(a, PW_VT_MAKE_REF(1, 0), PW_VT_MAKE_REF(0, 1)));
    assert_false(pw__valtype_sub(a, PW_VT_MAKE_REF(0, 1), PW_VT_MAKE_REF(1, 0)));
    assert_true(pw__valtype_sub(a, PW_VT_MAKE_REF(2, 0), PW_VT_ABSREF(PW_HT_STRUCT, 0)));
    assert_true(pw__valtype_sub(a, PW_VT_MAKE_REF(2, 0), PW_VT_ABSREF(PW_HT_ANY, 1)));
    assert_false(pw__valtype_sub(a, PW_VT_MAKE_REF(2, 0), PW_VT_ABSREF(PW_HT_FUNC, 1)));
    assert_true(pw__valtype_sub(a, PW_VT_ABSREF(PW_HT_NONE, 1), PW_VT_MAKE_REF(2, 1)));
    /* 0: (struct)   1: (rec (struct (field (ref null 1)))) */
    pw_module *b =
        load(B(HDR, 0x01, 0x0a, 0x02, 0x5f, 0x00, 0x4e, 0x01, 0x5f, 0x01, 0x63, 0x01, 0x00));
    assert_true(pw__deftype_equiv(a, 0, b, 1));
    assert_true(pw__deftype_equiv(a, 1, b, 1));
    assert_true(pw__deftype_equiv(a, 2, b, 0));
    assert_false(pw__deftype_equiv(a, 0, b, 0));
    pw__module_destroy(a);
    pw__module_destroy(b);

    /* 0: (sub (struct))   1: (sub 0 (struct (field i32))) */
    pw_module *c = load(
        B(HDR, 0x01, 0x0c, 0x02, 0x50, 0x00, 0x5f, 0x00, 0x50, 0x01, 0x00, 0x5f, 0x01, 0x7f, 0x00));
    /* 0: (sub (struct)) */
    pw_module *d = load(B(HDR, 0x01, 0x05, 0x01, 0x50, 0x00, 0x5f, 0x00));
    assert_true(pw__deftype_sub(c, 1, 0));
    assert_false(pw__deftype_sub(c, 0, 1));
    assert_true(pw__deftype_sub_cross(c, 1, d, 0));
    assert_false(pw__deftype_sub_cross(d, 0, c, 1));
    pw__module_destroy(c);
    pw__module_destroy(d);
}

static void test_subtype_rules(void **state) {
    (void)state;
    /* supertype is final */
    expect(B(HDR, 0x01, 0x08, 0x02, 0x5f, 0x00, 0x50, 0x01, 0x00, 0x5f, 0x00), PW_ERR_INVALID,
           "sub type");
    /* subtype drops a field of its supertype */
    expect(
        B(HDR, 0x01, 0x0c, 0x02, 0x50, 0x00, 0x5f, 0x01, 0x7f, 0x00, 0x50, 0x01, 0x00, 0x5f, 0x00),
        PW_ERR_INVALID, "sub type");
    /* reference to a later recursion group */
    expect(B(HDR, 0x01, 0x08, 0x02, 0x5f, 0x01, 0x63, 0x01, 0x00, 0x5f, 0x00), PW_ERR_INVALID,
           "unknown type");
}

/* A chain of n declared subtypes: (sub (struct)), (sub 0 (struct)), ... */
static void chain(uint32_t n, pw_status want) {
    wb m = {0}, s = {0};
    wb_header(&m);
    wb_u32(&s, n);
    for (uint32_t i = 0; i < n; i++) {
        wb_byte(&s, 0x50);
        if (i == 0) {
            wb_byte(&s, 0x00);
        } else {
            wb_byte(&s, 0x01);
            wb_u32(&s, i - 1);
        }
        wb_bytes(&s, "\x5f\x00", 2);
    }
    wb_section(&m, 1, &s);
    expect(m.p, m.n, want, want == PW_OK ? "" : "implementation limit");
    wb_free(&m);
    wb_free(&s);
}

static void test_subtype_depth_limit(void **state) {
    (void)state;
    chain(64, PW_OK);          /* depth 63 */
    chain(65, PW_ERR_INVALID); /* depth 64 */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_functions),     cmocka_unit_test(test_invalid_functions),
        cmocka_unit_test(test_module_rules),        cmocka_unit_test(test_deep_nesting),
        cmocka_unit_test(test_canonical_types),     cmocka_unit_test(test_subtype_rules),
        cmocka_unit_test(test_subtype_depth_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
