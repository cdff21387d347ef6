/*
 * middlewares.c — the middlewares the controller mounts on a session's agent (the chain
 * and its order are the agent's: src/agent/middleware/chain.c).
 *
 *   hooks     the user's "hooks" from settings and, once the user trusted that exact
 *             content (trust_gate.c), the project's; commands through placement (the
 *             controller's sandbox), MCP tool hooks through the session's pool
 *   ask_user  the ask_user tool (askuser.c), through the HITL broker
 *   subagent  the task tool (subagent.c)
 *   tasks     background shells and subagents, task_output/task_wait/task_stop (tasks.c)
 *   skills    the skill tool (host_tools.c)
 * The last four are declarative entries: their tools run through the tool_ops run function;
 * they handle no hook point.
 *
 * Invariants: s->mws and s->hooks are set before the agent exists and freed after it.
 */
#include "controller/ctl_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An MCP tool hook: the session's pool, the call's text. */
static int hook_tool(void *ctx, const char *name, const char *args, atomic_int *cancel,
                     char **text) {
    pct_sess *s = ctx;
    if (strncmp(name, "mcp__", 5) != 0) return -1; /* only MCP servers' tools */
    pag_tool_output o = {0};
    int rc = pct__run_tool(s, name, args, cancel, &o, true);
    *text = o.output;
    o.output = NULL;
    int out = rc != 0 ? -1 : o.is_error ? 1 : 0;
    pag_tool_output_clear(&o);
    return out;
}

int pct__mw_mount(pct_sess *s, pag_ports *ports) {
    pct_controller *c = s->c;
    size_t n = 0;
    if (!s->read_only) {
        pag_hooks_env env = {
            .cwd = s->cwd, .sandbox = &c->sandbox, .run_tool = hook_tool, .ctx = s, .log = c->log};
        char err[512] = "";
        const pj_t *user = pj_object_get(c->settings->doc, "hooks");
        s->hooks = pag_hooks_new(user, &env, err, sizeof err);
        if (!s->hooks && user) {
            /* bad user hooks: reported, and none of them runs */
            pb_log(&c->log, PB_LOG_WARN, "settings: %s (no hook runs)", err);
            s->hooks = pag_hooks_new(NULL, &env, err, sizeof err);
        }
        if (!s->hooks) return -1;
        s->mws[n++] = pag_hooks_middleware(s->hooks);
    }
    s->mws[n++] = (pag_middleware){.name = "ask_user"};
    s->mws[n++] = (pag_middleware){.name = "subagent"};
    s->mws[n++] = (pag_middleware){.name = "tasks"};
    s->mws[n++] = (pag_middleware){.name = "skills"};
    ports->middlewares = s->mws;
    ports->nmiddlewares = n;
    return 0;
}

void pct__mw_free(pct_sess *s) {
    pag_hooks_free(s->hooks);
    s->hooks = NULL;
}

void pct__mw_project(pct_sess *s, const pag_project_config *pc, uint64_t turn) {
    if (!s->hooks) return;
    char err[512] = "";
    if (pag_hooks_set_project(s->hooks, pc ? pc->hooks_json : NULL, err, sizeof err) != 0) {
        char line[700];
        snprintf(line, sizeof line, "The project's hooks are not used: %s\n", err);
        pag_event ev = {.kind = PAG_EV_TEXT, .turn = turn, .text = line};
        pct__emit(s, &ev);
    }
}

void pct__mw_subagent_stop(pct_sess *s, const char *agent_id, const char *stop_reason) {
    pag_hook_answer ans = {0};
    pag_hook_call hc = {
        .hook = PAG_HOOK_SUBAGENT_STOP, .agent_id = agent_id, .stop_reason = stop_reason};
    pag_session_hook(s->agent, &hc, &ans);
    pag_hook_answer_clear(&ans);
}
