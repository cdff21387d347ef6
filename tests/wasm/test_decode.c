/*
 * test_decode.c — the binary decoder on hand-assembled modules: every malformed
 * class (header, sections, LEB128, counts, limits, names, opcodes) must end in
 * PW_ERR_MALFORMED with the spec's message first, and hostile sizes must fail fast
 * without allocating in proportion to what they declare.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#include <cmocka.h>

#include "peri/wasm.h"
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

static void test_header(void **state) {
    (void)state;
    expect(B(HDR), PW_OK, "");
    expect((const uint8_t *)"", 0, PW_ERR_MALFORMED, "unexpected end");
    expect(B(0x00, 0x61, 0x73), PW_ERR_MALFORMED, "unexpected end");
    expect(B(0x00, 0x61, 0x73, 0x6d, 0x01), PW_ERR_MALFORMED, "unexpected end");
    expect(B(0x00, 0x41, 0x53, 0x4d, 0x01, 0x00, 0x00, 0x00), PW_ERR_MALFORMED,
           "magic header not detected");
    expect(B(0x00, 0x61, 0x73, 0x6d, 0x02, 0x00, 0x00, 0x00), PW_ERR_MALFORMED,
           "unknown binary version");
}

static void test_sections(void **state) {
    (void)state;
    /* id 14 does not exist */
    expect(B(HDR, 0x0e, 0x00), PW_ERR_MALFORMED, "malformed section id");
    /* section size beyond the module */
    expect(B(HDR, 0x01, 0x10, 0x00), PW_ERR_MALFORMED, "length out of bounds");
    /* size says 2, content is 1 byte (an empty type vector) */
    expect(B(HDR, 0x01, 0x02, 0x00, 0x00), PW_ERR_MALFORMED, "section size mismatch");
    /* duplicate type section; function section before type section */
    expect(B(HDR, 0x01, 0x01, 0x00, 0x01, 0x01, 0x00), PW_ERR_MALFORMED,
           "unexpected content after last section");
    expect(B(HDR, 0x03, 0x01, 0x00, 0x01, 0x01, 0x00), PW_ERR_MALFORMED,
           "unexpected content after last section");
    /* custom sections anywhere, including between ordered sections */
    expect(B(HDR, 0x00, 0x02, 0x01, 'a', 0x01, 0x01, 0x00, 0x00, 0x02, 0x01, 'b', 0x03, 0x01, 0x00,
             0x00, 0x02, 0x01, 'c'),
           PW_OK, "");
    /* custom section whose name runs past its size */
    expect(B(HDR, 0x00, 0x01, 0x05, 'a', 'b', 'c', 'd', 'e'), PW_ERR_MALFORMED, "unexpected end");
    /* custom section whose size fits only if its own 2-byte LEB is counted */
    expect(B(HDR, 0x00, 0x8a, 0x00, 0x01, '1', '2', '3', '4', '5', '6', '7', '8'), PW_ERR_MALFORMED,
           "unexpected end");
    /* function body claiming one byte past the end of the module */
    expect(B(HDR, 0x01, 0x04, 0x01, 0x60, 0x00, 0x00, 0x03, 0x02, 0x01, 0x00, 0x0a, 0x05, 0x01,
             0x04, 0x00, 0x01, 0x0b),
           PW_ERR_MALFORMED, "section size mismatch");
    /* tag section (13) goes between memory (5) and global (6) */
    expect(B(HDR, 0x06, 0x01, 0x00, 0x0d, 0x01, 0x00), PW_ERR_MALFORMED,
           "unexpected content after last section");
    /* function and code counts */
    expect(B(HDR, 0x01, 0x04, 0x01, 0x60, 0x00, 0x00, 0x03, 0x02, 0x01, 0x00), PW_ERR_MALFORMED,
           "function and code section have inconsistent lengths");
    /* data count 1, no data section */
    expect(B(HDR, 0x0c, 0x01, 0x01), PW_ERR_MALFORMED,
           "data count and data section have inconsistent lengths");
}

static void test_leb(void **state) {
    (void)state;
    /* type count as a 6-byte LEB */
    expect(B(HDR, 0x01, 0x07, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00), PW_ERR_MALFORMED,
           "integer representation too long");
    /* 5th byte with bits beyond 32 */
    expect(B(HDR, 0x01, 0x06, 0x80, 0x80, 0x80, 0x80, 0x70), PW_ERR_MALFORMED, "integer too large");
    /* over-long but in-range encodings are fine: 0 as 5 bytes */
    expect(B(HDR, 0x01, 0x05, 0x80, 0x80, 0x80, 0x80, 0x00), PW_OK, "");
    /* i32.const with a too-large signed LEB: (func (result i32) i32.const ...) */
    expect(B(HDR, 0x01, 0x05, 0x01, 0x60, 0x00, 0x01, 0x7f, 0x03, 0x02, 0x01, 0x00, 0x0a, 0x0a,
             0x01, 0x08, 0x00, 0x41, 0x80, 0x80, 0x80, 0x80, 0x70, 0x0b),
           PW_ERR_MALFORMED, "integer too large");
    /* truncated LEB at the end of the module */
    expect(B(HDR, 0x01, 0x80), PW_ERR_MALFORMED, "unexpected end");
}

static void test_huge_counts(void **state) {
    (void)state;
    /* 2^32-1 types, 1 byte of content: rejected before any allocation */
    expect(B(HDR, 0x01, 0x05, 0xff, 0xff, 0xff, 0xff, 0x0f), PW_ERR_MALFORMED,
           "length out of bounds");
    /* a function type claiming 2^32-1 parameters */
    expect(B(HDR, 0x01, 0x07, 0x01, 0x60, 0xff, 0xff, 0xff, 0xff, 0x0f), PW_ERR_MALFORMED,
           "length out of bounds");
    /* huge br_table target count */
    expect(B(HDR, 0x01, 0x04, 0x01, 0x60, 0x00, 0x00, 0x03, 0x02, 0x01, 0x00, 0x0a, 0x0b, 0x01,
             0x09, 0x00, 0x41, 0x00, 0x0e, 0xff, 0xff, 0xff, 0xff, 0x0f),
           PW_ERR_MALFORMED, "unexpected end");
    /* locals: 2^32-1 + 2 overflows the spec's bound */
    expect(B(HDR, 0x01, 0x04, 0x01, 0x60, 0x00, 0x00, 0x03, 0x02, 0x01, 0x00, 0x0a, 0x0c, 0x01,
             0x0a, 0x02, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x7f, 0x02, 0x7e, 0x0b),
           PW_ERR_MALFORMED, "too many locals");
    /* 1,000,000 locals: within the spec, beyond our documented limit (50,000) */
    expect(B(HDR, 0x01, 0x04, 0x01, 0x60, 0x00, 0x00, 0x03, 0x02, 0x01, 0x00, 0x0a, 0x08, 0x01,
             0x06, 0x01, 0xc0, 0x84, 0x3d, 0x7f, 0x0b),
           PW_ERR_MALFORMED, "too many locals");
    /* a data segment claiming 2 GiB of bytes */
    expect(B(HDR, 0x05, 0x03, 0x01, 0x00, 0x01, 0x0b, 0x0a, 0x01, 0x00, 0x41, 0x00, 0x0b, 0xff,
             0xff, 0xff, 0xff, 0x07),
           PW_ERR_MALFORMED, "length out of bounds");
}

static void test_limits_and_types(void **state) {
    (void)state;
    expect(B(HDR, 0x05, 0x02, 0x01, 0x08), PW_ERR_MALFORMED, "malformed limits flags");
    /* shared memory (threads) is not Wasm 3.0 */
    expect(B(HDR, 0x05, 0x04, 0x01, 0x03, 0x00, 0x01), PW_ERR_MALFORMED, "malformed limits flags");
    /* memory64: i64 limits (flag 4), with and without a maximum */
    expect(B(HDR, 0x05, 0x03, 0x01, 0x04, 0x00), PW_OK, "");
    expect(B(HDR, 0x05, 0x04, 0x01, 0x05, 0x00, 0x01), PW_OK, "");
    /* a shared memory64 is still shared */
    expect(B(HDR, 0x05, 0x03, 0x01, 0x06, 0x00), PW_ERR_MALFORMED, "malformed limits flags");
    /* table of a non-reference type */
    expect(B(HDR, 0x04, 0x04, 0x01, 0x7f, 0x00, 0x00), PW_ERR_MALFORMED,
           "malformed reference type");
    /* global mutability 2 */
    expect(B(HDR, 0x06, 0x06, 0x01, 0x7f, 0x02, 0x41, 0x00, 0x0b), PW_ERR_MALFORMED,
           "malformed mutability");
    /* a v128 global decodes; an i32 initializer is then a type error */
    expect(B(HDR, 0x06, 0x06, 0x01, 0x7b, 0x00, 0x41, 0x00, 0x0b), PW_ERR_INVALID, "type mismatch");
    expect(B(HDR, 0x06, 0x16, 0x01, 0x7b, 0x00, 0xfd, 0x0c, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,
             13, 14, 15, 16, 0x0b),
           PW_OK, "");
    /* import kind 5 */
    expect(B(HDR, 0x02, 0x05, 0x01, 0x00, 0x00, 0x05, 0x00), PW_ERR_MALFORMED,
           "malformed import kind");
}

static void test_utf8(void **state) {
    (void)state;
    /* import module name: lone continuation byte; overlong; surrogate */
    expect(B(HDR, 0x02, 0x06, 0x01, 0x01, 0x80, 0x00, 0x00, 0x00), PW_ERR_MALFORMED,
           "malformed UTF-8 encoding");
    expect(B(HDR, 0x02, 0x07, 0x01, 0x02, 0xc0, 0x80, 0x00, 0x00, 0x00), PW_ERR_MALFORMED,
           "malformed UTF-8 encoding");
    expect(B(HDR, 0x00, 0x04, 0x03, 0xed, 0xa0, 0x80), PW_ERR_MALFORMED,
           "malformed UTF-8 encoding");
    /* a valid 4-byte sequence in a custom section name */
    expect(B(HDR, 0x00, 0x05, 0x04, 0xf0, 0x9f, 0x98, 0x80), PW_OK, "");
}

/* (func) with the given body bytes after the locals (must end with 0x0b) */
static void expect_body(const uint8_t *code, size_t n, pw_status st, const char *prefix) {
    wb m = {0}, s = {0};
    wb_header(&m);
    wb_section(&m, 1, &(wb){(uint8_t *)"\x01\x60\x00\x00", 4, 4});
    wb_section(&m, 3, &(wb){(uint8_t *)"\x01\x00", 2, 2});
    wb_section(&m, 5, &(wb){(uint8_t *)"\x01\x00\x01", 3, 3});
    wb_u32(&s, 1);
    wb_u32(&s, (uint32_t)n + 1);
    wb_byte(&s, 0);
    wb_bytes(&s, code, n);
    wb_section(&m, 10, &s);
    expect(m.p, m.n, st, prefix);
    wb_free(&m);
    wb_free(&s);
}

static void test_opcodes(void **state) {
    (void)state;
    expect_body(B(0x0b), PW_OK, "");
    expect_body(B(0x17, 0x0b), PW_ERR_MALFORMED, "illegal opcode 17");
    expect_body(B(0xff, 0x0b), PW_ERR_MALFORMED, "illegal opcode ff");
    expect_body(B(0xfc, 0x12, 0x0b), PW_ERR_MALFORMED, "illegal opcode fc 12");
    /* SIMD: a reserved 0xFD opcode; v128.const cut short; an unknown relaxed one */
    expect_body(B(0xfd, 0x9a, 0x01, 0x0b), PW_ERR_MALFORMED, "illegal opcode fd 9a");
    expect_body(B(0xfd, 0x0c, 0x0b), PW_ERR_MALFORMED, "unexpected end");
    expect_body(B(0xfd, 0x94, 0x02, 0x0b), PW_ERR_MALFORMED, "illegal opcode fd 114");
    /* else outside if; missing end */
    expect_body(B(0x02, 0x40, 0x05, 0x0b, 0x0b), PW_ERR_MALFORMED, "END opcode expected");
    expect_body(B(0x01), PW_ERR_MALFORMED, "unexpected end");
    /* memarg flags beyond the memory-index bit */
    expect_body(B(0x41, 0x00, 0x28, 0x80, 0x01, 0x00, 0x1a, 0x0b), PW_ERR_MALFORMED,
                "malformed memop flags");
    /* memory.init without a data count section */
    expect_body(B(0x41, 0x00, 0x41, 0x00, 0x41, 0x00, 0xfc, 0x08, 0x00, 0x00, 0x0b),
                PW_ERR_MALFORMED, "data count section required");
    /* body ends before its declared size */
    expect(B(HDR, 0x01, 0x04, 0x01, 0x60, 0x00, 0x00, 0x03, 0x02, 0x01, 0x00, 0x0a, 0x05, 0x01,
             0x03, 0x00, 0x0b, 0x0b),
           PW_ERR_MALFORMED, "section size mismatch");
}

/* Every strict prefix of a valid module is malformed, never a crash. */
static void test_truncations(void **state) {
    (void)state;
    static const uint8_t good[] = {HDR,  0x01, 0x07, 0x01, 0x60, 0x02, 0x7f, 0x7f, 0x01, 0x7f,
                                   0x03, 0x02, 0x01, 0x00, 0x05, 0x03, 0x01, 0x00, 0x01, 0x07,
                                   0x07, 0x01, 0x03, 'a',  'd',  'd',  0x00, 0x00, 0x0a, 0x09,
                                   0x01, 0x07, 0x00, 0x20, 0x00, 0x20, 0x01, 0x6a, 0x0b, 0x0b,
                                   0x07, 0x01, 0x00, 0x41, 0x00, 0x0b, 0x01, 0x2a};
    expect(good, sizeof good, PW_OK, "");
    for (size_t n = 0; n < sizeof good; n++) {
        pw_error e;
        pw_status st = pw_module_validate(good, n, &e);
        /* A prefix ending on a section boundary can be a valid module (header only,
         * header + types, everything but the data section); all others are malformed. */
        bool ok_here = n == 8 || n == 17 || n == 46;
        if (st != (ok_here ? PW_OK : PW_ERR_MALFORMED))
            fail_msg("prefix %zu: status %d (%s)", n, st, e.message);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_header),
        cmocka_unit_test(test_sections),
        cmocka_unit_test(test_leb),
        cmocka_unit_test(test_huge_counts),
        cmocka_unit_test(test_limits_and_types),
        cmocka_unit_test(test_utf8),
        cmocka_unit_test(test_opcodes),
        cmocka_unit_test(test_truncations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
