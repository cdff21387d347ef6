/*
 * test_serve_http_parse.c — the strict request-head parser of `peri mcp workspace
 * --listen` (src/mcp/serve_http_parse.c): accepted heads and their fields, incomplete
 * heads (nothing modified), every refusal with its status, and a deterministic
 * mutation run over valid heads (every prefix and random byte flips: never a crash or a
 * read past the given length, which ASan builds check).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mcp/serve_http_int.h"

static long parse(const char *text, pmcp__hreq *r) {
    size_t n = strlen(text);
    char *b = malloc(n ? n : 1); /* exact size: ASan sees any read past the end */
    assert_non_null(b);
    memcpy(b, text, n);
    long st = pmcp__hreq_parse(b, n, 16384, r);
    free(b);
    return st;
}

static void test_accepts(void **state) {
    (void)state;
    pmcp__hreq r;
    const char *h = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:9\r\nAuthorization:  Bearer abc \r\n"
                    "Mcp-Session-Id: s1\r\nContent-Length: 12\r\nOrigin: http://x\r\n"
                    "MCP-Protocol-Version: 2025-06-18\r\nX-Other: y\r\n\r\nbody";
    size_t n = strlen(h);
    char *b = strdup(h);
    assert_int_equal(pmcp__hreq_parse(b, n, 16384, &r), (long)(n - 4));
    assert_string_equal(r.method, "POST");
    assert_string_equal(r.target, "/mcp");
    assert_string_equal(r.host, "127.0.0.1:9");
    assert_string_equal(r.auth, "Bearer abc");
    assert_string_equal(r.session, "s1");
    assert_string_equal(r.origin, "http://x");
    assert_string_equal(r.proto, "2025-06-18");
    assert_true(r.has_length);
    assert_int_equal(r.content_length, 12);
    assert_false(r.close);
    free(b);
    assert_true(parse("DELETE /mcp HTTP/1.1\r\nhost: a\r\nConnection: close\r\n\r\n", &r) > 0);
    assert_true(r.close);
    assert_true(parse("GET / HTTP/1.0\r\n\r\n", &r) > 0); /* 1.0: no Host needed, closes */
    assert_true(r.http10 && r.close && !r.host);
}

static void test_incomplete(void **state) {
    (void)state;
    pmcp__hreq r;
    char b[] = "POST /mcp HTTP/1.1\r\nHost: a\r\n";
    char copy[sizeof b];
    memcpy(copy, b, sizeof b);
    assert_int_equal(pmcp__hreq_parse(b, strlen(b), 16384, &r), 0);
    assert_memory_equal(b, copy, sizeof b);
    assert_int_equal(parse("", &r), 0);
    char big[200];
    memset(big, 'a', sizeof big);
    assert_int_equal(pmcp__hreq_parse(big, sizeof big, 100, &r), -431);
}

static void test_refusals(void **state) {
    (void)state;
    pmcp__hreq r;
    static const struct {
        const char *head;
        long st;
    } cases[] = {
        {"GARBAGE\r\n\r\n", -400},
        {"get /mcp HTTP/1.1\r\nHost: a\r\n\r\n", -400},
        {"POST mcp HTTP/1.1\r\nHost: a\r\n\r\n", -400},
        {"POST http://a/mcp HTTP/1.1\r\nHost: a\r\n\r\n", -400},
        {"POST  /mcp HTTP/1.1\r\nHost: a\r\n\r\n", -400},
        {"POST /mcp HTTP/2.0\r\nHost: a\r\n\r\n", -505},
        {"POST /mcp FTP/1.1\r\nHost: a\r\n\r\n", -400},
        {"POST /mcp HTTP/1.1\r\n\r\n", -400}, /* no Host */
        {"POST /mcp HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", -400},
        {"POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n", -400},
        {"POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n", -400},
        {"POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 1 2\r\n\r\n", -400},
        {"POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999\r\n\r\n", -400},
        {"POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length:\r\n\r\n", -400},
        {"POST /mcp HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n", -501},
        {"POST /mcp HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n", -400},
        {"POST /mcp HTTP/1.1\r\nHost: a\r\nBad Name: x\r\n\r\n", -400},
        {"POST /mcp HTTP/1.1\r\nHost: a\r\n: x\r\n\r\n", -400},
        {"POST /mcp HTTP/1.1\r\nHost: a\r\nNoColon\r\n\r\n", -400},
        {"POST /mcp HTTP/1.1\r\nHost: a\x01\r\n\r\n", -400},
        {"POST /mcp HTTP/1.1\r\nHost: a\rX: y\r\n\r\n", -400},
        {"POST /mcp HTTP/1.1\nHost: a\n\n", -400}, /* bare LF: refused before the end */
        {"POST /m\x7f HTTP/1.1\r\nHost: a\r\n\r\n", -400},
        {"POST /mcp HTTP/1.1\r\nHost: a\r\nAuthorization: a\r\nAuthorization: b\r\n\r\n", -400},
        {"POST /mcp HTTP/1.1\r\nHost: a\r\nMcp-Session-Id: a\r\nmcp-session-id: b\r\n\r\n", -400},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        long st = parse(cases[i].head, &r);
        if (st != cases[i].st) fail_msg("case %zu: %ld, want %ld", i, st, cases[i].st);
    }
    char nul[] = "POST /mcp HTTP/1.1\r\nHost: a\0b\r\n\r\n";
    assert_int_equal(pmcp__hreq_parse(nul, sizeof nul - 1, 16384, &r), -400);
}

static void test_mutations(void **state) {
    (void)state;
    const char *h = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:1\r\nAuthorization: Bearer t\r\n"
                    "Content-Length: 5\r\nConnection: keep-alive\r\n\r\n";
    size_t n = strlen(h);
    pmcp__hreq r;
    for (size_t k = 0; k <= n; k++) { /* every prefix */
        char *b = malloc(k ? k : 1);
        assert_non_null(b);
        memcpy(b, h, k);
        long st = pmcp__hreq_parse(b, k, 16384, &r);
        assert_true(k == n ? st == (long)n : st == 0);
        free(b);
    }
    uint32_t x = 12345;
    for (int it = 0; it < 20000; it++) {
        char *b = malloc(n);
        assert_non_null(b);
        memcpy(b, h, n);
        for (int f = 0; f < 3; f++) {
            x = x * 1103515245u + 12345u;
            b[(x >> 8) % n] = (char)(x >> 24);
        }
        x = x * 1103515245u + 12345u;
        size_t len = (x >> 8) % (n + 1);
        long st = pmcp__hreq_parse(b, len, 16384, &r);
        assert_true(st <= (long)len);
        if (st > 0) assert_non_null(r.method);
        free(b);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_accepts),
        cmocka_unit_test(test_incomplete),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_mutations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
