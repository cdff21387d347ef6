/*
 * test_http_sse.c — a streamed model answer end to end over the project's HTTP client:
 * an OpenAI-style text/event-stream, sent chunked in 3-byte pieces (chunk framing and
 * CRLFs split anywhere) through the in-memory ports, goes from the client's body
 * callback straight into the model layer's own SSE parser and stream decoder
 * (src/model/sse.c, the decoder behind pm__decode_sse). The text deltas must reach the
 * model's event callback while the stream is still open, and the assembled response
 * must be the one the same bytes give when fed directly.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "http_fake_ports.h"
#include "model/model_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *STREAM =
    "data: {\"id\":\"c1\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":"
    "\"assistant\",\"content\":\"Hel\"}}]}\r\n\r\n"
    ": keep-alive\n\n"
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo, \"}}]}\n\n"
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"world\"}}]}\n\n"
    "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
    "data: [DONE]\n\n";

typedef struct sse_run {
    fake_ports f;
    pm__sse sse;
    pm__decoder dec;
    pm__sink sink;
    pm_response resp;
    pm_error err;
    int text_events;
    int model_rc;
    int dones;
    pn_http_result res;
} sse_run;

static int on_model_event(const pm_stream_event *ev, void *ctx) {
    sse_run *s = ctx;
    if (ev->kind == PM_EV_TEXT_DELTA) s->text_events++;
    return 0;
}

static int on_head(void *ud, const pn_http_parser *p) {
    (void)ud;
    const char *ct = pn_http_header_get(p, "content-type");
    return !(pn_http_status(p) == 200 && ct && strstr(ct, "text/event-stream"));
}

static int on_body(void *ud, const char *d, size_t n) {
    sse_run *s = ud;
    s->model_rc = pm__sse_feed(&s->sse, d, n, pm__decode_sse, &s->dec);
    return s->model_rc;
}

static void on_done(void *ud, const pn_http_result *r) {
    sse_run *s = ud;
    s->dones++;
    s->res = *r;
    if (r->err == PN_HTTP_OK && pm__sse_finish(&s->sse, pm__decode_sse, &s->dec) == 0)
        pm__decode_eof(&s->dec);
}

static void model_init(sse_run *s) {
    pm__sse_init(&s->sse);
    pm__sink_init(&s->sink, on_model_event, s, &s->resp, &s->err);
    pm__decoder_init(&s->dec, PM_PROVIDER_OPENAI, &s->sink);
}

static void model_free(sse_run *s) {
    pm__sse_free(&s->sse);
    pm__decoder_free(&s->dec);
    pm__sink_free(&s->sink);
    pm_response_clear(&s->resp);
}

static const char *text_of(const pm_response *r) {
    for (size_t i = 0; i < r->message.nparts; i++)
        if (r->message.parts[i].kind == PM_PART_TEXT) return r->message.parts[i].text;
    return NULL;
}

static void test_sse_over_http(void **state) {
    (void)state;
    sse_run *s = calloc(1, sizeof *s);
    assert_non_null(s);
    fake_init(&s->f);
    s->f.read_max = 5;
    model_init(s);
    pn_http_header hd[] = {{"Content-Type", "application/json"}, {"Accept", "text/event-stream"}};
    pn_http_callbacks cb = {on_head, on_body, on_done, s};
    pn_http_opts o = {.deadline_ms = 600000, .idle_ms = 300000};
    const char *body = "{\"model\":\"m\",\"stream\":true}";
    assert_non_null(pn_http_request(&s->f.ports, "https://llm.example/v1/chat/completions", "POST",
                                    hd, 2, body, strlen(body), &cb, &o, NULL));
    fake_pump(&s->f);

    /* the answer, chunked in pieces of 40 bytes, then sent 3 bytes at a time */
    pb_buf wire = {0};
    assert_true(pb_buf_puts(&wire, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                                   "Transfer-Encoding: chunked\r\n\r\n"));
    size_t n = strlen(STREAM);
    for (size_t at = 0; at < n; at += 40) {
        size_t k = n - at < 40 ? n - at : 40;
        assert_true(pb_buf_printf(&wire, "%zx;piece=%zu\r\n", k, at));
        assert_true(pb_buf_put(&wire, STREAM + at, k));
        assert_true(pb_buf_puts(&wire, "\r\n"));
    }
    assert_true(pb_buf_puts(&wire, "0\r\n\r\n"));
    int text_before_end = -1;
    for (size_t at = 0; at < wire.len; at += 3) {
        fake_send(&s->f, 1, wire.p + at, wire.len - at < 3 ? wire.len - at : 3);
        fake_pump(&s->f);
        if (at + 3 < wire.len) {
            assert_int_equal(s->dones, 0);
            text_before_end = s->text_events;
        }
    }
    assert_true(text_before_end >= 3); /* every delta arrived while the stream was open */
    assert_int_equal(s->dones, 1);
    if (s->res.err != PN_HTTP_OK) fail_msg("%s: %s", pn_http_err_name(s->res.err), s->res.detail);
    assert_true(fake_all_settled(&s->f));
    assert_int_equal(s->model_rc, 0);
    assert_int_equal(s->sink.status, PM_OK);
    assert_non_null(text_of(&s->resp));
    assert_string_equal(text_of(&s->resp), "Hello, world");
    assert_int_equal(s->resp.stop, PM_STOP_END_TURN);

    /* the same bytes fed to the model layer directly give the same answer */
    sse_run *d = calloc(1, sizeof *d);
    assert_non_null(d);
    model_init(d);
    assert_int_equal(pm__sse_feed(&d->sse, STREAM, n, pm__decode_sse, &d->dec), 0);
    assert_int_equal(pm__sse_finish(&d->sse, pm__decode_sse, &d->dec), 0);
    pm__decode_eof(&d->dec);
    assert_string_equal(text_of(&d->resp), text_of(&s->resp));
    assert_int_equal(d->text_events, s->text_events);
    model_free(d);
    free(d);

    pb_buf_free(&wire);
    model_free(s);
    fake_free(&s->f);
    free(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sse_over_http),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
