/*
 * base64.c — Base64 decoding with JavaScript atob's rules (WHATWG forgiving-base64):
 * ASCII whitespace (TAB LF FF CR SPACE) skipped, up to two '=' removed when the
 * length is a multiple of 4, a remainder of 1 rejected, leftover bits ignored.
 * Written for speed (a program text is up to 4 MiB and is decoded on every call):
 * a byte-class table and a four-characters-at-a-time fast path for unbroken runs.
 * Also the plain encoder (base's, into a new allocation) that tests and benchmarks use
 * to build request texts.
 */
#include "room_int.h"

#include <stdlib.h>

enum { BAD = -1, WS = -2, PAD = -3 };

/* The class of every byte: 0..63 alphabet value, or BAD / WS / PAD. */
static const int8_t T[256] = {
    BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, WS,  WS,  BAD, WS,  WS,  BAD, BAD, /* 00 */
    BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, /* 10 */
    WS,  BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, 62,  BAD, BAD, BAD, 63,  /* 20 */
    52,  53,  54,  55,  56,  57,  58,  59,  60,  61,  BAD, BAD, BAD, PAD, BAD, BAD, /* 30 */
    BAD, 0,   1,   2,   3,   4,   5,   6,   7,   8,   9,   10,  11,  12,  13,  14,  /* 40 */
    15,  16,  17,  18,  19,  20,  21,  22,  23,  24,  25,  BAD, BAD, BAD, BAD, BAD, /* 50 */
    BAD, 26,  27,  28,  29,  30,  31,  32,  33,  34,  35,  36,  37,  38,  39,  40,  /* 60 */
    41,  42,  43,  44,  45,  46,  47,  48,  49,  50,  51,  BAD, BAD, BAD, BAD, BAD, /* 70 */
    BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, /* 80 */
    BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD,
    BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD,
    BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD,
    BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD,
    BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD,
    BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD,
};

int pr__base64_decode(const char *in, size_t n, size_t max, uint8_t **out, size_t *out_len) {
    const uint8_t *s = (const uint8_t *)in;
    /* Every 4 data characters give 3 bytes; whitespace only makes the result smaller. */
    uint8_t *o = malloc(n / 4 * 3 + 3);
    if (!o) return -3;
    size_t i = 0, k = 0, data = 0, pad = 0;
    uint32_t acc = 0;
    unsigned have = 0; /* data characters in acc (0..3) */
    while (i < n) {
        if (have == 0 && !pad) {
            /* Fast path: whole groups of four alphabet characters. */
            while (i + 4 <= n) {
                int a = T[s[i]], b = T[s[i + 1]], c = T[s[i + 2]], d = T[s[i + 3]];
                if ((a | b | c | d) < 0) break;
                uint32_t v = (uint32_t)a << 18 | (uint32_t)b << 12 | (uint32_t)c << 6 | (uint32_t)d;
                o[k] = (uint8_t)(v >> 16);
                o[k + 1] = (uint8_t)(v >> 8);
                o[k + 2] = (uint8_t)v;
                k += 3;
                i += 4;
                data += 4;
            }
            if (i >= n) break;
        }
        int t = T[s[i++]];
        if (t == WS) continue;
        if (t == PAD) {
            pad++;
            continue;
        }
        if (t == BAD || pad) goto bad; /* a data character after '=' */
        acc = acc << 6 | (uint32_t)t;
        data++;
        if (++have == 4) {
            o[k] = (uint8_t)(acc >> 16);
            o[k + 1] = (uint8_t)(acc >> 8);
            o[k + 2] = (uint8_t)acc;
            k += 3;
            have = 0;
            acc = 0;
        }
    }
    if (pad && (pad > 2 || (data + pad) % 4 != 0)) goto bad;
    if (have == 1) goto bad;
    if (have == 2)
        o[k++] = (uint8_t)(acc >> 4);
    else if (have == 3) {
        o[k++] = (uint8_t)(acc >> 10);
        o[k++] = (uint8_t)(acc >> 2);
    }
    if (k < 1 || k > max) {
        free(o);
        return -2;
    }
    *out = o;
    *out_len = k;
    return 0;
bad:
    free(o);
    return -1;
}

char *pr__base64_encode(const uint8_t *in, size_t n, size_t *out_len) {
    if (n > (SIZE_MAX - 1) / 4 * 3 - 2) return NULL;
    char *o = malloc(PB_BASE64_LEN(n) + 1);
    if (!o) return NULL;
    *out_len = pb_base64_encode(in, n, o);
    return o;
}
