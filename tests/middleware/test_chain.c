/*
 * test_chain.c — the middleware chain over scripted agent ports: the production order
 * (a swap of two entries fails here), before-points in order with the first deny
 * stopping the rest (the user is not asked about a call a hook denied), after-points in
 * reverse, refused mounts; and the hooks middleware running real commands (the
 * explicit unsandboxed path; the sandboxed one is covered over ACP): deny by exit code
 * and by JSON with the reason in the model's next request, added context, the event on
 * stdin, a timeout that does not hang the turn, failClosed, a bad configuration.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "peri/agent.h"

#include "peri/json.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct step {
    const char *text;
    const char *tool;
    const char *tool_args;
} step;

typedef struct fake {
    const step *steps;
    size_t nsteps, at;
    char last[8][2048];    /* the text of every part of the last message, per model call */
    char first_user[2048]; /* every part of the first message of the last call */
    int tool_runs, asked;
    char trace[512]; /* middleware calls: "name:Hook " */
} fake;

static void all_text(const pm_message *m, char *out, size_t cap) {
    size_t k = 0;
    out[0] = '\0';
    for (size_t i = 0; i < m->nparts && k < cap; i++) {
        const char *t = m->parts[i].text;
        if (t) k += (size_t)snprintf(out + k, cap - k, "%s|", t);
    }
}

static pm_status f_reason(void *ctx, const pm_request *req, pm_event_fn on_event, void *ev_ctx,
                          atomic_int *cancel, pm_response *out, pm_error *err) {
    (void)on_event;
    (void)ev_ctx;
    (void)cancel;
    (void)err;
    fake *f = ctx;
    memset(out, 0, sizeof *out);
    pm_message_init(&out->message, PM_ROLE_ASSISTANT);
    if (req->nmessages) {
        all_text(&req->messages[req->nmessages - 1], f->last[f->at < 8 ? f->at : 7], 2048);
        all_text(&req->messages[0], f->first_user, sizeof f->first_user);
    }
    if (f->at >= f->nsteps) {
        pm_message_add_text(&out->message, "done");
        f->at++;
        return PM_OK;
    }
    const step *s = &f->steps[f->at++];
    if (s->text) pm_message_add_text(&out->message, s->text);
    if (s->tool) pm_message_add_tool_call(&out->message, "call_1", s->tool, s->tool_args);
    out->stop = s->tool ? PM_STOP_TOOL_USE : PM_STOP_END_TURN;
    return PM_OK;
}

static int f_run_tool(void *ctx, const char *name, const char *args, atomic_int *cancel,
                      pag_tool_output *out) {
    (void)name;
    (void)args;
    (void)cancel;
    fake *f = ctx;
    f->tool_runs++;
    out->output = strdup("tool-output");
    return 0;
}

static const pag_tool_ops fake_tools = {.run = f_run_tool};

static pag_permission f_ask(void *ctx, const pag_event *call, atomic_int *cancel) {
    (void)call;
    (void)cancel;
    fake *f = ctx;
    f->asked++;
    strncat(f->trace, "ask ", sizeof f->trace - strlen(f->trace) - 1);
    return PAG_PERM_ALLOW;
}

static int f_persist(void *ctx, const pm_message *msgs, size_t n) {
    (void)ctx;
    (void)msgs;
    (void)n;
    return 0;
}

static const pag_tool_info tools[] = {
    {"shell", "Run a command", "{\"type\":\"object\"}", "execute", true, false},
    {"read", "Read a file", "{\"type\":\"object\"}", "read", false, true},
};

static pag_session *make(fake *f, const step *steps, size_t n, const pag_middleware *mws,
                         size_t nmws) {
    memset(f, 0, sizeof *f);
    f->steps = steps;
    f->nsteps = n;
    pag_ports ports = {.ctx = f,
                       .reason = f_reason,
                       .model_name = "test-model",
                       .tools = tools,
                       .ntools = 2,
                       .tool_ops = &fake_tools,
                       .ask_permission = f_ask,
                       .persist = f_persist,
                       .middlewares = mws,
                       .nmiddlewares = nmws};
    pag_session_config cfg = {.id = "s1", .cwd = "/tmp", .system_prompt = "sys"};
    return pag_session_new(&cfg, &ports);
}

static void turn(pag_session *s, const char *text, pag_turn_result *r) {
    pag_session_begin_turn(s);
    pag_session_turn(s, text, r);
}

/* ---------------------------------------------------------------- order */

static void test_production_order(void **state) {
    (void)state;
    const char *names[16];
    size_t n = pag_chain_order(names, 16);
    static const char *const want[] = {"hooks",    "goal",  "permission", "ask_user",
                                       "subagent", "tasks", "skills",     "cron"};
    assert_int_equal(n, sizeof want / sizeof want[0]);
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(names[i], want[i]);
        assert_int_equal(pag_chain_index(want[i]), (int)i);
    }
    assert_int_equal(pag_chain_index("nope"), -1);
    /* the catalogue follows the chain: ask_user, then task, then skill */
    size_t k;
    assert_string_equal(pag_chain_tools(3, &k)[0].name, "ask_user");
    assert_string_equal(pag_chain_tools(4, &k)[0].name, "task");
    assert_string_equal(pag_chain_tools(6, &k)[0].name, "skill");
    assert_null(pag_chain_tools(0, &k));
    assert_int_equal(k, 0);
}

typedef struct rec {
    fake *f;
    const char *name;
    bool deny_pre;
} rec;

static void rec_hook(void *ctx, const pag_hook_call *call, pag_hook_answer *ans) {
    rec *r = ctx;
    char line[64];
    snprintf(line, sizeof line, "%s:%s ", r->name, pag_hook_name(call->hook));
    strncat(r->f->trace, line, sizeof r->f->trace - strlen(r->f->trace) - 1);
    if (r->deny_pre && call->hook == PAG_HOOK_PRE_TOOL) pag_hook_answer_deny(ans, "not today");
}

static void test_order_is_behaviour(void **state) {
    (void)state;
    fake f;
    rec a = {&f, "skills", false}, b = {&f, "hooks", false}, c = {&f, "subagent", false};
    unsigned pts = PAG_HOOK_BIT(PAG_HOOK_PRE_TOOL) | PAG_HOOK_BIT(PAG_HOOK_POST_TOOL);
    /* given out of order on purpose: the chain's order is its own */
    pag_middleware mws[] = {{"skills", pts, &a, rec_hook},
                            {"hooks", pts, &b, rec_hook},
                            {"subagent", pts, &c, rec_hook}};
    step steps[] = {{.tool = "shell", .tool_args = "{\"command\":\"ls\"}"}, {.text = "ok"}};
    pag_session *s = make(&f, steps, 2, mws, 3);
    assert_non_null(s);
    pag_turn_result r;
    turn(s, "go", &r);
    assert_int_equal(r.state, PAG_TURN_COMPLETED);
    assert_string_equal(f.trace, "hooks:PreToolUse ask subagent:PreToolUse skills:PreToolUse "
                                 "skills:PostToolUse subagent:PostToolUse hooks:PostToolUse ");
    pag_session_free(s);

    /* a deny stops the before-point: permission never asks, nothing later runs */
    b.deny_pre = true;
    s = make(&f, steps, 2, mws, 3);
    turn(s, "go", &r);
    assert_string_equal(f.trace, "hooks:PreToolUse ");
    assert_int_equal(f.asked, 0);
    assert_int_equal(f.tool_runs, 0);
    assert_non_null(strstr(f.last[1], "not today"));
    pag_session_free(s);
}

static void test_refused_mounts(void **state) {
    (void)state;
    fake f;
    pag_middleware bogus[] = {{.name = "logging"}};
    assert_null(make(&f, NULL, 0, bogus, 1));
    pag_middleware twice[] = {{.name = "hooks"}, {.name = "hooks"}};
    assert_null(make(&f, NULL, 0, twice, 2));
    pag_middleware own[] = {{.name = "permission"}}; /* replacing the agent's own is allowed */
    pag_session *s = make(&f, NULL, 0, own, 1);
    assert_non_null(s);
    pag_session_free(s);
}

/* ---------------------------------------------------------------- hooks */

static pag_session *with_hooks(fake *f, const step *steps, size_t n, const char *hooks_json,
                               pag_hooks **h, pag_middleware *mw) {
    pj_t *j = pj_loads(hooks_json, 0, NULL);
    assert_non_null(j);
    pag_hooks_env env = {.cwd = "/tmp"};
    char err[256];
    *h = pag_hooks_new(j, &env, err, sizeof err);
    pj_decref(j);
    assert_non_null(*h);
    *mw = pag_hooks_middleware(*h);
    pag_session *s = make(f, steps, n, mw, 1);
    assert_non_null(s);
    return s;
}

static void test_hook_denies_by_exit_code(void **state) {
    (void)state;
    fake f;
    pag_hooks *h;
    pag_middleware mw;
    step steps[] = {{.tool = "shell", .tool_args = "{\"command\":\"rm -rf x\"}"}, {.text = "ok"}};
    pag_session *s = with_hooks(
        &f, steps, 2,
        "{\"PreToolUse\":[{\"matcher\":\"write|shell\",\"hooks\":[{\"type\":\"command\","
        "\"command\":\"echo 'rm is not allowed here' >&2; exit 2\",\"unsandboxed\":true}]}]}",
        &h, &mw);
    pag_turn_result r;
    turn(s, "go", &r);
    assert_int_equal(r.state, PAG_TURN_COMPLETED);
    assert_int_equal(f.tool_runs, 0);
    assert_int_equal(f.asked, 0);
    assert_non_null(strstr(f.last[1], "rm is not allowed here"));
    pag_session_free(s);
    pag_hooks_free(h);
}

static void test_hook_json_deny_context_and_stdin(void **state) {
    (void)state;
    char dir[] = "/tmp/peri-hooks-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char hooks[1024];
    snprintf(hooks, sizeof hooks,
             "{\"UserPromptSubmit\":[{\"hooks\":[{\"command\":\"echo prompt-ctx-7\","
             "\"unsandboxed\":true}]}],"
             "\"PreToolUse\":[{\"matcher\":\"read\",\"hooks\":[{\"command\":\"echo "
             "'{\\\"decision\\\":\\\"deny\\\",\\\"reason\\\":\\\"never\\\"}'\",\"unsandboxed\":"
             "true}]},{\"matcher\":\"*\",\"hooks\":[{\"command\":\"cat > %s/event.json; echo "
             "'{\\\"additionalContext\\\":\\\"pre-ctx-9\\\"}'\",\"unsandboxed\":true}]}]}",
             dir);
    fake f;
    pag_hooks *h;
    pag_middleware mw;
    step steps[] = {{.tool = "shell", .tool_args = "{\"command\":\"ls\"}"},
                    {.tool = "read", .tool_args = "{\"path\":\"a\"}"},
                    {.text = "ok"}};
    pag_session *s = with_hooks(&f, steps, 3, hooks, &h, &mw);
    pag_turn_result r;
    turn(s, "hello", &r);
    assert_int_equal(r.state, PAG_TURN_COMPLETED);
    assert_int_equal(f.tool_runs, 1); /* shell ran (asked); read was denied */
    assert_int_equal(f.asked, 1);
    assert_non_null(strstr(f.first_user, "prompt-ctx-7"));
    assert_non_null(strstr(f.last[1], "tool-output"));
    assert_non_null(strstr(f.last[1], "pre-ctx-9"));
    assert_non_null(strstr(f.last[2], "never"));
    assert_null(strstr(f.last[2], "tool-output"));
    char path[300];
    snprintf(path, sizeof path, "%s/event.json", dir);
    pj_t *ev = pj_load_file(path, 0, NULL);
    assert_non_null(ev);
    assert_string_equal(pj_string_value(pj_object_get(ev, "hook_event_name")), "PreToolUse");
    assert_string_equal(pj_string_value(pj_object_get(ev, "tool_name")), "shell");
    assert_string_equal(pj_string_value(pj_object_get(pj_object_get(ev, "tool_input"), "command")),
                        "ls");
    assert_string_equal(pj_string_value(pj_object_get(ev, "session_id")), "s1");
    pj_decref(ev);
    unlink(path);
    rmdir(dir);
    pag_session_free(s);
    pag_hooks_free(h);
}

static double mono(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void test_hook_timeout_does_not_hang(void **state) {
    (void)state;
    fake f;
    pag_hooks *h;
    pag_middleware mw;
    step steps[] = {{.tool = "shell", .tool_args = "{}"}, {.text = "ok"}};
    /* the hook (and the child it forks) would sleep 30 s; its timeout is 0.3 s */
    pag_session *s = with_hooks(&f, steps, 2,
                                "{\"PreToolUse\":[{\"hooks\":[{\"command\":\"sleep 30 & sleep "
                                "30\",\"timeout\":0.3,\"unsandboxed\":true}]}]}",
                                &h, &mw);
    double t0 = mono();
    pag_turn_result r;
    turn(s, "go", &r);
    assert_true(mono() - t0 < 10.0);
    assert_int_equal(r.state, PAG_TURN_COMPLETED);
    assert_int_equal(f.tool_runs, 1); /* a failed hook does not block */
    pag_session_free(s);
    pag_hooks_free(h);

    /* failClosed: the failure denies, naming it */
    s = with_hooks(&f, steps, 2,
                   "{\"PreToolUse\":[{\"hooks\":[{\"command\":\"sleep 30\",\"timeout\":0.2,"
                   "\"unsandboxed\":true,\"failClosed\":true}]}]}",
                   &h, &mw);
    turn(s, "go", &r);
    assert_int_equal(f.tool_runs, 0);
    assert_non_null(strstr(f.last[1], "timed out"));
    pag_session_free(s);
    pag_hooks_free(h);

    /* without the opt-in and without a sandbox the command does not run at all */
    s = with_hooks(&f, steps, 2,
                   "{\"PreToolUse\":[{\"hooks\":[{\"command\":\"exit 2\",\"failClosed\":true}]}]}",
                   &h, &mw);
    turn(s, "go", &r);
    assert_int_equal(f.tool_runs, 0);
    assert_non_null(strstr(f.last[1], "sandbox is not configured"));
    pag_session_free(s);
    pag_hooks_free(h);
}

static void test_prompt_blocked(void **state) {
    (void)state;
    fake f;
    pag_hooks *h;
    pag_middleware mw;
    pag_session *s = with_hooks(&f, NULL, 0,
                                "{\"UserPromptSubmit\":[{\"hooks\":[{\"command\":\"echo "
                                "secret-word >&2; exit 2\",\"unsandboxed\":true}]}]}",
                                &h, &mw);
    pag_turn_result r;
    turn(s, "tell me", &r);
    assert_int_equal(r.state, PAG_TURN_COMPLETED);
    assert_string_equal(r.stop_reason, "refusal"); /* ACP: not part of the conversation */
    assert_int_equal(f.at, 0);                     /* the model was never called */
    assert_int_equal(pag_session_history_len(s), 0);
    assert_int_equal(pag_session_drop_turn(s), 0); /* nothing of it to drop */
    pag_session_free(s);
    pag_hooks_free(h);
}

static void test_post_stop_compact(void **state) {
    (void)state;
    char dir[] = "/tmp/peri-hooks-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char hooks[1024];
    snprintf(hooks, sizeof hooks,
             "{\"PostToolUse\":[{\"matcher\":\"shell\",\"hooks\":[{\"command\":\"echo "
             "post-note >&2; exit 2\",\"unsandboxed\":true}]}],"
             "\"Stop\":[{\"hooks\":[{\"command\":\"cat > %s/stop.json\",\"unsandboxed\":true}]}],"
             "\"PreCompact\":[{\"hooks\":[{\"command\":\"exit 2\",\"unsandboxed\":true}]}]}",
             dir);
    fake f;
    pag_hooks *h;
    pag_middleware mw;
    step steps[] = {{.tool = "shell", .tool_args = "{}"}, {.text = "ok"}};
    pag_session *s = with_hooks(&f, steps, 2, hooks, &h, &mw);
    pag_turn_result r;
    turn(s, "go", &r);
    assert_int_equal(f.tool_runs, 1);
    assert_non_null(strstr(f.last[1], "tool-output"));
    assert_non_null(strstr(f.last[1], "[hook]"));
    assert_non_null(strstr(f.last[1], "post-note"));
    char path[300];
    snprintf(path, sizeof path, "%s/stop.json", dir);
    pj_t *ev = pj_load_file(path, 0, NULL);
    assert_non_null(ev);
    assert_string_equal(pj_string_value(pj_object_get(ev, "hook_event_name")), "Stop");
    assert_string_equal(pj_string_value(pj_object_get(ev, "stop_reason")), "end_turn");
    pj_decref(ev);
    unlink(path);
    rmdir(dir);
    size_t before = pag_session_history_len(s);
    pag_session_begin_turn(s);
    pag_session_compact(s, NULL, &r);
    assert_int_equal(r.state, PAG_TURN_COMPLETED);
    assert_int_equal(pag_session_history_len(s), before); /* blocked: nothing added */
    pag_session_free(s);
    pag_hooks_free(h);
}

static int errors;
static void count(void *ud, bool error, const char *msg) {
    (void)ud;
    (void)msg;
    if (error) errors++;
}

static void test_bad_config(void **state) {
    (void)state;
    const char *bad[] = {"[]",
                         "{\"Nope\":[]}",
                         "{\"Stop\":{}}",
                         "{\"Stop\":[{\"hooks\":[{\"type\":\"python\"}]}]}",
                         "{\"Stop\":[{\"hooks\":[{\"command\":1}]}]}",
                         "{\"Stop\":[{\"hooks\":[{\"command\":\"x\",\"timeout\":9999}]}]}",
                         "{\"Stop\":[{\"hooks\":[{\"command\":\"x\",\"unsandboxed\":\"yes\"}]}]}",
                         "{\"Stop\":[{\"hooks\":[{\"type\":\"mcp_tool\",\"server\":\"a\"}]}]}"};
    pag_hooks_env env = {.cwd = "/tmp"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        pj_t *j = pj_loads(bad[i], PJ_DECODE_ANY, NULL);
        assert_non_null(j);
        char err[256] = "";
        assert_null(pag_hooks_new(j, &env, err, sizeof err));
        assert_true(err[0] != '\0');
        errors = 0;
        assert_true(pag_hooks_check(j, "hooks", count, NULL) > 0);
        assert_true(errors > 0);
        pj_decref(j);
    }
    /* the settings check knows the key and reports inside it */
    pj_t *doc = pj_loads("{\"hooks\": {\"Stop\": [{\"hooks\": [{\"command\": "
                         "\"true\"}]}]}}",
                         0, NULL);
    errors = 0;
    assert_int_equal(pag_settings_check(doc, count, NULL), 0);
    assert_int_equal(errors, 0);
    pj_decref(doc);
    doc = pj_loads("{\"hooks\": {\"Stopp\": []}}", 0, NULL);
    assert_true(pag_settings_check(doc, count, NULL) > 0);
    pj_decref(doc);
    pag_hooks *h = pag_hooks_new(NULL, &env, NULL, 0);
    assert_non_null(h);
    char err[256] = "";
    assert_int_equal(pag_hooks_set_project(h, "{\"Stop\":3}", err, sizeof err), -1);
    assert_non_null(strstr(err, "project hooks.Stop"));
    assert_int_equal(pag_hooks_set_project(h, NULL, err, sizeof err), 0);
    pag_hooks_free(h);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_production_order),
        cmocka_unit_test(test_order_is_behaviour),
        cmocka_unit_test(test_refused_mounts),
        cmocka_unit_test(test_hook_denies_by_exit_code),
        cmocka_unit_test(test_hook_json_deny_context_and_stdin),
        cmocka_unit_test(test_hook_timeout_does_not_hang),
        cmocka_unit_test(test_prompt_blocked),
        cmocka_unit_test(test_post_stop_compact),
        cmocka_unit_test(test_bad_config),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
