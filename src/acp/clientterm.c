/*
 * clientterm.c — ACP client terminals: when the client advertised
 * clientCapabilities.terminal and the user turned the sandbox off ("sandbox": {"mode":
 * "off"}), the shell tool runs its command in a terminal the CLIENT creates
 * (terminal/create, terminal/wait_for_exit, terminal/output; terminal/kill on cancel or
 * timeout), and the tool call content embeds {"type":"terminal","terminalId":ID}.
 *
 * Invariants: never used for sandboxed runs (the client's terminal is not our sandbox);
 * every terminal created is released exactly once: after the tool_call_update that embeds
 * it has been written (sink_event -> pacp__term_after_update), so the client can keep
 * showing it, or here when the run did not complete. Answers are kept as JSON text by the
 * reader thread and decoded on the tool thread (no pj_t crosses threads).
 */
#include "acp/server_impl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TERM_REQ_TIMEOUT_MS 30000
#define TERM_POLL_MS        50

typedef struct pacp_term {
    struct pacp_term *next;
    char sid[PST_ID_LEN];
    char id[128];
} pacp_term;

void pacp__term_caps(pacp_server *srv, pj_t *caps) {
    atomic_store(&srv->term, pj_is_true(pj_object_get(caps, "terminal")));
}

void pacp__term_answer(pacp_outreq *r, const pb_rpc_msg *m) {
    if (m->error || !m->result)
        r->error = true;
    else if (!(r->text = pj_dumps(m->result, PJ_COMPACT)))
        r->error = true;
}

/* Sends a request; returns its id (0: not sent). Fire-and-forget when !wait. */
static pj_int_t send_req(pacp_server *srv, const char *method, pj_t *params, pacp_outreq *req) {
    if (!params) return 0;
    pj_int_t id = 0;
    pthread_mutex_lock(&srv->mu);
    if (req) {
        req->kind = PACP_REQ_TERM;
        if (pacp__outreq_link(srv, req)) id = req->id;
    } else if (!srv->eof) {
        id = ++srv->next_id;
    }
    pthread_mutex_unlock(&srv->mu);
    if (!id) {
        pj_decref(params);
        return 0;
    }
    pj_t *f = pb_rpc_request(id, method, params);
    int ok = f && pacp__writer_send(&srv->w, f) == 0;
    pj_decref(f);
    return ok ? id : 0;
}

/* One terminal/... request; waits for the answer. With `cancel`, stops waiting (returns
 * NULL, *stopped set) when *cancel becomes non-zero or `deadline_ms` (monotonic) passes.
 * Returns the decoded result (caller decrefs) or NULL. */
static pj_t *term_call(pacp_server *srv, const char *method, pj_t *params, atomic_int *cancel,
                       long long deadline_ms, bool *stopped) {
    pacp_outreq *req = calloc(1, sizeof *req);
    if (!req) {
        pj_decref(params);
        return NULL;
    }
    bool sent = send_req(srv, method, params, req) != 0;
    long long t0 = pb_mono_ms();
    pthread_mutex_lock(&srv->mu);
    while (sent && !req->done && !srv->eof) {
        long long ms = pb_mono_ms();
        if (cancel && (atomic_load(cancel) || ms >= deadline_ms)) {
            if (stopped) *stopped = true;
            break;
        }
        if (!cancel && ms - t0 >= TERM_REQ_TIMEOUT_MS) break;
        struct timespec dl = pb_deadline(CLOCK_REALTIME, TERM_POLL_MS);
        pthread_cond_timedwait(&srv->cv, &srv->mu, &dl);
    }
    pacp__outreq_unlink(srv, req);
    pthread_mutex_unlock(&srv->mu);
    pj_t *res = req->done && !req->error && req->text ? pj_loads(req->text, 0, NULL) : NULL;
    free(req->text);
    free(req);
    return res;
}

static void release(pacp_server *srv, const char *sid, const char *tid) {
    send_req(srv, "terminal/release", pj_pack("{s:s, s:s}", "sessionId", sid, "terminalId", tid),
             NULL);
}

int pacp__term_run(void *ctx, const char *sid, const char *cwd, const char *command,
                   long long timeout_ms, size_t max_output, atomic_int *cancel,
                   ptl_term_result *out) {
    pacp_server *srv = ctx;
    if (!atomic_load(&srv->term)) return 1;
    pj_t *cr = term_call(srv, "terminal/create",
                         pj_pack("{s:s, s:s, s:[s,s], s:s, s:I}", "sessionId", sid, "command",
                                 "/bin/sh", "args", "-c", command, "cwd", cwd, "outputByteLimit",
                                 (pj_int_t)max_output),
                         NULL, 0, NULL);
    const char *tid = pj_string_value(pj_object_get(cr, "terminalId"));
    if (!tid || strlen(tid) >= sizeof out->terminal_id) {
        pj_decref(cr);
        errno = EIO;
        return -1;
    }
    snprintf(out->terminal_id, sizeof out->terminal_id, "%s", tid);
    pj_decref(cr);
    bool stopped = false;
    pj_t *w = term_call(srv, "terminal/wait_for_exit",
                        pj_pack("{s:s, s:s}", "sessionId", sid, "terminalId", out->terminal_id),
                        cancel, pb_mono_ms() + timeout_ms, &stopped);
    if (stopped) {
        out->cancelled = cancel && atomic_load(cancel);
        out->timed_out = !out->cancelled;
        pj_decref(term_call(srv, "terminal/kill",
                            pj_pack("{s:s, s:s}", "sessionId", sid, "terminalId", out->terminal_id),
                            NULL, 0, NULL));
    }
    pj_decref(w);
    pj_t *o = term_call(srv, "terminal/output",
                        pj_pack("{s:s, s:s}", "sessionId", sid, "terminalId", out->terminal_id),
                        NULL, 0, NULL);
    const char *text = pj_string_value(pj_object_get(o, "output"));
    out->output = strdup(text ? text : "");
    out->truncated = pj_is_true(pj_object_get(o, "truncated"));
    pj_t *es = pj_object_get(o, "exitStatus");
    pj_t *code = pj_object_get(es, "exitCode");
    out->exit_code = pj_is_integer(code) ? (int)pj_integer_value(code) : -1;
    if (!pj_is_integer(code) && pj_is_string(pj_object_get(es, "signal")))
        out->exit_code = 128 + 9; /* killed by a signal the client named */
    pj_decref(o);
    if (!out->output) {
        release(srv, sid, out->terminal_id);
        errno = ENOMEM;
        return -1;
    }
    if (out->cancelled) { /* no completed update will embed it */
        release(srv, sid, out->terminal_id);
        return 0;
    }
    pacp_term *t = calloc(1, sizeof *t);
    if (!t) {
        release(srv, sid, out->terminal_id);
        return 0;
    }
    snprintf(t->sid, sizeof t->sid, "%s", sid);
    snprintf(t->id, sizeof t->id, "%s", out->terminal_id);
    pthread_mutex_lock(&srv->mu);
    t->next = srv->terms;
    srv->terms = t;
    pthread_mutex_unlock(&srv->mu);
    return 0;
}

void pacp__term_after_update(pacp_server *srv, pj_t *params) {
    pj_t *content = pj_object_get(pj_object_get(params, "update"), "content");
    size_t i;
    pj_t *c;
    pj_array_foreach(content, i, c) {
        const char *tid = pj_string_value(pj_object_get(c, "terminalId"));
        if (!tid) continue;
        pacp_term *hit = NULL;
        pthread_mutex_lock(&srv->mu);
        for (pacp_term **p = &srv->terms; *p; p = &(*p)->next)
            if (!strcmp((*p)->id, tid)) {
                hit = *p;
                *p = hit->next;
                break;
            }
        pthread_mutex_unlock(&srv->mu);
        if (hit) release(srv, hit->sid, hit->id);
        free(hit);
    }
}

void pacp__term_release_all(pacp_server *srv) {
    pthread_mutex_lock(&srv->mu);
    pacp_term *t = srv->terms;
    srv->terms = NULL;
    pthread_mutex_unlock(&srv->mu);
    while (t) {
        pacp_term *n = t->next;
        release(srv, t->sid, t->id);
        free(t);
        t = n;
    }
}
