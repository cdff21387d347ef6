/*
 * test_http_codec.c — the sans-IO HTTP/1.1 codec (src/net/http_codec.c): a table of good,
 * malformed and over-limit responses, each fed whole, split at every byte offset into
 * two pieces and fed byte by byte (every piece in its own exact-size allocation, so an
 * over-read is an ASan error); request serialisation and its refusals; URL parsing;
 * callbacks that stop; Retry-After.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "peri/net_http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct rcase {
    const char *name;
    const char *resp;
    size_t len; /* 0: strlen(resp) */
    bool head_request;
    pn_http_limits lim;
    pn_http_err want;
    int status;               /* checked when want == PN_HTTP_OK */
    const char *body;         /* checked when want == PN_HTTP_OK */
    const char *hname, *hval; /* a header to look up (hval NULL: must be absent) */
} rcase;

/* A good response: its status, body and one header (hval NULL: it must be absent). */
#define GOOD(n, r, st, b, hn, hv)                                                                  \
    { n, r, 0, false, {0}, PN_HTTP_OK, st, b, hn, hv }
/* A refused response, under the default limits or under lim. */
#define BAD(n, r, e)                                                                               \
    { n, r, 0, false, {0}, e, 0, NULL, NULL, NULL }
#define BAD_LIM(n, r, l, e)                                                                        \
    { n, r, 0, false, l, e, 0, NULL, NULL, NULL }

static const rcase CASES[] = {
    GOOD("content-length",
         "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Type: text/plain\r\n\r\nhello", 200,
         "hello", "CONTENT-TYPE", "text/plain"),
    GOOD("chunked with extensions and trailers",
         "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;foo=bar;q=\"x y\"\r\nhello\r\n6 "
         "\r\n world\r\n0\r\nX-Trailer: t\r\nX-Other: u\r\n\r\n",
         200, "hello world", "x-trailer", NULL),
    GOOD("chunked upper-case hex",
         "HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\nA\r\n0123456789\r\n0\r\n\r\n", 200,
         "0123456789", "transfer-encoding", "Chunked"),
    GOOD("until close", "HTTP/1.0 200 OK\r\nServer: x\r\n\r\nabc", 200, "abc", "server", "x"),
    GOOD("interim responses skipped",
         "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 "
         "200 OK\r\nContent-Length: 2\r\n\r\nok",
         200, "ok", "link", NULL),
    {"HEAD has no body",
     "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n",
     0,
     true,
     {0},
     PN_HTTP_OK,
     200,
     "",
     "content-length",
     "100"},
    GOOD("204 has no body", "HTTP/1.1 204 No Content\r\nX: y\r\n\r\n", 204, "", "x", "y"),
    GOOD("304 has no body", "HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n", 304, "",
         NULL, NULL),
    GOOD("bare LF line ends", "HTTP/1.1 200 OK\nContent-Length: 2\n\nok", 200, "ok", NULL, NULL),
    GOOD("no reason phrase", "HTTP/1.1 404\r\nContent-Length: 0\r\n\r\n", 404, "", NULL, NULL),
    GOOD("equal content-lengths",
         "HTTP/1.1 200 OK\r\nContent-Length: 3, 3\r\nContent-Length: 3\r\n\r\nabc", 200, "abc",
         NULL, NULL),
    GOOD("value OWS trimmed, obs-text kept",
         "HTTP/1.1 200 OK\r\nX-A: \t v \xc3\xa9 \t\r\nX-B:\r\nContent-Length: 0\r\n\r\n", 200, "",
         "x-a", "v \xc3\xa9"),
    GOOD("empty value", "HTTP/1.1 200 OK\r\nX-B:\r\nContent-Length: 0\r\n\r\n", 200, "", "x-b", ""),
    GOOD("event stream",
         "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: x\n\ndata: y\n\n", 200,
         "data: x\n\ndata: y\n\n", NULL, NULL),
    GOOD("bytes after a complete response", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA",
         200, "ok", NULL, NULL),
    {"binary body",
     "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\na\0b",
     41,
     false,
     {0},
     PN_HTTP_OK,
     200,
     NULL,
     NULL,
     NULL},
    GOOD("chunk with leading zeros",
         "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0003\r\nabc\r\n000\r\n\r\n", 200,
         "abc", NULL, NULL),
    /* malformed */
    BAD("HTTP/2", "HTTP/2 200 OK\r\n\r\n", PN_HTTP_E_STATUS_LINE),
    BAD("two-digit code", "HTTP/1.1 20 OK\r\n\r\n", PN_HTTP_E_STATUS_LINE),
    BAD("four-digit code", "HTTP/1.1 2000 OK\r\n\r\n", PN_HTTP_E_STATUS_LINE),
    BAD("code below 100", "HTTP/1.1 099 X\r\n\r\n", PN_HTTP_E_STATUS_LINE),
    BAD("not HTTP", "XTTP/1.1 200 OK\r\n\r\n", PN_HTTP_E_STATUS_LINE),
    BAD("empty status line", "\r\nHTTP/1.1 200 OK\r\n\r\n", PN_HTTP_E_STATUS_LINE),
    BAD("control byte in reason", "HTTP/1.1 200 O\x01K\r\n\r\n", PN_HTTP_E_STATUS_LINE),
    BAD("folded field", "HTTP/1.1 200 OK\r\nA: b\r\n c\r\n\r\n", PN_HTTP_E_FOLDED),
    BAD("folded with tab", "HTTP/1.1 200 OK\r\n\t: x\r\n\r\n", PN_HTTP_E_FOLDED),
    BAD("field without colon", "HTTP/1.1 200 OK\r\nABC\r\n\r\n", PN_HTTP_E_HEADER),
    BAD("empty field name", "HTTP/1.1 200 OK\r\n: v\r\n\r\n", PN_HTTP_E_HEADER),
    BAD("space before colon", "HTTP/1.1 200 OK\r\nA : b\r\n\r\n", PN_HTTP_E_HEADER),
    {"NUL in a value",
     "HTTP/1.1 200 OK\r\nA: b\0c\r\n\r\n",
     27,
     false,
     {0},
     PN_HTTP_E_HEADER,
     0,
     NULL,
     NULL,
     NULL},
    BAD("bare CR in a value", "HTTP/1.1 200 OK\r\nA: b\rc\r\n\r\n", PN_HTTP_E_HEADER),
    BAD("DEL in a value", "HTTP/1.1 200 OK\r\nA: b\x7f\r\n\r\n", PN_HTTP_E_HEADER),
    BAD("content-length not a number", "HTTP/1.1 200 OK\r\nContent-Length: 12a\r\n\r\n",
        PN_HTTP_E_FRAMING),
    BAD("content-length empty", "HTTP/1.1 200 OK\r\nContent-Length:\r\n\r\n", PN_HTTP_E_FRAMING),
    BAD("content-lengths differ", "HTTP/1.1 200 OK\r\nContent-Length: 5, 6\r\n\r\n",
        PN_HTTP_E_FRAMING),
    BAD("content-length fields differ",
        "HTTP/1.1 200 OK\r\nContent-Length: 5\r\ncontent-length: 6\r\n\r\n", PN_HTTP_E_FRAMING),
    BAD("negative content-length", "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
        PN_HTTP_E_FRAMING),
    BAD("content-length overflows",
        "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\n", PN_HTTP_E_FRAMING),
    BAD("gzip transfer coding", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
        PN_HTTP_E_FRAMING),
    BAD("gzip then chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
        PN_HTTP_E_FRAMING),
    BAD("chunked twice",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
        PN_HTTP_E_FRAMING),
    BAD("empty transfer-encoding", "HTTP/1.1 200 OK\r\nTransfer-Encoding: \r\n\r\n",
        PN_HTTP_E_FRAMING),
    BAD("both framings",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n",
        PN_HTTP_E_FRAMING),
    BAD("101 upgrade", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n", PN_HTTP_E_FRAMING),
    BAD("chunk size not hex", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        PN_HTTP_E_CHUNK),
    BAD("chunk size missing", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n;x\r\n",
        PN_HTTP_E_CHUNK),
    BAD("negative chunk size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-1\r\n",
        PN_HTTP_E_CHUNK),
    BAD("chunk longer than its size",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcd\r\n0\r\n\r\n",
        PN_HTTP_E_CHUNK),
    BAD("chunk without its CRLF",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\rX", PN_HTTP_E_CHUNK),
    BAD("17 chunk-size digits",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10000000000000000\r\n",
        PN_HTTP_E_CHUNK),
    BAD("control byte in a chunk extension",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;\x01\r\n", PN_HTTP_E_CHUNK),
    BAD("junk after the chunk size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5 x\r\n",
        PN_HTTP_E_CHUNK),
    BAD("folded trailer",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nA: b\r\n c\r\n\r\n",
        PN_HTTP_E_FOLDED),
    BAD("bad trailer", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nno colon\r\n\r\n",
        PN_HTTP_E_HEADER),
    BAD("truncated body", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhel", PN_HTTP_E_TRUNCATED),
    BAD("truncated chunk", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel",
        PN_HTTP_E_TRUNCATED),
    BAD("truncated before the last chunk",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n", PN_HTTP_E_TRUNCATED),
    BAD("truncated trailers", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n",
        PN_HTTP_E_TRUNCATED),
    BAD("truncated head", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n", PN_HTTP_E_TRUNCATED),
    BAD("truncated status line", "HTTP/1.1 200", PN_HTTP_E_TRUNCATED),
    BAD("nothing at all", "", PN_HTTP_E_TRUNCATED),
    BAD("17 interim responses",
        "HTTP/1.1 100 A\r\n\r\nHTTP/1.1 100 A\r\n\r\nHTTP/1.1 100 A\r\n\r\nHTTP/1.1 100 A\r\n\r\n"
        "HTTP/1.1 100 A\r\n\r\nHTTP/1.1 100 A\r\n\r\nHTTP/1.1 100 A\r\n\r\nHTTP/1.1 100 A\r\n\r\n"
        "HTTP/1.1 100 A\r\n\r\nHTTP/1.1 100 A\r\n\r\nHTTP/1.1 100 A\r\n\r\nHTTP/1.1 100 A\r\n\r\n"
        "HTTP/1.1 100 A\r\n\r\nHTTP/1.1 100 A\r\n\r\nHTTP/1.1 100 A\r\n\r\nHTTP/1.1 100 A\r\n\r\n"
        "HTTP/1.1 100 A\r\n\r\nHTTP/1.1 200 OK\r\n\r\n",
        PN_HTTP_E_HEAD_LIMIT),
    /* limits */
    BAD_LIM("field line over max_line",
            "HTTP/1.1 200 OK\r\nX: 0123456789012345678901234567890123456789\r\n\r\n",
            {.max_line = 32}, PN_HTTP_E_HEAD_LIMIT),
    {"field line at max_line",
     "HTTP/1.1 200 OK\r\nX: 01234567890123456789012345678\r\nContent-Length: 0\r\n\r\n",
     0,
     false,
     {.max_line = 32},
     PN_HTTP_OK,
     200,
     "",
     "x",
     "01234567890123456789012345678"},
    BAD_LIM("status line over max_line",
            "HTTP/1.1 200 0123456789012345678901234567890123456789\r\n\r\n", {.max_line = 32},
            PN_HTTP_E_HEAD_LIMIT),
    BAD_LIM("too many fields", "HTTP/1.1 200 OK\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n",
            {.max_headers = 2}, PN_HTTP_E_HEAD_LIMIT),
    BAD_LIM("too many trailers",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nA: 1\r\nB: 2\r\n\r\n",
            {.max_headers = 1}, PN_HTTP_E_HEAD_LIMIT),
    BAD_LIM("header block over max_head",
            "HTTP/1.1 200 OK\r\nA: 0123456789\r\nB: 0123456789\r\nC: 0123456789\r\n\r\n",
            {.max_head = 48}, PN_HTTP_E_HEAD_LIMIT),
    BAD_LIM("content-length over max_body", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
            {.max_body = 4}, PN_HTTP_E_BODY_LIMIT),
    {"content-length at max_body",
     "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nhell",
     0,
     false,
     {.max_body = 4},
     PN_HTTP_OK,
     200,
     "hell",
     NULL,
     NULL},
    BAD_LIM(
        "chunks over max_body",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n3\r\ndef\r\n0\r\n\r\n",
        {.max_body = 4}, PN_HTTP_E_BODY_LIMIT),
    BAD_LIM("until close over max_body", "HTTP/1.1 200 OK\r\n\r\nhello", {.max_body = 4},
            PN_HTTP_E_BODY_LIMIT),
    BAD_LIM("chunk-size digits bound",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n005\r\nhello\r\n0\r\n\r\n",
            {.max_chunk_digits = 2}, PN_HTTP_E_CHUNK),
    BAD_LIM("chunk-size line over max_line",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;"
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n",
            {.max_line = 32}, PN_HTTP_E_CHUNK),
};

static size_t case_len(const rcase *c) {
    return c->len ? c->len : strlen(c->resp);
}

typedef struct got {
    bool head_seen;
    bool body_before_head;
    int status_at_head;
    char body[256];
    size_t blen;
} got;

static int g_head(void *ud, const pn_http_parser *p) {
    got *g = ud;
    g->head_seen = true;
    g->status_at_head = pn_http_status(p);
    return 0;
}

static int g_body(void *ud, const char *d, size_t n) {
    got *g = ud;
    if (!g->head_seen) g->body_before_head = true;
    assert_true(g->blen + n <= sizeof g->body);
    memcpy(g->body + g->blen, d, n);
    g->blen += n;
    return 0;
}

/* Feeds resp in pieces ending at the offsets cuts[0..ncuts) (then the rest) and finishes
 * when the stream would end. Returns the first error. */
static pn_http_err run_case(const rcase *c, const size_t *cuts, size_t ncuts, got *g,
                            pn_http_parser **out) {
    size_t len = case_len(c);
    memset(g, 0, sizeof *g);
    pn_http_parser_cb cb = {g_head, g_body, g};
    pn_http_parser *p = pn_http_parser_new(c->head_request, &c->lim, &cb);
    assert_non_null(p);
    size_t at = 0;
    pn_http_err e = PN_HTTP_OK;
    for (size_t k = 0; k <= ncuts && !e && !pn_http_parser_done(p); k++) {
        size_t end = k < ncuts ? cuts[k] : len;
        size_t n = end - at;
        char *piece = malloc(n ? n : 1); /* exact size: an over-read trips ASan */
        assert_non_null(piece);
        memcpy(piece, c->resp + at, n);
        size_t used = 0;
        e = pn_http_parser_feed(p, piece, n, &used);
        assert_true(used <= n);
        free(piece);
        at = end;
    }
    if (!e && !pn_http_parser_done(p)) e = pn_http_parser_finish(p);
    *out = p;
    return e;
}

static void check(const rcase *c, pn_http_err e, const got *g, pn_http_parser *p, const char *mode,
                  size_t cut) {
    if (e != c->want)
        fail_msg("%s [%s, cut %zu]: got %s (%s), want %s", c->name, mode, cut, pn_http_err_name(e),
                 pn_http_parser_detail(p), pn_http_err_name(c->want));
    assert_false(g->body_before_head);
    if (e != PN_HTTP_OK) {
        assert_true(pn_http_parser_detail(p)[0] != '\0');
        size_t used = 99;
        assert_int_equal(pn_http_parser_feed(p, "x", 1, &used), e); /* sticky */
        assert_int_equal(used, 0);
        return;
    }
    assert_true(pn_http_parser_done(p));
    assert_true(g->head_seen);
    assert_int_equal(g->status_at_head, c->status);
    assert_int_equal(pn_http_status(p), c->status);
    if (c->body) {
        if (g->blen != strlen(c->body) || memcmp(g->body, c->body, g->blen))
            fail_msg("%s [%s, cut %zu]: body '%.*s'", c->name, mode, cut, (int)g->blen, g->body);
    } else {
        assert_int_equal(g->blen, 3);
        assert_memory_equal(g->body, "a\0b", 3);
    }
    if (c->hname) {
        const char *v = pn_http_header_get(p, c->hname);
        if (c->hval) {
            assert_non_null(v);
            assert_string_equal(v, c->hval);
        } else {
            assert_null(v);
        }
    }
}

/* One case under one split: run, check, free. */
static void run_check(const rcase *c, const size_t *cuts, size_t ncuts, const char *mode,
                      size_t cut) {
    got g;
    pn_http_parser *p;
    pn_http_err e = run_case(c, cuts, ncuts, &g, &p);
    check(c, e, &g, p, mode, cut);
    pn_http_parser_free(p);
}

static void test_cases_whole(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++)
        run_check(&CASES[i], NULL, 0, "whole", 0);
}

static void test_cases_every_split(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++)
        for (size_t cut = 0; cut <= case_len(&CASES[i]); cut++)
            run_check(&CASES[i], &cut, 1, "split", cut);
}

static void test_cases_byte_by_byte(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        size_t len = case_len(&CASES[i]);
        size_t *cuts = calloc(len + 1, sizeof *cuts);
        assert_non_null(cuts);
        for (size_t k = 0; k < len; k++)
            cuts[k] = k + 1;
        run_check(&CASES[i], cuts, len, "bytes", 0);
        free(cuts);
    }
}

static void test_headers_in_order(void **state) {
    (void)state;
    static const char r[] = "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 120\r\nX-A: 1\r\n"
                            "x-a: 2\r\nContent-Length: 0\r\n\r\n";
    pn_http_parser *p = pn_http_parser_new(false, NULL, NULL);
    assert_non_null(p);
    assert_int_equal(pn_http_status(p), 0);
    assert_null(pn_http_header_get(p, "x-a"));
    size_t used;
    assert_int_equal(pn_http_parser_feed(p, r, sizeof r - 1, &used), PN_HTTP_OK);
    assert_int_equal(used, sizeof r - 1);
    assert_true(pn_http_parser_done(p));
    assert_int_equal(pn_http_status(p), 429);
    assert_string_equal(pn_http_reason(p), "Too Many Requests");
    assert_int_equal(pn_http_minor_version(p), 1);
    assert_int_equal(pn_http_header_count(p), 4);
    pn_http_header h = pn_http_header_at(p, 2);
    assert_string_equal(h.name, "x-a");
    assert_string_equal(h.value, "2");
    assert_null(pn_http_header_at(p, 4).name);
    assert_string_equal(pn_http_header_get(p, "X-A"), "1");
    assert_int_equal(pn_http_retry_after_ms(p, 0), 120000);
    pn_http_parser_free(p);
}

static int64_t retry_after(const char *value, int64_t now) {
    char r[256];
    snprintf(r, sizeof r, "HTTP/1.1 503 x\r\nRetry-After: %s\r\nContent-Length: 0\r\n\r\n", value);
    pn_http_parser *p = pn_http_parser_new(false, NULL, NULL);
    assert_non_null(p);
    assert_int_equal(pn_http_parser_feed(p, r, strlen(r), NULL), PN_HTTP_OK);
    int64_t v = pn_http_retry_after_ms(p, now);
    pn_http_parser_free(p);
    return v;
}

static void test_retry_after(void **state) {
    (void)state;
    /* 1994-11-06T08:49:37Z = 784111777 s */
    assert_int_equal(retry_after("Sun, 06 Nov 1994 08:49:37 GMT", 784111777000 - 5000), 5000);
    assert_int_equal(retry_after("Sun, 06 Nov 1994 08:49:37 GMT", 784111777000 + 5000), 0);
    assert_int_equal(retry_after("Sat, 29 Feb 2020 00:00:00 GMT", 1582934400000 - 1), 1);
    assert_int_equal(retry_after("0", 0), 0);
    assert_int_equal(retry_after("7", 0), 7000);
    assert_int_equal(retry_after("99999999999999999999999", 0), 100000000 * 1000LL);
    assert_int_equal(retry_after("1.5", 0), -1);
    assert_int_equal(retry_after("soon", 0), -1);
    assert_int_equal(retry_after("Sun, 06 Xyz 1994 08:49:37 GMT", 0), -1);
    assert_int_equal(retry_after("Sun, 06 Nov 1994 08:49:37 UTC", 0), -1);
}

static int stop_head(void *ud, const pn_http_parser *p) {
    (void)ud, (void)p;
    return 1;
}

static int stop_body(void *ud, const char *d, size_t n) {
    (void)d, (void)n;
    return ++*(int *)ud >= 2;
}

static void test_callbacks_stop(void **state) {
    (void)state;
    static const char r[] = "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nabcd";
    pn_http_parser_cb cb = {stop_head, NULL, NULL};
    pn_http_parser *p = pn_http_parser_new(false, NULL, &cb);
    assert_int_equal(pn_http_parser_feed(p, r, sizeof r - 1, NULL), PN_HTTP_E_STOPPED);
    assert_int_equal(pn_http_parser_finish(p), PN_HTTP_E_STOPPED);
    pn_http_parser_free(p);
    int calls = 0;
    pn_http_parser_cb cb2 = {NULL, stop_body, &calls};
    p = pn_http_parser_new(false, NULL, &cb2);
    assert_int_equal(pn_http_parser_feed(p, r, sizeof r - 2, NULL), PN_HTTP_OK);
    assert_int_equal(pn_http_parser_feed(p, r + sizeof r - 2, 1, NULL), PN_HTTP_E_STOPPED);
    assert_int_equal(calls, 2);
    pn_http_parser_free(p);
}

/* A body delimited by the close stops at the bound whatever the split: the bytes up to
 * it are delivered, then the error. */
static void test_close_body_bound(void **state) {
    (void)state;
    static const rcase c = {"bound",
                            "HTTP/1.1 200 OK\r\n\r\nhello world",
                            0,
                            false,
                            {.max_body = 4},
                            PN_HTTP_E_BODY_LIMIT,
                            0,
                            0,
                            0,
                            0};
    size_t len = strlen(c.resp);
    for (size_t cut = 0; cut <= len; cut++) {
        got g;
        pn_http_parser *p;
        assert_int_equal(run_case(&c, &cut, 1, &g, &p), PN_HTTP_E_BODY_LIMIT);
        assert_int_equal(g.blen, 4);
        assert_memory_equal(g.body, "hell", 4);
        pn_http_parser_free(p);
    }
}

/* ---------------------------------------------------------------- requests */

static void test_request_bytes(void **state) {
    (void)state;
    pb_buf b = {0};
    pn_http_header h[] = {{"Content-Type", "application/json"}, {"Authorization", "Bearer k\tx"}};
    assert_int_equal(pn_http_write_request(&b, "POST", "/v1/chat?x=1", "api.example:8443", h, 2,
                                           "{}", 2, NULL, 0),
                     PN_HTTP_OK);
    assert_string_equal(b.p, "POST /v1/chat?x=1 HTTP/1.1\r\nHost: api.example:8443\r\n"
                             "Content-Type: application/json\r\nAuthorization: Bearer k\tx\r\n"
                             "Content-Length: 2\r\nConnection: close\r\n\r\n{}");
    pb_buf_reset(&b);
    assert_int_equal(pn_http_write_request(&b, "GET", "/", "h", NULL, 0, NULL, 0, NULL, 0),
                     PN_HTTP_OK);
    assert_string_equal(b.p, "GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n");
    pb_buf_reset(&b);
    assert_int_equal(pn_http_write_request(&b, "POST", "/", "h", NULL, 0, NULL, 0, NULL, 0),
                     PN_HTTP_OK);
    assert_string_equal(
        b.p, "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    pb_buf_free(&b);
}

static void test_request_refusals(void **state) {
    (void)state;
    struct {
        const char *method, *target, *host, *name, *value;
    } bad[] = {
        {"GET", "/", "h", "X-A", "v\r\nInjected: 1"},
        {"GET", "/", "h", "X-A", "v\nInjected: 1"},
        {"GET", "/", "h", "X-A", "v\rx"},
        {"GET", "/", "h", "X-A", "\x01"},
        {"GET", "/", "h", "X A", "v"},
        {"GET", "/", "h", "X-A:", "v"},
        {"GET", "/", "h", "", "v"},
        {"GET", "/", "h", "X-A\r\n", "v"},
        {"GET", "/", "h", "host", "evil"},
        {"GET", "/", "h", "Content-Length", "1"},
        {"GET", "/", "h", "TRANSFER-ENCODING", "chunked"},
        {"GET", "/", "h", "Connection", "keep-alive"},
        {"G ET", "/", "h", "X", "v"},
        {"GET\r\n", "/", "h", "X", "v"},
        {"", "/", "h", "X", "v"},
        {"GET", "/a b", "h", "X", "v"},
        {"GET", "/a\r\nX: y", "h", "X", "v"},
        {"GET", "a", "h", "X", "v"},
        {"GET", "/#frag", "h", "X", "v"},
        {"GET", "/\xc3\xa9", "h", "X", "v"},
        {"GET", "/", "h\r\nX: y", "X", "v"},
        {"GET", "/", "u@h", "X", "v"},
        {"GET", "/", "", "X", "v"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        pb_buf b = {0};
        assert_true(pb_buf_puts(&b, "kept"));
        char detail[128] = "";
        pn_http_header h = {bad[i].name, bad[i].value};
        pn_http_err e = pn_http_write_request(&b, bad[i].method, bad[i].target, bad[i].host, &h, 1,
                                              NULL, 0, detail, sizeof detail);
        if (e != PN_HTTP_E_ARG) fail_msg("case %zu: %s", i, pn_http_err_name(e));
        assert_true(detail[0] != '\0');
        assert_string_equal(b.p, "kept");
        pb_buf_free(&b);
    }
    pn_http_header nov = {"X", NULL};
    pb_buf b = {0};
    assert_int_equal(pn_http_write_request(&b, "GET", "/", "h", &nov, 1, NULL, 0, NULL, 0),
                     PN_HTTP_E_ARG);
    assert_int_equal(pn_http_write_request(&b, "GET", "/", "h", NULL, 1, NULL, 0, NULL, 0),
                     PN_HTTP_E_ARG);
    assert_int_equal(pn_http_write_request(&b, "POST", "/", "h", NULL, 0, NULL, 3, NULL, 0),
                     PN_HTTP_E_ARG);
    pb_buf_free(&b);
}

/* ---------------------------------------------------------------- URLs */

static void test_urls(void **state) {
    (void)state;
    struct {
        const char *url;
        bool tls;
        const char *host;
        unsigned port;
        const char *target, *host_field;
    } good[] = {
        {"http://example.com", false, "example.com", 80, "/", "example.com"},
        {"HTTPS://Example.com/v1/chat/completions", true, "Example.com", 443,
         "/v1/chat/completions", "Example.com"},
        {"http://127.0.0.1:8080/a?b=c#frag", false, "127.0.0.1", 8080, "/a?b=c", "127.0.0.1:8080"},
        {"https://[::1]:8443/mcp", true, "::1", 8443, "/mcp", "[::1]:8443"},
        {"https://[2001:db8::1]/", true, "2001:db8::1", 443, "/", "[2001:db8::1]"},
        {"http://h:80/", false, "h", 80, "/", "h"},
        {"https://h:443?q", true, "h", 443, "/?q", "h"},
        {"http://h/%20x", false, "h", 80, "/%20x", "h"},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        pn_http_url u;
        char d[128];
        pn_http_err e = pn_http_url_parse(good[i].url, &u, d, sizeof d);
        if (e) fail_msg("%s: %s (%s)", good[i].url, pn_http_err_name(e), d);
        assert_int_equal(u.tls, good[i].tls);
        assert_string_equal(u.host, good[i].host);
        assert_int_equal(u.port, good[i].port);
        assert_string_equal(u.target, good[i].target);
        assert_string_equal(u.host_field, good[i].host_field);
        pn_http_url_free(&u);
    }
    const char *bad[] = {
        "ftp://h/",
        "http:/h/",
        "h/path",
        "http://user:pw@h/",
        "http://user@h/",
        "http://h@evil/",
        "http:///path",
        "http://:80/",
        "http://h:0/",
        "http://h:65536/",
        "http://h:123456/",
        "http://h:8x/",
        "http://h:/",
        "http://h h/",
        "http://h/a b",
        "http://h/\r\nX: y",
        "http://h\xc3\xa9/",
        "http://[::1/",
        "http://[::1]x/",
        "http://[zz::1]/",
        "http://h%41/",
        "http://h;x/",
        NULL,
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        pn_http_url u;
        char d[128] = "";
        pn_http_err e = pn_http_url_parse(bad[i], &u, d, sizeof d);
        if (e != PN_HTTP_E_URL) fail_msg("%s: accepted", bad[i] ? bad[i] : "NULL");
        assert_true(d[0] != '\0');
        assert_null(u.target);
        pn_http_url_free(&u);
    }
    char longhost[400];
    memset(longhost, 'a', sizeof longhost);
    memcpy(longhost, "http://", 7);
    longhost[sizeof longhost - 1] = '\0';
    pn_http_url u;
    assert_int_equal(pn_http_url_parse(longhost, &u, NULL, 0), PN_HTTP_E_URL);
}

static void test_huge_bounds(void **state) {
    (void)state;
    static const char r[] = "HTTP/1.1 200 OK\r\nX: y\r\n\r\nbody";
    pn_http_limits lim = {SIZE_MAX, SIZE_MAX, SIZE_MAX, SIZE_MAX, UINT64_MAX};
    pn_http_parser *p = pn_http_parser_new(false, &lim, NULL);
    assert_non_null(p);
    for (size_t i = 0; i < sizeof r - 1; i++)
        assert_int_equal(pn_http_parser_feed(p, r + i, 1, NULL), PN_HTTP_OK);
    assert_int_equal(pn_http_parser_finish(p), PN_HTTP_OK);
    assert_string_equal(pn_http_header_get(p, "x"), "y");
    pn_http_parser_free(p);
}

static void test_names(void **state) {
    (void)state;
    for (int e = PN_HTTP_OK; e <= PN_HTTP_E_CANCELLED; e++)
        assert_string_not_equal(pn_http_err_name((pn_http_err)e), "unknown");
    assert_string_equal(pn_http_err_name((pn_http_err)99), "unknown");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cases_whole),        cmocka_unit_test(test_cases_every_split),
        cmocka_unit_test(test_cases_byte_by_byte), cmocka_unit_test(test_headers_in_order),
        cmocka_unit_test(test_retry_after),        cmocka_unit_test(test_callbacks_stop),
        cmocka_unit_test(test_close_body_bound),   cmocka_unit_test(test_request_bytes),
        cmocka_unit_test(test_request_refusals),   cmocka_unit_test(test_urls),
        cmocka_unit_test(test_huge_bounds),        cmocka_unit_test(test_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
