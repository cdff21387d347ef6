/*
 * methods.c — the ACP methods of the agent module's reactor: validate params (with the
 * native server's texts and codes), start the store operations they need and answer
 * from their callbacks. Methods that need what this form does not have answer an
 * explicit error naming why.
 *
 * Invariants: a request is answered exactly once: at once, from a store callback (the
 * `pend` record carries its id), or, for session/prompt, when its turn ends.
 */
#include "acp/params.h"
#include "acp/projection.h"
#include "acp/prompt_message.h"
#include "paw_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef PERI_VERSION
#define PERI_VERSION "0.0.0-unknown"
#endif

/* The history format a thread's meta names: 1 (this form's) when it names none, -1 when
 * it is unreadable. */
static int history_format(const char *meta_json) {
    pj_t *m = meta_json ? pj_loads(meta_json, 0, NULL) : NULL;
    pj_t *f = pj_object_get(m, "format");
    int v = 1;
    if (f) {
        pj_int_t n = pj_is_integer(f) ? pj_integer_value(f) : -1;
        v = n >= 0 && n <= 1000000 ? (int)n : -1;
    }
    pj_decref(m);
    return v;
}

/* A request waiting for the store (its id and what it needs afterwards). */
typedef struct pend {
    paw *p;
    pj_t *id;
    char sid[PST_ID_LEN];
    char *cwd;
    char *frozen;
    char *meta; /* the thread's meta (load), the source's meta (fork) */
    char owner[PST_ID_LEN];
    int format;
    bool foreign, old_format, titled, replay;
    bool with_options; /* set_config_option: answered with the configOptions */
    /* fork: the source thread and its history */
    char workspace[PST_ID_LEN];
    char *title, *model;
    pst_message_list msgs;
    bool *hidden; /* per row of msgs: hidden by a rewind (not copied); NULL: none */
    char new_id[PST_ID_LEN];
    pj_t *mcp; /* the request's mcpServers (HTTP entries, checked), NULL: none */
} pend;

static pend *pend_new(paw *p, pj_t *id) {
    pend *q = calloc(1, sizeof *q);
    if (!q) return NULL;
    q->p = p;
    q->id = id ? pj_copy(id) : pj_null();
    if (!q->id) {
        free(q);
        return NULL;
    }
    p->pending_ops++;
    return q;
}

static void pend_free(pend *q) {
    q->p->pending_ops--;
    pj_decref(q->id);
    pj_decref(q->mcp);
    free(q->cwd);
    free(q->frozen);
    free(q->meta);
    free(q->title);
    free(q->model);
    pst_message_list_clear(&q->msgs);
    free(q->hidden);
    free(q);
}

static void bad_params(paw *p, pj_t *id, const char *msg) {
    paw__reply_error(p, id, PB_RPC_INVALID_PARAMS, msg, NULL);
}

/* False after answering -32602 when the string parameter `name` holds a NUL byte (as a C
 * string it would be cut short): the words of the native host (acp/params.h). */
static bool nul_free(paw *p, pj_t *id, pj_t *v, const char *name) {
    char msg[200];
    if (!pacp__nul_refusal(v, name, msg, sizeof msg)) return true;
    bad_params(p, id, msg);
    return false;
}

/* The session id of params, or NULL when it is missing, empty or holds a NUL character
 * (as a C string it would be cut short, to another session's id). */
static const char *session_id(pj_t *params) {
    pj_t *v = pj_object_get(params, "sessionId");
    if (!v) v = pj_object_get(params, "session_id");
    if (!pj_is_string(v) || pj_string_length(v) == 0) return NULL;
    const char *s = pj_string_value(v);
    return strlen(s) == pj_string_length(v) ? s : NULL;
}

/* The refusal of a request whose session id session_id could not take. */
static const char *missing_sid(pj_t *params) {
    pj_t *v = pj_object_get(params, "sessionId");
    if (!v) v = pj_object_get(params, "session_id");
    return pj_is_string(v) && strlen(pj_string_value(v)) != pj_string_length(v)
               ? "sessionId must not contain a NUL character (U+0000)"
               : "missing sessionId";
}

static void not_found(paw *p, pj_t *id, const char *sid) {
    char msg[200];
    snprintf(msg, sizeof msg, "Session not found: %.100s", sid);
    paw__reply_error(p, id, PAW_NOT_FOUND, msg, pj_pack("{s:s}", "sessionId", sid));
}

/* The store cannot be used: its failure (or that it is closing) as -32603. */
static bool store_down(paw *p, pj_t *id) {
    if (p->store_ready && !p->closing) return false;
    paw__reply_error(p, id, PB_RPC_INTERNAL_ERROR,
                     p->store_failed ? p->store_error : "store: not open", NULL);
    return true;
}

static void store_error(paw *p, pj_t *id, const pst_remote_result *res) {
    char msg[300];
    snprintf(msg, sizeof msg, "store: %.280s", res->error.message);
    paw__reply_error(p, id, PB_RPC_INTERNAL_ERROR, msg, NULL);
}

/* A store callback's failure: answered, and q freed. */
static bool op_failed(pend *q, const pst_remote_result *res) {
    if (res->status == PST_OK) return false;
    store_error(q->p, q->id, res);
    pend_free(q);
    return true;
}

/* ---------------------------------------------------------------- initialize */

static void m_initialize(paw *p, pj_t *params, pj_t *id) {
    pj_t *pv = pj_object_get(params, "protocolVersion");
    if (pv && !pj_is_integer(pv)) {
        bad_params(p, id, "protocolVersion must be an integer");
        return;
    }
    pj_t *mid = pj_object_get(pj_object_get(pj_object_get(params, "clientCapabilities"), "_meta"),
                              "peri.machineId");
    if (mid && (!pj_is_string(mid) || pacp__has_nul(mid) ||
                strcmp(pj_string_value(mid), p->machine_id) != 0)) {
        char msg[300];
        snprintf(msg, sizeof msg,
                 "machine identity is fixed for this host (%.40s): refusing to change it to %.40s",
                 p->machine_id[0] ? p->machine_id : "none",
                 pj_is_string(mid) ? pj_string_value(mid) : "?");
        bad_params(p, id, msg);
        return;
    }
    /* Honest for this form: no client fs/terminal features are used, no stdio MCP, no
     * images beyond what the providers take; sessions load, list and close. */
    pj_t *r = pj_pack(
        "{s:i, s:{s:b, s:{s:b, s:b, s:b}, s:{s:b, s:b}, s:{s:{}, s:{}, s:{}, s:{}, s:{}}}, "
        "s:[], "
        "s:{s:s, s:s, s:s}}",
        "protocolVersion", 1, "agentCapabilities", "loadSession", 1, "promptCapabilities", "image",
        1, "audio", 0, "embeddedContext", 1, "mcpCapabilities", "http", 1, "sse", 0,
        "sessionCapabilities", "list", "close", "resume", "delete", "fork", "authMethods",
        "agentInfo", "name", "peri-c", "title", "Peri-C", "version", PERI_VERSION);
    if (r) {
        pj_t *ext =
            pj_pack("{s:b, s:b, s:s}", "peri.eventIds", 1, "peri.turnDone", 1, "peri.form", "wasm");
        if (ext) pj_object_set_new(pj_object_get(r, "agentCapabilities"), "_meta", ext);
    }
    paw__reply(p, id, r);
}

/* The session's modes as native results carry them ({currentModeId, availableModes}). */
static void add_modes(pj_t *result, const paw_sess *s) {
    pj_t *av = result ? pj_array() : NULL;
    for (int m = 0; av && m < PAG_MODE_COUNT; m++)
        pj_array_append_new(av, pj_pack("{s:s, s:s, s:s}", "id", pag_mode_id(m), "name",
                                        pag_mode_name(m), "description", pag_mode_description(m)));
    if (av)
        pj_object_set_new(result, "modes",
                          pj_pack("{s:s, s:o}", "currentModeId",
                                  pag_mode_id(pag_session_mode(s->agent)), "availableModes", av));
}

/* Answers a request that opened session s with result r (the modes and configOptions
 * added, as native); the session's MCP servers start now and their status follows the
 * answer (mcp.c); frees q. */
static void answer_opened(pend *q, paw_sess *s, pj_t *r) {
    add_modes(r, s);
    if (r) pj_object_set_new(r, "configOptions", paw__config_options(s));
    if (paw__mcp_session_open(q->p, s->id, q->mcp) != 0)
        paw__log(q->p, 0, "session %s: out of memory for its MCP servers", s->id);
    paw__mcp_status_meta(q->p, s->id, r);
    paw__reply(q->p, q->id, r);
    paw__mcp_session_answered(q->p, s->id);
    pend_free(q);
}

/* ---------------------------------------------------------------- session/new */

/* The session's mcpServers: stdio ones cannot run here (an explicit refusal), nor the
 * legacy SSE transport (not offered in initialize); streamable HTTP ones need a name, an
 * http(s) url and headers as [{name, value}] strings. NULL: fine. */
static const char *mcp_refusal(pj_t *servers, char *buf, size_t n) {
    size_t i, j;
    pj_t *v, *h;
    pj_array_foreach(servers, i, v) {
        const char *name = pj_string_value(pj_object_get(v, "name"));
        const char *type = pj_string_value(pj_object_get(v, "type"));
        const char *url = pj_string_value(pj_object_get(v, "url"));
        if (pj_object_get(v, "command")) {
            snprintf(buf, n,
                     "MCP server \"%.100s\": stdio MCP servers (command) cannot run inside the "
                     "WebAssembly form (it has no subprocesses); serve it over streamable HTTP "
                     "and give its url",
                     name ? name : "?");
            return buf;
        }
        if (type && !strcmp(type, "sse")) {
            snprintf(buf, n,
                     "MCP server \"%.100s\": the legacy SSE transport is not offered here "
                     "(mcpCapabilities.sse is false); use streamable HTTP (type \"http\")",
                     name ? name : "?");
            return buf;
        }
        bool ok = pj_is_object(v) && name && *name && url &&
                  (!strncmp(url, "http://", 7) || !strncmp(url, "https://", 8)) &&
                  (!type || !strcmp(type, "http"));
        pj_t *hs = pj_object_get(v, "headers");
        if (ok && hs && !pj_is_array(hs)) ok = false;
        pj_array_foreach(hs, j, h) {
            if (!pj_is_string(pj_object_get(h, "name")) || !pj_is_string(pj_object_get(h, "value")))
                ok = false;
        }
        if (!ok) {
            snprintf(buf, n,
                     "MCP server %zu: an HTTP entry needs name, url (http:// or https://) and "
                     "headers as [{\"name\", \"value\"}] strings",
                     i);
            return buf;
        }
    }
    return NULL;
}

/* Reads thread sid; cb gets the result with a pend for request id (replay: its flag;
 * mcp: the request's mcpServers for the session it opens). When the read cannot start,
 * id is answered here. */
static void read_thread(paw *p, pj_t *id, const char *sid, pst_remote_cb cb, bool replay,
                        pj_t *mcp) {
    pend *q = pend_new(p, id);
    if (!q) return paw__reply_error(p, id, PB_RPC_INTERNAL_ERROR, "out of memory", NULL);
    snprintf(q->sid, sizeof q->sid, "%s", sid);
    q->replay = replay;
    if (pj_array_size(mcp)) q->mcp = pj_incref(mcp);
    pst_error e = {0};
    if (pst_remote_thread_get(p->store, sid, cb, q, &e) != PST_OK) {
        paw__reply_error(p, id, PB_RPC_INTERNAL_ERROR, e.message, NULL);
        pend_free(q);
    }
}

/* A thread read found nothing: answered not found, and q freed. */
static bool thread_missing(pend *q, const pst_remote_result *res) {
    if (res->status != PST_ERR_NOT_FOUND && res->status != PST_ERR_ARG) return false;
    not_found(q->p, q->id, q->sid);
    pend_free(q);
    return true;
}

/* A store answer that arrives while the instance closes opens nothing new. */
static bool closing(pend *q) {
    if (!q->p->closing) return false;
    paw__reply_error(q->p, q->id, PB_RPC_INTERNAL_ERROR, "the instance is closing", NULL);
    pend_free(q);
    return true;
}

static void new_created(void *ud, pst_remote_result *res) {
    pend *q = ud;
    paw *p = q->p;
    if (closing(q)) return;
    if (res->status != PST_OK) {
        store_error(p, q->id, res);
    } else {
        paw_sess *s = paw__sess_new(p, res->thread.id, q->cwd, q->frozen, false);
        if (s)
            s->meta = pj_pack("{s:i, s:s, s:s}", "format", 1, "frozenContext", q->frozen, "mode",
                              "default");
        if (s) return answer_opened(q, s, pj_pack("{s:s}", "sessionId", s->id));
        paw__reply_error(p, q->id, PB_RPC_INTERNAL_ERROR, "out of memory", NULL);
    }
    pend_free(q);
}

static void new_workspace(void *ud, pst_remote_result *res) {
    pend *q = ud;
    paw *p = q->p;
    if (op_failed(q, res)) return;
    pj_t *meta =
        pj_pack("{s:i, s:s, s:s}", "format", 1, "frozenContext", q->frozen, "mode", "default");
    char *mt = meta ? pj_dumps(meta, PJ_COMPACT) : NULL;
    pj_decref(meta);
    pst_error e = {0};
    pst_status st = mt ? pst_remote_thread_create(
                             p->store,
                             &(pst_thread_new){.workspace_id = res->id,
                                               .meta = mt,
                                               .model = p->model_spec[0] ? p->model_spec : NULL},
                             new_created, q, &e)
                       : PST_ERR_NOMEM;
    free(mt);
    if (st != PST_OK) {
        paw__reply_error(p, q->id, PB_RPC_INTERNAL_ERROR, mt ? e.message : "out of memory", NULL);
        pend_free(q);
    }
}

/* The workspace path of an absolute cwd (malloc'd; NULL: out of memory): canonical as
 * native's realpath makes it, lexically (paw__canonical_path), so that "/p", "/p/",
 * "/./p", "/q/../p" and "//p" are one workspace. */
static char *lexical_cwd(const char *cwd) {
    size_t cap = strlen(cwd) + 2;
    char *out = malloc(cap);
    if (out && !paw__canonical_path(cwd, out, cap)) out[0] = '\0'; /* cannot happen: it fits */
    return out;
}

static void m_new(paw *p, pj_t *params, pj_t *id) {
    pj_t *cwdv = pj_object_get(params, "cwd");
    pj_t *mcpv = pj_object_get(params, "mcpServers");
    if (!cwdv) return bad_params(p, id, "missing required field: cwd (an absolute path)");
    if (!pj_is_string(cwdv)) return bad_params(p, id, "cwd must be a string (an absolute path)");
    if (!nul_free(p, id, cwdv, "cwd")) return;
    if (!mcpv)
        return bad_params(p, id, "missing required field: mcpServers (an array, may be empty)");
    if (!pj_is_array(mcpv)) return bad_params(p, id, "mcpServers must be an array");
    const char *cwd = pj_string_value(cwdv);
    if (cwd[0] != '/') return bad_params(p, id, "cwd must be an absolute path");
    char why[400];
    const char *refused = mcp_refusal(mcpv, why, sizeof why);
    if (refused) {
        paw__log(p, 0, "session/new: %s", refused);
        return bad_params(p, id, refused);
    }
    if (store_down(p, id)) return;
    pend *q = pend_new(p, id);
    if (q) {
        if (pj_array_size(mcpv)) q->mcp = pj_incref(mcpv);
        q->cwd = lexical_cwd(cwd);
        q->frozen =
            q->cwd ? paw__frozen_context(q->cwd, p->h.ports->wall_ms(p->h.ports->ctx)) : NULL;
    }
    if (!q || !q->cwd || !q->frozen) {
        if (q) pend_free(q);
        paw__reply_error(p, id, PB_RPC_INTERNAL_ERROR, "out of memory", NULL);
        return;
    }
    pst_error e = {0};
    if (pst_remote_workspace_ensure(p->store, p->machine_id, q->cwd, new_workspace, q, &e) !=
        PST_OK) {
        paw__reply_error(p, id, PB_RPC_INTERNAL_ERROR, e.message, NULL);
        pend_free(q);
    }
}

/* ---------------------------------------------------------------- session/load */

static void replay_emit(void *ctx, const pag_event *ev) {
    paw__emit(ctx, ev);
}

/* The load's answer: {} with _meta saying read-only when it is (as native). */
static pj_t *load_result(const pend *q, const char *owner) {
    pj_t *r = pj_object();
    if (r && (q->foreign || q->old_format)) {
        pj_t *meta = pj_object();
        pj_object_set_new(meta, "peri.readOnly", pj_true());
        if (q->old_format) /* replayed, never continued (whoever owns it) */
            pj_object_set_new(meta, "peri.historyFormat", pj_integer(q->format));
        else
            pj_object_set_new(meta, "peri.machineId", pj_string(owner));
        pj_object_set_new(r, "_meta", meta);
    }
    return r;
}

static bool row_hidden(pj_t *hidden, int64_t seq);

static void load_messages(void *ud, pst_remote_result *res) {
    pend *q = ud;
    paw *p = q->p;
    if (closing(q) || op_failed(q, res)) return;
    paw_sess *s = paw__sess_find(p, q->sid);
    uint64_t seq = 0;
    if (s && s->read_only && !s->turn && !s->queue && !s->close_id && !s->gone) {
        /* another machine writes it: read it again, as it is in the store now */
        seq = s->seq;
        paw__sess_drop(s);
        s = NULL;
    }
    if (!s) {
        s = paw__sess_new(p, q->sid, q->cwd, q->frozen, q->foreign || q->old_format);
        if (s) s->seq = seq;
        if (s) {
            s->titled = q->titled;
            s->format = q->format;
            if (q->foreign) snprintf(s->owner, sizeof s->owner, "%s", q->owner);
            s->meta = q->meta ? pj_loads(q->meta, 0, NULL) : NULL;
            paw__sess_apply_meta(s);
        }
    }
    if (!s) {
        paw__reply_error(p, q->id, PB_RPC_INTERNAL_ERROR, "out of memory", NULL);
        pend_free(q);
        return;
    }
    if (pag_session_history_len(s->agent) == 0 && res->messages.count) {
        /* rows a rewind or a refusal hid (meta "hidden") are not part of the history */
        pj_t *meta = q->meta ? pj_loads(q->meta, 0, NULL) : NULL;
        pj_t *hidden = pj_object_get(meta, "hidden");
        const char **txt = calloc(res->messages.count, sizeof *txt);
        size_t skipped = 0, n = 0;
        for (size_t i = 0; txt && i < res->messages.count; i++)
            if (!pj_is_array(hidden) || !row_hidden(hidden, res->messages.items[i].seq))
                txt[n++] = res->messages.items[i].content;
        pj_decref(meta);
        if (!txt || (n && pag_session_restore(s->agent, txt, n, &skipped) != 0))
            paw__log(p, 0, "session %s: history could not be restored", s->id);
        if (skipped) paw__log(p, 1, "session %s: %zu history rows skipped", s->id, skipped);
        free(txt);
    }
    if (q->replay) pag_session_replay(s->agent, replay_emit, s);
    answer_opened(q, s, load_result(q, q->owner));
}

static void load_thread(void *ud, pst_remote_result *res) {
    pend *q = ud;
    paw *p = q->p;
    if (thread_missing(q, res)) return;
    if (op_failed(q, res)) return;
    q->foreign = strcmp(res->thread.machine_id, p->machine_id) != 0;
    snprintf(q->owner, sizeof q->owner, "%s", res->thread.machine_id);
    q->titled = res->thread.title != NULL;
    q->format = history_format(res->thread.meta);
    q->old_format = q->format != 1;
    if (res->thread.meta && !(q->meta = strdup(res->thread.meta))) {
        paw__reply_error(p, q->id, PB_RPC_INTERNAL_ERROR, "out of memory", NULL);
        pend_free(q);
        return;
    }
    pj_t *meta = res->thread.meta ? pj_loads(res->thread.meta, 0, NULL) : NULL;
    const char *fz = pj_string_value(pj_object_get(meta, "frozenContext"));
    q->cwd = strdup(res->thread.cwd ? res->thread.cwd : "/");
    q->frozen = strdup(fz ? fz : "");
    pj_decref(meta);
    pst_error e = {0};
    if (!q->cwd || !q->frozen ||
        pst_remote_messages_load(p->store, q->sid, load_messages, q, &e) != PST_OK) {
        paw__reply_error(p, q->id, PB_RPC_INTERNAL_ERROR, q->frozen ? e.message : "out of memory",
                         NULL);
        pend_free(q);
    }
}

/* A request naming a session with optional mcpServers (load, resume, fork): false when
 * id was answered (no sessionId, or servers that cannot run here). */
static bool session_params_ok(paw *p, pj_t *params, pj_t *id) {
    pj_t *m = pj_object_get(params, "mcpServers");
    char why[400];
    const char *refused = NULL;
    if (!session_id(params))
        refused = missing_sid(params);
    else if (m && !pj_is_array(m))
        refused = "mcpServers must be an array";
    else if (m)
        refused = mcp_refusal(m, why, sizeof why);
    if (refused) bad_params(p, id, refused);
    return refused == NULL;
}

static void load_or_resume(paw *p, pj_t *params, pj_t *id, bool replay) {
    const char *sid = session_id(params);
    pj_t *m = pj_object_get(params, "mcpServers");
    if (!session_params_ok(p, params, id)) return;
    if (store_down(p, id)) return;
    if (!paw__uuid_ok(sid)) return not_found(p, id, sid);
    paw_sess *live = paw__sess_find(p, sid);
    if (live && live->turn) {
        bad_params(p, id, "the session has a turn running: load it again when it ended");
        return;
    }
    read_thread(p, id, sid, load_thread, replay, m);
}

static void m_load(paw *p, pj_t *params, pj_t *id) {
    load_or_resume(p, params, id, true);
}

/* session/resume: as load, without the replay. */
static void m_resume(paw *p, pj_t *params, pj_t *id) {
    load_or_resume(p, params, id, false);
}

/* ---------------------------------------------------------------- session/list */

static void list_done(void *ud, pst_remote_result *res) {
    pend *q = ud;
    paw *p = q->p;
    if (op_failed(q, res)) return;
    paw__reply(p, q->id, pacp__session_list(&res->page, p->machine_id, history_format, 1));
    pend_free(q);
}

static void m_list(paw *p, pj_t *params, pj_t *id) {
    pj_t *cwdv = pj_object_get(params, "cwd");
    pj_t *curv = pj_object_get(params, "cursor");
    if ((cwdv && !pj_is_null(cwdv) && !pj_is_string(cwdv)) ||
        (curv && !pj_is_null(curv) && !pj_is_string(curv)))
        return bad_params(p, id, "cwd and cursor must be strings");
    if (!nul_free(p, id, cwdv, "cwd") || !nul_free(p, id, curv, "cursor")) return;
    if (store_down(p, id)) return;
    pj_t *meta = pj_object_get(params, "_meta");
    pj_t *allv = pj_object_get(meta, "peri.allMachines");
    bool all = pj_is_boolean(allv) ? pj_is_true(allv) : true; /* a shared store: all */
    pend *q = pend_new(p, id);
    /* workspaces are keyed by the canonical path, as session/new makes it */
    const char *cwd = pj_string_value(cwdv);
    if (q && cwd && cwd[0] == '/' && !(q->cwd = lexical_cwd(cwd))) {
        pend_free(q);
        q = NULL;
    }
    if (!q) return paw__reply_error(p, id, PB_RPC_INTERNAL_ERROR, "out of memory", NULL);
    pst_list_query lq = {.cwd = q->cwd ? q->cwd : cwd,
                         .cursor = pj_string_value(curv),
                         .machine_id = all ? NULL : p->machine_id,
                         .include_archived =
                             pj_is_true(pj_object_get(meta, "peri.includeArchived")),
                         .include_children = true};
    pst_error e = {0};
    pst_status st = pst_remote_thread_list(p->store, &lq, list_done, q, &e);
    if (st != PST_OK) { /* a bad cursor is the client's: -32602, as natively */
        paw__reply_error(p, id, st == PST_ERR_ARG ? PB_RPC_INVALID_PARAMS : PB_RPC_INTERNAL_ERROR,
                         e.message, NULL);
        pend_free(q);
    }
}

/* ---------------------------------------------------------------- prompt, cancel, close */

static void m_prompt(paw *p, pj_t *params, pj_t *id) {
    const char *sid = session_id(params);
    if (!sid) return bad_params(p, id, missing_sid(params));
    pj_t *blocks = pj_object_get(params, "prompt");
    pj_t *content = pj_object_get(pj_object_get(params, "message"), "content");
    paw_sess *s = paw__sess_find(p, sid);
    pacp_accepts acc = {0};
    if (s) snprintf(acc.cwd, sizeof acc.cwd, "%s", s->cwd);
    snprintf(acc.model, sizeof acc.model, "%.150s", p->model_spec);
    pm_message msg;
    pacp_tbuf notice = {0};
    pacp_prompt_err pe = {0};
    int rc;
    if (pj_is_string(content)) {
        pj_t *one = pj_pack("[{s:s, s:O}]", "type", "text", "text", content);
        rc = one ? pacp__build_message(one, &msg, &notice, &pe, &acc) : -1;
        pj_decref(one);
    } else if (pj_is_array(blocks) || pj_is_array(content)) {
        rc = pacp__build_message(pj_is_array(blocks) ? blocks : content, &msg, &notice, &pe, &acc);
    } else {
        return bad_params(p, id, "missing prompt (ContentBlock[])");
    }
    if (rc) {
        free(notice.p);
        paw__reply_error(p, id, pe.code ? pe.code : PB_RPC_INTERNAL_ERROR,
                         pe.code ? pe.message : "out of memory", NULL);
        return;
    }
    if (!s) {
        free(notice.p);
        pm_message_clear(&msg);
        return not_found(p, id, sid);
    }
    if (s->read_only || s->gone) {
        free(notice.p);
        pm_message_clear(&msg);
        if (s->gone)
            paw__reply_error(p, id, PAW_CLOSE_INCOMPLETE, "Session is closing", NULL);
        else
            paw__refuse_read_only(p, id, s);
        return;
    }
    if (notice.p) {
        char *t = malloc(notice.len + 64);
        if (t) {
            snprintf(t, notice.len + 64, "Not sent to the model: %s.\n", notice.p);
            pag_event ev = {.kind = PAG_EV_TEXT, .text = t};
            paw__emit(s, &ev);
            free(t);
        }
        free(notice.p);
    }
    paw__sess_prompt(s, id, &msg);
}

static void cancel(paw *p, pj_t *params) {
    const char *sid = session_id(params);
    paw_sess *s = sid ? paw__sess_find(p, sid) : NULL;
    if (!s) return;
    pj_t *cq = pj_object_get(params, "clear_queue");
    if (!cq) cq = pj_object_get(pj_object_get(params, "_meta"), "peri.clearQueue");
    paw__sess_cancel(s, pj_is_true(cq));
}

static void m_cancel(paw *p, pj_t *params, pj_t *id) {
    if (!session_id(params)) return bad_params(p, id, missing_sid(params));
    cancel(p, params);
    paw__reply(p, id, pj_object());
}

static void m_close(paw *p, pj_t *params, pj_t *id) {
    const char *sid = session_id(params);
    if (!sid) return bad_params(p, id, missing_sid(params));
    paw_sess *s = paw__sess_find(p, sid);
    if (!s) return paw__reply(p, id, pj_object()); /* idempotent, as natively */
    if (s->gone) {
        paw__reply_error(p, id, PAW_CLOSE_INCOMPLETE, "Session is closing", NULL);
        return;
    }
    paw__sess_close(s, id);
    paw__maybe_settled(p);
}

/* ---------------------------------------------------------------- options */

/* A session that is not live here: another machine's is named as such (a store read),
 * else not found, as native. */
static void not_live_thread(void *ud, pst_remote_result *res) {
    pend *q = ud;
    if (res->status == PST_OK && strcmp(res->thread.machine_id, q->p->machine_id) != 0)
        paw__refuse_foreign(q->p, q->id, q->sid, res->thread.machine_id);
    else
        not_found(q->p, q->id, q->sid);
    pend_free(q);
}

static void not_live(paw *p, pj_t *id, const char *sid) {
    pend *q = p->store_ready && !p->closing && paw__uuid_ok(sid) ? pend_new(p, id) : NULL;
    pst_error e = {0};
    if (q) snprintf(q->sid, sizeof q->sid, "%s", sid);
    if (q && pst_remote_thread_get(p->store, sid, not_live_thread, q, &e) == PST_OK) return;
    if (q) pend_free(q);
    not_found(p, id, sid);
}

/* The live, open, writable session sid, or NULL when id was answered. */
static paw_sess *writable(paw *p, pj_t *id, const char *sid) {
    paw_sess *s = paw__sess_find(p, sid);
    if (!s) {
        not_live(p, id, sid);
        return NULL;
    }
    if (s->gone) {
        paw__reply_error(p, id, PAW_CLOSE_INCOMPLETE, "Session is closing", NULL);
        return NULL;
    }
    if (s->read_only) {
        paw__refuse_read_only(p, id, s);
        return NULL;
    }
    return s;
}

static void emit_config(paw_sess *s) {
    pj_t *cfg = paw__config_options(s);
    char *txt = cfg ? pj_dumps(cfg, PJ_COMPACT) : NULL;
    pj_decref(cfg);
    if (!txt) return;
    pag_event ev = {.kind = PAG_EV_CONFIG, .content_json = txt};
    paw__emit(s, &ev);
    free(txt);
}

/* The options were saved: set_mode answers {}, set_config_option the new options. A
 * failed write is logged and the change stays for this instance (as native). */
static void options_saved(void *ud, pst_remote_result *res) {
    pend *q = ud;
    paw *p = q->p;
    if (res->status != PST_OK)
        paw__log(p, 0, "session %s: options not persisted: %s", q->sid, res->error.message);
    paw_sess *s = paw__sess_find(p, q->sid);
    if (!q->with_options)
        paw__reply(p, q->id, pj_object());
    else if (s)
        paw__reply(p, q->id, pj_pack("{s:o}", "configOptions", paw__config_options(s)));
    else
        not_found(p, q->id, q->sid);
    pend_free(q);
}

/* Persists s's options, then answers id (config: with the configOptions). */
static void save_then_answer(paw_sess *s, pj_t *id, bool config) {
    paw *p = s->p;
    pend *q = pend_new(p, id);
    if (!q) return paw__reply_error(p, id, PB_RPC_INTERNAL_ERROR, "out of memory", NULL);
    snprintf(q->sid, sizeof q->sid, "%s", s->id);
    q->with_options = config;
    pst_error e = {0};
    if (store_down(p, q->id)) return pend_free(q);
    if (paw__sess_save_meta(s, options_saved, q, &e) != PST_OK) {
        paw__log(p, 0, "session %s: options not persisted: %s", s->id, e.message);
        pst_remote_result r = {.status = PST_OK};
        options_saved(q, &r);
    }
}

static bool set_mode(paw_sess *s, pj_t *id, const char *mode_id) {
    pag_mode m;
    if (!pag_mode_parse(mode_id, &m)) {
        char msg[200];
        snprintf(msg, sizeof msg,
                 "unknown modeId: %.100s (default, acceptEdits, plan, bypassPermissions)", mode_id);
        bad_params(s->p, id, msg);
        return false;
    }
    pag_session_set_mode(s->agent, m);
    pag_event ev = {.kind = PAG_EV_MODE, .text = pag_mode_id(m)};
    paw__emit(s, &ev);
    emit_config(s);
    return true;
}

static void m_set_mode(paw *p, pj_t *params, pj_t *id) {
    const char *sid = session_id(params);
    pj_t *mode = pj_object_get(params, "modeId");
    if (!sid) return bad_params(p, id, missing_sid(params));
    if (!pj_is_string(mode)) return bad_params(p, id, "modeId must be a string");
    if (!nul_free(p, id, mode, "modeId")) return;
    paw_sess *s = writable(p, id, sid);
    if (s && set_mode(s, id, pj_string_value(mode))) save_then_answer(s, id, false);
}

static void m_set_config(paw *p, pj_t *params, pj_t *id) {
    const char *sid = session_id(params);
    pj_t *cid = pj_object_get(params, "configId");
    pj_t *val = pj_object_get(params, "value");
    if (!sid) return bad_params(p, id, missing_sid(params));
    if (!pj_is_string(cid)) return bad_params(p, id, "configId must be a string");
    if (!pj_is_string(val))
        return bad_params(p, id, "value must be a string (a value id of the option)");
    if (!nul_free(p, id, cid, "configId") || !nul_free(p, id, val, "value")) return;
    paw_sess *s = writable(p, id, sid);
    if (!s) return;
    const char *c = pj_string_value(cid), *v = pj_string_value(val);
    char why[300];
    if (!strcmp(c, "mode")) {
        if (!set_mode(s, id, v)) return;
    } else if (!strcmp(c, "model")) {
        if (paw__sess_set_model(s, v, why, sizeof why) != 0) return bad_params(p, id, why);
        emit_config(s);
    } else if (!strcmp(c, "thinking_effort") || !strcmp(c, "context_1m")) {
        /* this form offers neither for any model (configOptions lists none) */
        snprintf(why, sizeof why, "%s is not offered by the current model (see configOptions)", c);
        return bad_params(p, id, why);
    } else {
        snprintf(why, sizeof why,
                 "unknown configId: %.100s (model, mode, thinking_effort, context_1m)", c);
        return bad_params(p, id, why);
    }
    save_then_answer(s, id, true);
}

/* ---------------------------------------------------------------- fork, delete */

static void rollback_done(void *ud, pst_remote_result *res) {
    if (res->status != PST_OK)
        paw__log(ud, 0, "a fork's half copy was not removed: %s", res->error.message);
}

/* The fork's history was copied: it opens as a live session of this instance. */
static void fork_copied(void *ud, pst_remote_result *res) {
    pend *q = ud;
    paw *p = q->p;
    if (closing(q)) return;
    if (res->status != PST_OK) { /* no half copy is left behind */
        pst_error e = {0};
        pst_remote_thread_delete(p->store, q->new_id, rollback_done, p, &e);
        paw__reply_error(p, q->id, PB_RPC_INTERNAL_ERROR, "store: could not copy the history",
                         NULL);
        pend_free(q);
        return;
    }
    paw_sess *s = paw__sess_new(p, q->new_id, q->cwd, q->frozen, false);
    if (!s) {
        paw__reply_error(p, q->id, PB_RPC_INTERNAL_ERROR, "out of memory", NULL);
        pend_free(q);
        return;
    }
    s->titled = true;
    s->meta = q->meta ? pj_loads(q->meta, 0, NULL) : NULL;
    paw__sess_apply_meta(s);
    const char **txt = q->msgs.count ? calloc(q->msgs.count, sizeof *txt) : NULL;
    size_t n = 0, skipped = 0;
    for (size_t i = 0; txt && i < q->msgs.count; i++)
        if (!q->hidden || !q->hidden[i]) txt[n++] = q->msgs.items[i].content;
    if (n && pag_session_restore(s->agent, txt, n, &skipped) != 0)
        paw__log(p, 0, "session %s: history could not be restored", s->id);
    free(txt);
    answer_opened(q, s, pj_pack("{s:s}", "sessionId", s->id));
}

/* Rows a rewind or a refusal hid (meta "hidden": [[from, to], ...]): not loaded, and
 * they stay behind in a fork. */
static bool row_hidden(pj_t *hidden, int64_t seq) {
    size_t i;
    pj_t *r;
    pj_array_foreach(hidden, i, r) {
        if (seq >= pj_integer_value(pj_array_get(r, 0)) &&
            seq <= pj_integer_value(pj_array_get(r, 1)))
            return true;
    }
    return false;
}

static void fork_created(void *ud, pst_remote_result *res) {
    pend *q = ud;
    paw *p = q->p;
    if (closing(q) || op_failed(q, res)) return;
    snprintf(q->new_id, sizeof q->new_id, "%s", res->thread.id);
    pst_message_in *in = q->msgs.count ? calloc(q->msgs.count, sizeof *in) : NULL;
    if (q->msgs.count && !in) {
        paw__reply_error(p, q->id, PB_RPC_INTERNAL_ERROR, "out of memory", NULL);
        pend_free(q);
        return;
    }
    size_t n = 0;
    for (size_t i = 0; i < q->msgs.count; i++)
        if (!q->hidden || !q->hidden[i])
            in[n++] = (pst_message_in){.role = q->msgs.items[i].role,
                                       .content = q->msgs.items[i].content,
                                       .meta = q->msgs.items[i].meta};
    pst_error e = {0};
    pst_remote_result done = {.status = PST_OK};
    if (!n)
        fork_copied(q, &done);
    else if (pst_remote_messages_append(p->store, q->new_id, in, n, fork_copied, q, &e) != PST_OK) {
        done.status = PST_ERR_CONN;
        fork_copied(q, &done);
    }
    free(in);
}

static void fork_messages(void *ud, pst_remote_result *res) {
    pend *q = ud;
    paw *p = q->p;
    if (closing(q) || op_failed(q, res)) return;
    /* the visible history moves into q (the hidden rows are dropped, numbered afresh) */
    pj_t *meta = q->meta ? pj_loads(q->meta, 0, NULL) : NULL;
    pj_t *hidden = pj_object_get(meta, "hidden");
    q->msgs = res->messages;
    memset(&res->messages, 0, sizeof res->messages);
    if (pj_is_array(hidden) && q->msgs.count) {
        if (!(q->hidden = calloc(q->msgs.count, sizeof *q->hidden))) {
            pj_decref(meta);
            paw__reply_error(p, q->id, PB_RPC_INTERNAL_ERROR, "out of memory", NULL);
            pend_free(q);
            return;
        }
        for (size_t i = 0; i < q->msgs.count; i++)
            q->hidden[i] = row_hidden(hidden, q->msgs.items[i].seq);
    }
    if (pj_is_array(hidden)) { /* the copy's rows are numbered afresh: no hidden range */
        pj_object_del(meta, "hidden");
        free(q->meta);
        q->meta = pj_dumps(meta, PJ_COMPACT);
    }
    pj_decref(meta);
    char title[160];
    snprintf(title, sizeof title, "Fork of %.120s", q->title ? q->title : "session");
    pst_error e = {0};
    if (pst_remote_thread_create(p->store,
                                 &(pst_thread_new){.workspace_id = q->workspace,
                                                   .parent_id = q->sid,
                                                   .title = title,
                                                   .model = q->model,
                                                   .meta = q->meta},
                                 fork_created, q, &e) != PST_OK) {
        paw__reply_error(p, q->id, PB_RPC_INTERNAL_ERROR, e.message, NULL);
        pend_free(q);
    }
}

static void fork_thread(void *ud, pst_remote_result *res) {
    pend *q = ud;
    paw *p = q->p;
    if (thread_missing(q, res)) return;
    if (closing(q) || op_failed(q, res)) return;
    if (strcmp(res->thread.machine_id, p->machine_id) != 0) {          /* the fork would be */
        paw__refuse_foreign(p, q->id, q->sid, res->thread.machine_id); /* written into */
        pend_free(q); /* another machine's workspace */
        return;
    }
    const pst_thread *t = &res->thread;
    pj_t *meta = t->meta ? pj_loads(t->meta, 0, NULL) : NULL;
    const char *fz = pj_string_value(pj_object_get(meta, "frozenContext"));
    snprintf(q->workspace, sizeof q->workspace, "%s", t->workspace_id);
    q->cwd = strdup(t->cwd ? t->cwd : "/");
    q->frozen = strdup(fz ? fz : "");
    q->meta = t->meta ? strdup(t->meta) : NULL;
    q->title = t->title ? strdup(t->title) : NULL;
    q->model = t->model ? strdup(t->model) : NULL;
    pj_decref(meta);
    pst_error e = {0};
    if (!q->cwd || !q->frozen || (t->meta && !q->meta) || (t->title && !q->title) ||
        (t->model && !q->model)) {
        paw__reply_error(p, q->id, PB_RPC_INTERNAL_ERROR, "out of memory", NULL);
        pend_free(q);
    } else if (pst_remote_messages_load(p->store, q->sid, fork_messages, q, &e) != PST_OK) {
        paw__reply_error(p, q->id, PB_RPC_INTERNAL_ERROR, e.message, NULL);
        pend_free(q);
    }
}

static void m_fork(paw *p, pj_t *params, pj_t *id) {
    const char *sid = session_id(params);
    pj_t *m = pj_object_get(params, "mcpServers");
    if (!session_params_ok(p, params, id)) return;
    paw_sess *live = paw__sess_find(p, sid);
    if (live && live->read_only) return paw__refuse_read_only(p, id, live);
    if (live && live->gone)
        return paw__reply_error(p, id, PAW_CLOSE_INCOMPLETE, "Session is closing", NULL);
    if (live && (live->turn || live->queue))
        return paw__reply_error(p, id, PAW_CLOSE_INCOMPLETE,
                                "Session is active: wait for its prompt to finish (or cancel "
                                "it) before forking",
                                NULL);
    if (store_down(p, id)) return;
    if (!paw__uuid_ok(sid)) return not_found(p, id, sid);
    read_thread(p, id, sid, fork_thread, false, m);
}

static void deleted(void *ud, pst_remote_result *res) {
    pend *q = ud;
    if (res->status == PST_OK || res->status == PST_ERR_NOT_FOUND || res->status == PST_ERR_ARG)
        paw__reply(q->p, q->id, pj_object());
    else
        store_error(q->p, q->id, res);
    pend_free(q);
}

/* Deleting: only this machine's sessions; a live one is closed first (its turn is
 * cancelled; what it still writes after the thread is gone fails and is logged). */
static void delete_thread(void *ud, pst_remote_result *res) {
    pend *q = ud;
    paw *p = q->p;
    if (res->status == PST_OK && strcmp(res->thread.machine_id, p->machine_id) != 0) {
        paw__refuse_foreign(p, q->id, q->sid, res->thread.machine_id);
        pend_free(q);
        return;
    }
    if (res->status == PST_ERR_NOT_FOUND || res->status == PST_ERR_ARG) {
        paw__reply(p, q->id, pj_object()); /* nothing stored: nothing to delete */
        pend_free(q);
        return;
    }
    if (closing(q) || op_failed(q, res)) return;
    paw_sess *s = paw__sess_find(p, q->sid);
    if (s && !s->gone) paw__sess_close(s, NULL);
    pst_error e = {0};
    if (pst_remote_thread_delete(p->store, q->sid, deleted, q, &e) != PST_OK) {
        paw__reply_error(p, q->id, PB_RPC_INTERNAL_ERROR, e.message, NULL);
        pend_free(q);
    }
}

static void m_delete(paw *p, pj_t *params, pj_t *id) {
    const char *sid = session_id(params);
    if (!sid) return bad_params(p, id, missing_sid(params));
    paw_sess *live = paw__sess_find(p, sid);
    if (live && live->read_only) return paw__refuse_read_only(p, id, live);
    if (store_down(p, id)) return;
    if (!paw__uuid_ok(sid)) return paw__reply(p, id, pj_object());
    read_thread(p, id, sid, delete_thread, false, NULL);
}

/* Methods of the native host that need what this form does not have. */
static void m_unsupported(paw *p, pj_t *params, pj_t *id, const char *method) {
    (void)params;
    char msg[300];
    snprintf(msg, sizeof msg,
             "%.60s is not available in the WebAssembly form of the agent host: %s", method,
             !strcmp(method, "authenticate")
                 ? "model credentials come from the embedding host (credential model:<name>)"
                 : "this form offers initialize, session/new, load, resume, list, prompt, "
                   "cancel, fork, delete, set_mode, set_config_option and close");
    paw__reply_error(p, id, PB_RPC_METHOD_NOT_FOUND, msg, NULL);
}

typedef void (*handler)(paw *, pj_t *, pj_t *);

static const struct {
    const char *name;
    handler fn;
} methods[] = {
    {"initialize", m_initialize}, {"session/new", m_new},
    {"session/load", m_load},     {"session/list", m_list},
    {"session/prompt", m_prompt}, {"session/cancel", m_cancel},
    {"session/close", m_close},   {"session/set_mode", m_set_mode},
    {"session/resume", m_resume}, {"session/fork", m_fork},
    {"session/delete", m_delete}, {"session/set_config_option", m_set_config},
};

static const char *const native_only[] = {
    "authenticate",         "_peri/queue/list",      "_peri/queue/clear",
    "_peri/session/rename", "_peri/session/archive", "_peri/session/unarchive",
    "_peri/session/rewind",
};

void paw__dispatch(paw *p, const char *method, pj_t *params, pj_t *id) {
    if (!p->started) {
        paw__reply_error(p, id, PB_RPC_INTERNAL_ERROR,
                         "the instance has no start object yet (peri_start comes first)", NULL);
        return;
    }
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++) {
        if (strcmp(methods[i].name, method) != 0) continue;
        if (params && !pj_is_object(params)) {
            bad_params(p, id, "params must be an object");
            return;
        }
        pj_t *empty = NULL;
        if (!params) params = empty = pj_object();
        methods[i].fn(p, params, id);
        pj_decref(empty);
        return;
    }
    for (size_t i = 0; i < sizeof native_only / sizeof native_only[0]; i++)
        if (!strcmp(native_only[i], method)) {
            m_unsupported(p, params, id, method);
            return;
        }
    char msg[300];
    snprintf(msg, sizeof msg, "Method not found: %.200s", method);
    paw__reply_error(p, id, PB_RPC_METHOD_NOT_FOUND, msg, NULL);
}

void paw__notification(paw *p, const char *method, pj_t *params) {
    if (!strcmp(method, "session/cancel") && pj_is_object(params)) cancel(p, params);
    /* other notifications (unknown or extension) are ignored, per ACP */
}

void paw__response(paw *p, const pb_rpc_msg *m) {
    if (!paw__ask_answer(p, m)) paw__log(p, 3, "acp: a response to nothing the module asked");
}
