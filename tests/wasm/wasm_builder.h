/*
 * wasm_builder.h — assembling small WebAssembly binaries by hand in tests.
 *
 * A wb buffer grows as bytes are appended; wb_section wraps a body in a section
 * with its size. Allocation failures abort: this is test code.
 */
#ifndef WASM_BUILDER_H
#define WASM_BUILDER_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct wb {
    uint8_t *p;
    size_t n, cap;
} wb;

static inline void wb_bytes(wb *b, const void *src, size_t n) {
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->n + n)
            cap *= 2;
        b->p = realloc(b->p, cap);
        if (!b->p) abort();
        b->cap = cap;
    }
    memcpy(b->p + b->n, src, n);
    b->n += n;
}

static inline void wb_byte(wb *b, uint8_t x) {
    wb_bytes(b, &x, 1);
}

static inline void wb_u32(wb *b, uint32_t v) {
    do {
        uint8_t x = v & 0x7f;
        v >>= 7;
        wb_byte(b, x | (v ? 0x80 : 0));
    } while (v);
}

static inline void wb_header(wb *b) {
    wb_bytes(b, "\0asm\1\0\0\0", 8);
}

/* Append section `id` holding body. */
static inline void wb_section(wb *b, uint8_t id, const wb *body) {
    wb_byte(b, id);
    wb_u32(b, (uint32_t)body->n);
    wb_bytes(b, body->p, body->n);
}

static inline void wb_free(wb *b) {
    free(b->p);
    memset(b, 0, sizeof *b);
}

#endif
