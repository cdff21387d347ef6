/*
 * test_http_client.c — the HTTP/1.1 client (src/net/http_client.c) over the in-memory
 * ports of http_fake_ports.c: the bytes it writes, responses in pieces, https and SNI,
 * every failure of the ports (at once and by event), timeouts on the fake clock (a
 * hanging server, an idle stream), cancel (before the stream opens, from inside a body
 * callback), and for every request: exactly one final callback, made from an event and
 * only once every handle it opened has settled.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "http_fake_ports.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct harness {
    fake_ports f;
    pn_http_req *r;
    bool in_api; /* inside pn_http_request / pn_http_cancel */
    int heads, dones;
    int status_at_head;
    const char *ctype_at_head;
    pb_buf body;
    pn_http_result res;
    bool settled_at_done;
    size_t cancel_at;  /* cancel from on_body once this many bytes came (0: never) */
    bool stop_at_head; /* on_head returns nonzero */
    int body_calls_after_cancel;
    bool cancelled;
} harness;

static int h_head(void *ud, const pn_http_parser *p) {
    harness *h = ud;
    assert_int_equal(h->body.len, 0); /* the head comes before the first body byte */
    h->heads++;
    h->status_at_head = pn_http_status(p);
    h->ctype_at_head = pn_http_header_get(p, "content-type") ? "set" : NULL;
    return h->stop_at_head;
}

static int h_body(void *ud, const char *d, size_t n) {
    harness *h = ud;
    if (h->cancelled) h->body_calls_after_cancel++;
    assert_true(pb_buf_put(&h->body, d, n));
    if (h->cancel_at && h->body.len >= h->cancel_at && !h->cancelled) {
        h->cancelled = true;
        h->in_api = true;
        pn_http_cancel(h->r);
        h->in_api = false;
    }
    return 0;
}

static void h_done(void *ud, const pn_http_result *r) {
    harness *h = ud;
    assert_false(h->in_api); /* never from inside the call that started or cancelled it */
    h->dones++;
    h->res = *r;
    h->settled_at_done = fake_all_settled(&h->f);
}

static harness *new_harness(void) {
    harness *h = calloc(1, sizeof *h);
    assert_non_null(h);
    fake_init(&h->f);
    return h;
}

static void free_harness(harness *h) {
    fake_free(&h->f);
    pb_buf_free(&h->body);
    free(h);
}

static pn_http_req *start(harness *h, const char *url, const char *method, const pn_http_header *hd,
                          size_t nh, const char *body, const pn_http_opts *o,
                          pn_http_result *fail) {
    pn_http_callbacks cb = {h_head, h_body, h_done, h};
    h->in_api = true;
    h->r = pn_http_request(&h->f.ports, url, method, hd, nh, body, body ? strlen(body) : 0, &cb, o,
                           fail);
    h->in_api = false;
    return h->r;
}

static void cancel(harness *h) {
    h->in_api = true;
    pn_http_cancel(h->r);
    h->in_api = false;
}

/* The server's next bytes on the request's stream, delivered. */
static void answer(harness *h, const char *bytes) {
    fake_send(&h->f, 1, bytes, strlen(bytes));
    fake_pump(&h->f);
}

/* A GET of http://h/ whose stream is open and whose request is written. */
static harness *get_open(const pn_http_opts *o) {
    harness *h = new_harness();
    assert_non_null(start(h, "http://h/", "GET", NULL, 0, NULL, o, NULL));
    fake_pump(&h->f);
    return h;
}

/* The one final callback came, after everything settled. */
static void assert_finished(harness *h, pn_http_err want) {
    if (h->dones != 1 || h->res.err != want)
        fail_msg("dones %d, err %s (%s), want %s", h->dones, pn_http_err_name(h->res.err),
                 h->res.detail, pn_http_err_name(want));
    assert_true(h->settled_at_done);
    assert_true(fake_all_settled(&h->f));
    assert_int_equal(h->f.qlen, 0);
}

static const pn_http_opts TIMED = {.deadline_ms = 60000, .idle_ms = 10000};

/* ---------------------------------------------------------------- success */

static void test_get_in_pieces(void **state) {
    (void)state;
    harness *h = new_harness();
    h->f.read_max = 7; /* several reads per READABLE */
    assert_non_null(
        start(h, "http://api.example:8080/v1/models?x=1", "GET", NULL, 0, NULL, &TIMED, NULL));
    fake_stream *s = &h->f.s[0];
    assert_string_equal(s->host, "api.example");
    assert_int_equal(s->port, 8080);
    assert_false(s->tls);
    assert_int_equal(s->written.len, 0); /* written once the stream is open */
    fake_pump(&h->f);
    assert_string_equal(s->written.p, "GET /v1/models?x=1 HTTP/1.1\r\nHost: api.example:8080\r\n"
                                      "Connection: close\r\n\r\n");
    const char *resp[] = {"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Le",
                          "ngth: 11\r\n\r\n{\"data\"", ":[]}"};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(h->dones, 0);
        fake_send(&h->f, 1, resp[i], strlen(resp[i]));
        fake_pump(&h->f);
    }
    assert_finished(h, PN_HTTP_OK);
    assert_int_equal(h->heads, 1);
    assert_int_equal(h->status_at_head, 200);
    assert_non_null(h->ctype_at_head);
    assert_int_equal(h->res.status, 200);
    assert_int_equal(h->res.net, PN_OK);
    assert_string_equal(h->body.p, "{\"data\":[]}");
    assert_int_equal(s->closes, 1); /* closed by the client once the response was whole */
    assert_int_equal(h->f.timer_cancels, 2);
    free_harness(h);
}

static void test_https_post_json(void **state) {
    (void)state;
    harness *h = new_harness();
    pn_http_header hd[] = {{"Content-Type", "application/json"},
                           {"Authorization", "Bearer sk-test"}};
    assert_non_null(start(h, "https://llm.example/v1/chat/completions", "POST", hd, 2,
                          "{\"stream\":true}", NULL, NULL));
    fake_stream *s = &h->f.s[0];
    assert_true(s->tls);
    assert_string_equal(s->sni, "llm.example");
    assert_int_equal(s->port, 443);
    assert_int_equal(fake_live_timers(&h->f), 0); /* no deadline asked: no timer */
    fake_pump(&h->f);
    assert_string_equal(s->written.p,
                        "POST /v1/chat/completions HTTP/1.1\r\nHost: llm.example\r\n"
                        "Content-Type: application/json\r\nAuthorization: Bearer sk-test\r\n"
                        "Content-Length: 15\r\nConnection: close\r\n\r\n{\"stream\":true}");
    /* a chunked event stream arrives event by event */
    const char *head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                       "Transfer-Encoding: chunked\r\n\r\n";
    answer(h, head);
    assert_int_equal(h->heads, 1);
    assert_int_equal(h->body.len, 0);
    const char *ev1 = "f\r\ndata: {\"a\":1}\n\n\r\n";
    answer(h, ev1);
    assert_string_equal(h->body.p, "data: {\"a\":1}\n\n"); /* before the rest is sent */
    assert_int_equal(h->dones, 0);
    const char *ev2 = "e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n";
    answer(h, ev2);
    assert_finished(h, PN_HTTP_OK);
    assert_string_equal(h->body.p, "data: {\"a\":1}\n\ndata: [DONE]\n\n");
    free_harness(h);
}

static void test_body_until_close(void **state) {
    (void)state;
    harness *h = get_open(&TIMED);
    const char *r = "HTTP/1.0 200 OK\r\n\r\npart one, ";
    answer(h, r);
    fake_send(&h->f, 1, "part two", 8);
    fake_eof(&h->f, 1);
    fake_pump(&h->f);
    assert_finished(h, PN_HTTP_OK);
    assert_string_equal(h->body.p, "part one, part two");
    free_harness(h);
}

static void test_head_and_extra_bytes(void **state) {
    (void)state;
    harness *h = new_harness();
    assert_non_null(start(h, "http://h/x", "HEAD", NULL, 0, NULL, NULL, NULL));
    fake_pump(&h->f);
    const char *r = "HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\nHTTP/1.1 200 OK\r\n";
    answer(h, r);
    assert_finished(h, PN_HTTP_OK);
    assert_int_equal(h->body.len, 0);
    assert_int_equal(h->res.status, 200);
    free_harness(h);
}

static void test_error_status_is_a_response(void **state) {
    (void)state;
    harness *h = new_harness();
    assert_non_null(start(h, "http://h/", "POST", NULL, 0, "{}", NULL, NULL));
    fake_pump(&h->f);
    const char *r = "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 3\r\nContent-Length: 37\r\n"
                    "\r\n{\"error\":{\"message\":\"slow down\"}}....";
    answer(h, r);
    assert_finished(h, PN_HTTP_OK);
    assert_int_equal(h->res.status, 429);
    assert_int_equal(h->body.len, 37);
    free_harness(h);
}

/* ---------------------------------------------------------------- refused at once */

static void test_refused_at_once(void **state) {
    (void)state;
    struct {
        const char *url, *method, *hname, *hval;
        pn_http_err want;
    } bad[] = {
        {"http://user:pw@h/", "GET", "X", "v", PN_HTTP_E_URL},
        {"ftp://h/", "GET", "X", "v", PN_HTTP_E_URL},
        {"http://h:99999/", "GET", "X", "v", PN_HTTP_E_URL},
        {"http://h/", "GET", "X", "a\r\nHost: evil", PN_HTTP_E_ARG},
        {"http://h/", "GET", "Host", "evil", PN_HTTP_E_ARG},
        {"http://h/", "GE T", "X", "v", PN_HTTP_E_ARG},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        harness *h = new_harness();
        pn_http_header hd = {bad[i].hname, bad[i].hval};
        pn_http_result fail;
        assert_null(start(h, bad[i].url, bad[i].method, &hd, 1, NULL, &TIMED, &fail));
        assert_int_equal(fail.err, bad[i].want);
        assert_true(fail.detail[0] != '\0');
        assert_false(h->f.s[0].used); /* nothing opened */
        assert_int_equal(fake_live_timers(&h->f), 0);
        fake_pump(&h->f);
        assert_int_equal(h->dones, 0);
        free_harness(h);
    }
    harness *h = new_harness();
    h->f.open_result = PN_E_DENIED;
    pn_http_result fail;
    assert_null(start(h, "https://not-granted.example/", "GET", NULL, 0, NULL, &TIMED, &fail));
    assert_int_equal(fail.err, PN_HTTP_E_NET);
    assert_int_equal(fail.net, PN_E_DENIED);
    assert_int_equal(fake_live_timers(&h->f), 0);
    fake_pump(&h->f);
    assert_int_equal(h->dones, 0);
    pn_http_callbacks nodone = {NULL, NULL, NULL, NULL};
    assert_null(
        pn_http_request(&h->f.ports, "http://h/", "GET", NULL, 0, NULL, 0, &nodone, NULL, &fail));
    assert_int_equal(fail.err, PN_HTTP_E_ARG);
    free_harness(h);
}

/* ---------------------------------------------------------------- failures by event */

static void test_open_fails(void **state) {
    (void)state;
    pn_err errs[] = {PN_E_REFUSED, PN_E_TLS, PN_E_NOT_FOUND, PN_E_TIMEOUT, PN_E_DENIED};
    for (size_t i = 0; i < sizeof errs / sizeof errs[0]; i++) {
        harness *h = new_harness();
        h->f.opened_err = errs[i];
        assert_non_null(start(h, "https://h/", "GET", NULL, 0, NULL, &TIMED, NULL));
        fake_pump(&h->f);
        assert_finished(h, errs[i] == PN_E_TIMEOUT ? PN_HTTP_E_TIMEOUT : PN_HTTP_E_NET);
        assert_int_equal(h->res.net, errs[i]);
        assert_int_equal(h->res.status, 0);
        assert_int_equal(h->f.s[0].written.len, 0);
        assert_int_equal(h->f.s[0].closes, 0); /* a failed stream settles by itself */
        free_harness(h);
    }
}

static void test_stream_settles_under_the_request(void **state) {
    (void)state;
    /* the peer resets, or the host closes every port (PN_E_CLOSED): a network failure,
     * neither a timeout nor a cancel; a settlement without error reads as the end */
    struct {
        const char *resp;
        pn_err how;
        pn_http_err want;
    } cases[] = {
        {"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nsome", PN_E_RESET, PN_HTTP_E_NET},
        {"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nsome", PN_E_CLOSED, PN_HTTP_E_NET},
        {"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nsome", PN_OK, PN_HTTP_E_TRUNCATED},
        {"HTTP/1.1 200 OK\r\n\r\nsome", PN_OK, PN_HTTP_OK},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        harness *h = get_open(&TIMED);
        answer(h, cases[i].resp);
        fake_fail(&h->f, 1, cases[i].how);
        fake_pump(&h->f);
        assert_finished(h, cases[i].want);
        assert_int_equal(h->res.net, cases[i].want == PN_HTTP_E_NET ? cases[i].how : PN_OK);
        assert_int_equal(h->res.status, 200); /* the head had come: a partial response */
        assert_string_equal(h->body.p, "some");
        assert_int_equal(h->f.s[0].closes, 0);
        free_harness(h);
    }
}

static void test_read_and_write_fail(void **state) {
    (void)state;
    harness *h = new_harness();
    h->f.write_result = PN_E_LIMIT;
    assert_non_null(start(h, "http://h/", "POST", NULL, 0, "{}", &TIMED, NULL));
    fake_pump(&h->f);
    assert_finished(h, PN_HTTP_E_NET);
    assert_int_equal(h->res.net, PN_E_LIMIT);
    assert_int_equal(h->f.s[0].closes, 1);
    free_harness(h);

    h = new_harness();
    h->f.read_result = PN_E_IO;
    assert_non_null(start(h, "http://h/", "GET", NULL, 0, NULL, &TIMED, NULL));
    fake_pump(&h->f);
    fake_send(&h->f, 1, "HTTP/1.1 200 OK\r\n", 17);
    fake_pump(&h->f);
    assert_finished(h, PN_HTTP_E_NET);
    assert_int_equal(h->res.net, PN_E_IO);
    free_harness(h);
}

static void test_truncated_and_malformed(void **state) {
    (void)state;
    struct {
        const char *resp;
        bool eof;
        pn_http_err want;
    } cases[] = {
        {"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", true, PN_HTTP_E_TRUNCATED},
        {"", true, PN_HTTP_E_TRUNCATED},
        {"HTTP/1.1 200 OK\r\nBad Field: x\r\n\r\n", false, PN_HTTP_E_HEADER},
        {"HTTP/1.1 200 OK\r\nA: b\r\n folded\r\n\r\n", false, PN_HTTP_E_FOLDED},
        {"SSH-2.0-OpenSSH\r\n", false, PN_HTTP_E_STATUS_LINE},
        {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffff\r\n", false,
         PN_HTTP_E_CHUNK},
        {"HTTP/1.1 200 OK\r\nContent-Length: 2000\r\n\r\n", false, PN_HTTP_E_BODY_LIMIT},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        harness *h = new_harness();
        pn_http_opts o = TIMED;
        o.limits.max_body = 1000;
        assert_non_null(start(h, "http://h/", "GET", NULL, 0, NULL, &o, NULL));
        fake_pump(&h->f);
        if (cases[i].resp[0]) fake_send(&h->f, 1, cases[i].resp, strlen(cases[i].resp));
        if (cases[i].eof) fake_eof(&h->f, 1);
        fake_pump(&h->f);
        assert_finished(h, cases[i].want);
        assert_int_equal(h->res.net, PN_OK);
        free_harness(h);
    }
}

/* ---------------------------------------------------------------- timeouts */

static void test_hanging_server_deadline(void **state) {
    (void)state;
    harness *h = new_harness();
    pn_http_opts o = {.deadline_ms = 5000};
    assert_non_null(start(h, "http://h/", "GET", NULL, 0, NULL, &o, NULL));
    fake_pump(&h->f);
    fake_send(&h->f, 1, "HTTP/1.1 200 OK\r\n", 17); /* then nothing, ever */
    fake_pump(&h->f);
    fake_advance(&h->f, 4999);
    assert_int_equal(h->dones, 0);
    fake_advance(&h->f, 1);
    assert_finished(h, PN_HTTP_E_TIMEOUT);
    assert_int_equal(h->res.net, PN_E_TIMEOUT);
    assert_non_null(strstr(h->res.detail, "deadline"));
    assert_int_equal(h->f.s[0].closes, 1);
    free_harness(h);
}

static void test_idle_timeout_rearms(void **state) {
    (void)state;
    harness *h = new_harness();
    pn_http_opts o = {.idle_ms = 1000};
    assert_non_null(start(h, "http://h/", "GET", NULL, 0, NULL, &o, NULL));
    fake_pump(&h->f);
    const char *r = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n";
    fake_advance(&h->f, 500);
    answer(h, r);
    fake_advance(&h->f, 700); /* t=1200: the first idle timer fired at 1000, re-armed */
    assert_int_equal(h->dones, 0);
    fake_send(&h->f, 1, "data: 1\n\n", 9);
    fake_pump(&h->f);
    fake_advance(&h->f, 999); /* t=2199 */
    assert_int_equal(h->dones, 0);
    fake_advance(&h->f, 1); /* t=2200: 1000 ms since the last byte */
    assert_finished(h, PN_HTTP_E_TIMEOUT);
    assert_int_equal(h->res.net, PN_E_TIMEOUT);
    assert_non_null(strstr(h->res.detail, "no byte"));
    assert_string_equal(h->body.p, "data: 1\n\n");
    free_harness(h);
}

static void test_deadline_and_completion_race(void **state) {
    (void)state;
    harness *h = new_harness();
    pn_http_opts o = {.deadline_ms = 100, .idle_ms = 100};
    assert_non_null(start(h, "http://h/", "GET", NULL, 0, NULL, &o, NULL));
    fake_pump(&h->f);
    const char *r = "HTTP/1.1 204 No Content\r\n\r\n";
    fake_send(&h->f, 1, r, strlen(r)); /* queued before both timers fire */
    h->f.now += 100;
    fake_advance(&h->f, 0);
    assert_finished(h, PN_HTTP_OK);
    assert_int_equal(h->res.status, 204);
    free_harness(h);
}

static void test_timer_set_fails(void **state) {
    (void)state;
    harness *h = new_harness();
    h->f.timer_result = PN_E_LIMIT;
    assert_non_null(start(h, "http://h/", "GET", NULL, 0, NULL, &TIMED, NULL));
    assert_int_equal(h->dones, 0);
    fake_pump(&h->f);
    assert_finished(h, PN_HTTP_E_NET);
    assert_int_equal(h->res.net, PN_E_LIMIT);
    free_harness(h);
}

/* ---------------------------------------------------------------- cancel and stop */

static void test_cancel_before_open(void **state) {
    (void)state;
    harness *h = new_harness();
    assert_non_null(start(h, "https://h/", "POST", NULL, 0, "{}", &TIMED, NULL));
    cancel(h);
    cancel(h); /* a second cancel changes nothing */
    assert_int_equal(h->dones, 0);
    fake_pump(&h->f);
    assert_finished(h, PN_HTTP_E_CANCELLED);
    assert_int_equal(h->res.net, PN_E_CANCELLED);
    assert_int_equal(h->f.s[0].written.len, 0);
    assert_int_equal(h->f.s[0].closes, 1);
    assert_int_equal(h->f.timer_cancels, 2);
    free_harness(h);
}

static void test_cancel_from_body(void **state) {
    (void)state;
    harness *h = new_harness();
    h->cancel_at = 5;
    assert_non_null(start(h, "http://h/", "GET", NULL, 0, NULL, &TIMED, NULL));
    fake_pump(&h->f);
    const char *r = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n3\r\ndef\r\n"
                    "3\r\nghi\r\n0\r\n\r\n";
    answer(h, r);
    assert_finished(h, PN_HTTP_E_CANCELLED);
    assert_int_equal(h->body_calls_after_cancel, 0);
    assert_string_equal(h->body.p, "abcdef");
    assert_int_equal(h->res.status, 200);
    free_harness(h);
}

static void test_cancel_while_hanging(void **state) {
    (void)state;
    harness *h = get_open(&TIMED);
    fake_advance(&h->f, 20);
    cancel(h);
    fake_pump(&h->f);
    assert_finished(h, PN_HTTP_E_CANCELLED);
    free_harness(h);
}

static void test_stop_from_head(void **state) {
    (void)state;
    harness *h = new_harness();
    h->stop_at_head = true;
    assert_non_null(start(h, "http://h/", "GET", NULL, 0, NULL, &TIMED, NULL));
    fake_pump(&h->f);
    const char *r = "HTTP/1.1 500 x\r\nContent-Length: 3\r\n\r\nabc";
    answer(h, r);
    assert_finished(h, PN_HTTP_E_STOPPED);
    assert_int_equal(h->res.status, 500);
    assert_int_equal(h->body.len, 0);
    free_harness(h);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_get_in_pieces),
        cmocka_unit_test(test_https_post_json),
        cmocka_unit_test(test_body_until_close),
        cmocka_unit_test(test_head_and_extra_bytes),
        cmocka_unit_test(test_error_status_is_a_response),
        cmocka_unit_test(test_refused_at_once),
        cmocka_unit_test(test_open_fails),
        cmocka_unit_test(test_stream_settles_under_the_request),
        cmocka_unit_test(test_read_and_write_fail),
        cmocka_unit_test(test_truncated_and_malformed),
        cmocka_unit_test(test_hanging_server_deadline),
        cmocka_unit_test(test_idle_timeout_rearms),
        cmocka_unit_test(test_deadline_and_completion_race),
        cmocka_unit_test(test_timer_set_fails),
        cmocka_unit_test(test_cancel_before_open),
        cmocka_unit_test(test_cancel_from_body),
        cmocka_unit_test(test_cancel_while_hanging),
        cmocka_unit_test(test_stop_from_head),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
