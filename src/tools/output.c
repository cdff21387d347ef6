/*
 * output.c — bounded tool output text, tool-level errors, the ACP content/locations JSON
 * attached to a result, and the typed accessors for the model's input object.
 */
#include "tools_int.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ptl__out_init(ptl__out *o, size_t limit) {
    memset(o, 0, sizeof *o);
    o->limit = limit ? limit : PTL_DEFAULT_MAX_OUTPUT;
}

void ptl__out_add(ptl__out *o, const char *s, size_t n) {
    if (o->oom) return;
    if (o->len + n > o->limit) {
        o->truncated = true;
        n = o->limit - o->len;
        /* do not cut a UTF-8 sequence in half */
        while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
            n--;
    }
    if (n == 0) return;
    pb_buf b = {o->p, o->len, o->cap};
    o->oom = !pb_buf_put(&b, s, n);
    o->p = b.p;
    o->len = b.len;
    o->cap = b.cap;
}

void ptl__out_addf(ptl__out *o, const char *fmt, ...) {
    char small[512], *big = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n >= sizeof small) {
        va_start(ap, fmt);
        if (vasprintf(&big, fmt, ap) < 0) big = NULL;
        va_end(ap);
        if (!big) {
            o->oom = true;
            return;
        }
    }
    ptl__out_add(o, big ? big : small, (size_t)n);
    free(big);
}

void ptl__out_free(ptl__out *o) {
    free(o->p);
    memset(o, 0, sizeof *o);
}

ptl_status ptl__finish(ptl_result *r, ptl__out *o, bool is_error) {
    if (o->truncated) { /* tell the model, beyond the bound */
        size_t limit = o->limit;
        o->limit = SIZE_MAX;
        ptl__out_addf(o, "\n[output truncated at %zu bytes]", limit);
        o->truncated = true;
    }
    if (o->oom) {
        ptl__out_free(o);
        return PTL_ERR_NOMEM;
    }
    free(r->output);
    r->output = o->p ? o->p : strdup("");
    o->p = NULL;
    ptl__out_free(o);
    r->is_error = is_error;
    r->truncated = r->truncated || o->truncated;
    return r->output ? PTL_OK : PTL_ERR_NOMEM;
}

ptl_status ptl__error(ptl_result *r, const char *fmt, ...) {
    va_list ap;
    char *msg = NULL;
    va_start(ap, fmt);
    if (vasprintf(&msg, fmt, ap) < 0) msg = NULL;
    va_end(ap);
    free(r->output);
    r->output = msg;
    r->is_error = true;
    return msg ? PTL_OK : PTL_ERR_NOMEM;
}

ptl_status ptl__text_content(ptl_result *r) {
    pj_t *c = pj_pack("[{s:s, s:{s:s, s:s}}]", "type", "content", "content", "type", "text", "text",
                      r->output ? r->output : "");
    free(r->content_json);
    r->content_json = c ? pj_dumps(c, PJ_COMPACT) : NULL;
    pj_decref(c);
    return r->content_json ? PTL_OK : PTL_ERR_NOMEM;
}

ptl_status ptl__location(ptl_result *r, const char *path, long line) {
    pj_t *loc = line > 0 ? pj_pack("[{s:s, s:I}]", "path", path, "line", (pj_int_t)line)
                         : pj_pack("[{s:s}]", "path", path);
    free(r->locations_json);
    r->locations_json = loc ? pj_dumps(loc, PJ_COMPACT) : NULL;
    pj_decref(loc);
    return r->locations_json ? PTL_OK : PTL_ERR_NOMEM;
}

const char *ptl__str(pj_t *in, const char *key, bool *bad) {
    pj_t *v = pj_object_get(in, key);
    if (!v || pj_is_null(v)) return NULL;
    if (!pj_is_string(v)) {
        *bad = true;
        return NULL;
    }
    return pj_string_value(v);
}

long long ptl__int(pj_t *in, const char *key, long long def, bool *bad) {
    pj_t *v = pj_object_get(in, key);
    if (!v || pj_is_null(v)) return def;
    if (pj_is_integer(v)) return pj_integer_value(v);
    if (pj_is_real(v) && pj_real_value(v) == (double)(long long)pj_real_value(v))
        return (long long)pj_real_value(v);
    *bad = true;
    return def;
}

bool ptl__bool(pj_t *in, const char *key, bool def, bool *bad) {
    pj_t *v = pj_object_get(in, key);
    if (!v || pj_is_null(v)) return def;
    if (!pj_is_boolean(v)) {
        *bad = true;
        return def;
    }
    return pj_is_true(v);
}
