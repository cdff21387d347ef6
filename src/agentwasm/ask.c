/*
 * ask.c — the permission gate of the reactor. The agent core's permission middleware
 * asks through a port that must answer at once, and the module's one thread can never
 * block on the client. So the question is asked *before* the call starts: when a call
 * would ask (its tool needs permission, the mode asks, neither settings nor an "always"
 * answer decide), the driver sends session/request_permission and holds the call; the
 * client's answer (any time later, from paw__ask_answer) is recorded, then the call is
 * started, and the middleware's port reads the recorded answer. A turn that is cancelled
 * (or a session closed) answers every open question "cancelled".
 *
 * Invariants: an open question belongs to the running turn of its session; it is
 * answered exactly once (client answer or cancel); a late client answer to a question
 * already answered is ignored. Only the options offered are accepted; anything else
 * (an error, an unknown option) refuses.
 */
#include "acp/projection.h"
#include "paw_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A remembered "always" answer for tool: 1 allow, 0 reject, -1 none. */
static int remembered(const paw_sess *s, const char *tool) {
    for (size_t i = 0; i < s->nalways; i++)
        if (!strcmp(s->always[i] + 1, tool)) return s->always[i][0] == '+';
    return -1;
}

static void remember(paw_sess *s, const char *tool, bool allow) {
    char **n = realloc(s->always, (s->nalways + 1) * sizeof *n);
    if (!n) return;
    s->always = n;
    size_t len = strlen(tool) + 2;
    char *e = malloc(len);
    if (!e) return;
    snprintf(e, len, "%c%s", allow ? '+' : '-', tool);
    s->always[s->nalways++] = e;
}

/* Whether the mode sends this tool's calls to the user (the permission middleware's own
 * rule: plan mode refuses by itself, bypass runs, acceptEdits runs edits). */
static bool mode_asks(const paw_sess *s, const pag_tool_info *t) {
    if (!t || !t->needs_permission) return false;
    switch (pag_session_mode(s->agent)) {
    case PAG_MODE_DEFAULT: return true;
    case PAG_MODE_ACCEPT_EDITS: return !(t->kind && !strcmp(t->kind, "edit"));
    default: return false;
    }
}

bool paw__ask_begin(paw_sess *s, size_t index, const pag_turn_call *c) {
    paw *p = s->p;
    if (!mode_asks(s, c->tool) || pag_settings_allows(&p->settings, c->name) ||
        remembered(s, c->name) >= 0)
        return false;
    paw_ask *a = calloc(1, sizeof *a);
    if (!a || !(a->call_id = strdup(c->id)) || !(a->tool = strdup(c->name))) {
        if (a) free(a->call_id);
        free(a);
        return false; /* the port then refuses: not allowed by settings */
    }
    a->s = s;
    a->index = index;
    a->outcome = -1;
    a->rid = p->next_out_id++;
    pj_t *tc = pj_pack("{s:s, s:s, s:s, s:s}", "toolCallId", c->id, "title", c->name, "kind",
                       c->tool->kind ? c->tool->kind : "other", "status", "pending");
    pj_t *ri = c->arguments ? pj_loads(c->arguments, 0, NULL) : NULL;
    if (tc && ri) pj_object_set_new(tc, "rawInput", ri);
    char always[160], never[160];
    snprintf(always, sizeof always, "Always allow %.60s in this session", c->name);
    snprintf(never, sizeof never, "Always reject %.60s in this session", c->name);
    pj_t *params = tc ? pj_pack("{s:s, s:o, s:[{s:s, s:s, s:s}, {s:s, s:s, s:s}, {s:s, s:s, "
                                "s:s}, {s:s, s:s, s:s}]}",
                                "sessionId", s->id, "toolCall", tc, "options", "optionId",
                                "allow_once", "name", "Allow once", "kind", "allow_once",
                                "optionId", "allow_always", "name", always, "kind", "allow_always",
                                "optionId", "reject_once", "name", "Reject", "kind", "reject_once",
                                "optionId", "reject_always", "name", never, "kind", "reject_always")
                      : NULL;
    if (params) {
        char turn[48], attempt[48];
        snprintf(turn, sizeof turn, "turn-1-%llu", (unsigned long long)s->turns);
        snprintf(attempt, sizeof attempt, "attempt-1-%llu", (unsigned long long)s->turns);
        pct_event_ids ids = {
            .session_epoch = 1, .turn_id = turn, .attempt_id = attempt, .agent_id = s->id};
        pj_t *meta = pj_object();
        if (meta) {
            pacp__ids_meta(meta, &ids);
            pj_object_set_new(params, "_meta", meta);
        }
    }
    if (!params || paw__send(p, pb_rpc_request(a->rid, "session/request_permission", params))) {
        free(a->call_id);
        free(a->tool);
        free(a);
        return false;
    }
    a->next = s->asks;
    s->asks = a;
    s->asks_pending++;
    return true;
}

pag_permission paw__ask_port(void *ctx, const pag_event *call, atomic_int *cancel) {
    (void)cancel;
    paw_sess *s = ctx;
    const char *tool = call->tool_name ? call->tool_name : "";
    for (paw_ask *a = s->asks; a; a = a->next)
        if (a->outcome >= 0 && call->tool_call_id && !strcmp(a->call_id, call->tool_call_id))
            return (pag_permission)a->outcome;
    int r = remembered(s, tool);
    if (r >= 0) return r ? PAG_PERM_ALLOW : PAG_PERM_REJECT;
    if (pag_settings_allows(&s->p->settings, tool)) return PAG_PERM_ALLOW;
    paw__log(s->p, 1,
             "session %s: %s denied: not allowed by settings (permissions.allow) and "
             "the client could not be asked",
             s->id, tool);
    return PAG_PERM_REJECT;
}

/* Records a's outcome and lets its call go on. */
static void settle(paw_ask *a, pag_permission outcome) {
    paw_sess *s = a->s;
    a->outcome = (int)outcome;
    if (outcome == PAG_PERM_ALLOW_ALWAYS) {
        remember(s, a->tool, true);
        a->outcome = PAG_PERM_ALLOW;
    } else if (outcome == PAG_PERM_REJECT_ALWAYS) {
        remember(s, a->tool, false);
        a->outcome = PAG_PERM_REJECT;
    }
    s->asks_pending--;
    paw__tool_resume(s, a->index);
}

void paw__ask_cancel_all(paw_sess *s) {
    for (paw_ask *a = s->asks; a; a = a->next)
        if (a->outcome < 0) settle(a, PAG_PERM_CANCELLED);
}

bool paw__ask_answer(paw *p, const pb_rpc_msg *m) {
    if (!pj_is_integer(m->id)) return false;
    pj_int_t rid = pj_integer_value(m->id);
    for (paw_sess *s = p->sessions; s; s = s->next)
        for (paw_ask *a = s->asks; a; a = a->next) {
            if (a->rid != rid) continue;
            if (a->outcome >= 0) return true; /* already answered (cancelled): ignored */
            pag_permission o = (pag_permission)pacp__perm_outcome(m->result, false);
            if (o == PAG_PERM_ALLOW_PROJECT) o = PAG_PERM_REJECT; /* not offered here */
            settle(a, o);
            return true;
        }
    return false;
}

void paw__ask_free(paw_sess *s, bool remembered_too) {
    while (s->asks) {
        paw_ask *a = s->asks;
        s->asks = a->next;
        free(a->call_id);
        free(a->tool);
        free(a);
    }
    s->asks_pending = 0;
    if (!remembered_too) return;
    for (size_t i = 0; i < s->nalways; i++)
        free(s->always[i]);
    free(s->always);
    s->always = NULL;
    s->nalways = 0;
}
