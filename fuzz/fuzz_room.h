/*
 * fuzz_room.h — shared parts of the room fuzz targets (fuzz_room_wasi.c,
 * fuzz_room_yuyan.c): reading choices from the fuzzer's bytes, writing a Wasm binary
 * (LEB128, sections), and running the generated module through the contract call
 * pr_run on a small, fast host (CPU 100 ms, wall 250 ms, 32 MiB memory cap, a small
 * module cache, deterministic clocks). The oracle: pr_run never crashes (ASan/UBSan),
 * and its return text is valid UTF-8 JSON-ish text or a typed exception.
 */
#ifndef PERI_FUZZ_ROOM_H
#define PERI_FUZZ_ROOM_H

#include "room/room_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- input */

typedef struct fin {
    const uint8_t *p;
    size_t n, at;
} fin;

static inline uint8_t fin_u8(fin *f) {
    return f->at < f->n ? f->p[f->at++] : 0;
}
static inline uint32_t fin_u32(fin *f) {
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v = v << 8 | fin_u8(f);
    return v;
}
static inline uint64_t fin_u64(fin *f) {
    return (uint64_t)fin_u32(f) << 32 | fin_u32(f);
}
static inline bool fin_done(const fin *f) {
    return f->at >= f->n;
}

/* ---------------------------------------------------------------- output */

typedef struct wbuf {
    uint8_t *p;
    size_t n, cap;
} wbuf;

static inline void wb_put(wbuf *b, const void *d, size_t n) {
    if (b->n + n > b->cap) {
        size_t c = b->cap ? b->cap : 256;
        while (c < b->n + n)
            c *= 2;
        uint8_t *q = realloc(b->p, c);
        if (!q) abort();
        b->p = q;
        b->cap = c;
    }
    memcpy(b->p + b->n, d, n);
    b->n += n;
}
static inline void wb_u8(wbuf *b, uint8_t x) {
    wb_put(b, &x, 1);
}
static inline void wb_uleb(wbuf *b, uint64_t v) {
    do {
        uint8_t x = v & 0x7f;
        v >>= 7;
        wb_u8(b, x | (v ? 0x80 : 0));
    } while (v);
}
static inline void wb_sleb(wbuf *b, int64_t v) {
    for (;;) {
        uint8_t x = v & 0x7f;
        v >>= 7; /* arithmetic */
        bool done = (v == 0 && !(x & 0x40)) || (v == -1 && (x & 0x40));
        wb_u8(b, x | (done ? 0 : 0x80));
        if (done) return;
    }
}
static inline void wb_name(wbuf *b, const char *s) {
    wb_uleb(b, strlen(s));
    wb_put(b, s, strlen(s));
}
static inline void wb_section(wbuf *b, uint8_t id, wbuf *body) {
    wb_u8(b, id);
    wb_uleb(b, body->n);
    wb_put(b, body->p, body->n);
    body->n = 0;
}
static inline void wb_free(wbuf *b) {
    free(b->p);
    memset(b, 0, sizeof *b);
}

/* ---------------------------------------------------------------- running */

static pr_host *fz_host(void) {
    static pr_host *h; /* one per fuzzing process */
    if (!h) {
        pr_host_config cfg = {.cpu_ms = 100,
                              .wall_ms = 250,
                              .memory_cap = 32u << 20,
                              .cache_bytes = 4u << 20,
                              .deterministic = true};
        pr_error e;
        h = pr_host_new(&cfg, &e);
        if (!h) abort();
    }
    return h;
}

/* Runs module m; returns 1 if it ran (a result), 0 if the contract threw. Aborts on a
 * broken invariant. */
static int fz_run(const uint8_t *m, size_t n, const char *input) {
    uint8_t d[32];
    char hex[65];
    if (!pr__sha256(m, n, d)) abort();
    pr__hex(d, 32, hex);
    size_t bl;
    char *b64 = pr__base64_encode(m, n, &bl);
    if (!b64) abort();
    static const char runner[] = "LOADER", scope[] = "fuzz";
    pr_request r = {{runner, sizeof runner - 1},
                    {scope, sizeof scope - 1},
                    {hex, 64},
                    {b64, bl},
                    {input, strlen(input)}};
    pr_response res;
    pr_error e;
    int ran;
    if (pr_run(fz_host(), &r, &res, &e)) {
        if (!res.output || strlen(res.output) != res.output_len ||
            !pr__utf8_valid((const uint8_t *)res.output, res.output_len) || res.output[0] != '{')
            abort();
        pr_response_clear(&res);
        ran = 1;
    } else {
        if (!memchr(e.message, 0, sizeof e.message)) abort();
        ran = 0;
    }
    free(b64);
    return ran;
}

#endif
