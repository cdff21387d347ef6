/*
 * buf.c — the growable byte buffer the room builds its texts in, and error filling.
 */
#include "room_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool pr_buf_reserve(pr_buf *b, size_t extra) {
    if (extra > SIZE_MAX / 2 - b->len) return false;
    size_t need = b->len + extra + 1;
    if (need <= b->cap) return true;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) return false;
    b->p = p;
    b->cap = cap;
    return true;
}

bool pr_buf_put(pr_buf *b, const void *data, size_t n) {
    if (b->len + n + 1 > b->cap && !pr_buf_reserve(b, n)) return false;
    if (n) memcpy(b->p + b->len, data, n);
    b->len += n;
    b->p[b->len] = 0;
    return true;
}

bool pr_buf_puts(pr_buf *b, const char *s) {
    return pr_buf_put(b, s, strlen(s));
}

void pr_buf_free(pr_buf *b) {
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

char *pr_buf_take(pr_buf *b, size_t *len) {
    if (!b->p && !pr_buf_reserve(b, 0)) return NULL;
    char *p = b->p;
    if (len) *len = b->len;
    b->p = NULL;
    b->len = b->cap = 0;
    return p;
}

void pr_err_set(pr_error *err, pr_kind kind, const char *fmt, ...) {
    if (!err) return;
    err->kind = kind;
    err->stop = PR_STOP_NONE;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
}

const char *pr_kind_name(pr_kind k) {
    switch (k) {
    case PR_KIND_VIOLATION: return "violation";
    case PR_KIND_RUN_FAILED: return "run_failed";
    case PR_KIND_INTERFACE: return "interface";
    default: return "none";
    }
}
