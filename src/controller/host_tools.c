/*
 * host_tools.c — the tools the host itself provides next to the workspace tools:
 *   todo   the model's plan: the full list each time; every call sends an ACP `plan`
 *          update (entries: content, priority, status)
 *   skill  loads a skill's instructions (.peri/skills/<name>/SKILL.md body, confined)
 * and, after todo, the catalogue entries the middleware chain declares, in its order
 * (skill for skills, task for subagent (subagent.c), ask_user (askuser.c), ...).
 * Descriptors are static and immutable; only cron_create needs permission; todo and
 * skill are read-only (allowed in plan mode), task inherits the parent's mode for its own
 * tools.
 */
#include "controller/ctl_impl.h"

#include "peri/json.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char todo_schema[] =
    "{\"type\":\"object\",\"properties\":{\"todos\":{\"type\":\"array\",\"description\":"
    "\"The whole plan, every time (not a diff)\",\"items\":{\"type\":\"object\","
    "\"properties\":{\"content\":{\"type\":\"string\"},\"status\":{\"type\":\"string\","
    "\"enum\":[\"pending\",\"in_progress\",\"completed\"]},\"priority\":{\"type\":\"string\","
    "\"enum\":[\"high\",\"medium\",\"low\"]}},\"required\":[\"content\",\"status\"]}}},"
    "\"required\":[\"todos\"]}";
void pct__host_tools_add(pag_tool_info *tools, size_t *n) {
    tools[(*n)++] = (pag_tool_info){
        .name = "todo",
        .description = "Record or update your plan for the current task as a todo list. Send "
                       "the whole list each time with each item's status; the user sees it.",
        .schema_json = todo_schema,
        .kind = "think",
        .read_only = true};
    /* the middlewares' declared tools, in the chain's production order */
    size_t nmw = pag_chain_order(NULL, 0), added = 1;
    for (size_t i = 0; i < nmw; i++) {
        size_t k;
        const pag_tool_info *t = pag_chain_tools(i, &k);
        for (size_t j = 0; j < k && added < PCT_HOST_TOOLS; j++, added++)
            tools[(*n)++] = t[j];
    }
}

static int tool_error(pag_tool_output *out, const char *msg) {
    out->output = strdup(msg);
    out->is_error = true;
    return out->output ? 0 : -1;
}

/* The plan entries (ACP PlanEntry[] JSON text, malloc'd into *txt) of todo arguments,
 * counting each status. 0 ok; 1 invalid (msg says why, *txt NULL); -1 out of memory. */
static int plan_entries(pj_t *args, char **txt, size_t counts[3], char *msg, size_t cap) {
    *txt = NULL;
    pj_t *todos = pj_object_get(args, "todos");
    if (!pj_is_array(todos)) {
        snprintf(msg, cap, "todo: \"todos\" must be an array");
        return 1;
    }
    pj_t *entries = pj_array();
    if (!entries) return -1;
    size_t i;
    pj_t *t;
    static const char *const st_names[3] = {"pending", "in_progress", "completed"};
    pj_array_foreach(todos, i, t) {
        const char *content = pj_string_value(pj_object_get(t, "content"));
        const char *status = pj_string_value(pj_object_get(t, "status"));
        const char *prio = pj_string_value(pj_object_get(t, "priority"));
        int k = -1;
        for (int j = 0; status && j < 3; j++)
            if (!strcmp(status, st_names[j])) k = j;
        if (!content || k < 0) {
            pj_decref(entries);
            snprintf(msg, cap,
                     "todo: item %zu needs \"content\" and a \"status\" of pending, in_progress "
                     "or completed",
                     i);
            return 1;
        }
        if (!prio || (strcmp(prio, "high") && strcmp(prio, "medium") && strcmp(prio, "low")))
            prio = "medium";
        counts[k]++;
        pj_array_append_new(entries, pj_pack("{s:s, s:s, s:s}", "content", content, "priority",
                                             prio, "status", st_names[k]));
    }
    *txt = pj_dumps(entries, PJ_COMPACT);
    pj_decref(entries);
    return *txt ? 0 : -1;
}

char *pct__plan_of_todo(const char *args_json) {
    pj_t *a = args_json ? pj_loads(args_json, 0, NULL) : NULL;
    char *txt = NULL, msg[160];
    size_t counts[3] = {0, 0, 0};
    if (pj_is_object(a) && plan_entries(a, &txt, counts, msg, sizeof msg) != 0) txt = NULL;
    pj_decref(a);
    return txt;
}

static int run_todo(pct_sess *s, pj_t *args, pag_tool_output *out) {
    char *txt = NULL, msg[160];
    size_t counts[3] = {0, 0, 0};
    int rc = plan_entries(args, &txt, counts, msg, sizeof msg);
    if (rc > 0) return tool_error(out, msg);
    if (rc < 0) return -1;
    char *with_goal = pct__goal_plan(s, txt); /* the session's goal stays the first entry */
    if (with_goal) {
        free(txt);
        txt = with_goal;
    }
    pag_event ev = {
        .kind = PAG_EV_PLAN, .turn = pag_session_turn_gen(s->agent), .content_json = txt};
    pct__emit(s, &ev);
    free(txt);
    snprintf(msg, sizeof msg,
             "Plan updated: %zu items (%zu completed, %zu in progress, %zu pending)",
             pj_array_size(pj_object_get(args, "todos")), counts[2], counts[1], counts[0]);
    out->output = strdup(msg);
    return out->output ? 0 : -1;
}

static int run_skill(pct_sess *s, pj_t *args, pag_tool_output *out) {
    const char *name = pj_string_value(pj_object_get(args, "name"));
    if (!name) return tool_error(out, "skill: \"name\" is required");
    char *body = pag_skill_body(s->cwd, name);
    if (!body) {
        char msg[300];
        snprintf(msg, sizeof msg, "skill: no skill named \"%.200s\" in .peri/skills", name);
        return tool_error(out, msg);
    }
    out->output = body;
    return 0;
}

int pct__host_tool(pct_sess *s, const char *name, const char *args, pag_tool_output *out) {
    int mw = pct__mw_tool(s, name, args, out);
    if (mw != -2) return mw;
    if (!name || (strcmp(name, "todo") != 0 && strcmp(name, "skill") != 0)) return -2;
    pj_t *a = pj_loads(args ? args : "{}", 0, NULL);
    int rc;
    if (!pj_is_object(a))
        rc = tool_error(out, "the arguments must be a JSON object");
    else if (!strcmp(name, "todo"))
        rc = run_todo(s, a, out);
    else
        rc = run_skill(s, a, out);
    pj_decref(a);
    return rc;
}
