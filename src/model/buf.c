/*
 * buf.c — the adapters' typed-error helper and small JSON accessors.
 */
#include "model_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

const char *pm__jstr(pj_t *obj, const char *key) {
    pj_t *v = pj_object_get(obj, key);
    return pj_is_string(v) ? pj_string_value(v) : NULL;
}

int64_t pm__jint(pj_t *obj, const char *key) {
    pj_t *v = pj_object_get(obj, key);
    return pj_is_integer(v) ? (int64_t)pj_integer_value(v) : 0;
}

pj_t *pm__tool_schema(const pm_tool_def *t, pm_error *err) {
    pj_t *schema = pj_loads(t->input_schema_json ? t->input_schema_json : "{}", 0, NULL);
    if (pj_is_object(schema)) return schema;
    pj_decref(schema);
    pm__fail(err, PM_ERR_ARG, "tool %s: input schema is not a JSON object",
             t->name ? t->name : "?");
    return NULL;
}
