/*
 * frame.c — MCP JSON-RPC 2.0 frames: decoding untrusted lines into a classified
 * message, building outgoing frames, and reading newline-delimited lines from an fd.
 *
 * Invariants: the decoder accepts any bytes (embedded NULs, invalid UTF-8, deep
 * nesting, huge numbers) and never crashes; a frame is a request only with a string
 * method and an integer or string id; a response needs an id and exactly one of
 * result / error (error with an integer code). Batches are refused (MCP 2025-06-18
 * removed them).
 */
#include "mcp/mcp_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void invalid(pmcp__msg *m, int code, const char *msg) {
    m->kind = PMCP__INVALID;
    m->err_code = code;
    m->err_msg = msg;
}

void pmcp__decode(const char *text, size_t len, pmcp__msg *out) {
    memset(out, 0, sizeof *out);
    json_error_t je;
    out->root = text ? json_loadb(text, len, JSON_REJECT_DUPLICATES, &je) : NULL;
    json_t *r = out->root;
    if (!r) return invalid(out, PMCP_PARSE_ERROR, "Parse error");
    if (!json_is_object(r)) return invalid(out, PMCP_INVALID_REQUEST, "Invalid Request");
    json_t *id = json_object_get(r, "id");
    if (id && (json_is_integer(id) || json_is_string(id))) out->id = id;
    const char *ver = json_string_value(json_object_get(r, "jsonrpc"));
    if (!ver || strcmp(ver, "2.0") != 0)
        return invalid(out, PMCP_INVALID_REQUEST, "Invalid Request: jsonrpc must be \"2.0\"");
    json_t *method = json_object_get(r, "method");
    if (method) {
        if (!json_is_string(method) || json_string_length(method) == 0 ||
            strlen(json_string_value(method)) != json_string_length(method))
            return invalid(out, PMCP_INVALID_REQUEST, "Invalid Request: bad method");
        json_t *params = json_object_get(r, "params");
        if (params && !json_is_object(params) && !json_is_null(params))
            return invalid(out, PMCP_INVALID_REQUEST, "Invalid Request: params must be an object");
        out->method = json_string_value(method);
        out->params = json_is_object(params) ? params : NULL;
        if (!id) {
            out->kind = PMCP__NOTIFICATION;
            return;
        }
        if (!out->id) return invalid(out, PMCP_INVALID_REQUEST, "Invalid Request: bad id");
        out->kind = PMCP__REQUEST;
        return;
    }
    if (!out->id) return invalid(out, PMCP_INVALID_REQUEST, "Invalid Request: bad id");
    json_t *res = json_object_get(r, "result");
    json_t *err = json_object_get(r, "error");
    if ((res != NULL) == (err != NULL))
        return invalid(out, PMCP_INVALID_REQUEST, "Invalid Request: need result or error");
    if (err && (!json_is_object(err) || !json_is_integer(json_object_get(err, "code"))))
        return invalid(out, PMCP_INVALID_REQUEST, "Invalid Request: bad error object");
    out->result = res;
    out->error = err;
    out->kind = PMCP__RESPONSE;
}

void pmcp__msg_clear(pmcp__msg *m) {
    json_decref(m->root);
    memset(m, 0, sizeof *m);
}

json_t *pmcp__request(json_int_t id, const char *method, json_t *params) {
    json_t *f = json_pack("{s:s, s:I, s:s}", "jsonrpc", "2.0", "id", id, "method", method);
    if (f && params) json_object_set(f, "params", params);
    json_decref(params);
    return f;
}

json_t *pmcp__notification(const char *method, json_t *params) {
    json_t *f = json_pack("{s:s, s:s}", "jsonrpc", "2.0", "method", method);
    if (f && params) json_object_set(f, "params", params);
    json_decref(params);
    return f;
}

json_t *pmcp__result(json_t *id, json_t *result) {
    json_t *f =
        result ? json_pack("{s:s, s:O?, s:O}", "jsonrpc", "2.0", "id", id, "result", result) : NULL;
    json_decref(result);
    return f;
}

json_t *pmcp__error(json_t *id, int code, const char *message) {
    return json_pack("{s:s, s:O?, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", id ? id : json_null(),
                     "error", "code", code, "message", message);
}

char *pmcp__encode(const json_t *frame, size_t *len) {
    char *s = frame ? json_dumps(frame, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
    if (s && len) *len = strlen(s);
    return s;
}

/* ---------------------------------------------------------------- line reader */

void pmcp__lines_init(pmcp__lines *r, int fd) {
    memset(r, 0, sizeof *r);
    r->fd = fd;
}

void pmcp__lines_free(pmcp__lines *r) {
    free(r->buf);
    r->buf = NULL;
}

int pmcp__lines_next(pmcp__lines *r, char **line, size_t *len) {
    for (;;) {
        char *nl = r->len > r->start ? memchr(r->buf + r->start, '\n', r->len - r->start) : NULL;
        if (nl) {
            size_t n = (size_t)(nl - (r->buf + r->start));
            char *s = r->buf + r->start;
            r->start += n + 1;
            if (r->dropping || n > PMCP_MAX_FRAME) {
                r->dropping = false;
                return 2;
            }
            if (n && s[n - 1] == '\r') n--;
            s[n] = '\0';
            *line = s;
            *len = n;
            return 1;
        }
        if (r->start > 0) {
            memmove(r->buf, r->buf + r->start, r->len - r->start);
            r->len -= r->start;
            r->start = 0;
        }
        if (r->len > PMCP_MAX_FRAME) { /* too long: drop up to the next newline */
            r->dropping = true;
            r->len = 0;
        }
        if (r->eof) return 0;
        if (r->cap - r->len < 65536) {
            size_t nc = r->cap ? r->cap * 2 : 131072;
            if (nc > PMCP_MAX_FRAME + 262144) nc = PMCP_MAX_FRAME + 262144;
            if (nc <= r->cap) nc = r->cap; /* at the cap: still room for >= 64 KiB */
            char *nb = nc != r->cap ? realloc(r->buf, nc) : r->buf;
            if (!nb) return -1;
            r->buf = nb;
            r->cap = nc;
        }
        ssize_t got = read(r->fd, r->buf + r->len, r->cap - r->len - 1);
        if (got < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        if (got == 0) {
            r->eof = true;
            if (r->len > 0 && !r->dropping) { /* last line without newline */
                r->buf[r->len++] = '\n';
            }
            continue;
        }
        r->len += (size_t)got;
    }
}
