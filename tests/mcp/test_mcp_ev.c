/*
 * test_mcp_ev.c — the event-driven MCP client (peri/mcp_ev.h) over the native ports loop
 * (pn_loop: real sockets on 127.0.0.1) against real HTTP servers this test starts:
 *
 *   test_mcp_ev PYTHON ev_server.py        honest and hostile servers by path (ev_server.py):
 *       JSON and SSE answers, the session id and protocol header on every later message,
 *       paged tools/list, a tool error, a JSON-RPC error, cancel (notifications/cancelled
 *       seen by the server), a call deadline, a connect deadline, a dropped connection,
 *       garbage, bad JSON, a bad session id, an unknown revision, an HTTP 500, answers
 *       over the size bound, too many tools, endless pages; close → DELETE → settled.
 *   test_mcp_ev --everything NODE INDEX_JS  the MCP reference server
 *       (@modelcontextprotocol/server-everything) in streamableHttp mode: exit 77 when it
 *       is not installed (FAIL under CI=true).
 *
 * After every scenario the client has reported on_settled exactly once and the loop has
 * nothing open.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "peri/mcp.h"
#include "peri/mcp_ev.h"

#include "mcp/proto.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *g_python, *g_script;
static pid_t g_pid;
static int g_port;
static char g_log[256];

static int64_t mono_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* ---------------------------------------------------------------- the server process */

/* Starts argv with env extra (may be NULL); the child's first stdout line is read into
 * line when given. */
static pid_t spawn(char *const argv[], const char *env_kv, char *line, size_t n) {
    int p[2];
    if (pipe(p) != 0) return -1;
    pid_t pid = fork();
    if (pid == 0) {
        if (line) {
            dup2(p[1], 1);
        } else { /* a server that writes to stdout must not get EPIPE */
            int null = open("/dev/null", O_WRONLY);
            if (null >= 0) dup2(null, 1);
        }
        close(p[0]);
        close(p[1]);
        if (env_kv) putenv((char *)env_kv);
        execvp(argv[0], argv);
        _exit(127);
    }
    close(p[1]);
    if (line) {
        size_t k = 0;
        char ch;
        while (k + 1 < n && read(p[0], &ch, 1) == 1 && ch != '\n')
            line[k++] = ch;
        line[k] = 0;
    }
    close(p[0]);
    return pid;
}

static void stop(pid_t pid) {
    if (pid <= 0) return;
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

static int server_up(void **state) {
    (void)state;
    snprintf(g_log, sizeof g_log, "/tmp/peri_mcp_ev_%d.log", (int)getpid());
    unlink(g_log);
    char *argv[] = {(char *)g_python, (char *)g_script, g_log, NULL};
    char line[64] = "";
    g_pid = spawn(argv, NULL, line, sizeof line);
    g_port = atoi(line);
    return g_pid > 0 && g_port > 0 ? 0 : -1;
}

static int server_down(void **state) {
    (void)state;
    stop(g_pid);
    unlink(g_log);
    return 0;
}

/* The server's log lines of one mode as text (caller frees). */
static char *server_log(const char *mode) {
    FILE *f = fopen(g_log, "r");
    pb_buf b = {0};
    char needle[64], line[65536];
    snprintf(needle, sizeof needle, "\"mode\": \"%s\"", mode);
    while (f && fgets(line, sizeof line, f))
        if (strstr(line, needle)) pb_buf_puts(&b, line);
    if (f) fclose(f);
    return pb_buf_take(&b, NULL);
}

static size_t count(const char *hay, const char *needle) {
    size_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

/* ---------------------------------------------------------------- the loop and client */

typedef struct run {
    pn_loop *loop;
    pmcp_ev_client *c;
    int readies, settles, dones;
    pmcp_ev_status ready_st;
    char ready_err[800];
    pmcp_ev_result res; /* the last call's (strings copied below) */
    char res_text[4096], res_content[4096], res_structured[1024];
    bool res_has_structured;
    int64_t done_at;
    pb_buf logs;
} run;

static void on_event(void *ctx, const pn_event *ev) {
    run *r = ctx;
    if (!r->c || !pmcp_ev_on_event(r->c, ev)) fail_msg("an event nobody owns (kind %d)", ev->kind);
}

static bool policy(void *ctx, const char *name, const char *addr, uint16_t port) {
    (void)ctx, (void)port;
    return !strcmp(name ? name : addr, "127.0.0.1");
}

static void on_log(void *ud, pb_log_level level, const char *msg) {
    run *r = ud;
    pb_buf_printf(&r->logs, "%s: %s\n", pb_log_level_name(level), msg);
}

static void on_ready(void *ctx, pmcp_ev_status st, const char *err) {
    run *r = ctx;
    r->readies++;
    r->ready_st = st;
    snprintf(r->ready_err, sizeof r->ready_err, "%s", err);
}

static void on_done(void *ctx, const pmcp_ev_result *res) {
    run *r = ctx;
    r->dones++;
    r->res = *res;
    snprintf(r->res_text, sizeof r->res_text, "%s", res->text);
    snprintf(r->res_content, sizeof r->res_content, "%s", res->content_json);
    r->res_has_structured = res->structured_json != NULL;
    snprintf(r->res_structured, sizeof r->res_structured, "%s",
             res->structured_json ? res->structured_json : "");
    r->done_at = mono_ms();
}

static void on_settled(void *ctx) {
    run *r = ctx;
    r->settles++;
    r->c = NULL;
}

static void run_init(run *r) {
    memset(r, 0, sizeof *r);
    pn_loop_opts o = {
        .on_event = on_event, .event_ctx = r, .policy = policy, .connect_timeout_ms = 5000};
    char err[256];
    r->loop = pn_loop_new(&o, err, sizeof err);
    if (!r->loop) fail_msg("pn_loop_new: %s", err);
}

static void url_of(char *url, size_t n, const char *mode) {
    snprintf(url, n, "http://127.0.0.1:%d/mcp/%s", g_port, mode);
}

static void client_new(run *r, const char *url, const pmcp_ev_opts *base) {
    pmcp_ev_opts o = base ? *base : (pmcp_ev_opts){0};
    o.url = url;
    o.name = "evtest";
    o.log = (pb_logger){on_log, r};
    pmcp_ev_status st;
    char err[256];
    r->c = pmcp_ev_new(pn_loop_ports(r->loop), &o, &st, err, sizeof err);
    if (!r->c) fail_msg("pmcp_ev_new: %s", err);
}

static void pump(run *r, int *flag, int want, int64_t limit_ms) {
    int64_t end = mono_ms() + limit_ms;
    while (*flag < want && mono_ms() < end)
        assert_true(pn_loop_run_once(r->loop, 50) >= 0);
    if (*flag < want)
        fail_msg("waited %lld ms in vain (%d of %d)", (long long)limit_ms, *flag, want);
}

static void connect_and_wait(run *r) {
    assert_int_equal(pmcp_ev_connect(r->c, on_ready, r), PMCP_EV_OK);
    assert_int_equal(r->readies, 0); /* never from inside connect */
    pump(r, &r->readies, 1, 20000);
}

/* Closes, waits for on_settled, and checks that nothing is left open. */
static void close_and_settle(run *r) {
    if (r->c) {
        assert_int_equal(pmcp_ev_close(r->c, on_settled, r), PMCP_EV_OK);
        assert_int_equal(r->settles, 0); /* never from inside close */
        pump(r, &r->settles, 1, 10000);
    }
    for (int i = 0; i < 5; i++) /* a late event would fail in on_event */
        pn_loop_run_once(r->loop, 10);
    assert_int_equal(r->settles, 1);
    assert_true(pn_loop_settled(r->loop));
    pn_loop_free(r->loop);
    pb_buf_free(&r->logs);
}

static void call(run *r, const char *tool, const char *args) {
    int before = r->dones;
    pmcp_ev_status st;
    char err[256];
    assert_non_null(pmcp_ev_call_tool(r->c, tool, args, 0, on_done, r, &st, err, sizeof err));
    assert_int_equal(r->dones, before);
    pump(r, &r->dones, before + 1, 20000);
}

/* ---------------------------------------------------------------- honest servers */

static void honest(const char *mode) {
    run r;
    run_init(&r);
    char url[128];
    url_of(url, sizeof url, mode);
    pn_http_header auth = {"Authorization", "Bearer sekret"};
    pmcp_ev_opts o = {.headers = &auth, .nheaders = 1};
    client_new(&r, url, &o);
    assert_int_equal(pmcp_ev_tool_count(r.c), 0);
    connect_and_wait(&r);
    if (r.ready_st != PMCP_EV_OK) fail_msg("connect: %s", r.ready_err);
    assert_string_equal(pmcp_ev_protocol(r.c), "2025-06-18");
    assert_string_equal(pmcp_ev_protocol(r.c), PMCP_PROTOCOL_VERSION);
    assert_true(strncmp(pmcp_ev_session(r.c), "sess-", 5) == 0);
    assert_non_null(strstr(pmcp_ev_capabilities(r.c), "\"tools\""));
    /* two pages; the nameless tool and the 200-byte name are skipped */
    assert_int_equal(pmcp_ev_tool_count(r.c), 4);
    const char *names[] = {"echo", "fail", "boom", "slow"};
    for (size_t i = 0; i < 4; i++)
        assert_string_equal(pmcp_ev_tool_at(r.c, i)->name, names[i]);
    assert_null(pmcp_ev_tool_at(r.c, 4));
    assert_true(pmcp_ev_tool_at(r.c, 0)->read_only);
    assert_string_equal(pmcp_ev_tool_at(r.c, 0)->description, "Echoes");
    assert_string_equal(pmcp_ev_tool_at(r.c, 0)->schema_json, "{\"type\":\"object\"}");
    assert_string_equal(pmcp_ev_tool_at(r.c, 3)->title, "Slow");
    assert_string_equal(pmcp_ev_tool_at(r.c, 3)->description, "");
    assert_non_null(strstr(r.logs.p ? r.logs.p : "", "longer than 128 bytes"));

    call(&r, "echo", "{\"message\":\"hi\"}");
    assert_int_equal(r.res.status, PMCP_EV_OK);
    assert_false(r.res.is_error);
    assert_string_equal(r.res_text, "Echo: hi");
    assert_string_equal(r.res_content, "[{\"type\":\"text\",\"text\":\"Echo: hi\"}]");
    assert_true(r.res_has_structured);
    assert_string_equal(r.res_structured, "{\"echoed\":\"hi\"}");

    call(&r, "fail", NULL);
    assert_int_equal(r.res.status, PMCP_EV_OK);
    assert_true(r.res.is_error);
    assert_string_equal(r.res_text, "it failed");

    call(&r, "boom", "");
    assert_int_equal(r.res.status, PMCP_EV_E_RPC);
    assert_true(r.res.is_error);
    assert_string_equal(r.res_text, "MCP error -32000: kaboom");
    assert_string_equal(r.res_content, "[]");

    pmcp_ev_status st;
    char err[128];
    assert_null(pmcp_ev_call_tool(r.c, "echo", "[1]", 0, on_done, &r, &st, err, sizeof err));
    assert_int_equal(st, PMCP_EV_E_ARG);
    assert_string_equal(err, "tool arguments must be a JSON object");

    char sid[256];
    snprintf(sid, sizeof sid, "%s", pmcp_ev_session(r.c));
    close_and_settle(&r);

    /* what the server saw: every message after initialize had the session and the
     * revision, the Authorization header went everywhere, the session was deleted */
    char *lg = server_log(mode);
    assert_int_equal(count(lg, "\"method\": \"initialize\""), 1);
    assert_int_equal(count(lg, "\"method\": \"notifications/initialized\""), 1);
    assert_int_equal(count(lg, "\"method\": \"tools/list\""), 2);
    assert_int_equal(count(lg, "\"method\": \"tools/call\""), 3);
    assert_int_equal(count(lg, "\"auth\": \"Bearer sekret\""), count(lg, "\"verb\": \"POST\""));
    assert_int_equal(count(lg, "\"accept\": \"application/json, text/event-stream\""),
                     count(lg, "\"verb\": \"POST\""));
    char want[300];
    snprintf(want, sizeof want, "\"session\": \"%s\", \"protocol\": \"2025-06-18\"", sid);
    /* all but initialize; with SSE also but the two answers sent from the initialize
     * stream, before the revision was known */
    size_t early = !strcmp(mode, "sse") ? 3 : 1;
    assert_int_equal(count(lg, want), count(lg, "\"verb\": \"") - early);
    assert_int_equal(count(lg, "\"verb\": \"DELETE\""), 1);
    if (!strcmp(mode, "sse")) {
        /* the server's ping was answered {}, its roots/list refused, in every stream */
        size_t streams = 1 + 2 + 3; /* initialize, two pages, three calls */
        assert_int_equal(count(lg, "\"id\": \"srv-ping\", \"session\""), streams);
        assert_int_equal(count(lg, "\"result\": {}"), streams);
        assert_int_equal(count(lg, "\"code\": -32601"), streams);
    }
    free(lg);
}

static void test_json(void **state) {
    (void)state;
    honest("json");
}

static void test_sse(void **state) {
    (void)state;
    honest("sse");
}

static void test_cancel(void **state) {
    (void)state;
    run r;
    run_init(&r);
    char url[128];
    url_of(url, sizeof url, "sse");
    client_new(&r, url, NULL);
    connect_and_wait(&r);
    assert_int_equal(r.ready_st, PMCP_EV_OK);
    pmcp_ev_status st;
    char err[128];
    pmcp_ev_call *k = pmcp_ev_call_tool(r.c, "slow", "{}", 0, on_done, &r, &st, err, sizeof err);
    assert_non_null(k);
    int64_t until = mono_ms() + 300;
    while (mono_ms() < until)
        pn_loop_run_once(r.loop, 20);
    assert_int_equal(r.dones, 0);
    int64_t t0 = mono_ms();
    pmcp_ev_cancel(k);
    assert_int_equal(r.dones, 0);
    pump(&r, &r.dones, 1, 5000);
    assert_int_equal(r.res.status, PMCP_EV_E_CANCELLED);
    assert_true(r.res.is_error);
    assert_true(r.done_at - t0 < 2000);
    /* the server hears of it (its slow tool stops) */
    int64_t end = mono_ms() + 5000;
    char *lg = NULL;
    while (mono_ms() < end) {
        free(lg);
        lg = server_log("sse");
        if (strstr(lg, "\"verb\": \"SEEN\"")) break;
        pn_loop_run_once(r.loop, 50);
    }
    assert_non_null(strstr(lg, "\"reason\": \"cancelled by the user\""));
    assert_non_null(strstr(lg, "\"verb\": \"SEEN\""));
    free(lg);
    close_and_settle(&r);
}

/* ---------------------------------------------------------------- hostile servers */

/* Connects to a hostile mode and expects the connect to fail with st and a text
 * containing want. */
static void hostile(const char *mode, const pmcp_ev_opts *o, pmcp_ev_status st, const char *want) {
    run r;
    run_init(&r);
    char url[128];
    url_of(url, sizeof url, mode);
    client_new(&r, url, o);
    connect_and_wait(&r);
    if (r.ready_st != st || !strstr(r.ready_err, want))
        fail_msg("%s: got %s \"%s\", want %s \"%s\"", mode, pmcp_ev_status_name(r.ready_st),
                 r.ready_err, pmcp_ev_status_name(st), want);
    assert_int_equal(pmcp_ev_tool_count(r.c), 0);
    assert_int_equal(r.readies, 1);
    close_and_settle(&r);
}

static void test_drop(void **state) {
    (void)state;
    hostile("drop", NULL, PMCP_EV_E_NET,
            "initialize failed: MCP server evtest closed the connection before answering");
}

static void test_hang(void **state) {
    (void)state;
    pmcp_ev_opts o = {.init_deadline_ms = 400};
    int64_t t0 = mono_ms();
    hostile("hang", &o, PMCP_EV_E_TIMEOUT,
            "initialize failed: MCP server evtest did not answer initialize in time");
    assert_true(mono_ms() - t0 < 5000);
}

static void test_garbage(void **state) {
    (void)state;
    hostile("garbage", NULL, PMCP_EV_E_PROTOCOL, "initialize failed: HTTP transport failed");
    hostile("badjson", NULL, PMCP_EV_E_PROTOCOL, "is not JSON-RPC (Parse error)");
    hostile("badtype", NULL, PMCP_EV_E_PROTOCOL, "has the content type text/html");
    hostile("badsession", NULL, PMCP_EV_E_PROTOCOL, "Mcp-Session-Id is not 1 to 255 visible");
    hostile("sseeof", NULL, PMCP_EV_E_PROTOCOL, "ended its event stream without answering");
    hostile("ssegarbage", NULL, PMCP_EV_E_PROTOCOL, "ended its event stream without answering");
    hostile("version", NULL, PMCP_EV_E_VERSION,
            "the server speaks MCP 1999-01-01, which Peri-C does not support");
    hostile("status500", NULL, PMCP_EV_E_HTTP,
            "initialize failed: HTTP 500 from the MCP server: internal trouble  with  control");
}

static void test_bounds(void **state) {
    (void)state;
    pmcp_ev_opts o = {.max_response = 1u << 20};
    hostile("big", &o, PMCP_EV_E_LIMIT, "tools/list failed: the answer to tools/list is larger");
    hostile("manytools", NULL, PMCP_EV_E_LIMIT, "the server lists more than 1024 tools");
    hostile("endless", NULL, PMCP_EV_E_LIMIT, "tools/list did not end after 100 pages");
}

static void test_call_deadline(void **state) {
    (void)state;
    run r;
    run_init(&r);
    char url[128];
    url_of(url, sizeof url, "hangcall");
    client_new(&r, url, NULL);
    connect_and_wait(&r);
    assert_int_equal(r.ready_st, PMCP_EV_OK);
    pmcp_ev_status st;
    char err[128];
    int64_t t0 = mono_ms();
    assert_non_null(pmcp_ev_call_tool(r.c, "echo", "{}", 300, on_done, &r, &st, err, sizeof err));
    pump(&r, &r.dones, 1, 5000);
    assert_int_equal(r.res.status, PMCP_EV_E_TIMEOUT);
    assert_string_equal(r.res_text, "MCP server evtest did not answer tools/call in time");
    assert_true(r.done_at - t0 >= 250 && r.done_at - t0 < 3000);
    close_and_settle(&r);
    char *lg = server_log("hangcall");
    assert_non_null(strstr(lg, "\"reason\": \"timed out\""));
    free(lg);
}

/* Close while initialize hangs: on_ready says closed, then on_settled. */
static void test_close_while_connecting(void **state) {
    (void)state;
    run r;
    run_init(&r);
    char url[128];
    url_of(url, sizeof url, "hang");
    client_new(&r, url, NULL);
    assert_int_equal(pmcp_ev_connect(r.c, on_ready, &r), PMCP_EV_OK);
    for (int i = 0; i < 10; i++)
        pn_loop_run_once(r.loop, 10);
    assert_int_equal(pmcp_ev_close(r.c, on_settled, &r), PMCP_EV_OK);
    assert_int_equal(r.readies, 0);
    pump(&r, &r.settles, 1, 5000);
    assert_int_equal(r.readies, 1);
    assert_int_equal(r.ready_st, PMCP_EV_E_CLOSED);
    close_and_settle(&r);
}

/* Close of a client that never connected, and bad options. */
static void test_close_idle_and_options(void **state) {
    (void)state;
    run r;
    run_init(&r);
    char url[128];
    url_of(url, sizeof url, "json");
    client_new(&r, url, NULL);
    pmcp_ev_status st;
    char err[128];
    assert_null(pmcp_ev_call_tool(r.c, "echo", "{}", 0, on_done, &r, &st, err, sizeof err));
    assert_int_equal(st, PMCP_EV_E_STATE);
    close_and_settle(&r);

    run_init(&r);
    const pn_ports *ports = pn_loop_ports(r.loop);
    pmcp_ev_opts o = {.url = "ftp://127.0.0.1/"};
    assert_null(pmcp_ev_new(ports, &o, &st, err, sizeof err));
    assert_int_equal(st, PMCP_EV_E_ARG);
    pn_http_header bad[] = {{"Host", "x"}, {"X-A", "a\r\nb"}, {"Bad Name", "x"}};
    for (size_t i = 0; i < 3; i++) {
        o = (pmcp_ev_opts){.url = "http://127.0.0.1:1/", .headers = &bad[i], .nheaders = 1};
        assert_null(pmcp_ev_new(ports, &o, &st, err, sizeof err));
        assert_int_equal(st, PMCP_EV_E_ARG);
    }
    r.settles = 1;
    close_and_settle(&r);
}

/* ---------------------------------------------------------------- the reference server */

static int everything(const char *node, const char *index_js) {
    if (access(index_js, R_OK) != 0) {
        const char *ci = getenv("CI");
        printf("server-everything is not installed (%s)%s\n", index_js,
               ci && !strcmp(ci, "true") ? ": FAIL under CI" : ": not run");
        return ci && !strcmp(ci, "true") ? 1 : 77;
    }
    /* a free port for the server */
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) ||
        getsockname(s, (struct sockaddr *)&a, &al))
        return 1;
    int port = ntohs(a.sin_port);
    close(s);
    static char env[32];
    snprintf(env, sizeof env, "PORT=%d", port);
    char *argv[] = {(char *)node, (char *)index_js, "streamableHttp", NULL};
    pid_t pid = spawn(argv, env, NULL, 0);
    int rc = 1;
    run r;
    run_init(&r);
    /* wait until it listens */
    for (int i = 0; i < 300; i++) {
        int t = socket(AF_INET, SOCK_STREAM, 0);
        a.sin_port = htons((uint16_t)port);
        int ok = connect(t, (struct sockaddr *)&a, sizeof a) == 0;
        close(t);
        if (ok) break;
        usleep(100000);
    }
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/mcp", port);
    client_new(&r, url, NULL);
    connect_and_wait(&r);
    if (r.ready_st != PMCP_EV_OK) {
        printf("FAIL: connect: %s\n", r.ready_err);
        goto out;
    }
    bool has_echo = false;
    for (size_t i = 0; i < pmcp_ev_tool_count(r.c); i++)
        has_echo = has_echo || !strcmp(pmcp_ev_tool_at(r.c, i)->name, "echo");
    printf("server-everything: %zu tools, session %s, revision %s\n", pmcp_ev_tool_count(r.c),
           pmcp_ev_session(r.c), pmcp_ev_protocol(r.c));
    if (!has_echo || !pmcp_ev_session(r.c)[0]) {
        printf("FAIL: no echo tool or no session\n");
        goto out;
    }
    call(&r, "echo", "{\"message\":\"hello ev\"}");
    printf("echo: %s (%s)\n", r.res_text, pmcp_ev_status_name(r.res.status));
    if (r.res.status != PMCP_EV_OK || strcmp(r.res_text, "Echo: hello ev")) goto out;
    call(&r, "get-sum", "{\"a\":2,\"b\":40}");
    printf("get-sum: %s\n", r.res_text);
    if (r.res.status != PMCP_EV_OK || !strstr(r.res_text, "42")) goto out;
    /* a long-running tool (progress notifications in its stream), then cancelled */
    pmcp_ev_status st;
    char err[128];
    pmcp_ev_call *k =
        pmcp_ev_call_tool(r.c, "trigger-long-running-operation", "{\"duration\":30,\"steps\":30}",
                          0, on_done, &r, &st, err, sizeof err);
    if (!k) goto out;
    int before = r.dones;
    int64_t until = mono_ms() + 700;
    while (mono_ms() < until)
        pn_loop_run_once(r.loop, 20);
    pmcp_ev_cancel(k);
    pump(&r, &r.dones, before + 1, 5000);
    printf("long-running cancelled: %s\n", pmcp_ev_status_name(r.res.status));
    if (r.res.status != PMCP_EV_E_CANCELLED) goto out;
    call(&r, "echo", "{\"message\":\"still alive\"}");
    if (r.res.status != PMCP_EV_OK || strcmp(r.res_text, "Echo: still alive")) goto out;
    rc = 0;
out:
    close_and_settle(&r);
    stop(pid);
    printf("%s\n", rc ? "FAIL" : "PASS");
    return rc;
}

int main(int argc, char **argv) {
    if (argc == 4 && !strcmp(argv[1], "--everything")) return everything(argv[2], argv[3]);
    if (argc != 3) {
        fprintf(stderr, "usage: test_mcp_ev PYTHON ev_server.py | --everything NODE INDEX_JS\n");
        return 2;
    }
    g_python = argv[1];
    g_script = argv[2];
    const char *only = getenv("PERI_TEST_FILTER"); /* one test while debugging */
    if (only) cmocka_set_test_filter(only);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json),
        cmocka_unit_test(test_sse),
        cmocka_unit_test(test_cancel),
        cmocka_unit_test(test_drop),
        cmocka_unit_test(test_hang),
        cmocka_unit_test(test_garbage),
        cmocka_unit_test(test_bounds),
        cmocka_unit_test(test_call_deadline),
        cmocka_unit_test(test_close_while_connecting),
        cmocka_unit_test(test_close_idle_and_options),
    };
    return cmocka_run_group_tests(tests, server_up, server_down);
}
