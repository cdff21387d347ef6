/*
 * rpc.c — the JSON-RPC 2.0 codec (see rpc.h for the rules and invariants).
 */
#include "peri/rpc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool id_usable(const json_t *id, const pb_rpc_rules *rules) {
    return json_is_string(id) || json_is_integer(id) || (rules->null_id && json_is_null(id));
}

static void invalid(pb_rpc_msg *m, int code, const char *why) {
    m->kind = PB_RPC_INVALID;
    m->err_code = code;
    m->err_msg = code == PB_RPC_PARSE_ERROR ? "Parse error" : "Invalid Request";
    m->why = why;
}

/* The parts after "jsonrpc": a request or notification (method present). */
static void decode_call(pb_rpc_msg *m, json_t *method, json_t *id, const pb_rpc_rules *rules) {
    if (!json_is_string(method) || json_string_length(method) == 0 ||
        strlen(json_string_value(method)) != json_string_length(method))
        return invalid(m, PB_RPC_INVALID_REQUEST, "method must be a non-empty string");
    json_t *params = json_object_get(m->root, "params");
    if (params && !json_is_null(params) && !json_is_object(params) &&
        !(rules->array_params && json_is_array(params)))
        return invalid(m, PB_RPC_INVALID_REQUEST,
                       rules->array_params ? "params must be an object or an array"
                                           : "params must be an object");
    if (id && !m->id) return invalid(m, PB_RPC_INVALID_REQUEST, "bad id");
    m->method = json_string_value(method);
    m->params = json_is_null(params) ? NULL : params;
    m->kind = id ? PB_RPC_REQUEST : PB_RPC_NOTIFICATION;
}

void pb_rpc_decode(const char *text, size_t len, const pb_rpc_rules *rules, pb_rpc_msg *out) {
    static const pb_rpc_rules strict = {0};
    if (!rules) rules = &strict;
    memset(out, 0, sizeof *out);
    json_error_t je;
    size_t flags = JSON_REJECT_DUPLICATES | (rules->allow_nul ? JSON_ALLOW_NUL : 0);
    out->root = text ? json_loadb(text, len, flags, &je) : NULL;
    json_t *r = out->root;
    if (!r) return invalid(out, PB_RPC_PARSE_ERROR, "not JSON");
    if (!json_is_object(r)) return invalid(out, PB_RPC_INVALID_REQUEST, "not a JSON object");
    json_t *id = json_object_get(r, "id");
    if (id && id_usable(id, rules)) out->id = id;
    const char *ver = json_string_value(json_object_get(r, "jsonrpc"));
    if (!ver || strcmp(ver, "2.0") != 0)
        return invalid(out, PB_RPC_INVALID_REQUEST, "jsonrpc must be \"2.0\"");
    json_t *method = json_object_get(r, "method");
    if (method) return decode_call(out, method, id, rules);
    if (!out->id) return invalid(out, PB_RPC_INVALID_REQUEST, "bad id");
    json_t *res = json_object_get(r, "result");
    json_t *err = json_object_get(r, "error");
    if ((res != NULL) == (err != NULL))
        return invalid(out, PB_RPC_INVALID_REQUEST, "a response needs result or error");
    if (err && (!json_is_object(err) || !json_is_integer(json_object_get(err, "code"))))
        return invalid(out, PB_RPC_INVALID_REQUEST, "bad error object");
    out->result = res;
    out->error = err;
    out->kind = PB_RPC_RESPONSE;
}

void pb_rpc_clear(pb_rpc_msg *m) {
    json_decref(m->root);
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
static json_t *frame(bool with_id, json_t *id) {
    json_t *f = json_object();
    if (!f) return NULL;
    if (json_object_set_new(f, "jsonrpc", json_string("2.0")) ||
        (with_id && json_object_set_new(f, "id", id ? json_copy(id) : json_null()))) {
        json_decref(f);
        return NULL;
    }
    return f;
}

/* Sets f[key] = v (stolen); on any failure frees both and returns NULL. */
static json_t *put(json_t *f, const char *key, json_t *v) {
    if (!f || !v || json_object_set_new(f, key, v)) {
        if (!f) json_decref(v);
        json_decref(f);
        return NULL;
    }
    return f;
}

static json_t *call(json_t *f, const char *method, json_t *params) {
    f = put(f, "method", method ? json_string(method) : NULL);
    if (!f) {
        json_decref(params);
        return NULL;
    }
    return params ? put(f, "params", params) : f;
}

json_t *pb_rpc_request(json_int_t id, const char *method, json_t *params) {
    json_t *f = frame(false, NULL);
    f = put(f, "id", f ? json_integer(id) : NULL);
    return call(f, method, params);
}

json_t *pb_rpc_notification(const char *method, json_t *params) {
    return call(frame(false, NULL), method, params);
}

json_t *pb_rpc_result(json_t *id, json_t *result) {
    return put(frame(true, id), "result", result);
}

json_t *pb_rpc_error(json_t *id, int code, const char *message, json_t *data) {
    json_t *e = json_pack("{s:i, s:s}", "code", code, "message", message ? message : "");
    if (!e) {
        json_decref(data);
        return NULL;
    }
    if (data && json_object_set_new(e, "data", data)) { /* set_new freed data */
        json_decref(e);
        return NULL;
    }
    return put(frame(true, id), "error", e);
}

char *pb_rpc_encode(const json_t *frame, bool newline, size_t *len_out) {
    /* JSON_COMPACT never emits raw newlines: strings escape them. */
    char *s = frame ? json_dumps(frame, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
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
