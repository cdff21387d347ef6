/*
 * test_oauth.c — MCP OAuth end to end against tests/mcp/oauth_server.py (a local
 * authorization server, protected streamable-HTTP MCP endpoints and an "evil" origin
 * that records whatever reaches it): the full login with a scripted browser step (the
 * test follows the login URL itself, after first trying a callback with a wrong state),
 * the stored token reused without a login, refresh after the server dropped the access
 * token, and the attempts to get a token or a code to another origin (a redirect of
 * the MCP server, resource metadata naming another resource, an authorization server
 * whose token endpoint is elsewhere) — each must fail and leave EVIL empty-handed.
 *
 * usage: test_oauth PYTHON SERVER_SCRIPT
 */
#include "mcp/oauth_int.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <dirent.h>
#include "peri/json.h"
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *g_python, *g_script;

/* assert_non_null that prints why (err) on failure */
#define assert_non_null_msg(p, why)                                                                \
    do {                                                                                           \
        if (!(p)) fail_msg("%s", why);                                                             \
    } while (0)
static pid_t g_pid;
static int g_in = -1;
static int g_as, g_mcp, g_evil;
static char g_dir[256];

/* ---------------------------------------------------------------- helpers */

typedef struct buf {
    char *p;
    size_t n;
} buf;

static size_t on_data(char *b, size_t sz, size_t n, void *ud) {
    buf *o = ud;
    char *np = realloc(o->p, o->n + sz * n + 1);
    if (!np) return 0;
    memcpy(np + o->n, b, sz * n);
    o->p = np;
    o->n += sz * n;
    o->p[o->n] = '\0';
    return sz * n;
}

/* GET (post NULL) or POST; follows redirects when follow. Status; body in *out. */
static long fetch(const char *url, const char *post, bool follow, char **out) {
    CURL *e = curl_easy_init();
    buf b = {0};
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, follow ? 1L : 0L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT, 20L);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &b);
    if (post) curl_easy_setopt(e, CURLOPT_POSTFIELDS, post);
    long st = -1;
    if (curl_easy_perform(e) == CURLE_OK) curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &st);
    curl_easy_cleanup(e);
    if (out)
        *out = b.p;
    else
        free(b.p);
    return st;
}

static char *url_of(int port, const char *path) {
    char *u = malloc(256);
    snprintf(u, 256, "http://127.0.0.1:%d%s", port, path);
    return u;
}

/* The number of requests EVIL saw, and whether any carried a token or a code. */
static size_t evil_requests(bool *leaked) {
    char *u = url_of(g_evil, "/control/log"), *body = NULL;
    assert_int_equal(fetch(u, NULL, false, &body), 200);
    pj_t *j = pj_loads(body, 0, NULL);
    pj_t *log = pj_object_get(j, "log");
    *leaked = false;
    size_t i;
    pj_t *e;
    pj_array_foreach(log, i, e) {
        if (pj_string_value(pj_object_get(e, "authorization"))) *leaked = true;
        const char *b = pj_string_value(pj_object_get(e, "body"));
        if (b && (strstr(b, "refresh_token=") || strstr(b, "code="))) *leaked = true;
    }
    size_t n = pj_array_size(log);
    pj_decref(j);
    free(body);
    free(u);
    return n;
}

static long stat_of(const char *key) {
    char *u = url_of(g_as, "/control/stats"), *body = NULL;
    assert_int_equal(fetch(u, NULL, false, &body), 200);
    pj_t *j = pj_loads(body, 0, NULL);
    long v = (long)pj_integer_value(pj_object_get(j, key));
    pj_decref(j);
    free(body);
    free(u);
    return v;
}

/* ---------------------------------------------------------------- the browser */

typedef struct browser {
    int shown;
    char server[64];
    pthread_t th;
    bool started;
    char *url;
    long wrong_state_status; /* what the loopback listener answered a forged callback */
    long final_status;
} browser;

static void *browse(void *arg) {
    browser *b = arg;
    /* A forged callback first: the right port, a wrong state. */
    const char *r = strstr(b->url, "redirect_uri=");
    int port = 0;
    if (r) sscanf(r, "redirect_uri=http%%3A%%2F%%2F127.0.0.1%%3A%d", &port);
    char forged[128];
    snprintf(forged, sizeof forged, "http://127.0.0.1:%d/callback?code=forged&state=wrong", port);
    b->wrong_state_status = fetch(forged, NULL, false, NULL);
    b->final_status = fetch(b->url, NULL, true, NULL);
    return NULL;
}

static void show_login(void *ctx, const char *server, const char *url) {
    browser *b = ctx;
    b->shown++;
    snprintf(b->server, sizeof b->server, "%s", server);
    free(b->url);
    b->url = strdup(url);
    b->started = pthread_create(&b->th, NULL, browse, b) == 0;
}

static void browser_done(browser *b) {
    if (b->started) pthread_join(b->th, NULL);
    b->started = false;
    free(b->url);
    b->url = NULL;
}

static pmcp_client *connect_to(const char *path, browser *b, char *err, size_t errlen) {
    pmcp_oauth_opts o = {
        .dir = g_dir, .show_login = b ? show_login : NULL, .ctx = b, .login_timeout_ms = 20000};
    pmcp_client_opts co = {.oauth = &o, .init_timeout_ms = 20000};
    char *u = url_of(g_mcp, path);
    pmcp_server_config cfg = {.name = "remote", .kind = PMCP_HTTP, .url = u};
    pmcp_client *c = pmcp_client_connect(&cfg, &co, err, errlen);
    free(u);
    if (b) browser_done(b);
    return c;
}

static bool call_ok(pmcp_client *c) {
    pmcp_call_result r;
    pmcp_status st = pmcp_client_call(c, "whoami", "{}", NULL, NULL, NULL, 10000, &r);
    bool ok = st == PMCP_OK && !r.is_error && r.text && strstr(r.text, "hello from the protected");
    pmcp_call_result_clear(&r);
    return ok;
}

/* ---------------------------------------------------------------- tests */

static void test_url_rules(void **state) {
    (void)state;
    char *c = pmcp__oa_canonical("HTTPS://Example.COM:443/mcp/");
    assert_string_equal(c, "https://example.com/mcp");
    free(c);
    c = pmcp__oa_canonical("http://127.0.0.1:8080/a?x=1#f");
    assert_string_equal(c, "http://127.0.0.1:8080/a");
    free(c);
    assert_null(pmcp__oa_canonical("ftp://example.com/"));
    assert_true(pmcp__oa_secure("https://example.com/x"));
    assert_true(pmcp__oa_secure("http://127.0.0.1:9/x"));
    assert_true(pmcp__oa_secure("http://localhost:9/x"));
    assert_false(pmcp__oa_secure("http://example.com/x"));
    assert_false(pmcp__oa_secure("http://127.0.0.1.evil.com/x"));
    /* a remote server cannot send Peri to plain HTTP on this machine */
    assert_false(pmcp__oa_secure_for("http://127.0.0.1:9/meta", "https://mcp.example.com/mcp"));
    assert_true(pmcp__oa_secure_for("https://as.example.com/", "https://mcp.example.com/mcp"));
    assert_true(pmcp__oa_secure_for("http://127.0.0.1:9/meta", "http://127.0.0.1:8/mcp"));
    char err[256];
    pmcp_oauth_opts o = {.dir = g_dir, .show_login = show_login};
    assert_int_equal(pmcp_oauth_login(&o, "x", "http://example.invalid/mcp", err, sizeof err), -1);
}

static void test_full_flow_then_reuse_then_refresh(void **state) {
    (void)state;
    browser b = {0};
    char err[512] = "";
    pmcp_client *c = connect_to("/mcp", &b, err, sizeof err);
    assert_non_null_msg(c, err);
    assert_int_equal(b.shown, 1);
    assert_string_equal(b.server, "remote");
    assert_int_equal(b.wrong_state_status, 400); /* a forged callback is refused */
    assert_int_equal(b.final_status, 200);
    assert_true(call_ok(c));

    /* the token store: 0700 directory, one 0600 file */
    struct stat st;
    assert_int_equal(stat(g_dir, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    DIR *d = opendir(g_dir);
    struct dirent *de;
    int files = 0;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        char p[512];
        snprintf(p, sizeof p, "%s/%s", g_dir, de->d_name);
        assert_int_equal(stat(p, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0600);
        files++;
    }
    closedir(d);
    assert_int_equal(files, 1);

    /* the server drops every access token: the next call refreshes and goes on */
    long before = stat_of("refresh");
    char *u = url_of(g_as, "/control/expire");
    assert_int_equal(fetch(u, "", false, NULL), 200);
    free(u);
    assert_true(call_ok(c));
    assert_true(stat_of("refresh") > before);
    pmcp_client_close(c);

    /* a new connection uses the stored token: no login shown */
    c = connect_to("/mcp", NULL, err, sizeof err);
    assert_non_null_msg(c, err);
    assert_true(call_ok(c));
    pmcp_client_close(c);
}

static void test_no_ui_means_no_login(void **state) {
    (void)state;
    char err[512] = "";
    /* /redir is another resource: the /mcp token is not used for it */
    pmcp_client *c = connect_to("/redir", NULL, err, sizeof err);
    assert_null(c);
    assert_non_null(strstr(err, "peri mcp login"));
}

static void test_redirect_keeps_the_token(void **state) {
    (void)state;
    browser b = {0};
    char err[512] = "";
    pmcp_client *c = connect_to("/redir", &b, err, sizeof err);
    assert_non_null_msg(c, err);
    assert_int_equal(b.shown, 1);
    assert_false(call_ok(c)); /* the 307 to EVIL is an error, not followed */
    pmcp_client_close(c);
    bool leaked;
    assert_int_equal(evil_requests(&leaked), 0);
    assert_false(leaked);
}

static void test_metadata_naming_another_resource(void **state) {
    (void)state;
    browser b = {0};
    char err[512] = "";
    pmcp_client *c = connect_to("/badres", &b, err, sizeof err);
    assert_null(c);
    assert_int_equal(b.shown, 0);
    assert_non_null_msg(strstr(err, "names another resource"), err);
}

static void test_token_endpoint_on_another_origin(void **state) {
    (void)state;
    browser b = {0};
    char err[512] = "";
    pmcp_client *c = connect_to("/badtok", &b, err, sizeof err);
    assert_null(c);
    assert_int_equal(b.shown, 0);
    assert_non_null_msg(strstr(err, "another origin"), err);
    bool leaked;
    assert_int_equal(evil_requests(&leaked), 0);
    assert_false(leaked);
}

/* ---------------------------------------------------------------- setup */

static int start_server(void) {
    int in[2], out[2];
    if (pipe(in) || pipe(out)) return -1;
    g_pid = fork();
    if (g_pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[1]);
        close(out[0]);
        execlp(g_python, g_python, g_script, (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    g_in = in[1];
    FILE *f = fdopen(out[0], "r");
    char line[256];
    if (!f || !fgets(line, sizeof line, f)) return -1;
    pj_t *j = pj_loads(line, 0, NULL);
    g_as = (int)pj_integer_value(pj_object_get(j, "as"));
    g_mcp = (int)pj_integer_value(pj_object_get(j, "mcp"));
    g_evil = (int)pj_integer_value(pj_object_get(j, "evil"));
    pj_decref(j);
    return g_as && g_mcp && g_evil ? 0 : -1;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: test_oauth PYTHON SERVER_SCRIPT\n");
        return 2;
    }
    g_python = argv[1];
    g_script = argv[2];
    signal(SIGPIPE, SIG_IGN);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    char tmpl[] = "/tmp/peri-oauth-XXXXXX";
    char *base = mkdtemp(tmpl);
    if (!base) return 2;
    snprintf(g_dir, sizeof g_dir, "%s/.peri/oauth", base); /* created by the first login */
    if (start_server()) {
        fprintf(stderr, "test_oauth: the test server did not start\n");
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_url_rules),
        cmocka_unit_test(test_full_flow_then_reuse_then_refresh),
        cmocka_unit_test(test_no_ui_means_no_login),
        cmocka_unit_test(test_redirect_keeps_the_token),
        cmocka_unit_test(test_metadata_naming_another_resource),
        cmocka_unit_test(test_token_endpoint_on_another_origin),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    close(g_in);
    waitpid(g_pid, NULL, 0);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
    if (system(cmd) != 0) rc = rc ? rc : 1;
    curl_global_cleanup();
    return rc;
}
