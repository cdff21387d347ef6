/*
 * fuzz_http.c — libFuzzer target for the HTTP/1.1 response parser (src/net/http_codec.c):
 * any bytes, fed in pieces whose sizes the input chooses, under tight or default limits,
 * as the answer to a HEAD or another request, must end in a complete response or a typed
 * error, never a crash, an over-read, a leak or undefined behaviour. Checked on the way:
 * the body delivered never exceeds the bound; the head is readable from on_head on; an
 * error is sticky; the same bytes fed whole give the same outcome. The input (to its
 * first NUL) is also parsed as a URL.
 *   make -C build-fuzz fuzz-net-http && ./build-fuzz/fuzz-net-http -max_total_time=60
 */
#include "peri/net_http.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct seen {
    uint64_t body;
    uint64_t max;
    bool head;
} seen;

static int on_head(void *ud, const pn_http_parser *p) {
    seen *s = ud;
    s->head = true;
    int st = pn_http_status(p);
    if (st < 200 || st > 999) __builtin_trap();
    for (size_t i = 0; i < pn_http_header_count(p); i++) {
        pn_http_header h = pn_http_header_at(p, i);
        if (!h.name || !h.value || !h.name[0] || strpbrk(h.value, "\r\n")) __builtin_trap();
        if (pn_http_header_get(p, h.name) == NULL) __builtin_trap();
    }
    (void)pn_http_retry_after_ms(p, 1700000000000);
    return 0;
}

static int on_body(void *ud, const char *d, size_t n) {
    seen *s = ud;
    if (!s->head || n == 0) __builtin_trap();
    volatile char sink = d[0] ^ d[n - 1]; /* the slice is readable end to end */
    (void)sink;
    s->body += n;
    if (s->body > s->max) __builtin_trap();
    return 0;
}

static pn_http_err run(const uint8_t *d, size_t n, bool head, const pn_http_limits *lim,
                       unsigned step, seen *s) {
    pn_http_parser_cb cb = {on_head, on_body, s};
    pn_http_parser *p = pn_http_parser_new(head, lim, &cb);
    if (!p) return PN_HTTP_E_NOMEM;
    pn_http_err e = PN_HTTP_OK;
    size_t at = 0;
    while (at < n && !e && !pn_http_parser_done(p)) {
        size_t k = step && step < n - at ? step : n - at;
        uint8_t *piece = malloc(k); /* exact size: an over-read is an ASan error */
        if (!piece) break;
        memcpy(piece, d + at, k);
        size_t used = 0;
        e = pn_http_parser_feed(p, piece, k, &used);
        free(piece);
        if (used > k) __builtin_trap();
        at += k;
    }
    if (!e && !pn_http_parser_done(p)) e = pn_http_parser_finish(p);
    if (e && pn_http_parser_feed(p, "x", 1, NULL) != e) __builtin_trap();
    if (!e && !pn_http_parser_done(p)) __builtin_trap();
    pn_http_parser_free(p);
    return e;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2) return 0;
    bool head = data[0] & 1;
    bool tight = data[0] & 2;
    unsigned step = data[1] % 17; /* 0: whole */
    pn_http_limits lim = {0};
    if (tight) lim = (pn_http_limits){64, 256, 4, 3, 512};
    const uint8_t *d = data + 2;
    size_t n = size - 2;
    seen a = {0, tight ? 512 : 64u << 20, false}, b = a;
    pn_http_err e1 = run(d, n, head, &lim, step, &a);
    pn_http_err e2 = run(d, n, head, &lim, 0, &b);
    if (e1 != e2 || a.body != b.body) __builtin_trap();

    char *url = malloc(n + 1);
    if (!url) return 0;
    memcpy(url, d, n);
    url[n] = '\0';
    pn_http_url u;
    if (pn_http_url_parse(url, &u, NULL, 0) == PN_HTTP_OK) {
        pb_buf req = {0};
        if (pn_http_write_request(&req, "GET", u.target, u.host_field, NULL, 0, NULL, 0, NULL, 0) !=
                PN_HTTP_OK &&
            u.target[0] == '/')
            __builtin_trap();
        pb_buf_free(&req);
    }
    pn_http_url_free(&u);
    free(url);
    return 0;
}
