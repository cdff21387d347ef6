/*
 * buf.c — the adapter's growable byte buffer and typed-error helper.
 */
#include "model_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int pm__buf_add(pm__buf *b, const char *s, size_t n) {
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->len + n + 1) {
            if (cap > SIZE_MAX / 2) return -1;
            cap *= 2;
        }
        char *p = realloc(b->p, cap);
        if (!p) return -1;
        b->p = p;
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
    return 0;
}

void pm__buf_reset(pm__buf *b) {
    b->len = 0;
    if (b->p) b->p[0] = '\0';
}

void pm__buf_free(pm__buf *b) {
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

char *pm__buf_take(pm__buf *b) {
    char *p = b->p;
    if (!p) p = strdup("");
    b->p = NULL;
    b->len = b->cap = 0;
    return p;
}

pm_status pm__fail(pm_error *err, pm_status st, const char *fmt, ...) {
    if (err) {
        va_list ap;
        err->status = st;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
    }
    return st;
}

const char *pm__jstr(json_t *obj, const char *key) {
    json_t *v = json_object_get(obj, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

int64_t pm__jint(json_t *obj, const char *key) {
    json_t *v = json_object_get(obj, key);
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : 0;
}
