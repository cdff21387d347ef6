/*
 * test_http_loop.c — the HTTP client over the native ports loop (pn_loop, real sockets on
 * 127.0.0.1) against a small server thread in this test: a chunked answer written in
 * pieces, a server that accepts and never answers (the request's deadline: a timeout,
 * not a cancel), a cancel while the server is silent (how long until the final callback),
 * a refused connection and a destination the policy does not grant. After every request
 * the loop must report everything settled.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "peri/net_http.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

typedef struct server {
    int lfd;
    uint16_t port;
    pthread_t th;
    const char *const *pieces; /* NULL: read the request, then wait for the client's close */
    size_t npieces;
    char request[4096];
    size_t rlen;
} server;

static int64_t mono_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Reads into buf until the blank line that ends the head (or 10 s pass). */
static size_t read_head(int fd, char *buf, size_t cap) {
    size_t n = 0;
    while (n + 1 < cap) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 10000) != 1) break;
        ssize_t k = read(fd, buf + n, cap - 1 - n);
        if (k <= 0) break;
        n += (size_t)k;
        buf[n] = '\0';
        if (strstr(buf, "\r\n\r\n")) break;
    }
    return n;
}

static void *serve(void *arg) {
    server *s = arg;
    struct pollfd p = {s->lfd, POLLIN, 0};
    if (poll(&p, 1, 10000) != 1) return NULL;
    int fd = accept(s->lfd, NULL, NULL);
    if (fd < 0) return NULL;
    s->rlen = read_head(fd, s->request, sizeof s->request);
    if (s->pieces) {
        for (size_t i = 0; i < s->npieces; i++) {
            usleep(20000);
            if (write(fd, s->pieces[i], strlen(s->pieces[i])) < 0) break;
        }
    } else { /* silent until the client closes (or 10 s) */
        char b[256];
        struct pollfd q = {fd, POLLIN, 0};
        while (poll(&q, 1, 10000) == 1 && read(fd, b, sizeof b) > 0)
            ;
    }
    close(fd);
    return NULL;
}

static void server_start(server *s, const char *const *pieces, size_t n) {
    memset(s, 0, sizeof *s);
    s->pieces = pieces;
    s->npieces = n;
    s->lfd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(s->lfd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(s->lfd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(s->lfd, 4), 0);
    socklen_t al = sizeof a;
    assert_int_equal(getsockname(s->lfd, (struct sockaddr *)&a, &al), 0);
    s->port = ntohs(a.sin_port);
    assert_int_equal(pthread_create(&s->th, NULL, serve, s), 0);
}

static void server_join(server *s) {
    pthread_join(s->th, NULL);
    close(s->lfd);
}

typedef struct run {
    pn_loop *loop;
    int dones;
    pn_http_result res;
    pb_buf body;
    int64_t done_at;
} run;

static void on_event(void *ctx, const pn_event *ev) {
    (void)ctx;
    pn_http_event(ev->ud, ev); /* every handle of this loop belongs to a request */
}

static bool policy(void *ctx, const char *name, const char *addr, uint16_t port) {
    (void)ctx, (void)port;
    return !strcmp(name ? name : addr, "127.0.0.1");
}

static int on_body(void *ud, const char *d, size_t n) {
    return pb_buf_put(&((run *)ud)->body, d, n) ? 0 : 1;
}

static void on_done(void *ud, const pn_http_result *r) {
    run *x = ud;
    x->dones++;
    x->res = *r;
    x->done_at = mono_ms();
}

static void run_init(run *x) {
    memset(x, 0, sizeof *x);
    pn_loop_opts o = {.on_event = on_event, .policy = policy, .connect_timeout_ms = 5000};
    char err[256];
    x->loop = pn_loop_new(&o, err, sizeof err);
    if (!x->loop) fail_msg("pn_loop_new: %s", err);
}

static void run_free(run *x) {
    pn_loop_free(x->loop);
    pb_buf_free(&x->body);
}

static pn_http_req *request(run *x, const char *url, const pn_http_opts *o, pn_http_result *f) {
    pn_http_callbacks cb = {NULL, on_body, on_done, x};
    return pn_http_request(pn_loop_ports(x->loop), url, "GET", NULL, 0, NULL, 0, &cb, o, f);
}

/* Runs the loop until the request is done (or limit_ms passes). */
static void pump_until_done(run *x, int64_t limit_ms) {
    int64_t end = mono_ms() + limit_ms;
    while (!x->dones && mono_ms() < end)
        assert_true(pn_loop_run_once(x->loop, 50) >= 0);
    assert_int_equal(x->dones, 1);
    assert_true(pn_loop_settled(x->loop));
}

/* A server that accepts and never answers, a loop, and the URL of that server. */
static void silent_setup(server *s, run *x, char *url, size_t len) {
    server_start(s, NULL, 0);
    run_init(x);
    snprintf(url, len, "http://127.0.0.1:%u/", (unsigned)s->port);
}

static void test_chunked_answer(void **state) {
    (void)state;
    static const char *const pieces[] = {
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n",
        "9\r\ndata: 1\n\n\r\n", "9\r\ndata: 2\n\n\r\n", "0\r\n\r\n"};
    server s;
    server_start(&s, pieces, 4);
    run x;
    run_init(&x);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/v1/stream", (unsigned)s.port);
    pn_http_opts o = {.deadline_ms = 10000, .idle_ms = 5000};
    assert_non_null(request(&x, url, &o, NULL));
    pump_until_done(&x, 15000);
    server_join(&s);
    if (x.res.err != PN_HTTP_OK) fail_msg("%s: %s", pn_http_err_name(x.res.err), x.res.detail);
    assert_int_equal(x.res.status, 200);
    assert_string_equal(x.body.p, "data: 1\n\ndata: 2\n\n");
    char want[128];
    snprintf(want, sizeof want, "GET /v1/stream HTTP/1.1\r\nHost: 127.0.0.1:%u\r\n",
             (unsigned)s.port);
    assert_memory_equal(s.request, want, strlen(want));
    run_free(&x);
}

static void test_silent_server_deadline(void **state) {
    (void)state;
    server s;
    run x;
    char url[64];
    silent_setup(&s, &x, url, sizeof url);
    pn_http_opts o = {.deadline_ms = 300};
    int64_t t0 = mono_ms();
    assert_non_null(request(&x, url, &o, NULL));
    pump_until_done(&x, 10000);
    server_join(&s);
    assert_int_equal(x.res.err, PN_HTTP_E_TIMEOUT);
    assert_int_equal(x.res.net, PN_E_TIMEOUT);
    assert_true(x.done_at - t0 >= 250);
    assert_true(x.done_at - t0 < 5000);
    run_free(&x);
}

static void test_cancel_while_silent(void **state) {
    (void)state;
    server s;
    run x;
    char url[64];
    silent_setup(&s, &x, url, sizeof url);
    pn_http_req *r = request(&x, url, NULL, NULL);
    assert_non_null(r);
    int64_t until = mono_ms() + 150;
    while (mono_ms() < until)
        pn_loop_run_once(x.loop, 20);
    assert_int_equal(x.dones, 0);
    int64_t t0 = mono_ms();
    pn_http_cancel(r);
    assert_int_equal(x.dones, 0); /* never from inside the cancel */
    pump_until_done(&x, 5000);
    server_join(&s);
    assert_int_equal(x.res.err, PN_HTTP_E_CANCELLED);
    print_message("cancel to final callback: %lld ms\n", (long long)(x.done_at - t0));
    assert_true(x.done_at - t0 < 1000); /* generous: it takes one loop turn */
    run_free(&x);
}

static void test_refused_and_denied(void **state) {
    (void)state;
    /* a port that was just free: bound, read and closed, so nothing listens on it */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &al), 0);
    uint16_t port = ntohs(a.sin_port);
    close(fd);
    run x;
    run_init(&x);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/", (unsigned)port);
    assert_non_null(request(&x, url, NULL, NULL));
    pump_until_done(&x, 10000);
    assert_int_equal(x.res.err, PN_HTTP_E_NET);
    assert_int_equal(x.res.net, PN_E_REFUSED);
    run_free(&x);

    run_init(&x);
    pn_http_result f;
    pn_http_req *r = request(&x, "https://192.0.2.1/", NULL, &f);
    if (r) { /* the policy may also refuse by event */
        pump_until_done(&x, 10000);
        f = x.res;
    }
    assert_int_equal(f.err, PN_HTTP_E_NET);
    assert_int_equal(f.net, PN_E_DENIED);
    run_free(&x);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chunked_answer),
        cmocka_unit_test(test_silent_server_deadline),
        cmocka_unit_test(test_cancel_while_silent),
        cmocka_unit_test(test_refused_and_denied),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
