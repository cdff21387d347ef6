/*
 * buf.c — the growable byte buffer (pb_buf) every layer builds texts in, and the
 * checked doubling of arrays (pb_grow), and the bounded body sink (pb_capped) on top.
 *
 * Invariants: cap == 0 and p == NULL for an empty, never-grown buffer; otherwise
 * len < cap and p[len] == 0. Growth is checked against SIZE_MAX before it doubles.
 */
#include "peri/base.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool pb_buf_reserve(pb_buf *b, size_t extra) {
    if (extra > SIZE_MAX / 2 - b->len) return false;
    size_t need = b->len + extra + 1;
    if (need <= b->cap) return true;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) return false;
    p[b->len] = 0; /* a first allocation must already read as "" */
    b->p = p;
    b->cap = cap;
    return true;
}

bool pb_buf_put(pb_buf *b, const void *data, size_t n) {
    if (b->len + n + 1 > b->cap && !pb_buf_reserve(b, n)) return false;
    if (n) memcpy(b->p + b->len, data, n);
    b->len += n;
    b->p[b->len] = 0;
    return true;
}

bool pb_buf_puts(pb_buf *b, const char *s) {
    return pb_buf_put(b, s, strlen(s));
}

bool pb_buf_vprintf(pb_buf *b, const char *fmt, va_list ap) {
    va_list again;
    va_copy(again, ap);
    char small[256];
    int n = vsnprintf(small, sizeof small, fmt, ap);
    if (n < 0) {
        va_end(again);
        return false;
    }
    if ((size_t)n < sizeof small) {
        va_end(again);
        return pb_buf_put(b, small, (size_t)n);
    }
    if (!pb_buf_reserve(b, (size_t)n)) {
        va_end(again);
        return false;
    }
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, again);
    va_end(again);
    b->len += (size_t)n;
    return true;
}

bool pb_buf_printf(pb_buf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    bool ok = pb_buf_vprintf(b, fmt, ap);
    va_end(ap);
    return ok;
}

void pb_buf_reset(pb_buf *b) {
    b->len = 0;
    if (b->p) b->p[0] = 0;
}

void pb_buf_free(pb_buf *b) {
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

char *pb_buf_take(pb_buf *b, size_t *len) {
    if (!b->p && !pb_buf_reserve(b, 0)) return NULL;
    char *p = b->p;
    if (len) *len = b->len;
    b->p = NULL;
    b->len = b->cap = 0;
    return p;
}

void *pb_grow(void *array, size_t *cap, size_t elem, size_t min_cap) {
    size_t n = *cap ? *cap : (min_cap ? min_cap : 1);
    if (*cap) {
        if (n > SIZE_MAX / 2) return NULL;
        n *= 2;
    }
    if (elem && n > SIZE_MAX / elem) return NULL;
    void *p = realloc(array, n * elem);
    if (!p) return NULL;
    *cap = n;
    return p;
}

size_t pb_capped_write(char *data, size_t size, size_t n, void *capped) {
    pb_capped *c = capped;
    size_t len = size * n;
    if (c->over || c->b.len > c->max || len > c->max - c->b.len) {
        c->over = true;
        return 0;
    }
    return pb_buf_put(&c->b, data, len) ? len : 0;
}
