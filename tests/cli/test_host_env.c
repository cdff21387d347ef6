/*
 * test_host_env.c — the CLI's mapping of the environment and ~/.peri/ into the host
 * start object (src/cli/host_env.c): environment overrides of the settings document,
 * --settings FILE and '-' (first line of stdin, the frames after it left unread),
 * errors for documents that are not objects, and the start object's fields.
 */
#include "cli/host_env.h"

#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

static const char *env_vals[16][2];
static const char *fake_getenv(const char *name) {
    for (int i = 0; i < 16 && env_vals[i][0]; i++)
        if (!strcmp(env_vals[i][0], name)) return env_vals[i][1];
    return NULL;
}

static void test_env_overrides(void **state) {
    (void)state;
    pj_t *doc = pj_loads("{\"model\":\"anthropic:x\",\"providers\":{\"openai\":"
                         "{\"apiKey\":\"file\"}},\"mcpServers\":{}}",
                         0, NULL);
    memset(env_vals, 0, sizeof env_vals);
    env_vals[0][0] = "PERI_MODEL";
    env_vals[0][1] = "openai:gpt-x";
    env_vals[1][0] = "OPENAI_BASE_URL";
    env_vals[1][1] = "http://127.0.0.1:9/v1";
    env_vals[2][0] = "PERI_CLOSE_GRACE_MS";
    env_vals[2][1] = "250";
    env_vals[3][0] = "ANTHROPIC_API_KEY";
    env_vals[3][1] = ""; /* empty = unset */
    assert_int_equal(peri_settings_apply_env(doc, fake_getenv), 0);
    char *s = pj_dumps(doc, PJ_COMPACT | PJ_SORT_KEYS);
    assert_string_equal(s, "{\"closeGraceMs\":250,\"mcpServers\":{},\"model\":\"openai:gpt-x\","
                           "\"providers\":{\"openai\":{\"apiKey\":\"file\",\"baseUrl\":"
                           "\"http://127.0.0.1:9/v1\"}}}");
    free(s);
    pj_decref(doc);
}

static void test_settings_file_and_stdin(void **state) {
    (void)state;
    char dir[] = "/tmp/peri-hostenv-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128], err[512];
    snprintf(path, sizeof path, "%s/s.json", dir);
    FILE *f = fopen(path, "w");
    fputs("{\"model\":\"openai:m\"}", f);
    fclose(f);
    pj_t *doc = peri_settings_read(path, false, err, sizeof err);
    assert_non_null(doc);
    assert_string_equal(pj_string_value(pj_object_get(doc, "model")), "openai:m");
    pj_decref(doc);
    /* not an object */
    f = fopen(path, "w");
    fputs("[1]", f);
    fclose(f);
    assert_null(peri_settings_read(path, false, err, sizeof err));
    assert_non_null(strstr(err, "settings must be an object"));
    /* missing: an error unless optional */
    snprintf(path, sizeof path, "%s/none.json", dir);
    assert_null(peri_settings_read(path, false, err, sizeof err));
    doc = peri_settings_read(path, true, err, sizeof err);
    assert_non_null(doc);
    pj_decref(doc);
    /* '-': the first line of stdin; what follows stays for the JSON-RPC reader */
    int p[2];
    assert_int_equal(pipe(p), 0);
    const char *in = "{\"maxSteps\":7}\n{\"jsonrpc\":\"2.0\"}\n";
    assert_int_equal(write(p[1], in, strlen(in)), (ssize_t)strlen(in));
    close(p[1]);
    int saved = dup(0);
    dup2(p[0], 0);
    close(p[0]);
    doc = peri_settings_read("-", false, err, sizeof err);
    char rest[64] = "";
    ssize_t n = read(0, rest, sizeof rest - 1);
    dup2(saved, 0);
    close(saved);
    assert_non_null(doc);
    assert_int_equal(pj_integer_value(pj_object_get(doc, "maxSteps")), 7);
    pj_decref(doc);
    assert_true(n > 0);
    assert_string_equal(rest, "{\"jsonrpc\":\"2.0\"}\n");
    char cmd[96];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

static void test_start_object(void **state) {
    (void)state;
    char dir[] = "/tmp/peri-hostenv-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128], err[512];
    snprintf(path, sizeof path, "%s/s.json", dir);
    FILE *f = fopen(path, "w");
    fputs("{\"model\":\"openai:m\"}", f);
    fclose(f);
    char db[128];
    snprintf(db, sizeof db, "%s/x.db", dir);
    peri_host_args a = {.cwd = dir,
                        .db = db,
                        .settings = path,
                        .machine_id = "cccccccc-0000-4000-8000-00000000000c",
                        .shared_store = true};
    peri_host_start h;
    assert_int_equal(peri_host_start_init(&h, &a, err, sizeof err), 0);
    assert_string_equal(h.opt.cwd, dir);
    assert_string_equal(h.opt.storage.locator, db);
    assert_true(h.opt.storage.shared);
    assert_string_equal(h.opt.machine_id, "cccccccc-0000-4000-8000-00000000000c");
    assert_non_null(pj_object_get(h.opt.settings, "model"));
    peri_host_start_clear(&h);
    char cmd[96];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* the standard libpq environment fills what a store URL leaves out; the URL
 * wins; values are percent-encoded; non-URLs pass through. */
static void test_store_url_env(void **state) {
    (void)state;
    memset(env_vals, 0, sizeof env_vals);
    env_vals[0][0] = "PGHOST";
    env_vals[0][1] = "/run/pg sock";
    env_vals[1][0] = "PGPASSWORD";
    env_vals[1][1] = "p&w=d";
    env_vals[2][0] = "PGUSER";
    env_vals[2][1] = "envuser";
    env_vals[3][0] = "PGPORT";
    env_vals[3][1] = ""; /* empty = unset */
    char *u = peri_store_url_apply_env("postgresql://urluser@/peri", fake_getenv);
    assert_non_null(u);
    assert_string_equal(u, "postgresql://urluser@/peri?host=%2Frun%2Fpg%20sock&password=p%26w%3Dd");
    free(u);
    u = peri_store_url_apply_env("postgresql:///peri?sslmode=require&host=/h", fake_getenv);
    assert_string_equal(
        u, "postgresql:///peri?sslmode=require&host=/h&user=envuser&password=p%26w%3Dd");
    free(u);
    memset(env_vals, 0, sizeof env_vals);
    u = peri_store_url_apply_env("postgres://h:5433/db", fake_getenv);
    assert_string_equal(u, "postgres://h:5433/db");
    free(u);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_env_overrides),
        cmocka_unit_test(test_settings_file_and_stdin),
        cmocka_unit_test(test_start_object),
        cmocka_unit_test(test_store_url_env),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
