/*
 * commands.c — slash commands: the list sent as available_commands_update and the
 * handling of a prompt that starts with "/name".
 *
 * Built-ins: /compact [focus] (model-written summary replaces the visible history),
 * /clear, /init (the model writes a project guide, AGENTS.md), /model [id], /mode [id].
 * User commands: <cwd>/.peri/commands/NAME.md, then ~/.peri/commands/NAME.md (project
 * wins), Markdown with optional front matter (description, argument-hint); the body,
 * with $ARGUMENTS replaced, becomes the prompt. A "/word" that names no command is an
 * ordinary prompt. Built-ins run on the prompt worker, so they queue behind a running
 * turn and are cancellable like one.
 */
#include "controller/ctl_impl.h"

#include <ctype.h>
#include "peri/json.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct builtin {
    const char *name, *description, *hint;
} builtins[] = {
    {"compact", "Summarize the conversation so far; the summary replaces the earlier messages",
     "optional focus for the summary"},
    {"clear", "Start fresh: earlier messages are no longer shown to the model", NULL},
    {"init", "Write a project guide (AGENTS.md) for this repository", NULL},
    {"model", "Show the models or switch to one", "model id"},
    {"mode", "Show the modes or switch to one", "default | acceptEdits | plan | bypassPermissions"},
    {"goal", "Show, set or clear the session's standing goal (the agent continues until it is met)",
     "goal text | clear"},
};
#define NBUILTIN (sizeof builtins / sizeof builtins[0])

static bool is_builtin(const char *name) {
    for (size_t i = 0; i < NBUILTIN; i++)
        if (!strcmp(builtins[i].name, name)) return true;
    return false;
}

char *pct__commands_json(pct_sess *s) {
    pj_t *arr = pj_array();
    for (size_t i = 0; arr && i < NBUILTIN; i++) {
        pj_t *o =
            pj_pack("{s:s, s:s}", "name", builtins[i].name, "description", builtins[i].description);
        if (o && builtins[i].hint)
            pj_object_set_new(o, "input", pj_pack("{s:s}", "hint", builtins[i].hint));
        if (o) pj_array_append_new(arr, o);
    }
    pag_user_command *uc = NULL;
    size_t n = 0;
    if (arr && pag_user_commands_load(s->cwd, s->c->home, &uc, &n) == 0) {
        for (size_t i = 0; i < n; i++) {
            if (is_builtin(uc[i].name)) continue;
            pj_t *o = pj_pack("{s:s, s:s}", "name", uc[i].name, "description", uc[i].description);
            if (o && uc[i].hint)
                pj_object_set_new(o, "input", pj_pack("{s:s}", "hint", uc[i].hint));
            if (o) pj_array_append_new(arr, o);
        }
        pag_user_commands_free(uc, n);
    }
    char *txt = arr ? pj_dumps(arr, PJ_COMPACT) : NULL;
    pj_decref(arr);
    return txt;
}

static void say(pct_sess *s, uint64_t gen, const char *text) {
    pag_event ev = {.kind = PAG_EV_TEXT, .turn = gen, .text = text};
    pct__emit(s, &ev);
}

/* Replaces the prompt's content by text. */
static bool rewrite(pm_message *msg, const char *text) {
    pm_message_clear(msg);
    return pm_message_add_text(msg, text) == PM_OK;
}

static void list_options(pct_sess *s, uint64_t gen, const char *which) {
    char *cfg = pct__config_json(s);
    pj_t *arr = cfg ? pj_loads(cfg, 0, NULL) : NULL;
    free(cfg);
    size_t i, k;
    pj_t *o, *v;
    pj_array_foreach(arr, i, o) {
        if (strcmp(pj_string_value(pj_object_get(o, "id")), which) != 0) continue;
        const char *cur = pj_string_value(pj_object_get(o, "currentValue"));
        char line[512];
        snprintf(line, sizeof line, "Current %s: %.200s\nAvailable:\n", which, cur ? cur : "");
        say(s, gen, line);
        pj_array_foreach(pj_object_get(o, "options"), k, v) {
            snprintf(line, sizeof line, "- %.200s (%.200s)\n",
                     pj_string_value(pj_object_get(v, "value")),
                     pj_string_value(pj_object_get(v, "name")));
            say(s, gen, line);
        }
    }
    pj_decref(arr);
}

static const char init_prompt[] =
    "Analyze this repository and write a project guide for coding agents to AGENTS.md in the "
    "working directory with the write tool (replace it if it exists). Cover: what the project "
    "is, how it is laid out, how to build, test and run it, coding conventions, and anything "
    "an agent must be careful about. Read the build files and README first; keep it concise.";

bool pct__command_run(pct_sess *s, pm_message *msg, pag_turn_result *r) {
    char *text = pm_message_text_sep(msg, "\n");
    if (!text || text[0] != '/') {
        free(text);
        return false;
    }
    char name[80];
    size_t n = 0;
    const char *p = text + 1;
    while (p[n] && !isspace((unsigned char)p[n]) && n < sizeof name - 1)
        n++;
    memcpy(name, p, n);
    name[n] = '\0';
    const char *args = p + n;
    while (isspace((unsigned char)*args))
        args++;
    char *targs = strdup(args);
    if (targs) {
        size_t k = strlen(targs);
        while (k > 0 && isspace((unsigned char)targs[k - 1]))
            targs[--k] = '\0';
    }
    free(text);
    if (!targs) return false;
    uint64_t gen = pag_session_turn_gen(s->agent);
    bool handled = true;
    memset(r, 0, sizeof *r);
    r->state = PAG_TURN_COMPLETED;
    r->stop_reason = "end_turn";
    pct_error e = {0};
    if (!strcmp(name, "compact")) {
        pag_session_compact(s->agent, targs, r);
    } else if (!strcmp(name, "clear")) {
        pag_session_clear(s->agent, r);
    } else if (!strcmp(name, "goal")) {
        pct__goal_command(s, gen, targs);
    } else if (!strcmp(name, "init")) {
        size_t len = sizeof init_prompt + strlen(targs) + 16;
        char *t = malloc(len);
        if (t) snprintf(t, len, "%s%s%s", init_prompt, *targs ? "\nAlso: " : "", targs);
        handled = false;
        if (!t || !rewrite(msg, t)) {
            handled = true;
            r->state = PAG_TURN_FAILED;
            r->error_kind = "internal";
            snprintf(r->message, sizeof r->message, "out of memory");
        }
        free(t);
    } else if (!strcmp(name, "model") || !strcmp(name, "mode")) {
        bool model = !strcmp(name, "model");
        if (!*targs) {
            list_options(s, gen, name);
        } else {
            pct_status st = model ? pct__sess_set_model(s, targs, gen, &e)
                                  : pct__sess_set_mode(s, targs, gen, &e);
            char line[400];
            if (st == PCT_OK)
                snprintf(line, sizeof line, "%s set to %.200s", model ? "Model" : "Mode", targs);
            else
                snprintf(line, sizeof line, "%.390s", e.message);
            say(s, gen, line);
        }
    } else {
        pag_user_command *uc = NULL;
        size_t nc = 0;
        handled = false;
        if (pag_user_commands_load(s->cwd, s->c->home, &uc, &nc) == 0) {
            for (size_t i = 0; i < nc; i++) {
                if (strcmp(uc[i].name, name) != 0) continue;
                char *body = pag_expand_arguments(uc[i].body, targs);
                if (body && !strstr(uc[i].body, "$ARGUMENTS") && *targs) {
                    size_t len = strlen(body) + strlen(targs) + 32;
                    char *b2 = malloc(len);
                    if (b2) snprintf(b2, len, "%s\n\nArguments: %s", body, targs);
                    free(body);
                    body = b2;
                }
                if (body) rewrite(msg, body);
                free(body);
                break;
            }
            pag_user_commands_free(uc, nc);
        }
    }
    free(targs);
    return handled;
}
