/*
 * fifo.c — the bounded first-in first-out byte queue (pb_fifo) behind the write queue of
 * the native streams and the input buffer of the PostgreSQL protocol machine.
 *
 * Invariants: p == NULL and cap == 0 for a never-grown queue; otherwise off + len <= cap
 * <= the largest bound any push was given. An empty queue has off == 0. Growth doubles
 * from 8 KiB, is capped at the push's bound and is checked against overflow; before the
 * storage grows, the queued bytes are moved to its front (so a queue that is consumed as
 * fast as it is filled never grows).
 */
#include "peri/base.h"

#include <stdlib.h>
#include <string.h>

bool pb_fifo_push(pb_fifo *f, const void *data, size_t n, size_t max) {
    if (n > max || f->len > max - n) return false;
    if (n == 0) return true;
    if (f->off + f->len + n > f->cap && f->off) { /* room at the front: use it first */
        memmove(f->p, f->p + f->off, f->len);
        f->off = 0;
    }
    size_t need = f->len + n;
    if (need > f->cap) {
        size_t cap = f->cap ? f->cap : 8192;
        while (cap < need)
            cap = cap > SIZE_MAX / 2 ? need : cap * 2;
        if (cap > max) cap = max;
        uint8_t *p = realloc(f->p, cap);
        if (!p) return false;
        f->p = p;
        f->cap = cap;
    }
    memcpy(f->p + f->off + f->len, data, n);
    f->len += n;
    return true;
}

void pb_fifo_consume(pb_fifo *f, size_t n) {
    if (n >= f->len) {
        f->off = f->len = 0;
        return;
    }
    f->off += n;
    f->len -= n;
}

void pb_fifo_free(pb_fifo *f) {
    free(f->p);
    *f = (pb_fifo){0};
}
