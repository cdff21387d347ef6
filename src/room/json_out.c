/*
 * json_out.c — JSON string output byte-identical to JavaScript JSON.stringify: only
 * '"', '\\' and control characters below 0x20 are escaped (\b \t \n \f \r short
 * forms, else \u00XX lower-case hex); '/', DEL and non-ASCII pass through. Also the
 * result's exitCode as a JavaScript Number prints it.
 */
#include "room_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char HEX[] = "0123456789abcdef";

bool pr__json_str(pb_buf *b, const char *s, size_t n) {
    if (!pb_buf_reserve(b, n + 2)) return false;
    b->p[b->len++] = '"';
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\') continue;
        if (!pb_buf_put(b, s + run, i - run)) return false;
        char esc[6] = {'\\', 0};
        size_t k = 2;
        switch (c) {
        case '"': esc[1] = '"'; break;
        case '\\': esc[1] = '\\'; break;
        case '\b': esc[1] = 'b'; break;
        case '\t': esc[1] = 't'; break;
        case '\n': esc[1] = 'n'; break;
        case '\f': esc[1] = 'f'; break;
        case '\r': esc[1] = 'r'; break;
        default:
            esc[1] = 'u';
            esc[2] = '0';
            esc[3] = '0';
            esc[4] = HEX[c >> 4];
            esc[5] = HEX[c & 15];
            k = 6;
        }
        if (!pb_buf_put(b, esc, k)) return false;
        run = i + 1;
    }
    return pb_buf_put(b, s + run, n - run) && pb_buf_putc(b, '"');
}

void pr__json_exit_code(char *buf, size_t cap, int64_t v) {
    const int64_t exact = (int64_t)1 << 53;
    if (v >= -exact && v <= exact) {
        snprintf(buf, cap, ",\"exitCode\":%lld", (long long)v);
        return;
    }
    /* Beyond 2^53: the nearest double (round to nearest even, as Number(BigInt)), in
     * the fewest significant digits that read back to it, padded with zeros
     * (|v| < 1e21, so JavaScript never switches to exponent form here). */
    double d = (double)v;
    char e[40];
    for (int p = 1; p <= 17; p++) {
        snprintf(e, sizeof e, "%.*e", p - 1, d);
        if (strtod(e, NULL) == d) break;
    }
    char digits[24];
    size_t nd = 0;
    const char *q = e;
    bool neg = *q == '-';
    if (neg) q++;
    for (; *q && *q != 'e'; q++)
        if (*q >= '0' && *q <= '9') digits[nd++] = *q;
    int exp10 = atoi(q + 1);
    char out[32];
    size_t k = 0;
    if (neg) out[k++] = '-';
    for (int i = 0; i <= exp10 && k < sizeof out - 1; i++)
        out[k++] = (size_t)i < nd ? digits[i] : '0';
    out[k] = 0;
    snprintf(buf, cap, ",\"exitCode\":%s", out);
}
