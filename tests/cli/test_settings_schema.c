/*
 * test_settings_schema.c — pag_settings_check (src/agent/settings_schema.c): unknown
 * keys are warnings with the nearest known key, wrong types are errors naming the field
 * by its path, a valid document has no finding; pag_edit_distance counts swaps as one.
 */
#include "peri/agent.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

typedef struct findings {
    char text[4096];
    size_t warnings, errors;
} findings;

static void collect(void *ud, bool error, const char *message) {
    findings *f = ud;
    size_t n = strlen(f->text);
    snprintf(f->text + n, sizeof f->text - n, "%s %s\n", error ? "E" : "W", message);
    if (error)
        f->errors++;
    else
        f->warnings++;
}

static size_t check_text(const char *json, findings *f) {
    memset(f, 0, sizeof *f);
    pj_error_t je;
    pj_t *doc = pj_loads(json, 0, &je);
    assert_non_null(doc);
    size_t n = pag_settings_check(doc, collect, f);
    pj_decref(doc);
    return n;
}

static void test_distance(void **state) {
    (void)state;
    assert_int_equal(pag_edit_distance("model", "model"), 0);
    assert_int_equal(pag_edit_distance("modle", "model"), 1);       /* a swap */
    assert_int_equal(pag_edit_distance("maxsteps", "maxSteps"), 0); /* case folded */
    assert_int_equal(pag_edit_distance("mdel", "model"), 1);
    assert_int_equal(pag_edit_distance("", "abc"), 3);
    assert_int_equal(pag_edit_distance("kitten", "sitting"), 3);
}

static void test_valid(void **state) {
    (void)state;
    findings f;
    assert_int_equal(
        check_text("{\"model\": \"openai:gpt-4o\", \"providers\": {\"openai\": {\"apiKey\": "
                   "\"k\"}, \"local\": {\"type\": \"openai\", \"baseUrl\": \"http://x\"}}, "
                   "\"permissions\": {\"allow\": \"*\"}, \"contextBudget\": 1000, \"maxSteps\": "
                   "3, \"maxRetries\": 0, \"closeGraceMs\": 0, \"models\": [\"openai:a\", "
                   "{\"id\": \"openai:b\", \"name\": \"B\", \"contextWindow\": 9, \"price\": "
                   "{\"input\": 1, \"output\": 2.5}}], \"sandbox\": {\"network\": false, "
                   "\"writable\": [\"/tmp\"]}, \"storage\": \"/x.db\", \"mcpServers\": {\"a\": "
                   "{\"command\": \"x\", \"args\": [\"y\"], \"env\": {}}, \"b\": {\"type\": "
                   "\"http\", \"url\": \"http://h\"}}, \"$schema\": \"x\"}",
                   &f),
        0);
    assert_int_equal(f.warnings, 0);
    assert_string_equal(f.text, "");
}

static void test_unknown_keys(void **state) {
    (void)state;
    findings f;
    assert_int_equal(check_text("{\"modle\": \"openai:x\", \"permissions\": {\"alow\": []}, "
                                "\"qqqqqqqq\": 1}",
                                &f),
                     0);
    assert_int_equal(f.warnings, 3);
    assert_non_null(strstr(f.text, "W unknown key \"modle\" (did you mean \"model\"?)"));
    assert_non_null(
        strstr(f.text, "W permissions: unknown key \"alow\" (did you mean \"allow\"?)"));
    assert_non_null(strstr(f.text, "W unknown key \"qqqqqqqq\" is ignored (known keys: model, "));
    /* nested: a provider's and an MCP server's keys */
    assert_int_equal(check_text("{\"providers\": {\"openai\": {\"apikey\": \"k\"}}, "
                                "\"mcpServers\": {\"s\": {\"command\": \"c\", \"arg\": []}}}",
                                &f),
                     0);
    assert_non_null(
        strstr(f.text, "W providers.openai: unknown key \"apikey\" (did you mean \"apiKey\"?)"));
    assert_non_null(strstr(f.text, "W mcpServers.s: unknown key \"arg\" (did you mean \"args\"?)"));
}

static void test_types(void **state) {
    (void)state;
    findings f;
    size_t n = check_text(
        "{\"model\": 5, \"maxSteps\": 0, \"maxRetries\": -1, \"contextBudget\": \"9\", "
        "\"providers\": {\"local\": {\"baseUrl\": \"http://x\"}}, \"permissions\": {\"allow\": "
        "[1]}, \"models\": [{\"name\": \"x\"}, {\"id\": \"a:b\", \"price\": {\"input\": \"1\"}}], "
        "\"sandbox\": {\"mode\": \"on\", \"writable\": [\"rel\"]}, \"storage\": 1, "
        "\"mcpServers\": {\"h\": {\"type\": \"http\"}, \"t\": {\"type\": \"tcp\", \"command\": "
        "\"c\"}}}",
        &f);
    assert_int_equal(n, f.errors);
    const char *want[] = {
        "E model: must be a string, not an integer",
        "E maxSteps: must be a positive integer, not zero or less",
        "E maxRetries: must be a non-negative integer, not below zero",
        "E contextBudget: must be a positive integer, not a string",
        "E providers.local: a provider other than openai and anthropic needs \"type\"",
        "E permissions.allow[0]: must be a string, not an integer",
        "E models[0]: needs \"id\": \"provider:model\"",
        "E models[1].price.input: must be a number",
        "E models[1].price.output: is missing; it must be a number (USD per million tokens)",
        "E sandbox.mode: the only mode is \"off\"",
        "E sandbox.writable: entry 0 (\"rel\") must be an absolute path",
        "E storage: must be a string, not an integer",
        "E mcpServers.h: a server of type \"http\" needs \"url\"",
        "E mcpServers.t.type: must be stdio, http, streamable-http or sse, not \"tcp\"",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        if (!strstr(f.text, want[i])) fail_msg("missing [%s] in:\n%s", want[i], f.text);
    if (n != sizeof want / sizeof want[0]) fail_msg("%zu findings:\n%s", n, f.text);
    /* not an object at all */
    assert_int_equal(check_text("[1]", &f), 1);
    assert_non_null(strstr(f.text, "settings must be a JSON object"));
}

/* "network": true (own namespace), false, or "host" (the host's, logged); the settings
 * parser agrees with the schema. */
static void test_sandbox_network(void **state) {
    (void)state;
    findings f;
    assert_int_equal(check_text("{\"sandbox\": {\"network\": \"host\"}}", &f), 0);
    assert_int_equal(f.warnings, 0);
    assert_int_equal(check_text("{\"sandbox\": {\"network\": \"yes\"}}", &f), 1);
    assert_non_null(strstr(f.text, "E sandbox.network: must be true (own network namespace), "
                                   "false, or \"host\""));
    const char *docs[] = {"{\"sandbox\": {\"network\": \"host\"}}",
                          "{\"sandbox\": {\"network\": true}}", "{}"};
    const bool net[] = {true, true, false}, host[] = {true, false, false};
    for (size_t i = 0; i < 3; i++) {
        pj_t *doc = pj_loads(docs[i], 0, NULL);
        assert_non_null(doc);
        pag_settings st;
        char err[256] = "";
        assert_int_equal(pag_settings_from_doc(&st, doc, err, sizeof err), 0);
        assert_int_equal(st.sandbox_network, net[i]);
        assert_int_equal(st.sandbox_host_network, host[i]);
        pag_settings_clear(&st);
        pj_decref(doc);
    }
    pj_t *bad = pj_loads("{\"sandbox\": {\"network\": \"yes\"}}", 0, NULL);
    pag_settings st;
    char err[256] = "";
    assert_int_not_equal(pag_settings_from_doc(&st, bad, err, sizeof err), 0);
    pag_settings_clear(&st);
    assert_non_null(strstr(err, "\"host\""));
    pj_decref(bad);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sandbox_network), cmocka_unit_test(test_distance),
        cmocka_unit_test(test_valid),           cmocka_unit_test(test_unknown_keys),
        cmocka_unit_test(test_types),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
