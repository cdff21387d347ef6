/*
 * test_sse.c — offline model-layer units: the incremental SSE parser (every split
 * point, CRLF/CR, multi-line data, comments), the neutral message JSON form, and the
 * provider request bodies.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "model/model_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct rec {
    char log[4096];
    int n;
} rec;

static int on_event(void *ctx, const char *event, const char *data, size_t len) {
    rec *r = ctx;
    size_t at = strlen(r->log);
    snprintf(r->log + at, sizeof r->log - at, "[%s|%.*s]", event, (int)len, data);
    r->n++;
    return 0;
}

static const char *STREAM = ": comment line\r\n"
                            "event: message_start\r\n"
                            "data: {\"a\":1}\r\n"
                            "\r\n"
                            "data:no-space\n"
                            "data:  two spaces\n"
                            "\n"
                            "event: multi\r"
                            "data: line1\r"
                            "data: line2\r"
                            "id: 7\r"
                            "retry: 100\r"
                            "\r"
                            "data\n"
                            "\n"
                            "event: empty-no-data\n"
                            "\n"
                            "data: [DONE]\n"
                            "\n";

static const char *EXPECT = "[message_start|{\"a\":1}][message|no-space\n two spaces]"
                            "[multi|line1\nline2][message|][message|[DONE]]";

static void test_sse_every_split(void **state) {
    (void)state;
    size_t n = strlen(STREAM);
    for (size_t a = 0; a <= n; a++) {
        for (size_t b = a; b <= n; b += 7) {
            pm__sse p;
            pm__sse_init(&p);
            rec r = {0};
            assert_int_equal(pm__sse_feed(&p, STREAM, a, on_event, &r), 0);
            assert_int_equal(pm__sse_feed(&p, STREAM + a, b - a, on_event, &r), 0);
            assert_int_equal(pm__sse_feed(&p, STREAM + b, n - b, on_event, &r), 0);
            assert_int_equal(pm__sse_finish(&p, on_event, &r), 0);
            if (strcmp(r.log, EXPECT) != 0) fail_msg("split %zu/%zu: %s", a, b, r.log);
            pm__sse_free(&p);
        }
    }
    /* byte by byte */
    pm__sse p;
    pm__sse_init(&p);
    rec r = {0};
    for (size_t i = 0; i < n; i++)
        assert_int_equal(pm__sse_feed(&p, STREAM + i, 1, on_event, &r), 0);
    assert_string_equal(r.log, EXPECT);
    pm__sse_free(&p);
}

static void test_sse_eof_and_limits(void **state) {
    (void)state;
    pm__sse p;
    pm__sse_init(&p);
    rec r = {0};
    /* no final blank line, no final newline: dispatched at finish */
    assert_int_equal(pm__sse_feed(&p, "data: tail", 10, on_event, &r), 0);
    assert_int_equal(r.n, 0);
    assert_int_equal(pm__sse_finish(&p, on_event, &r), 0);
    assert_string_equal(r.log, "[message|tail]");
    pm__sse_free(&p);
    /* a line longer than the bound is refused, not buffered forever */
    pm__sse_init(&p);
    p.max_line = 100;
    char big[300];
    memset(big, 'x', sizeof big);
    assert_int_equal(pm__sse_feed(&p, big, sizeof big, on_event, &r), -1);
    pm__sse_free(&p);
}

static int stop_cb(void *ctx, const char *event, const char *data, size_t len) {
    (void)ctx, (void)event, (void)data, (void)len;
    return 5;
}

static void test_sse_callback_stops(void **state) {
    (void)state;
    pm__sse p;
    pm__sse_init(&p);
    assert_int_equal(pm__sse_feed(&p, "data: a\n\ndata: b\n\n", 18, stop_cb, NULL), 5);
    pm__sse_free(&p);
}

static void test_message_json(void **state) {
    (void)state;
    pm_message m, back;
    pm_message_init(&m, PM_ROLE_ASSISTANT);
    assert_int_equal(pm_message_add_thinking(&m, "hmm", "sig"), PM_OK);
    assert_int_equal(pm_message_add_text(&m, "héllo \"q\"\n"), PM_OK);
    assert_int_equal(pm_message_add_tool_call(&m, "c1", "read", "{\"path\":\"a\"}"), PM_OK);
    assert_int_equal(pm_message_add_tool_result(&m, "c1", "body", true), PM_OK);
    char *js = pm_message_to_json(&m);
    assert_non_null(js);
    pm_error err;
    assert_int_equal(pm_message_from_json(js, &back, &err), PM_OK);
    assert_int_equal(back.role, PM_ROLE_ASSISTANT);
    assert_int_equal(back.nparts, 4);
    assert_string_equal(back.parts[0].signature, "sig");
    assert_string_equal(back.parts[1].text, "héllo \"q\"\n");
    assert_string_equal(back.parts[2].arguments, "{\"path\":\"a\"}");
    assert_true(back.parts[3].is_error);
    char *js2 = pm_message_to_json(&back);
    assert_string_equal(js, js2);
    free(js);
    free(js2);
    pm_message_clear(&back);
    pm_message_clear(&m);
    /* bad input is a typed error */
    assert_int_equal(pm_message_from_json("{", &back, &err), PM_ERR_PROTOCOL);
    assert_int_equal(pm_message_from_json("{\"role\":\"x\",\"parts\":[]}", &back, &err),
                     PM_ERR_PROTOCOL);
    assert_int_equal(
        pm_message_from_json("{\"role\":\"user\",\"parts\":[{\"type\":\"v\"}]}", &back, &err),
        PM_ERR_PROTOCOL);
    assert_int_equal(pm_message_from_json(NULL, &back, &err), PM_ERR_PROTOCOL);
}

/* The conversation: user asks, assistant calls a tool, tool answers. */
static void conversation(pm_message msgs[4]) {
    pm_message_init(&msgs[0], PM_ROLE_SYSTEM);
    pm_message_add_text(&msgs[0], "extra system");
    pm_message_init(&msgs[1], PM_ROLE_USER);
    pm_message_add_text(&msgs[1], "read a");
    pm_message_init(&msgs[2], PM_ROLE_ASSISTANT);
    pm_message_add_text(&msgs[2], "sure");
    pm_message_add_tool_call(&msgs[2], "c1", "read", "{\"path\":\"a\"}");
    pm_message_init(&msgs[3], PM_ROLE_TOOL);
    pm_message_add_tool_result(&msgs[3], "c1", "file body", false);
}

static void test_bodies(void **state) {
    (void)state;
    pm_message msgs[4];
    conversation(msgs);
    pm_tool_def tool = {"read", "Read a file", "{\"type\":\"object\"}"};
    pm_request req = {.model = "m1",
                      .system = "be brief",
                      .messages = msgs,
                      .nmessages = 4,
                      .tools = &tool,
                      .ntools = 1,
                      .temperature = -1};
    pm_error err;
    pm_config oc = {.provider = PM_PROVIDER_OPENAI, .base_url = "http://x/v1/"};
    pm_client *c = pm_client_new(&oc, &err);
    assert_non_null(c);
    char *b = pm_build_body(c, &req, true, &err);
    assert_non_null(b);
    assert_non_null(strstr(b, "{\"role\":\"system\",\"content\":\"be brief\"}"));
    assert_non_null(strstr(b, "{\"role\":\"system\",\"content\":\"extra system\"}"));
    assert_non_null(strstr(b, "\"tool_calls\":[{\"id\":\"c1\",\"type\":\"function\","
                              "\"function\":{\"name\":\"read\",\"arguments\":"
                              "\"{\\\"path\\\":\\\"a\\\"}\"}}]"));
    assert_non_null(
        strstr(b, "{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"file body\"}"));
    assert_non_null(strstr(b, "\"stream_options\":{\"include_usage\":true}"));
    assert_non_null(strstr(b, "\"parameters\":{\"type\":\"object\"}"));
    assert_null(strstr(b, "temperature"));
    free(b);
    pm_client_free(c);

    pm_config ac = {.provider = PM_PROVIDER_ANTHROPIC, .base_url = "http://x"};
    c = pm_client_new(&ac, &err);
    req.temperature = 0.5;
    b = pm_build_body(c, &req, false, &err);
    assert_non_null(b);
    assert_non_null(strstr(b, "\"system\":\"be brief\\n\\nextra system\""));
    assert_non_null(strstr(b, "\"max_tokens\":4096"));
    assert_non_null(strstr(b, "{\"type\":\"tool_use\",\"id\":\"c1\",\"name\":\"read\","
                              "\"input\":{\"path\":\"a\"}}"));
    assert_non_null(strstr(b, "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\","
                              "\"tool_use_id\":\"c1\",\"content\":\"file body\","
                              "\"is_error\":false}]}"));
    assert_non_null(strstr(b, "\"input_schema\":{\"type\":\"object\"}"));
    assert_non_null(strstr(b, "\"temperature\":0.5"));
    assert_non_null(strstr(b, "\"stream\":false"));
    free(b);
    /* bad tool schema and missing model are typed errors */
    tool.input_schema_json = "[1";
    assert_null(pm_build_body(c, &req, true, &err));
    assert_int_equal(err.status, PM_ERR_ARG);
    tool.input_schema_json = "{}";
    req.model = NULL;
    assert_null(pm_build_body(c, &req, true, &err));
    assert_int_equal(err.status, PM_ERR_ARG);
    pm_client_free(c);
    for (int i = 0; i < 4; i++)
        pm_message_clear(&msgs[i]);
    pm_config bad = {.provider = PM_PROVIDER_OPENAI};
    assert_null(pm_client_new(&bad, &err));
    assert_int_equal(err.status, PM_ERR_ARG);
    pm_provider pv;
    assert_true(pm_provider_parse("anthropic", &pv));
    assert_int_equal(pv, PM_PROVIDER_ANTHROPIC);
    assert_false(pm_provider_parse("gemini", &pv));
}

/* Hostile input never crashes the decoders: odd types, wrong shapes, random bytes and
 * mutated real streams (run under ASan/UBSan in the sanitizer build). */
static int count_ev(const pm_stream_event *ev, void *ctx) {
    (void)ev;
    (*(int *)ctx)++;
    return 0;
}

static void feed_stream(pm_provider prov, const char *bytes, size_t n) {
    pm_response resp;
    memset(&resp, 0, sizeof resp);
    pm_error err;
    memset(&err, 0, sizeof err);
    int events = 0;
    pm__sink sink;
    pm__sink_init(&sink, count_ev, &events, &resp, &err);
    pm__decoder dec;
    pm__decoder_init(&dec, prov, &sink);
    pm__sse sse;
    pm__sse_init(&sse);
    if (pm__sse_feed(&sse, bytes, n, pm__decode_sse, &dec) == 0 &&
        pm__sse_finish(&sse, pm__decode_sse, &dec) == 0)
        pm__decode_eof(&dec);
    assert_true(sink.status == PM_OK || sink.status == PM_ERR_PROTOCOL);
    pm__sse_free(&sse);
    pm__decoder_free(&dec);
    pm__sink_free(&sink);
    pm_response_clear(&resp);
    /* and the same bytes as a non-streaming body */
    memset(&resp, 0, sizeof resp);
    pm__sink_init(&sink, NULL, NULL, &resp, &err);
    pm__decoder_init(&dec, prov, &sink);
    pm__decode_full(&dec, bytes, n);
    pm__decoder_free(&dec);
    pm__sink_free(&sink);
    pm_response_clear(&resp);
}

static const char *HOSTILE[] = {
    "data: "
    "{\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":-5,\"function\":{\"arguments\":7}}]}}]}"
    "\n\n",
    "data: "
    "{\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":3,\"function\":{\"arguments\":\"{\"}}]}}]"
    "}\n\n"
    "data: "
    "{\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":3,\"id\":\"x\",\"function\":{\"name\":"
    "\"n\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n",
    "data: {\"choices\":\"no\",\"usage\":[1]}\n\n",
    "data: {\"choices\":[{\"delta\":null,\"finish_reason\":5}]}\n\n",
    "data: {\"error\":42}\n\n",
    "data: [1,2,3]\n\n",
    "data: \"str\"\n\n",
    "event: content_block_delta\ndata: "
    "{\"type\":\"content_block_delta\",\"index\":\"x\",\"delta\":5}\n\n",
    "data: "
    "{\"type\":\"content_block_delta\",\"index\":9,\"delta\":{\"type\":\"input_json_delta\","
    "\"partial_json\":\"{\"}}\n\n",
    "data: "
    "{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\"}}\n\n"
    "data: "
    "{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":"
    "\"a\",\"name\":\"b\"}}\n\n"
    "data: {\"type\":\"content_block_stop\",\"index\":0}\n\ndata: "
    "{\"type\":\"content_block_stop\",\"index\":0}\n\n"
    "data: "
    "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":7},\"usage\":{\"output_tokens\":"
    "\"many\"}}\n\n"
    "data: {\"type\":\"message_stop\"}\n\n",
    "data: {\"type\":\"message_start\",\"message\":[]}\n\n",
    "data: {\"type\":\"error\"}\n\n",
    "data: "
    "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\","
    "\"signature\":\"s\"}}\n\n",
    "data: {\"type\":7}\n\n",
    "{\"content\":[{\"type\":\"tool_use\",\"input\":5},{\"type\":\"thinking\"},{\"type\":\"text\","
    "\"text\":1}],\"stop_reason\":[]}",
    "{\"choices\":[{\"message\":{\"content\":5,\"tool_calls\":[7,{\"function\":3}]}}]}",
};

static void test_hostile_input(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof HOSTILE / sizeof HOSTILE[0]; i++)
        for (int p = 0; p < 2; p++)
            feed_stream(p ? PM_PROVIDER_ANTHROPIC : PM_PROVIDER_OPENAI, HOSTILE[i],
                        strlen(HOSTILE[i]));
    /* mutations of real streams, and random bytes */
    const char *real[2] = {
        "data: {\"choices\":[{\"delta\":{\"content\":\"hi\",\"tool_calls\":[{\"index\":0,\"id\":"
        "\"c\",\"function\":{\"name\":\"read\",\"arguments\":\"{}\"}}]},\"finish_reason\":"
        "\"tool_calls\"}],\"usage\":{\"prompt_tokens\":1}}\n\ndata: [DONE]\n\n",
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\","
        "\"usage\":{\"input_tokens\":3}}}\n\ndata: {\"type\":\"content_block_start\",\"index\":0,"
        "\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"x\"}}\n\ndata: "
        "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\","
        "\"partial_json\":\"{\\\"a\\\":1}\"}}\n\ndata: {\"type\":\"content_block_stop\","
        "\"index\":0}\n\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":"
        "\"tool_use\"}}\n\ndata: {\"type\":\"message_stop\"}\n\n"};
    unsigned seed = 12345;
    char buf[1024];
    for (int iter = 0; iter < 4000; iter++) {
        int p = iter & 1;
        size_t n = strlen(real[p]);
        memcpy(buf, real[p], n);
        int flips = 1 + (int)((seed = seed * 1103515245 + 12345) >> 16) % 4;
        for (int k = 0; k < flips; k++) {
            seed = seed * 1103515245 + 12345;
            size_t at = (seed >> 8) % n;
            seed = seed * 1103515245 + 12345;
            buf[at] = (char)(seed >> 16);
        }
        feed_stream(p ? PM_PROVIDER_ANTHROPIC : PM_PROVIDER_OPENAI, buf, n);
    }
    for (int iter = 0; iter < 200; iter++) {
        for (size_t k = 0; k < sizeof buf; k++) {
            seed = seed * 1103515245 + 12345;
            buf[k] = (char)(seed >> 16);
        }
        feed_stream(iter & 1 ? PM_PROVIDER_ANTHROPIC : PM_PROVIDER_OPENAI, buf, sizeof buf);
    }
}

int main(void) {
    pm_global_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sse_every_split),
        cmocka_unit_test(test_sse_eof_and_limits),
        cmocka_unit_test(test_sse_callback_stops),
        cmocka_unit_test(test_message_json),
        cmocka_unit_test(test_bodies),
        cmocka_unit_test(test_hostile_input),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    pm_global_cleanup();
    return rc;
}
