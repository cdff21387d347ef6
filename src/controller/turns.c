/*
 * turns.c — prompt workers, cancel forwarding and Peri close for the controller.
 *
 * One worker thread per prompt; prompts of one session queue on the session's
 * condition variable, so queued input survives a cancel of the running turn.
 * Cancel answers the running prompt at once ("cancelled") and raises the gate so
 * no later event of that turn reaches the client; the worker unwinds behind it.
 * Close is cancel + settle: it succeeds once no worker of the session is alive,
 * else it reports "incomplete" and leaves the session closing for a retry.
 */
#include "controller/ctl_impl.h"

#include <errno.h>
#include "peri/json.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PCT_MAX_QUEUED    32
#define PCT_QUEUE_PREVIEW 200 /* bytes of a queued prompt's text that _peri/queue/list shows */

typedef struct pct_job {
    struct pct_job *next;
    pct_sess *s;
    char *text;       /* the prompt's text (titles) */
    pm_message msg;   /* the prompt's content (text and images) */
    void *token;      /* NULL: a cron run, which answers nobody */
    uint64_t cron_id; /* a run of this cron schedule (0: a client's prompt) */
    bool cancelled;   /* $/cancel_request while queued (s->mu) */
    char turn_id[48]; /* given when the prompt is accepted */
} job;

/* Removes j from the session's start queue (s->mu held). */
static void unqueue(pct_sess *s, job *j) {
    for (job **p = &s->qhead; *p; p = &(*p)->next) {
        if (*p == j) {
            *p = j->next;
            if (s->qtail == j) {
                s->qtail = NULL;
                for (job *k = s->qhead; k; k = k->next)
                    s->qtail = k;
            }
            break;
        }
    }
    pthread_cond_broadcast(&s->cv);
}

static void answer(pct_sess *s, void *token, const pag_turn_result *r) {
    if (token && s->c->sink.on_prompt_done) s->c->sink.on_prompt_done(s->c->sink.ctx, token, r);
}

/* The one terminal state of a turn (s->emit_mu held): the terminal event, after every
 * event of the turn, then the prompt's answer. attempt_id NULL: the prompt never ran. */
static void terminal(pct_sess *s, void *token, const char *turn_id, const char *attempt_id,
                     const pag_turn_result *r) {
    if (s->c->sink.on_turn_done) {
        pct_event_ids ids = {.session_epoch = s->epoch,
                             .turn_id = turn_id,
                             .attempt_id = attempt_id,
                             .agent_id = s->id};
        uint64_t seq = prt_next_seq_of(s->c->rt, s->id, s);
        s->c->sink.on_turn_done(s->c->sink.ctx, s->id, seq, &ids, r);
    }
    answer(s, token, r);
}

static const pag_turn_result cancelled_result = {.state = PAG_TURN_INTERRUPTED,
                                                 .stop_reason = "cancelled"};

/* The first prompt the history keeps names an untitled session (first line, at most 60
 * bytes): called once the turn stored its user message, so a prompt a hook blocked names
 * nothing (and a refused turn takes its name back, pct__turn_end). */
static void maybe_title(pct_sess *s, const char *text, uint64_t gen) {
    if (s->titled || !text) return;
    char title[64];
    size_t n = 0;
    while (text[n] && text[n] != '\n' && n < 60)
        n++;
    while (n > 0 && ((unsigned char)text[n] & 0xC0) == 0x80)
        n--; /* whole UTF-8 chars */
    if (n == 0) return;
    memcpy(title, text, n);
    title[n] = '\0';
    pst_error pe;
    if (pst_thread_rename(s->c->store, s->id, title, &pe) != PST_OK) return;
    s->titled = true;
    atomic_store(&s->titled_now, true);
    pag_event ev = {.kind = PAG_EV_SESSION_INFO, .turn = gen, .title = title, .used = pb_wall_ms()};
    pct__emit(s, &ev);
}

void pct__turn_stored(pct_sess *s, bool user, int64_t first_seq, size_t n) {
    if (user) {
        s->kept_from = first_seq;
        s->kept_to = first_seq;
        maybe_title(s, s->title_src, pag_session_turn_gen(s->agent));
        s->title_src = NULL; /* one name per turn */
    }
    if (s->kept_from > 0 && n > 0 && first_seq > 0) s->kept_to = first_seq + (int64_t)n - 1;
}

void pct__turn_end(pct_sess *s, const pag_turn_result *r) {
    int64_t from = s->kept_from, to = s->kept_to;
    bool named = atomic_exchange(&s->titled_now, false);
    s->kept_from = s->kept_to = 0;
    s->title_src = NULL;
    if (r->state != PAG_TURN_COMPLETED || !r->stop_reason || strcmp(r->stop_reason, "refusal"))
        return;
    /* ACP: after a refusal the prompt and everything after it are not part of the next
     * prompt. The agent forgets the turn; its stored rows stay, hidden as a rewind hides
     * them, so a load neither replays them nor gives them to the model. */
    if (pag_session_drop_turn(s->agent) == 0 || from <= 0) return;
    if (pct__hide_rows(s, from, to) == -1)
        pb_log(&s->c->log, PB_LOG_ERROR, "session %s: the refused turn could not be hidden", s->id);
    if (named) { /* the session was named from the refused prompt: unnamed again */
        pst_error pe;
        if (pst_thread_rename(s->c->store, s->id, NULL, &pe) == PST_OK) {
            s->titled = false;
            /* ACP: a session_info_update with title null clears the client's title */
            pag_event ev = {.kind = PAG_EV_SESSION_INFO,
                            .turn = pag_session_turn_gen(s->agent),
                            .used = pb_wall_ms(),
                            .clear_title = true};
            pct__emit(s, &ev);
        }
    }
}

/* A worker leaves: it was counted in s->workers and, answered, in s->finishing. */
static void worker_exit(pct_sess *s) {
    pct_controller *c = s->c;
    pthread_mutex_lock(&s->mu);
    s->finishing--;
    pthread_mutex_unlock(&s->mu);
    pb_count_leave(&s->mu, &s->cv, &s->workers);
    pct__sess_release(s);
    pb_count_leave(&c->mu, &c->cv, &c->workers);
}

/* True while job j must wait for its turn (s->mu held). */
static bool must_wait(pct_sess *s, job *j) {
    return s->state == SESS_OPEN && !j->cancelled && (s->running || s->qhead != j);
}

static void *worker(void *arg) {
    job *j = arg;
    pct_sess *s = j->s;
    /* Waits on s->mu alone, then decides holding emit_mu and mu (in that order, as
     * cancel does), so a cancel sees either no attempt or one whose ids are set. */
    for (;;) {
        pthread_mutex_lock(&s->mu);
        while (must_wait(s, j))
            pthread_cond_wait(&s->cv, &s->mu);
        pthread_mutex_unlock(&s->mu);
        pthread_mutex_lock(&s->emit_mu);
        pthread_mutex_lock(&s->mu);
        if (!must_wait(s, j)) break;
        pthread_mutex_unlock(&s->mu);
        pthread_mutex_unlock(&s->emit_mu);
    }
    unqueue(s, j);
    if (s->state != SESS_OPEN || j->cancelled || s->cancel_next) {
        /* Closed or cancelled while queued: the prompt never ran. A session/cancel that
         * came before this prompt could start was meant for it; prompts queued behind
         * it survive. */
        if (s->state == SESS_OPEN && !j->cancelled) s->cancel_next = false;
        s->finishing++; /* answered next: no longer an active turn for a close */
        pthread_mutex_unlock(&s->mu);
        terminal(s, j->token, j->turn_id, NULL, &cancelled_result);
        pthread_mutex_unlock(&s->emit_mu);
        goto out;
    }
    s->running = true;
    s->cur_token = j->token;
    s->cur_answered = false;
    uint64_t gen = pag_session_begin_turn(s->agent);
    atomic_store(&s->hitl_cancel, 0);
    s->cur_gen = gen;
    snprintf(s->cur_turn_id, sizeof s->cur_turn_id, "%s", j->turn_id);
    pct__attempt_id(s->cur_attempt_id, s->epoch, ++s->attempt_seq);
    pthread_mutex_unlock(&s->mu);
    pthread_mutex_unlock(&s->emit_mu);

    pct__mcp_wait(s, gen);          /* MCP servers still starting: their tools are wanted */
    pct__apply_model(s);            /* a model chosen since the last turn */
    pct__trust_before_turn(s, gen); /* project configuration: trusted content only */
    pag_turn_result r;
    if (j->cron_id) { /* the client sees what started this turn */
        pag_event ev = {.kind = PAG_EV_USER_TEXT, .turn = gen, .text = j->text};
        pct__emit(s, &ev);
    }
    s->tel_start_ms = pb_wall_ms();
    s->tel_in = s->tel_out = s->tel_calls = 0;
    if (!pct__command_run(s, &j->msg, &r)) {
        s->title_src = j->text; /* names the session once the turn stores the message */
        s->kept_from = s->kept_to = 0;
        pag_session_turn_message(s->agent, &j->msg, &r);
        pct__turn_end(s, &r);
        pct__goal_continue(s, &r); /* an unmet goal: on its own, up to the bound */
        char *spec = s->c->tel ? pct__current_model(s) : NULL;
        pct__tel_turn(s, &r, spec); /* queued for the exporter, never waited on */
        free(spec);
    }

    pthread_mutex_lock(&s->emit_mu); /* the answer follows every event of the turn */
    pthread_mutex_lock(&s->mu);
    bool answered = s->cur_answered;
    s->cur_answered = true;
    s->cur_token = NULL;
    s->running = false;
    /* The answer goes out below (or went out already): a close from here on does not
     * see an active turn, though this worker still cleans up before worker_exit. */
    s->finishing++;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    if (!answered) terminal(s, j->token, s->cur_turn_id, s->cur_attempt_id, &r);
    /* From here on, a late event of this attempt finds no running attempt: dropped. */
    pthread_mutex_lock(&s->mu);
    s->cur_gen = 0;
    s->cur_turn_id[0] = s->cur_attempt_id[0] = '\0';
    pthread_mutex_unlock(&s->mu);
    pthread_mutex_unlock(&s->emit_mu);
out:
    if (j->cron_id && s->cron) pag_cron_done(s->cron, j->cron_id); /* the next run may start */
    free(j->text);
    pm_message_clear(&j->msg);
    free(j);
    worker_exit(s);
    return NULL;
}

pct_status pct_prompt(pct_controller *c, const char *id, const char *text, void *token,
                      pct_error *err) {
    pm_message m;
    pm_message_init(&m, PM_ROLE_USER);
    if (pm_message_add_text(&m, text ? text : "") != PM_OK) {
        err->status = PCT_FAILED;
        snprintf(err->message, sizeof err->message, "out of memory");
        return PCT_FAILED;
    }
    pct_status st = pct_prompt_message(c, id, &m, token, err);
    pm_message_clear(&m);
    return st;
}

static pct_status enqueue(pct_controller *c, const char *id, pm_message *msg, void *token,
                          uint64_t cron_id, pct_error *err);

pct_status pct_prompt_message(pct_controller *c, const char *id, pm_message *msg, void *token,
                              pct_error *err) {
    return enqueue(c, id, msg, token, 0, err);
}

int pct__prompt_cron(pct_sess *s, uint64_t cron_id, const char *prompt) {
    size_t n = strlen(prompt) + 64;
    char *text = malloc(n);
    if (!text) return -1;
    snprintf(text, n, "[Scheduled prompt, cron id %llu] %s", (unsigned long long)cron_id, prompt);
    pm_message m;
    pm_message_init(&m, PM_ROLE_USER);
    pct_error err = {0};
    int rc = pm_message_add_text(&m, text) == PM_OK &&
                     enqueue(s->c, s->id, &m, NULL, cron_id, &err) == PCT_OK
                 ? 0
                 : -1;
    pm_message_clear(&m);
    free(text);
    return rc;
}

static pct_status enqueue(pct_controller *c, const char *id, pm_message *msg, void *token,
                          uint64_t cron_id, pct_error *err) {
    char *text = pm_message_text_sep(msg, "\n"); /* its text blocks, one per line */
    if (!text) {
        err->status = PCT_FAILED;
        snprintf(err->message, sizeof err->message, "out of memory");
        return PCT_FAILED;
    }
    pct_sess *s = pct__sess_get(c, id);
    if (!s) {
        free(text);
        /* Not live here: say so plainly when it is another machine's session. */
        if (pct__check_owner(c, id, err) != PCT_OK) return PCT_FOREIGN;
        err->status = PCT_NOT_FOUND;
        snprintf(err->message, sizeof err->message, "Session not found: %s", id ? id : "");
        return PCT_NOT_FOUND;
    }
    pct_status wrc = pct__sess_writable(s, err); /* another machine's or an old format */
    if (wrc != PCT_OK) {
        free(text);
        pct__sess_release(s);
        return wrc;
    }
    job *j = calloc(1, sizeof *j);
    char *t = text;
    pthread_mutex_lock(&s->mu);
    bool open = s->state == SESS_OPEN;
    bool full = s->workers >= PCT_MAX_QUEUED; /* each queued prompt holds a thread */
    bool ok = open && !full && j && t;
    if (ok) {
        s->workers++;
        pct__turn_id(j->turn_id, s->epoch, ++s->turn_seq);
        j->next = NULL;
        if (s->qtail)
            s->qtail->next = j;
        else
            s->qhead = j;
        s->qtail = j;
    }
    pthread_mutex_unlock(&s->mu);
    if (!ok) {
        free(j);
        free(t);
        pct__sess_release(s);
        err->status = !open ? PCT_CLOSING : full ? PCT_BUSY : PCT_FAILED;
        snprintf(err->message, sizeof err->message, "%s",
                 !open  ? "Session is closing"
                 : full ? "too many prompts queued on this session"
                        : "out of memory");
        return err->status;
    }
    j->s = s; /* the worker owns this reference */
    j->text = t;
    j->msg = *msg;
    pm_message_init(msg, PM_ROLE_USER);
    j->token = token;
    j->cron_id = cron_id;
    pthread_mutex_lock(&c->mu);
    c->workers++;
    pthread_mutex_unlock(&c->mu);
    if (pb_thread_detached(worker, j) != 0) {
        pthread_mutex_lock(&s->mu);
        unqueue(s, j);
        s->finishing++; /* worker_exit takes it back with the worker */
        pthread_mutex_unlock(&s->mu);
        *msg = j->msg; /* the caller keeps its content */
        free(j);
        free(t);
        worker_exit(s);
        err->status = PCT_FAILED;
        snprintf(err->message, sizeof err->message, "cannot start the prompt worker");
        return PCT_FAILED;
    }
    return PCT_OK;
}

/* Stops the running turn of s (s->mu held, s->running): gates its events, cancels the
 * agent and a pending trust question. Returns the prompt's token when this is the
 * answer to give (the caller sends the terminal "cancelled"), NULL when it was answered. */
static void *stop_running(pct_sess *s) {
    s->gate_gen = pag_session_turn_gen(s->agent);
    pag_session_cancel(s->agent);
    atomic_store(&s->trust_cancel, 1);
    atomic_store(&s->hitl_cancel, 1);
    if (s->cur_answered) return NULL;
    s->cur_answered = true;
    return s->cur_token;
}

/* Cancels the running turn of s: answers its prompt and gates its events. */
static void cancel_sess(pct_sess *s) {
    pthread_mutex_lock(&s->emit_mu);
    pthread_mutex_lock(&s->mu);
    void *token = NULL;
    if (s->running) {
        token = stop_running(s);
    } else if (s->qhead) {
        s->cancel_next = true; /* a prompt was accepted but has not started yet */
        pthread_cond_broadcast(&s->cv);
    }
    pthread_mutex_unlock(&s->mu);
    if (token) terminal(s, token, s->cur_turn_id, s->cur_attempt_id, &cancelled_result);
    pthread_mutex_unlock(&s->emit_mu);
}

/* Cancels exactly the prompt `want`: the running turn if it is that prompt's (checked
 * under the same locks as cancel_sess, so a turn that just ended is never mistaken for
 * its successor), or that queued prompt, which its worker then answers "cancelled". */
static void cancel_token(pct_sess *s, void *want) {
    pthread_mutex_lock(&s->emit_mu);
    pthread_mutex_lock(&s->mu);
    void *token = NULL;
    for (job *j = s->qhead; j; j = j->next)
        if (j->token == want) {
            j->cancelled = true;
            pthread_cond_broadcast(&s->cv);
        }
    if (s->running && s->cur_token == want && !s->cur_answered) token = stop_running(s);
    pthread_mutex_unlock(&s->mu);
    if (token) terminal(s, token, s->cur_turn_id, s->cur_attempt_id, &cancelled_result);
    pthread_mutex_unlock(&s->emit_mu);
}

/* Marks every queued prompt of s cancelled (s->mu held); returns how many. Their workers
 * answer them "cancelled" (they never ran). */
static size_t clear_queue(pct_sess *s) {
    size_t n = 0;
    for (job *j = s->qhead; j; j = j->next)
        if (!j->cancelled) {
            j->cancelled = true;
            n++;
        }
    pthread_cond_broadcast(&s->cv);
    return n;
}

/* Cancels exactly the turn turn_id (and attempt, when given): the running attempt if it is
 * that one, or that queued prompt. A turn that already ended, or an attempt that is not
 * the running one, is left alone: repeating a cancel changes nothing. */
static void cancel_turn(pct_sess *s, const char *turn_id, const char *attempt_id) {
    pthread_mutex_lock(&s->emit_mu);
    pthread_mutex_lock(&s->mu);
    void *token = NULL;
    for (job *j = s->qhead; j; j = j->next)
        if (!strcmp(j->turn_id, turn_id) && !attempt_id) {
            j->cancelled = true;
            pthread_cond_broadcast(&s->cv);
        }
    if (s->running && !s->cur_answered && !strcmp(s->cur_turn_id, turn_id) &&
        (!attempt_id || !strcmp(s->cur_attempt_id, attempt_id)))
        token = stop_running(s);
    pthread_mutex_unlock(&s->mu);
    if (token) terminal(s, token, s->cur_turn_id, s->cur_attempt_id, &cancelled_result);
    pthread_mutex_unlock(&s->emit_mu);
}

void pct_cancel_ex(pct_controller *c, const char *id, const pct_cancel_opts *o) {
    pct_sess *s = pct__sess_get(c, id);
    if (!s) return;
    if (o && o->turn_id)
        cancel_turn(s, o->turn_id, o->attempt_id);
    else
        cancel_sess(s);
    if (o && o->clear_queue) {
        pthread_mutex_lock(&s->mu);
        clear_queue(s);
        s->cancel_next = false; /* nothing is left for it to be meant for */
        pthread_mutex_unlock(&s->mu);
    }
    pct__sess_release(s);
}

/* The closing guard of a state-changing request (s->mu held). */
static pct_status open_or_closing(pct_sess *s, pct_error *err) {
    if (s->state == SESS_OPEN) return PCT_OK;
    err->status = PCT_CLOSING;
    snprintf(err->message, sizeof err->message, "Session is closing");
    return PCT_CLOSING;
}

static pct_sess *live_sess(pct_controller *c, const char *id, pct_error *err) {
    pct_sess *s = pct__sess_get(c, id);
    if (!s) {
        err->status = PCT_NOT_FOUND;
        snprintf(err->message, sizeof err->message, "Session not found: %.100s", id ? id : "");
    }
    return s;
}

pct_status pct_queue_list(pct_controller *c, const char *id, char **json_out, pct_error *err) {
    *json_out = NULL;
    pct_sess *s = live_sess(c, id, err);
    if (!s) return PCT_NOT_FOUND;
    pj_t *arr = pj_array();
    pthread_mutex_lock(&s->mu);
    for (job *j = s->qhead; arr && j; j = j->next) {
        if (j->cancelled) continue;
        /* the start of the prompt's text, whole UTF-8 characters */
        size_t n = j->text ? strlen(j->text) : 0;
        if (n > PCT_QUEUE_PREVIEW) {
            n = PCT_QUEUE_PREVIEW;
            while (n > 0 && ((unsigned char)j->text[n] & 0xC0) == 0x80)
                n--;
        }
        pj_t *o = pj_pack("{s:s, s:s%}", "turnId", j->turn_id, "text", j->text ? j->text : "", n);
        if (!o || pj_array_append_new(arr, o)) {
            pj_decref(arr);
            arr = NULL;
        }
    }
    pthread_mutex_unlock(&s->mu);
    pct__sess_release(s);
    *json_out = arr ? pj_dumps(arr, PJ_COMPACT) : NULL;
    pj_decref(arr);
    if (!*json_out) {
        err->status = PCT_FAILED;
        snprintf(err->message, sizeof err->message, "out of memory");
        return PCT_FAILED;
    }
    return PCT_OK;
}

pct_status pct_queue_clear(pct_controller *c, const char *id, size_t *cleared, pct_error *err) {
    *cleared = 0;
    pct_sess *s = live_sess(c, id, err);
    if (!s) return PCT_NOT_FOUND;
    pthread_mutex_lock(&s->mu);
    pct_status rc = open_or_closing(s, err);
    if (rc == PCT_OK) {
        *cleared = clear_queue(s);
        s->cancel_next = false;
    }
    pthread_mutex_unlock(&s->mu);
    pct__sess_release(s);
    return rc;
}

pct_status pct__sess_guard(pct_sess *s, pct_error *err) {
    pthread_mutex_lock(&s->mu);
    pct_status rc = open_or_closing(s, err);
    pthread_mutex_unlock(&s->mu);
    return rc;
}

void pct_cancel_prompt(pct_controller *c, const char *id, void *token) {
    pct_sess *s = pct__sess_get(c, id);
    if (!s) return;
    cancel_token(s, token);
    pct__sess_release(s);
}

void pct_cancel(pct_controller *c, const char *id) {
    pct_sess *s = pct__sess_get(c, id);
    if (!s) return;
    cancel_sess(s);
    pct__sess_release(s);
}

bool pct_session_turn_ids(pct_controller *c, const char *id, uint64_t *epoch, char turn[48],
                          char attempt[48]) {
    pct_sess *s = pct__sess_get(c, id);
    if (!s) return false;
    pthread_mutex_lock(&s->mu);
    *epoch = s->epoch;
    memcpy(turn, s->cur_turn_id, 48);
    memcpy(attempt, s->cur_attempt_id, 48);
    pthread_mutex_unlock(&s->mu);
    pct__sess_release(s);
    return true;
}

bool pct_session_closing(pct_controller *c, const char *id) {
    pct_sess *s = pct__sess_get(c, id);
    if (!s) return false;
    pthread_mutex_lock(&s->mu);
    bool closing = s->state != SESS_OPEN;
    pthread_mutex_unlock(&s->mu);
    pct__sess_release(s);
    return closing;
}

/* Why a close cannot settle yet; NULL when it can (s->mu held). The reasons, most
 * specific first, and their fixed messages. */
static const char *unsettled(pct_sess *s, const char **message) {
    if (atomic_load(&s->subagents) > 0) {
        *message = "Session close incomplete: a subagent has not handed over";
        return "subagent";
    }
    if (s->workers - s->finishing > 0) {
        *message = "Session close incomplete: prompt is still active";
        return "active_turn";
    }
    if (s->live_tasks > 0) {
        *message = "Session close incomplete: a background task is still running";
        return "background_task";
    }
    if (s->mcp_pending) {
        *message = "Session close incomplete: a background task is still running (MCP servers "
                   "starting)";
        return "background_task";
    }
    return NULL;
}

/* Peri close, in its fixed order: stop input (closing: no new prompt, queued ones leave) ->
 * cancel owned tasks (the turn, its subagents, background tasks) -> join with a deadline -> abort
 * what did not stop (the gate stays raised; a starting MCP pool is closed by its connector) ->
 * persist (the close intent, the store's settlement) -> drain (the emit lock) -> unmap.
 * Success only when every step settled; otherwise PCT_INCOMPLETE with the reason, and the
 * session stays closing for a retry. */
static pct_status close_with_grace(pct_controller *c, const char *id, long grace_ms, pct_error *err,
                                   const char **reason) {
    *reason = NULL;
    pct_sess *s = pct__sess_get(c, id);
    if (!s) return PCT_OK; /* closed already, or never live: nothing to settle */
    pthread_mutex_lock(&s->mu);
    if (s->state == SESS_OPEN) s->state = SESS_CLOSING;
    pthread_cond_broadcast(&s->cv); /* queued workers see the state and leave */
    pthread_mutex_unlock(&s->mu);
    atomic_store(&s->oauth_stop, 1); /* a pending MCP OAuth login ends */
    pag_cron_stop(s->cron);          /* scheduled prompts end with the session */
    cancel_sess(s);
    pct__tasks_cancel(s); /* owned tasks end with the session */
    struct timespec dl;
    dl = pb_deadline(CLOCK_REALTIME, grace_ms);
    pthread_mutex_lock(&s->mu);
    const char *message = NULL;
    while (unsettled(s, &message)) {
        if (pthread_cond_timedwait(&s->cv, &s->mu, &dl) == ETIMEDOUT) break;
    }
    *reason = unsettled(s, &message);
    if (*reason && s->running) pag_session_cancel(s->agent); /* abort: raised again */
    bool intent = !*reason && !s->read_only && !s->close_intent_ms;
    if (intent) s->close_intent_ms = pb_wall_ms();
    pthread_mutex_unlock(&s->mu);
    if (!*reason && !s->read_only) {
        /* The close intent is kept before close reports success. */
        if (intent && pct__save_meta(s) != 0) {
            pthread_mutex_lock(&s->mu);
            s->close_intent_ms = 0; /* the retry writes it again */
            pthread_mutex_unlock(&s->mu);
            *reason = "close_intent_not_persisted";
            message = "Session close incomplete: the close could not be recorded in the store";
        } else if (atomic_load(&s->persist_bad)) {
            /* A history write failed: settled only once the store answers again. */
            pst_thread th;
            if (pst_thread_get(c->store, s->id, &th, NULL) == PST_OK) {
                pst_thread_clear(&th);
                atomic_store(&s->persist_bad, false);
            } else {
                *reason = "store_settlement_unknown";
                message = "Session close incomplete: the store did not confirm the session's "
                          "history";
            }
        }
    }
    pct_status rc = PCT_OK;
    if (!*reason) {
        pthread_mutex_lock(&s->emit_mu); /* drain: no emission of s is in flight */
        pthread_mutex_lock(&s->mu);
        s->state = SESS_CLOSED;
        pthread_mutex_unlock(&s->mu);
        pthread_mutex_unlock(&s->emit_mu);
        pct_sess *mapped = prt_remove(c->rt, id);
        if (mapped) pct__sess_release(mapped);
    } else {
        if (err) {
            err->status = PCT_INCOMPLETE;
            snprintf(err->message, sizeof err->message, "%s", message);
        }
        rc = PCT_INCOMPLETE;
    }
    pct__sess_release(s);
    return rc;
}

pct_status pct_close_why(pct_controller *c, const char *id, pct_error *err, const char **reason) {
    return close_with_grace(c, id, c->settings->close_grace_ms, err, reason);
}

pct_status pct_close(pct_controller *c, const char *id, pct_error *err) {
    const char *reason;
    return close_with_grace(c, id, c->settings->close_grace_ms, err, &reason);
}

void pct_close_all(pct_controller *c, long wait_ms) {
    char *ids[256];
    for (;;) {
        size_t n = prt_list(c->rt, ids, 256);
        if (n == 0) break;
        size_t incomplete = 0;
        for (size_t i = 0; i < n; i++) {
            const char *reason;
            if (close_with_grace(c, ids[i], wait_ms, NULL, &reason) != PCT_OK) incomplete++;
            free(ids[i]);
        }
        if (incomplete == n) break; /* nothing more will settle within the budget */
    }
}
