/*
 * reader.h — a bounds-checked cursor over a byte range, with the LEB128 readers of the
 * binary format (internal to src/wasm/).
 *
 * Every reader returns false after filling the caller's pw_error with the reference
 * interpreter's wording ("unexpected end", "integer too large", "integer
 * representation too long"); the single-byte LEB case is inlined because almost every
 * index and opcode in real code fits in one byte.
 */
#ifndef PW_READER_H
#define PW_READER_H

#include "wasm/module.h"

typedef struct pw_reader {
    const uint8_t *p, *end;
    const uint8_t *base; /* start of the module, for offsets in messages */
    pw_error *err;
} pw_reader;

#define PW_MSG_EOF "unexpected end of section or function"

bool pw__rd_fail_eof(pw_reader *r);
bool pw__rd_u32_slow(pw_reader *r, uint32_t *out);
bool pw__rd_u64(pw_reader *r, uint64_t *out);
bool pw__rd_s32(pw_reader *r, int32_t *out);
bool pw__rd_s33(pw_reader *r, int64_t *out);
bool pw__rd_s64(pw_reader *r, int64_t *out);

static inline size_t pw_rd_left(const pw_reader *r) {
    return (size_t)(r->end - r->p);
}

static inline size_t pw_rd_off(const pw_reader *r) {
    return (size_t)(r->p - r->base);
}

static inline bool pw_rd_byte(pw_reader *r, uint8_t *out) {
    if (r->p >= r->end) {
        *out = 0; /* defined on failure too, which keeps -O2 warnings quiet */
        return pw__rd_fail_eof(r);
    }
    *out = *r->p++;
    return true;
}

static inline bool pw_rd_u32(pw_reader *r, uint32_t *out) {
    if (r->p < r->end && *r->p < 0x80) {
        *out = *r->p++;
        return true;
    }
    return pw__rd_u32_slow(r, out);
}

static inline bool pw_rd_bytes(pw_reader *r, size_t n, const uint8_t **out) {
    if (pw_rd_left(r) < n) {
        *out = r->p;
        return pw__rd_fail_eof(r);
    }
    *out = r->p;
    r->p += n;
    return true;
}

/* Does the UTF-8 text [s, s+n) decode? (No overlongs, no surrogates, <= U+10FFFF.) */
bool pw__utf8_valid(const uint8_t *s, size_t n);

#endif
