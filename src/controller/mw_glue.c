/*
 * mw_glue.c — the goal and cron middlewares (src/agent/middleware/) mounted in a
 * controller session: their tools, the /goal command, the goal's continuation after a
 * turn, the goal's plan entry, cron runs as turns of the session, and what of them is
 * kept in the session's meta.
 *
 * Kept in the meta: "goal": {"text", "met"} (restored at load: a goal survives reload
 * and compaction), "cron": the schedules' records and "cronLost": schedules of earlier
 * processes. Records are never turned back into schedules: a load only tells the cron
 * how many were lost, so cron_list says so to the model.
 */
#include "controller/ctl_impl.h"

#include "peri/json.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cron_fire(void *ctx, uint64_t id, const char *prompt) {
    return pct__prompt_cron(ctx, id, prompt);
}

int pct__mw_live(pct_sess *s, pj_t *meta) {
    pj_t *g = pj_object_get(meta, "goal");
    const char *text = pj_string_value(pj_object_get(g, "text"));
    if (text && pag_session_set_goal(s->agent, text, pj_is_true(pj_object_get(g, "met"))))
        return -1;
    if (s->read_only) return 0;
    if (!(s->cron = pag_cron_new(cron_fire, s))) return -1;
    size_t lost = pj_array_size(pj_object_get(meta, "cron"));
    pj_t *l = pj_object_get(meta, "cronLost");
    if (pj_is_integer(l) && pj_integer_value(l) > 0) lost += (size_t)pj_integer_value(l);
    pag_cron_set_lost(s->cron, lost);
    return 0;
}

void pct__mw_meta(pct_sess *s, pj_t *m) {
    bool met = false;
    char *goal = s->agent ? pag_session_goal(s->agent, &met) : NULL;
    if (goal) pj_object_set_new(m, "goal", pj_pack("{s:s, s:b}", "text", goal, "met", met));
    free(goal);
    if (!s->cron) return;
    char *rec = pag_cron_records(s->cron);
    pj_t *r = rec ? pj_loads(rec, 0, NULL) : NULL;
    free(rec);
    if (pj_array_size(r) > 0)
        pj_object_set_new(m, "cron", r);
    else
        pj_decref(r);
    size_t lost = pag_cron_lost(s->cron);
    if (lost) pj_object_set_new(m, "cronLost", pj_integer((pj_int_t)lost));
}

char *pct__goal_plan(pct_sess *s, const char *entries_json) {
    bool met = false;
    char *goal = pag_session_goal(s->agent, &met);
    char *plan = goal ? pag_goal_plan(goal, met, entries_json) : NULL;
    free(goal);
    return plan;
}

static void emit_plan(pct_sess *s, uint64_t gen, const char *entries_json) {
    char *plan = pct__goal_plan(s, entries_json);
    pag_event ev = {.kind = PAG_EV_PLAN, .turn = gen, .content_json = plan ? plan : "[]"};
    pct__emit(s, &ev);
    free(plan);
}

int pct__mw_tool(pct_sess *s, const char *name, const char *args, pag_tool_output *out) {
    if (!name) return -2;
    if (!strcmp(name, pag_goal_tool()->name)) {
        int rc = pag_goal_tool_run(s->agent, args, out);
        if (rc == 0 && !out->is_error) {
            pct__save_meta(s);
            emit_plan(s, pag_session_turn_gen(s->agent), NULL);
        }
        return rc;
    }
    if (!s->cron) return strncmp(name, "cron_", 5) ? -2 : -1;
    int rc = pag_cron_tool_run(s->cron, name, args, out);
    if (rc == 0 && strcmp(name, "cron_list")) pct__save_meta(s); /* the records */
    return rc;
}

static void say(pct_sess *s, uint64_t gen, const char *text) {
    pag_event ev = {.kind = PAG_EV_TEXT, .turn = gen, .text = text};
    pct__emit(s, &ev);
}

void pct__goal_command(pct_sess *s, uint64_t gen, const char *args) {
    char line[4200];
    if (!*args) {
        bool met = false;
        char *g = pag_session_goal(s->agent, &met);
        if (g)
            snprintf(line, sizeof line, "Goal (%s): %s", met ? "met" : "in progress", g);
        else
            snprintf(line, sizeof line, "No goal is set. Set one with /goal TEXT.");
        free(g);
        say(s, gen, line);
        return;
    }
    bool clear = !strcmp(args, "clear");
    if (pag_session_set_goal(s->agent, clear ? NULL : args, false) != 0) {
        say(s, gen, "The goal is too long (at most 4000 bytes).");
        return;
    }
    pct__save_meta(s);
    if (clear) {
        say(s, gen, "Goal cleared.");
        pag_event ev = {.kind = PAG_EV_PLAN, .turn = gen, .content_json = "[]"};
        pct__emit(s, &ev);
        return;
    }
    snprintf(line, sizeof line,
             "Goal set: %.4000s\nAfter a turn that ends without it met, the agent continues on "
             "its own (at most %d times; settings goal.maxContinuations).",
             args, s->c->settings->goal_max_continuations);
    say(s, gen, line);
    emit_plan(s, gen, NULL);
}

void pct__goal_continue(pct_sess *s, pag_turn_result *r) {
    int max = s->c->settings->goal_max_continuations;
    /* (a refusal, of the model or of a hook, is no reason to go on) */
    for (int k = 1; k <= max && r->state == PAG_TURN_COMPLETED &&
                    !(r->stop_reason && !strcmp(r->stop_reason, "refusal"));
         k++) {
        bool met = false;
        char *goal = pag_session_goal(s->agent, &met);
        if (!goal || met) {
            free(goal);
            return;
        }
        pthread_mutex_lock(&s->mu);
        bool open = s->state == SESS_OPEN;
        pthread_mutex_unlock(&s->mu);
        char *text = open ? pag_goal_continuation(goal, k, max) : NULL;
        free(goal);
        if (!text) return;
        /* the client sees what the agent told itself, as a user message of this turn */
        pag_event ev = {
            .kind = PAG_EV_USER_TEXT, .turn = pag_session_turn_gen(s->agent), .text = text};
        pct__emit(s, &ev);
        pag_session_turn(s->agent, text, r); /* a cancel ends it at its first Receive */
        pct__turn_end(s, r);
        free(text);
    }
}
