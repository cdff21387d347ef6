/*
 * session.c — the session half of the TUI client: every ACP request it makes and what
 * their answers do (initialize, then session/new, session/load for --resume, or
 * session/list + session/load for --continue; /resume's list; prompts), session/update
 * notifications (status fields here, the rest to the transcript), permission requests
 * (kept open until a key answers them), cancel, @mentions as resource links, and the
 * bounded close. Only updates of the shown session are applied.
 */
#include "tui/app.h"

#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

long long pt_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const char *or_empty(const char *s) {
    return s ? s : "";
}

void pt_app_msg(pt_app *a, uint16_t attr, const char *fmt, const char *arg) {
    snprintf(a->msg, sizeof a->msg, fmt, arg ? arg : "");
    a->msg_attr = attr;
}

void pt_app_notice(pt_app *a, uint16_t attr, const char *text) {
    pt_transcript_add(&a->t, PT_E_NOTICE, text, attr);
}

static void track(pt_app *a, int id, pt_rq kind) {
    if (id <= 0) return;
    for (size_t i = 0; i < sizeof a->rq / sizeof a->rq[0]; i++)
        if (a->rq[i].kind == RQ_NONE) {
            a->rq[i].id = id;
            a->rq[i].kind = kind;
            return;
        }
}

static pt_rq untrack(pt_app *a, pj_t *id) {
    if (!pj_is_integer(id)) return RQ_NONE;
    for (size_t i = 0; i < sizeof a->rq / sizeof a->rq[0]; i++)
        if (a->rq[i].kind != RQ_NONE && a->rq[i].id == pj_integer_value(id)) {
            pt_rq k = a->rq[i].kind;
            a->rq[i].kind = RQ_NONE;
            return k;
        }
    return RQ_NONE;
}

void pt_app_request(pt_app *a, const char *method, pj_t *params, pt_rq kind) {
    int id = pt_client_request(&a->c, method, params);
    if (id < 0)
        pt_app_msg(a, PT_FG(PT_RED), "cannot reach the agent (%s)", method);
    else
        track(a, id, kind);
}

/* ------------------------------------------------------------------ session */

static void new_session(pt_app *a) {
    pt_app_request(a, "session/new", pj_pack("{s:s, s:[]}", "cwd", a->o->cwd, "mcpServers"),
                   RQ_NEW);
}

void pt_session_load(pt_app *a, const char *id) {
    if (a->ready && a->sid[0])
        pt_app_request(a, "session/close", pj_pack("{s:s}", "sessionId", a->sid), RQ_OTHER);
    pt_transcript_free(&a->t);
    a->ready = false;
    a->prompts = 0;
    a->title[0] = 0;
    a->has_usage = a->has_cost = false;
    a->scroll = 0;
    snprintf(a->sid, sizeof a->sid, "%s", id);
    pt_app_request(a, "session/load",
                   pj_pack("{s:s, s:s, s:[]}", "sessionId", id, "cwd", a->o->cwd, "mcpServers"),
                   RQ_LOAD);
}

/* modes and configOptions of a session/new or session/load answer, or an update */
static void take_config(pt_app *a, pj_t *cfg) {
    size_t i;
    pj_t *o;
    pj_array_foreach(cfg, i, o) {
        const char *id = pj_string_value(pj_object_get(o, "id"));
        const char *cur = pj_string_value(pj_object_get(o, "currentValue"));
        if (!id || !cur) continue;
        if (!strcmp(id, "mode")) snprintf(a->mode, sizeof a->mode, "%s", cur);
        if (!strcmp(id, "model")) {
            const char *name = cur;
            size_t k;
            pj_t *c;
            pj_array_foreach(pj_object_get(o, "options"), k, c) {
                const char *v = pj_string_value(pj_object_get(c, "value"));
                const char *nm = pj_string_value(pj_object_get(c, "name"));
                if (v && nm && !strcmp(v, cur)) name = nm;
            }
            snprintf(a->model, sizeof a->model, "%s", name);
        }
    }
}

static void take_session(pt_app *a, pj_t *res) {
    const char *m = pj_string_value(pj_object_get(pj_object_get(res, "modes"), "currentModeId"));
    if (m) snprintf(a->mode, sizeof a->mode, "%s", m);
    pj_t *avail = pj_object_get(pj_object_get(res, "modes"), "availableModes");
    if (pj_is_array(avail)) {
        pj_decref(a->modes);
        a->modes = pj_incref(avail);
    }
    take_config(a, pj_object_get(res, "configOptions"));
    a->ready = true;
}

/* --continue: the most recently updated top-level session */
static const char *latest(pj_t *sessions) {
    const char *best = NULL, *best_at = "";
    size_t i;
    pj_t *s;
    pj_array_foreach(sessions, i, s) {
        if (pj_object_get(pj_object_get(s, "_meta"), "peri.parentSessionId")) continue;
        const char *id = pj_string_value(pj_object_get(s, "sessionId"));
        const char *at = pj_string_value(pj_object_get(s, "updatedAt"));
        if (id && (!best || (at && strcmp(at, best_at) > 0))) {
            best = id;
            best_at = at ? at : "";
        }
    }
    return best;
}

static void on_response(pt_app *a, pj_t *f) {
    pt_rq k = untrack(a, pj_object_get(f, "id"));
    pj_t *res = pj_object_get(f, "result");
    pj_t *err = pj_object_get(f, "error");
    const char *emsg = pj_string_value(pj_object_get(err, "message"));
    char buf[512];
    switch (k) {
    case RQ_INIT:
        if (err) {
            pt_app_msg(a, PT_FG(PT_RED), "the agent refused initialize: %s", emsg);
        } else if (a->o->resume_id) {
            pt_session_load(a, a->o->resume_id);
        } else if (a->o->cont) {
            pt_app_request(a, "session/list", pj_pack("{s:s}", "cwd", a->o->cwd), RQ_LIST_CONTINUE);
        } else {
            new_session(a);
        }
        break;
    case RQ_NEW:
        if (err) {
            snprintf(buf, sizeof buf, "Cannot start a session: %s", emsg ? emsg : "error");
            pt_app_notice(a, PT_FG(PT_RED) | PT_BOLD, buf);
            break;
        }
        snprintf(a->sid, sizeof a->sid, "%s",
                 or_empty(pj_string_value(pj_object_get(res, "sessionId"))));
        take_session(a, res);
        break;
    case RQ_LOAD:
        if (err) {
            snprintf(buf, sizeof buf, "Cannot resume %s: %s", a->sid, emsg ? emsg : "error");
            pt_app_notice(a, PT_FG(PT_RED) | PT_BOLD, buf);
            a->sid[0] = 0;
            new_session(a);
            break;
        }
        take_session(a, res);
        snprintf(buf, sizeof buf, "Resumed session %s", a->sid);
        pt_app_notice(a, PT_DIM, "");
        pt_app_notice(a, PT_DIM | PT_FG(PT_GREEN), buf);
        break;
    case RQ_PROMPT: {
        if (a->prompts > 0) a->prompts--;
        const char *stop = pj_string_value(pj_object_get(res, "stopReason"));
        if (err) {
            snprintf(buf, sizeof buf, "Error: %s", emsg ? emsg : "the turn failed");
            pt_app_notice(a, PT_FG(PT_RED) | PT_BOLD, "");
            pt_app_notice(a, PT_FG(PT_RED) | PT_BOLD, buf);
        } else if (stop && !strcmp(stop, "cancelled")) {
            pt_app_notice(a, PT_FG(PT_YELLOW), "");
            pt_app_notice(a, PT_FG(PT_YELLOW) | PT_BOLD,
                          a->scr.st.utf8 ? "\xE2\x96\xA0 Turn cancelled" : "[x] Turn cancelled");
        } else if (stop && strcmp(stop, "end_turn")) {
            snprintf(buf, sizeof buf, "Stopped: %s", stop);
            pt_app_notice(a, PT_FG(PT_YELLOW), "");
            pt_app_notice(a, PT_FG(PT_YELLOW), buf);
        }
        if (!a->prompts) a->cancelling = false;
        break;
    }
    case RQ_LIST:
        if (err) {
            pt_app_msg(a, PT_FG(PT_RED), "session/list failed: %s", emsg);
            break;
        }
        pj_decref(a->pick);
        a->pick = pj_array(); /* top-level sessions only: subagent threads are not resumed */
        size_t i;
        pj_t *it;
        pj_array_foreach(pj_object_get(res, "sessions"), i, it) {
            if (!pj_object_get(pj_object_get(it, "_meta"), "peri.parentSessionId"))
                pj_array_append(a->pick, it);
        }
        a->pick_sel = 0;
        if (!pj_array_size(a->pick)) {
            pj_decref(a->pick);
            a->pick = NULL;
            pt_app_msg(a, PT_DIM, "No earlier sessions in this directory.%s", "");
        }
        break;
    case RQ_LIST_CONTINUE: {
        const char *id = err ? NULL : latest(pj_object_get(res, "sessions"));
        if (id) {
            char copy[128];
            snprintf(copy, sizeof copy, "%s", id);
            pt_session_load(a, copy);
        } else {
            pt_app_notice(a, PT_DIM, "No earlier session in this directory: starting a new one.");
            new_session(a);
        }
        break;
    }
    default: break;
    }
}

static void on_update(pt_app *a, pj_t *params) {
    const char *sid = pj_string_value(pj_object_get(params, "sessionId"));
    if (!sid || strcmp(sid, a->sid)) return;
    pj_t *u = pj_object_get(params, "update");
    const char *tag = pj_string_value(pj_object_get(u, "sessionUpdate"));
    if (!tag) return;
    if (!strcmp(tag, "available_commands_update")) {
        pj_decref(a->commands);
        a->commands = pj_incref(pj_object_get(u, "availableCommands"));
    } else if (!strcmp(tag, "current_mode_update")) {
        const char *m = pj_string_value(pj_object_get(u, "currentModeId"));
        if (m) snprintf(a->mode, sizeof a->mode, "%s", m);
    } else if (!strcmp(tag, "config_option_update")) {
        take_config(a, pj_object_get(u, "configOptions"));
    } else if (!strcmp(tag, "usage_update")) {
        a->used = pj_integer_value(pj_object_get(u, "used"));
        a->size = pj_integer_value(pj_object_get(u, "size"));
        a->has_usage = true;
        pj_t *cost = pj_object_get(pj_object_get(u, "cost"), "amount");
        if (pj_is_number(cost)) {
            a->cost = pj_number_value(cost);
            a->has_cost = true;
        }
        pj_t *cp = pj_object_get(pj_object_get(u, "_meta"), "peri.compaction");
        if (pj_is_object(cp)) { /* an automatic compaction: say so in the transcript */
            const char *how = pj_string_value(pj_object_get(cp, "method"));
            char buf[200];
            snprintf(buf, sizeof buf, "Context compacted: %lld -> %lld tokens (%s)",
                     (long long)pj_integer_value(pj_object_get(cp, "before")),
                     (long long)pj_integer_value(pj_object_get(cp, "after")),
                     how && !strcmp(how, "summary") ? "summarized by the model"
                                                    : "oldest turns trimmed");
            pt_app_notice(a, PT_FG(PT_GREY), buf);
        }
    } else if (!strcmp(tag, "session_info_update")) {
        const char *t = pj_string_value(pj_object_get(u, "title"));
        if (t) snprintf(a->title, sizeof a->title, "%s", t);
    } else {
        pt_transcript_update(&a->t, u);
    }
}

/* A form question (elicitation/create): the TUI takes one free-text field, typed in the
 * input line; any other form is declined at once. One open at a time: an older one is
 * cancelled. */
static void on_elicit(pt_app *a, pj_t *id, pj_t *params) {
    pj_t *props = pj_object_get(pj_object_get(params, "requestedSchema"), "properties");
    const char *mode = pj_string_value(pj_object_get(params, "mode"));
    const char *key = NULL;
    pj_t *v;
    bool one = pj_object_size(props) == 1 && (!mode || !strcmp(mode, "form"));
    if (one) {
        pj_object_foreach(props, key, v) {
            const char *type = pj_string_value(pj_object_get(v, "type"));
            if (!type || strcmp(type, "string") || strlen(key) >= sizeof a->ask_field) one = false;
            break;
        }
    }
    if (!one || !key) {
        pt_client_reply(&a->c, id, pj_pack("{s:s}", "action", "decline"));
        pt_app_notice(a, PT_FG(PT_YELLOW) | PT_DIM,
                      "  A form this terminal cannot show was declined.");
        return;
    }
    if (a->ask_id) pt_session_reply_ask(a, NULL, true);
    a->ask_id = pj_incref(id);
    a->ask = pj_incref(params);
    snprintf(a->ask_field, sizeof a->ask_field, "%s", key);
    a->scroll = 0;
}

void pt_session_reply_ask(pt_app *a, const char *answer, bool cancelled) {
    if (!a->ask_id) return;
    pj_t *r = cancelled ? pj_pack("{s:s}", "action", "cancel")
              : answer
                  ? pj_pack("{s:s, s:{s:s}}", "action", "accept", "content", a->ask_field, answer)
                  : pj_pack("{s:s}", "action", "decline");
    pt_client_reply(&a->c, a->ask_id, r);
    pt_app_notice(a, PT_DIM | (answer ? PT_FG(PT_GREEN) : PT_FG(PT_RED)),
                  cancelled ? "  Question cancelled."
                  : answer  ? "  Answered."
                            : "  Question declined.");
    pj_decref(a->ask_id);
    pj_decref(a->ask);
    a->ask_id = a->ask = NULL;
}

void pt_session_frame(pt_app *a, pj_t *f) {
    const char *method = pj_string_value(pj_object_get(f, "method"));
    pj_t *id = pj_object_get(f, "id");
    if (!method) {
        on_response(a, f);
    } else if (!strcmp(method, "session/update")) {
        on_update(a, pj_object_get(f, "params"));
    } else if (!strcmp(method, "_peri/mcp_login")) {
        /* a remote MCP server needs an OAuth login: the user opens the URL */
        pj_t *p = pj_object_get(f, "params");
        const char *srv = pj_string_value(pj_object_get(p, "server"));
        const char *url = pj_string_value(pj_object_get(p, "url"));
        char buf[2400];
        snprintf(buf, sizeof buf, "MCP server \"%.100s\" needs a login. Open: %.2200s",
                 srv ? srv : "?", url ? url : "?");
        pt_app_notice(a, PT_FG(PT_YELLOW) | PT_BOLD, buf);
    } else if (!strcmp(method, "elicitation/create") && id) {
        on_elicit(a, id, pj_object_get(f, "params"));
    } else if (!strcmp(method, "session/request_permission") && id) {
        pt_session_perm_cancel(a); /* only one open at a time: the older one is cancelled */
        a->perm_id = pj_incref(id);
        a->perm = pj_incref(pj_object_get(f, "params"));
        a->scroll = 0;
    } else if (id) {
        pt_client_error(&a->c, id, -32601, "method not supported by this client");
    }
}

void pt_session_answer(pt_app *a, size_t k) {
    pj_t *opts = pj_object_get(a->perm, "options");
    pj_t *opt = pj_array_get(opts, k);
    const char *oid = pj_string_value(pj_object_get(opt, "optionId"));
    if (!oid) return;
    pt_client_reply(&a->c, a->perm_id,
                    pj_pack("{s:{s:s, s:s}}", "outcome", "outcome", "selected", "optionId", oid));
    char buf[320];
    const char *title = pj_string_value(pj_object_get(pj_object_get(a->perm, "toolCall"), "title"));
    snprintf(buf, sizeof buf, "  %s: %s",
             pj_string_value(pj_object_get(opt, "name"))
                 ? pj_string_value(pj_object_get(opt, "name"))
                 : oid,
             title ? title : "tool");
    const char *kind = pj_string_value(pj_object_get(opt, "kind"));
    pt_app_notice(
        a, (kind && !strncmp(kind, "reject", 6) ? PT_FG(PT_RED) : PT_FG(PT_GREEN)) | PT_DIM, buf);
    pj_decref(a->perm_id);
    pj_decref(a->perm);
    a->perm_id = a->perm = NULL;
}

void pt_session_perm_cancel(pt_app *a) {
    if (!a->perm_id) return;
    pt_client_reply(&a->c, a->perm_id, pj_pack("{s:{s:s}}", "outcome", "outcome", "cancelled"));
    pj_decref(a->perm_id);
    pj_decref(a->perm);
    a->perm_id = a->perm = NULL;
}

void pt_session_cancel(pt_app *a) {
    pt_session_reply_ask(a, NULL, true);
    pt_session_perm_cancel(a);
    if (a->prompts > 0 && a->sid[0]) {
        pt_client_notify(&a->c, "session/cancel", pj_pack("{s:s}", "sessionId", a->sid));
        a->cancelling = true;
    }
}

/* Mentions: every "@path" naming an existing file or directory beneath or at an
 * absolute path becomes a resource_link block after the text. */
static void add_mentions(pt_app *a, pj_t *blocks, const char *text) {
    for (const char *p = text; (p = strchr(p, '@'));) {
        bool start = p == text || p[-1] == ' ' || p[-1] == '\n' || p[-1] == '\t';
        const char *q = ++p;
        while (*q && *q != ' ' && *q != '\n' && *q != '\t')
            q++;
        size_t n = (size_t)(q - p);
        while (n && strchr(",.;:!?)\"'", p[n - 1]))
            n--;
        if (!start || !n || n > PATH_MAX / 2) continue;
        char rel[PATH_MAX], abs[PATH_MAX];
        if (p[0] == '/')
            snprintf(rel, sizeof rel, "%.*s", (int)n, p);
        else
            snprintf(rel, sizeof rel, "%s/%.*s", a->o->cwd, (int)n, p);
        struct stat sb;
        if (!realpath(rel, abs) || stat(abs, &sb)) continue;
        const char *base = strrchr(abs, '/');
        char uri[PATH_MAX + 8];
        snprintf(uri, sizeof uri, "file://%s", abs);
        pj_array_append_new(blocks, pj_pack("{s:s, s:s, s:s}", "type", "resource_link", "uri", uri,
                                            "name", base && base[1] ? base + 1 : abs));
    }
}

/* ------------------------------------------------------------------ close */

/* The bounded close (as libperi-sdk's): session/close, replayed every 50 ms while the
 * agent answers -32010 (not settled yet), within CLOSE_GRACE_MS. Requests that arrive
 * meanwhile are answered "cancelled" / not supported. 0 closed, -1 not settled or no
 * answer in time (then the agent's stdin is closed anyway). */
int pt_session_close(pt_app *a) {
    long long deadline = pb_mono_ms() + CLOSE_GRACE_MS;
    int id = pt_client_request(&a->c, "session/close", pj_pack("{s:s}", "sessionId", a->sid));
    while (id > 0 && !a->c.eof) {
        long long left = deadline - pb_mono_ms();
        if (left <= 0) return -1;
        struct pollfd p = {a->c.rfd, POLLIN, 0};
        if (poll(&p, 1, (int)left) <= 0) continue;
        if (pt_client_read(&a->c) < 0 && a->c.eof) break;
        pj_t *f;
        while ((f = pt_client_next(&a->c))) {
            pj_t *fid = pj_object_get(f, "id");
            const char *method = pj_string_value(pj_object_get(f, "method"));
            if (method && fid) {
                if (!strcmp(method, "session/request_permission"))
                    pt_client_reply(&a->c, fid,
                                    pj_pack("{s:{s:s}}", "outcome", "outcome", "cancelled"));
                else
                    pt_client_error(&a->c, fid, -32601, "method not supported by this client");
            } else if (!method && pj_is_integer(fid) && pj_integer_value(fid) == id) {
                pj_t *err = pj_object_get(f, "error");
                long long code = pj_integer_value(pj_object_get(err, "code"));
                pj_decref(f);
                if (!err) return 0;
                if (code != -32010) return -1;
                struct timespec ts = {0, 50 * 1000 * 1000};
                nanosleep(&ts, NULL);
                id = pt_client_request(&a->c, "session/close",
                                       pj_pack("{s:s}", "sessionId", a->sid));
                break;
            }
            pj_decref(f);
        }
    }
    return -1;
}

/* Sends text as a prompt (text block + resource links of its @mentions) and shows it. */
void pt_session_prompt(pt_app *a, const char *text) {
    pj_t *blocks = pj_pack("[{s:s, s:s}]", "type", "text", "text", text);
    if (blocks) add_mentions(a, blocks, text);
    pt_transcript_add(&a->t, PT_E_USER, text, 0);
    int id = pt_client_request(&a->c, "session/prompt",
                               pj_pack("{s:s, s:o}", "sessionId", a->sid, "prompt", blocks));
    if (id < 0) {
        pt_app_notice(a, PT_FG(PT_RED), "The agent is gone: the prompt was not sent.");
        return;
    }
    track(a, id, RQ_PROMPT);
    a->prompts++;
}

void pt_session_start(pt_app *a) {
    pt_app_request(a, "initialize",
                   pj_pack("{s:i, s:{s:{s:b, s:b}, s:b, s:{s:{}}}, s:{s:s, s:s}}",
                           "protocolVersion", 1, "clientCapabilities", "fs", "readTextFile", 0,
                           "writeTextFile", 0, "terminal", 0, "elicitation", "form", "clientInfo",
                           "name", "peri-tui", "version", "1"),
                   RQ_INIT);
}

void pt_session_next_mode(pt_app *a) {
    size_t n = pj_array_size(a->modes), cur = 0;
    if (!a->ready || n < 2) return;
    for (size_t i = 0; i < n; i++) {
        const char *id = pj_string_value(pj_object_get(pj_array_get(a->modes, i), "id"));
        if (id && !strcmp(id, a->mode)) cur = i;
    }
    const char *next = pj_string_value(pj_object_get(pj_array_get(a->modes, (cur + 1) % n), "id"));
    /* the status line follows current_mode_update, not the request */
    if (next)
        pt_app_request(a, "session/set_mode",
                       pj_pack("{s:s, s:s}", "sessionId", a->sid, "modeId", next), RQ_OTHER);
}
