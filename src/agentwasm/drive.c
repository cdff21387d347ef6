/*
 * drive.c — live sessions of the reactor and the event-loop driver of the resumable
 * turn (pag_turn, docs/agent-core.md): MODEL_CALL with pm_call over pn_http, PERSIST
 * with the remote store, WAIT with a host timer, TOOL_CALLS through the tool seam,
 * DONE answered on the wire. The turn holds every rule; this file only performs its
 * effects, each as a request whose callback feeds the turn and steps it again.
 *
 * Invariants: a session has at most one turn; prompts that arrive meanwhile queue in
 * order (as the native host). A session leaves the list only when its turn unwound (a
 * close while a turn runs cancels it first), so every callback finds its session. At
 * most one of {model request, wait timer, store write} is outstanding per turn.
 */
#include "acp/projection.h"
#include "paw_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void step(paw_sess *s);
extern const pag_tool_ops paw__tool_ops;

/* ---------------------------------------------------------------- events */

static void fill_ids(paw_sess *s, pct_event_ids *ids, char *turn, char *attempt, bool replay) {
    *ids = (pct_event_ids){.session_epoch = 1, .agent_id = s->id};
    if (!replay && s->turn) {
        snprintf(turn, 48, "turn-1-%llu", (unsigned long long)s->turns);
        snprintf(attempt, 48, "attempt-1-%llu", (unsigned long long)s->turns);
        ids->turn_id = turn;
        ids->attempt_id = attempt;
    }
}

void paw__emit(paw_sess *s, const pag_event *ev) {
    pag_event e = *ev;
    e.session_id = s->id;
    e.session_seq = ++s->seq;
    pct_event_ids ids;
    char turn[48], attempt[48];
    fill_ids(s, &ids, turn, attempt, ev->replay);
    pj_t *params = pacp__update_params(&e, &ids);
    if (params) paw__notify(s->p, "session/update", params);
}

static void port_emit(void *ctx, const pag_event *ev) {
    paw__emit(ctx, ev);
}

char *paw__frozen_context(const char *cwd, int64_t now_ms) {
    static const char intro[] =
        "You are Peri, a coding agent. You run inside a WebAssembly host without a shell or "
        "a file system of your own: use the tools you are given (workspace tools come from "
        "MCP servers). Be concise.";
    char iso[PB_ISO_TIME_LEN];
    pb_iso_time(now_ms, iso); /* "YYYY-MM-DDT...": the date is its first ten bytes */
    size_t n = sizeof intro + strlen(cwd) + 128;
    char *out = malloc(n);
    if (out)
        snprintf(out, n, "%s\n\nWorking directory: %s\nToday's date (UTC): %.10s\n", intro, cwd,
                 iso);
    return out;
}

/* ---------------------------------------------------------------- sessions */

paw_sess *paw__sess_new(paw *p, const char *id, const char *cwd, const char *frozen,
                        bool read_only) {
    paw_sess *s = calloc(1, sizeof *s);
    if (!s || !(s->cwd = strdup(cwd))) {
        free(s);
        return NULL;
    }
    s->p = p;
    snprintf(s->id, sizeof s->id, "%s", id);
    s->read_only = read_only;
    s->format = 1;
    if (!(s->frozen = strdup(frozen ? frozen : ""))) {
        free(s->cwd);
        free(s);
        return NULL;
    }
    s->queue_tail = &s->queue;
    size_t ntools = 0;
    const pag_tool_info *tools = paw__tools(s, &ntools);
    pag_ports ports = {.ctx = s,
                       .tools = tools,
                       .ntools = ntools,
                       .tool_ops = &paw__tool_ops,
                       .model_name = p->model_name,
                       .model_missing_reason = p->model_missing[0] ? p->model_missing : NULL,
                       .ask_permission = paw__ask_port,
                       .emit = port_emit};
    pag_session_config cfg = {.id = s->id,
                              .cwd = s->cwd,
                              .system_prompt = frozen ? frozen : "",
                              .context_budget = p->settings.context_budget,
                              .max_steps = p->settings.max_steps,
                              .auto_compact_threshold = p->settings.auto_compact_threshold};
    if (!(s->agent = pag_session_new(&cfg, &ports))) {
        free(s->tools);
        free(s->frozen);
        free(s->cwd);
        free(s);
        return NULL;
    }
    s->next = p->sessions;
    p->sessions = s;
    return s;
}

paw_sess *paw__sess_find(paw *p, const char *id) {
    for (paw_sess *s = p->sessions; s; s = s->next)
        if (!strcmp(s->id, id)) return s;
    return NULL;
}

/* Drops the queued prompts; answer: each is answered stopReason "cancelled" first. */
static void drop_queue(paw_sess *s, bool answer) {
    while (s->queue) {
        paw_queued *q = s->queue;
        s->queue = q->next;
        if (answer) paw__reply(s->p, q->id, pj_pack("{s:s}", "stopReason", "cancelled"));
        pj_decref(q->id);
        pm_message_clear(&q->msg);
        free(q);
    }
    s->queue_tail = &s->queue;
}

static void sess_unlink_free(paw_sess *s) {
    paw *p = s->p;
    for (paw_sess **q = &p->sessions; *q; q = &(*q)->next)
        if (*q == s) {
            *q = s->next;
            break;
        }
    drop_queue(s, false);
    paw__ask_free(s, true);
    paw__mcp_session_end(p, s->id);
    free(s->tools);
    pm_call_free(s->call);
    pm_response_clear(&s->resp);
    pag_session_free(s->agent);
    pm_client_free(s->model);
    free(s->model_spec);
    pj_decref(s->meta);
    free(s->frozen);
    free(s->cwd);
    free(s);
}

void paw__sess_drop(paw_sess *s) {
    sess_unlink_free(s);
}

/* The end of a closed session without a turn: queued prompts answered cancelled, the
 * session freed, then the session/close answered {} (when one asked). */
static void finish_close(paw_sess *s) {
    drop_queue(s, true);
    pj_t *cid = s->close_id;
    s->close_id = NULL;
    paw *p = s->p;
    sess_unlink_free(s);
    if (cid) {
        paw__reply(p, cid, pj_object());
        pj_decref(cid);
    }
}

void paw__sess_free_all(paw *p) {
    while (p->sessions) {
        paw_sess *s = p->sessions;
        if (s->turn) pag_turn_free(s->turn);
        s->turn = NULL;
        while (s->tcalls) { /* their sources are gone with the ports */
            paw_tcall *tc = s->tcalls;
            s->tcalls = tc->next;
            free(tc->id);
            free(tc);
        }
        pj_decref(s->prompt_id);
        pj_decref(s->close_id);
        sess_unlink_free(s);
    }
}

/* ---------------------------------------------------------------- the turn's answer */

static void answer_turn(paw_sess *s, const pag_turn_result *r) {
    paw *p = s->p;
    pct_event_ids ids;
    char turn[48], attempt[48];
    fill_ids(s, &ids, turn, attempt, false);
    const char *outcome = r->state == PAG_TURN_FAILED        ? "failed"
                          : r->state == PAG_TURN_INTERRUPTED ? "interrupted"
                                                             : "completed";
    pj_t *n = pj_pack("{s:s, s:s}", "sessionId", s->id, "outcome", outcome);
    if (n) {
        if (r->state == PAG_TURN_FAILED)
            pj_object_set_new(n, "error",
                              pj_pack("{s:s, s:s}", "kind",
                                      r->error_kind ? r->error_kind : "internal", "message",
                                      r->message));
        else
            pj_object_set_new(n, "stopReason",
                              pj_string(r->stop_reason ? r->stop_reason : "end_turn"));
        pj_object_set_new(n, "turnId", pj_string(turn));
        pj_object_set_new(n, "attemptId", pj_string(attempt));
        pj_t *meta = pj_pack("{s:I}", "peri.sessionSeq", (pj_int_t)++s->seq);
        if (meta) {
            pacp__ids_meta(meta, &ids);
            pj_object_set_new(n, "_meta", meta);
        }
        paw__notify(p, "_peri/turn_done", n);
    }
    if (r->state == PAG_TURN_FAILED) {
        pj_t *data = pj_pack("{s:s}", "kind", r->error_kind ? r->error_kind : "internal");
        if (data && r->http_status > 0)
            pj_object_set_new(data, "status", pj_integer(r->http_status));
        paw__reply_error(p, s->prompt_id, PAW_TURN_FAILED, r->message, data);
    } else {
        paw__reply(p, s->prompt_id,
                   pj_pack("{s:s}", "stopReason", r->stop_reason ? r->stop_reason : "end_turn"));
    }
    pj_decref(s->prompt_id);
    s->prompt_id = NULL;
}

/* The session's title was stored (or cleared: title ""): the client hears it (the
 * session may be gone). */
typedef struct title_op {
    paw *p;
    char sid[PST_ID_LEN];
    char title[64];
} title_op;

static void titled(void *ud, pst_remote_result *res) {
    title_op *t = ud;
    paw_sess *s = paw__sess_find(t->p, t->sid);
    if (res->status == PST_OK && s) {
        /* ACP: title null clears the client's title */
        pag_event ev = {.kind = PAG_EV_SESSION_INFO,
                        .title = t->title[0] ? t->title : NULL,
                        .clear_title = !t->title[0],
                        .used = t->p->h.ports->wall_ms(t->p->h.ports->ctx)};
        paw__emit(s, &ev);
    }
    free(t);
}

/* Stores title (NULL: clears it) as the session's; the client hears it once stored. */
static bool rename_session(paw_sess *s, const char *title) {
    title_op *t = calloc(1, sizeof *t);
    if (!t) return false;
    t->p = s->p;
    memcpy(t->sid, s->id, PST_ID_LEN);
    snprintf(t->title, sizeof t->title, "%s", title ? title : "");
    pst_error e = {0};
    if (pst_remote_thread_rename(s->p->store, s->id, title, titled, t, &e) != PST_OK) {
        free(t);
        return false;
    }
    return true;
}

/* The first prompt the history keeps names an untitled session, as natively: its first
 * line, at most 60 bytes, cut between UTF-8 characters. Kept here at the turn's start;
 * given once the prompt is stored (a prompt a hook blocked names nothing). */
static void title_next(paw_sess *s, const pm_message *msg) {
    s->title_next[0] = '\0';
    const char *text = NULL;
    for (size_t i = 0; i < msg->nparts && !text; i++)
        if (msg->parts[i].kind == PM_PART_TEXT) text = msg->parts[i].text;
    if (s->titled || !text) return;
    size_t n = strcspn(text, "\n");
    if (n > 60) n = 60;
    while (n > 0 && ((unsigned char)text[n] & 0xC0) == 0x80)
        n--;
    memcpy(s->title_next, text, n);
    s->title_next[n] = '\0';
}

/* The turn's prompt was stored: it names the session when nothing did. */
static void name_session(paw_sess *s) {
    if (!s->titled && s->title_next[0] && s->p->store_ready && rename_session(s, s->title_next)) {
        s->titled = true;
        s->titled_now = true;
    }
    s->title_next[0] = '\0';
}

static void start_turn(paw_sess *s, pj_t *id, pm_message *msg) {
    title_next(s, msg);
    s->titled_now = false;
    s->kept_from = s->kept_to = 0;
    pag_session_begin_turn(s->agent); /* a fresh generation, the cancel flag lowered */
    s->turn = pag_turn_new(s->agent, msg);
    if (!s->turn) {
        pm_message_clear(msg);
        paw__reply_error(s->p, id, PB_RPC_INTERNAL_ERROR, "out of memory", NULL);
        pj_decref(id);
        return;
    }
    s->turns++;
    s->tel_start_ms = s->p->h.ports->wall_ms(s->p->h.ports->ctx);
    s->tel_in = s->tel_out = s->tel_calls = 0;
    s->prompt_id = id;
    s->tools_started = false;
    step(s);
}

static void turn_done(paw_sess *s, const pag_turn_result *r);

/* The refused turn's rows are hidden in the store: now its answer. */
static void refused_hidden(void *ud, pst_remote_result *res) {
    paw_sess *s = ud;
    if (res->status != PST_OK)
        paw__log(s->p, 0, "session %s: the refused turn could not be hidden: %s", s->id,
                 res->error.message);
    pag_turn_result r = s->refused;
    turn_done(s, &r);
}

/* A refused turn (ACP: the prompt and everything after it are not part of the next
 * prompt) leaves the history: the agent's now, its stored rows [from, to] hidden in the
 * thread's meta as a rewind hides them (so a load neither replays them nor gives them to
 * the model), and a name it gave is taken back. True when the answer waits for the meta
 * to be stored (refused_hidden answers it). */
static bool refused(paw_sess *s, const pag_turn_result *r, int64_t from, int64_t to, bool named) {
    if (r->state != PAG_TURN_COMPLETED || !r->stop_reason || strcmp(r->stop_reason, "refusal"))
        return false;
    if (pag_session_drop_turn(s->agent) == 0 || from <= 0 || s->read_only) return false;
    if (named && rename_session(s, NULL)) s->titled = false;
    if (!pj_is_object(s->meta)) {
        pj_decref(s->meta);
        s->meta = pj_object();
    }
    pj_t *h = pj_object_get(s->meta, "hidden");
    if (!pj_is_array(h)) {
        h = pj_array();
        if (!h || pj_object_set_new(s->meta, "hidden", h) != 0) h = NULL;
    }
    if (!h || pj_array_append_new(h, pj_pack("[I, I]", (pj_int_t)from, (pj_int_t)to)) != 0) {
        paw__log(s->p, 0, "session %s: out of memory hiding the refused turn", s->id);
        return false;
    }
    pst_error e = {0};
    if (paw__sess_save_meta(s, refused_hidden, s, &e) != PST_OK) {
        paw__log(s->p, 0, "session %s: the refused turn could not be hidden: %s", s->id, e.message);
        return false;
    }
    s->refused = *r;
    return true;
}

/* The turn ended: a refused one leaves the history first; then its answer. */
static void turn_finished(paw_sess *s, const pag_turn_result *r) {
    int64_t from = s->kept_from, to = s->kept_to;
    bool named = s->titled_now;
    s->kept_from = s->kept_to = 0;
    s->titled_now = false;
    s->title_next[0] = '\0';
    if (refused(s, r, from, to, named)) return;
    turn_done(s, r);
}

/* Answers the turn, then the next queued prompt, or the close. */
static void turn_done(paw_sess *s, const pag_turn_result *r) {
    pag_turn_result copy = *r;
    answer_turn(s, &copy);
    paw__telemetry_turn(s, &copy);
    pag_turn_free(s->turn);
    s->turn = NULL;
    pm_call_free(s->call);
    s->call = NULL;
    paw__ask_free(s, false);
    if (s->gone) { /* a close waited for this turn */
        paw *p = s->p;
        finish_close(s);
        paw__maybe_settled(p);
        return;
    }
    if (s->queue) {
        paw_queued *q = s->queue;
        s->queue = q->next;
        if (!s->queue) s->queue_tail = &s->queue;
        pj_t *id = q->id;
        pm_message m = q->msg;
        free(q);
        start_turn(s, id, &m);
    }
}

void paw__sess_prompt(paw_sess *s, pj_t *id, pm_message *msg) {
    pj_t *idc = pj_copy(id);
    if (!idc && id) {
        pm_message_clear(msg);
        paw__reply_error(s->p, id, PB_RPC_INTERNAL_ERROR, "out of memory", NULL);
        return;
    }
    if (!idc) idc = pj_null();
    if (s->turn) {
        paw_queued *q = calloc(1, sizeof *q);
        if (!q) {
            pm_message_clear(msg);
            paw__reply_error(s->p, id, PB_RPC_INTERNAL_ERROR, "out of memory", NULL);
            pj_decref(idc);
            return;
        }
        q->id = idc;
        q->msg = *msg;
        memset(msg, 0, sizeof *msg);
        *s->queue_tail = q;
        s->queue_tail = &q->next;
        return;
    }
    start_turn(s, idc, msg);
}

void paw__sess_cancel(paw_sess *s, bool clear_queue) {
    if (clear_queue) drop_queue(s, true);
    if (!s->turn) return;
    pag_turn_cancel(s->turn);
    if (s->http && !s->http->cancelled) {
        s->http->cancelled = true;
        pn_http_cancel(s->http->ud);
    }
    for (paw_tcall *tc = s->tcalls; tc; tc = tc->next)
        tc->src->cancel(tc->src->ctx, tc->handle);
    if (s->wait && !s->wait->cancelled) {
        s->wait->cancelled = true;
        s->p->h.ports->timer_cancel(s->p->h.ports->ctx, s->wait->timer);
    }
    /* last: answering the questions may end the turn (and a closed session with it) */
    paw__ask_cancel_all(s);
}

void paw__sess_close(paw_sess *s, pj_t *close_id) {
    s->gone = true;
    if (close_id) {
        pj_decref(s->close_id);
        s->close_id = pj_copy(close_id);
    }
    if (s->turn) {
        paw__sess_cancel(s, false);
        return; /* finished in turn_finished */
    }
    finish_close(s);
}

/* ---------------------------------------------------------------- MODEL_CALL */

static int on_head(void *ud, const pn_http_parser *hp) {
    paw_handle *hd = ud;
    paw_sess *s = hd->sess;
    pm_call_status(s->call, pn_http_status(hp));
    for (size_t i = 0; i < pn_http_header_count(hp); i++) {
        pn_http_header h = pn_http_header_at(hp, i);
        char line[2048];
        int n = snprintf(line, sizeof line, "%s: %s", h.name, h.value);
        if (n > 0 && (size_t)n < sizeof line) pm_call_header(s->call, line, (size_t)n);
    }
    return 0;
}

static int on_body(void *ud, const char *data, size_t len) {
    paw_handle *hd = ud;
    return pm_call_body(hd->sess->call, data, len) ? 1 : 0;
}

static void on_done(void *ud, const pn_http_result *r) {
    paw_handle *hd = ud;
    paw_sess *s = hd->sess;
    paw *p = s->p;
    pm_transport how;
    char why[300];
    why[0] = '\0';
    switch (r->err) {
    case PN_HTTP_OK: how = PM_TRANSPORT_OK; break;
    case PN_HTTP_E_TRUNCATED:
        how = PM_TRANSPORT_PARTIAL;
        snprintf(why, sizeof why, "the connection closed before the answer was complete");
        break;
    case PN_HTTP_E_CANCELLED: how = PM_TRANSPORT_CANCELLED; break;
    case PN_HTTP_E_NET:
        how = PM_TRANSPORT_FAILED;
        snprintf(why, sizeof why, "%s: %.250s", pn_err_name(r->net), r->detail);
        break;
    case PN_HTTP_E_TIMEOUT:
        how = PM_TRANSPORT_FAILED;
        snprintf(why, sizeof why, "timeout: %.250s", r->detail[0] ? r->detail : "deadline passed");
        break;
    default:
        how = PM_TRANSPORT_FAILED;
        snprintf(why, sizeof why, "%s: %.250s", pn_http_err_name(r->err), r->detail);
        break;
    }
    s->http = NULL;
    paw__handle_drop(p, hd);
    pm_status st = pm_call_end(s->call, how, why);
    long retry = pm_call_retry_ms(s->call);
    s->tel_calls++;
    s->tel_in += s->resp.usage.input_tokens;
    s->tel_out += s->resp.usage.output_tokens;
    pag_turn_model_done(s->turn, st, &s->resp, &s->perr, retry);
    pm_response_clear(&s->resp);
    if (retry < 0) {
        pm_call_free(s->call);
        s->call = NULL;
    }
    step(s);
}

/* Starts the model request of the effect; false when it could not start (the call is
 * then already answered to the turn). */
static bool model_call(paw_sess *s, const pag_effect *fx) {
    paw *p = s->p;
    pm_error e = {0};
    if (!s->call || fx->model.attempt == 0) {
        pm_call_free(s->call);
        pm_client *model = s->model_spec ? s->model : p->model;
        s->call = model ? pm_call_new(model, fx->model.request, !fx->model.summary, &e) : NULL;
        if (!s->call) {
            if (!model) {
                e.status = PM_ERR_ARG;
                snprintf(e.message, sizeof e.message, "%s",
                         p->model_missing[0] ? p->model_missing : "no model configured");
            }
            pag_turn_model_done(s->turn, e.status, NULL, &e, -1);
            return false;
        }
    }
    memset(&s->resp, 0, sizeof s->resp);
    memset(&s->perr, 0, sizeof s->perr);
    pm_call_begin(s->call, fx->model.on_event, fx->model.ctx, &s->resp, &s->perr);
    const pm_http_request *rq = pm_call_request(s->call);
    pn_http_header hs[32];
    char names[32][128];
    size_t nh = 0;
    for (size_t i = 0; i < rq->nheaders && nh < 32; i++) {
        const char *line = rq->headers[i];
        const char *c = strchr(line, ':');
        if (!c || (size_t)(c - line) >= sizeof names[0]) continue;
        snprintf(names[nh], sizeof names[0], "%.*s", (int)(c - line), line);
        c++;
        while (*c == ' ')
            c++;
        hs[nh] = (pn_http_header){.name = names[nh], .value = c};
        nh++;
    }
    paw_handle *hd = paw__handle_add(p, PAW_H_HTTP, s);
    pn_http_result fail = {0};
    pn_http_req *req = NULL;
    if (hd) {
        pn_http_callbacks cb = {
            .on_head = on_head, .on_body = on_body, .on_done = on_done, .ud = hd};
        pn_http_opts o = {.idle_ms = 300000};
        req = pn_http_request(p->h.ports, rq->url, rq->method, hs, nh, rq->body, rq->body_len, &cb,
                              &o, &fail);
    } else {
        snprintf(fail.detail, sizeof fail.detail, "out of memory");
    }
    if (!req) {
        if (hd) paw__handle_drop(p, hd);
        char why[300];
        snprintf(why, sizeof why, "%s: %.250s",
                 fail.net ? pn_err_name(fail.net) : pn_http_err_name(fail.err), fail.detail);
        pm_status st = pm_call_end(s->call, PM_TRANSPORT_FAILED, why);
        (void)st;
        pag_turn_model_done(s->turn, st, &s->resp, &s->perr, -1);
        pm_response_clear(&s->resp);
        pm_call_free(s->call);
        s->call = NULL;
        return false;
    }
    hd->ud = req;
    s->http = hd;
    return true;
}

/* ---------------------------------------------------------------- PERSIST, WAIT */

static void on_persisted(void *ud, pst_remote_result *res) {
    paw_sess *s = ud;
    s->persisting = false;
    if (res->status != PST_OK)
        paw__log(s->p, 0, "session %s: could not persist: %s", s->id, res->error.message);
    if (res->status == PST_OK && s->persist_user) { /* the turn's prompt is kept */
        s->kept_from = s->kept_to = res->value;
        name_session(s);
    } else if (res->status == PST_OK && s->kept_from > 0 && res->value > 0) {
        s->kept_to = res->value + (int64_t)s->persist_n - 1;
    }
    pag_turn_persist_done(s->turn, res->status == PST_OK ? 0 : -1);
    step(s);
}

static bool persist(paw_sess *s, const pag_effect *fx) {
    paw *p = s->p;
    size_t n = fx->persist.n;
    pst_message_in *in = calloc(n ? n : 1, sizeof *in);
    char **json = calloc(n ? n : 1, sizeof *json);
    bool ok = in && json && p->store_ready && !s->read_only;
    for (size_t i = 0; ok && i < n; i++) {
        json[i] = pm_message_to_json(&fx->persist.msgs[i]);
        in[i] =
            (pst_message_in){.role = pm_role_name(fx->persist.msgs[i].role), .content = json[i]};
        ok = json[i] != NULL;
    }
    pst_error e = {0};
    if (ok && pst_remote_messages_append(p->store, s->id, in, n, on_persisted, s, &e) != PST_OK) {
        paw__log(p, 0, "session %s: could not persist: %s", s->id, e.message);
        ok = false;
    }
    for (size_t i = 0; json && i < n; i++)
        free(json[i]);
    free(json);
    free(in);
    if (!ok) {
        pag_turn_persist_done(s->turn, -1);
        return false;
    }
    /* (the turn's user message is the only user-role batch a turn persists) */
    s->persist_user = n > 0 && fx->persist.msgs[0].role == PM_ROLE_USER;
    s->persist_n = n;
    s->persisting = true;
    return true;
}

static bool wait_retry(paw_sess *s, long ms) {
    paw *p = s->p;
    paw_handle *hd = paw__handle_add(p, PAW_H_TIMER, s);
    if (hd) {
        hd->ud = hd;
        if (p->h.ports->timer_set(p->h.ports->ctx, (uint64_t)(ms > 0 ? ms : 0), hd, &hd->timer) ==
            PN_OK) {
            s->wait = hd;
            return true;
        }
        paw__handle_drop(p, hd);
    }
    pag_turn_wait_done(s->turn); /* no timer: retry at once */
    return false;
}

void paw__handle_event(paw *p, paw_handle *hd, const pn_event *ev) {
    if (hd->kind == PAW_H_HTTP) {
        pn_http_event(hd->ud, ev); /* on_done drops hd */
        return;
    }
    if (ev->kind != PN_EV_TIMER) return;
    paw_sess *s = hd->sess;
    paw__handle_drop(p, hd);
    if (!s) return;
    s->wait = NULL;
    pag_turn_wait_done(s->turn);
    step(s);
}

/* ---------------------------------------------------------------- TOOL_CALLS */

/* The sources of session s: the reactor's, then the session's own MCP servers. */
static size_t sources_of(paw_sess *s, const paw_tool_source **out) {
    paw *p = s->p;
    size_t n = 0;
    for (size_t i = 0; i < p->nsrcs; i++)
        out[n++] = &p->srcs[i];
    const paw_tool_source *own = paw__mcp_session_source(p, s->id);
    if (own) out[n++] = own;
    return n;
}

const pag_tool_info *paw__tools(paw_sess *s, size_t *n) {
    const paw_tool_source *src[9];
    size_t nsrc = sources_of(s, src), total = 0;
    for (size_t i = 0; i < nsrc; i++) {
        size_t k = 0;
        src[i]->list(src[i]->ctx, &k);
        total += k;
    }
    pag_tool_info *m = total ? calloc(total, sizeof *m) : NULL;
    size_t used = 0;
    for (size_t i = 0; m && i < nsrc; i++) {
        size_t k = 0;
        const pag_tool_info *l = src[i]->list(src[i]->ctx, &k);
        for (size_t j = 0; j < k && used < total; j++) {
            bool dup = false;
            for (size_t u = 0; u < used && !dup; u++)
                dup = !strcmp(m[u].name, l[j].name);
            if (!dup && l[j].name) m[used++] = l[j];
        }
    }
    free(s->tools);
    s->tools = m;
    s->ntools = m ? used : 0;
    *n = s->ntools;
    return s->tools;
}

static const pag_tool_info *ops_now(void *ctx, size_t *n) {
    paw_sess *s = ctx;
    return paw__tools(s, n);
}

const pag_tool_ops paw__tool_ops = {.now = ops_now};

/* The source that offers name to session s now (first wins), or NULL. */
static const paw_tool_source *source_of(paw_sess *s, const char *name) {
    const paw_tool_source *src[9];
    size_t nsrc = sources_of(s, src);
    for (size_t i = 0; i < nsrc; i++) {
        size_t k = 0;
        const pag_tool_info *l = src[i]->list(src[i]->ctx, &k);
        for (size_t j = 0; j < k; j++)
            if (l[j].name && !strcmp(l[j].name, name)) return src[i];
    }
    return NULL;
}

static void tool_done(void *ud, int rc, pag_tool_output *out) {
    paw_tcall *tc = ud;
    paw_sess *s = tc->s;
    for (paw_tcall **q = &s->tcalls; *q; q = &(*q)->next)
        if (*q == tc) {
            *q = tc->next;
            break;
        }
    pag_tool_output none = {0};
    pag_turn_tool_done(s->turn, tc->id, rc, out ? out : &none);
    if (out) pag_tool_output_clear(out);
    free(tc->id);
    free(tc);
    if (--s->tools_pending == 0 && !s->asks_pending) step(s);
}

/* Starts call c on its source; false when it could not start (answered here). */
static bool tool_start(paw_sess *s, const pag_turn_call *c) {
    const paw_tool_source *src = source_of(s, c->name);
    paw_tcall *tc = calloc(1, sizeof *tc);
    if (tc) tc->id = strdup(c->id);
    if (src && tc && tc->id) {
        tc->s = s;
        tc->src = src;
        if (src->start(src->ctx, c->name, c->arguments ? c->arguments : "{}", tool_done, tc,
                       &tc->handle) == 0) {
            tc->next = s->tcalls;
            s->tcalls = tc;
            s->tools_pending++;
            return true;
        }
    }
    if (tc) free(tc->id);
    free(tc);
    pag_tool_output o = {.is_error = true};
    o.output = strdup(src ? "error: the tool could not be started"
                          : "error: the tool is no longer offered");
    pag_turn_tool_done(s->turn, c->id, 0, &o);
    pag_tool_output_clear(&o);
    return false;
}

static void tool_calls(paw_sess *s, const pag_effect *fx) {
    if (s->tools_started) return;
    s->tools_started = true;
    s->tools_pending++; /* held while starting: an answer inside start cannot step */
    for (size_t i = 0; i < fx->tools.n; i++) {
        if (paw__ask_begin(s, i, &fx->tools.calls[i])) continue; /* resumed on the answer */
        if (pag_turn_tool_start(s->turn, i)) tool_start(s, &fx->tools.calls[i]);
    }
    s->tools_pending--;
}

void paw__tool_resume(paw_sess *s, size_t index) {
    pag_effect fx;
    if (!s->turn || pag_turn_next(s->turn, &fx) != PAG_FX_TOOL_CALLS || index >= fx.tools.n) return;
    s->tools_pending++;
    if (pag_turn_tool_start(s->turn, index)) tool_start(s, &fx.tools.calls[index]);
    if (--s->tools_pending == 0 && !s->asks_pending) step(s);
}

/* ---------------------------------------------------------------- the loop */

static void step(paw_sess *s) {
    for (;;) {
        pag_effect fx;
        pag_effect_kind k = pag_turn_next(s->turn, &fx);
        if (k != PAG_FX_TOOL_CALLS) s->tools_started = false;
        switch (k) {
        case PAG_FX_MODEL_CALL:
            if (model_call(s, &fx)) return;
            break;
        case PAG_FX_TOOL_CALLS:
            tool_calls(s, &fx);
            if (s->tools_pending || s->asks_pending) return;
            if (pag_turn_next(s->turn, &fx) == PAG_FX_TOOL_CALLS) return; /* still waiting */
            break;
        case PAG_FX_PERSIST:
            if (persist(s, &fx)) return;
            break;
        case PAG_FX_WAIT:
            if (wait_retry(s, fx.wait_ms)) return;
            break;
        case PAG_FX_DONE: turn_finished(s, fx.result); return;
        }
    }
}
