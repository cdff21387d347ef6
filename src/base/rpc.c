/*
 * rpc.c — the JSON-RPC 2.0 codec (see rpc.h for the rules and invariants).
 */
#include "peri/rpc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool id_usable(const pj_t *id, const pb_rpc_rules *rules) {
    return pj_is_string(id) || pj_is_integer(id) || (rules->null_id && pj_is_null(id));
}

static void invalid(pb_rpc_msg *m, int code, const char *why) {
    m->kind = PB_RPC_INVALID;
    m->err_code = code;
    m->err_msg = code == PB_RPC_PARSE_ERROR ? "Parse error" : "Invalid Request";
    m->why = why;
}

/* The parts after "jsonrpc": a request or notification (method present). */
static void decode_call(pb_rpc_msg *m, pj_t *method, pj_t *id, const pb_rpc_rules *rules) {
    if (!pj_is_string(method) || pj_string_length(method) == 0 ||
        strlen(pj_string_value(method)) != pj_string_length(method))
        return invalid(m, PB_RPC_INVALID_REQUEST, "method must be a non-empty string");
    pj_t *params = pj_object_get(m->root, "params");
    if (params && !pj_is_null(params) && !pj_is_object(params) &&
        !(rules->array_params && pj_is_array(params)))
        return invalid(m, PB_RPC_INVALID_REQUEST,
                       rules->array_params ? "params must be an object or an array"
                                           : "params must be an object");
    if (id && !m->id) return invalid(m, PB_RPC_INVALID_REQUEST, "bad id");
    m->method = pj_string_value(method);
    m->params = pj_is_null(params) ? NULL : params;
    m->kind = id ? PB_RPC_REQUEST : PB_RPC_NOTIFICATION;
}

void pb_rpc_decode(const char *text, size_t len, const pb_rpc_rules *rules, pb_rpc_msg *out) {
    static const pb_rpc_rules strict = {0};
    if (!rules) rules = &strict;
    memset(out, 0, sizeof *out);
    pj_error_t je;
    /* any JSON value: a scalar such as `1` or `null` is valid JSON that is not a request
     * object, so it is an Invalid Request (-32600), not a parse error */
    size_t flags = PJ_REJECT_DUPLICATES | PJ_DECODE_ANY | (rules->allow_nul ? PJ_ALLOW_NUL : 0);
    out->root = text ? pj_loadb(text, len, flags, &je) : NULL;
    pj_t *r = out->root;
    if (!r) return invalid(out, PB_RPC_PARSE_ERROR, "not JSON");
    if (!pj_is_object(r)) return invalid(out, PB_RPC_INVALID_REQUEST, "not a JSON object");
    pj_t *id = pj_object_get(r, "id");
    if (id && id_usable(id, rules)) out->id = id;
    const char *ver = pj_string_value(pj_object_get(r, "jsonrpc"));
    if (!ver || strcmp(ver, "2.0") != 0)
        return invalid(out, PB_RPC_INVALID_REQUEST, "jsonrpc must be \"2.0\"");
    pj_t *method = pj_object_get(r, "method");
    if (method) return decode_call(out, method, id, rules);
    if (!out->id) return invalid(out, PB_RPC_INVALID_REQUEST, "bad id");
    pj_t *res = pj_object_get(r, "result");
    pj_t *err = pj_object_get(r, "error");
    if ((res != NULL) == (err != NULL))
        return invalid(out, PB_RPC_INVALID_REQUEST, "a response needs result or error");
    if (err && (!pj_is_object(err) || !pj_is_integer(pj_object_get(err, "code"))))
        return invalid(out, PB_RPC_INVALID_REQUEST, "bad error object");
    out->result = res;
    out->error = err;
    out->kind = PB_RPC_RESPONSE;
}

void pb_rpc_clear(pb_rpc_msg *m) {
    pj_decref(m->root);
    memset(m, 0, sizeof *m);
}

const char *pb_rpc_invalid_text(const pb_rpc_msg *m, char *buf, size_t n) {
    if (n == 0) return buf;
    if (m->err_code == PB_RPC_PARSE_ERROR || !m->why)
        snprintf(buf, n, "%s", m->err_msg ? m->err_msg : "Invalid Request");
    else
        snprintf(buf, n, "%s: %s", m->err_msg, m->why);
    return buf;
}

/* {"jsonrpc": "2.0"} plus, when with_id, "id" (a copy of id, or null). */
static pj_t *frame(bool with_id, pj_t *id) {
    pj_t *f = pj_object();
    if (!f) return NULL;
    if (pj_object_set_new(f, "jsonrpc", pj_string("2.0")) ||
        (with_id && pj_object_set_new(f, "id", id ? pj_copy(id) : pj_null()))) {
        pj_decref(f);
        return NULL;
    }
    return f;
}

/* Sets f[key] = v (stolen); on any failure frees both and returns NULL. */
static pj_t *put(pj_t *f, const char *key, pj_t *v) {
    if (!f || !v || pj_object_set_new(f, key, v)) {
        if (!f) pj_decref(v);
        pj_decref(f);
        return NULL;
    }
    return f;
}

static pj_t *call(pj_t *f, const char *method, pj_t *params) {
    f = put(f, "method", method ? pj_string(method) : NULL);
    if (!f) {
        pj_decref(params);
        return NULL;
    }
    return params ? put(f, "params", params) : f;
}

pj_t *pb_rpc_request(pj_int_t id, const char *method, pj_t *params) {
    pj_t *f = frame(false, NULL);
    f = put(f, "id", f ? pj_integer(id) : NULL);
    return call(f, method, params);
}

pj_t *pb_rpc_notification(const char *method, pj_t *params) {
    return call(frame(false, NULL), method, params);
}

pj_t *pb_rpc_result(pj_t *id, pj_t *result) {
    return put(frame(true, id), "result", result);
}

pj_t *pb_rpc_error(pj_t *id, int code, const char *message, pj_t *data) {
    pj_t *e = pj_pack("{s:i, s:s}", "code", code, "message", message ? message : "");
    if (!e) {
        pj_decref(data);
        return NULL;
    }
    if (data && pj_object_set_new(e, "data", data)) { /* set_new freed data */
        pj_decref(e);
        return NULL;
    }
    return put(frame(true, id), "error", e);
}

char *pb_rpc_encode(const pj_t *frame, bool newline, size_t *len_out) {
    /* PJ_COMPACT never emits raw newlines: strings escape them. */
    char *s = frame ? pj_dumps(frame, PJ_COMPACT | PJ_PRESERVE_ORDER) : NULL;
    if (!s) return NULL;
    size_t n = strlen(s);
    if (newline) {
        char *line = realloc(s, n + 2);
        if (!line) {
            free(s);
            return NULL;
        }
        s = line;
        s[n++] = '\n';
        s[n] = '\0';
    }
    if (len_out) *len_out = n;
    return s;
}
