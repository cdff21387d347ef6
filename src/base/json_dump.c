/*
 * json_dump.c — the JSON serializer: pj_t -> text (pj_dumps, pj_dump_callback,
 * pj_dumpf), byte for byte what jansson 2.14 writes for the same value and flags.
 *
 * Layout: PJ_COMPACT drops the spaces after ',' and ':'; PJ_INDENT(n) puts every member
 * on its own line indented n spaces per level (",\n" between members, ": " after keys
 * unless compact); empty containers are "{}" and "[]". Strings: '"' and '\\' escaped,
 * \b \f \n \r \t by name, other controls as \u00XX (upper-case hex), '/' only with
 * PJ_ESCAPE_SLASH, non-ASCII kept as UTF-8 unless PJ_ENSURE_ASCII (then \uXXXX, with
 * surrogate pairs). Reals: "%.17g" (or PJ_REAL_PRECISION) with a '.' whatever the
 * locale (json_number.c). A string holding invalid UTF-8 fails the dump.
 *
 * Invariants: output goes to one pb_buf; nesting deeper than PJ_PARSER_MAX_DEPTH (which
 * also stops a container that holds itself) fails instead of recursing further.
 */
#include "json_int.h"

#include <stdlib.h>
#include <string.h>

#include "peri/base.h"

static const char pj__hex[] = "0123456789ABCDEF";

static bool pj__put_u(pb_buf *b, unsigned v) {
    char e[6] = {'\\',
                 'u',
                 pj__hex[(v >> 12) & 15],
                 pj__hex[(v >> 8) & 15],
                 pj__hex[(v >> 4) & 15],
                 pj__hex[v & 15]};
    return pb_buf_put(b, e, 6);
}

static bool pj__dump_string(pb_buf *b, const char *s, size_t n, size_t flags) {
    const unsigned char *p = (const unsigned char *)s, *end = p + n;
    bool ascii = flags & PJ_ENSURE_ASCII, slash = flags & PJ_ESCAPE_SLASH;
    if (!pb_buf_putc(b, '"')) return false;
    while (p < end) {
        const unsigned char *run = p;
        while (p < end && *p >= 0x20 && *p != '"' && *p != '\\' && *p < 0x80 &&
               !(slash && *p == '/'))
            p++;
        if (p > run && !pb_buf_put(b, run, (size_t)(p - run))) return false;
        if (p >= end) break;
        unsigned c = *p;
        if (c >= 0x80) {
            int32_t cp;
            size_t k = pj__utf8_decode(p, (size_t)(end - p), &cp);
            if (!k) return false;
            if (!ascii) {
                if (!pb_buf_put(b, p, k)) return false;
            } else if (cp < 0x10000) {
                if (!pj__put_u(b, (unsigned)cp)) return false;
            } else {
                cp -= 0x10000;
                if (!pj__put_u(b, 0xD800 | ((unsigned)cp >> 10)) ||
                    !pj__put_u(b, 0xDC00 | ((unsigned)cp & 0x3FF)))
                    return false;
            }
            p += k;
            continue;
        }
        char name = pj__escape_name((unsigned char)c);
        char esc[2] = {'\\', name};
        if (name ? !pb_buf_put(b, esc, 2) : !pj__put_u(b, c)) return false;
        p++;
    }
    return pb_buf_putc(b, '"');
}

/* A newline and depth levels of indentation, or the space after a separator. */
static bool pj__indent(pb_buf *b, size_t flags, int depth, bool space) {
    size_t n = PJ_INDENT(flags);
    if (n > 0) {
        if (!pb_buf_putc(b, '\n') || !pb_buf_reserve(b, n * (size_t)depth)) return false;
        memset(b->p + b->len, ' ', n * (size_t)depth);
        b->len += n * (size_t)depth;
        b->p[b->len] = 0;
        return true;
    }
    return !space || (flags & PJ_COMPACT) || pb_buf_putc(b, ' ');
}

static int pj__key_cmp(const void *x, const void *y) {
    const pj__member *a = *(const pj__member *const *)x, *b = *(const pj__member *const *)y;
    size_t n = a->keylen < b->keylen ? a->keylen : b->keylen;
    int r = memcmp(a->key, b->key, n);
    return r ? r : (a->keylen > b->keylen) - (a->keylen < b->keylen);
}

static bool pj__dump(pb_buf *b, const pj_t *v, size_t flags, int depth) {
    if (depth > PJ__MAX_DEPTH) return false;
    switch (v->type) {
    case PJ_NULL: return pb_buf_put(b, "null", 4);
    case PJ_TRUE: return pb_buf_put(b, "true", 4);
    case PJ_FALSE: return pb_buf_put(b, "false", 5);
    case PJ_INTEGER: {
        char t[32];
        int n = snprintf(t, sizeof t, "%" PJ_INTEGER_FORMAT, ((const pj__integer *)v)->value);
        return n > 0 && pb_buf_put(b, t, (size_t)n);
    }
    case PJ_REAL: {
        char t[64];
        int n = pj__dtostr(t, sizeof t, ((const pj__real *)v)->value, (int)((flags >> 11) & 0x1F));
        return n > 0 && pb_buf_put(b, t, (size_t)n);
    }
    case PJ_STRING: {
        const pj__string *s = (const pj__string *)v;
        return pj__dump_string(b, s->value, s->length, flags);
    }
    case PJ_ARRAY: {
        const pj__array *a = (const pj__array *)v;
        if (!pb_buf_putc(b, '[')) return false;
        if (a->len == 0) return pb_buf_putc(b, ']');
        if (!pj__indent(b, flags, depth + 1, false)) return false;
        for (size_t i = 0; i < a->len; i++) {
            if (!pj__dump(b, a->items[i], flags, depth + 1)) return false;
            bool last = i + 1 == a->len;
            if (!last && !pb_buf_putc(b, ',')) return false;
            if (!pj__indent(b, flags, last ? depth : depth + 1, !last)) return false;
        }
        return pb_buf_putc(b, ']');
    }
    case PJ_OBJECT: {
        const pj__object *o = (const pj__object *)v;
        if (!pb_buf_putc(b, '{')) return false;
        if (o->len == 0) return pb_buf_putc(b, '}');
        const pj__member **order = NULL;
        if ((flags & PJ_SORT_KEYS) && o->len > 1) {
            order = malloc(o->len * sizeof *order);
            if (!order) return false;
            for (size_t i = 0; i < o->len; i++)
                order[i] = &o->ent[i];
            qsort(order, o->len, sizeof *order, pj__key_cmp);
        }
        const char *sep = (flags & PJ_COMPACT) ? ":" : ": ";
        bool ok = pj__indent(b, flags, depth + 1, false);
        for (size_t i = 0; ok && i < o->len; i++) {
            const pj__member *m = order ? order[i] : &o->ent[i];
            bool last = i + 1 == o->len;
            ok = pj__dump_string(b, m->key, m->keylen, flags) && pb_buf_puts(b, sep) &&
                 pj__dump(b, m->value, flags, depth + 1) && (last || pb_buf_putc(b, ',')) &&
                 pj__indent(b, flags, last ? depth : depth + 1, !last);
        }
        free(order);
        return ok && pb_buf_putc(b, '}');
    }
    }
    return false;
}

/* The whole text in b, or false (b then holds a partial text the caller frees). */
static bool pj__dump_all(pb_buf *b, const pj_t *v, size_t flags) {
    if (!v) return false;
    if (!(flags & PJ_ENCODE_ANY) && !pj_is_object(v) && !pj_is_array(v)) return false;
    return pj__dump(b, v, flags, 0);
}

char *pj_dumps(const pj_t *v, size_t flags) {
    pb_buf b = {0};
    if (!pj__dump_all(&b, v, flags)) {
        pb_buf_free(&b);
        return NULL;
    }
    return pb_buf_take(&b, NULL);
}

int pj_dump_callback(const pj_t *v, pj_dump_callback_t cb, void *data, size_t flags) {
    pb_buf b = {0};
    int r = -1;
    if (cb && pj__dump_all(&b, v, flags)) r = cb(b.p, b.len, data) ? -1 : 0;
    pb_buf_free(&b);
    return r;
}

static int pj__to_file(const char *buf, size_t n, void *f) {
    return fwrite(buf, 1, n, f) == n ? 0 : -1;
}

int pj_dumpf(const pj_t *v, FILE *f, size_t flags) {
    return f ? pj_dump_callback(v, pj__to_file, f, flags) : -1;
}
