/*
 * json_pack.c — the format-driven builder pj_pack / pj_vpack (jansson's json_pack
 * formats; the grammar is in peri/json.h).
 *
 * Invariants: once an error is seen the walk goes on to the end of the format anyway,
 * taking every argument and releasing every 'o' reference, and the result is discarded;
 * so a call either returns the whole value or NULL having leaked nothing. A malformed
 * format stops the walk at once (the argument types after it are unknown).
 */
#include "json_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "peri/base.h"

typedef struct pj__pack {
    const char *f; /* the next format character */
    va_list ap;
    bool failed; /* an argument was refused: keep consuming, return NULL */
    bool broken; /* the format itself is malformed: stop */
} pj__pack;

static char pj__next(pj__pack *st) {
    while (*st->f == ' ' || *st->f == '\t' || *st->f == '\n' || *st->f == ':' || *st->f == ',')
        st->f++;
    return *st->f;
}

/* The modifier after a value ('?', '*') if there is one, consumed. */
static char pj__modifier(pj__pack *st) {
    char m = *st->f;
    if (m == '?' || m == '*') {
        st->f++;
        return m;
    }
    return 0;
}

/* One string argument group after 's': s, s#, s% and their '+' concatenations. Returns
 * the bytes in b; *null when the first argument was NULL. */
static void pj__pack_string(pj__pack *st, pb_buf *b, bool *null) {
    *null = false;
    for (bool first = true;; first = false) {
        const char *s = va_arg(st->ap, const char *);
        size_t n = 0;
        if (*st->f == '#') {
            st->f++;
            int len = va_arg(st->ap, int);
            n = len < 0 ? 0 : (size_t)len;
            if (len < 0) st->failed = true;
        } else if (*st->f == '%') {
            st->f++;
            n = va_arg(st->ap, size_t);
        } else if (s) {
            n = strlen(s);
        }
        if (!s) {
            if (first)
                *null = true;
            else
                st->failed = true;
        } else if (!pb_buf_put(b, s, n)) {
            st->failed = true;
        }
        if (*st->f != '+') return;
        st->f++;
    }
}

/* The value for the token at st->f (already past spaces), or NULL; *skip when a '*'
 * modifier met a NULL argument (no value, no error). */
static pj_t *pj__pack_value(pj__pack *st, bool *skip, int depth);

/* An object ('{' read, close '}') or an array ('[' read, close ']') up to its close. */
static pj_t *pj__pack_container(pj__pack *st, int depth, char close) {
    bool object = close == '}';
    pj_t *c = object ? pj_object() : pj_array();
    if (!c) st->failed = true;
    for (;;) {
        char t = pj__next(st);
        if (t == close) {
            st->f++;
            return c;
        }
        pb_buf key = {0};
        bool null = false;
        if (object) { /* a key: s, s#, s% or s+ */
            if (t != 's') {
                st->broken = true;
                pj_decref(c);
                return NULL;
            }
            st->f++;
            pj__pack_string(st, &key, &null);
            if (null || !key.p || !pj__utf8_valid(key.p, key.len) || memchr(key.p, 0, key.len))
                st->failed = true;
            pj__next(st);
        }
        bool skip = false;
        pj_t *v = pj__pack_value(st, &skip, depth + 1);
        if (st->broken) {
            pb_buf_free(&key);
            pj_decref(v);
            pj_decref(c);
            return NULL;
        }
        if (!skip && (!v || st->failed)) {
            st->failed = true;
            pj_decref(v);
        } else if (!skip &&
                   (object ? pj_object_set_new_nocheck(c, key.p, v) : pj_array_append_new(c, v))) {
            st->failed = true;
        }
        pb_buf_free(&key);
    }
}

static pj_t *pj__pack_value(pj__pack *st, bool *skip, int depth) {
    *skip = false;
    if (depth > PJ__MAX_DEPTH) {
        st->broken = true;
        return NULL;
    }
    char c = *st->f;
    if (c) st->f++;
    switch (c) {
    case '{': return pj__pack_container(st, depth, '}');
    case '[': return pj__pack_container(st, depth, ']');
    case 's': {
        pb_buf b = {0};
        bool null;
        pj__pack_string(st, &b, &null);
        char m = pj__modifier(st);
        pj_t *v = NULL;
        if (null) {
            if (m == '?')
                v = pj_null();
            else if (m == '*')
                *skip = true;
            else
                st->failed = true;
        } else {
            v = pj_stringn(b.p ? b.p : "", b.len);
            if (!v) st->failed = true;
        }
        pb_buf_free(&b);
        return v;
    }
    case 'n': return pj_null();
    case 'b': return pj_boolean(va_arg(st->ap, int));
    case 'i': return pj_integer(va_arg(st->ap, int));
    case 'I': return pj_integer(va_arg(st->ap, pj_int_t));
    case 'f': {
        pj_t *v = pj_real(va_arg(st->ap, double));
        if (!v) st->failed = true;
        return v;
    }
    case 'o':
    case 'O': {
        pj_t *v = va_arg(st->ap, pj_t *);
        char m = pj__modifier(st);
        if (!v) {
            if (m == '?') return pj_null();
            if (m == '*')
                *skip = true;
            else
                st->failed = true;
            return NULL;
        }
        return c == 'O' ? pj_incref(v) : v;
    }
    default: st->broken = true; return NULL;
    }
}

pj_t *pj_vpack(const char *fmt, va_list ap) {
    if (!fmt) return NULL;
    pj__pack st = {.f = fmt};
    va_copy(st.ap, ap);
    pj__next(&st);
    bool skip;
    pj_t *v = pj__pack_value(&st, &skip, 0);
    if (!st.broken && pj__next(&st) != 0) st.broken = true; /* garbage after the value */
    va_end(st.ap);
    if (st.failed || st.broken || skip || !v) {
        pj_decref(v);
        return NULL;
    }
    return v;
}

pj_t *pj_pack(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    pj_t *v = pj_vpack(fmt, ap);
    va_end(ap);
    return v;
}
