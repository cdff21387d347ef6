/*
 * goal.c — the goal middleware: a standing objective of the session.
 *
 * What it declares: a system-prompt contribution (the goal and how to say it is met,
 * pag__goal_note), one tool (`goal_complete`, by which the model declares the goal met;
 * its descriptor is in decl.c), a plan entry (the goal first in the ACP plan), and the
 * text of an automatic continuation. The host owns the rest: the `/goal` command,
 * persisting text and state in the session's meta, and continuing a turn that ended
 * without the goal met, up to the user's bound, never after a cancel.
 *
 * Invariants: the goal lives in the session (goal_mu), not in its history, so
 * compaction and /clear never drop it; a new goal starts unmet; a met goal stays shown
 * (completed) until cleared or replaced, and asks for no continuation.
 */
#include "agent/session_impl.h"

#include "peri/json.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GOAL_MAX 4000

int pag__goal_init(pag_session *s) {
    s->goal = NULL;
    s->goal_met = false;
    return pthread_mutex_init(&s->goal_mu, NULL) == 0 ? 0 : -1;
}

void pag__goal_free(pag_session *s) {
    free(s->goal);
    s->goal = NULL;
    pthread_mutex_destroy(&s->goal_mu);
}

int pag_session_set_goal(pag_session *s, const char *text, bool met) {
    char *copy = NULL;
    if (text && *text) {
        if (strlen(text) > GOAL_MAX || !(copy = strdup(text))) return -1;
    }
    pthread_mutex_lock(&s->goal_mu);
    free(s->goal);
    s->goal = copy;
    s->goal_met = copy ? met : false;
    pthread_mutex_unlock(&s->goal_mu);
    return 0;
}

char *pag_session_goal(pag_session *s, bool *met) {
    pthread_mutex_lock(&s->goal_mu);
    char *g = s->goal ? strdup(s->goal) : NULL;
    if (met) *met = s->goal_met;
    pthread_mutex_unlock(&s->goal_mu);
    return g;
}

char *pag__goal_note(pag_session *s) {
    bool met;
    char *g = pag_session_goal(s, &met);
    if (!g || met) {
        free(g);
        return NULL;
    }
    static const char head[] = "\n\n[Standing goal of this session, set by the user: ";
    static const char tail[] =
        "\nWork toward it. When it is fully met, call the goal_complete tool with a short "
        "summary of the evidence; do not call it before. If you end your answer without "
        "calling it, the session continues on its own toward the goal.]";
    size_t n = sizeof head + strlen(g) + sizeof tail;
    char *out = malloc(n);
    if (out) snprintf(out, n, "%s%s%s", head, g, tail);
    free(g);
    return out;
}

const pag_tool_info *pag_goal_tool(void) {
    return &pag__goal_tools[0];
}

int pag_goal_tool_run(pag_session *s, const char *args_json, pag_tool_output *out) {
    pj_t *a = pj_loads(args_json ? args_json : "{}", 0, NULL);
    const char *sum = pj_string_value(pj_object_get(a, "summary"));
    char msg[300];
    pthread_mutex_lock(&s->goal_mu);
    if (!s->goal) {
        snprintf(msg, sizeof msg, "There is no goal set for this session; nothing to complete.");
        out->is_error = true;
    } else if (!sum || !*sum) {
        snprintf(msg, sizeof msg, "goal_complete: \"summary\" is required");
        out->is_error = true;
    } else {
        s->goal_met = true;
        snprintf(msg, sizeof msg, "The goal is recorded as met. Finish your answer to the user.");
    }
    pthread_mutex_unlock(&s->goal_mu);
    pj_decref(a);
    out->output = strdup(msg);
    return out->output ? 0 : -1;
}

char *pag_goal_plan(const char *goal, bool met, const char *entries_json) {
    pj_t *arr = pj_array();
    char content[4100];
    snprintf(content, sizeof content, "Goal: %s", goal ? goal : "");
    pj_t *e = pj_pack("{s:s, s:s, s:s}", "content", content, "priority", "high", "status",
                      met ? "completed" : "in_progress");
    if (!arr || !e || pj_array_append_new(arr, e)) {
        pj_decref(arr);
        return NULL;
    }
    pj_t *rest = entries_json ? pj_loads(entries_json, 0, NULL) : NULL;
    size_t i;
    pj_t *x;
    pj_array_foreach(rest, i, x) {
        pj_array_append(arr, x);
    }
    pj_decref(rest);
    char *txt = pj_dumps(arr, PJ_COMPACT);
    pj_decref(arr);
    return txt;
}

char *pag_goal_continuation(const char *goal, int n, int max) {
    static const char fmt[] = "[Automatic continuation %d of %d toward the session's goal: %s\n"
                              "The goal is not met yet. Continue the work; call goal_complete "
                              "once it is met.]";
    size_t len = sizeof fmt + strlen(goal ? goal : "") + 32;
    char *t = malloc(len);
    if (t) snprintf(t, len, fmt, n, max, goal ? goal : "");
    return t;
}
