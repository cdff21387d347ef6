/*
 * subagent.c — the `task` tool: a subagent runs a self-contained task in a child thread.
 *
 * The child is a stored thread with parent_thread_id = the parent session, the parent's
 * frozen context, mode and model, and its own tool subset (read-only tools by default,
 * never `task` or `todo`). It runs on the parent's worker thread inside the parent's
 * tool call, follows the parent's cancel flag (so cancelling the parent cancels it),
 * asks permission through the parent's broker, persists its own messages and reports
 * its tool calls (and, as in_progress content of the task call, its text so far) to the
 * client as updates of the parent session carrying
 * _meta {"peri.parentToolCallId", "peri.childSessionId"}, their ids scoped as
 * "<task call id>/<child call id>". Its final answer is the task
 * tool's result (or, with "background": true, a background task's, tasks.c: several
 * subagents then run at once, each with its own agent id). The user's tool hooks run on
 * its calls; its end is the parent's
 * SubagentStop hook point. The child is not mapped in the runtime while it runs.
 */
#include "controller/ctl_impl.h"

#include "peri/json.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct child {
    pct_sess *parent;
    char id[PST_ID_LEN];
    char call_id[128];
    char *meta_json; /* {"peri.parentToolCallId":..,"peri.childSessionId":..} */
    uint64_t parent_gen;
    char *text; /* the child's answer text so far (progress of the task call) */
    size_t text_len;
    pm_client *client;
    pag_tool_info *tools;
    size_t ntools;
} child;

static pm_status c_reason(void *ctx, const pm_request *req, pm_event_fn on_event, void *ev_ctx,
                          atomic_int *cancel, pm_response *out, pm_error *err) {
    child *ch = ctx;
    if (!ch->client && !(ch->client = pm_client_new(&ch->parent->model_cfg, err))) {
        memset(out, 0, sizeof *out);
        return err->status;
    }
    return pm_stream(ch->client, req, on_event, ev_ctx, cancel, out, err);
}

static int c_run_tool(void *ctx, const char *name, const char *args, atomic_int *cancel,
                      pag_tool_output *out) {
    child *ch = ctx;
    return pct__run_tool(ch->parent, name, args, cancel, out, true);
}

static char *c_title(void *ctx, const char *name, const char *args) {
    (void)ctx;
    return pct__tool_title(name, args);
}

/* A child's tools: the parent's list as it was at the spawn, run through the parent and
 * gated as the parent's are (the list's own needs_permission flags, then the call's). */
static const pag_tool_ops child_tools = {
    .run = c_run_tool, .title = c_title, .needs_permission = pct__tool_needs_permission};

/* The parent's broker: remembered answers, project list, then the client. */
static pag_permission c_ask(void *ctx, const pag_event *call, atomic_int *cancel) {
    child *ch = ctx;
    pag_event e = *call;
    char id[300];
    snprintf(id, sizeof id, "%s/%s", ch->call_id, call->tool_call_id ? call->tool_call_id : "");
    e.tool_call_id = id;
    e.meta_json = ch->meta_json;
    return pct__port_ask(ch->parent, &e, cancel);
}

static int c_persist(void *ctx, const pm_message *msgs, size_t n) {
    child *ch = ctx;
    pst_error e;
    return pct__persist(ch->parent->c->store, ch->id, msgs, n, NULL, &e) == 0 ? 0 : -1;
}

/* The task call's progress: an in_progress update whose content is the child's text so
 * far (sent when the child starts a tool or finishes). */
static void progress(child *ch) {
    if (!ch->text_len) return;
    pj_t *c = pj_pack("[{s:s, s:{s:s, s:s}}]", "type", "content", "content", "type", "text", "text",
                      ch->text);
    char *cj = c ? pj_dumps(c, PJ_COMPACT) : NULL;
    pj_decref(c);
    if (!cj) return;
    pag_event up = {.kind = PAG_EV_TOOL_UPDATE,
                    .turn = ch->parent_gen,
                    .tool_call_id = ch->call_id,
                    .status = "in_progress",
                    .content_json = cj,
                    .meta_json = ch->meta_json};
    pct__emit(ch->parent, &up);
    free(cj);
}

static void c_emit(void *ctx, const pag_event *ev) {
    child *ch = ctx;
    if (ev->kind == PAG_EV_TEXT && ev->text) {
        size_t n = strlen(ev->text);
        char *nt = ch->text_len + n < (1u << 20) ? realloc(ch->text, ch->text_len + n + 1) : NULL;
        if (nt) {
            memcpy(nt + ch->text_len, ev->text, n + 1);
            ch->text = nt;
            ch->text_len += n;
        }
        return;
    }
    if (ev->kind != PAG_EV_TOOL_CALL && ev->kind != PAG_EV_TOOL_UPDATE) return;
    if (ev->kind == PAG_EV_TOOL_CALL) progress(ch);
    pag_event copy = *ev;
    char id[300];
    /* The child's call ids are its model's: scoped under the task's call id so they
     * cannot collide with the parent's. */
    snprintf(id, sizeof id, "%s/%s", ch->call_id, ev->tool_call_id ? ev->tool_call_id : "");
    copy.tool_call_id = id;
    copy.turn = ch->parent_gen; /* gated with the parent's turn */
    copy.replay = false;
    copy.meta_json = ch->meta_json;
    pct__emit_agent(ch->parent, &copy, ch->id); /* the subagent's own event */
}

static const char *const default_tools[] = {"read", "list", "glob", "grep", "skill"};

static bool wanted(pj_t *list, const char *name) {
    /* the session's own plan, goal, schedules and background tasks are not a subagent's */
    if (!strcmp(name, "task") || !strcmp(name, "todo") || !strcmp(name, "goal_complete") ||
        !strncmp(name, "cron_", 5) || !strncmp(name, "task_", 5))
        return false;
    if (!pj_is_array(list)) {
        for (size_t i = 0; i < sizeof default_tools / sizeof default_tools[0]; i++)
            if (!strcmp(default_tools[i], name)) return true;
        return false;
    }
    size_t i;
    pj_t *v;
    pj_array_foreach(list, i, v) {
        if (pj_is_string(v) && !strcmp(pj_string_value(v), name)) return true;
    }
    return false;
}

static int fail_out(pag_tool_output *out, const char *msg) {
    out->output = strdup(msg);
    out->is_error = true;
    return out->output ? 0 : -1;
}

static int run_child(pct_sess *s, const char *args, atomic_int *cancel, pag_tool_output *out,
                     const char *call_id, const char *model, char agent_id[PST_ID_LEN]) {
    pj_t *a = pj_loads(args ? args : "{}", 0, NULL);
    const char *desc = pj_string_value(pj_object_get(a, "description"));
    const char *prompt = pj_string_value(pj_object_get(a, "prompt"));
    if (!pj_is_object(a) || !prompt || !*prompt) {
        pj_decref(a);
        return fail_out(out, "task: \"prompt\" (and \"description\") are required");
    }
    child ch = {.parent = s, .parent_gen = pag_session_turn_gen(s->agent)};
    snprintf(ch.call_id, sizeof ch.call_id, "%s", call_id);
    pct_controller *c = s->c;
    ch.tools = calloc(c->ntools, sizeof *ch.tools);
    int rc = -1;
    pag_session *agent = NULL;
    pst_thread parent, th;
    memset(&th, 0, sizeof th);
    pst_error pe;
    if (!ch.tools) goto out;
    for (size_t i = 0; i < c->ntools; i++)
        if (wanted(pj_object_get(a, "tools"), c->tools[i].name))
            ch.tools[ch.ntools++] = c->tools[i];
    if (pst_thread_get(c->store, s->id, &parent, &pe) != PST_OK) {
        rc = fail_out(out, "task: the parent thread cannot be read");
        goto out;
    }
    char *spec = pct__current_model(s);
    pj_t *meta = pj_pack("{s:s, s:s}", "frozenContext", s->frozen ? s->frozen : "", "mode",
                         pag_mode_id(pag_session_mode(s->agent)));
    if (meta && spec) pj_object_set_new(meta, "model", pj_string(spec));
    char *meta_txt = meta ? pj_dumps(meta, PJ_COMPACT) : NULL;
    pj_decref(meta);
    char title[128];
    snprintf(title, sizeof title, "%.100s", desc ? desc : "subagent task");
    pst_thread_new tn = {.workspace_id = parent.workspace_id,
                         .parent_id = s->id,
                         .title = title,
                         .model = spec,
                         .meta = meta_txt};
    pst_status ps = meta_txt ? pst_thread_create(c->store, &tn, &th, &pe) : PST_ERR_NOMEM;
    free(meta_txt);
    free(spec);
    pst_thread_clear(&parent);
    if (ps != PST_OK) {
        rc = fail_out(out, "task: the child thread cannot be created");
        goto out;
    }
    memcpy(ch.id, th.id, PST_ID_LEN);
    if (agent_id) memcpy(agent_id, th.id, PST_ID_LEN);
    pj_t *m =
        pj_pack("{s:s, s:s}", "peri.parentToolCallId", ch.call_id, "peri.childSessionId", ch.id);
    ch.meta_json = m ? pj_dumps(m, PJ_COMPACT) : NULL;
    pj_decref(m);
    /* the user's tool hooks apply to the child's calls too (its own session start,
     * prompt and stop are the parent's SubagentStop) */
    pag_middleware child_mw[1];
    size_t nchild_mw = 0;
    if (s->hooks) {
        child_mw[0] = pag_hooks_middleware(s->hooks);
        child_mw[0].hooks = PAG_HOOK_BIT(PAG_HOOK_PRE_TOOL) | PAG_HOOK_BIT(PAG_HOOK_POST_TOOL);
        nchild_mw = 1;
    }
    pag_ports ports = {.ctx = &ch,
                       .reason = c_reason,
                       .model_name = NULL,
                       .tools = ch.tools,
                       .ntools = ch.ntools,
                       .tool_ops = &child_tools,
                       .ask_permission = c_ask,
                       .persist = c_persist,
                       .emit = c_emit,
                       .middlewares = child_mw,
                       .nmiddlewares = nchild_mw};
    pag_session_config sc = {.id = ch.id,
                             .cwd = s->cwd,
                             .system_prompt = s->frozen,
                             .context_budget = c->settings->context_budget,
                             .max_steps = c->settings->max_steps};
    agent = ch.meta_json ? pag_session_new(&sc, &ports) : NULL;
    if (!agent) goto out;
    /* Same model as the parent: the spec it had when the call was made (on the worker
     * thread, or copied when a background task started). */
    const char *name = NULL;
    pm_config cfg;
    char missing[256];
    if (pag_settings_model_spec(c->settings, model, &cfg, &name, missing, sizeof missing) != 0)
        name = NULL;
    pag_session_set_model(agent, name, missing);
    pag_session_set_mode(agent, pag_session_mode(s->agent));
    pag_session_link_cancel(agent, cancel);
    pag_session_begin_turn(agent);
    pag_turn_result r;
    pag_session_turn(agent, prompt, &r);
    if (r.state == PAG_TURN_COMPLETED) progress(&ch);
    pct__mw_subagent_stop(s, ch.id,
                          r.state == PAG_TURN_FAILED ? "failed"
                          : r.stop_reason            ? r.stop_reason
                                                     : "end_turn");
    char *answer = pag_session_last_answer(agent);
    char head[160];
    snprintf(head, sizeof head, "[subagent %s]\n", ch.id);
    if (r.state == PAG_TURN_INTERRUPTED) {
        out->output = strdup("cancelled: the subagent was interrupted");
        out->is_error = true;
        rc = out->output ? 1 : -1;
    } else if (r.state == PAG_TURN_FAILED) {
        char msg[700];
        snprintf(msg, sizeof msg, "%ssubagent failed: %s", head, r.message);
        rc = fail_out(out, msg);
    } else {
        size_t n = strlen(head) + (answer ? strlen(answer) : 0) + 32;
        out->output = malloc(n);
        if (out->output) snprintf(out->output, n, "%s%s", head, answer ? answer : "(no answer)");
        rc = out->output ? 0 : -1;
    }
    free(answer);
out:
    pag_session_free(agent);
    pm_client_free(ch.client);
    pst_thread_clear(&th);
    free(ch.meta_json);
    free(ch.text);
    free(ch.tools);
    pj_decref(a);
    return rc;
}

int pct__subagent_run(pct_sess *s, const char *args, atomic_int *cancel, pag_tool_output *out) {
    atomic_fetch_add(&s->subagents, 1); /* close reports a subagent not handed over */
    int rc = run_child(s, args, cancel, out, s->cur_call, s->model_applied, NULL);
    atomic_fetch_sub(&s->subagents, 1);
    return rc;
}

int pct__subagent_run_bg(pct_sess *s, const char *args, atomic_int *cancel, pag_tool_output *out,
                         const char *call_id, const char *model, char agent_id[PST_ID_LEN]) {
    atomic_fetch_add(&s->subagents, 1);
    int rc = run_child(s, args, cancel, out, call_id, model, agent_id);
    atomic_fetch_sub(&s->subagents, 1);
    pthread_mutex_lock(&s->mu);
    pthread_cond_broadcast(&s->cv); /* close waits on the count */
    pthread_mutex_unlock(&s->mu);
    return rc;
}
