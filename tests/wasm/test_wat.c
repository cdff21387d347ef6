/*
 * test_wat.c — the text-format parser (pw_wat_to_wasm) and legacy exception handling.
 *
 * Exact encodings of small modules (the reference encoder's bytes with minimal LEB128
 * sizes), typed errors with line:column, hostile input (every truncation of sample
 * modules, single-byte corruptions, deep nesting, huge literals, unterminated
 * strings and comments) that must come back as errors and never crash (the ASan build
 * runs this too), and legacy try/catch/catch_all/delegate/rethrow executed in both
 * tiers from text modules.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "peri/wasm.h"

static uint8_t *wat(const char *text, size_t *n, pw_error *err) {
    uint8_t *out = NULL;
    pw_status st = pw_wat_to_wasm(text, strlen(text), &out, n, err);
    if (st != PW_OK) {
        assert_null(out);
        return NULL;
    }
    assert_non_null(out);
    return out;
}

static void expect_bytes(const char *text, const uint8_t *want, size_t wn) {
    pw_error err;
    size_t n;
    uint8_t *b = wat(text, &n, &err);
    if (!b) fail_msg("%s: %s", text, err.message);
    if (n != wn || memcmp(b, want, n) != 0) {
        for (size_t i = 0; i < n; i++)
            fprintf(stderr, "%02x ", b[i]);
        fprintf(stderr, "\n");
        fail_msg("%s: encoding differs", text);
    }
    free(b);
}

static void expect_error(const char *text, const char *msg) {
    pw_error err;
    size_t n;
    uint8_t *b = wat(text, &n, &err);
    if (b) fail_msg("%s: accepted", text);
    assert_int_equal(err.status, PW_ERR_MALFORMED);
    if (!strstr(err.message, msg))
        fail_msg("%s: message \"%s\" lacks \"%s\"", text, err.message, msg);
}

#define HDR 0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00

static void test_encodings(void **state) {
    (void)state;
    static const uint8_t empty[] = {HDR};
    expect_bytes("(module)", empty, sizeof empty);
    expect_bytes("", empty, sizeof empty);
    expect_bytes(";; nothing\n(module $m (; block (; nested ;) ;))", empty, sizeof empty);
    /* (func (export "add") (param i32 i32) (result i32) local.get 0 local.get 1 i32.add) */
    static const uint8_t add[] = {HDR,  0x01, 0x07, 0x01, 0x60, 0x02, 0x7f, 0x7f, 0x01,
                                  0x7f, 0x03, 0x02, 0x01, 0x00, 0x07, 0x07, 0x01, 0x03,
                                  'a',  'd',  'd',  0x00, 0x00, 0x0a, 0x09, 0x01, 0x07,
                                  0x00, 0x20, 0x00, 0x20, 0x01, 0x6a, 0x0b};
    expect_bytes("(module (func (export \"add\") (param $a i32) (param i32) (result i32)\n"
                 "  local.get $a local.get 1 i32.add))",
                 add, sizeof add);
    /* the same, folded, as a list of fields */
    expect_bytes("(func (export \"add\") (param i32 i32) (result i32)"
                 " (i32.add (local.get 0) (local.get 1)))",
                 add, sizeof add);
    /* numeric literals: hex, underscores, a hex float, a NaN payload */
    static const uint8_t nums[] = {HDR,  0x01, 0x04, 0x01, 0x60, 0x00, 0x00, 0x03, 0x02, 0x01,
                                   0x00, 0x0a, 0x18, 0x01, 0x16, 0x00, 0x41, 0xff, 0x01, 0x1a,
                                   0x43, 0x00, 0x00, 0xc0, 0x3f, 0x1a, 0x44, 0x01, 0x00, 0x00,
                                   0x00, 0x00, 0x00, 0xf0, 0x7f, 0x1a, 0x0b};
    expect_bytes("(func (drop (i32.const 0xf_f)) (drop (f32.const 0x1.8p0))"
                 " (drop (f64.const nan:0x1)))",
                 nums, sizeof nums);
    /* module binary and module quote */
    expect_bytes("(module binary \"\\00asm\" \"\\01\\00\\00\\00\")", empty, sizeof empty);
    expect_bytes("(module quote \"(module\" \")\")", empty, sizeof empty);
    /* data strings with escapes, inline memory with data */
    static const uint8_t data[] = {HDR,  0x05, 0x04, 0x01, 0x01, 0x01, 0x01, 0x0b, 0x0a, 0x01,
                                   0x00, 0x41, 0x00, 0x0b, 0x04, 'a',  '\n', 0xce, 0xbb};
    expect_bytes("(memory (data \"a\\n\" \"\\u{3bb}\"))", data, sizeof data);
}

static void test_errors(void **state) {
    (void)state;
    expect_error("(module (func (i32.const0)))", "unknown operator (at 1:16)");
    expect_error("(module\n  (func (result i32)\n    (i32.const 0x1_0000_0000)))",
                 "constant out of range (at 3:16)");
    expect_error("(func (local $x i32) (local $x i32))", "duplicate local");
    expect_error("(func $f) (func $f)", "duplicate func");
    expect_error("(func (call $nope))", "unknown func");
    expect_error("(func (block $l (br $m)))", "unknown label");
    expect_error("(func block $a end $b)", "mismatching label");
    expect_error("(func) (import \"\" \"\" (func))", "import after func");
    expect_error("(memory 1) (func (drop (i32.load align=3 (i32.const 0))))", "power of two");
    expect_error("(func (drop (f32.const 0x1p128)))", "constant out of range");
    expect_error("(func (drop (f32.const nan:0x0)))", "constant out of range");
    expect_error("(module (func)", "expected \")\"");
    expect_error("(module \"unterminated)", "unclosed string");
    expect_error("(module (; unterminated", "unclosed comment");
    expect_error("(func (export \"\\ff\"))", "malformed UTF-8");
    expect_error("(start 0) (start 0) (func)", "multiple start");
    expect_error("(func $\"\")", "empty identifier");
    expect_error("(@)", "empty annotation id");
    expect_error("(module quote \"(func (i32.const x))\")", "(at 1:18)");
    expect_error("(func (try (do) (catch_all) (delegate 0)))", "expected");
}

/* Sample modules for the hostile-input tests. */
static const char *const SAMPLES[] = {
    "(module $m (type $t (func (param i32) (result i32)))\n"
    "  (import \"env\" \"f\" (func $imp (type $t)))\n"
    "  (memory (export \"mem\") 1 2) (table 2 funcref) (global $g (mut i64) (i64.const -1))\n"
    "  (elem (i32.const 0) $imp $f) (data (i32.const 8) \"\\de\\ad\\u{1F600}\")\n"
    "  (func $f (export \"f\") (param $x i32) (result i32) (local $y f64)\n"
    "    (block $b (result i32) (loop $l (br_if $b (local.get $x) (i32.eqz (local.get $x)))\n"
    "      (local.set $x (i32.sub (local.get $x) (i32.const 1))) (br $l)) (i32.const 0))\n"
    "    (call_indirect (type $t) (i32.const 1))\n"
    "    (if (result i32) (then (i32.const 1)) (else (i32.const 2)))))",
    "(rec (type $a (sub (struct (field $x (mut i32)) (field i64))))\n"
    "     (type $b (sub $a (struct (field $x (mut i32)) (field i64) (field (ref null $b))))))\n"
    "(tag $e (param i32))\n"
    "(func (result i32) (local v128)\n"
    "  (local.set 0 (v128.const f32x4 1 -2.5 0x1p-3 inf))\n"
    "  (drop (i8x16.shuffle 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 (local.get 0) (local.get 0)))\n"
    "  (block $h (result i32 exnref) (try_table (catch_ref $e $h) (throw $e (i32.const 7))) "
    "(unreachable))\n"
    "  drop (struct.get $a $x (struct.new $a (i32.const 1) (i64.const 2))) i32.add)",
    "(tag $e (param i32)) (func (result i32)\n"
    "  try (result i32) (throw $e (i32.const 1)) catch $e catch_all (i32.const 2) end\n"
    "  (try (result i32) (do (try (result i32) (do (throw $e (i32.const 3))) (delegate 0)))\n"
    "  (catch $e))\n"
    "  i32.add)",
};

static void no_crash(const char *text, size_t n) {
    uint8_t *out = NULL;
    size_t len = 0;
    pw_error err;
    pw_status st = pw_wat_to_wasm(text, n, &out, &len, &err);
    if (st == PW_OK) {
        pw_error e2;
        (void)pw_module_validate(out, len, &e2);
        free(out);
    } else {
        assert_null(out);
        assert_true(st == PW_ERR_MALFORMED || st == PW_ERR_NOMEM);
        assert_non_null(memchr(err.message, 0, sizeof err.message));
        assert_true(err.message[0] != 0);
    }
}

static void test_hostile(void **state) {
    (void)state;
    for (size_t s = 0; s < sizeof SAMPLES / sizeof SAMPLES[0]; s++) {
        size_t n = strlen(SAMPLES[s]);
        pw_error err;
        size_t len;
        uint8_t *b = wat(SAMPLES[s], &len, &err);
        if (!b) fail_msg("sample %zu: %s", s, err.message);
        if (pw_module_validate(b, len, &err) != PW_OK) fail_msg("sample %zu: %s", s, err.message);
        free(b);
        /* every truncation: a heap copy of exactly k bytes, so ASan sees overreads */
        for (size_t k = 0; k < n; k++) {
            char *t = malloc(k ? k : 1);
            assert_non_null(t);
            memcpy(t, SAMPLES[s], k);
            no_crash(t, k);
            free(t);
        }
        /* single-byte corruptions */
        static const char junk[] = {'(',  ')',    '"', '\\', ';', '$', '@', '\0',
                                    '\n', '\xff', 'x', '0',  '-', '.', '_'};
        char *t = malloc(n);
        assert_non_null(t);
        for (size_t k = 0; k < n; k++) {
            for (size_t j = 0; j < sizeof junk; j++) {
                memcpy(t, SAMPLES[s], n);
                t[k] = junk[j];
                no_crash(t, n);
            }
        }
        free(t);
    }
    /* deep nesting: folded and flat, far beyond any real program */
    size_t depth = 100000;
    char *deep = malloc(depth * 8 + 64);
    assert_non_null(deep);
    size_t k = (size_t)sprintf(deep, "(func ");
    for (size_t i = 0; i < depth; i++)
        k += (size_t)sprintf(deep + k, "(block ");
    for (size_t i = 0; i < depth; i++)
        deep[k++] = ')';
    deep[k++] = ')';
    no_crash(deep, k);
    k = (size_t)sprintf(deep, "(func ");
    for (size_t i = 0; i < depth; i++)
        k += (size_t)sprintf(deep + k, "block ");
    no_crash(deep, k);
    free(deep);
    /* a huge literal and a huge number of tokens */
    size_t big = 1 << 20;
    char *lit = malloc(big + 64);
    assert_non_null(lit);
    k = (size_t)sprintf(lit, "(func (drop (f64.const 0x1.");
    memset(lit + k, '7', big);
    k += big;
    k += (size_t)sprintf(lit + k, "p-1)))");
    no_crash(lit, k);
    free(lit);
}

/* Legacy exception handling, run in both tiers. */
static const char *const LEGACY =
    "(module\n"
    "  (tag $e (param i32)) (tag $f)\n"
    "  (func $throw (param i32) (throw $e (local.get 0)))\n"
    "  (func (export \"catch\") (param i32) (result i32)\n"
    "    (try (result i32) (do (call $throw (local.get 0)) (i32.const 0))\n"
    "      (catch $e (i32.add (i32.const 100)))\n"
    "      (catch_all (i32.const -1))))\n"
    "  (func (export \"catch_all\") (result i32)\n"
    "    (try (result i32) (do (throw $f)) (catch $e) (catch_all (i32.const 7))))\n"
    "  (func (export \"delegate\") (param i32) (result i32)\n"
    "    (try $outer (result i32)\n"
    "      (do (try (result i32)\n"
    "            (do (try (result i32) (do (call $throw (local.get 0)) (i32.const 0))\n"
    "                  (delegate $outer)))\n"
    "            (catch $e (drop) (i32.const -5))))\n"
    "      (catch $e)))\n"
    "  (func (export \"rethrow\") (param i32) (result i32)\n"
    "    (try (result i32)\n"
    "      (do (try (do (call $throw (local.get 0))) (catch_all (rethrow 0))) (i32.const 0))\n"
    "      (catch $e (i32.mul (i32.const 2)))))\n"
    "  (func (export \"uncaught\") (try (do (throw $f)) (catch $e drop)))\n"
    "  (func (export \"empty\") (result i32) try (result i32) (i32.const 9) end))";

static int32_t call1(pw_store *s, pw_instance *inst, const char *name, int32_t arg, bool has_arg,
                     pw_status *st) {
    pw_extern ex;
    assert_true(pw_instance_export(inst, name, strlen(name), &ex));
    pw_val a = {.i32 = arg}, r = {.i32 = 0};
    pw_error err;
    *st = pw_call(s, ex.u.func, &a, has_arg ? 1 : 0, &r, strcmp(name, "uncaught") ? 1 : 0, &err);
    return r.i32;
}

static void test_legacy_eh(void **state) {
    (void)state;
    pw_error err;
    size_t n;
    uint8_t *b = wat(LEGACY, &n, &err);
    if (!b) fail_msg("legacy: %s", err.message);
    pw_module *m = pw_module_new(b, n, NULL, &err);
    free(b);
    if (!m) fail_msg("legacy module: %s", err.message);
    static const int engines[] = {PW_ENGINE_INTERP, PW_ENGINE_JIT};
    for (size_t e = 0; e < 2; e++) {
        pw_store_config cfg = {.engine = engines[e]};
        pw_store *s = pw_store_new(&cfg, &err);
        assert_non_null(s);
        pw_instance *inst = pw_instantiate(s, m, NULL, NULL, &err);
        if (!inst) fail_msg("instantiate: %s", err.message);
        pw_status st;
        assert_int_equal(call1(s, inst, "catch", 5, true, &st), 105);
        assert_int_equal(st, PW_OK);
        assert_int_equal(call1(s, inst, "catch_all", 0, false, &st), 7);
        assert_int_equal(call1(s, inst, "delegate", 4, true, &st), 4);
        assert_int_equal(call1(s, inst, "rethrow", 21, true, &st), 42);
        assert_int_equal(call1(s, inst, "empty", 0, false, &st), 9);
        call1(s, inst, "uncaught", 0, false, &st);
        assert_int_equal(st, PW_ERR_EXCEPTION);
        pw_store_free(s);
    }
    pw_module_free(m);
    /* invalid: rethrow outside a catch; delegate after catch is malformed text */
    b = wat("(func (try (do (rethrow 0)) (catch_all)))", &n, &err);
    assert_non_null(b);
    assert_int_equal(pw_module_validate(b, n, &err), PW_ERR_INVALID);
    free(b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_encodings),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_hostile),
        cmocka_unit_test(test_legacy_eh),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
