/*
 * jsonrpc.c — JSON-RPC 2.0 frame decoding and encoding (see jsonrpc.h).
 *
 * Batches are refused with one -32600 (ACP has no batches). A frame that decodes
 * but breaks JSON-RPC rules still yields its id when the id is usable, so the error
 * answer can be correlated by the client.
 */
#include "acp/jsonrpc.h"

#include <stdlib.h>
#include <string.h>

static int id_usable(const json_t *id) {
    return json_is_string(id) || json_is_integer(id) || json_is_null(id);
}

static void invalid(pacp_msg *out, int code, const char *msg) {
    out->kind = PACP_INVALID;
    out->err_code = code;
    out->err_msg = msg;
}

void pacp__decode(const char *text, size_t len, pacp_msg *out) {
    memset(out, 0, sizeof *out);
    json_error_t jerr;
    out->root = json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
    if (!out->root) {
        invalid(out, PACP_PARSE_ERROR, "Parse error");
        return;
    }
    if (!json_is_object(out->root)) {
        invalid(out, PACP_INVALID_REQUEST, "Invalid Request");
        return;
    }
    json_t *id = json_object_get(out->root, "id");
    if (id && id_usable(id)) out->id = id;
    json_t *ver = json_object_get(out->root, "jsonrpc");
    if (!json_is_string(ver) || strcmp(json_string_value(ver), "2.0") != 0) {
        invalid(out, PACP_INVALID_REQUEST, "Invalid Request");
        return;
    }
    if (id && !id_usable(id)) {
        invalid(out, PACP_INVALID_REQUEST, "Invalid Request");
        return;
    }
    json_t *method = json_object_get(out->root, "method");
    if (method) {
        if (!json_is_string(method)) {
            invalid(out, PACP_INVALID_REQUEST, "Invalid Request");
            return;
        }
        json_t *params = json_object_get(out->root, "params");
        if (params && !json_is_object(params) && !json_is_array(params)) {
            invalid(out, PACP_INVALID_REQUEST, "Invalid Request");
            return;
        }
        out->method = json_string_value(method);
        out->params = params;
        out->kind = id ? PACP_REQUEST : PACP_NOTIFICATION;
        return;
    }
    json_t *result = json_object_get(out->root, "result");
    json_t *error = json_object_get(out->root, "error");
    if (id && ((result != NULL) != (error != NULL))) {
        out->result = result;
        out->error = error;
        out->kind = PACP_RESPONSE;
        return;
    }
    invalid(out, PACP_INVALID_REQUEST, "Invalid Request");
}

void pacp__msg_clear(pacp_msg *m) {
    json_decref(m->root);
    memset(m, 0, sizeof *m);
}

static json_t *frame(json_t *id) {
    json_t *f = json_object();
    if (!f) return NULL;
    if (json_object_set_new(f, "jsonrpc", json_string("2.0")) ||
        json_object_set_new(f, "id", id ? json_copy(id) : json_null())) {
        json_decref(f);
        return NULL;
    }
    return f;
}

json_t *pacp__make_result(json_t *id, json_t *result) {
    json_t *f = frame(id);
    if (!f || !result || json_object_set_new(f, "result", result)) {
        if (!f) json_decref(result);
        json_decref(f);
        return NULL;
    }
    return f;
}

json_t *pacp__make_error(json_t *id, int code, const char *message, json_t *data) {
    json_t *f = frame(id);
    json_t *e = json_object();
    if (!f || !e || json_object_set_new(e, "code", json_integer(code)) ||
        json_object_set_new(e, "message", json_string(message ? message : "")) ||
        (data && json_object_set_new(e, "data", data)) || json_object_set_new(f, "error", e)) {
        if (!e || !f) json_decref(data);
        json_decref(f);
        return NULL;
    }
    return f;
}

json_t *pacp__make_notification(const char *method, json_t *params) {
    json_t *f = json_object();
    if (!f || !params || json_object_set_new(f, "jsonrpc", json_string("2.0")) ||
        json_object_set_new(f, "method", json_string(method)) ||
        json_object_set_new(f, "params", params)) {
        if (!f) json_decref(params);
        json_decref(f);
        return NULL;
    }
    return f;
}

json_t *pacp__make_request(json_int_t id, const char *method, json_t *params) {
    json_t *f = pacp__make_notification(method, params);
    if (!f) return NULL;
    if (json_object_set_new(f, "id", json_integer(id))) {
        json_decref(f);
        return NULL;
    }
    return f;
}

char *pacp__encode(const json_t *frame, size_t *len_out) {
    /* JSON_COMPACT never emits raw newlines: strings escape them. */
    char *s = json_dumps(frame, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (!s) return NULL;
    size_t n = strlen(s);
    char *line = realloc(s, n + 2);
    if (!line) {
        free(s);
        return NULL;
    }
    line[n] = '\n';
    line[n + 1] = '\0';
    if (len_out) *len_out = n + 1;
    return line;
}
