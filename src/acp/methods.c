/*
 * methods.c — ACP v1 method handlers: validate params, call the controller, shape
 * the result. Accepts Peri's aliases (session_id; message.content for prompts).
 */
#include "acp/params.h"
#include "acp/prompt_message.h"
#include "acp/server_impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef PERI_VERSION
#define PERI_VERSION "0.0.0-unknown" /* set by CMake from project(VERSION) */
#endif

typedef void (*handler)(pacp_server *, pj_t *, pacp_reply *);

static void bad_params(pacp_reply *r, const char *msg) {
    pacp__reply_error(r, PACP_INVALID_PARAMS, msg);
}

static bool has_nul(pj_t *v) {
    return pacp__has_nul(v);
}

/* False after answering -32602 when the string parameter `name` holds a NUL byte. */
static bool nul_free(pj_t *v, const char *name, pacp_reply *r) {
    char msg[200];
    if (!pacp__nul_refusal(v, name, msg, sizeof msg)) return true;
    bad_params(r, msg);
    return false;
}

static pj_t *session_id_value(pj_t *params) {
    pj_t *v = pj_object_get(params, "sessionId");
    return v ? v : pj_object_get(params, "session_id");
}

/* sessionId (or Peri's session_id); NULL when absent, not a string, empty or holding a
 * NUL byte. */
static const char *session_id(pj_t *params) {
    pj_t *v = session_id_value(params);
    return pj_is_string(v) && pj_string_length(v) > 0 && !has_nul(v) ? pj_string_value(v) : NULL;
}

/* Maps a controller failure onto the wire. */
static void ctl_error(pacp_reply *r, const pct_error *e, const char *sid) {
    switch (e->status) {
    case PCT_NOT_FOUND:
        pacp__reply_error(r, PACP_NOT_FOUND, e->message);
        r->data = pj_pack("{s:s}", "sessionId", sid ? sid : "");
        break;
    case PCT_CLOSING: pacp__reply_error(r, PACP_CLOSE_INCOMPLETE, "Session is closing"); break;
    case PCT_INCOMPLETE: pacp__reply_error(r, PACP_CLOSE_INCOMPLETE, e->message); break;
    case PCT_BAD_ARG:
    case PCT_BUSY: bad_params(r, e->message); break;
    case PCT_FOREIGN:
        bad_params(r, e->message);
        r->data = pj_pack("{s:s}", "sessionId", sid ? sid : "");
        break;
    case PCT_ACTIVE: pacp__reply_error(r, PACP_CLOSE_INCOMPLETE, e->message); break;
    case PCT_OLD_FORMAT:
        bad_params(r, e->message);
        r->data = pj_pack("{s:s, s:s}", "sessionId", sid ? sid : "", "reason", "history_format");
        break;
    default: pacp__reply_error(r, PACP_INTERNAL_ERROR, e->message); break;
    }
}

/* r->result = v, or -32603 when v is NULL (an allocation failed). */
static void answer(pacp_reply *r, pj_t *v) {
    r->result = v;
    if (!v) pacp__reply_error(r, PACP_INTERNAL_ERROR, "out of memory");
}

static void ok_empty(pacp_reply *r) {
    answer(r, pj_object());
}

/* The request's sessionId, or NULL after answering -32602. */
static const char *need_sid(pj_t *params, pacp_reply *r) {
    if (!nul_free(session_id_value(params), "sessionId", r)) return NULL;
    const char *sid = session_id(params);
    if (!sid) bad_params(r, "missing sessionId");
    return sid;
}

/* True when the controller call failed; the failure is answered. */
static bool failed(pacp_reply *r, pct_status st, const pct_error *e, const char *sid) {
    if (st == PCT_OK) return false;
    ctl_error(r, e, sid);
    return true;
}

/* ---------------------------------------------------------------- initialize */

static pj_t *auth_methods(pj_t *client_caps);

static void m_initialize(pacp_server *srv, pj_t *params, pacp_reply *r) {
    pacp__fs_caps(srv, pj_object_get(params, "clientCapabilities"));
    pacp__ask_caps(srv, pj_object_get(params, "clientCapabilities"));
    pacp__term_caps(srv, pj_object_get(params, "clientCapabilities"));
    pj_t *pv = pj_object_get(params, "protocolVersion");
    if (pv && !pj_is_integer(pv)) {
        bad_params(r, "protocolVersion must be an integer");
        return;
    }
    /* One host holds one machine identity: a client asking for another is refused. */
    pj_t *mid = pj_object_get(pj_object_get(pj_object_get(params, "clientCapabilities"), "_meta"),
                              "peri.machineId");
    const char *held = pct_machine_id(srv->ctl);
    if (mid && (!pj_is_string(mid) || has_nul(mid) || strcmp(pj_string_value(mid), held) != 0)) {
        char msg[300];
        snprintf(msg, sizeof msg,
                 "machine identity is fixed for this host (%.40s): refusing to change it to %.40s",
                 *held ? held : "none", pj_is_string(mid) ? pj_string_value(mid) : "?");
        bad_params(r, msg);
        return;
    }
    r->result = pj_pack(
        "{s:i, s:{s:b, s:{s:b, s:b, s:b}, s:{s:b, s:b}, s:{s:{}, s:{}, s:{}, s:{}, s:{}}}, s:o, "
        "s:{s:s, s:s, s:s}}",
        "protocolVersion", 1, "agentCapabilities", "loadSession", 1, "promptCapabilities", "image",
        1, "audio", pct_default_audio(srv->ctl), "embeddedContext", 1, "mcpCapabilities", "http", 1,
        "sse", 1, "sessionCapabilities", "list", "close", "resume", "delete", "fork", "authMethods",
        auth_methods(pj_object_get(params, "clientCapabilities")), "agentInfo", "name", "peri-c",
        "title", "Peri-C", "version", PERI_VERSION);
    if (!r->result) {
        pacp__reply_error(r, PACP_INTERNAL_ERROR, "out of memory");
        return;
    }
    /* Peri's extensions, as ACP's extensibility rules ask: capability flags in _meta. */
    pj_t *ext =
        pj_pack("{s:b, s:b, s:b, s:b, s:[s, s, s, s, s, s]}", "peri.eventIds", 1, "peri.turnDone",
                1, "peri.cancelTarget", 1, "peri.clearQueue", 1, "peri.methods", "_peri/queue/list",
                "_peri/queue/clear", "_peri/session/rename", "_peri/session/archive",
                "_peri/session/unarchive", "_peri/session/rewind");
    if (ext) pj_object_set_new(pj_object_get(r->result, "agentCapabilities"), "_meta", ext);
}

/* ACP authMethods: one per provider, of ACP's default ("agent") type: the client calls
 * authenticate with the method's id and the key in _meta["peri.apiKey"]; Peri keeps it
 * in the user's settings (~/.peri/settings.json, mode 0600), never in the project. The
 * provider's environment variable (vars) is named too, for clients that set it instead
 * and start the agent again.
 *
 * A client that declares clientCapabilities.auth.terminal also gets one "terminal"
 * method per provider: it runs its own configured agent command with the method's args
 * appended (`peri acp ... --login openai`) in a terminal, where the user types the key
 * without echo, and reconnects after exit status 0. ACP allows terminal methods only
 * for clients that declared the capability, and the client never calls authenticate
 * with them. */
static const struct {
    const char *provider, *id, *term_id, *name, *var, *link;
} AUTH[] = {{"openai", "openai-api-key", "openai-terminal-login", "OpenAI API key",
             "OPENAI_API_KEY", "https://platform.openai.com/api-keys"},
            {"anthropic", "anthropic-api-key", "anthropic-terminal-login", "Anthropic API key",
             "ANTHROPIC_API_KEY", "https://console.anthropic.com/settings/keys"}};

static pj_t *auth_methods(pj_t *client_caps) {
    bool terminal = pj_is_true(pj_object_get(pj_object_get(client_caps, "auth"), "terminal"));
    pj_t *arr = pj_array();
    for (size_t i = 0; arr && i < sizeof AUTH / sizeof AUTH[0]; i++) {
        char desc[300];
        snprintf(desc, sizeof desc,
                 "Authenticate with the key in _meta[\"peri.apiKey\"]: it is kept in your "
                 "~/.peri/settings.json (mode 0600), never in the project. Or set %s and "
                 "start the agent again.",
                 AUTH[i].var);
        pj_array_append_new(arr,
                            pj_pack("{s:s, s:s, s:s, s:{s:[{s:s}], s:s}}", "id", AUTH[i].id, "name",
                                    AUTH[i].name, "description", desc, "_meta", "peri.vars", "name",
                                    AUTH[i].var, "peri.link", AUTH[i].link));
    }
    for (size_t i = 0; terminal && arr && i < sizeof AUTH / sizeof AUTH[0]; i++) {
        char name[100], desc[300];
        snprintf(name, sizeof name, "%s (log in from the terminal)", AUTH[i].name);
        snprintf(desc, sizeof desc,
                 "Type the key in a terminal (no echo); it is kept in your "
                 "~/.peri/settings.json (mode 0600), never in the project. Get one at %s.",
                 AUTH[i].link);
        pj_array_append_new(arr, pj_pack("{s:s, s:s, s:s, s:s, s:[s, s], s:{}}", "id",
                                         AUTH[i].term_id, "name", name, "description", desc, "type",
                                         "terminal", "args", "--login", AUTH[i].provider, "env"));
    }
    return arr ? arr : pj_array();
}

int pacp_store_api_key(const char *home, const char *provider, const char *key, char *err,
                       size_t errlen) {
    pct_error e = {0};
    if (pct_store_api_key(home, provider, key, &e) == PCT_OK) return 0;
    snprintf(err, errlen, "%s", e.message);
    return -1;
}

static void m_authenticate(pacp_server *srv, pj_t *params, pacp_reply *r) {
    pj_t *midv = pj_object_get(params, "methodId");
    const char *mid = has_nul(midv) ? NULL : pj_string_value(midv); /* no id has a NUL */
    const char *provider = NULL;
    for (size_t i = 0; mid && i < sizeof AUTH / sizeof AUTH[0]; i++) {
        if (!strcmp(mid, AUTH[i].id)) provider = AUTH[i].provider;
        if (!strcmp(mid, AUTH[i].term_id)) {
            /* ACP: a terminal method is never passed to authenticate */
            bad_params(r, "a terminal login method is run by the client in a terminal "
                          "(its args appended to the agent command), not through authenticate");
            return;
        }
    }
    if (!provider) {
        bad_params(r, "methodId must be one of the authMethods: openai-api-key, "
                      "anthropic-api-key");
        return;
    }
    pj_t *key = pj_object_get(pj_object_get(params, "_meta"), "peri.apiKey");
    if (!key) {
        /* no key given: fine when the host already has usable credentials (e.g. the
         * client set the provider's environment variable and started the agent again) */
        char why[300];
        if (pct_has_credentials(srv->ctl, why, sizeof why))
            ok_empty(r);
        else
            bad_params(r, "_meta[\"peri.apiKey\"] (the provider's API key) is required");
        return;
    }
    if (!pj_is_string(key)) {
        bad_params(r, "_meta[\"peri.apiKey\"] must be a string");
        return;
    }
    if (!nul_free(key, "_meta[\"peri.apiKey\"]", r)) return;
    pct_error e = {0};
    if (pct_authenticate(srv->ctl, provider, pj_string_value(key), &e) != PCT_OK) {
        ctl_error(r, &e, NULL);
        return;
    }
    ok_empty(r);
}

/* ---------------------------------------------------------------- sessions */

static int check_mcp(pj_t *params, pacp_reply *r) {
    pj_t *m = pj_object_get(params, "mcpServers");
    if (m && !pj_is_array(m)) {
        bad_params(r, "mcpServers must be an array");
        return -1;
    }
    return 0;
}

/* MCP: the mcpServers array as JSON text for the controller (NULL if none). */
static char *mcp_text(pj_t *params) {
    pj_t *m = pj_object_get(params, "mcpServers");
    return pj_is_array(m) && pj_array_size(m) ? pj_dumps(m, PJ_COMPACT) : NULL;
}

/* MCP: the session's servers as they are when the answer goes out, in the result's _meta:
 * "peri.mcpServers": [{"name", "status": "starting"|"ready"|"failed"}] and, when something
 * is already known to be wrong, "peri.mcpErrors": ["MCP server \"x\" is unavailable: ...",
 * ...]. Servers start in the background: _peri/mcp_status tells when they are up. */
static void mcp_notices(pacp_server *srv, const char *sid, pj_t *result, char *notices) {
    free(notices); /* the status holds them too */
    char *st = result ? pct_session_mcp_status(srv->ctl, sid) : NULL;
    pj_t *sj = st ? pj_loads(st, 0, NULL) : NULL;
    free(st);
    pj_t *servers = pj_object_get(sj, "servers"), *errors = pj_object_get(sj, "errors");
    if (pj_array_size(servers) || pj_array_size(errors)) { /* none configured: no _meta */
        pj_t *meta = pj_object_get(result, "_meta");
        if (!pj_is_object(meta)) {
            meta = pj_object();
            pj_object_set_new(result, "_meta", meta);
        }
        pj_object_set(meta, "peri.mcpServers", servers);
        if (pj_array_size(errors)) pj_object_set(meta, "peri.mcpErrors", errors);
    }
    pj_decref(sj);
}

/* Adds the session's modes and configOptions to a result object. */
static void add_options(pacp_server *srv, const char *sid, pj_t *result) {
    char *modes = pct_session_modes(srv->ctl, sid);
    char *cfg = pct_session_config(srv->ctl, sid);
    pj_t *m = modes ? pj_loads(modes, 0, NULL) : NULL;
    pj_t *c = cfg ? pj_loads(cfg, 0, NULL) : NULL;
    if (m) pj_object_set_new(result, "modes", m);
    if (c) pj_object_set_new(result, "configOptions", c);
    free(modes);
    free(cfg);
}

/* ACP requires cwd (an absolute path) and mcpServers (an array) in session/new: a
 * missing or mistyped field is -32602 naming it. */
static void m_new(pacp_server *srv, pj_t *params, pacp_reply *r) {
    pj_t *cwdv = pj_object_get(params, "cwd");
    pj_t *mcpv = pj_object_get(params, "mcpServers");
    if (!cwdv) {
        bad_params(r, "missing required field: cwd (an absolute path)");
        return;
    }
    if (!pj_is_string(cwdv)) {
        bad_params(r, "cwd must be a string (an absolute path)");
        return;
    }
    if (!nul_free(cwdv, "cwd", r)) return;
    if (!mcpv) {
        bad_params(r, "missing required field: mcpServers (an array, may be empty)");
        return;
    }
    if (check_mcp(params, r)) return;
    char why[300];
    /* (a host without a machine identity writes nothing: the controller says so first) */
    if (*pct_machine_id(srv->ctl) && !pct_has_credentials(srv->ctl, why, sizeof why)) {
        /* ACP's auth_required: the client authenticates (authMethods), then retries */
        pacp__reply_error(r, PACP_AUTH_REQUIRED, "Authentication required");
        r->data = pj_pack("{s:s}", "reason", why);
        return;
    }
    const char *cwd = pj_string_value(cwdv);
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
    r->result = pj_pack("{s:s}", "sessionId", sid);
    mcp_notices(srv, sid, r->result, notices);
    if (!r->result) {
        pacp__reply_error(r, PACP_INTERNAL_ERROR, "out of memory");
        return;
    }
    add_options(srv, sid, r->result);
    memcpy(r->announce, sid, PST_ID_LEN);
    memcpy(r->answered, sid, PST_ID_LEN);
}

static void load_or_resume(pacp_server *srv, pj_t *params, pacp_reply *r, bool replay) {
    const char *sid = need_sid(params, r);
    if (!sid) return;
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
    mcp_notices(srv, sid, r->result, notices);
    if (r->result) add_options(srv, sid, r->result);
    if (r->result) snprintf(r->answered, sizeof r->answered, "%s", sid);
    char owner[PST_ID_LEN];
    bool read_only = r->result && pct_session_read_only(srv->ctl, sid, owner);
    if (read_only) {
        /* another machine's session: open here for reading only */
        pj_t *meta = pj_object_get(r->result, "_meta");
        if (!pj_is_object(meta)) {
            meta = pj_object();
            pj_object_set_new(r->result, "_meta", meta);
        }
        pj_object_set_new(meta, "peri.readOnly", pj_true());
        pj_object_set_new(meta, "peri.machineId", pj_string(owner));
    }
    int fmt = r->result ? pct_session_history_format(srv->ctl, sid) : PCT_HISTORY_FORMAT;
    if (fmt != PCT_HISTORY_FORMAT) {
        /* a history in another format: replayed, never continued */
        pj_t *meta = pj_object_get(r->result, "_meta");
        if (!pj_is_object(meta)) {
            meta = pj_object();
            pj_object_set_new(r->result, "_meta", meta);
        }
        pj_object_set_new(meta, "peri.readOnly", pj_true());
        pj_object_set_new(meta, "peri.historyFormat", pj_integer(fmt));
        read_only = true;
    }
    /* a reopened session takes prompts as a new one does: its slash commands follow the
     * answer (a read-only one runs none) */
    if (r->result && !read_only) snprintf(r->announce, sizeof r->announce, "%s", sid);
}

/* ---------------------------------------------------------------- fork, modes, config */

static void m_fork(pacp_server *srv, pj_t *params, pacp_reply *r) {
    const char *sid = need_sid(params, r);
    if (!sid) return;
    if (check_mcp(params, r)) return;
    pct_error e = {0};
    char nid[PST_ID_LEN];
    if (failed(r, pct_session_fork(srv->ctl, sid, nid, &e), &e, sid)) return;
    answer(r, pj_pack("{s:s}", "sessionId", nid));
    if (!r->result) return;
    add_options(srv, nid, r->result);
    memcpy(r->announce, nid, PST_ID_LEN);
    memcpy(r->answered, nid, PST_ID_LEN);
}

static void m_set_mode(pacp_server *srv, pj_t *params, pacp_reply *r) {
    const char *sid = need_sid(params, r);
    pj_t *mode = pj_object_get(params, "modeId");
    if (!sid) return;
    if (!pj_is_string(mode)) return bad_params(r, "modeId must be a string");
    if (!nul_free(mode, "modeId", r)) return;
    pct_error e = {0};
    if (!failed(r, pct_set_mode(srv->ctl, sid, pj_string_value(mode), &e), &e, sid)) ok_empty(r);
}

static void m_set_config(pacp_server *srv, pj_t *params, pacp_reply *r) {
    const char *sid = need_sid(params, r);
    pj_t *cid = pj_object_get(params, "configId");
    pj_t *val = pj_object_get(params, "value");
    if (!sid) return;
    if (!pj_is_string(cid)) return bad_params(r, "configId must be a string");
    if (!pj_is_string(val))
        return bad_params(r, "value must be a string (a value id of the option)");
    if (!nul_free(cid, "configId", r) || !nul_free(val, "value", r)) return;
    pct_error e = {0};
    if (failed(r, pct_set_config(srv->ctl, sid, pj_string_value(cid), pj_string_value(val), &e), &e,
               sid))
        return;
    char *cfg = pct_session_config(srv->ctl, sid);
    pj_t *c = cfg ? pj_loads(cfg, 0, NULL) : NULL;
    free(cfg);
    answer(r, c ? pj_pack("{s:o}", "configOptions", c) : NULL);
}

static void m_load(pacp_server *srv, pj_t *params, pacp_reply *r) {
    load_or_resume(srv, params, r, true);
}

static void m_resume(pacp_server *srv, pj_t *params, pacp_reply *r) {
    load_or_resume(srv, params, r, false);
}

static void m_list(pacp_server *srv, pj_t *params, pacp_reply *r) {
    pj_t *cwdv = pj_object_get(params, "cwd");
    pj_t *curv = pj_object_get(params, "cursor");
    if ((cwdv && !pj_is_null(cwdv) && !pj_is_string(cwdv)) ||
        (curv && !pj_is_null(curv) && !pj_is_string(curv))) {
        bad_params(r, "cwd and cursor must be strings");
        return;
    }
    if (!nul_free(cwdv, "cwd", r) || !nul_free(curv, "cursor", r)) return;
    /* _meta."peri.allMachines": true/false overrides the store's default */
    pj_t *allv = pj_object_get(pj_object_get(params, "_meta"), "peri.allMachines");
    int all = pj_is_boolean(allv) ? pj_is_true(allv) : -1;
    /* _meta."peri.includeArchived": true lists archived sessions too */
    bool arch = pj_is_true(pj_object_get(pj_object_get(params, "_meta"), "peri.includeArchived"));
    pst_thread_page page;
    pct_error e = {0};
    if (pct_session_list_opts(srv->ctl, pj_string_value(cwdv), pj_string_value(curv), all, arch,
                              &page, &e) != PCT_OK) {
        ctl_error(r, &e, NULL);
        return;
    }
    r->result =
        pacp__session_list(&page, pct_machine_id(srv->ctl), pct_history_format, PCT_HISTORY_FORMAT);
    pst_thread_page_clear(&page);
    if (!r->result) pacp__reply_error(r, PACP_INTERNAL_ERROR, "out of memory");
}

static void m_delete(pacp_server *srv, pj_t *params, pacp_reply *r) {
    const char *sid = need_sid(params, r);
    pct_error e = {0};
    if (sid && !failed(r, pct_session_delete(srv->ctl, sid, &e), &e, sid)) ok_empty(r);
}

static void m_close(pacp_server *srv, pj_t *params, pacp_reply *r) {
    const char *sid = need_sid(params, r);
    if (!sid) return;
    pct_error e = {0};
    const char *reason = NULL;
    if (failed(r, pct_close_why(srv->ctl, sid, &e, &reason), &e, sid)) {
        /* what keeps the close from settling; the session stays closing for a retry */
        if (reason && !r->data) r->data = pj_pack("{s:s, s:s}", "reason", reason, "sessionId", sid);
        return;
    }
    ok_empty(r);
}

void pacp__cancel(pacp_server *srv, pj_t *params) {
    const char *sid = session_id(params);
    if (!sid) return;
    /* Peri's cancel target and queue choice: clear_queue (default false) or
     * _meta["peri.clearQueue"]; _meta["peri.turnId"] / ["peri.attemptId"] name the turn. */
    pj_t *meta = pj_object_get(params, "_meta");
    pj_t *cq = pj_object_get(params, "clear_queue");
    if (!cq) cq = pj_object_get(meta, "peri.clearQueue");
    pj_t *tid = pj_object_get(meta, "peri.turnId");
    pj_t *aid = pj_object_get(meta, "peri.attemptId");
    /* a target that is not a string names nothing: cancelling "the running turn" instead
     * could hit a turn the client did not mean */
    if ((tid && !pj_is_string(tid)) || (aid && !pj_is_string(aid)) || (aid && !tid) ||
        has_nul(tid) || has_nul(aid))
        return;
    pct_cancel_opts o = {.turn_id = pj_string_value(tid),
                         .attempt_id = pj_string_value(aid),
                         .clear_queue = pj_is_true(cq)};
    pct_cancel_ex(srv->ctl, sid, &o);
}

static void m_cancel(pacp_server *srv, pj_t *params, pacp_reply *r) {
    if (!need_sid(params, r)) return;
    pacp__cancel(srv, params);
    ok_empty(r);
}

/* ---------------------------------------------------------------- Peri's extensions */

static void x_queue_list(pacp_server *srv, pj_t *params, pacp_reply *r) {
    const char *sid = need_sid(params, r);
    pct_error e = {0};
    char *txt = NULL;
    if (!sid || failed(r, pct_queue_list(srv->ctl, sid, &txt, &e), &e, sid)) return;
    pj_t *q = pj_loads(txt, 0, NULL);
    free(txt);
    answer(r, q ? pj_pack("{s:o}", "queue", q) : NULL);
}

static void x_queue_clear(pacp_server *srv, pj_t *params, pacp_reply *r) {
    const char *sid = need_sid(params, r);
    pct_error e = {0};
    size_t n = 0;
    if (!sid || failed(r, pct_queue_clear(srv->ctl, sid, &n, &e), &e, sid)) return;
    answer(r, pj_pack("{s:I}", "cleared", (pj_int_t)n));
}

static void x_rename(pacp_server *srv, pj_t *params, pacp_reply *r) {
    const char *sid = need_sid(params, r);
    pj_t *t = pj_object_get(params, "title");
    if (!sid) return;
    if (!pj_is_string(t)) return bad_params(r, "title must be a string");
    if (!nul_free(t, "title", r)) return;
    pct_error e = {0};
    if (!failed(r, pct_session_rename(srv->ctl, sid, pj_string_value(t), &e), &e, sid)) ok_empty(r);
}

static void archive(pacp_server *srv, pj_t *params, pacp_reply *r, bool on) {
    const char *sid = need_sid(params, r);
    pct_error e = {0};
    if (sid && !failed(r, pct_session_archive(srv->ctl, sid, on, &e), &e, sid)) ok_empty(r);
}

static void x_archive(pacp_server *srv, pj_t *params, pacp_reply *r) {
    archive(srv, params, r, true);
}

static void x_unarchive(pacp_server *srv, pj_t *params, pacp_reply *r) {
    archive(srv, params, r, false);
}

static void x_rewind(pacp_server *srv, pj_t *params, pacp_reply *r) {
    const char *sid = need_sid(params, r);
    pj_t *n = pj_object_get(params, "turns");
    if (!sid) return;
    if (!pj_is_integer(n) || pj_integer_value(n) < 1 || pj_integer_value(n) > 10000)
        return bad_params(r, "turns must be an integer from 1 to 10000");
    pct_error e = {0};
    int dropped = 0;
    if (failed(r, pct_session_rewind(srv->ctl, sid, (int)pj_integer_value(n), &dropped, &e), &e,
               sid))
        return;
    answer(r, pj_pack("{s:i}", "dropped", dropped));
}

/* ---------------------------------------------------------------- prompt */

/* The prompt's ContentBlock[] as a user message (acp/prompt_message.c); a refusal is
 * answered on r. */
static int build_message(pj_t *blocks, pm_message *m, pacp_tbuf *notice, pacp_reply *r,
                         const pacp_accepts *acc) {
    pacp_prompt_err e = {0};
    int rc = pacp__build_message(blocks, m, notice, &e, acc);
    if (rc) pacp__reply_error(r, e.code, e.message);
    return rc;
}

static void m_prompt(pacp_server *srv, pj_t *params, pacp_reply *r) {
    const char *sid = need_sid(params, r);
    if (!sid) return;
    pj_t *blocks = pj_object_get(params, "prompt");
    pj_t *content = pj_object_get(pj_object_get(params, "message"), "content");
    pm_message msg;
    pacp_tbuf notice = {0};
    pacp_accepts acc = {0};
    acc.audio = pct_session_audio(srv->ctl, sid, acc.model, sizeof acc.model);
    if (!pct_session_cwd(srv->ctl, sid, acc.cwd, sizeof acc.cwd)) acc.cwd[0] = '\0';
    if (pj_is_string(content)) {
        pj_t *one = pj_pack("[{s:s, s:O}]", "type", "text", "text", content);
        int rc = one ? build_message(one, &msg, &notice, r, &acc) : -1;
        pj_decref(one);
        if (rc) goto fail;
    } else if (pj_is_array(blocks) || pj_is_array(content)) {
        if (build_message(pj_is_array(blocks) ? blocks : content, &msg, &notice, r, &acc))
            goto fail;
    } else {
        bad_params(r, "missing prompt (ContentBlock[])");
        return;
    }
    pct_error e = {0};
    if (notice.p) {
        char *t = malloc(notice.len + 64);
        if (t) {
            snprintf(t, notice.len + 64, "Not sent to the model: %s.\n", notice.p);
            pct_notice(srv->ctl, sid, t);
            free(t);
        }
    }
    pct_status st = pct_prompt_message(srv->ctl, sid, &msg, r->prompt_token, &e);
    pm_message_clear(&msg);
    free(notice.p);
    if (st != PCT_OK) {
        ctl_error(r, &e, sid);
        return;
    }
    r->deferred = true;
    return;
fail:
    free(notice.p);
    if (!r->code) pacp__reply_error(r, PACP_INTERNAL_ERROR, "out of memory");
}

/* ---------------------------------------------------------------- dispatch */

static const struct {
    const char *name;
    handler fn;
} methods[] = {
    {"initialize", m_initialize},
    {"authenticate", m_authenticate},
    {"session/new", m_new},
    {"session/load", m_load},
    {"session/resume", m_resume},
    {"session/list", m_list},
    {"session/delete", m_delete},
    {"session/close", m_close},
    {"session/prompt", m_prompt},
    {"session/cancel", m_cancel},
    {"session/fork", m_fork},
    {"session/set_mode", m_set_mode},
    {"session/set_config_option", m_set_config},
    /* Peri's extension methods (advertised in initialize, docs/acp.md) */
    {"_peri/queue/list", x_queue_list},
    {"_peri/queue/clear", x_queue_clear},
    {"_peri/session/rename", x_rename},
    {"_peri/session/archive", x_archive},
    {"_peri/session/unarchive", x_unarchive},
    {"_peri/session/rewind", x_rewind},
};

void pacp__dispatch(pacp_server *srv, const char *method, pj_t *params, pacp_reply *out) {
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++) {
        if (strcmp(methods[i].name, method) != 0) continue;
        if (params && !pj_is_object(params)) {
            bad_params(out, "params must be an object");
            return;
        }
        pj_t *empty = NULL;
        if (!params) params = empty = pj_object();
        methods[i].fn(srv, params, out);
        pj_decref(empty);
        return;
    }
    char msg[300];
    snprintf(msg, sizeof msg, "Method not found: %.200s", method);
    pacp__reply_error(out, PACP_METHOD_NOT_FOUND, msg);
}
