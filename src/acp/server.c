/*
 * server.c — the ACP server loop: reads frames, routes requests to methods.c (those
 * that name a session being opened wait for the opening, in order: "held frames"),
 * matches responses to the agent's own requests (session/request_permission), and
 * is the controller's sink (events -> session/update, prompt answers).
 */
#include "acp/server_impl.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* Prompt answers are routed back to the request id they belong to. */
typedef struct prompt_token {
    struct prompt_token *next; /* srv->prompts, under srv->mu ($/cancel_request) */
    pacp_server *srv;
    pj_t *id;
    char sid[PST_ID_LEN];
} prompt_token;

/* Unlinks t from the in-flight prompts. */
static void forget_prompt(pacp_server *srv, prompt_token *t) {
    pthread_mutex_lock(&srv->mu);
    for (prompt_token **p = &srv->prompts; *p; p = &(*p)->next)
        if (*p == t) {
            *p = t->next;
            break;
        }
    pthread_mutex_unlock(&srv->mu);
}

/* $/cancel_request {requestId}: a session/prompt still in flight is cancelled (its
 * answer is stopReason "cancelled"); other requests are answered synchronously, so by
 * now they are done and there is nothing to cancel. */
static void cancel_request(pacp_server *srv, pj_t *params) {
    pj_t *rid = pj_object_get(params, "requestId");
    if (!rid) return;
    char sid[PST_ID_LEN] = "";
    void *token = NULL;
    pthread_mutex_lock(&srv->mu);
    for (prompt_token *t = srv->prompts; t; t = t->next)
        if (pj_equal(t->id, rid)) {
            memcpy(sid, t->sid, PST_ID_LEN);
            token = t;
            break;
        }
    pthread_mutex_unlock(&srv->mu);
    if (token) pct_cancel_prompt(srv->ctl, sid, token);
}

void pacp__reply_error(pacp_reply *r, int code, const char *msg) {
    pj_decref(r->result);
    r->result = NULL;
    r->code = code;
    snprintf(r->message, sizeof r->message, "%.300s", msg);
}

void pacp__send_reply(pacp_server *srv, pj_t *id, pacp_reply *r) {
    pj_t *f =
        r->result ? pb_rpc_result(id, r->result) : pb_rpc_error(id, r->code, r->message, r->data);
    r->result = NULL;
    r->data = NULL;
    if (f)
        pacp__writer_send(&srv->w, f);
    else
        pb_log(&srv->log, PB_LOG_ERROR, "acp: out of memory building a reply");
    pj_decref(f);
}

void pacp__notify(pacp_server *srv, const char *method, pj_t *params) {
    pj_t *f = pb_rpc_notification(method, params);
    if (f) pacp__writer_send(&srv->w, f);
    pj_decref(f);
}

/* ---------------------------------------------------------------- controller sink */

static void sink_event(void *ctx, const pag_event *ev, const pct_event_ids *ids) {
    pacp_server *srv = ctx;
    pj_t *p = pacp__update_params(ev, ids);
    if (!p) return;
    pj_incref(p);
    pacp__notify(srv, "session/update", p);
    pacp__term_after_update(srv, p); /* shown, so release it now */
    pj_decref(p);
}

/* The terminal event of a turn: _peri/turn_done, after all of the turn's output and
 * before the session/prompt answer, for clients that watch notifications only. */
static void sink_turn_done(void *ctx, const char *session_id, uint64_t seq,
                           const pct_event_ids *ids, const pag_turn_result *r) {
    pacp_server *srv = ctx;
    const char *outcome = r->state == PAG_TURN_FAILED        ? "failed"
                          : r->state == PAG_TURN_INTERRUPTED ? "interrupted"
                                                             : "completed";
    pj_t *p = pj_pack("{s:s, s:s}", "sessionId", session_id, "outcome", outcome);
    if (!p) return;
    if (r->state == PAG_TURN_FAILED)
        pj_object_set_new(p, "error",
                          pj_pack("{s:s, s:s}", "kind", r->error_kind ? r->error_kind : "internal",
                                  "message", r->message));
    else
        pj_object_set_new(p, "stopReason", pj_string(r->stop_reason ? r->stop_reason : "end_turn"));
    if (ids->turn_id) pj_object_set_new(p, "turnId", pj_string(ids->turn_id));
    if (ids->attempt_id) pj_object_set_new(p, "attemptId", pj_string(ids->attempt_id));
    pj_t *meta = pj_pack("{s:I}", "peri.sessionSeq", (pj_int_t)seq);
    if (meta) {
        pacp__ids_meta(meta, ids);
        pj_object_set_new(p, "_meta", meta);
    }
    pacp__notify(srv, "_peri/turn_done", p);
}

/* The session's configured MCP servers finished starting: _peri/mcp_status with every
 * server "ready" or "failed" and the notice lines (docs/acp.md). */
static void sink_mcp_status(void *ctx, const char *session_id, uint64_t epoch,
                            const char *status_json) {
    pacp_server *srv = ctx;
    pj_t *p = pj_loads(status_json, 0, NULL);
    if (!pj_is_object(p)) {
        pj_decref(p);
        return;
    }
    pj_object_set_new(p, "sessionId", pj_string(session_id));
    pj_object_set_new(p, "_meta", pj_pack("{s:I}", "peri.sessionEpoch", (pj_int_t)epoch));
    pacp__notify(srv, "_peri/mcp_status", p);
}

static void sink_mcp_login(void *ctx, const char *session_id, uint64_t epoch, const char *server,
                           const char *url) {
    pacp_server *srv = ctx;
    pj_t *p = pj_pack("{s:s, s:s, s:s, s:{s:I}}", "sessionId", session_id, "server", server, "url",
                      url, "_meta", "peri.sessionEpoch", (pj_int_t)epoch);
    if (p) pacp__notify(srv, "_peri/mcp_login", p);
}

static void sink_prompt_done(void *ctx, void *token, const pag_turn_result *r) {
    pacp_server *srv = ctx;
    prompt_token *t = token;
    pacp_reply rep = {0};
    if (r->state == PAG_TURN_FAILED) {
        rep.code = PACP_TURN_FAILED;
        snprintf(rep.message, sizeof rep.message, "%.300s", r->message);
        rep.data = pj_pack("{s:s}", "kind", r->error_kind ? r->error_kind : "internal");
        if (rep.data && r->http_status > 0)
            pj_object_set_new(rep.data, "status", pj_integer(r->http_status));
    } else {
        rep.result = pj_pack("{s:s}", "stopReason", r->stop_reason ? r->stop_reason : "end_turn");
        if (!rep.result) pacp__reply_error(&rep, PACP_INTERNAL_ERROR, "out of memory");
    }
    forget_prompt(srv, t);
    pacp__send_reply(srv, t->id, &rep);
    pj_decref(t->id);
    free(t);
}

static pag_permission sink_ask(void *ctx, const char *session_id, const pag_event *call,
                               atomic_int *cancel) {
    pacp_server *srv = ctx;
    pacp_outreq *req = calloc(1, sizeof *req);
    if (!req) return PAG_PERM_REJECT;
    pj_t *tc =
        pj_pack("{s:s, s:s, s:s, s:s}", "toolCallId", call->tool_call_id ? call->tool_call_id : "",
                "title", call->title ? call->title : "tool", "kind",
                call->tool_kind ? call->tool_kind : "other", "status", "pending");
    if (tc && call->raw_input) {
        pj_t *ri = pj_loads(call->raw_input, 0, NULL);
        if (ri) pj_object_set_new(tc, "rawInput", ri);
    }
    if (tc && call->meta_json) { /* a subagent's call: its nesting */
        pj_t *mj = pj_loads(call->meta_json, 0, NULL);
        if (pj_is_object(mj))
            pj_object_set_new(tc, "_meta", mj);
        else
            pj_decref(mj);
    }
    if (tc && call->content_json) {
        pj_t *cj = pj_loads(call->content_json, 0, NULL);
        if (pj_is_array(cj))
            pj_object_set_new(tc, "content", cj);
        else
            pj_decref(cj);
    }
    const char *tool = call->tool_name ? call->tool_name : "this tool";
    bool trust = !strcmp(tool, PAG_TRUST_REQUEST_TOOL);
    pj_t *params;
    if (trust) {
        /* A project-trust question: trust exactly what is shown, or not now. No "allow
         * once" is offered, so a client that answers every request with it grants
         * nothing here. */
        params = pj_pack("{s:s, s:o, s:[{s:s, s:s, s:s}, {s:s, s:s, s:s}]}", "sessionId",
                         session_id, "toolCall", tc, "options", "optionId", "trust_project", "name",
                         "Trust this exact configuration", "kind", "allow_always", "optionId",
                         "reject_once", "name", "Not now", "kind", "reject_once");
    } else {
        /* "always" answers: remembered for the session, or for this project in the user's
         * own state (never in a project file) - the option name says which. */
        char always[160], project[200], never[160];
        snprintf(always, sizeof always, "Always allow %.60s in this session", tool);
        snprintf(project, sizeof project,
                 "Always allow %.60s in this project (kept in your ~/.peri, not in the project)",
                 tool);
        snprintf(never, sizeof never, "Always reject %.60s in this session", tool);
        params = pj_pack(
            "{s:s, s:o, s:[{s:s, s:s, s:s}, {s:s, s:s, s:s}, {s:s, s:s, s:s}, {s:s, s:s, s:s}, "
            "{s:s, s:s, s:s}]}",
            "sessionId", session_id, "toolCall", tc, "options", "optionId", "allow_once", "name",
            "Allow once", "kind", "allow_once", "optionId", "allow_always", "name", always, "kind",
            "allow_always", "optionId", "allow_always_project", "name", project, "kind",
            "allow_always", "optionId", "reject_once", "name", "Reject", "kind", "reject_once",
            "optionId", "reject_always", "name", never, "kind", "reject_always");
    }
    req->trust = trust;
    /* the question's identity: the session's epoch, the turn and attempt that ask, and
     * the agent (a subagent's own id when it is the one asking) */
    uint64_t epoch = 0;
    char turn[48] = "", attempt[48] = "";
    if (params && pct_session_turn_ids(srv->ctl, session_id, &epoch, turn, attempt)) {
        pj_t *cm = call->meta_json ? pj_loads(call->meta_json, 0, NULL) : NULL;
        const char *child = pj_string_value(pj_object_get(cm, "peri.childSessionId"));
        pct_event_ids ids = {.session_epoch = epoch,
                             .turn_id = turn[0] ? turn : NULL,
                             .attempt_id = attempt[0] ? attempt : NULL,
                             .agent_id = child ? child : session_id};
        pj_t *meta = pj_object();
        if (meta) {
            pacp__ids_meta(meta, &ids);
            pj_object_set_new(params, "_meta", meta);
        }
        pj_decref(cm);
    }
    pthread_mutex_lock(&srv->mu);
    if (atomic_load(cancel) || !pacp__outreq_link(srv, req)) {
        bool eof = srv->eof;
        pthread_mutex_unlock(&srv->mu);
        pj_decref(params);
        free(req);
        return eof ? PAG_PERM_REJECT : PAG_PERM_CANCELLED;
    }
    pthread_mutex_unlock(&srv->mu);
    pj_t *f = params ? pb_rpc_request(req->id, "session/request_permission", params) : NULL;
    int sent = f && pacp__writer_send(&srv->w, f) == 0;
    pj_decref(f);

    pag_permission outcome = PAG_PERM_REJECT;
    pthread_mutex_lock(&srv->mu);
    while (sent && !req->done && !srv->eof && !atomic_load(cancel)) {
        struct timespec dl = pb_deadline(CLOCK_REALTIME, 20); /* poll the cancel flag */
        pthread_cond_timedwait(&srv->cv, &srv->mu, &dl);
    }
    bool withdraw = sent && !req->done && !srv->eof;
    if (req->done) {
        outcome = (pag_permission)req->outcome;
    } else if (atomic_load(cancel)) {
        outcome = PAG_PERM_CANCELLED;
    }
    pacp__outreq_unlink(srv, req);
    pthread_mutex_unlock(&srv->mu);
    if (withdraw) pacp__outreq_withdraw(srv, req->id);
    free(req);
    return outcome;
}

/* What the controller asks the client: every callback that becomes an ACP request (the
 * user's permission and answers, the client's file system and terminal), all on srv. */
static void sink_requests(pct_sink *sink, pacp_server *srv) {
    sink->ctx = srv;
    sink->ask_permission = sink_ask;
    sink->ask_user = pacp__sink_ask_user;
    sink->fs_read_cancel = pacp__fs_read;
    sink->fs_write_cancel = pacp__fs_write;
    sink->term_run = pacp__term_run;
}

/* Errors and unknown outcomes refuse. */
void pacp__perm_answer(pacp_outreq *r, const pb_rpc_msg *m) {
    r->outcome = pacp__perm_outcome(m->result, r->trust);
}

/* ---------------------------------------------------------------- slow requests */

/* Requests that open sessions: they connect MCP servers (which may be slow or hostile)
 * and replay history, so each runs on a thread of its own and answers from there. */
static bool is_slow(const char *method) {
    return !strcmp(method, "session/new") || !strcmp(method, "session/load") ||
           !strcmp(method, "session/resume") || !strcmp(method, "session/fork");
}

/* ---------------------------------------------------------------- held frames
 *
 * A client may send the next request right behind session/load (or resume) without
 * waiting for its answer: a prompt, set_mode, close, a session/cancel. The load runs on
 * a thread of its own, so such a frame would otherwise reach a session that is not live
 * yet (-32002), or be undone by the load (a close answered {} and then the session live
 * again). So while a load, resume or fork of session X runs, every later request or
 * notification naming X (sessionId), and a $/cancel_request of a request held there, is
 * held; once the opening answered (or failed), the opening's thread processes them in
 * arrival order, and frames that arrive meanwhile queue behind them. The reader never
 * waits: frames of other sessions go on at once. */

#define PACP_HELD_MAX       256          /* frames held for one session */
#define PACP_HELD_MAX_BYTES (256u << 20) /* and their size on the wire */

typedef struct held_frame {
    struct held_frame *next;
    pb_rpc_msg m; /* owned (m.root) */
    size_t len;
} held_frame;

typedef struct pacp_opening {
    struct pacp_opening *next;
    char sid[PST_ID_LEN];
    held_frame *head, **tail;
    size_t n, bytes;
} pacp_opening;

/* The session id a frame names: params.sessionId (or Peri's session_id) when it is a
 * string that can be an id (no NUL, shorter than PST_ID_LEN); else NULL. */
static const char *named_sid(const pb_rpc_msg *m) {
    pj_t *v = pj_object_get(m->params, "sessionId");
    if (!v) v = pj_object_get(m->params, "session_id");
    const char *sv = pj_string_value(v);
    if (!sv || !*sv || strlen(sv) != pj_string_length(v) || pj_string_length(v) >= PST_ID_LEN)
        return NULL;
    return sv;
}

/* (srv->mu held) */
static pacp_opening *opening_of(pacp_server *srv, const char *sid) {
    for (pacp_opening *o = srv->openings; sid && o; o = o->next)
        if (!strcmp(o->sid, sid)) return o;
    return NULL;
}

/* The opening that holds a request with this id (srv->mu held). */
static pacp_opening *holding_request(pacp_server *srv, pj_t *rid) {
    for (pacp_opening *o = rid ? srv->openings : NULL; o; o = o->next)
        for (held_frame *f = o->head; f; f = f->next)
            if (f->m.kind == PB_RPC_REQUEST && f->m.id && pj_equal(f->m.id, rid)) return o;
    return NULL;
}

/* Registers an opening of sid (srv->mu held); NULL when out of memory. */
static pacp_opening *opening_add(pacp_server *srv, const char *sid) {
    pacp_opening *o = calloc(1, sizeof *o);
    if (!o) return NULL;
    snprintf(o->sid, sizeof o->sid, "%s", sid);
    o->tail = &o->head;
    o->next = srv->openings;
    srv->openings = o;
    return o;
}

/* Unlinks and frees o, which holds nothing (srv->mu held). */
static void opening_drop(pacp_server *srv, pacp_opening *o) {
    for (pacp_opening **p = &srv->openings; *p; p = &(*p)->next)
        if (*p == o) {
            *p = o->next;
            break;
        }
    free(o);
}

/* Holds *m (taken: left empty) when it names a session being opened. 1: held; 0: not
 * held (process it now); -1: it should be held but there is no room (answered or
 * dropped here). */
static int maybe_hold(pacp_server *srv, pb_rpc_msg *m, size_t len) {
    if (m->kind != PB_RPC_REQUEST && m->kind != PB_RPC_NOTIFICATION) return 0;
    pthread_mutex_lock(&srv->mu);
    if (!srv->openings) {
        pthread_mutex_unlock(&srv->mu);
        return 0;
    }
    pacp_opening *o = opening_of(srv, named_sid(m));
    if (!o && m->kind == PB_RPC_NOTIFICATION && !strcmp(m->method, "$/cancel_request"))
        o = holding_request(srv, pj_object_get(m->params, "requestId"));
    if (!o) {
        pthread_mutex_unlock(&srv->mu);
        return 0;
    }
    held_frame *f = NULL;
    if (o->n < PACP_HELD_MAX && o->bytes + len <= PACP_HELD_MAX_BYTES &&
        (f = calloc(1, sizeof *f))) {
        f->m = *m;
        f->len = len;
        memset(m, 0, sizeof *m);
        *o->tail = f;
        o->tail = &f->next;
        o->n++;
        o->bytes += len;
    }
    char sid[PST_ID_LEN];
    snprintf(sid, sizeof sid, "%s", o->sid);
    pthread_mutex_unlock(&srv->mu);
    if (f) return 1;
    if (m->kind == PB_RPC_REQUEST) {
        pacp_reply rep = {0};
        char msg[160];
        snprintf(msg, sizeof msg, "too many requests wait for session %s to open", sid);
        pacp__reply_error(&rep, PACP_INTERNAL_ERROR, msg);
        pacp__send_reply(srv, m->id, &rep);
    } else {
        pb_log(&srv->log, PB_LOG_ERROR, "acp: %s dropped: too many frames wait for session %s",
               m->method, sid);
    }
    return -1;
}

typedef struct slow_job {
    pacp_server *srv;
    char *method;
    pj_t *params, *id;
    char sid[PST_ID_LEN]; /* the session it opens or copies ("" : none known, session/new) */
} slow_job;

/* Runs a slow request to its answer on the calling thread. */
static void slow_request(pacp_server *srv, const char *method, pj_t *params, pj_t *id) {
    pacp_reply rep = {0};
    pacp__dispatch(srv, method, params, &rep);
    pacp__send_reply(srv, id, &rep);
    /* available_commands_update must follow the answer that opened the session. */
    if (rep.announce[0]) pct_session_announce(srv->ctl, rep.announce);
    if (rep.answered[0]) pct_session_answered(srv->ctl, rep.answered);
}

static void process(pacp_server *srv, pb_rpc_msg *m, bool on_slow_thread);

/* The opening of sid answered: its held frames, in order, on this thread (a held load
 * of the same session runs here too, so what follows it waits for it as well); the
 * opening ends when none is left. */
static void release_held(pacp_server *srv, const char *sid) {
    for (;;) {
        pthread_mutex_lock(&srv->mu);
        pacp_opening *o = opening_of(srv, sid);
        held_frame *f = o ? o->head : NULL;
        if (o && !f) opening_drop(srv, o);
        if (f) {
            o->head = f->next;
            if (!o->head) o->tail = &o->head;
            o->n--;
            o->bytes -= f->len;
        }
        pthread_mutex_unlock(&srv->mu);
        if (!f) return;
        process(srv, &f->m, true);
        pb_rpc_clear(&f->m);
        free(f);
    }
}

static void slow_free(slow_job *j) {
    free(j->method);
    pj_decref(j->params);
    pj_decref(j->id);
    free(j);
}

static void *slow_main(void *arg) {
    slow_job *j = arg;
    pacp_server *srv = j->srv;
    slow_request(srv, j->method, j->params, j->id);
    if (j->sid[0]) release_held(srv, j->sid);
    slow_free(j);
    pb_count_leave(&srv->mu, &srv->cv, &srv->slow_running);
    return NULL;
}

/* Starts a slow request on its own thread; false when it must run here instead. A load,
 * resume or fork naming a session holds the frames that name it until it answered. */
static bool start_slow(pacp_server *srv, const pb_rpc_msg *m) {
    slow_job *j = calloc(1, sizeof *j);
    if (!j) return false;
    *j = (slow_job){.srv = srv,
                    .method = strdup(m->method),
                    .params = m->params ? pj_deep_copy(m->params) : NULL,
                    .id = m->id ? pj_deep_copy(m->id) : NULL};
    const char *sid = strcmp(m->method, "session/new") ? named_sid(m) : NULL;
    if (sid) snprintf(j->sid, sizeof j->sid, "%s", sid);
    bool ok = j->method && (!m->params || j->params) && (!m->id || j->id);
    if (ok) {
        pthread_mutex_lock(&srv->mu);
        /* (no opening of sid exists: a frame naming it would have been held) */
        pacp_opening *o = sid ? opening_add(srv, sid) : NULL;
        ok = !sid || o;
        if (ok) srv->slow_running++;
        pthread_mutex_unlock(&srv->mu);
        if (ok && pb_thread_detached(slow_main, j) != 0) {
            pthread_mutex_lock(&srv->mu);
            if (o) opening_drop(srv, o); /* nothing was held: the reader is here */
            pthread_mutex_unlock(&srv->mu);
            pb_count_leave(&srv->mu, &srv->cv, &srv->slow_running);
            ok = false;
        }
    }
    if (!ok) slow_free(j);
    return ok;
}

/* Waits up to ms for the slow requests; true when none is left. */
static bool wait_slow(pacp_server *srv, long ms) {
    return pb_count_wait(&srv->mu, &srv->cv, &srv->slow_running, ms) == 0;
}

/* One frame, now: from the reader, or from the thread of an opening that held it
 * (on_slow_thread: a slow request then runs right here, in order). */
static void process(pacp_server *srv, pb_rpc_msg *m, bool on_slow_thread) {
    pacp_reply rep = {0};
    switch (m->kind) {
    case PB_RPC_INVALID:
        pacp__reply_error(&rep, m->err_code, m->err_msg);
        pacp__send_reply(srv, m->id, &rep);
        break;
    case PB_RPC_RESPONSE: pacp__on_response(srv, m); break;
    case PB_RPC_NOTIFICATION:
        if (!strcmp(m->method, "session/cancel")) {
            if (pj_is_object(m->params)) pacp__cancel(srv, m->params);
        } else if (!strcmp(m->method, "$/cancel_request")) {
            cancel_request(srv, m->params);
        }
        /* Other notifications (unknown or extension) are ignored, per ACP. */
        break;
    case PB_RPC_REQUEST: {
        prompt_token *tok = NULL;
        if (!strcmp(m->method, "session/prompt")) {
            tok = calloc(1, sizeof *tok);
            if (tok) {
                tok->srv = srv;
                tok->id = pj_copy(m->id);
            }
            if (!tok || !tok->id) {
                free(tok);
                pacp__reply_error(&rep, PACP_INTERNAL_ERROR, "out of memory");
                pacp__send_reply(srv, m->id, &rep);
                break;
            }
        }
        if (!tok && is_slow(m->method)) {
            if (on_slow_thread) {
                slow_request(srv, m->method, m->params, m->id);
                break;
            }
            if (start_slow(srv, m)) break;
        }
        rep.prompt_token = tok;
        if (tok) {
            /* Registered before dispatch: the answer may come before dispatch returns. Only
             * an id that fits whole is kept (one with a NUL byte or too long for an id names
             * no session: dispatch refuses it), so the token never names a cut-off id. */
            pj_t *sidv = pj_object_get(m->params, "sessionId");
            if (!sidv) sidv = pj_object_get(m->params, "session_id");
            const char *sv = pj_string_value(sidv);
            if (sv && strlen(sv) == pj_string_length(sidv) &&
                pj_string_length(sidv) < sizeof tok->sid)
                memcpy(tok->sid, sv, pj_string_length(sidv) + 1);
            pthread_mutex_lock(&srv->mu);
            tok->next = srv->prompts;
            srv->prompts = tok;
            pthread_mutex_unlock(&srv->mu);
        }
        pacp__dispatch(srv, m->method, m->params, &rep);
        if (rep.deferred) break;
        if (tok) {
            forget_prompt(srv, tok);
            pj_decref(tok->id);
            free(tok);
        }
        pacp__send_reply(srv, m->id, &rep);
        /* available_commands_update must follow the answer that opened the session. */
        if (rep.announce[0]) pct_session_announce(srv->ctl, rep.announce);
        if (rep.answered[0]) pct_session_answered(srv->ctl, rep.answered);
        break;
    }
    }
}

static void on_frame(pacp_server *srv, const char *line, size_t len) {
    pb_rpc_msg m;
    pb_rpc_decode(line, len, PACP_RPC_RULES, &m);
    if (maybe_hold(srv, &m, len) == 0) process(srv, &m, false);
    pb_rpc_clear(&m);
}

/* mkdir -p of an absolute path (0755 for the directories it creates). */
static int make_dirs(const char *path) {
    char buf[PATH_MAX];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) return ENAMETOOLONG;
    for (char *q = buf + 1;; q++) {
        if (*q != '/' && *q != '\0') continue;
        char c = *q;
        *q = '\0';
        if (buf[0] && mkdir(buf, 0755) != 0 && errno != EEXIST) return errno;
        *q = c;
        if (!c) break;
    }
    return 0;
}

/* Validates the start object: cwd (created, canonicalised into out_cwd), settings
 * (parsed into *settings), storage. 0, or -1 with err. */
static int start_object(const pacp_options *opt, char out_cwd[PATH_MAX], pag_settings *settings,
                        char *err, size_t errlen) {
    if (!opt) {
        snprintf(err, errlen, "no start object");
        return -1;
    }
    if (!opt->cwd || !*opt->cwd) {
        snprintf(err, errlen, "cwd must be a nonempty string");
        return -1;
    }
    if (opt->cwd[0] != '/') {
        snprintf(err, errlen, "cwd must be an absolute path");
        return -1;
    }
    int e = make_dirs(opt->cwd);
    if (e || !realpath(opt->cwd, out_cwd)) {
        snprintf(err, errlen, "cwd %.300s cannot be created: %s", opt->cwd,
                 strerror(e ? e : errno));
        return -1;
    }
    if (!opt->storage.locator || !*opt->storage.locator) {
        snprintf(err, errlen, "storage is required: storage.locator must be a nonempty string");
        return -1;
    }
    if (opt->settings && !pj_is_object(opt->settings)) {
        snprintf(err, errlen, "settings must be an object");
        return -1;
    }
    char serr[300] = "";
    if (pag_settings_from_doc(settings, opt->settings, serr, sizeof serr) != 0) {
        snprintf(err, errlen, "settings: %s", serr);
        return -1;
    }
    return 0;
}

int pacp_serve(const pacp_options *opt, int in_fd, int out_fd, char *err, size_t errlen) {
    /* Heap, not stack: if a prompt worker outlives the close grace, pct_free keeps the
     * controller alive and the worker may still reach srv and its settings, so both
     * are then left allocated instead of going out of scope. */
    pacp_server *srv = calloc(1, sizeof *srv);
    pag_settings *settings = calloc(1, sizeof *settings);
    if (!srv || !settings) {
        free(srv);
        free(settings);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (start_object(opt, srv->default_cwd, settings, err, errlen) != 0) {
        free(srv);
        free(settings);
        return -1;
    }
    srv->settings = settings;
    pacp__writer_init(&srv->w, out_fd);
    pthread_mutex_init(&srv->mu, NULL);
    pthread_cond_init(&srv->cv, NULL);
    /* What the controller tells the client: the session/update stream, the end of each
     * prompt, MCP servers' start-up and login (notifications); then what it asks. */
    pct_sink sink = {.on_event_ids = sink_event,
                     .on_turn_done = sink_turn_done,
                     .on_prompt_done = sink_prompt_done,
                     .on_mcp_status = sink_mcp_status,
                     .on_mcp_login = sink_mcp_login};
    sink_requests(&sink, srv);
    pct_config cfg = {.db_path = opt->storage.locator,
                      .home = opt->home,
                      .machine_id = opt->machine_id,
                      .shared_store = opt->storage.shared,
                      .db_credential = opt->storage.credential,
                      .settings = settings,
                      .ruby_wasm = opt->ruby_wasm, /* how code runs */
                      .python_dir = opt->python_dir,
                      .code_cache_dir = opt->code_cache_dir,
                      .wasm_runner = opt->wasm_runner,
                      .nwasm_runner = opt->nwasm_runner,
                      .bwrap = opt->bwrap,
                      .telemetry_token = opt->telemetry_token,
                      .log = opt->log};
    srv->log = opt->log;
    pct_error ce = {0};
    int rc = 0;
    if (!(srv->ctl = pct_new(&cfg, &sink, &ce))) {
        snprintf(err, errlen, "%s", ce.message);
        rc = -1;
    }
    if (rc == 0) {
        pb_lines r;
        pb_lines_init(&r, in_fd, PACP_MAX_FRAME);
        char *line;
        size_t len;
        pb_lines_status st;
        while ((st = pb_lines_next(&r, &line, &len)) == PB_LINE || st == PB_LINE_TOO_LONG) {
            if (st == PB_LINE_TOO_LONG) {
                pacp_reply rep = {0};
                pacp__reply_error(&rep, PACP_INVALID_REQUEST, "Invalid Request: frame too long");
                pacp__send_reply(srv, NULL, &rep);
            } else if (!pb_line_blank(line, len)) { /* blank: a keep-alive */
                on_frame(srv, line, len);
            }
        }
        pb_lines_free(&r);
        pthread_mutex_lock(&srv->mu);
        srv->eof = true; /* pending permission requests resolve as rejected */
        pthread_cond_broadcast(&srv->cv);
        pthread_mutex_unlock(&srv->mu);
        /* Session openings still connecting: each MCP connect is bounded by its init
         * timeout; one still running past this bound keeps srv and the controller
         * alive (a bounded leak at exit) rather than freeing them under it. */
        if (!wait_slow(srv, 65000)) return 0;
        if (pct_free(srv->ctl, settings->close_grace_ms > 2000 ? settings->close_grace_ms : 2000)) {
            /* A worker is still unwinding and may touch srv and the settings: leave
             * them allocated (a bounded leak, reported by pct_free). */
            return 0;
        }
    }
    pacp__term_release_all(srv); /* the client is gone; free the records */
    pthread_mutex_destroy(&srv->mu);
    pthread_cond_destroy(&srv->cv);
    pacp__writer_destroy(&srv->w);
    pag_settings_clear(settings);
    free(settings);
    free(srv);
    return rc;
}
