/*
 * utf8.c — UTF-8 decoding exactly as the reference host's TextDecoder does it:
 * lenient (stdout/stderr, per write) and strict (output files), both dropping a
 * leading BOM, plus cutting text to a number of UTF-16 code units (JS slice), and the
 * one reading of a UTF-8 sequence (pr_utf8_seq, room.h) that placement uses too.
 */
#include "room_int.h"

#include <string.h>

static const char REPLACEMENT[3] = {(char)0xEF, (char)0xBF, (char)0xBD};

size_t pr_utf8_seq(const uint8_t *s, size_t n, size_t *bad) {
    uint8_t b = s[0];
    size_t need;
    uint8_t lo = 0x80, hi = 0xBF;
    if (b < 0x80) return 1;
    if (b >= 0xC2 && b <= 0xDF)
        need = 1;
    else if (b >= 0xE0 && b <= 0xEF) {
        need = 2;
        if (b == 0xE0) lo = 0xA0;
        if (b == 0xED) hi = 0x9F;
    } else if (b >= 0xF0 && b <= 0xF4) {
        need = 3;
        if (b == 0xF0) lo = 0x90;
        if (b == 0xF4) hi = 0x8F;
    } else {
        *bad = 1;
        return 0;
    }
    size_t i = 1;
    for (; i <= need; i++) {
        if (i >= n || s[i] < lo || s[i] > hi) {
            *bad = i;
            return 0;
        }
        lo = 0x80;
        hi = 0xBF;
    }
    return need + 1;
}

static size_t skip_bom(const uint8_t *in, size_t n) {
    return n >= 3 && in[0] == 0xEF && in[1] == 0xBB && in[2] == 0xBF ? 3 : 0;
}

bool pr__utf8_lenient(pb_buf *out, const uint8_t *in, size_t n) {
    size_t i = skip_bom(in, n), run = i;
    if (!pb_buf_reserve(out, n - i)) return false;
    while (i < n) {
        if (in[i] < 0x80) {
            i++;
            continue;
        }
        size_t bad = 0, k = pr_utf8_seq(in + i, n - i, &bad);
        if (k) {
            i += k;
            continue;
        }
        if (!pb_buf_put(out, in + run, i - run) || !pb_buf_put(out, REPLACEMENT, 3)) return false;
        i += bad;
        run = i;
    }
    return pb_buf_put(out, in + run, n - run);
}

bool pr__utf8_valid(const uint8_t *in, size_t n) {
    size_t i = 0;
    while (i < n) {
        /* ASCII runs eight bytes at a time. */
        while (i + 8 <= n) {
            uint64_t v;
            memcpy(&v, in + i, 8);
            if (v & 0x8080808080808080ull) break;
            i += 8;
        }
        if (i >= n) break;
        if (in[i] < 0x80) {
            i++;
            continue;
        }
        size_t bad = 0, k = pr_utf8_seq(in + i, n - i, &bad);
        if (!k) return false;
        i += k;
    }
    return true;
}

size_t pr__utf8_cut_utf16(const char *s, size_t n, size_t max_units) {
    const uint8_t *u = (const uint8_t *)s;
    size_t i = 0, units = 0;
    while (i < n) {
        size_t bad = 0, k = pr_utf8_seq(u + i, n - i, &bad);
        size_t w = k == 4 ? 2 : 1;
        if (!k) k = bad;
        if (units + w > max_units) break;
        units += w;
        i += k;
    }
    return i;
}
