/*
 * methods.c — ACP v1 method handlers: validate params, call the controller, shape
 * the result. Accepts Peri's aliases (session_id; message.content for prompts).
 */
#include "acp/server_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PERI_VERSION "0.1.0"

typedef void (*handler)(pacp_server *, json_t *, pacp_reply *);

static void bad_params(pacp_reply *r, const char *msg) {
    pacp_reply_error(r, PACP_INVALID_PARAMS, msg);
}

/* sessionId (or Peri's session_id); NULL when absent or not a string. */
static const char *session_id(json_t *params) {
    json_t *v = json_object_get(params, "sessionId");
    if (!v) v = json_object_get(params, "session_id");
    return json_is_string(v) && json_string_length(v) > 0 ? json_string_value(v) : NULL;
}

/* Maps a controller failure onto the wire. */
static void ctl_error(pacp_reply *r, const pct_error *e, const char *sid) {
    switch (e->status) {
    case PCT_NOT_FOUND:
        pacp_reply_error(r, PACP_NOT_FOUND, e->message);
        r->data = json_pack("{s:s}", "sessionId", sid ? sid : "");
        break;
    case PCT_CLOSING: pacp_reply_error(r, PACP_CLOSE_INCOMPLETE, "Session is closing"); break;
    case PCT_INCOMPLETE: pacp_reply_error(r, PACP_CLOSE_INCOMPLETE, e->message); break;
    case PCT_BAD_ARG:
    case PCT_BUSY: bad_params(r, e->message); break;
    default: pacp_reply_error(r, PACP_INTERNAL_ERROR, e->message); break;
    }
}

static void ok_empty(pacp_reply *r) {
    r->result = json_object();
    if (!r->result) pacp_reply_error(r, PACP_INTERNAL_ERROR, "out of memory");
}

/* ---------------------------------------------------------------- initialize */

static void m_initialize(pacp_server *srv, json_t *params, pacp_reply *r) {
    pacp_fs_caps(srv, json_object_get(params, "clientCapabilities")); /* issue 12 */
    json_t *pv = json_object_get(params, "protocolVersion");
    if (pv && !json_is_integer(pv)) {
        bad_params(r, "protocolVersion must be an integer");
        return;
    }
    r->result = json_pack(
        "{s:i, s:{s:b, s:{s:b, s:b, s:b}, s:{s:b, s:b}, s:{s:{}, s:{}, s:{}, s:{}}}, s:[], "
        "s:{s:s, s:s, s:s}}",
        "protocolVersion", 1, "agentCapabilities", "loadSession", 1, "promptCapabilities", "image",
        0, "audio", 0, "embeddedContext", 1, "mcpCapabilities", "http", 1, "sse", 1,
        "sessionCapabilities", "list", "close", "resume", "delete", "authMethods", "agentInfo",
        "name", "peri-c", "title", "Peri-C", "version", PERI_VERSION);
    if (!r->result) pacp_reply_error(r, PACP_INTERNAL_ERROR, "out of memory");
}

static void m_authenticate(pacp_server *srv, json_t *params, pacp_reply *r) {
    (void)srv;
    (void)params;
    bad_params(r, "no authentication methods are offered");
}

/* ---------------------------------------------------------------- sessions */

static int check_mcp(json_t *params, pacp_reply *r) {
    json_t *m = json_object_get(params, "mcpServers");
    if (m && !json_is_array(m)) {
        bad_params(r, "mcpServers must be an array");
        return -1;
    }
    return 0;
}

/* MCP (issue 12): the mcpServers array as JSON text for the controller (NULL if none). */
static char *mcp_text(json_t *params) {
    json_t *m = json_object_get(params, "mcpServers");
    return json_is_array(m) && json_array_size(m) ? json_dumps(m, JSON_COMPACT) : NULL;
}

/* MCP (issue 12): servers that could not start are reported in the result's _meta as
 * {"peri.mcpErrors": ["MCP server \"x\" is unavailable: ...", ...]}. */
static void mcp_notices(json_t *result, char *notices) {
    if (!result || !notices) {
        free(notices);
        return;
    }
    json_t *arr = json_array();
    char *save = NULL;
    for (char *line = strtok_r(notices, "\n", &save); arr && line;
         line = strtok_r(NULL, "\n", &save))
        json_array_append_new(arr, json_string(line));
    json_object_set_new(result, "_meta", json_pack("{s:o}", "peri.mcpErrors", arr));
    free(notices);
}

static void m_new(pacp_server *srv, json_t *params, pacp_reply *r) {
    if (check_mcp(params, r)) return;
    json_t *cwdv = json_object_get(params, "cwd");
    char here[4096];
    const char *cwd = NULL;
    if (json_is_string(cwdv))
        cwd = json_string_value(cwdv);
    else if (cwdv && !json_is_null(cwdv)) {
        bad_params(r, "cwd must be a string");
        return;
    } else if (srv->default_cwd)
        cwd = srv->default_cwd;
    else if (getcwd(here, sizeof here))
        cwd = here;
    pct_error e = {0};
    char sid[PST_ID_LEN];
    char *mcp = mcp_text(params), *notices = NULL;
    pct_status st = pct_session_new_mcp(srv->ctl, cwd, mcp, sid, &notices, &e);
    free(mcp);
    if (st != PCT_OK) {
        free(notices);
        ctl_error(r, &e, NULL);
        return;
    }
    r->result = json_pack("{s:s}", "sessionId", sid);
    mcp_notices(r->result, notices);
    if (!r->result)
        pacp_reply_error(r, PACP_INTERNAL_ERROR, "out of memory");
    else
        memcpy(r->announce, sid, PST_ID_LEN);
}

static void load_or_resume(pacp_server *srv, json_t *params, pacp_reply *r, bool replay) {
    const char *sid = session_id(params);
    if (!sid) {
        bad_params(r, "missing sessionId");
        return;
    }
    if (check_mcp(params, r)) return;
    pct_error e = {0};
    char *mcp = mcp_text(params), *notices = NULL;
    pct_status st = pct_session_load_mcp(srv->ctl, sid, replay, mcp, &notices, &e);
    free(mcp);
    if (st != PCT_OK) {
        free(notices);
        ctl_error(r, &e, sid);
        return;
    }
    ok_empty(r);
    mcp_notices(r->result, notices);
}

static void m_load(pacp_server *srv, json_t *params, pacp_reply *r) {
    load_or_resume(srv, params, r, true);
}

static void m_resume(pacp_server *srv, json_t *params, pacp_reply *r) {
    load_or_resume(srv, params, r, false);
}

static json_t *iso_time(int64_t ms) {
    char buf[40];
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    if (!gmtime_r(&t, &tm)) return json_null();
    size_t n = strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf + n, sizeof buf - n, ".%03dZ", (int)(ms % 1000));
    return json_string(buf);
}

static void m_list(pacp_server *srv, json_t *params, pacp_reply *r) {
    json_t *cwdv = json_object_get(params, "cwd");
    json_t *curv = json_object_get(params, "cursor");
    if ((cwdv && !json_is_null(cwdv) && !json_is_string(cwdv)) ||
        (curv && !json_is_null(curv) && !json_is_string(curv))) {
        bad_params(r, "cwd and cursor must be strings");
        return;
    }
    pst_thread_page page;
    pct_error e = {0};
    if (pct_session_list(srv->ctl, json_string_value(cwdv), json_string_value(curv), &page, &e) !=
        PCT_OK) {
        ctl_error(r, &e, NULL);
        return;
    }
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < page.count; i++) {
        const pst_thread *t = &page.items[i];
        json_t *o = json_pack("{s:s, s:s, s:o}", "sessionId", t->id, "cwd", t->cwd ? t->cwd : "",
                              "updatedAt", iso_time(t->updated_at));
        if (o && t->title) json_object_set_new(o, "title", json_string(t->title));
        if (!o || json_array_append_new(arr, o)) {
            json_decref(arr);
            arr = NULL;
        }
    }
    r->result = arr ? json_pack("{s:o}", "sessions", arr) : NULL;
    if (r->result && page.next_cursor)
        json_object_set_new(r->result, "nextCursor", json_string(page.next_cursor));
    pst_thread_page_clear(&page);
    if (!r->result) pacp_reply_error(r, PACP_INTERNAL_ERROR, "out of memory");
}

static void m_delete(pacp_server *srv, json_t *params, pacp_reply *r) {
    const char *sid = session_id(params);
    if (!sid) {
        bad_params(r, "missing sessionId");
        return;
    }
    pct_error e = {0};
    if (pct_session_delete(srv->ctl, sid, &e) != PCT_OK) {
        ctl_error(r, &e, sid);
        return;
    }
    ok_empty(r);
}

static void m_close(pacp_server *srv, json_t *params, pacp_reply *r) {
    const char *sid = session_id(params);
    if (!sid) {
        bad_params(r, "missing sessionId");
        return;
    }
    pct_error e = {0};
    if (pct_close(srv->ctl, sid, &e) != PCT_OK) {
        ctl_error(r, &e, sid);
        return;
    }
    ok_empty(r);
}

static void m_cancel(pacp_server *srv, json_t *params, pacp_reply *r) {
    const char *sid = session_id(params);
    if (!sid) {
        bad_params(r, "missing sessionId");
        return;
    }
    pct_cancel(srv->ctl, sid);
    ok_empty(r);
}

/* ---------------------------------------------------------------- prompt */

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

/* Flattens ContentBlock[] into the user's text. Returns NULL with r set on error. */
static char *flatten(json_t *blocks, pacp_reply *r) {
    char *out = calloc(1, 1);
    size_t len = 0;
    size_t i;
    json_t *b;
    json_array_foreach(blocks, i, b) {
        const char *type = json_string_value(json_object_get(b, "type"));
        char tmp[1024];
        const char *piece = NULL;
        if (!type) {
            bad_params(r, "content block without a type");
            goto fail;
        }
        if (!strcmp(type, "text")) {
            piece = json_string_value(json_object_get(b, "text"));
            if (!piece) {
                bad_params(r, "text block without text");
                goto fail;
            }
        } else if (!strcmp(type, "resource_link")) {
            const char *uri = json_string_value(json_object_get(b, "uri"));
            const char *name = json_string_value(json_object_get(b, "name"));
            if (!uri) {
                bad_params(r, "resource_link block without uri");
                goto fail;
            }
            snprintf(tmp, sizeof tmp, "[Resource: %s](%s)", name ? name : uri, uri);
            piece = tmp;
        } else if (!strcmp(type, "resource")) {
            json_t *res = json_object_get(b, "resource");
            const char *uri = json_string_value(json_object_get(res, "uri"));
            const char *text = json_string_value(json_object_get(res, "text"));
            if (!uri || !text) {
                bad_params(r, "resource block needs resource.uri and resource.text");
                goto fail;
            }
            snprintf(tmp, sizeof tmp, "[Resource: %s]", uri);
            if (append(&out, &len, tmp)) goto oom;
            piece = text;
        } else {
            snprintf(tmp, sizeof tmp, "unsupported content block type: %s", type);
            bad_params(r, tmp);
            goto fail;
        }
        if (!out || append(&out, &len, piece)) goto oom;
    }
    if (!out) goto oom;
    return out;
oom:
    pacp_reply_error(r, PACP_INTERNAL_ERROR, "out of memory");
fail:
    free(out);
    return NULL;
}

static void m_prompt(pacp_server *srv, json_t *params, pacp_reply *r) {
    const char *sid = session_id(params);
    if (!sid) {
        bad_params(r, "missing sessionId");
        return;
    }
    json_t *blocks = json_object_get(params, "prompt");
    json_t *content = json_object_get(json_object_get(params, "message"), "content");
    char *text = NULL;
    if (json_is_array(blocks))
        text = flatten(blocks, r);
    else if (json_is_string(content))
        text = strdup(json_string_value(content));
    else if (json_is_array(content))
        text = flatten(content, r);
    else {
        bad_params(r, "missing prompt (ContentBlock[])");
        return;
    }
    if (!text) {
        if (!r->code) pacp_reply_error(r, PACP_INTERNAL_ERROR, "out of memory");
        return;
    }
    pct_error e = {0};
    pct_status st = pct_prompt(srv->ctl, sid, text, r->prompt_token, &e);
    free(text);
    if (st != PCT_OK) {
        ctl_error(r, &e, sid);
        return;
    }
    r->deferred = true;
}

/* ---------------------------------------------------------------- dispatch */

static const struct {
    const char *name;
    handler fn;
} methods[] = {
    {"initialize", m_initialize}, {"authenticate", m_authenticate}, {"session/new", m_new},
    {"session/load", m_load},     {"session/resume", m_resume},     {"session/list", m_list},
    {"session/delete", m_delete}, {"session/close", m_close},       {"session/prompt", m_prompt},
    {"session/cancel", m_cancel},
};

void pacp_dispatch(pacp_server *srv, const char *method, json_t *params, pacp_reply *out) {
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++) {
        if (strcmp(methods[i].name, method) != 0) continue;
        if (params && !json_is_object(params)) {
            bad_params(out, "params must be an object");
            return;
        }
        json_t *empty = NULL;
        if (!params) params = empty = json_object();
        methods[i].fn(srv, params, out);
        json_decref(empty);
        return;
    }
    char msg[300];
    snprintf(msg, sizeof msg, "Method not found: %.200s", method);
    pacp_reply_error(out, PACP_METHOD_NOT_FOUND, msg);
}
