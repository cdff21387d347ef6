/*
 * test_mcp.c — cmocka tests of src/mcp: the JSON-RPC decoder on malformed frames, the
 * line reader on huge lines, the SSE parser, the client against a hostile fake server
 * (wrong ids, garbage, huge lines, string ids, duplicates), the workspace server on raw
 * frames (pagination, unknown tools, escapes, cancellation), the in-process pair,
 * configuration parsing and the MCP -> ACP content mapping; issue 12: the pool's builtin
 * tools through the in-process pair give exactly the registry's results (text, content,
 * locations, rawOutput, _meta; the editor hook used), plain clients get no _meta, and
 * tools/list_changed refreshes the pool's table, keeping at most two tables however
 * often the list changes, and a listing's bounds (tools, bytes) are enforced.
 *
 * usage: test_mcp PERI_BINARY
 */
#include "mcp/mcp_int.h"
#include "peri/tools.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static const char *g_peri;

/* ---------------------------------------------------------------- decoder */

static pb_rpc_kind kind_of(const char *s) {
    pb_rpc_msg m;
    pb_rpc_decode(s, strlen(s), NULL, &m);
    pb_rpc_kind k = m.kind;
    pb_rpc_clear(&m);
    return k;
}

static void test_decode(void **state) {
    (void)state;
    assert_int_equal(kind_of("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}"), PB_RPC_REQUEST);
    assert_int_equal(kind_of("{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"x\",\"params\":{}}"),
                     PB_RPC_REQUEST);
    assert_int_equal(kind_of("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\"}"),
                     PB_RPC_NOTIFICATION);
    assert_int_equal(kind_of("{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}"), PB_RPC_RESPONSE);
    assert_int_equal(kind_of("{\"jsonrpc\":\"2.0\",\"id\":3,\"error\":{\"code\":-1,\"message\":"
                             "\"m\"}}"),
                     PB_RPC_RESPONSE);
    static const char *const bad[] = {
        "",
        "not json",
        "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]", /* batches are refused */
        "{\"id\":1,\"method\":\"ping\"}",
        "{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"ping\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":5}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\\u0000b\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":[1]}",
        "{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"x\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"x\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":true,\"result\":{}}",
        "{\"jsonrpc\":\"2.0\",\"result\":{}}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{},\"error\":{\"code\":1}}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"message\":\"no code\"}}",
        "{\"jsonrpc\":\"2.0\",\"id\":1}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"id\":2,\"method\":\"x\"}",
        "\"just a string\"",
        "{\"jsonrpc\":\"2.0\",\"id\":99999999999999999999999999,\"method\":\"x\"}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        pb_rpc_msg m;
        pb_rpc_decode(bad[i], strlen(bad[i]), NULL, &m);
        if (m.kind != PB_RPC_INVALID) fail_msg("accepted: %s", bad[i]);
        assert_true(m.err_code == PMCP_PARSE_ERROR || m.err_code == PMCP_INVALID_REQUEST);
        pb_rpc_clear(&m);
    }
    /* embedded NUL bytes and invalid UTF-8 */
    const char nul[] = "{\"jsonrpc\":\"2.0\",\0\"id\":1}";
    pb_rpc_msg m;
    pb_rpc_decode(nul, sizeof nul - 1, NULL, &m);
    assert_int_equal(m.kind, PB_RPC_INVALID);
    pb_rpc_clear(&m);
    const char utf[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\xfe\"}";
    pb_rpc_decode(utf, sizeof utf - 1, NULL, &m);
    assert_int_equal(m.kind, PB_RPC_INVALID);
    pb_rpc_clear(&m);
    pb_rpc_decode(NULL, 0, NULL, &m);
    assert_int_equal(m.kind, PB_RPC_INVALID);
    pb_rpc_clear(&m);
    /* deep nesting does not crash */
    size_t depth = 100000;
    char *deep = malloc(depth * 2 + 1);
    assert_non_null(deep);
    memset(deep, '[', depth);
    memset(deep + depth, ']', depth);
    deep[depth * 2] = '\0';
    pb_rpc_decode(deep, depth * 2, NULL, &m);
    assert_int_equal(m.kind, PB_RPC_INVALID);
    pb_rpc_clear(&m);
    free(deep);
}

/* ---------------------------------------------------------------- line reader */

typedef struct feeder {
    int fd;
    size_t huge;
} feeder;

static void *feed_main(void *arg) {
    feeder *f = arg;
    char *blk = malloc(1 << 20);
    memset(blk, 'x', 1 << 20);
    for (size_t left = f->huge; left > 0;) {
        size_t n = left < (1u << 20) ? left : (1u << 20);
        if (pb_write_all(f->fd, blk, n) != 0) break;
        left -= n;
    }
    free(blk);
    const char tail[] = "\nsecond\r\nthird";
    pb_write_all(f->fd, tail, sizeof tail - 1);
    close(f->fd);
    return NULL;
}

static void test_lines_huge(void **state) {
    (void)state;
    int p[2];
    assert_int_equal(pipe(p), 0);
    feeder f = {p[1], (size_t)PMCP_MAX_FRAME + 12345};
    pthread_t th;
    pthread_create(&th, NULL, feed_main, &f);
    pmcp__lines r;
    pmcp__lines_init(&r, p[0]);
    char *line;
    size_t len;
    assert_int_equal(pmcp__lines_next(&r, &line, &len), 2); /* dropped */
    assert_int_equal(pmcp__lines_next(&r, &line, &len), 1);
    assert_string_equal(line, "second");
    assert_int_equal(pmcp__lines_next(&r, &line, &len), 1);
    assert_string_equal(line, "third");
    assert_int_equal(pmcp__lines_next(&r, &line, &len), 0);
    pmcp__lines_free(&r);
    pthread_join(th, NULL);
    close(p[0]);
}

/* ---------------------------------------------------------------- SSE */

typedef struct sse_log {
    char buf[1024];
} sse_log;

static void on_ev(void *ctx, const char *event, const char *data, size_t len) {
    sse_log *l = ctx;
    size_t n = strlen(l->buf);
    snprintf(l->buf + n, sizeof l->buf - n, "[%s|%.*s]", event, (int)len, data);
}

static void test_sse(void **state) {
    (void)state;
    const char *in = ": comment\r\nevent: endpoint\r\ndata: /msg?s=1\r\n\r\n"
                     "data: {\"a\":\ndata: 1}\n\nid: 7\nretry: 10\ndata:x\n\n";
    pmcp__sse p;
    memset(&p, 0, sizeof p);
    sse_log l = {""};
    /* byte by byte: chunk boundaries anywhere */
    for (size_t i = 0; in[i]; i++)
        assert_int_equal(pmcp__sse_feed(&p, in + i, 1, on_ev, &l), 0);
    assert_string_equal(l.buf, "[endpoint|/msg?s=1][message|{\"a\":\n1}][message|x]");
    pmcp__sse_free(&p);
}

/* ---------------------------------------------------------------- config */

static void test_parse_servers(void **state) {
    (void)state;
    pmcp_server_config *c = NULL;
    size_t n = 0;
    char *errs = NULL;
    const char *acp =
        "[{\"name\":\"a\",\"command\":\"x\",\"args\":[\"1\",\"2\"],\"env\":[{\"name\":"
        "\"K\",\"value\":\"V\"}]},{\"type\":\"http\",\"name\":\"h\",\"url\":\"http://"
        "h/mcp\",\"headers\":[{\"name\":\"Authorization\",\"value\":\"B\"}]},"
        "{\"type\":\"sse\",\"name\":\"s\",\"url\":\"http://h/sse\",\"headers\":[]},"
        "{\"name\":\"bad\"},{\"command\":\"noname\"},{\"type\":\"ws\",\"name\":\"w\","
        "\"url\":\"x\"},{\"name\":\"badargs\",\"command\":\"x\",\"args\":[1]}]";
    assert_int_equal(pmcp_parse_servers(acp, "acp", &c, &n, &errs), 0);
    assert_int_equal(n, 3);
    assert_int_equal(c[0].kind, PMCP_STDIO);
    assert_int_equal(c[0].nargs, 2);
    assert_string_equal(c[0].env[0].name, "K");
    assert_int_equal(c[1].kind, PMCP_HTTP);
    assert_string_equal(c[1].headers[0].value, "B");
    assert_int_equal(c[2].kind, PMCP_SSE);
    assert_non_null(errs);
    assert_non_null(strstr(errs, "stdio entry without a command"));
    assert_non_null(strstr(errs, "entry without a name"));
    assert_non_null(strstr(errs, "unknown transport type \"ws\""));
    assert_non_null(strstr(errs, "args must be an array of strings"));
    /* settings shape; same name replaces */
    const char *set = "{\"mcpServers\":{\"a\":{\"command\":\"y\",\"env\":{\"A\":\"1\"}},"
                      "\"web\":{\"type\":\"http\",\"url\":\"https://x/mcp\",\"headers\":{\"X\":"
                      "\"y\"}}}}";
    assert_int_equal(pmcp_parse_servers(set, "settings", &c, &n, &errs), 0);
    assert_int_equal(n, 4);
    assert_string_equal(c[0].command, "y");
    assert_string_equal(c[0].env[0].value, "1");
    assert_string_equal(c[3].name, "web");
    assert_string_equal(c[3].headers[0].name, "X");
    assert_int_equal(pmcp_parse_servers("{nope", "x", &c, &n, &errs), -1);
    assert_int_equal(pmcp_parse_servers("{\"mcpServers\":[]}", "y", &c, &n, &errs), -1);
    for (size_t i = 0; i < n; i++)
        pmcp_server_config_clear(&c[i]);
    free(c);
    free(errs);
}

static void test_content_to_acp(void **state) {
    (void)state;
    char *s = pmcp_content_to_acp(
        "[{\"type\":\"text\",\"text\":\"t\"},{\"type\":\"image\",\"data\":\"AAA\",\"mimeType\":"
        "\"image/png\"},{\"type\":\"resource_link\",\"uri\":\"file:///a\",\"name\":\"a\"},"
        "{\"type\":\"resource\",\"resource\":{\"uri\":\"file:///b\",\"text\":\"B\"}},"
        "{\"type\":\"weird\"},5]");
    assert_non_null(s);
    assert_string_equal(
        s, "[{\"type\":\"content\",\"content\":{\"type\":\"text\",\"text\":\"t\"}},"
           "{\"type\":\"content\",\"content\":{\"type\":\"image\",\"data\":\"AAA\",\"mimeType\":"
           "\"image/png\"}},{\"type\":\"content\",\"content\":{\"type\":\"resource_link\","
           "\"uri\":\"file:///a\",\"name\":\"a\"}},{\"type\":\"content\",\"content\":{\"type\":"
           "\"resource\",\"resource\":{\"uri\":\"file:///b\",\"text\":\"B\"}}},{\"type\":"
           "\"content\",\"content\":{\"type\":\"text\",\"text\":\"[weird content]\"}},{\"type\":"
           "\"content\",\"content\":{\"type\":\"text\",\"text\":\"[unknown content]\"}}]");
    free(s);
    s = pmcp_content_to_acp("garbage");
    assert_string_equal(s, "[]");
    free(s);
}

/* ---------------------------------------------------------------- server, raw frames */

typedef struct raw_srv {
    int fd;
    pmcp_server_opts o;
    pthread_t th;
    pmcp__lines r;
    int cfd;
} raw_srv;

static void *raw_main(void *arg) {
    raw_srv *s = arg;
    pmcp_serve(&s->o, s->fd, s->fd);
    shutdown(s->fd, SHUT_RDWR);
    return NULL;
}

static void raw_start(raw_srv *s, const char *root, size_t page) {
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    s->fd = sv[1];
    s->cfd = sv[0];
    s->o = (pmcp_server_opts){.root = root, .page_size = page};
    pmcp__lines_init(&s->r, s->cfd);
    pthread_create(&s->th, NULL, raw_main, s);
}

static void raw_send(raw_srv *s, const char *line) {
    assert_int_equal(pb_write_all(s->cfd, line, strlen(line)), 0);
    assert_int_equal(pb_write_all(s->cfd, "\n", 1), 0);
}

/* Next frame from the server, decoded (caller decrefs). */
static pj_t *raw_next(raw_srv *s) {
    char *line;
    size_t len;
    int st = pmcp__lines_next(&s->r, &line, &len);
    assert_int_equal(st, 1);
    pj_t *j = pj_loadb(line, len, 0, NULL);
    assert_non_null(j);
    return j;
}

static void raw_stop(raw_srv *s) {
    shutdown(s->cfd, SHUT_WR);
    pthread_join(s->th, NULL);
    pmcp__lines_free(&s->r);
    close(s->cfd);
    close(s->fd);
}

static int err_code(pj_t *j) {
    return (int)pj_integer_value(pj_object_get(pj_object_get(j, "error"), "code"));
}

static char g_root[256];

static void test_server_raw(void **state) {
    (void)state;
    raw_srv s;
    raw_start(&s, g_root, 3);
    raw_send(&s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{"
                 "\"protocolVersion\":\"2024-11-05\",\"capabilities\":{},\"clientInfo\":{"
                 "\"name\":\"t\",\"version\":\"1\"}}}");
    pj_t *j = raw_next(&s);
    assert_string_equal(
        pj_string_value(pj_object_get(pj_object_get(j, "result"), "protocolVersion")),
        "2024-11-05");
    pj_decref(j);
    raw_send(&s, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"initialize\",\"params\":{"
                 "\"protocolVersion\":\"1999-01-01\"}}");
    j = raw_next(&s);
    assert_string_equal(
        pj_string_value(pj_object_get(pj_object_get(j, "result"), "protocolVersion")),
        PMCP_PROTOCOL_VERSION);
    pj_decref(j);
    /* pagination: pages of 3 until every registry tool was listed */
    size_t seen = 0;
    char cursor[64] = "";
    for (int page = 0; page < 100; page++) {
        char req[200];
        if (cursor[0])
            snprintf(req, sizeof req,
                     "{\"jsonrpc\":\"2.0\",\"id\":\"p%d\",\"method\":\"tools/list\",\"params\":{"
                     "\"cursor\":\"%s\"}}",
                     page, cursor);
        else
            snprintf(req, sizeof req,
                     "{\"jsonrpc\":\"2.0\",\"id\":\"p%d\",\"method\":\"tools/list\"}", page);
        raw_send(&s, req);
        j = raw_next(&s);
        pj_t *res = pj_object_get(j, "result");
        size_t k = pj_array_size(pj_object_get(res, "tools"));
        assert_true(k <= 3);
        for (size_t i = 0; i < k; i++)
            assert_string_equal(pj_string_value(pj_object_get(
                                    pj_array_get(pj_object_get(res, "tools"), i), "name")),
                                ptl_name(ptl_at(seen + i)));
        seen += k;
        const char *next = pj_string_value(pj_object_get(res, "nextCursor"));
        snprintf(cursor, sizeof cursor, "%s", next ? next : "");
        pj_decref(j);
        if (!next) break;
    }
    assert_int_equal(seen, ptl_count());
    /* malformed frames, each answered with the right code, the server keeps going */
    raw_send(&s, "garbage");
    j = raw_next(&s);
    assert_int_equal(err_code(j), PMCP_PARSE_ERROR);
    assert_true(pj_is_null(pj_object_get(j, "id")));
    pj_decref(j);
    raw_send(&s, "{\"jsonrpc\":\"2.0\",\"id\":[1],\"method\":\"ping\"}");
    j = raw_next(&s);
    assert_int_equal(err_code(j), PMCP_INVALID_REQUEST);
    pj_decref(j);
    raw_send(&s, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/list\",\"params\":{"
                 "\"cursor\":\"zz\"}}");
    j = raw_next(&s);
    assert_int_equal(err_code(j), PMCP_INVALID_PARAMS);
    pj_decref(j);
    raw_send(&s, "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"nope/nope\"}");
    j = raw_next(&s);
    assert_int_equal(err_code(j), PMCP_METHOD_NOT_FOUND);
    pj_decref(j);
    raw_send(&s, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":"
                 "\"no-such-tool\"}}");
    j = raw_next(&s);
    assert_int_equal(err_code(j), PMCP_INVALID_PARAMS);
    pj_decref(j);
    /* a response and an unknown cancellation are ignored silently */
    raw_send(&s, "{\"jsonrpc\":\"2.0\",\"id\":77,\"result\":{}}");
    raw_send(&s, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{"
                 "\"requestId\":12345}}");
    /* escapes: tool error, exactly the builtin message; resources/read refused */
    raw_send(&s, "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"tools/call\",\"params\":{\"name\":"
                 "\"read\",\"arguments\":{\"path\":\"../../etc/passwd\"}}}");
    j = raw_next(&s);
    pj_t *res = pj_object_get(j, "result");
    assert_true(pj_is_true(pj_object_get(res, "isError")));
    assert_string_equal(
        pj_string_value(pj_object_get(pj_array_get(pj_object_get(res, "content"), 0), "text")),
        "path escapes the workspace: ../../etc/passwd");
    pj_decref(j);
    raw_send(&s, "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"resources/read\",\"params\":{"
                 "\"uri\":\"file:///etc/passwd\"}}");
    j = raw_next(&s);
    assert_int_equal(err_code(j), PMCP_INVALID_PARAMS);
    pj_decref(j);
    /* cancellation: a long shell call is cancelled and gets no answer; ping still works */
    raw_send(&s, "{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"tools/call\",\"params\":{\"name\":"
                 "\"shell\",\"arguments\":{\"command\":\"sleep 20\"},\"_meta\":{"
                 "\"progressToken\":\"tok\"}}}");
    j = raw_next(&s); /* the start progress notification */
    assert_string_equal(pj_string_value(pj_object_get(j, "method")), "notifications/progress");
    pj_decref(j);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    raw_send(&s, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{"
                 "\"requestId\":10}}");
    raw_send(&s, "{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"ping\"}");
    j = raw_next(&s);
    assert_int_equal(pj_integer_value(pj_object_get(j, "id")), 11);
    pj_decref(j);
    raw_stop(&s);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    assert_true(t1.tv_sec - t0.tv_sec < 10); /* did not wait for sleep 20 */
}

/* ---------------------------------------------------------------- client */

static void test_inproc(void **state) {
    (void)state;
    char path[300];
    snprintf(path, sizeof path, "%s/inproc.txt", g_root);
    FILE *f = fopen(path, "w");
    fputs("inproc-data", f);
    fclose(f);
    pmcp_server_config cfg = {.name = "ws", .kind = PMCP_INPROC, .root = g_root};
    char err[256];
    pmcp_client *c = pmcp_client_connect(&cfg, NULL, err, sizeof err);
    assert_non_null(c);
    pmcp_tool *t;
    size_t n;
    assert_int_equal(pmcp_client_tools(c, &t, &n), 0);
    assert_int_equal(n, ptl_count());
    pmcp_tools_free(t, n);
    pmcp_call_result r;
    assert_int_equal(
        pmcp_client_call(c, "read", "{\"path\":\"inproc.txt\"}", NULL, NULL, NULL, 0, &r), PMCP_OK);
    assert_false(r.is_error);
    assert_non_null(strstr(r.text, "inproc-data"));
    pmcp_call_result_clear(&r);
    assert_int_equal(pmcp_client_call(c, "read", "[1]", NULL, NULL, NULL, 0, &r), PMCP_ERR_RPC);
    pmcp_call_result_clear(&r);
    assert_int_equal(pmcp_client_call(c, "missing", "{}", NULL, NULL, NULL, 0, &r), PMCP_ERR_RPC);
    assert_non_null(strstr(r.text, "Unknown tool: missing"));
    pmcp_call_result_clear(&r);
    atomic_int cancel = 1;
    assert_int_equal(
        pmcp_client_call(c, "shell", "{\"command\":\"sleep 20\"}", &cancel, NULL, NULL, 0, &r),
        PMCP_CANCELLED);
    pmcp_call_result_clear(&r);
    char *res = NULL;
    char params[400];
    snprintf(params, sizeof params, "{\"uri\":\"file://%s\"}", path);
    assert_int_equal(
        pmcp_client_request(c, "resources/read", params, NULL, 0, &res, err, sizeof err), PMCP_OK);
    assert_non_null(strstr(res, "inproc-data"));
    free(res);
    pmcp_client_close(c);
}

/* A hostile server: before the real answer it sends garbage, a huge line, answers with
 * wrong, string and duplicate ids, a request of its own and a notification. */
static const char *k_fake =
    "import sys,json\n"
    "def out(o):\n"
    "    sys.stdout.write(o if isinstance(o,str) else json.dumps(o)); sys.stdout.write('\\n');"
    " sys.stdout.flush()\n"
    "for line in sys.stdin:\n"
    "    m=json.loads(line)\n"
    "    if 'id' not in m or 'method' not in m: continue\n"
    "    i=m['id']\n"
    "    if m['method']=='initialize':\n"
    "        out({'jsonrpc':'2.0','id':i,'result':{'protocolVersion':'2025-03-26',"
    "'capabilities':{'tools':{'listChanged':True}},'serverInfo':{'name':'f','version':'1'}}})\n"
    "        continue\n"
    "    if m.get('params',{}).get('cursor')=='c2':\n"
    "        out({'jsonrpc':'2.0','id':i,'result':{'tools':[{'name':'t3'}]}})\n"
    "        out({'jsonrpc':'2.0','id':'srv1','method':'ping'})\n"
    "        out({'jsonrpc':'2.0','method':'notifications/tools/list_changed'})\n"
    "        continue\n"
    "    out('garbage {')\n"
    "    out('x'*(17<<20))\n"
    "    out({'jsonrpc':'2.0','id':i+1000,'result':{'tools':[]}})\n"
    "    out({'jsonrpc':'2.0','id':str(i),'result':{'tools':[]}})\n"
    "    out({'jsonrpc':'2.0','id':i,'result':{'tools':[{'name':'t1','inputSchema':"
    "{'type':'object','properties':{'q':{'type':'string'}}}},{'nameless':1},"
    "{'name':'t2','description':'second'}],'nextCursor':'c2'}})\n"
    "    out({'jsonrpc':'2.0','id':i,'result':{'tools':[]}})\n";

static void test_hostile_server(void **state) {
    (void)state;
    char *args[] = {"-c", (char *)k_fake};
    pmcp_server_config cfg = {
        .name = "fake", .kind = PMCP_STDIO, .command = "python3", .args = args, .nargs = 2};
    char err[256];
    pmcp_client_opts o = {.init_timeout_ms = 20000};
    pmcp_client *c = pmcp_client_connect(&cfg, &o, err, sizeof err);
    if (!c) fail_msg("connect: %s", err);
    assert_string_equal(pmcp_client_protocol(c), "2025-03-26");
    pmcp_tool *t;
    size_t n;
    assert_int_equal(pmcp_client_tools(c, &t, &n), 0);
    assert_int_equal(n, 3); /* two pages; the nameless tool skipped */
    assert_string_equal(t[0].name, "t1");
    assert_non_null(strstr(t[0].schema_json, "\"q\""));
    assert_string_equal(t[1].schema_json, "{\"type\":\"object\"}");
    assert_string_equal(t[2].name, "t3");
    pmcp_tools_free(t, n);
    for (int i = 0; i < 200 && !pmcp_client_tools_changed(c); i++)
        usleep(10000);
    assert_true(pmcp_client_tools_changed(c));
    pmcp_client_close(c);
}

static void test_stdio_failures(void **state) {
    (void)state;
    char err[256];
    pmcp_server_config cfg = {.name = "x", .kind = PMCP_STDIO, .command = "/nonexistent/srv"};
    assert_null(pmcp_client_connect(&cfg, NULL, err, sizeof err));
    assert_non_null(strstr(err, "No such file"));
    char *args[] = {"-c", "exit 3"};
    pmcp_server_config dies = {
        .name = "d", .kind = PMCP_STDIO, .command = "sh", .args = args, .nargs = 2};
    assert_null(pmcp_client_connect(&dies, NULL, err, sizeof err));
    assert_non_null(strstr(err, "initialize failed"));
    pmcp_server_config http = {.name = "h", .kind = PMCP_HTTP, .url = "ftp://x"};
    assert_null(pmcp_client_connect(&http, NULL, err, sizeof err));
    pmcp_server_config sse = {.name = "s", .kind = PMCP_SSE, .url = "http://127.0.0.1:9/sse"};
    pmcp_client_opts o = {.init_timeout_ms = 3000};
    assert_null(pmcp_client_connect(&sse, &o, err, sizeof err));
    /* the pool keeps going and says why */
    char *notices = NULL;
    char acp[1024];
    snprintf(acp, sizeof acp,
             "[{\"name\":\"ws\",\"command\":\"%s\",\"args\":[\"mcp\",\"workspace\",\"--root\","
             "\"%s\"]},{\"name\":\"gone\",\"command\":\"/nonexistent/srv\"}]",
             g_peri, g_root);
    pmcp_pool_opts po = {.cwd = g_root, .acp_servers_json = acp};
    pmcp_pool *p = pmcp_pool_open(&po, &notices);
    assert_non_null(p);
    assert_non_null(notices);
    assert_non_null(strstr(notices, "MCP server \"gone\" is unavailable"));
    assert_true(pmcp_pool_has(p, "mcp__ws__read"));
    assert_int_equal(pmcp_pool_tool_count(p), ptl_count());
    char *text, *content;
    bool is_err;
    assert_int_equal(pmcp_pool_call(p, "mcp__ws__list", "{}", NULL, &text, &is_err, &content), 0);
    assert_false(is_err);
    assert_non_null(strstr(content, "\"type\":\"content\""));
    free(text);
    free(content);
    assert_int_equal(pmcp_pool_call(p, "mcp__nope__x", "{}", NULL, &text, &is_err, &content), -1);
    pmcp_pool_close(p);
    free(notices);
}

/* A minimal server whose one tool answers 400,000 bytes of UTF-8 text. */
static const char *k_big = "import sys,json\n"
                           "for line in sys.stdin:\n"
                           "    m=json.loads(line)\n"
                           "    if 'id' not in m: continue\n"
                           "    r={'protocolVersion':'2025-06-18','capabilities':{'tools':{}},"
                           "'serverInfo':{'name':'b','version':'1'}}\n"
                           "    if m['method']=='tools/list': r={'tools':[{'name':'big'}]}\n"
                           "    if m['method']=='tools/call': r={'content':[{'type':'text',"
                           "'text':'\u00e9'*200000}]}\n"
                           "    print(json.dumps({'jsonrpc':'2.0','id':m['id'],'result':r}),"
                           "flush=True)\n";

static void write_script(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* A pool of one stdio server, `python3 <g_root>/<file>` running src, named server;
 * opened without notices. */
static pmcp_pool *script_pool(const char *file, const char *server, const char *src) {
    char script[300];
    snprintf(script, sizeof script, "%s/%s", g_root, file);
    write_script(script, src);
    char acp[600];
    snprintf(acp, sizeof acp, "[{\"name\":\"%s\",\"command\":\"python3\",\"args\":[\"%s\"]}]",
             server, script);
    char *notices = NULL;
    pmcp_pool_opts po = {.cwd = g_root, .acp_servers_json = acp};
    pmcp_pool *p = pmcp_pool_open(&po, &notices);
    assert_non_null(p);
    assert_null(notices);
    return p;
}

static void test_pool_caps_text(void **state) {
    (void)state;
    pmcp_pool *p = script_pool("big.py", "b", k_big);
    char *text, *content;
    bool is_err;
    assert_int_equal(pmcp_pool_call(p, "mcp__b__big", "{}", NULL, &text, &is_err, &content), 0);
    assert_false(is_err);
    assert_true(strlen(text) < 70000);
    assert_non_null(strstr(text, "[output truncated: 65536 of 400000 bytes shown]"));
    pj_t *ok = pj_string(text); /* still valid UTF-8 */
    assert_non_null(ok);
    pj_decref(ok);
    assert_true(strlen(content) > 400000); /* the client sees everything */
    free(text);
    free(content);
    pmcp_pool_close(p);
}

/* ---------------------------------------------------------------- builtin pair */

static int g_editor_reads;

static int editor_read(void *ctx, const char *abs, char **data, size_t *len) {
    (void)ctx;
    (void)abs;
    g_editor_reads++;
    *data = strdup("FROM-EDITOR\n");
    *len = strlen(*data);
    return 0;
}

static void same_json(const char *a, const char *b) {
    if (!a || !b) {
        if (a != b) fprintf(stderr, "differs: %s vs %s\n", a ? a : "NULL", b ? b : "NULL");
        assert_ptr_equal(a, b);
        return;
    }
    pj_t *x = pj_loads(a, PJ_DECODE_ANY, NULL), *y = pj_loads(b, PJ_DECODE_ANY, NULL);
    assert_non_null(x);
    assert_true(pj_equal(x, y));
    pj_decref(x);
    pj_decref(y);
}

/* The pool's builtin tools run with the given context (the editor hook is used) and
 * hand back exactly what the registry returns: text, content (diffs), locations. */
static void test_pool_builtin(void **state) {
    (void)state;
    char path[512];
    snprintf(path, sizeof path, "%s/b.txt", g_root);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("on disk\n", f);
    fclose(f);
    ptl_client_fs cfs = {.read = editor_read};
    ptl_ctx ctx = {.cwd = g_root, .client_fs = &cfs};
    pmcp_pool_opts po = {.workspace = &ctx};
    char *notices = NULL;
    pmcp_pool *p = pmcp_pool_open(&po, &notices);
    assert_non_null(p);
    assert_null(notices);
    assert_true(pmcp_pool_builtin(p));
    assert_int_equal(pmcp_pool_tool_count(p), 0); /* the host lists builtin tools itself */
    assert_true(pmcp_pool_has(p, "read") && pmcp_pool_has(p, "shell"));
    static const char *const calls[][2] = {
        {"read", "{\"path\":\"b.txt\"}"},
        {"write", "{\"path\":\"new/w.txt\",\"content\":\"x\\n\"}"},
        {"edit", "{\"path\":\"new/w.txt\",\"old_string\":\"x\",\"new_string\":\"y\"}"},
        {"read", "{\"path\":\"../etc/passwd\"}"},
        {"read", "{bad json"},
        {"grep", "{\"pattern\":\"disk\"}"},
        {"shell", "{\"command\":\"echo hi; exit 3\"}"}};
    for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++) {
        const ptl_tool *t = ptl_find(calls[i][0]);
        /* the direct result first, then the pool's on the same state (write/edit:
         * the pool runs on a copy of the state the direct call started from) */
        ptl_result d;
        ptl_run(t, calls[i][1], &ctx, &d);
        if (!strcmp(calls[i][0], "write")) remove(strcat(strcpy(path, g_root), "/new/w.txt"));
        if (!strcmp(calls[i][0], "edit")) {
            f = fopen(strcat(strcpy(path, g_root), "/new/w.txt"), "w");
            fputs("x\n", f);
            fclose(f);
        }
        int before = g_editor_reads;
        pmcp_pool_result r;
        int rc = pmcp_pool_run(p, calls[i][0], calls[i][1], NULL, NULL, NULL, &r);
        assert_int_equal(rc, 0);
        assert_string_equal(r.output, d.output);
        assert_int_equal(r.is_error, d.is_error);
        if (r.content_json || !d.content_json) {
            same_json(r.content_json, d.content_json);
        } else { /* a plain text block of the text: what the ACP layer renders for NULL */
            pj_t *tb = pj_pack("[{s:s, s:{s:s, s:s}}]", "type", "content", "content", "type",
                               "text", "text", d.output);
            char *tbs = pj_dumps(tb, PJ_COMPACT);
            same_json(tbs, d.content_json);
            free(tbs);
            pj_decref(tb);
        }
        same_json(r.locations_json, d.locations_json);
        same_json(r.raw_output_json, d.raw_output_json);
        same_json(r.meta_json, d.meta_json);
        if (i == 0) {
            assert_int_equal(g_editor_reads, before + 1);
            assert_non_null(strstr(r.output, "FROM-EDITOR"));
        }
        if (i == 1) assert_non_null(strstr(r.content_json, "\"type\":\"diff\""));
        pmcp_pool_result_clear(&r);
        ptl_result_clear(&d);
    }
    pmcp_pool_close(p);
}

typedef struct raise_later {
    atomic_int *flag;
    long ms;
} raise_later;

static void *raise_main(void *arg) {
    raise_later *r = arg;
    struct timespec ts = {r->ms / 1000, (r->ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    atomic_store(r->flag, 1);
    return NULL;
}

/* A cancelled builtin call returns what the stopped tool returned (its partial output),
 * as a direct call did, and is reported as cancelled (1). */
static void test_pool_builtin_cancel(void **state) {
    (void)state;
    ptl_ctx ctx = {.cwd = g_root};
    pmcp_pool_opts po = {.workspace = &ctx};
    char *notices = NULL;
    pmcp_pool *p = pmcp_pool_open(&po, &notices);
    assert_non_null(p);
    atomic_int cancel = 0;
    raise_later rl = {&cancel, 500};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, raise_main, &rl), 0);
    pmcp_pool_result r;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = pmcp_pool_run(p, "shell", "{\"command\":\"echo partial-77; sleep 30\"}", &cancel, NULL,
                           NULL, &r);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    pthread_join(th, NULL);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(r.output, "partial-77"));
    assert_true(t1.tv_sec - t0.tv_sec < 10); /* did not wait for the command */
    pmcp_pool_result_clear(&r);
    pmcp_pool_close(p);
}

/* External clients of the same server get plain content, no _meta. */
static void test_inproc_plain(void **state) {
    (void)state;
    pmcp_server_config cfg = {.name = "ws", .kind = PMCP_INPROC, .root = g_root};
    char err[256];
    pmcp_client *c = pmcp_client_connect(&cfg, NULL, err, sizeof err);
    assert_non_null(c);
    pj_t *res = NULL;
    assert_int_equal(pmcp__client_call_raw(c, "write", "{\"path\":\"p.txt\",\"content\":\"z\"}",
                                           NULL, 0, &res, err, sizeof err),
                     PMCP_OK);
    assert_null(pj_object_get(res, "_meta"));
    assert_string_equal(
        pj_string_value(pj_object_get(pj_array_get(pj_object_get(res, "content"), 0), "type")),
        "text");
    pj_decref(res);
    pmcp_client_close(c);
}

/* A request larger than an MCP message may be (the peer would drop it and could not say
 * which request it dropped) is refused at once with a transport error, not sent and
 * waited for until the timeout. */
static void test_oversized_request(void **state) {
    (void)state;
    pmcp_server_config cfg = {.name = "ws", .kind = PMCP_INPROC, .root = g_root};
    char err[256];
    pmcp_client *c = pmcp_client_connect(&cfg, NULL, err, sizeof err);
    assert_non_null(c);
    size_t n = PMCP_MAX_FRAME + 1024;
    char *args = malloc(n + 64);
    assert_non_null(args);
    int k = snprintf(args, 64, "{\"path\":\"big.txt\",\"content\":\"");
    memset(args + k, 'a', n);
    memcpy(args + k + n, "\"}", 3);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pj_t *res = NULL;
    assert_int_equal(pmcp__client_call_raw(c, "write", args, NULL, 20000, &res, err, sizeof err),
                     PMCP_ERR_TRANSPORT);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    assert_null(res);
    assert_non_null(strstr(err, "more than"));
    /* "at once": far below the 20 s timeout, even on a loaded machine */
    assert_true(t1.tv_sec - t0.tv_sec < 10);
    free(args);
    /* the client still works */
    assert_int_equal(pmcp__client_call_raw(c, "write", "{\"path\":\"p.txt\",\"content\":\"z\"}",
                                           NULL, 0, &res, err, sizeof err),
                     PMCP_OK);
    pj_decref(res);
    pmcp_client_close(c);
}

/* A server that adds a tool during the first call and sends list_changed first. */
static const char *k_lc = "import sys,json\n"
                          "T=[{'name':'first','inputSchema':{'type':'object'}}]\n"
                          "def out(o): print(json.dumps(o),flush=True)\n"
                          "for line in sys.stdin:\n"
                          "    m=json.loads(line)\n"
                          "    if 'id' not in m: continue\n"
                          "    r={'protocolVersion':'2025-06-18','capabilities':{'tools':"
                          "{'listChanged':True}},'serverInfo':{'name':'l','version':'1'}}\n"
                          "    if m['method']=='tools/list': r={'tools':T}\n"
                          "    if m['method']=='tools/call':\n"
                          "        if len(T)==1: T.append({'name':'second',"
                          "'inputSchema':{'type':'object'}})\n"
                          "        out({'jsonrpc':'2.0','method':"
                          "'notifications/tools/list_changed'})\n"
                          "        r={'content':[{'type':'text','text':'ok'}]}\n"
                          "    out({'jsonrpc':'2.0','id':m['id'],'result':r})\n";

static void test_pool_refresh(void **state) {
    (void)state;
    pmcp_pool *p = script_pool("lc.py", "l", k_lc);
    char *notices = NULL;
    assert_int_equal(pmcp_pool_refresh(p, &notices), 0); /* nothing changed yet */
    assert_int_equal(pmcp_pool_tool_count(p), 1);
    const char *old_name = pmcp_pool_tool_at(p, 0)->name;
    pmcp_pool_result r;
    assert_int_equal(pmcp_pool_run(p, "mcp__l__first", "{}", NULL, NULL, NULL, &r), 0);
    pmcp_pool_result_clear(&r);
    assert_int_equal(pmcp_pool_refresh(p, &notices), 1);
    assert_null(notices);
    assert_int_equal(pmcp_pool_tool_count(p), 2);
    assert_string_equal(pmcp_pool_tool_at(p, 1)->name, "mcp__l__second");
    assert_string_equal(old_name, "mcp__l__first"); /* the old table is kept */
    assert_int_equal(pmcp_pool_run(p, "mcp__l__second", "{}", NULL, NULL, NULL, &r), 0);
    pmcp_pool_result_clear(&r);
    /* list_changed again, same list: no rebuild */
    assert_int_equal(pmcp_pool_run(p, "mcp__l__first", "{}", NULL, NULL, NULL, &r), 0);
    pmcp_pool_result_clear(&r);
    assert_int_equal(pmcp_pool_refresh(p, &notices), 0);
    pmcp_pool_close(p);
}

/* A server whose list changes with every call: the call bumps a counter that the tool's
 * description carries (padded to ~100 KB) and sends list_changed before answering. */
static const char *k_churn = "import sys,json\n"
                             "N=[0]\n"
                             "def out(o): print(json.dumps(o),flush=True)\n"
                             "for line in sys.stdin:\n"
                             "    m=json.loads(line)\n"
                             "    if 'id' not in m: continue\n"
                             "    r={'protocolVersion':'2025-06-18','capabilities':{'tools':"
                             "{'listChanged':True}},'serverInfo':{'name':'c','version':'1'}}\n"
                             "    if m['method']=='tools/list': r={'tools':[{'name':'t',"
                             "'description':'v%d '%N[0]+'x'*100000,"
                             "'inputSchema':{'type':'object'}}]}\n"
                             "    if m['method']=='tools/call':\n"
                             "        N[0]+=1\n"
                             "        out({'jsonrpc':'2.0','method':"
                             "'notifications/tools/list_changed'})\n"
                             "        r={'content':[{'type':'text','text':'ok'}]}\n"
                             "    out({'jsonrpc':'2.0','id':m['id'],'result':r})\n";

/* A list that changes on every call: the pool keeps the current table and the one its
 * reader last read, never more, and what the reader holds stays readable. */
static void test_pool_retired(void **state) {
    (void)state;
    pmcp_pool *p = script_pool("churn.py", "c", k_churn);
    char *notices = NULL;
    /* the reader's pointer and the version it shows */
    const char *held = pmcp_pool_tool_at(p, 0)->description;
    int held_v = 0;
    for (int i = 1; i <= 20; i++) {
        pmcp_pool_result r;
        assert_int_equal(pmcp_pool_run(p, "mcp__c__t", "{}", NULL, NULL, NULL, &r), 0);
        pmcp_pool_result_clear(&r);
        assert_int_equal(pmcp_pool_refresh(p, &notices), 1);
        assert_null(notices);
        assert_true(pmcp__pool_tables(p) <= 2);
        char want[16];
        snprintf(want, sizeof want, "v%d ", held_v); /* still the table read last */
        assert_memory_equal(held, want, strlen(want));
        if (i % 3) { /* the reader re-reads, mostly */
            held = pmcp_pool_tool_at(p, 0)->description;
            held_v = i;
        }
    }
    pmcp_pool_close(p);
}

/* The tool list's bounds: 1024 tools pass, 1025 fail the listing, and so do more than
 * PMCP_MAX_LIST_BYTES of tool text (two 5 MB pages). */
static const char *k_many = "import sys,json\n"
                            "K=int(sys.argv[1]); B=int(sys.argv[2])\n"
                            "for line in sys.stdin:\n"
                            "    m=json.loads(line)\n"
                            "    if 'id' not in m: continue\n"
                            "    r={'protocolVersion':'2025-06-18','capabilities':{'tools':{}},"
                            "'serverInfo':{'name':'m','version':'1'}}\n"
                            "    if m['method']=='tools/list':\n"
                            "        page=int((m.get('params') or {}).get('cursor','0'))\n"
                            "        r={'tools':[{'name':'t%d_%d'%(page,i),'description':'d'*B}"
                            " for i in range(K)]}\n"
                            "        if page==0: r['nextCursor']='1'\n"
                            "    print(json.dumps({'jsonrpc':'2.0','id':m['id'],'result':r}),"
                            "flush=True)\n";

static pmcp_client *connect_many(const char *script, const char *k, const char *bytes, char *err,
                                 size_t errlen) {
    char *args[] = {(char *)script, (char *)k, (char *)bytes};
    pmcp_server_config cfg = {
        .name = "m", .kind = PMCP_STDIO, .command = "python3", .args = args, .nargs = 3};
    return pmcp_client_connect(&cfg, NULL, err, errlen);
}

static void test_list_bounds(void **state) {
    (void)state;
    char script[300], err[512];
    snprintf(script, sizeof script, "%s/many.py", g_root);
    write_script(script, k_many);
    pmcp_client *c = connect_many(script, "512", "10", err, sizeof err); /* 2 pages: 1024 */
    assert_non_null(c);
    pmcp_tool *t;
    size_t n;
    assert_int_equal(pmcp_client_tools(c, &t, &n), 0);
    assert_int_equal(n, PMCP_MAX_TOOLS);
    pmcp_tools_free(t, n);
    pmcp_client_close(c);
    assert_null(connect_many(script, "513", "10", err, sizeof err));
    assert_non_null(strstr(err, "more than 1024 tools"));
    assert_null(connect_many(script, "1", "5000000", err, sizeof err));
    assert_non_null(strstr(err, "bytes"));
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_mcp PERI_BINARY\n");
        return 2;
    }
    static char peri_abs[4096];
    if (!realpath(argv[1], peri_abs)) return 2;
    g_peri = peri_abs;
    signal(SIGPIPE, SIG_IGN);
    char tmpl[] = "/tmp/peri-mcp-test-XXXXXX";
    if (!mkdtemp(tmpl)) return 1;
    snprintf(g_root, sizeof g_root, "%s", tmpl);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decode),
        cmocka_unit_test(test_lines_huge),
        cmocka_unit_test(test_sse),
        cmocka_unit_test(test_parse_servers),
        cmocka_unit_test(test_content_to_acp),
        cmocka_unit_test(test_server_raw),
        cmocka_unit_test(test_inproc),
        cmocka_unit_test(test_hostile_server),
        cmocka_unit_test(test_stdio_failures),
        cmocka_unit_test(test_pool_caps_text),
        cmocka_unit_test(test_pool_builtin),
        cmocka_unit_test(test_pool_builtin_cancel),
        cmocka_unit_test(test_inproc_plain),
        cmocka_unit_test(test_oversized_request),
        cmocka_unit_test(test_pool_refresh),
        cmocka_unit_test(test_pool_retired),
        cmocka_unit_test(test_list_bounds),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_root);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_root);
    return rc;
}
