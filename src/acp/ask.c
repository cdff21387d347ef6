/*
 * ask.c — questions to the user over ACP (the controller sink's ask_user: the ask_user
 * tool and MCP elicitation), rendered the way current clients render them
 * (docs/acp.md, "Questions"):
 *   - a choice question is a session/request_permission whose toolCall is the asking
 *     tool call and whose options are the choices ("choice_<i>", kind allow_once) plus
 *     "decline" (kind reject_once): every client that can approve a tool call can
 *     answer it;
 *   - a form (a free-text answer, an MCP server's requestedSchema) is an
 *     elicitation/create in form mode, sent only to a client that advertised
 *     clientCapabilities.elicitation.form; otherwise the question is not asked (NULL).
 * A pending question ends as "cancel" when the turn is cancelled, the session closes or
 * the client goes (EOF); an error answer or an unknown option is "decline". At most
 * PACP_ASK_MAX questions of one session wait for the client at a time; one more is
 * "decline" without being sent (a server cannot pile up requests on the client).
 *
 * Invariants: the answer is decoded on the reader thread into JSON text (no pj_t
 * crosses threads); each request accepts only the options it offered.
 */
#include "acp/server_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PACP_ASK_MAX 4

/* The questions of session sid waiting for the client (srv->mu held). */
static int asks_of(const pacp_server *srv, const char *sid) {
    int n = 0;
    for (const pacp_outreq *r = srv->pending; r; r = r->next)
        if (r->kind == PACP_REQ_ASK && r->ask_session && !strcmp(r->ask_session, sid)) n++;
    return n;
}

void pacp__ask_caps(pacp_server *srv, pj_t *caps) {
    pj_t *el = pj_object_get(caps, "elicitation");
    pj_t *form = pj_object_get(el, "form");
    atomic_store(&srv->elicit_form, pj_is_object(form));
}

void pacp__ask_answer(pacp_outreq *r, const pb_rpc_msg *m) {
    pj_t *ans = NULL;
    if (!m->error && m->result) {
        if (r->ask_options > 0) { /* session/request_permission */
            pj_t *oc = pj_object_get(m->result, "outcome");
            const char *kind = pj_string_value(pj_object_get(oc, "outcome"));
            const char *opt = pj_string_value(pj_object_get(oc, "optionId"));
            int i = -1;
            char tail;
            if (kind && !strcmp(kind, "selected") && opt &&
                sscanf(opt, "choice_%d%c", &i, &tail) == 1 && i >= 0 && i < r->ask_options)
                ans = pj_pack("{s:s, s:i}", "action", "accept", "choice", i);
            else if (kind && !strcmp(kind, "cancelled"))
                ans = pj_pack("{s:s}", "action", "cancel");
        } else { /* elicitation/create */
            const char *action = pj_string_value(pj_object_get(m->result, "action"));
            pj_t *content = pj_object_get(m->result, "content");
            if (action && !strcmp(action, "accept") && pj_is_object(content))
                ans = pj_pack("{s:s, s:O}", "action", "accept", "content", content);
            else if (action && !strcmp(action, "cancel"))
                ans = pj_pack("{s:s}", "action", "cancel");
        }
    }
    if (!ans) ans = pj_pack("{s:s}", "action", "decline");
    r->text = ans ? pj_dumps(ans, PJ_COMPACT) : NULL;
    pj_decref(ans);
}

/* The request's params: request_permission for a choice, elicitation/create for a form;
 * NULL when the client cannot show it. *noptions: the number of choices (0: a form). */
static pj_t *params_of(pacp_server *srv, const char *sid, pj_t *q, int *noptions) {
    const char *kind = pj_string_value(pj_object_get(q, "kind"));
    const char *msg = pj_string_value(pj_object_get(q, "message"));
    const char *call = pj_string_value(pj_object_get(q, "toolCallId"));
    const char *server = pj_string_value(pj_object_get(q, "server"));
    pj_t *options = pj_object_get(q, "options");
    *noptions = 0;
    if (!kind || !msg) return NULL;
    if (!strcmp(kind, "choice") && pj_array_size(options) > 0) {
        pj_t *opts = pj_array();
        size_t i;
        pj_t *v;
        pj_array_foreach(options, i, v) {
            char id[32];
            snprintf(id, sizeof id, "choice_%zu", i);
            pj_array_append_new(opts, pj_pack("{s:s, s:s, s:s}", "optionId", id, "name",
                                              pj_string_value(v) ? pj_string_value(v) : "", "kind",
                                              "allow_once"));
        }
        pj_array_append_new(opts, pj_pack("{s:s, s:s, s:s}", "optionId", "decline", "name",
                                          "Don't answer", "kind", "reject_once"));
        pj_t *tc =
            pj_pack("{s:s, s:s, s:s, s:s, s:[{s:s, s:{s:s, s:s}}], s:{s:{s:s, s:O}}}", "toolCallId",
                    call ? call : "peri-question", "title", msg, "kind", "other", "status",
                    "pending", "content", "type", "content", "content", "type", "text", "text", msg,
                    "_meta", "peri.question", "kind", "choice", "options", options);
        *noptions = (int)pj_array_size(options);
        return pj_pack("{s:s, s:o, s:o}", "sessionId", sid, "toolCall", tc, "options", opts);
    }
    if (!strcmp(kind, "form") && atomic_load(&srv->elicit_form)) {
        pj_t *schema = pj_object_get(q, "requestedSchema");
        if (!pj_is_object(schema)) return NULL;
        char text[4400];
        if (server && *server)
            snprintf(text, sizeof text, "[MCP server %.100s] %.4000s", server, msg);
        else
            snprintf(text, sizeof text, "%.4000s", msg);
        pj_t *p = pj_pack("{s:s, s:s, s:s, s:O}", "sessionId", sid, "mode", "form", "message", text,
                          "requestedSchema", schema);
        if (p && call) pj_object_set_new(p, "toolCallId", pj_string(call));
        return p;
    }
    return NULL;
}

char *pacp__sink_ask_user(void *ctx, const char *session_id, const char *question_json,
                          atomic_int *cancel) {
    pacp_server *srv = ctx;
    pj_t *q = pj_loads(question_json, 0, NULL);
    int nopt = 0;
    pj_t *params = q ? params_of(srv, session_id, q, &nopt) : NULL;
    pj_decref(q);
    if (!params) return NULL;
    /* the question's identity, as a permission request carries it */
    uint64_t epoch = 0;
    char turn[48] = "", attempt[48] = "";
    if (pct_session_turn_ids(srv->ctl, session_id, &epoch, turn, attempt)) {
        pct_event_ids ids = {.session_epoch = epoch,
                             .turn_id = turn[0] ? turn : NULL,
                             .attempt_id = attempt[0] ? attempt : NULL,
                             .agent_id = session_id};
        pj_t *meta = pj_object();
        if (meta) {
            pacp__ids_meta(meta, &ids);
            pj_object_set_new(params, "_meta", meta);
        }
    }
    pacp_outreq *req = calloc(1, sizeof *req);
    if (!req) {
        pj_decref(params);
        return NULL;
    }
    req->kind = PACP_REQ_ASK;
    req->ask_options = nopt;
    req->ask_session = session_id;
    pthread_mutex_lock(&srv->mu);
    bool full = asks_of(srv, session_id) >= PACP_ASK_MAX;
    bool linked = !full && !atomic_load(cancel) && pacp__outreq_link(srv, req);
    pthread_mutex_unlock(&srv->mu);
    if (!linked) {
        pj_decref(params);
        free(req);
        if (full)
            pb_log(&srv->log, PB_LOG_WARN,
                   "session %s: a question declined: %d are already waiting for the client",
                   session_id, PACP_ASK_MAX);
        return strdup(full ? "{\"action\":\"decline\"}" : "{\"action\":\"cancel\"}");
    }
    pj_t *f = pb_rpc_request(
        req->id, nopt > 0 ? "session/request_permission" : "elicitation/create", params);
    int sent = f && pacp__writer_send(&srv->w, f) == 0;
    pj_decref(f);
    char *answer = NULL;
    pthread_mutex_lock(&srv->mu);
    while (sent && !req->done && !srv->eof && !atomic_load(cancel)) {
        struct timespec dl = pb_deadline(CLOCK_REALTIME, 20); /* poll the cancel flag */
        pthread_cond_timedwait(&srv->cv, &srv->mu, &dl);
    }
    bool withdraw = sent && !req->done && !srv->eof;
    if (req->done) {
        answer = req->text;
        req->text = NULL;
    }
    pacp__outreq_unlink(srv, req);
    pthread_mutex_unlock(&srv->mu);
    if (withdraw) pacp__outreq_withdraw(srv, req->id);
    free(req->text);
    free(req);
    if (!answer) answer = strdup(sent ? "{\"action\":\"cancel\"}" : "{\"action\":\"decline\"}");
    return answer;
}
