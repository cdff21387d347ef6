/*
 * base64.c — Base64 decoding with JavaScript atob's rules (WHATWG forgiving-base64):
 * ASCII whitespace (TAB LF FF CR SPACE) skipped, up to two '=' removed when the
 * length is a multiple of 4, a remainder of 1 rejected, leftover bits ignored.
 */
#include "room_int.h"

#include <stdlib.h>

static int8_t val(unsigned char c) {
    if (c >= 'A' && c <= 'Z') return (int8_t)(c - 'A');
    if (c >= 'a' && c <= 'z') return (int8_t)(c - 'a' + 26);
    if (c >= '0' && c <= '9') return (int8_t)(c - '0' + 52);
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

static bool is_ws(unsigned char c) {
    return c == '\t' || c == '\n' || c == '\f' || c == '\r' || c == ' ';
}

int pr_base64_decode(const char *in, size_t n, size_t max, uint8_t **out, size_t *out_len) {
    /* First pass: count data characters and find the padding, without copying. */
    size_t data = 0, pad = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)in[i];
        if (is_ws(c)) continue;
        if (c == '=') {
            pad++;
            continue;
        }
        if (pad || val(c) < 0) return -1; /* a data character after '=' */
        data++;
    }
    if (pad) {
        if (pad > 2 || (data + pad) % 4 != 0) return -1;
    }
    if (data % 4 == 1) return -1;
    size_t len = data / 4 * 3 + (data % 4 ? data % 4 - 1 : 0);
    if (len < 1 || len > max) return -2;
    uint8_t *o = malloc(len);
    if (!o) return -3;
    uint32_t acc = 0;
    int bits = 0;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        int8_t v = val((unsigned char)in[i]);
        if (v < 0) continue;
        acc = acc << 6 | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            o[k++] = (uint8_t)(acc >> bits);
        }
    }
    *out = o;
    *out_len = k;
    return 0;
}
