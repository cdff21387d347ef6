/*
 * test_codec.c — unit tests of the ACP wire layer: JSON-RPC decoding/encoding, the
 * line reader, the locked writer, the event -> session/update mapping (with the event's
 * identity), the runtime's session map, and the key store of authenticate / peri login.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "acp/jsonrpc.h"
#include "acp/server_impl.h"
#include "acp/transport.h"
#include "peri/runtime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static pb_rpc_kind decode_kind(const char *s, int *code) {
    pb_rpc_msg m;
    pb_rpc_decode(s, strlen(s), PACP_RPC_RULES, &m);
    pb_rpc_kind k = m.kind;
    if (code) *code = m.err_code;
    pb_rpc_clear(&m);
    return k;
}

static void test_decode_kinds(void **state) {
    (void)state;
    int code = 0;
    assert_int_equal(decode_kind("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\"}", NULL),
                     PB_RPC_REQUEST);
    assert_int_equal(
        decode_kind("{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"x\",\"params\":{}}", NULL),
        PB_RPC_REQUEST);
    assert_int_equal(
        decode_kind("{\"jsonrpc\":\"2.0\",\"method\":\"session/cancel\",\"params\":{}}", NULL),
        PB_RPC_NOTIFICATION);
    assert_int_equal(decode_kind("{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}", NULL),
                     PB_RPC_RESPONSE);
    assert_int_equal(decode_kind("{\"jsonrpc\":\"2.0\",\"id\":3,\"error\":{\"code\":1}}", NULL),
                     PB_RPC_RESPONSE);
    assert_int_equal(decode_kind("{not json", &code), PB_RPC_INVALID);
    assert_int_equal(code, PACP_PARSE_ERROR);
    assert_int_equal(decode_kind("", &code), PB_RPC_INVALID);
    assert_int_equal(code, PACP_PARSE_ERROR);
    assert_int_equal(decode_kind("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\"}]", &code),
                     PB_RPC_INVALID);
    assert_int_equal(code, PACP_INVALID_REQUEST);
    assert_int_equal(decode_kind("{\"id\":1,\"method\":\"a\"}", &code), PB_RPC_INVALID);
    assert_int_equal(code, PACP_INVALID_REQUEST);
    assert_int_equal(decode_kind("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":5}", &code),
                     PB_RPC_INVALID);
    assert_int_equal(code, PACP_INVALID_REQUEST);
    assert_int_equal(decode_kind("{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"a\"}", &code),
                     PB_RPC_INVALID);
    assert_int_equal(code, PACP_INVALID_REQUEST);
    assert_int_equal(
        decode_kind("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\",\"params\":3}", &code),
        PB_RPC_INVALID);
    assert_int_equal(code, PACP_INVALID_REQUEST);
    assert_int_equal(decode_kind("{\"jsonrpc\":\"2.0\",\"id\":1}", &code), PB_RPC_INVALID);
    assert_int_equal(decode_kind("{\"jsonrpc\":\"2.0\",\"id\":1,\"id\":2,\"method\":\"a\"}", &code),
                     PB_RPC_INVALID);
    assert_int_equal(code, PACP_PARSE_ERROR);
}

static void test_invalid_keeps_id(void **state) {
    (void)state;
    pb_rpc_msg m;
    const char *s = "{\"jsonrpc\":\"1.0\",\"id\":7,\"method\":\"a\"}";
    pb_rpc_decode(s, strlen(s), PACP_RPC_RULES, &m);
    assert_int_equal(m.kind, PB_RPC_INVALID);
    assert_non_null(m.id);
    assert_int_equal(pj_integer_value(m.id), 7);
    pb_rpc_clear(&m);
}

static void test_encode(void **state) {
    (void)state;
    pj_t *id = pj_integer(4);
    pj_t *f = pb_rpc_result(id, pj_pack("{s:s}", "text", "a\nb"));
    size_t n;
    char *line = pb_rpc_encode(f, true, &n);
    assert_string_equal(line, "{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{\"text\":\"a\\nb\"}}\n");
    assert_int_equal(n, strlen(line));
    free(line);
    pj_decref(f);
    f = pb_rpc_error(NULL, PACP_CLOSE_INCOMPLETE, "Session is closing", NULL);
    line = pb_rpc_encode(f, true, NULL);
    assert_string_equal(
        line, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32010,\"message\":\"Session "
              "is closing\"}}\n");
    free(line);
    pj_decref(f);
    f = pb_rpc_error(id, PACP_TURN_FAILED, "boom", pj_pack("{s:s}", "kind", "llm"));
    line = pb_rpc_encode(f, true, NULL);
    assert_string_equal(line, "{\"jsonrpc\":\"2.0\",\"id\":4,\"error\":{\"code\":-32000,"
                              "\"message\":\"boom\",\"data\":{\"kind\":\"llm\"}}}\n");
    free(line);
    pj_decref(f);
    pj_decref(id);
}

static void test_reader(void **state) {
    (void)state;
    int p[2];
    assert_int_equal(pipe(p), 0);
    const char *in = "one\r\n\ntwo\nthree";
    assert_int_equal(write(p[1], in, strlen(in)), (ssize_t)strlen(in));
    close(p[1]);
    pb_lines r;
    pb_lines_init(&r, p[0], PACP_MAX_FRAME);
    char *line;
    size_t len;
    assert_int_equal(pb_lines_next(&r, &line, &len), PB_LINE);
    assert_string_equal(line, "one");
    assert_int_equal(pb_lines_next(&r, &line, &len), PB_LINE);
    assert_int_equal(len, 0);
    assert_int_equal(pb_lines_next(&r, &line, &len), PB_LINE);
    assert_string_equal(line, "two");
    assert_int_equal(pb_lines_next(&r, &line, &len), PB_LINE);
    assert_string_equal(line, "three");
    assert_int_equal(pb_lines_next(&r, &line, &len), PB_LINES_EOF);
    pb_lines_free(&r);
    close(p[0]);
}

static void test_reader_big_line(void **state) {
    (void)state;
    char path[] = "/tmp/peri-acp-test-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    unlink(path);
    size_t big = 300000;
    char *buf = malloc(big + 8);
    memset(buf, 'x', big);
    memcpy(buf + big, "\nok\n", 4);
    assert_int_equal(write(fd, buf, big + 4), (ssize_t)(big + 4));
    lseek(fd, 0, SEEK_SET);
    pb_lines r;
    pb_lines_init(&r, fd, PACP_MAX_FRAME);
    char *line;
    size_t len;
    assert_int_equal(pb_lines_next(&r, &line, &len), PB_LINE);
    assert_int_equal(len, big);
    assert_int_equal(pb_lines_next(&r, &line, &len), PB_LINE);
    assert_string_equal(line, "ok");
    assert_int_equal(pb_lines_next(&r, &line, &len), PB_LINES_EOF);
    pb_lines_free(&r);
    free(buf);
    close(fd);
}

static void test_update_mapping(void **state) {
    (void)state;
    pag_event ev = {.kind = PAG_EV_TOOL_UPDATE,
                    .tool_call_id = "c1",
                    .status = "failed",
                    .text = "rejected",
                    .session_id = "s1",
                    .session_seq = 9};
    pj_t *p = pacp__update_params(&ev, NULL);
    char *s = pj_dumps(p, PJ_COMPACT | PJ_PRESERVE_ORDER);
    assert_string_equal(
        s, "{\"sessionId\":\"s1\",\"update\":{\"sessionUpdate\":\"tool_call_update\","
           "\"toolCallId\":\"c1\",\"status\":\"failed\",\"content\":[{\"type\":\"content\","
           "\"content\":{\"type\":\"text\",\"text\":\"rejected\"}}],\"rawOutput\":{\"output\":"
           "\"rejected\"}},\"_meta\":{\"peri.sessionSeq\":9}}");
    free(s);
    pj_decref(p);
    pag_event tc = {.kind = PAG_EV_TOOL_CALL,
                    .tool_call_id = "c2",
                    .title = "Read a.txt",
                    .tool_kind = "read",
                    .status = "pending",
                    .raw_input = "{\"path\":\"a.txt\"}",
                    .session_id = "s1",
                    .replay = true};
    p = pacp__update_params(&tc, NULL);
    pj_t *u = pj_object_get(p, "update");
    assert_string_equal(pj_string_value(pj_object_get(u, "sessionUpdate")), "tool_call");
    assert_string_equal(pj_string_value(pj_object_get(u, "kind")), "read");
    assert_string_equal(pj_string_value(pj_object_get(pj_object_get(u, "rawInput"), "path")),
                        "a.txt");
    assert_true(pj_is_true(pj_object_get(pj_object_get(p, "_meta"), "periReplay")));
    pj_decref(p);
    pag_event us = {.kind = PAG_EV_USAGE, .used = 12, .size = 1000, .session_id = "s"};
    p = pacp__update_params(&us, NULL);
    u = pj_object_get(p, "update");
    assert_string_equal(pj_string_value(pj_object_get(u, "sessionUpdate")), "usage_update");
    assert_int_equal(pj_integer_value(pj_object_get(u, "used")), 12);
    pj_decref(p);
}

static int retained;
static void count_retain(void *h) {
    (void)h;
    retained++;
}

static void test_runtime(void **state) {
    (void)state;
    prt_runtime *rt = prt_new(count_retain);
    int a = 1, b = 2;
    assert_int_equal(prt_insert(rt, "a", &a), 0);
    assert_int_equal(prt_insert(rt, "b", &b), 0);
    assert_int_equal(prt_insert(rt, "a", &b), 1);
    assert_ptr_equal(prt_acquire(rt, "a"), &a);
    assert_int_equal(retained, 1);
    assert_null(prt_acquire(rt, "zz"));
    assert_int_equal(prt_next_seq(rt, "a"), 1);
    assert_int_equal(prt_next_seq(rt, "a"), 2);
    assert_int_equal(prt_next_seq(rt, "b"), 1);
    assert_int_equal(prt_next_seq(rt, "zz"), 0);
    char *ids[4];
    assert_int_equal(prt_list(rt, ids, 4), 2);
    free(ids[0]);
    free(ids[1]);
    assert_ptr_equal(prt_remove(rt, "a"), &a);
    assert_null(prt_remove(rt, "a"));
    assert_int_equal(prt_count(rt), 1);
    prt_free(rt);
}

/* A late event of a closed instance is never stamped into its successor. */
static void test_runtime_seq_of(void **state) {
    (void)state;
    prt_runtime *rt = prt_new(NULL);
    int old = 1, new = 2;
    assert_int_equal(prt_insert(rt, "s", &old), 0);
    assert_int_equal(prt_next_seq_of(rt, "s", &old), 1);
    assert_ptr_equal(prt_remove(rt, "s"), &old);
    assert_int_equal(prt_next_seq_of(rt, "s", &old), 0); /* unmapped */
    assert_int_equal(prt_insert(rt, "s", &new), 0);
    assert_int_equal(prt_next_seq_of(rt, "s", &old), 0); /* another instance now */
    assert_int_equal(prt_next_seq_of(rt, "s", &new), 1);
    prt_free(rt);
}

static void test_update_ids(void **state) {
    (void)state;
    pag_event ev = {.kind = PAG_EV_TEXT, .text = "hi", .session_id = "S", .session_seq = 7};
    pct_event_ids ids = {
        .session_epoch = 3, .turn_id = "turn-3-2", .attempt_id = "attempt-3-4", .agent_id = "S"};
    pj_t *p = pacp__update_params(&ev, &ids);
    pj_t *m = pj_object_get(p, "_meta");
    assert_int_equal(pj_integer_value(pj_object_get(m, "peri.sessionSeq")), 7);
    assert_int_equal(pj_integer_value(pj_object_get(m, "peri.sessionEpoch")), 3);
    assert_string_equal(pj_string_value(pj_object_get(m, "peri.turnId")), "turn-3-2");
    assert_string_equal(pj_string_value(pj_object_get(m, "peri.attemptId")), "attempt-3-4");
    assert_string_equal(pj_string_value(pj_object_get(m, "peri.agentId")), "S");
    pj_decref(p);
    /* outside a turn: no turn and no attempt */
    pct_event_ids none = {.session_epoch = 1, .agent_id = "S"};
    p = pacp__update_params(&ev, &none);
    m = pj_object_get(p, "_meta");
    assert_null(pj_object_get(m, "peri.turnId"));
    assert_null(pj_object_get(m, "peri.attemptId"));
    pj_decref(p);
}

static void test_store_api_key(void **state) {
    (void)state;
    char home[] = "/tmp/peri-key-XXXXXX", path[200], err[300];
    assert_non_null(mkdtemp(home));
    snprintf(path, sizeof path, "%s/.peri/settings.json", home);
    /* refused: bad provider, empty key, spaces, controls; nothing written */
    assert_int_equal(pacp_store_api_key(home, "other", "k", err, sizeof err), -1);
    assert_int_equal(pacp_store_api_key(home, "openai", "", err, sizeof err), -1);
    assert_int_equal(pacp_store_api_key(home, "openai", "a b", err, sizeof err), -1);
    assert_int_equal(pacp_store_api_key(home, "openai", "a\nb", err, sizeof err), -1);
    assert_int_equal(pacp_store_api_key("relative", "openai", "k", err, sizeof err), -1);
    struct stat st;
    assert_int_not_equal(stat(path, &st), 0);
    /* stored 0600, other entries kept */
    char dir[200];
    snprintf(dir, sizeof dir, "%s/.peri", home);
    assert_int_equal(mkdir(dir, 0700), 0);
    FILE *f = fopen(path, "w");
    fputs("{\"keep\": 1, \"providers\": {\"anthropic\": {\"apiKey\": \"a\"}}}", f);
    fclose(f);
    assert_int_equal(pacp_store_api_key(home, "openai", "sk-1", err, sizeof err), 0);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    pj_t *doc = pj_load_file(path, 0, NULL);
    assert_int_equal(pj_integer_value(pj_object_get(doc, "keep")), 1);
    pj_t *ps = pj_object_get(doc, "providers");
    assert_string_equal(pj_string_value(pj_object_get(pj_object_get(ps, "openai"), "apiKey")),
                        "sk-1");
    assert_string_equal(pj_string_value(pj_object_get(pj_object_get(ps, "anthropic"), "apiKey")),
                        "a");
    pj_decref(doc);
    /* a file that is not a JSON object is left alone */
    f = fopen(path, "w");
    fputs("[1]", f);
    fclose(f);
    assert_int_equal(pacp_store_api_key(home, "openai", "sk-2", err, sizeof err), -1);
    /* a symlink is not followed */
    char target[200];
    snprintf(target, sizeof target, "%s/elsewhere.json", home);
    f = fopen(target, "w");
    fputs("{}", f);
    fclose(f);
    unlink(path);
    assert_int_equal(symlink(target, path), 0);
    assert_int_equal(pacp_store_api_key(home, "openai", "sk-3", err, sizeof err), -1);
    doc = pj_load_file(target, 0, NULL);
    assert_int_equal(pj_object_size(doc), 0);
    pj_decref(doc);
    unlink(path);
    unlink(target);
    rmdir(dir);
    rmdir(home);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decode_kinds),    cmocka_unit_test(test_invalid_keeps_id),
        cmocka_unit_test(test_encode),          cmocka_unit_test(test_reader),
        cmocka_unit_test(test_reader_big_line), cmocka_unit_test(test_update_mapping),
        cmocka_unit_test(test_runtime),         cmocka_unit_test(test_runtime_seq_of),
        cmocka_unit_test(test_update_ids),      cmocka_unit_test(test_store_api_key),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
