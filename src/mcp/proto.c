/*
 * proto.c — MCP message shapes both clients share (proto.h): revisions and their
 * negotiation, the initialize parameters, one listed tool, tools/call parameters, a
 * JSON-RPC error's text, and a tools/call result turned into content JSON and the text
 * for the model. Pure functions over JSON values: no thread, no clock, no I/O.
 */
#include "mcp/proto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const pmcp__versions[] = {"2025-06-18", "2025-03-26", "2024-11-05"};
const size_t pmcp__nversions = sizeof pmcp__versions / sizeof pmcp__versions[0];

bool pmcp__version_known(const char *v) {
    for (size_t i = 0; v && i < pmcp__nversions; i++)
        if (!strcmp(v, pmcp__versions[i])) return true;
    return false;
}

void pmcp__version_error(const char *v, char *buf, size_t n) {
    snprintf(buf, n, "the server speaks MCP %.40s, which Peri-C does not support",
             v ? v : "(no version)");
}

pj_t *pmcp__initialize_params(bool elicitation) {
    pj_t *params = pj_pack("{s:s, s:{}, s:{s:s, s:s}}", "protocolVersion", pmcp__versions[0],
                           "capabilities", "clientInfo", "name", "peri-c", "version", "0.1.0");
    if (params && elicitation) /* only when the host can put the question to the user */
        pj_object_set_new(pj_object_get(params, "capabilities"), "elicitation",
                          pj_pack("{s:{}}", "form"));
    return params;
}

/* ---------------------------------------------------------------- tools */

void pmcp__tooldef_free(pmcp__tooldef *t) {
    free(t->name);
    free(t->title);
    free(t->description);
    free(t->schema_json);
    memset(t, 0, sizeof *t);
}

int pmcp__tool_parse(const pj_t *t, pmcp__tooldef *o) {
    memset(o, 0, sizeof *o);
    const char *name = pj_string_value(pj_object_get(t, "name"));
    if (!name || !name[0]) return 0;
    pj_t *schema = pj_object_get(t, "inputSchema");
    const char *title = pj_string_value(pj_object_get(t, "title"));
    const char *desc = pj_string_value(pj_object_get(t, "description"));
    o->name = strdup(name);
    o->title = title ? strdup(title) : NULL;
    o->description = strdup(desc ? desc : "");
    o->schema_json =
        pj_is_object(schema) ? pj_dumps(schema, PJ_COMPACT) : strdup("{\"type\":\"object\"}");
    o->read_only = pj_is_true(pj_object_get(pj_object_get(t, "annotations"), "readOnlyHint"));
    if (!o->name || (title && !o->title) || !o->description || !o->schema_json) {
        pmcp__tooldef_free(o);
        return -1;
    }
    return 1;
}

/* ---------------------------------------------------------------- calls */

pj_t *pmcp__call_params(const char *tool, const char *args_json, bool *not_object) {
    *not_object = false;
    pj_t *args = args_json && args_json[0] ? pj_loads(args_json, 0, NULL) : pj_object();
    if (!pj_is_object(args)) {
        *not_object = args_json && args_json[0];
        pj_decref(args);
        return NULL;
    }
    return pj_pack("{s:s, s:o}", "name", tool, "arguments", args);
}

void pmcp__rpc_error_text(const pj_t *e, char *buf, size_t n) {
    const char *msg = pj_string_value(pj_object_get(e, "message"));
    snprintf(buf, n, "MCP error %d: %s", (int)pj_integer_value(pj_object_get(e, "code")),
             msg ? msg : "(no message)");
}

void pmcp__content_clear(pmcp__content *c) {
    if (!c) return;
    free(c->content_json);
    free(c->structured_json);
    free(c->text);
    memset(c, 0, sizeof *c);
}

static int append(char **buf, size_t *len, const char *s) {
    size_t n = strlen(s);
    char *nb = realloc(*buf, *len + n + 2);
    if (!nb) return -1;
    *buf = nb;
    if (*len) nb[(*len)++] = '\n';
    memcpy(nb + *len, s, n + 1);
    *len += n;
    return 0;
}

/* Text for the model from an MCP content array. */
static char *model_text(const pj_t *content, const pj_t *structured) {
    char *out = calloc(1, 1);
    size_t len = 0;
    size_t i;
    pj_t *b;
    pj_array_foreach(content, i, b) {
        const char *type = pj_string_value(pj_object_get(b, "type"));
        char tmp[1024];
        const char *piece = tmp;
        if (!type) continue;
        if (!strcmp(type, "text")) {
            piece = pj_string_value(pj_object_get(b, "text"));
            if (!piece) continue;
        } else if (!strcmp(type, "image") || !strcmp(type, "audio")) {
            const char *mime = pj_string_value(pj_object_get(b, "mimeType"));
            const char *data = pj_string_value(pj_object_get(b, "data"));
            snprintf(tmp, sizeof tmp, "[%s %s, %zu bytes of base64, shown to the user]", type,
                     mime ? mime : "?", data ? strlen(data) : (size_t)0);
        } else if (!strcmp(type, "resource")) {
            pj_t *r = pj_object_get(b, "resource");
            const char *text = pj_string_value(pj_object_get(r, "text"));
            const char *uri = pj_string_value(pj_object_get(r, "uri"));
            snprintf(tmp, sizeof tmp, "[resource %.900s]", uri ? uri : "?");
            if (out && append(&out, &len, tmp)) goto oom;
            if (!text) continue;
            piece = text;
        } else if (!strcmp(type, "resource_link")) {
            const char *uri = pj_string_value(pj_object_get(b, "uri"));
            const char *name = pj_string_value(pj_object_get(b, "name"));
            snprintf(tmp, sizeof tmp, "[resource link %.200s](%.700s)", name ? name : "",
                     uri ? uri : "");
        } else {
            snprintf(tmp, sizeof tmp, "[%.100s content]", type);
        }
        if (!out || append(&out, &len, piece)) goto oom;
    }
    if (out && len == 0 && structured) {
        char *s = pj_dumps(structured, PJ_COMPACT);
        if (s && append(&out, &len, s)) {
            free(s);
            goto oom;
        }
        free(s);
    }
    return out;
oom:
    free(out);
    return NULL;
}

int pmcp__content_of(const pj_t *res, pmcp__content *out) {
    memset(out, 0, sizeof *out);
    pj_t *content = pj_object_get(res, "content");
    pj_t *structured = pj_object_get(res, "structuredContent");
    out->is_error = pj_is_true(pj_object_get(res, "isError"));
    out->content_json = pj_is_array(content) ? pj_dumps(content, PJ_COMPACT) : strdup("[]");
    out->structured_json = structured ? pj_dumps(structured, PJ_COMPACT | PJ_ENCODE_ANY) : NULL;
    out->text = model_text(pj_is_array(content) ? content : NULL, structured);
    if (!out->content_json || (structured && !out->structured_json) || !out->text) {
        pmcp__content_clear(out);
        return -1;
    }
    return 0;
}
