/*
 * test_call.c — the sans-IO model call (pm_call_*) without a network: the request it
 * describes (URL, header lines, body), answers fed byte by byte, the typed outcomes
 * (auth, HTTP, network, protocol, cancel) and the retry policy (Retry-After capped,
 * exponential backoff, never after an event was delivered, retries used up), and the
 * bounds on what one answer may assemble (64 MiB in all, 4 MiB of one tool call's
 * arguments); the body keeps a user message's parts in their order, and a tool call's
 * input nested too deep for the body goes empty.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "peri/json.h"
#include "peri/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pm_client *client(pm_provider p, int retries) {
    pm_config cfg = {.provider = p,
                     .base_url = "http://model.invalid/",
                     .api_key = "sk-1",
                     .context_1m = true,
                     .max_retries = retries};
    pm_error err;
    pm_client *c = pm_client_new(&cfg, &err);
    assert_non_null(c);
    return c;
}

/* One user message "hi" to model "m" (the call copies what it needs at once). */
static const pm_request *request(void) {
    static const pm_part part = {.kind = PM_PART_TEXT, .text = "hi"};
    static const pm_message m = {.role = PM_ROLE_USER, .parts = (pm_part *)&part, .nparts = 1};
    static const pm_request req = {.model = "m", .messages = &m, .nmessages = 1, .temperature = -1};
    return &req;
}

typedef struct seen {
    int n;
    char text[128];
} seen;

static int on_event(const pm_stream_event *ev, void *ctx) {
    seen *s = ctx;
    s->n++;
    if (ev->kind == PM_EV_TEXT_DELTA)
        snprintf(s->text + strlen(s->text), sizeof s->text - strlen(s->text), "%.*s", (int)ev->len,
                 ev->text);
    return 0;
}

/* One attempt: status, an optional header, the body one byte at a time. */
static pm_status attempt(pm_call *call, seen *s, pm_response *resp, pm_error *err, long status,
                         const char *header, const char *body, pm_transport how) {
    pm_call_begin(call, on_event, s, resp, err);
    pm_call_status(call, status);
    if (header) pm_call_header(call, header, strlen(header));
    for (size_t i = 0; body && body[i]; i++)
        if (pm_call_body(call, body + i, 1)) break;
    return pm_call_end(call, how, how == PM_TRANSPORT_FAILED ? "connection refused" : NULL);
}

static void test_request(void **state) {
    (void)state;
    pm_client *c = client(PM_PROVIDER_ANTHROPIC, 0);
    pm_error err;
    pm_call *call = pm_call_new(c, request(), true, &err);
    assert_non_null(call);
    const pm_http_request *r = pm_call_request(call);
    assert_string_equal(r->method, "POST");
    assert_string_equal(r->url, "http://model.invalid/v1/messages");
    const char *want[] = {"Content-Type: application/json", "Accept: text/event-stream",
                          "x-api-key: sk-1", "anthropic-version: 2023-06-01",
                          "anthropic-beta: context-1m-2025-08-07"};
    assert_int_equal(r->nheaders, 5);
    for (size_t i = 0; i < 5; i++)
        assert_string_equal(r->headers[i], want[i]);
    char *body = pm_build_body(c, request(), true, &err);
    assert_int_equal(r->body_len, strlen(body));
    assert_memory_equal(r->body, body, r->body_len);
    free(body);
    pm_call_free(call);
    pm_client_free(c);
    /* a bad request is refused with a typed error */
    c = client(PM_PROVIDER_OPENAI, 0);
    pm_request bad = {.model = NULL};
    assert_null(pm_call_new(c, &bad, true, &err));
    assert_int_equal(err.status, PM_ERR_ARG);
    pm_client_free(c);
}

static const char ANTHROPIC[] =
    "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m1\","
    "\"usage\":{\"input_tokens\":3}}}\r\n\r\n"
    "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\"}}"
    "\n\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\","
    "\"text\":\"Hel\"}}\n\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{"
    "\"type\":\"text_delta\",\"text\":\"lo\"}}\n\n: keep-alive\n\n"
    "data: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
    "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{"
    "\"output_tokens\":2}}\n\ndata: {\"type\":\"message_stop\"}\n\n";

static void test_stream_byte_by_byte(void **state) {
    (void)state;
    pm_client *c = client(PM_PROVIDER_ANTHROPIC, 2);
    pm_error err;
    pm_call *call = pm_call_new(c, request(), true, &err);
    seen s = {0};
    pm_response resp;
    assert_int_equal(attempt(call, &s, &resp, &err, 200, NULL, ANTHROPIC, PM_TRANSPORT_OK), PM_OK);
    assert_string_equal(s.text, "Hello");
    char *text = pm_message_text(&resp.message);
    assert_string_equal(text, "Hello");
    free(text);
    assert_int_equal(resp.usage.input_tokens, 3);
    assert_int_equal(resp.usage.output_tokens, 2);
    assert_int_equal(resp.stop, PM_STOP_END_TURN);
    assert_int_equal(pm_call_retry_ms(call), -1);
    assert_int_equal(pm_call_attempts(call), 1);
    pm_response_clear(&resp);
    pm_call_free(call);
    pm_client_free(c);
}

static void test_outcomes(void **state) {
    (void)state;
    pm_client *c = client(PM_PROVIDER_OPENAI, 0);
    pm_error err;
    seen s = {0};
    pm_response resp;
    pm_call *call = pm_call_new(c, request(), true, &err);
    /* 401: auth, with the provider's message */
    assert_int_equal(attempt(call, &s, &resp, &err, 401, NULL,
                             "{\"error\":{\"message\":\"bad key\"}}", PM_TRANSPORT_OK),
                     PM_ERR_AUTH);
    assert_non_null(strstr(err.message, "bad key"));
    assert_int_equal(err.http_status, 401);
    pm_response_clear(&resp);
    /* no answer at all */
    assert_int_equal(attempt(call, &s, &resp, &err, 0, NULL, NULL, PM_TRANSPORT_FAILED),
                     PM_ERR_NETWORK);
    assert_string_equal(err.message, "connection refused");
    pm_response_clear(&resp);
    /* a stream that stops early keeps the text that arrived */
    assert_int_equal(attempt(call, &s, &resp, &err, 200, NULL,
                             "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"par\"}}]}"
                             "\n\n",
                             PM_TRANSPORT_OK),
                     PM_ERR_PROTOCOL);
    char *text = pm_message_text(&resp.message);
    assert_string_equal(text, "par");
    free(text);
    pm_response_clear(&resp);
    /* cancelled by the transport */
    assert_int_equal(attempt(call, &s, &resp, &err, 200, NULL, "data: {", PM_TRANSPORT_CANCELLED),
                     PM_CANCELLED);
    pm_response_clear(&resp);
    /* a body after the end of an attempt is refused */
    assert_int_equal(pm_call_body(call, "x", 1), -1);
    pm_call_free(call);
    pm_client_free(c);
}

static void test_retry_policy(void **state) {
    (void)state;
    pm_client *c = client(PM_PROVIDER_OPENAI, 3);
    pm_error err;
    seen s = {0};
    pm_response resp;
    pm_call *call = pm_call_new(c, request(), true, &err);
    /* Retry-After in seconds, capped at 30 s */
    assert_int_equal(
        attempt(call, &s, &resp, &err, 503, "Retry-After: 100\r\n", "busy", PM_TRANSPORT_OK),
        PM_ERR_HTTP);
    assert_int_equal(pm_call_retry_ms(call), 30000);
    pm_response_clear(&resp);
    /* no Retry-After: the backoff after attempt k is 500 ms doubled k times */
    assert_int_equal(attempt(call, &s, &resp, &err, 500, NULL, "", PM_TRANSPORT_OK), PM_ERR_HTTP);
    assert_int_equal(pm_call_retry_ms(call), 1000);
    pm_response_clear(&resp);
    assert_int_equal(attempt(call, &s, &resp, &err, 0, NULL, NULL, PM_TRANSPORT_FAILED),
                     PM_ERR_NETWORK);
    assert_int_equal(pm_call_retry_ms(call), 2000);
    pm_response_clear(&resp);
    /* retries used up */
    assert_int_equal(attempt(call, &s, &resp, &err, 429, NULL, "", PM_TRANSPORT_OK), PM_ERR_HTTP);
    assert_int_equal(pm_call_retry_ms(call), -1);
    assert_int_equal(err.attempts, 4);
    pm_response_clear(&resp);
    pm_call_free(call);
    /* a 400 is final; so is a failure after an event was delivered */
    call = pm_call_new(c, request(), true, &err);
    assert_int_equal(attempt(call, &s, &resp, &err, 400, NULL, "", PM_TRANSPORT_OK), PM_ERR_HTTP);
    assert_int_equal(pm_call_retry_ms(call), -1);
    pm_response_clear(&resp);
    pm_call_free(call);
    call = pm_call_new(c, request(), true, &err);
    assert_int_equal(attempt(call, &s, &resp, &err, 200, NULL,
                             "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}"
                             "\n\n",
                             PM_TRANSPORT_PARTIAL),
                     PM_ERR_PROTOCOL);
    assert_int_equal(pm_call_retry_ms(call), -1);
    pm_response_clear(&resp);
    pm_call_free(call);
    pm_client_free(c);
}

/* ---------------------------------------------------------------- answer bounds */

#define CHUNK (64u << 10)

static int count_event(const pm_stream_event *ev, void *ctx) {
    size_t *bytes = ctx;
    if (ev->kind == PM_EV_TEXT_DELTA || ev->kind == PM_EV_TOOL_CALL_DELTA) *bytes += ev->len;
    return 0;
}

/* pre + n 'a's + post, malloc'd. */
static char *frame(const char *pre, size_t n, const char *post, size_t *len) {
    size_t a = strlen(pre), b = strlen(post);
    char *f = malloc(a + n + b + 1);
    assert_non_null(f);
    memcpy(f, pre, a);
    memset(f + a, 'a', n);
    memcpy(f + a + n, post, b + 1);
    *len = a + n + b;
    return f;
}

/* Feeds head, then body up to `total` times (fewer when the call refuses it), then tail;
 * returns the outcome and how many times body was taken. */
static pm_status feed(pm_call *call, const char *head, const char *body, size_t blen, size_t times,
                      const char *tail, size_t *taken) {
    *taken = 0;
    if (head && pm_call_body(call, head, strlen(head)))
        return pm_call_end(call, PM_TRANSPORT_OK, NULL);
    for (; *taken < times; ++*taken)
        if (pm_call_body(call, body, blen)) return pm_call_end(call, PM_TRANSPORT_OK, NULL);
    if (tail) pm_call_body(call, tail, strlen(tail));
    return pm_call_end(call, PM_TRANSPORT_OK, NULL);
}

/* A stream of text deltas past 64 MiB fails the call (protocol error) once the bound is
 * reached: the assembled text never exceeds it. */
static void test_answer_bound(void **state) {
    (void)state;
    pm_client *c = client(PM_PROVIDER_OPENAI, 0);
    pm_error err;
    pm_call *call = pm_call_new(c, request(), true, &err);
    size_t delivered = 0, len, taken;
    pm_response resp;
    char *f = frame("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"", CHUNK,
                    "\"}}]}\n\n", &len);
    pm_call_begin(call, count_event, &delivered, &resp, &err);
    pm_call_status(call, 200);
    pm_status st =
        feed(call, NULL, f, len, 65 * 16, /* 65 MiB */
             "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}"
             "\n\ndata: [DONE]\n\n",
             &taken);
    assert_int_equal(st, PM_ERR_PROTOCOL);
    assert_non_null(strstr(err.message, "larger than"));
    assert_true(taken < 64 * 16 + 1);
    assert_true(delivered <= (64u << 20));
    char *text = pm_message_text(&resp.message);
    assert_true(strlen(text) <= (64u << 20));
    free(text);
    pm_response_clear(&resp);
    free(f);
    pm_call_free(call);
    pm_client_free(c);
}

/* One tool call's arguments past 4 MiB fail the call (protocol error): OpenAI and
 * Anthropic streams, and an Anthropic non-streaming answer. */
static void test_tool_args_bound(void **state) {
    (void)state;
    pm_error err;
    pm_response resp;
    size_t delivered = 0, len, taken;
    /* OpenAI: 5 MiB of argument deltas */
    pm_client *c = client(PM_PROVIDER_OPENAI, 0);
    pm_call *call = pm_call_new(c, request(), true, &err);
    char *f = frame("data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,"
                    "\"function\":{\"arguments\":\"",
                    CHUNK, "\"}}]}}]}\n\n", &len);
    pm_call_begin(call, count_event, &delivered, &resp, &err);
    pm_call_status(call, 200);
    pm_status st = feed(
        call,
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"t1\","
        "\"function\":{\"name\":\"read\",\"arguments\":\"\"}}]}}]}\n\n",
        f, len, 5 * 16,
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n"
        "data: [DONE]\n\n",
        &taken);
    assert_int_equal(st, PM_ERR_PROTOCOL);
    assert_non_null(strstr(err.message, "arguments of tool call read"));
    assert_true(taken <= 4 * 16);
    assert_int_equal(resp.message.nparts, 0);
    pm_response_clear(&resp);
    free(f);
    pm_call_free(call);
    pm_client_free(c);
    /* Anthropic: 5 MiB of input_json_delta */
    c = client(PM_PROVIDER_ANTHROPIC, 0);
    call = pm_call_new(c, request(), true, &err);
    f = frame("data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":"
              "\"input_json_delta\",\"partial_json\":\"",
              CHUNK, "\"}}\n\n", &len);
    pm_call_begin(call, count_event, &delivered, &resp, &err);
    pm_call_status(call, 200);
    st = feed(call,
              "data: {\"type\":\"message_start\",\"message\":{\"id\":\"m1\"}}\n\n"
              "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":"
              "\"tool_use\",\"id\":\"t1\",\"name\":\"read\"}}\n\n",
              f, len, 5 * 16,
              "data: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
              "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"}}\n\n"
              "data: {\"type\":\"message_stop\"}\n\n",
              &taken);
    assert_int_equal(st, PM_ERR_PROTOCOL);
    assert_non_null(strstr(err.message, "arguments of tool call read"));
    assert_true(taken <= 4 * 16);
    pm_response_clear(&resp);
    free(f);
    pm_call_free(call);
    /* Anthropic, not streamed: a tool_use whose input is 5 MiB */
    call = pm_call_new(c, request(), false, &err);
    f = frame("{\"id\":\"m1\",\"content\":[{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"read\","
              "\"input\":{\"path\":\"",
              5u << 20, "\"}}],\"stop_reason\":\"tool_use\"}", &len);
    pm_call_begin(call, NULL, NULL, &resp, &err);
    pm_call_status(call, 200);
    st = feed(call, NULL, f, len, 1, NULL, &taken);
    assert_int_equal(st, PM_ERR_PROTOCOL);
    assert_non_null(strstr(err.message, "arguments of tool call read"));
    pm_response_clear(&resp);
    free(f);
    pm_call_free(call);
    pm_client_free(c);
}

/* The body of req for provider p, parsed. */
static pj_t *body_of(pm_provider p, const pm_request *req) {
    pm_client *c = client(p, 0);
    pm_error err;
    char *body = pm_build_body(c, req, false, &err);
    assert_non_null(body);
    pj_t *v = pj_loads(body, 0, NULL);
    assert_non_null(v);
    free(body);
    pm_client_free(c);
    return v;
}

/* A prompt's blocks in the client's order: text, image, text, image. Both providers get
 * them so; a user message of text parts only is one per line for OpenAI. */
static void test_part_order(void **state) {
    (void)state;
    pm_message m;
    pm_message_init(&m, PM_ROLE_USER);
    assert_int_equal(pm_message_add_text(&m, "First:"), PM_OK);
    assert_int_equal(pm_message_add_image(&m, "image/png", "AAAA"), PM_OK);
    assert_int_equal(pm_message_add_text_source(&m, "Second:", "{\"type\":\"resource_link\"}"),
                     PM_OK);
    assert_int_equal(pm_message_add_image(&m, "image/gif", "BBBB"), PM_OK);
    pm_request req = {.model = "m", .messages = &m, .nmessages = 1, .temperature = -1};
    pj_t *v = body_of(PM_PROVIDER_OPENAI, &req);
    pj_t *content = pj_object_get(pj_array_get(pj_object_get(v, "messages"), 0), "content");
    assert_int_equal(pj_array_size(content), 4);
    assert_string_equal(pj_string_value(pj_object_get(pj_array_get(content, 0), "text")), "First:");
    assert_non_null(strstr(
        pj_string_value(pj_object_get(pj_object_get(pj_array_get(content, 1), "image_url"), "url")),
        "image/png"));
    assert_string_equal(pj_string_value(pj_object_get(pj_array_get(content, 2), "text")),
                        "Second:");
    assert_non_null(strstr(
        pj_string_value(pj_object_get(pj_object_get(pj_array_get(content, 3), "image_url"), "url")),
        "image/gif"));
    pj_decref(v);
    v = body_of(PM_PROVIDER_ANTHROPIC, &req);
    content = pj_object_get(pj_array_get(pj_object_get(v, "messages"), 0), "content");
    const char *want[] = {"text", "image", "text", "image"};
    assert_int_equal(pj_array_size(content), 4);
    for (size_t i = 0; i < 4; i++)
        assert_string_equal(pj_string_value(pj_object_get(pj_array_get(content, i), "type")),
                            want[i]);
    assert_string_equal(pj_string_value(pj_object_get(pj_array_get(content, 2), "text")),
                        "Second:");
    pj_decref(v);
    /* the JSON form keeps the order and the block a text stands for */
    char *json = pm_message_to_json(&m);
    assert_non_null(json);
    pm_message back;
    assert_int_equal(pm_message_from_json(json, &back, NULL), PM_OK);
    free(json);
    assert_int_equal(back.nparts, 4);
    assert_int_equal(back.parts[1].kind, PM_PART_IMAGE);
    assert_string_equal(back.parts[2].text, "Second:");
    assert_string_equal(back.parts[2].arguments, "{\"type\":\"resource_link\"}");
    assert_null(back.parts[0].arguments);
    pm_message_clear(&back);
    pm_message_clear(&m);
    /* text parts only: one string, one part a line (not run together) */
    pm_message_init(&m, PM_ROLE_USER);
    assert_int_equal(pm_message_add_text(&m, "hello"), PM_OK);
    assert_int_equal(pm_message_add_text(&m, "[Resource: z](https://x.y/z)"), PM_OK);
    req.messages = &m;
    v = body_of(PM_PROVIDER_OPENAI, &req);
    content = pj_object_get(pj_array_get(pj_object_get(v, "messages"), 0), "content");
    assert_string_equal(pj_string_value(content), "hello\n[Resource: z](https://x.y/z)");
    pj_decref(v);
    char *t = pm_message_text_sep(&m, "\n");
    assert_string_equal(t, "hello\n[Resource: z](https://x.y/z)");
    free(t);
    t = pm_message_text(&m);
    assert_string_equal(t, "hello[Resource: z](https://x.y/z)");
    free(t);
    pm_message_clear(&m);
}

/* A tool call whose arguments nest deeper than the Anthropic body can carry within
 * PJ_PARSER_MAX_DEPTH: the body is still made, that input empty; a shallower one stays. */
static void test_deep_tool_input(void **state) {
    (void)state;
    for (size_t n = 2041; n <= 2046; n++) {
        /* {"path": [[...]]}: 1 + n deep; its input sits 5 levels down in the body */
        char *args = malloc(2 * n + 16);
        assert_non_null(args);
        size_t k = (size_t)sprintf(args, "{\"path\":");
        memset(args + k, '[', n);
        memset(args + k + n, ']', n);
        strcpy(args + k + 2 * n, "}");
        pm_message m[3];
        pm_message_init(&m[0], PM_ROLE_USER);
        pm_message_init(&m[1], PM_ROLE_ASSISTANT);
        pm_message_init(&m[2], PM_ROLE_TOOL);
        assert_int_equal(pm_message_add_text(&m[0], "deep"), PM_OK);
        assert_int_equal(pm_message_add_tool_call(&m[1], "t1", "read", args), PM_OK);
        assert_int_equal(pm_message_add_tool_result(&m[2], "t1", "failed", true), PM_OK);
        pm_request req = {.model = "m", .messages = m, .nmessages = 3, .temperature = -1};
        pj_t *v = body_of(PM_PROVIDER_ANTHROPIC, &req);
        pj_t *input = pj_object_get(
            pj_array_get(pj_object_get(pj_array_get(pj_object_get(v, "messages"), 1), "content"),
                         0),
            "input");
        assert_true(pj_is_object(input));
        assert_int_equal(pj_object_size(input), n + 1 + 5 <= PJ_PARSER_MAX_DEPTH ? 1 : 0);
        pj_decref(v);
        v = body_of(PM_PROVIDER_OPENAI, &req); /* there the arguments are a string */
        pj_decref(v);
        for (int i = 0; i < 3; i++)
            pm_message_clear(&m[i]);
        free(args);
    }
}

int main(void) {
    pm_global_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_request),      cmocka_unit_test(test_stream_byte_by_byte),
        cmocka_unit_test(test_outcomes),     cmocka_unit_test(test_retry_policy),
        cmocka_unit_test(test_answer_bound), cmocka_unit_test(test_tool_args_bound),
        cmocka_unit_test(test_part_order),   cmocka_unit_test(test_deep_tool_input),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    pm_global_cleanup();
    return rc;
}
