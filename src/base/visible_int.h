/*
 * visible_int.h — the log rendering of visible.c for base's own log sink (internal to
 * src/base/).
 */
#ifndef PB_VISIBLE_INT_H
#define PB_VISIBLE_INT_H

#include <stdbool.h>
#include <stddef.h>

typedef bool (*pb__visible_put_fn)(void *ctx, const char *p, size_t n);

/* Passes s[0..n) rendered as pb_buf_put_visible renders it to put, in pieces; false as
 * soon as put fails. */
bool pb__visible_log(const char *s, size_t n, pb__visible_put_fn put, void *ctx);

#endif
