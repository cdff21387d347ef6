/*
 * reader.c — the out-of-line parts of reader.h: multi-byte LEB128 and UTF-8 checks.
 *
 * The LEB rules follow the binary format exactly: an N-bit integer takes at most
 * ceil(N/7) bytes ("integer representation too long" beyond), and the unused high
 * bits of the last byte must be zero, or for signed integers copies of the sign bit
 * ("integer too large").
 */
#include "wasm/reader.h"

bool pw__rd_fail_eof(pw_reader *r) {
    pw__fail(r->err, PW_ERR_MALFORMED, PW_MSG_EOF " (at byte %zu)", pw_rd_off(r));
    return false;
}

static bool leb_fail(pw_reader *r, const char *what) {
    pw__fail(r->err, PW_ERR_MALFORMED, "%s (at byte %zu)", what, pw_rd_off(r));
    return false;
}

/* LEB128 of `bits` bits (<= 64), unsigned or (is_signed) two's complement
 * sign-extended to 64. The unused high bits of the last byte must be zero, or for a
 * signed integer all copies of its sign bit (the mask then includes the sign bit). */
static bool rd_leb(pw_reader *r, unsigned bits, bool is_signed, uint64_t *out) {
    uint64_t v = 0;
    *out = 0;
    unsigned shift = 0;
    uint8_t b;
    for (;; shift += 7) {
        if (shift >= bits) return leb_fail(r, "integer representation too long");
        if (r->p >= r->end) return pw__rd_fail_eof(r);
        b = *r->p++;
        unsigned left = bits - shift;
        if (left < 7) {
            uint8_t mask = (uint8_t)((0xffu << (left - is_signed)) & 0x7f);
            uint8_t high = b & mask;
            if (high != 0 && !(is_signed && high == mask)) return leb_fail(r, "integer too large");
        }
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) break;
    }
    shift += 7;
    if (is_signed && shift < 64 && (b & 0x40)) v |= ~(uint64_t)0 << shift;
    *out = v;
    return true;
}

bool pw__rd_u32_slow(pw_reader *r, uint32_t *out) {
    uint64_t v = 0;
    if (!rd_leb(r, 32, false, &v)) return false;
    *out = (uint32_t)v;
    return true;
}

bool pw__rd_u64(pw_reader *r, uint64_t *out) {
    return rd_leb(r, 64, false, out);
}

bool pw__rd_s32(pw_reader *r, int32_t *out) {
    uint64_t v = 0;
    if (!rd_leb(r, 32, true, &v)) return false;
    *out = (int32_t)v;
    return true;
}

bool pw__rd_s33(pw_reader *r, int64_t *out) {
    uint64_t v = 0;
    bool ok = rd_leb(r, 33, true, &v);
    *out = (int64_t)v;
    return ok;
}

bool pw__rd_s64(pw_reader *r, int64_t *out) {
    uint64_t v = 0;
    bool ok = rd_leb(r, 64, true, &v);
    *out = (int64_t)v;
    return ok;
}

bool pw__utf8_valid(const uint8_t *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        uint32_t cp;
        size_t len;
        if (c >= 0xC2 && c <= 0xDF)
            len = 2, cp = c & 0x1F;
        else if (c >= 0xE0 && c <= 0xEF)
            len = 3, cp = c & 0x0F;
        else if (c >= 0xF0 && c <= 0xF4)
            len = 4, cp = c & 0x07;
        else
            return false;
        if (n - i < len) return false;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if (len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) return false;
        if (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) return false;
        i += len;
    }
    return true;
}
