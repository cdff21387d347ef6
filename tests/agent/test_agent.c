/*
 * test_agent.c — unit tests of the agent layer: the RCRA turn over scripted ports
 * (text, tools, permission, cancel, failures, step limit), replay, restore,
 * compaction, settings and the frozen context.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "peri/agent.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---------------------------------------------------------------- scripted ports */

typedef struct step {
    const char *text;
    const char *tool; /* tool call name, or NULL */
    const char *tool_args;
    pm_status fail; /* non-OK: the call fails with this */
    long http;
    bool wait_cancel; /* block until the cancel flag rises */
} step;

typedef struct fake {
    const step *steps;
    size_t nsteps, at;
    size_t nreq_msgs[16]; /* messages seen by each model call */
    pm_role last_role[16];
    char last_text[16][128];
    int persisted[16]; /* batch sizes */
    size_t npersist;
    int tool_runs;
    pag_permission perm;
    int asked;
    pag_event_kind kinds[64];
    char statuses[64][16];
    size_t nevents;
} fake;

static pm_status f_reason(void *ctx, const pm_request *req, pm_event_fn on_event, void *ev_ctx,
                          atomic_int *cancel, pm_response *out, pm_error *err) {
    fake *f = ctx;
    memset(out, 0, sizeof *out);
    pm_message_init(&out->message, PM_ROLE_ASSISTANT);
    size_t k = f->at < 16 ? f->at : 15;
    f->nreq_msgs[k] = req->nmessages;
    if (req->nmessages) {
        const pm_message *lm = &req->messages[req->nmessages - 1];
        f->last_role[k] = lm->role;
        const char *t = lm->nparts ? lm->parts[0].text : NULL;
        snprintf(f->last_text[k], sizeof f->last_text[k], "%s", t ? t : "");
    }
    if (f->at >= f->nsteps) {
        pm_message_add_text(&out->message, "default");
        return PM_OK;
    }
    const step *s = &f->steps[f->at++];
    if (s->wait_cancel) {
        pm_stream_event ev = {.kind = PM_EV_TEXT_DELTA, .text = "part", .len = 4};
        on_event(&ev, ev_ctx);
        pm_message_add_text(&out->message, "part");
        while (!atomic_load(cancel))
            usleep(1000);
        return PM_CANCELLED;
    }
    if (s->fail != PM_OK) {
        err->status = s->fail;
        err->http_status = s->http;
        snprintf(err->message, sizeof err->message, "scripted failure");
        return s->fail;
    }
    if (s->text) {
        pm_stream_event ev = {.kind = PM_EV_TEXT_DELTA, .text = s->text, .len = strlen(s->text)};
        on_event(&ev, ev_ctx);
        pm_message_add_text(&out->message, s->text);
    }
    if (s->tool) pm_message_add_tool_call(&out->message, "call_1", s->tool, s->tool_args);
    out->usage.input_tokens = 10;
    out->usage.output_tokens = 2;
    out->stop = s->tool ? PM_STOP_TOOL_USE : PM_STOP_END_TURN;
    return PM_OK;
}

static int f_run_tool(void *ctx, const char *name, const char *args, atomic_int *cancel,
                      pag_tool_output *out) {
    (void)args;
    (void)cancel;
    fake *f = ctx;
    f->tool_runs++;
    out->output = strdup(strcmp(name, "read") == 0 ? "file content" : "done");
    return 0;
}

static const pag_tool_ops fake_tools = {.run = f_run_tool};

static pag_permission f_ask(void *ctx, const pag_event *call, atomic_int *cancel) {
    (void)call;
    (void)cancel;
    fake *f = ctx;
    f->asked++;
    return f->perm;
}

static int f_persist(void *ctx, const pm_message *msgs, size_t n) {
    (void)msgs;
    fake *f = ctx;
    if (f->npersist < 16) f->persisted[f->npersist++] = (int)n;
    return 0;
}

static void f_emit(void *ctx, const pag_event *ev) {
    fake *f = ctx;
    if (f->nevents < 64) {
        f->kinds[f->nevents] = ev->kind;
        snprintf(f->statuses[f->nevents], 16, "%s", ev->status ? ev->status : "");
        f->nevents++;
    }
}

static const pag_tool_info tools[] = {
    {"read", "Read a file", "{\"type\":\"object\"}", "read", false, true},
    {"shell", "Run a command", "{\"type\":\"object\"}", "execute", true, false},
};

static pag_session *make(fake *f, const step *steps, size_t n, int max_steps) {
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
                       .emit = f_emit};
    pag_session_config cfg = {
        .id = "s1", .cwd = "/tmp", .system_prompt = "sys", .max_steps = max_steps};
    pag_session *s = pag_session_new(&cfg, &ports);
    assert_non_null(s);
    return s;
}

static void run_turn(pag_session *s, const char *text, pag_turn_result *r) {
    pag_session_begin_turn(s);
    pag_session_turn(s, text, r);
}

/* ---------------------------------------------------------------- turns */

static void test_text_turn(void **state) {
    (void)state;
    fake f;
    step steps[] = {{.text = "hello"}};
    pag_session *s = make(&f, steps, 1, 0);
    pag_turn_result r;
    run_turn(s, "hi", &r);
    assert_int_equal(r.state, PAG_TURN_COMPLETED);
    assert_string_equal(r.stop_reason, "end_turn");
    assert_int_equal(f.npersist, 2); /* user, then assistant */
    assert_int_equal(f.persisted[0], 1);
    assert_int_equal(f.persisted[1], 1);
    assert_int_equal(f.nevents, 2);
    assert_int_equal(f.kinds[0], PAG_EV_TEXT);
    assert_int_equal(f.kinds[1], PAG_EV_USAGE); /* usage precedes the answer */
    assert_int_equal(pag_session_history_len(s), 2);
    pag_session_free(s);
}

static void test_tool_turn(void **state) {
    (void)state;
    fake f;
    step steps[] = {{.tool = "read", .tool_args = "{\"path\":\"a\"}"}, {.text = "done"}};
    pag_session *s = make(&f, steps, 2, 0);
    pag_turn_result r;
    run_turn(s, "read a", &r);
    assert_int_equal(r.state, PAG_TURN_COMPLETED);
    assert_int_equal(f.tool_runs, 1);
    assert_int_equal(f.asked, 0); /* read needs no permission */
    /* user; assistant+tool result as ONE batch; final assistant */
    assert_int_equal(f.npersist, 3);
    assert_int_equal(f.persisted[1], 2);
    /* The second model call saw the tool result last. */
    assert_int_equal(f.nreq_msgs[1], 3);
    assert_int_equal(f.last_role[1], PM_ROLE_TOOL);
    assert_string_equal(f.last_text[1], "file content");
    pag_session_free(s);
}

static void test_permission_reject(void **state) {
    (void)state;
    fake f;
    step steps[] = {{.tool = "shell", .tool_args = "{\"command\":\"rm x\"}"}, {.text = "ok"}};
    pag_session *s = make(&f, steps, 2, 0);
    f.perm = PAG_PERM_REJECT;
    pag_turn_result r;
    run_turn(s, "go", &r);
    assert_int_equal(r.state, PAG_TURN_COMPLETED); /* the turn continues */
    assert_int_equal(f.asked, 1);
    assert_int_equal(f.tool_runs, 0);
    assert_int_equal(f.last_role[1], PM_ROLE_TOOL);
    assert_non_null(strstr(f.last_text[1], "rejected"));
    bool saw_failed = false;
    for (size_t i = 0; i < f.nevents; i++)
        if (f.kinds[i] == PAG_EV_TOOL_UPDATE && !strcmp(f.statuses[i], "failed")) saw_failed = true;
    assert_true(saw_failed);
    pag_session_free(s);
}

static void test_permission_allow(void **state) {
    (void)state;
    fake f;
    step steps[] = {{.tool = "shell", .tool_args = "{\"command\":\"ls\"}"}, {.text = "ok"}};
    pag_session *s = make(&f, steps, 2, 0);
    f.perm = PAG_PERM_ALLOW;
    pag_turn_result r;
    run_turn(s, "go", &r);
    assert_int_equal(r.state, PAG_TURN_COMPLETED);
    assert_int_equal(f.asked, 1);
    assert_int_equal(f.tool_runs, 1);
    assert_string_equal(f.last_text[1], "done");
    pag_session_free(s);
}

static void *cancel_later(void *arg) {
    usleep(50000);
    pag_session_cancel(arg);
    return NULL;
}

static void test_cancel_mid_stream(void **state) {
    (void)state;
    fake f;
    step steps[] = {{.wait_cancel = true}};
    pag_session *s = make(&f, steps, 1, 0);
    pthread_t th;
    pag_session_begin_turn(s);
    pthread_create(&th, NULL, cancel_later, s);
    pag_turn_result r;
    pag_session_turn(s, "long", &r);
    pthread_join(th, NULL);
    assert_int_equal(r.state, PAG_TURN_INTERRUPTED);
    assert_string_equal(r.stop_reason, "cancelled");
    /* The partial text is kept in history (user + partial assistant). */
    assert_int_equal(pag_session_history_len(s), 2);
    /* The next turn starts clean. */
    f.steps = (step[]){{.text = "again"}};
    f.nsteps = 1;
    f.at = 0;
    run_turn(s, "next", &r);
    assert_int_equal(r.state, PAG_TURN_COMPLETED);
    pag_session_free(s);
}

static void test_failures(void **state) {
    (void)state;
    fake f;
    step steps[] = {{.fail = PM_ERR_HTTP, .http = 500}, {.fail = PM_ERR_NETWORK}};
    pag_session *s = make(&f, steps, 2, 0);
    pag_turn_result r;
    run_turn(s, "a", &r);
    assert_int_equal(r.state, PAG_TURN_FAILED);
    assert_string_equal(r.error_kind, "llm_http");
    assert_int_equal(r.http_status, 500);
    run_turn(s, "b", &r);
    assert_int_equal(r.state, PAG_TURN_FAILED);
    assert_string_equal(r.error_kind, "llm");
    run_turn(s, "c", &r); /* the session stays usable */
    assert_int_equal(r.state, PAG_TURN_COMPLETED);
    pag_session_free(s);
}

static void test_no_model(void **state) {
    (void)state;
    fake f;
    memset(&f, 0, sizeof f);
    pag_ports ports = {.ctx = &f, .reason = f_reason, .model_missing_reason = "no provider"};
    pag_session_config cfg = {.id = "s", .cwd = "/tmp"};
    pag_session *s = pag_session_new(&cfg, &ports);
    pag_turn_result r;
    run_turn(s, "hi", &r);
    assert_int_equal(r.state, PAG_TURN_FAILED);
    assert_string_equal(r.error_kind, "llm");
    assert_string_equal(r.message, "no provider");
    pag_session_free(s);
}

static void test_max_steps(void **state) {
    (void)state;
    fake f;
    step steps[] = {{.tool = "read", .tool_args = "{}"},
                    {.tool = "read", .tool_args = "{}"},
                    {.tool = "read", .tool_args = "{}"},
                    {.tool = "read", .tool_args = "{}"}};
    pag_session *s = make(&f, steps, 4, 3);
    pag_turn_result r;
    run_turn(s, "loop", &r);
    assert_int_equal(r.state, PAG_TURN_COMPLETED);
    assert_string_equal(r.stop_reason, "max_turn_requests");
    assert_int_equal(f.tool_runs, 3);
    pag_session_free(s);
}

static void test_replay_and_restore(void **state) {
    (void)state;
    fake f;
    step steps[] = {{.tool = "read", .tool_args = "{\"path\":\"a\"}"}, {.text = "done"}};
    pag_session *s = make(&f, steps, 2, 0);
    pag_turn_result r;
    run_turn(s, "read a", &r);
    f.nevents = 0;
    pag_session_replay(s, f_emit, &f);
    assert_int_equal(f.nevents, 4);
    assert_int_equal(f.kinds[0], PAG_EV_USER_TEXT);
    assert_int_equal(f.kinds[1], PAG_EV_TOOL_CALL);
    assert_int_equal(f.kinds[2], PAG_EV_TOOL_UPDATE);
    assert_string_equal(f.statuses[2], "completed");
    assert_int_equal(f.kinds[3], PAG_EV_TEXT);
    pag_session_free(s);

    const char *rows[] = {
        "{\"role\":\"user\",\"parts\":[{\"type\":\"text\",\"text\":\"hi\"}]}",
        "not json",
        "{\"role\":\"assistant\",\"parts\":[{\"type\":\"text\",\"text\":\"yo\"}]}",
    };
    fake g;
    s = make(&g, NULL, 0, 0);
    size_t skipped = 0;
    assert_int_equal(pag_session_restore(s, rows, 3, &skipped), 0);
    assert_int_equal(skipped, 1);
    assert_int_equal(pag_session_history_len(s), 2);
    pag_session_free(s);
}

/* ---------------------------------------------------------------- compaction */

static void test_compaction(void **state) {
    (void)state;
    pm_message m[7];
    char big[4001];
    memset(big, 'x', 4000);
    big[4000] = '\0';
    pm_role roles[] = {PM_ROLE_USER, PM_ROLE_ASSISTANT, PM_ROLE_TOOL, PM_ROLE_ASSISTANT,
                       PM_ROLE_USER, PM_ROLE_ASSISTANT, PM_ROLE_USER};
    for (int i = 0; i < 7; i++) {
        pm_message_init(&m[i], roles[i]);
        pm_message_add_text(&m[i], big); /* ~1000 tokens each */
    }
    int64_t all = pag_estimate_tokens(m, 7);
    assert_true(all > 7000 && all < 7300);
    assert_int_equal(pag_compact_start(m, 7, 100000), 0);
    /* 3000 tokens: cut before the user at 4 (keeps 4..6). Never at 2 or 3. */
    assert_int_equal(pag_compact_start(m, 7, 3100), 4);
    /* Too small for anything: keep the last user message at least. */
    assert_int_equal(pag_compact_start(m, 7, 10), 6);
    for (int i = 0; i < 7; i++)
        pm_message_clear(&m[i]);
}

/* ---------------------------------------------------------------- settings */

static void test_settings(void **state) {
    (void)state;
    /* The document the host supplies; the library reads no file and no environment. */
    pj_t *doc = pj_loads(
        "{\"model\":\"anthropic:claude-x\",\"providers\":{\"anthropic\":{\"apiKey\":\"k\"}},"
        "\"permissions\":{\"allow\":[\"write\"]},\"contextBudget\":5000,\"mcpServers\":{}}",
        0, NULL);
    assert_non_null(doc);
    pag_settings s;
    char err[512];
    assert_int_equal(pag_settings_from_doc(&s, doc, err, sizeof err), 0);
    assert_int_equal(s.context_budget, 5000);
    assert_true(pag_settings_allows(&s, "write"));
    assert_false(pag_settings_allows(&s, "shell"));
    /* The whole document stays available (a private copy) for other modules. */
    assert_non_null(pj_object_get(s.doc, "mcpServers"));
    assert_true(s.doc != doc);
    pm_config cfg;
    const char *model;
    assert_int_equal(pag_settings_model(&s, &cfg, &model, err, sizeof err), 0);
    assert_int_equal(cfg.provider, PM_PROVIDER_ANTHROPIC);
    assert_string_equal(model, "claude-x");
    assert_string_equal(cfg.base_url, "https://api.anthropic.com");
    pag_settings_clear(&s);

    /* "mcp__<server>__*" matches that whole server name only: not a server "files__x"
     * (tool names never carry "__" in the server part), "files_x", "filesx", and not a
     * look-alike whose part would end in '_' (the pool never makes one). */
    {
        pj_t *d2 = pj_loads("{\"permissions\":{\"allow\":[\"mcp__files__*\","
                            "\"mcp__a__b__*\",\"mcp__dup___*\",\"mcp__pre*\","
                            "\"mcp__*\",\"mcp____*\"]}}",
                            0, NULL);
        pag_settings s2;
        assert_int_equal(pag_settings_from_doc(&s2, d2, err, sizeof err), 0);
        assert_true(pag_settings_allows(&s2, "mcp__files__read"));
        assert_true(pag_settings_allows(&s2, "mcp__files__a__b"));
        assert_true(
            pag_settings_allows(&s2, "mcp__files___hidden")); /* server files, tool _hidden */
        assert_false(pag_settings_allows(&s2, "mcp__files_x__read"));
        assert_false(pag_settings_allows(&s2, "mcp__filesx__read"));
        assert_false(pag_settings_allows(&s2, "mcp__file__read"));
        assert_false(pag_settings_allows(&s2, "mcp__files"));
        assert_false(pag_settings_allows(&s2, "files__read"));
        /* rules that could not name a server part match nothing */
        assert_false(pag_settings_allows(&s2, "mcp__a__b__read"));
        assert_false(pag_settings_allows(&s2, "mcp__dup___read"));
        assert_false(pag_settings_allows(&s2, "mcp__prefix__read"));
        assert_false(pag_settings_allows(&s2, "mcp__other__read"));
        assert_false(pag_settings_allows(&s2, "mcp____read"));
        pag_settings_clear(&s2);
        pj_decref(d2);
    }

    /* A provider named but not configured is a clear error. */
    pj_object_set_new(doc, "model", pj_string("openai:gpt-x"));
    assert_int_equal(pag_settings_from_doc(&s, doc, err, sizeof err), 0);
    assert_int_equal(pag_settings_model(&s, &cfg, &model, err, sizeof err), -1);
    assert_non_null(strstr(err, "openai is not configured"));
    pag_settings_clear(&s);
    pj_decref(doc);

    /* Not an object: an error, not a crash. */
    pj_t *arr = pj_array();
    assert_int_equal(pag_settings_from_doc(&s, arr, err, sizeof err), -1);
    assert_string_equal(err, "settings must be an object");
    pj_decref(arr);
    /* Nothing configured at all: loading works, the model lookup explains. */
    assert_int_equal(pag_settings_from_doc(&s, NULL, err, sizeof err), 0);
    assert_int_equal(pag_settings_model(&s, &cfg, &model, err, sizeof err), -1);
    assert_non_null(strstr(err, "no model provider configured"));
    pag_settings_clear(&s);
}

static void test_frozen_context(void **state) {
    (void)state;
    char dir[] = "/tmp/peri-agent-ctx-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/AGENTS.md", dir);
    FILE *fp = fopen(path, "w");
    fputs("Always answer in haiku.", fp);
    fclose(fp);
    char *ctx = pag_frozen_context(dir, 86400000); /* 1970-01-02 */
    assert_non_null(strstr(ctx, "Always answer in haiku."));
    assert_non_null(strstr(ctx, "1970-01-02"));
    assert_non_null(strstr(ctx, dir));
    free(ctx);
    unlink(path);
    ctx = pag_frozen_context(dir, 0);
    assert_null(strstr(ctx, "Project instructions"));
    free(ctx);
    rmdir(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_text_turn),          cmocka_unit_test(test_tool_turn),
        cmocka_unit_test(test_permission_reject),  cmocka_unit_test(test_permission_allow),
        cmocka_unit_test(test_cancel_mid_stream),  cmocka_unit_test(test_failures),
        cmocka_unit_test(test_no_model),           cmocka_unit_test(test_max_steps),
        cmocka_unit_test(test_replay_and_restore), cmocka_unit_test(test_compaction),
        cmocka_unit_test(test_settings),           cmocka_unit_test(test_frozen_context),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
