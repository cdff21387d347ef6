/*
 * loop.c — the native driver of the resumable turn (turn.c), and /compact and /clear.
 *
 * pag_session_turn_message runs a pag_turn to its end on the calling thread: model
 * calls through the session's blocking reason port (pm_stream over libcurl, or a test's
 * script; the port retries on its own, so WAIT only comes from drivers that feed retry
 * delays), tool calls one after another through the tool port in the order the model
 * asked for them, persistence batches through the persist port. The turn itself holds
 * every rule of the RCRA loop; this file only performs its effects.
 */
#include "agent/session_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A WAIT: sleeps in 10 ms steps, ending early when the cancel flag rises. */
static void wait_cancellable(pag_session *s, long ms) {
    while (ms > 0 && !pag__cancelled(s)) {
        long step = ms < 10 ? ms : 10;
        struct timespec ts = {0, step * 1000000L};
        nanosleep(&ts, NULL);
        ms -= step;
    }
}

/* TOOL_CALLS: each call in order: PreToolUse (in the turn), the tool port, the result. */
static void run_tools(pag_session *s, pag_turn *t, const pag_effect *fx) {
    const pag_tool_ops *ops = s->ports.tool_ops;
    for (size_t i = 0; i < fx->tools.n; i++) {
        const pag_turn_call *c = &fx->tools.calls[i];
        if (!pag_turn_tool_start(t, i)) continue;
        pag_tool_output o = {0};
        int rc =
            ops->run ? ops->run(s->ports.ctx, c->tool->name, c->arguments, s->cancelp, &o) : -1;
        pag_turn_tool_done(t, c->id, rc, &o);
    }
}

static void drive(pag_session *s, pag_turn *t, pag_turn_result *out) {
    pag_effect fx;
    for (;;) {
        switch (pag_turn_next(t, &fx)) {
        case PAG_FX_MODEL_CALL: {
            pm_response resp;
            pm_error err = {0};
            memset(&resp, 0, sizeof resp);
            pm_status st = s->ports.reason(s->ports.ctx, fx.model.request, fx.model.on_event,
                                           fx.model.ctx, s->cancelp, &resp, &err);
            pag_turn_model_done(t, st, &resp, &err, -1);
            pm_response_clear(&resp);
            break;
        }
        case PAG_FX_TOOL_CALLS: run_tools(s, t, &fx); break;
        case PAG_FX_PERSIST:
            pag_turn_persist_done(
                t, s->ports.persist ? s->ports.persist(s->ports.ctx, fx.persist.msgs, fx.persist.n)
                                    : 0);
            break;
        case PAG_FX_WAIT:
            wait_cancellable(s, fx.wait_ms);
            pag_turn_wait_done(t);
            break;
        case PAG_FX_DONE: *out = *fx.result; return;
        }
    }
}

void pag_session_turn_message(pag_session *s, pm_message *user, pag_turn_result *out) {
    memset(out, 0, sizeof *out);
    pag_turn *t = pag_turn_new(s, user);
    if (!t) {
        pm_message_clear(user);
        pag__fail(out, "internal", 0, "out of memory");
        return;
    }
    drive(s, t, out);
    pag_turn_free(t);
}

void pag_session_turn(pag_session *s, const char *user_text, pag_turn_result *out) {
    pm_message um;
    pm_message_init(&um, PM_ROLE_USER);
    if (pm_message_add_text(&um, user_text ? user_text : "") != PM_OK) {
        memset(out, 0, sizeof *out);
        pag__fail(out, "internal", 0, "out of memory");
        return;
    }
    pag_session_turn_message(s, &um, out);
    pm_message_clear(&um);
}

typedef struct turn {
    pag_session *s;
    uint64_t gen;
    pag_turn_result *out;
} turn;

static void emit(turn *t, pag_event *ev) {
    pag__emit(t->s, t->gen, ev);
}

static void set_result(turn *t, pag_turn_state st, const char *stop) {
    t->out->state = st;
    t->out->stop_reason = stop;
}

static void fail(turn *t, const char *kind, long http, const char *msg) {
    pag__fail(t->out, kind, http, msg);
}

static int persist(turn *t, const pm_message *msgs, size_t n) {
    if (!t->s->ports.persist) return 0;
    if (t->s->ports.persist(t->s->ports.ctx, msgs, n) == 0) return 0;
    fail(t, "internal", 0, "could not persist the conversation");
    return -1;
}

/* ---------------------------------------------------------------- /compact and /clear */

/* Persists a system-role marker holding `text` and starts the model's view at it. */
static int push_marker(turn *t, const char *text) {
    pm_message m;
    pm_message_init(&m, PM_ROLE_SYSTEM);
    if (pm_message_add_text(&m, text) != PM_OK) {
        fail(t, "internal", 0, "out of memory");
        return -1;
    }
    if (persist(t, &m, 1)) {
        pm_message_clear(&m);
        return -1;
    }
    if (pag__hist_push(t->s, &m)) {
        pm_message_clear(&m);
        fail(t, "internal", 0, "out of memory");
        return -1;
    }
    t->s->view = t->s->nhist - 1;
    t->s->usage_tokens = 0;
    t->s->turn_start = SIZE_MAX; /* no turn to drop behind a marker */
    return 0;
}

static void say(turn *t, const char *text) {
    pag_event e = {.kind = PAG_EV_TEXT, .text = text};
    emit(t, &e);
}

void pag_session_compact(pag_session *s, const char *instructions, pag_turn_result *out) {
    memset(out, 0, sizeof *out);
    turn t = {.s = s, .gen = atomic_load(&s->turn_gen), .out = out};
    set_result(&t, PAG_TURN_COMPLETED, "end_turn");
    size_t base = s->view <= s->nhist ? s->view : 0;
    if (s->nhist - base == 0) {
        say(&t, "Nothing to compact yet.");
        return;
    }
    pag_hook_answer ans = {0};
    pag_hook_call hc = {.hook = PAG_HOOK_PRE_COMPACT, .prompt = instructions};
    pag_session_hook(s, &hc, &ans);
    if (ans.deny) {
        char msg[700];
        snprintf(msg, sizeof msg, "Compaction blocked by a hook: %.600s", ans.reason);
        say(&t, msg);
        pag_hook_answer_clear(&ans);
        return;
    }
    pag_hook_answer_clear(&ans);
    if (!s->ports.model_name) {
        fail(&t, "llm", 0,
             s->ports.model_missing_reason ? s->ports.model_missing_reason
                                           : "no model provider configured");
        return;
    }
    char *summary = NULL;
    pm_error err = {0};
    pm_status st = pag__summarize(s, instructions, &summary, &err);
    if (st == PM_CANCELLED || (st != PM_OK && pag__cancelled(s))) {
        set_result(&t, PAG_TURN_INTERRUPTED, "cancelled");
    } else if (st != PM_OK) {
        pag__model_failure(t.out, st, &err);
    } else {
        static const char head[] = "Summary of the earlier conversation (it replaces the "
                                   "earlier messages, compacted at the user's request):\n";
        size_t k = strlen(summary) + sizeof head;
        char *marker = malloc(k);
        if (!marker) {
            fail(&t, "internal", 0, "out of memory");
        } else {
            snprintf(marker, k, "%s%s", head, summary);
            if (push_marker(&t, marker) == 0) {
                say(&t, "Conversation compacted. Summary:\n");
                say(&t, summary);
            }
        }
        free(marker);
    }
    free(summary);
}

void pag_session_clear(pag_session *s, pag_turn_result *out) {
    memset(out, 0, sizeof *out);
    turn t = {.s = s, .gen = atomic_load(&s->turn_gen), .out = out};
    set_result(&t, PAG_TURN_COMPLETED, "end_turn");
    if (push_marker(&t, "The user cleared the conversation: earlier messages are not shown.") == 0)
        say(&t, "Conversation cleared.");
}
