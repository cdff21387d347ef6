/*
 * chain.c — the middleware chain: the one production order, and running a hook point
 * through it.
 *
 * The order is part of the behaviour contract (docs/middlewares.md says why each entry
 * sits where it does): it is never sorted by name, never taken from the order a host
 * passes its middlewares in, and a middleware cannot mount under a name that is not
 * listed here. "Before" hook points (session start, prompt, pre-tool, pre-compact) run
 * the chain front to back and stop at the first deny, so a later middleware never sees
 * what an earlier one refused (the user is not asked to approve a call their own hook
 * denied); "after" hook points (post-tool, stop, subagent stop) run back to front, so the
 * outermost middleware (the user's hooks) sees the final result.
 *
 * Invariants: no global mutable state (the table is const); a chain is built once per
 * session and is read-only afterwards, so hook points may run on any thread.
 */
#include "agent/middleware/chain.h"

#include <stdlib.h>
#include <string.h>

/* The production order. One line per middleware; its position is its priority. */
static const pag__mw_decl PRODUCTION[] = {
    {"hooks", NULL, NULL, NULL},                       /* the user's session hooks */
    {"goal", pag__goal_tools, NULL, NULL},             /* the session's standing objective */
    {"permission", NULL, NULL, pag__permission_mount}, /* mode gate + HITL approval */
    {"ask_user", pag__askuser_tools, NULL, NULL},      /* questions to the user (HITL) */
    {"subagent", pag__subagent_tools, NULL, NULL},     /* the task tool */
    {"tasks", pag__tasks_tools, NULL, NULL},           /* background tasks */
    {"skills", pag__skills_tools, NULL, NULL},         /* the skill tool */
    {"cron", pag__cron_tools, NULL, NULL},             /* scheduled prompts */
};
#define NPROD (sizeof PRODUCTION / sizeof PRODUCTION[0])
_Static_assert(NPROD <= PAG__CHAIN_MAX, "the chain holds every production entry");

size_t pag_chain_order(const char **names, size_t cap) {
    for (size_t i = 0; names && i < cap && i < NPROD; i++)
        names[i] = PRODUCTION[i].name;
    return NPROD;
}

int pag_chain_index(const char *name) {
    for (size_t i = 0; name && i < NPROD; i++)
        if (!strcmp(PRODUCTION[i].name, name)) return (int)i;
    return -1;
}

/* A declaration's tools end with an entry whose name is NULL. */
static size_t decl_ntools(size_t i) {
    size_t n = 0;
    while (PRODUCTION[i].tools && PRODUCTION[i].tools[n].name)
        n++;
    return n;
}

const pag_tool_info *pag_chain_tools(size_t i, size_t *ntools) {
    *ntools = i < NPROD ? decl_ntools(i) : 0;
    return *ntools ? PRODUCTION[i].tools : NULL;
}

const char *pag_chain_prompt(size_t i) {
    return i < NPROD ? PRODUCTION[i].prompt : NULL;
}

int pag__chain_build(pag__chain *c, pag_session *s, const pag_middleware *mws, size_t n) {
    memset(c, 0, sizeof *c);
    c->n = NPROD;
    for (size_t k = 0; k < n; k++) {
        int i = pag_chain_index(mws[k].name);
        if (i < 0 || c->slot[i].name) {
            memset(c, 0, sizeof *c);
            return -1;
        }
        c->slot[i] = mws[k];
        c->slot[i].name = PRODUCTION[i].name;
    }
    for (size_t i = 0; i < NPROD; i++) {
        if (c->slot[i].name || !PRODUCTION[i].mount) continue;
        if (PRODUCTION[i].mount(s, &c->slot[i]) != 0) {
            memset(c, 0, sizeof *c);
            return -1;
        }
        c->slot[i].name = PRODUCTION[i].name;
    }
    return 0;
}

static void run_one(const pag_middleware *m, const pag_hook_call *call, pag_hook_answer *ans) {
    if (!m->name || !m->on_hook || !(m->hooks & PAG_HOOK_BIT(call->hook))) return;
    m->on_hook(m->ctx, call, ans);
}

void pag__chain_run(const pag__chain *c, const pag_hook_call *call, pag_hook_answer *ans) {
    if (pag_hook_is_after(call->hook)) {
        for (size_t i = c->n; i-- > 0;)
            run_one(&c->slot[i], call, ans);
        return;
    }
    for (size_t i = 0; i < c->n && !ans->deny; i++)
        run_one(&c->slot[i], call, ans);
}

/* ---------------------------------------------------------------- hook points */

static const char *const HOOK_NAMES[PAG_HOOK_COUNT] = {
    "SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PreCompact",
    "Stop",         "SubagentStop"};

const char *pag_hook_name(pag_hook h) {
    return (unsigned)h < PAG_HOOK_COUNT ? HOOK_NAMES[h] : "unknown";
}

bool pag_hook_parse(const char *name, pag_hook *out) {
    for (unsigned i = 0; name && i < PAG_HOOK_COUNT; i++)
        if (!strcmp(HOOK_NAMES[i], name)) {
            *out = (pag_hook)i;
            return true;
        }
    return false;
}

bool pag_hook_is_after(pag_hook h) {
    return h == PAG_HOOK_POST_TOOL || h == PAG_HOOK_STOP || h == PAG_HOOK_SUBAGENT_STOP;
}

void pag_hook_answer_clear(pag_hook_answer *a) {
    free(a->reason);
    free(a->context);
    memset(a, 0, sizeof *a);
}

int pag_hook_answer_add_context(pag_hook_answer *a, const char *text) {
    if (!text || !*text) return 0;
    size_t old = a->context ? strlen(a->context) : 0, add = strlen(text);
    char *n = realloc(a->context, old + add + 2);
    if (!n) return -1;
    if (old) n[old++] = '\n';
    memcpy(n + old, text, add + 1);
    a->context = n;
    return 0;
}

int pag_hook_answer_deny(pag_hook_answer *a, const char *reason) {
    a->deny = true;
    if (a->reason) return 0;
    a->reason = strdup(reason && *reason ? reason : "denied");
    return a->reason ? 0 : -1;
}
