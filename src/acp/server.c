/*
 * server.c — the ACP server loop: reads frames, routes requests to methods.c,
 * matches responses to the agent's own requests (session/request_permission), and
 * is the controller's sink (events -> session/update, prompt answers).
 */
#include "acp/server_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Prompt answers are routed back to the request id they belong to. */
typedef struct prompt_token {
    pacp_server *srv;
    json_t *id;
} prompt_token;

void pacp_reply_error(pacp_reply *r, int code, const char *msg) {
    json_decref(r->result);
    r->result = NULL;
    r->code = code;
    snprintf(r->message, sizeof r->message, "%.300s", msg);
}

void pacp_send_reply(pacp_server *srv, json_t *id, pacp_reply *r) {
    json_t *f = r->result ? pacp_make_result(id, r->result)
                          : pacp_make_error(id, r->code, r->message, r->data);
    r->result = NULL;
    r->data = NULL;
    if (f)
        pacp_writer_send(&srv->w, f);
    else
        fprintf(stderr, "peri acp: out of memory building a reply\n");
    json_decref(f);
}

void pacp_notify(pacp_server *srv, const char *method, json_t *params) {
    json_t *f = pacp_make_notification(method, params);
    if (f) pacp_writer_send(&srv->w, f);
    json_decref(f);
}

/* ---------------------------------------------------------------- controller sink */

static void sink_event(void *ctx, const pag_event *ev) {
    pacp_server *srv = ctx;
    json_t *p = pacp_update_params(ev);
    if (p) pacp_notify(srv, "session/update", p);
}

static void sink_prompt_done(void *ctx, void *token, const pag_turn_result *r) {
    pacp_server *srv = ctx;
    prompt_token *t = token;
    pacp_reply rep = {0};
    if (r->state == PAG_TURN_FAILED) {
        rep.code = PACP_TURN_FAILED;
        snprintf(rep.message, sizeof rep.message, "%.300s", r->message);
        rep.data = json_pack("{s:s}", "kind", r->error_kind ? r->error_kind : "internal");
        if (rep.data && r->http_status > 0)
            json_object_set_new(rep.data, "status", json_integer(r->http_status));
    } else {
        rep.result = json_pack("{s:s}", "stopReason", r->stop_reason ? r->stop_reason : "end_turn");
        if (!rep.result) pacp_reply_error(&rep, PACP_INTERNAL_ERROR, "out of memory");
    }
    pacp_send_reply(srv, t->id, &rep);
    json_decref(t->id);
    free(t);
}

static pag_permission sink_ask(void *ctx, const char *session_id, const pag_event *call,
                               atomic_int *cancel) {
    pacp_server *srv = ctx;
    pacp_outreq *req = calloc(1, sizeof *req);
    if (!req) return PAG_PERM_REJECT;
    json_t *tc = json_pack("{s:s, s:s, s:s, s:s}", "toolCallId",
                           call->tool_call_id ? call->tool_call_id : "", "title",
                           call->title ? call->title : "tool", "kind",
                           call->tool_kind ? call->tool_kind : "other", "status", "pending");
    if (tc && call->raw_input) {
        json_t *ri = json_loads(call->raw_input, 0, NULL);
        if (ri) json_object_set_new(tc, "rawInput", ri);
    }
    json_t *params =
        json_pack("{s:s, s:o, s:[{s:s, s:s, s:s}, {s:s, s:s, s:s}]}", "sessionId", session_id,
                  "toolCall", tc, "options", "optionId", "allow_once", "name", "Allow once", "kind",
                  "allow_once", "optionId", "reject_once", "name", "Reject", "kind", "reject_once");
    pthread_mutex_lock(&srv->mu);
    if (srv->eof || atomic_load(cancel)) {
        pthread_mutex_unlock(&srv->mu);
        json_decref(params);
        free(req);
        return srv->eof ? PAG_PERM_REJECT : PAG_PERM_CANCELLED;
    }
    req->id = ++srv->next_id;
    req->next = srv->pending;
    srv->pending = req;
    pthread_mutex_unlock(&srv->mu);
    json_t *f = params ? pacp_make_request(req->id, "session/request_permission", params) : NULL;
    int sent = f && pacp_writer_send(&srv->w, f) == 0;
    json_decref(f);

    pag_permission outcome = PAG_PERM_REJECT;
    pthread_mutex_lock(&srv->mu);
    while (sent && !req->done && !srv->eof && !atomic_load(cancel)) {
        struct timespec dl;
        clock_gettime(CLOCK_REALTIME, &dl);
        dl.tv_nsec += 20 * 1000000L; /* poll the cancel flag every 20 ms */
        if (dl.tv_nsec >= 1000000000L) {
            dl.tv_sec++;
            dl.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&srv->cv, &srv->mu, &dl);
    }
    if (req->done) {
        outcome = (pag_permission)req->outcome;
    } else if (atomic_load(cancel)) {
        outcome = PAG_PERM_CANCELLED;
    }
    for (pacp_outreq **p = &srv->pending; *p; p = &(*p)->next) {
        if (*p == req) {
            *p = req->next;
            break;
        }
    }
    pthread_mutex_unlock(&srv->mu);
    free(req);
    return outcome;
}

static void on_response(pacp_server *srv, pacp_msg *m) {
    if (!json_is_integer(m->id)) return; /* not one of ours: ignore */
    /* Issue 12: answers to fs/read_text_file and fs/write_text_file. */
    if (pacp_fs_on_response(srv, m)) return;
    json_int_t id = json_integer_value(m->id);
    /* Decoded here so that no json_t crosses threads; errors and unknown outcomes
     * refuse. */
    json_t *oc = json_object_get(m->result, "outcome");
    const char *kind = json_string_value(json_object_get(oc, "outcome"));
    const char *opt = json_string_value(json_object_get(oc, "optionId"));
    int outcome = PAG_PERM_REJECT;
    if (kind && !strcmp(kind, "cancelled"))
        outcome = PAG_PERM_CANCELLED;
    else if (kind && !strcmp(kind, "selected") && opt &&
             (!strcmp(opt, "allow_once") || !strcmp(opt, "allow_always")))
        outcome = PAG_PERM_ALLOW;
    pthread_mutex_lock(&srv->mu);
    for (pacp_outreq *r = srv->pending; r; r = r->next) {
        if (r->id == id && !r->done) {
            r->outcome = outcome;
            r->done = true;
            pthread_cond_broadcast(&srv->cv);
            break;
        }
    }
    pthread_mutex_unlock(&srv->mu);
}

/* ---------------------------------------------------------------- the loop */

static void on_frame(pacp_server *srv, const char *line, size_t len) {
    pacp_msg m;
    pacp_decode(line, len, &m);
    pacp_reply rep = {0};
    switch (m.kind) {
    case PACP_INVALID:
        pacp_reply_error(&rep, m.err_code, m.err_msg);
        pacp_send_reply(srv, m.id, &rep);
        break;
    case PACP_RESPONSE: on_response(srv, &m); break;
    case PACP_NOTIFICATION:
        if (!strcmp(m.method, "session/cancel")) {
            json_t *sid = json_object_get(m.params, "sessionId");
            if (!sid) sid = json_object_get(m.params, "session_id");
            if (json_is_string(sid)) pct_cancel(srv->ctl, json_string_value(sid));
        }
        /* Other notifications (unknown or extension) are ignored, per ACP. */
        break;
    case PACP_REQUEST: {
        prompt_token *tok = NULL;
        if (!strcmp(m.method, "session/prompt")) {
            tok = calloc(1, sizeof *tok);
            if (tok) {
                tok->srv = srv;
                tok->id = json_copy(m.id);
            }
            if (!tok || !tok->id) {
                free(tok);
                pacp_reply_error(&rep, PACP_INTERNAL_ERROR, "out of memory");
                pacp_send_reply(srv, m.id, &rep);
                break;
            }
        }
        rep.prompt_token = tok;
        pacp_dispatch(srv, m.method, m.params, &rep);
        if (rep.deferred) break;
        if (tok) {
            json_decref(tok->id);
            free(tok);
        }
        pacp_send_reply(srv, m.id, &rep);
        /* available_commands_update must follow the session/new answer. */
        if (rep.announce[0]) pct_session_announce(srv->ctl, rep.announce);
        break;
    }
    }
    pacp_msg_clear(&m);
}

int pacp_serve(const pacp_options *opt, int in_fd, int out_fd, char *err, size_t errlen) {
    const char *home = opt && opt->home ? opt->home : getenv("HOME");
    pag_settings settings;
    char serr[512] = "";
    if (pag_settings_load(&settings, home, NULL, serr, sizeof serr) != 0) {
        fprintf(stderr, "peri acp: settings ignored: %s\n", serr);
        pag_settings_load(&settings, NULL, NULL, serr, sizeof serr);
    }
    char *db = opt && opt->db_path ? strdup(opt->db_path) : pst_default_db_path(home);
    pacp_server srv;
    memset(&srv, 0, sizeof srv);
    srv.default_cwd = opt ? opt->default_cwd : NULL;
    pacp_writer_init(&srv.w, out_fd);
    pthread_mutex_init(&srv.mu, NULL);
    pthread_cond_init(&srv.cv, NULL);
    pct_sink sink = {.ctx = &srv,
                     .on_event = sink_event,
                     .ask_permission = sink_ask,
                     .on_prompt_done = sink_prompt_done,
                     .fs_read = pacp_fs_read, /* issue 12 */
                     .fs_write = pacp_fs_write};
    pct_config cfg = {.db_path = db,
                      .home = home,
                      .machine_id_env = getenv("PERI_MACHINE_ID"),
                      .settings = &settings,
                      .ruby_wasm = opt ? opt->ruby_wasm : NULL,
                      .wasm_runner = opt ? opt->wasm_runner : NULL,
                      .nwasm_runner = opt ? opt->nwasm_runner : 0,
                      .bwrap = opt ? opt->bwrap : NULL};
    pct_error ce = {0};
    int rc = 0;
    if (!db) {
        snprintf(err, errlen, "no database path: set HOME or pass --db");
        rc = -1;
    } else if (!(srv.ctl = pct_new(&cfg, &sink, &ce))) {
        snprintf(err, errlen, "%s", ce.message);
        rc = -1;
    }
    if (rc == 0) {
        pacp_reader r;
        pacp_reader_init(&r, in_fd);
        for (;;) {
            char *line;
            size_t len;
            pacp_read_status st = pacp_reader_next(&r, &line, &len);
            if (st == PACP_READ_EOF || st == PACP_READ_ERROR) break;
            if (st == PACP_READ_TOO_LONG) {
                pacp_reply rep = {0};
                pacp_reply_error(&rep, PACP_INVALID_REQUEST, "Invalid Request: frame too long");
                pacp_send_reply(&srv, NULL, &rep);
                continue;
            }
            size_t k = 0;
            while (k < len && (line[k] == ' ' || line[k] == '\t'))
                k++;
            if (k == len) continue; /* blank keep-alive lines */
            on_frame(&srv, line, len);
        }
        pacp_reader_free(&r);
        pthread_mutex_lock(&srv.mu);
        srv.eof = true; /* pending permission requests resolve as rejected */
        pthread_cond_broadcast(&srv.cv);
        pthread_mutex_unlock(&srv.mu);
        if (pct_free(srv.ctl, settings.close_grace_ms > 2000 ? settings.close_grace_ms : 2000)) {
            /* A worker is still unwinding and may touch srv: leave it allocated. */
            free(db);
            return 0;
        }
    }
    pthread_mutex_destroy(&srv.mu);
    pthread_cond_destroy(&srv.cv);
    pacp_writer_destroy(&srv.w);
    pag_settings_clear(&settings);
    free(db);
    return rc;
}
