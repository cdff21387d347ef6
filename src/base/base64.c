/*
 * base64.c — standard Base64 (RFC 4648 section 4, with padding) into caller buffers, no
 * allocation. The decoder is strict, for protocol fields (SCRAM's salt, nonce and
 * proofs): length a multiple of 4, '=' only as the last one or two characters, no
 * whitespace, and unused bits of the last character zero, so every byte string has
 * exactly one accepted text. (The room's program decoder, with JavaScript atob's
 * forgiving rules, is a different contract and stays in src/room/base64.c.)
 *
 * Owns no memory; never writes outside out[0 .. max).
 */
#include "peri/base.h"

static const char ALPHA[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t pb_base64_encode(const void *in, size_t n, char *out) {
    const uint8_t *p = in;
    size_t k = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) |
                     (i + 2 < n ? p[i + 2] : 0);
        out[k++] = ALPHA[v >> 18];
        out[k++] = ALPHA[(v >> 12) & 63];
        out[k++] = i + 1 < n ? ALPHA[(v >> 6) & 63] : '=';
        out[k++] = i + 2 < n ? ALPHA[v & 63] : '=';
    }
    out[k] = 0;
    return k;
}

static int value(unsigned char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

bool pb_base64_decode(const char *in, size_t n, uint8_t *out, size_t max, size_t *out_len) {
    if (n % 4) return false;
    size_t pad = 0;
    if (n && in[n - 1] == '=') pad = n >= 2 && in[n - 2] == '=' ? 2 : 1;
    size_t len = n / 4 * 3 - pad;
    if (len > max) return false;
    size_t k = 0;
    for (size_t i = 0; i < n; i += 4) {
        bool last = i + 4 == n;
        size_t data = last ? 4 - pad : 4;
        uint32_t v = 0;
        for (size_t j = 0; j < 4; j++) {
            int x = j < data ? value((unsigned char)in[i + j]) : 0;
            if (x < 0) return false; /* also an '=' in the middle */
            v = v << 6 | (uint32_t)x;
        }
        if (data == 2 && (v & 0xFFFF)) return false; /* non-zero unused bits */
        if (data == 3 && (v & 0xFF)) return false;
        out[k++] = (uint8_t)(v >> 16);
        if (data >= 3) out[k++] = (uint8_t)(v >> 8);
        if (data == 4) out[k++] = (uint8_t)v;
    }
    *out_len = k;
    return true;
}
