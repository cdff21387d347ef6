/*
 * test_capability.c — the capability dispatch of room guests against a real HTTP
 * server (cmocka). The test starts its own listener on 127.0.0.1 (a thread answering
 * GET /hello, /redirect, /big and 404 otherwise, counting the requests it saw).
 *
 * Unit mode (no argument): the session's handler (tools/fetch_cap.c) on its own —
 * refused with network off (nothing sent, not committed); only http/https; the host
 * allow-list; this machine's addresses refused unless `local` (nothing sent); a body;
 * a 404, a redirect (not followed) and an oversized body fail as committed; file
 * operations without a lease are refused.
 *
 * Run mode (--run PYTHON_DIR): Python in the room through placement and through the
 * `run` tool: peri.fetch refused by default (PermissionError, evidence refused, the
 * server saw nothing); allowed, the body comes back, the dispatch is in the report,
 * the evidence and _meta["peri.placement"], committed, and promotion is ruled out
 * with the reason said; and the source-pass stage chosen per call ("source_pass") for
 * each path: disabled, not applicable, transform failed, derived, derived then failed.
 * Ruby mode (--ruby PYTHON_DIR RUBY_WASM): Ruby's Peri module over the file face
 * through the run tool (refused, allowed, a malformed request recorded as invalid).
 * Exit 77 when a build is missing (1 under CI=true).
 */
#include "peri/place.h"
#include "peri/room.h"
#include "peri/tools.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include "peri/json.h"
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* ---------------------------------------------------------------- the server */

typedef struct server {
    int fd;
    int port;
    pthread_t th;
    atomic_int requests;
} server;

static server g_srv;
static char g_base[64]; /* "http://127.0.0.1:PORT" */

static void answer(int c) {
    char req[2048];
    size_t n = 0;
    while (n < sizeof req - 1) {
        ssize_t k = read(c, req + n, sizeof req - 1 - n);
        if (k <= 0) break;
        n += (size_t)k;
        req[n] = 0;
        if (strstr(req, "\r\n\r\n")) break;
    }
    req[n] = 0;
    atomic_fetch_add(&g_srv.requests, 1);
    char head[512];
    const char *body = "";
    size_t blen = 0;
    char *big = NULL;
    if (strncmp(req, "GET /hello ", 11) == 0) {
        body = "hello from the host\n";
        blen = strlen(body);
        snprintf(head, sizeof head,
                 "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n", blen);
    } else if (strncmp(req, "GET /redirect ", 14) == 0) {
        snprintf(head, sizeof head,
                 "HTTP/1.1 302 Found\r\nLocation: file:///etc/passwd\r\nContent-Length: "
                 "0\r\nConnection: close\r\n\r\n");
    } else if (strncmp(req, "GET /big ", 9) == 0) {
        blen = 64 * 1024;
        big = malloc(blen);
        memset(big, 'x', blen);
        body = big;
        snprintf(head, sizeof head,
                 "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n", blen);
    } else {
        body = "no\n";
        blen = 3;
        snprintf(head, sizeof head,
                 "HTTP/1.1 404 Not Found\r\nContent-Length: 3\r\nConnection: close\r\n\r\n");
    }
    if (write(c, head, strlen(head)) < 0 || (blen && write(c, body, blen) < 0)) {
        /* the client may have gone (a body limit): nothing to do */
    }
    free(big);
}

static void *serve(void *arg) {
    (void)arg;
    for (;;) {
        int c = accept(g_srv.fd, NULL, NULL);
        if (c < 0) return NULL; /* closed at the end */
        answer(c);
        close(c);
    }
}

static int server_start(void **state) {
    (void)state;
    g_srv.fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    if (g_srv.fd < 0 || bind(g_srv.fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        listen(g_srv.fd, 16) != 0 || getsockname(g_srv.fd, (struct sockaddr *)&a, &al) != 0)
        return -1;
    g_srv.port = ntohs(a.sin_port);
    snprintf(g_base, sizeof g_base, "http://127.0.0.1:%d", g_srv.port);
    return pthread_create(&g_srv.th, NULL, serve, NULL) == 0 ? 0 : -1;
}

static int server_stop(void **state) {
    (void)state;
    shutdown(g_srv.fd, SHUT_RDWR);
    close(g_srv.fd);
    pthread_join(g_srv.th, NULL);
    return 0;
}

/* ---------------------------------------------------------------- unit */

static pr_cap_status call(ptl_fetch_cap *fc, const char *op, const char *arg, pb_buf *reply,
                          bool *committed) {
    reply->len = 0;
    pr_cap_call c = {{op, strlen(op)}, {arg, strlen(arg)}, {"", 0}};
    pr_cap_status st = ptl_fetch_cap_handle(fc, &c, reply, committed);
    pb_buf_putc(reply, 0);
    reply->len--;
    return st;
}

static void test_handler(void **state) {
    (void)state;
    pb_buf r = {0};
    bool com = true;
    char url[128];
    snprintf(url, sizeof url, "%s/hello", g_base);
    int seen = atomic_load(&g_srv.requests);

    ptl_fetch_cap off = {0};
    assert_int_equal(call(&off, "http.fetch", url, &r, &com), PR_CAP_REFUSED);
    assert_false(com);
    assert_non_null(strstr(r.p, "network policy does not allow"));
    assert_int_equal(call(NULL, "http.fetch", url, &r, &com), PR_CAP_REFUSED);

    ptl_fetch_cap net = {.network = true};
    assert_int_equal(call(&net, "http.fetch", "file:///etc/passwd", &r, &com), PR_CAP_REFUSED);
    assert_false(com);
    assert_int_equal(call(&net, "http.fetch", "ftp://127.0.0.1/", &r, &com), PR_CAP_REFUSED);
    assert_int_equal(call(&net, "http.fetch", "not a url", &r, &com), PR_CAP_INVALID);
    /* this machine: refused at connect time, nothing sent */
    assert_int_equal(call(&net, "http.fetch", url, &r, &com), PR_CAP_REFUSED);
    assert_false(com);
    assert_non_null(strstr(r.p, "this machine"));
    char alias[128];
    snprintf(alias, sizeof alias, "http://[::ffff:127.0.0.1]:%d/hello", g_srv.port);
    assert_int_equal(call(&net, "http.fetch", alias, &r, &com), PR_CAP_REFUSED);
    snprintf(alias, sizeof alias, "http://localhost:%d/hello", g_srv.port);
    assert_int_equal(call(&net, "http.fetch", alias, &r, &com), PR_CAP_REFUSED);
    assert_int_equal(atomic_load(&g_srv.requests), seen);

    const char *hosts[] = {"example.org"};
    ptl_fetch_cap listed = {.network = true, .local = true, .hosts = hosts, .nhosts = 1};
    assert_int_equal(call(&listed, "http.fetch", url, &r, &com), PR_CAP_REFUSED);
    assert_non_null(strstr(r.p, "allowed hosts"));
    assert_int_equal(atomic_load(&g_srv.requests), seen);

    ptl_fetch_cap local = {.network = true, .local = true, .max_bytes = 1024};
    assert_int_equal(call(&local, "http.fetch", url, &r, &com), PR_CAP_OK);
    assert_true(com);
    assert_string_equal(r.p, "hello from the host\n");
    assert_int_equal(atomic_load(&g_srv.requests), seen + 1);
    snprintf(url, sizeof url, "%s/missing", g_base);
    assert_int_equal(call(&local, "http.fetch", url, &r, &com), PR_CAP_FAILED);
    assert_true(com);
    assert_string_equal(r.p, "failed: HTTP status 404");
    snprintf(url, sizeof url, "%s/redirect", g_base);
    assert_int_equal(call(&local, "http.fetch", url, &r, &com), PR_CAP_FAILED);
    assert_non_null(strstr(r.p, "redirect to file:///etc/passwd (redirects are not followed)"));
    snprintf(url, sizeof url, "%s/big", g_base);
    assert_int_equal(call(&local, "http.fetch", url, &r, &com), PR_CAP_FAILED);
    assert_non_null(strstr(r.p, "over the 1024-byte limit"));
    assert_true(r.len < 1024);

    /* file operations: the lease's, refused without one; unknown operations invalid */
    assert_int_equal(call(&local, "file.read", "x.txt", &r, &com), PR_CAP_REFUSED);
    assert_false(com);
    assert_int_equal(call(&local, "process.spawn", "sh", &r, &com), PR_CAP_INVALID);
    pb_buf_free(&r);
}

/* ---------------------------------------------------------------- run mode */

static const char *g_dir, *g_ruby_wasm;
static pr_host *g_room;
static pr_python *g_py;
static pr_ruby *g_rb;
static pl_ruby_hook g_hook, g_rb_hook;
static pl_ctx *g_pc;

static int room_up(void **state) {
    if (server_start(state) != 0) return -1;
    pr_error re;
    g_room = pr_host_new(NULL, &re);
    g_py = g_room ? pr_python_new(g_room, g_dir) : NULL;
    if (!g_py) return -1;
    g_hook = pl_python_room_hook(g_py);
    g_rb = g_ruby_wasm ? pr_ruby_new(g_room, g_ruby_wasm) : NULL;
    g_rb_hook = pl_ruby_room_hook(g_rb);
    pl_config cfg = {.room = g_room, .python_hook = &g_hook, .ruby_hook = g_rb ? &g_rb_hook : NULL};
    pl_error err;
    g_pc = pl_new(&cfg, &err);
    return g_pc ? 0 : -1;
}

static int room_down(void **state) {
    pl_free(g_pc);
    pr_python_free(g_py);
    pr_ruby_free(g_rb);
    pr_host_free(g_room);
    return server_stop(state);
}

static const char FETCH_PY[] = "import peri, sys\n"
                               "try:\n"
                               "    print(peri.fetch(sys.stdin.read()).decode(), end='')\n"
                               "except PermissionError as e:\n"
                               "    print('refused:', e)\n";

static void test_placed_fetch(void **state) {
    (void)state;
    char url[128];
    snprintf(url, sizeof url, "%s/hello", g_base);
    int seen = atomic_load(&g_srv.requests);
    pl_request r = {.run_id = "cap",
                    .kind = PL_PROGRAM_PYTHON,
                    .program = FETCH_PY,
                    .stdin_data = url,
                    .stdin_len = strlen(url)};
    /* default: no handler at all — refused by the room */
    pl_policy pol = {.native = PL_NATIVE_NO};
    pl_report rep;
    pl_error err = {0};
    assert_true(pl_run(g_pc, &r, &pol, NULL, &rep, &err));
    assert_true(rep.result.ok);
    assert_non_null(strstr(rep.result.stdout_text, "refused: refused: no capability"));
    assert_int_equal(rep.caps.n, 1);
    assert_int_equal(rep.caps.v[0].status, PR_CAP_REFUSED);
    assert_false(rep.caps.committed);
    assert_string_equal(rep.no_promotion, "");
    assert_non_null(strstr(rep.evidence[0], "\"capabilities\":[{\"op\":\"http.fetch\""));
    assert_non_null(strstr(rep.evidence[0], "\"effects_committed\":false"));
    pl_report_clear(&rep);

    /* the session's handler, network off: refused, nothing sent */
    ptl_fetch_cap fc = {.network = false};
    pol.capability = ptl_fetch_cap_handle;
    pol.cap_ud = &fc;
    assert_true(pl_run(g_pc, &r, &pol, NULL, &rep, &err));
    assert_non_null(strstr(rep.result.stdout_text, "refused: refused: the session's network"));
    assert_false(rep.caps.committed);
    pl_report_clear(&rep);
    assert_int_equal(atomic_load(&g_srv.requests), seen);

    /* allowed: the body, a committed dispatch, no promotion and why */
    fc = (ptl_fetch_cap){.network = true, .local = true};
    assert_true(pl_run(g_pc, &r, &pol, NULL, &rep, &err));
    assert_true(rep.result.ok);
    assert_string_equal(rep.result.stdout_text, "hello from the host\n");
    assert_int_equal(atomic_load(&g_srv.requests), seen + 1);
    assert_int_equal(rep.caps.n, 1);
    assert_int_equal(rep.caps.v[0].status, PR_CAP_OK);
    assert_true(rep.caps.v[0].committed);
    assert_string_equal(rep.caps.v[0].arg, url);
    assert_true(rep.caps.committed);
    assert_int_equal(rep.ndecisions, 1);
    assert_false(rep.has_outcome);
    assert_non_null(strstr(rep.no_promotion, "committed an effect outside the room"));
    assert_non_null(strstr(rep.evidence[0], "\"effects_committed\":true"));
    assert_non_null(strstr(rep.evidence[0], "\"promotion\":\"impossible: a capability"));
    pl_report_clear(&rep);
}

/* The run tool over the same placement context, with a session policy. */
static char *tool(const pl_policy *pol, const char *input, pj_t **meta) {
    ptl_sandbox sb = {.place = g_pc, .policy = pol};
    char cwd[4096];
    assert_non_null(getcwd(cwd, sizeof cwd));
    ptl_ctx ctx = {.cwd = cwd, .sandbox = &sb};
    ptl_result res;
    assert_int_equal(ptl_run(ptl_find("run"), input, &ctx, &res), PTL_OK);
    char *out = strdup(res.output);
    pj_t *m = res.meta_json ? pj_loads(res.meta_json, 0, NULL) : NULL;
    *meta = m ? pj_incref(pj_object_get(m, "peri.placement")) : NULL;
    pj_decref(m);
    ptl_result_clear(&res);
    return out;
}

static char *input_lang(const char *lang, const char *src, const char *stdin_text,
                        const char *source_pass) {
    pj_t *o = pj_pack("{s:s}", lang, src);
    if (stdin_text) pj_object_set_new(o, "stdin", pj_string(stdin_text));
    if (source_pass) pj_object_set_new(o, "source_pass", pj_string(source_pass));
    char *s = pj_dumps(o, PJ_COMPACT);
    pj_decref(o);
    return s;
}

static char *input_of(const char *src, const char *stdin_text, const char *source_pass) {
    return input_lang("python", src, stdin_text, source_pass);
}

static void test_tool_fetch(void **state) {
    (void)state;
    char url[128];
    snprintf(url, sizeof url, "%s/hello", g_base);
    char *in = input_of(FETCH_PY, url, NULL);
    int seen = atomic_load(&g_srv.requests);
    pj_t *meta;
    /* the session's policy: network off (the default) */
    pl_policy pol = {.native = PL_NATIVE_NO};
    char *out = tool(&pol, in, &meta);
    assert_non_null(strstr(out, "refused: refused: the session's network policy"));
    assert_string_equal(pj_string_value(pj_object_get(meta, "backend")), "wasm_room");
    pj_t *c0 = pj_array_get(pj_object_get(meta, "capabilities"), 0);
    assert_string_equal(pj_string_value(pj_object_get(c0, "op")), "http.fetch");
    assert_string_equal(pj_string_value(pj_object_get(c0, "status")), "refused");
    assert_true(pj_is_false(pj_object_get(c0, "committed")));
    assert_null(pj_object_get(meta, "no_promotion"));
    assert_int_equal(atomic_load(&g_srv.requests), seen);
    pj_decref(meta);
    free(out);
    /* network allowed, sharing the host's network: the body comes back */
    pol.network_allowed = pol.host_network = true;
    out = tool(&pol, in, &meta);
    assert_non_null(strstr(out, "hello from the host\n"));
    c0 = pj_array_get(pj_object_get(meta, "capabilities"), 0);
    assert_string_equal(pj_string_value(pj_object_get(c0, "status")), "ok");
    assert_true(pj_is_true(pj_object_get(c0, "committed")));
    assert_non_null(strstr(pj_string_value(pj_object_get(c0, "at")), "T"));
    assert_non_null(pj_string_value(pj_object_get(meta, "no_promotion")));
    assert_int_equal(atomic_load(&g_srv.requests), seen + 1);
    pj_decref(meta);
    free(out);
    /* network allowed but not the host's: this machine stays out of reach */
    pol.host_network = false;
    out = tool(&pol, in, &meta);
    assert_non_null(strstr(out, "refused: refused: the URL resolves to this machine"));
    assert_int_equal(atomic_load(&g_srv.requests), seen + 1);
    pj_decref(meta);
    free(out);
    free(in);
}

/* Ruby's Peri module: the same dispatch through its file face. */
static const char FETCH_RB[] = "begin\n"
                               "  print Peri.fetch(STDIN.read)\n"
                               "rescue Peri::RefusedError => e\n"
                               "  puts \"refused: #{e.message}\"\n"
                               "end\n"
                               "File.binwrite('/.peri/capability/request', 'no newline')\n"
                               "puts File.binread('/.peri/capability/reply')\n"
                               "puts File.binread('/.peri/capability/reply')\n"
                               "begin\n"
                               "  Peri.read_text('x.txt')\n"
                               "rescue Peri::RefusedError => e\n"
                               "  puts \"read refused\"\n"
                               "end\n";

static void test_tool_ruby(void **state) {
    (void)state;
    assert_non_null(g_rb);
    char url[128];
    snprintf(url, sizeof url, "%s/hello", g_base);
    char *in = input_lang("ruby", FETCH_RB, url, NULL);
    int seen = atomic_load(&g_srv.requests);
    pj_t *meta;
    pl_policy pol = {.native = PL_NATIVE_NO};
    char *out = tool(&pol, in, &meta);
    assert_non_null(strstr(out, "refused: refused: the session's network policy"));
    /* a malformed request is recorded as invalid; the reply then opens as it is */
    assert_non_null(
        strstr(out, "3\ninvalid: a request is \"OP\\nARG\\n\" then the data\n3\ninvalid"));
    assert_non_null(strstr(out, "read refused"));
    pj_t *caps = pj_object_get(meta, "capabilities");
    assert_int_equal(pj_array_size(caps), 3);
    assert_string_equal(pj_string_value(pj_object_get(pj_array_get(caps, 1), "status")), "invalid");
    assert_int_equal(atomic_load(&g_srv.requests), seen);
    pj_decref(meta);
    free(out);
    pol.network_allowed = pol.host_network = true;
    out = tool(&pol, in, &meta);
    assert_non_null(strstr(out, "hello from the host\n"));
    pj_t *c0 = pj_array_get(pj_object_get(meta, "capabilities"), 0);
    assert_string_equal(pj_string_value(pj_object_get(c0, "status")), "ok");
    assert_true(pj_is_true(pj_object_get(c0, "committed")));
    assert_non_null(pj_string_value(pj_object_get(meta, "no_promotion")));
    assert_int_equal(atomic_load(&g_srv.requests), seen + 1);
    pj_decref(meta);
    free(out);
    free(in);
}

static const char *sp_field(pj_t *meta, const char *k) {
    return pj_string_value(pj_object_get(pj_object_get(meta, "source_pass"), k));
}

static void test_tool_source_pass(void **state) {
    (void)state;
    pl_policy pol = {.native = PL_NATIVE_NO};
    pj_t *meta;
    struct {
        const char *src, *sp, *out, *path, *reason;
    } cases[] = {
        /* derived: the REPL's values are printed */
        {"1 + 1\nprint('x')\n", "repl_print", "2\nx\n", "derived", "transformed"},
        /* disabled (explicitly, and by default): the original */
        {"1 + 1\nprint('x')\n", "off", "x\n", "original", "disabled"},
        {"1 + 1\nprint('x')\n", NULL, "x\n", "original", "disabled"},
        /* not applicable: nothing to rewrite */
        {"if True:\n    print(1)\n", "repl_print", "1\n", "original", "not applicable"},
        /* transform failed: the original runs (and fails by itself) */
        {"print('before')\nx = '''\n", "repl_print", "SyntaxError", "original", "transform failed"},
        /* derived, started, then failed: reported once, never replayed */
        {"print('once')\n1 / 0\n", "repl_print", "ZeroDivisionError", "derived", "transformed"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *in = input_of(cases[i].src, NULL, cases[i].sp);
        char *out = tool(&pol, in, &meta);
        assert_non_null(strstr(out, cases[i].out));
        assert_string_equal(sp_field(meta, "path"), cases[i].path);
        assert_non_null(strstr(sp_field(meta, "reason"), cases[i].reason));
        assert_int_equal(pj_array_size(pj_object_get(meta, "decisions")), 1);
        if (i == 5) {
            /* once: "once" printed a single time */
            char *a = strstr(out, "once\n");
            assert_non_null(a);
            assert_null(strstr(a + 5, "once\n"));
        }
        pj_decref(meta);
        free(out);
        free(in);
    }
    /* a bad value is a tool error */
    char *in = input_of("1\n", NULL, "rewrite_all");
    ptl_sandbox sb = {.place = g_pc, .policy = &pol};
    ptl_ctx ctx = {.cwd = "/", .sandbox = &sb};
    ptl_result res;
    assert_int_equal(ptl_run(ptl_find("run"), in, &ctx, &res), PTL_OK);
    assert_true(res.is_error);
    assert_non_null(strstr(res.output, "\"source_pass\" is \"repl_print\" or \"off\""));
    ptl_result_clear(&res);
    free(in);
}

/* Exit 77 when a build is missing (1 under CI=true: CI builds both). */
static int missing(const char *what, const char *path) {
    const char *ci = getenv("CI");
    bool fail = ci && !strcmp(ci, "true");
    printf("%s: %s is missing at %s (scripts/deps.sh)\n", fail ? "FAIL (CI)" : "SKIPPED", what,
           path);
    return fail ? 1 : 77;
}

int main(int argc, char **argv) {
    bool run = argc == 3 && !strcmp(argv[1], "--run");
    bool ruby = argc == 4 && !strcmp(argv[1], "--ruby");
    if (run || ruby) {
        g_dir = argv[2];
        char p[4096];
        snprintf(p, sizeof p, "%s/python.wasm", g_dir);
        if (access(p, R_OK) != 0) return missing("CPython's WASI build", p);
        if (ruby && access(argv[3], R_OK) != 0) return missing("Ruby's WebAssembly build", argv[3]);
        g_ruby_wasm = ruby ? argv[3] : NULL;
        const struct CMUnitTest python[] = {
            cmocka_unit_test(test_placed_fetch),
            cmocka_unit_test(test_tool_fetch),
            cmocka_unit_test(test_tool_source_pass),
        };
        const struct CMUnitTest rb[] = {cmocka_unit_test(test_tool_ruby)};
        return ruby ? cmocka_run_group_tests(rb, room_up, room_down)
                    : cmocka_run_group_tests(python, room_up, room_down);
    }
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_handler)};
    return cmocka_run_group_tests(tests, server_start, server_stop);
}
