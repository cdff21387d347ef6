/*
 * test_loop.c — the native ports loop (src/net/) over real sockets on 127.0.0.1: echo,
 * refused, policy, a silent server (timeout), a peer reset, half-close, big writes with
 * back-pressure (digests compared), TLS against a CA the test makes with the openssl
 * command (trusted, untrusted, wrong name), starttls (an upgrade after a clear exchange
 * like PostgreSQL's SSLRequest: trusted, untrusted, clear bytes after the answer, a
 * stalled handshake past the deadline), timers, close-all, name resolution and
 * pn_loop_post. Every test also checks that no event arrives inside a port call.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "peri/base.h"
#include "peri/net.h"

/* ---- recording events ------------------------------------------------------------- */

typedef struct rec {
    pn_event_kind kind;
    pn_handle h;
    pn_err err;
    void *ud;
    char detail[256];
    char addr0[64];
    size_t naddrs;
} rec;

typedef struct tctx {
    pn_loop *l;
    const pn_ports *p;
    rec ev[256];
    int nev;
    bool in_call; /* set around port calls: an event then is re-entrancy */
    int reentered;
    /* policy */
    const char *deny_name;
    bool deny_addrs;
    /* readers: bytes read per handle (the test's single stream) */
    uint8_t *got;
    size_t ngot, capgot;
    bool got_eof;
    pn_handle reader;
    int writable;
} tctx;

static void on_event(void *c, const pn_event *e) {
    tctx *t = c;
    if (t->in_call) t->reentered++;
    if (t->nev < 256) {
        rec *r = &t->ev[t->nev++];
        r->kind = e->kind;
        r->h = e->handle;
        r->err = e->err;
        r->ud = e->ud;
        snprintf(r->detail, sizeof r->detail, "%s", e->detail ? e->detail : "");
        r->naddrs = e->naddrs;
        if (e->naddrs) snprintf(r->addr0, sizeof r->addr0, "%s", e->addrs[0]);
    }
    if (e->kind == PN_EV_WRITABLE) t->writable++;
    if (e->kind == PN_EV_READABLE && e->handle == t->reader) {
        for (;;) {
            if (t->capgot - t->ngot < 65536) {
                t->capgot = t->capgot ? t->capgot * 2 : 1 << 20;
                t->got = realloc(t->got, t->capgot);
                assert_non_null(t->got);
            }
            size_t n = 0;
            pn_err r = t->p->read(t->p->ctx, e->handle, t->got + t->ngot, 65536, &n);
            if (r == PN_E_AGAIN) break;
            assert_int_equal(r, PN_OK);
            if (n == 0) {
                t->got_eof = true;
                break;
            }
            t->ngot += n;
        }
    }
}

static bool policy(void *c, const char *name, const char *addr, uint16_t port) {
    tctx *t = c;
    (void)port;
    if (name && t->deny_name && strcmp(name, t->deny_name) == 0) return false;
    if (addr && t->deny_addrs) return false;
    return true;
}

static void loop_make(tctx *t, pn_loop_opts *o) {
    memset(t, 0, sizeof *t);
    pn_loop_opts d = {0};
    if (!o) o = &d;
    o->on_event = on_event;
    o->event_ctx = t;
    o->policy = policy;
    o->policy_ctx = t;
    char err[200];
    t->l = pn_loop_new(o, err, sizeof err);
    assert_non_null(t->l);
    t->p = pn_loop_ports(t->l);
}

static void loop_end(tctx *t) {
    assert_int_equal(t->reentered, 0);
    pn_loop_free(t->l);
    free(t->got);
}

/* Runs the loop until pred(t) or ms pass; returns pred's last value. */
static bool run_until(tctx *t, bool (*pred)(tctx *), int ms) {
    int64_t end = pb_mono_ms() + ms;
    while (!pred(t) && pb_mono_ms() < end)
        assert_true(pn_loop_run_once(t->l, 50) >= 0);
    return pred(t);
}

static int count(tctx *t, pn_event_kind k, pn_handle h) {
    int n = 0;
    for (int i = 0; i < t->nev; i++)
        n += t->ev[i].kind == k && t->ev[i].h == h;
    return n;
}

static rec *find(tctx *t, pn_event_kind k, pn_handle h) {
    for (int i = 0; i < t->nev; i++)
        if (t->ev[i].kind == k && t->ev[i].h == h) return &t->ev[i];
    return NULL;
}

static pn_handle g_h; /* the handle a predicate waits on */
static bool closed_h(tctx *t) {
    return find(t, PN_EV_CLOSED, g_h) != NULL;
}
static bool opened_h(tctx *t) {
    return find(t, PN_EV_OPENED, g_h) != NULL;
}
static bool eof_or_closed(tctx *t) {
    return t->got_eof || closed_h(t);
}
static bool is_settled(tctx *t) {
    return pn_loop_settled(t->l);
}

static pn_err do_open(tctx *t, const char *host, uint16_t port, const pn_stream_opts *o,
                      pn_handle *h) {
    t->in_call = true;
    pn_err e = t->p->open(t->p->ctx, host, port, o, t, h);
    t->in_call = false;
    return e;
}

static pn_err do_write(tctx *t, pn_handle h, const void *d, size_t n) {
    t->in_call = true;
    pn_err e = t->p->write(t->p->ctx, h, d, n);
    t->in_call = false;
    return e;
}

static void do_close(tctx *t, pn_handle h) {
    t->in_call = true;
    assert_int_equal(t->p->close(t->p->ctx, h), PN_OK);
    t->in_call = false;
}

/* ---- servers ------------------------------------------------------------------------ */

typedef enum {
    SRV_ECHO,
    SRV_SILENT,
    SRV_RESET,
    SRV_HALFCLOSE,
    SRV_TLS_ECHO,
    SRV_STARTTLS
} srv_kind;

/* What SRV_STARTTLS does after the client's clear "STARTTLS" request. */
typedef enum {
    UP_OK,              /* answers 'S', then TLS echo */
    UP_GARBAGE_AT_ONCE, /* answers 'S' and clear bytes in the same write */
    UP_GARBAGE_LATER,   /* answers 'S', then clear bytes instead of a handshake */
    UP_STALL,           /* answers 'S', then never speaks again */
} upgrade_mode;

typedef struct server {
    srv_kind kind;
    int lfd;
    uint16_t port;
    int conns; /* how many connections to serve */
    SSL_CTX *tls;
    pthread_t th;
    int hold[8]; /* SRV_SILENT keeps its connections open until the end */
    int nhold;
    upgrade_mode up;
} server;

static void serve_plain(server *s, int fd) {
    char buf[65536];
    if (s->kind == SRV_ECHO) {
        ssize_t n;
        while ((n = read(fd, buf, sizeof buf)) > 0)
            if (pb_write_all(fd, buf, (size_t)n) != 0) break;
        close(fd);
    } else if (s->kind == SRV_SILENT) {
        if (s->nhold < 8)
            s->hold[s->nhold++] = fd;
        else
            close(fd);
    } else if (s->kind == SRV_RESET) {
        struct linger lg = {1, 0};
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
        usleep(100 * 1000); /* let the client see the connection open first */
        close(fd);
    } else if (s->kind == SRV_HALFCLOSE) {
        size_t total = 0;
        ssize_t n;
        while ((n = read(fd, buf, sizeof buf)) > 0)
            total += (size_t)n;
        int k = snprintf(buf, sizeof buf, "bye:%zu", total);
        pb_write_all(fd, buf, (size_t)k);
        close(fd);
    }
}

static void serve_tls(server *s, int fd) {
    SSL *ssl = SSL_new(s->tls);
    SSL_set_fd(ssl, fd);
    if (SSL_accept(ssl) == 1) {
        char buf[16384];
        int n;
        while ((n = SSL_read(ssl, buf, sizeof buf)) > 0)
            if (SSL_write(ssl, buf, n) <= 0) break;
        SSL_shutdown(ssl);
    }
    SSL_free(ssl);
    close(fd);
}

/* A clear request, a one-byte answer, then TLS on the same connection (or not). */
static void serve_starttls(server *s, int fd) {
    char req[8];
    if (pb_read_full(fd, req, sizeof req) != (ssize_t)sizeof req ||
        memcmp(req, "STARTTLS", 8) != 0) {
        close(fd);
        return;
    }
    if (s->up == UP_OK) {
        pb_write_all(fd, "S", 1);
        serve_tls(s, fd);
        return;
    }
    if (s->up == UP_STALL) {
        pb_write_all(fd, "S", 1);
        s->hold[s->nhold++] = fd;
        return;
    }
    if (s->up == UP_GARBAGE_AT_ONCE) {
        pb_write_all(fd, "Sinjected", 9);
    } else {
        pb_write_all(fd, "S", 1);
        usleep(150 * 1000); /* the client has begun its handshake by now */
        pb_write_all(fd, "injected in the clear", 21);
    }
    char buf[4096];
    while (read(fd, buf, sizeof buf) > 0) {
    }
    close(fd);
}

static void *server_main(void *arg) {
    server *s = arg;
    for (int i = 0; i < s->conns; i++) {
        int fd = accept(s->lfd, NULL, NULL);
        if (fd < 0) break;
        if (s->kind == SRV_TLS_ECHO)
            serve_tls(s, fd);
        else if (s->kind == SRV_STARTTLS)
            serve_starttls(s, fd);
        else
            serve_plain(s, fd);
    }
    return NULL;
}

static uint16_t listen_any(int *lfd) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(fd, 16), 0);
    socklen_t len = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &len);
    *lfd = fd;
    return ntohs(a.sin_port);
}

static void server_start(server *s, srv_kind k, int conns) {
    memset(s, 0, sizeof *s);
    s->kind = k;
    s->conns = conns;
    s->port = listen_any(&s->lfd);
}

static void server_go(server *s) {
    assert_int_equal(pthread_create(&s->th, NULL, server_main, s), 0);
}

static void server_end(server *s) {
    shutdown(s->lfd, SHUT_RDWR);
    pthread_join(s->th, NULL);
    close(s->lfd);
    for (int i = 0; i < s->nhold; i++)
        close(s->hold[i]);
}

/* ---- tests -------------------------------------------------------------------------- */

static void test_echo(void **st) {
    (void)st;
    tctx t;
    loop_make(&t, NULL);
    server s;
    server_start(&s, SRV_ECHO, 1);
    server_go(&s);
    pn_handle h = 0;
    assert_int_equal(do_open(&t, "127.0.0.1", s.port, NULL, &h), PN_OK);
    assert_true(h != 0);
    t.reader = h;
    assert_int_equal(do_write(&t, h, "ping", 4), PN_OK); /* queued before the connect */
    g_h = h;
    assert_true(run_until(&t, opened_h, 5000));
    assert_int_equal(find(&t, PN_EV_OPENED, h)->err, PN_OK);
    int64_t end = pb_mono_ms() + 5000;
    while (t.ngot < 4 && pb_mono_ms() < end)
        pn_loop_run_once(t.l, 50);
    assert_int_equal(t.ngot, 4);
    assert_memory_equal(t.got, "ping", 4);
    t.in_call = true;
    assert_int_equal(t.p->shutdown(t.p->ctx, h), PN_OK);
    assert_int_equal(t.p->write(t.p->ctx, h, "x", 1), PN_E_CLOSED); /* after shutdown */
    t.in_call = false;
    assert_true(run_until(&t, eof_or_closed, 5000));
    assert_true(t.got_eof);
    do_close(&t, h);
    assert_false(pn_loop_settled(t.l)); /* settles at delivery, not at the call */
    assert_true(run_until(&t, is_settled, 2000));
    assert_int_equal(count(&t, PN_EV_CLOSED, h), 1);
    assert_int_equal(find(&t, PN_EV_CLOSED, h)->err, PN_OK);
    size_t n;
    char b[4];
    assert_int_equal(t.p->read(t.p->ctx, h, b, 4, &n), PN_E_INVALID); /* settled: unknown */
    server_end(&s);
    loop_end(&t);
}

static void test_refused(void **st) {
    (void)st;
    tctx t;
    loop_make(&t, NULL);
    int lfd;
    uint16_t port = listen_any(&lfd);
    close(lfd); /* nobody listens there now */
    pn_handle h;
    assert_int_equal(do_open(&t, "127.0.0.1", port, NULL, &h), PN_OK);
    g_h = h;
    assert_true(run_until(&t, closed_h, 5000));
    assert_int_equal(find(&t, PN_EV_OPENED, h)->err, PN_E_REFUSED);
    assert_int_equal(find(&t, PN_EV_CLOSED, h)->err, PN_E_REFUSED);
    assert_non_null(strstr(find(&t, PN_EV_CLOSED, h)->detail, "refused"));
    assert_true(run_until(&t, is_settled, 1000));
    assert_int_equal(count(&t, PN_EV_CLOSED, h), 1);
    loop_end(&t);
}

static void test_invalid_args(void **st) {
    (void)st;
    tctx t;
    loop_make(&t, NULL);
    pn_handle h;
    assert_int_equal(t.p->open(t.p->ctx, "", 80, NULL, NULL, &h), PN_E_INVALID);
    assert_int_equal(t.p->open(t.p->ctx, "a b", 80, NULL, NULL, &h), PN_E_INVALID);
    assert_int_equal(t.p->open(t.p->ctx, "localhost", 0, NULL, NULL, &h), PN_E_INVALID);
    assert_int_equal(t.p->close(t.p->ctx, 77), PN_E_INVALID);
    assert_int_equal(t.p->timer_cancel(t.p->ctx, 0), PN_E_INVALID);
    char b[1];
    size_t n;
    assert_int_equal(t.p->read(t.p->ctx, 5, b, 1, &n), PN_E_INVALID);
    assert_string_equal(pn_err_name(PN_E_TIMEOUT), "timeout");
    assert_string_equal(pn_err_name((pn_err)-99), "unknown");
    loop_end(&t);
    char err[100];
    assert_null(pn_loop_new(&(pn_loop_opts){0}, err, sizeof err));
    assert_non_null(strstr(err, "callback"));
}

static bool deny_all(void *c, const char *n, const char *a, uint16_t p) {
    (void)c, (void)n, (void)a, (void)p;
    return false;
}

static void test_policy(void **st) {
    (void)st;
    tctx t;
    loop_make(&t, NULL);
    pn_handle h;
    t.deny_name = "blocked.example";
    assert_int_equal(do_open(&t, "blocked.example", 443, NULL, &h), PN_E_DENIED);
    t.in_call = true;
    assert_int_equal(t.p->resolve(t.p->ctx, "blocked.example", NULL, &h), PN_E_DENIED);
    t.in_call = false;
    /* the name passes, its addresses do not: the stream fails with denied */
    t.deny_addrs = true;
    assert_int_equal(do_open(&t, "localhost", 9, NULL, &h), PN_OK);
    g_h = h;
    assert_true(run_until(&t, closed_h, 5000));
    assert_int_equal(find(&t, PN_EV_OPENED, h)->err, PN_E_DENIED);
    assert_int_equal(find(&t, PN_EV_CLOSED, h)->err, PN_E_DENIED);
    assert_int_equal(do_open(&t, "127.0.0.1", 9, NULL, &h), PN_OK);
    g_h = h;
    assert_true(run_until(&t, closed_h, 5000));
    assert_int_equal(find(&t, PN_EV_CLOSED, h)->err, PN_E_DENIED);
    loop_end(&t);
    /* no policy at all: nothing is granted */
    pn_loop_opts o = {0};
    loop_make(&t, &o);
    pn_loop_free(t.l);
    char err[100];
    o.policy = NULL;
    t.l = pn_loop_new(&o, err, sizeof err);
    t.p = pn_loop_ports(t.l);
    assert_int_equal(t.p->open(t.p->ctx, "127.0.0.1", 80, NULL, NULL, &h), PN_E_DENIED);
    assert_int_equal(t.p->resolve(t.p->ctx, "localhost", NULL, &h), PN_E_DENIED);
    loop_end(&t);
    o.policy = deny_all;
    loop_make(&t, &o);
    loop_end(&t);
}

static void test_timeout(void **st) {
    (void)st;
    pn_loop_opts o = {.connect_timeout_ms = 300};
    tctx t;
    loop_make(&t, &o);
    server s;
    server_start(&s, SRV_SILENT, 1);
    server_go(&s);
    pn_handle h;
    pn_stream_opts so = {.tls = true, .server_name = "localhost"};
    int64_t t0 = pb_mono_ms();
    assert_int_equal(do_open(&t, "127.0.0.1", s.port, &so, &h), PN_OK);
    g_h = h;
    assert_true(run_until(&t, closed_h, 5000));
    int64_t took = pb_mono_ms() - t0;
    assert_true(took >= 250 && took < 4000);
    assert_int_equal(find(&t, PN_EV_OPENED, h)->err, PN_E_TIMEOUT);
    assert_int_equal(find(&t, PN_EV_CLOSED, h)->err, PN_E_TIMEOUT);
    assert_non_null(strstr(find(&t, PN_EV_CLOSED, h)->detail, "TLS handshake"));
    assert_true(run_until(&t, is_settled, 1000));
    server_end(&s);
    loop_end(&t);
}

static void test_reset(void **st) {
    (void)st;
    tctx t;
    loop_make(&t, NULL);
    server s;
    server_start(&s, SRV_RESET, 1);
    server_go(&s);
    pn_handle h;
    assert_int_equal(do_open(&t, "127.0.0.1", s.port, NULL, &h), PN_OK);
    t.reader = h;
    g_h = h;
    assert_true(run_until(&t, closed_h, 5000));
    assert_int_equal(find(&t, PN_EV_OPENED, h)->err, PN_OK);
    assert_int_equal(find(&t, PN_EV_CLOSED, h)->err, PN_E_RESET);
    assert_int_equal(count(&t, PN_EV_CLOSED, h), 1);
    assert_true(run_until(&t, is_settled, 1000));
    server_end(&s);
    loop_end(&t);
}

static void test_half_close(void **st) {
    (void)st;
    tctx t;
    loop_make(&t, NULL);
    server s;
    server_start(&s, SRV_HALFCLOSE, 1);
    server_go(&s);
    pn_handle h;
    assert_int_equal(do_open(&t, "127.0.0.1", s.port, NULL, &h), PN_OK);
    t.reader = h;
    assert_int_equal(do_write(&t, h, "hello", 5), PN_OK);
    t.in_call = true;
    assert_int_equal(t.p->shutdown(t.p->ctx, h), PN_OK); /* before the connect even */
    t.in_call = false;
    g_h = h;
    assert_true(run_until(&t, eof_or_closed, 5000));
    assert_true(t.got_eof);
    assert_int_equal(t.ngot, 5);
    assert_memory_equal(t.got, "bye:5", 5);
    do_close(&t, h);
    assert_true(run_until(&t, is_settled, 1000));
    server_end(&s);
    loop_end(&t);
}

static void digest(const uint8_t *p, size_t n, uint8_t out[32]) {
    unsigned int len = 32;
    assert_int_equal(EVP_Digest(p, n, out, &len, EVP_sha256(), NULL), 1);
}

static bool big_done(tctx *t) {
    return t->ngot >= (8u << 20) || closed_h(t);
}

static void test_big_writes(void **st) {
    (void)st;
    /* a small read buffer and write queue: both bounds are hit many times */
    pn_loop_opts o = {.read_buffer = 4096, .write_queue = 256 * 1024};
    tctx t;
    loop_make(&t, &o);
    server s;
    server_start(&s, SRV_ECHO, 1);
    server_go(&s);
    size_t total = 8u << 20;
    uint8_t *data = malloc(total);
    assert_non_null(data);
    uint32_t x = 12345;
    for (size_t i = 0; i < total; i++) {
        x = x * 1103515245u + 12345u;
        data[i] = (uint8_t)(x >> 16);
    }
    pn_handle h;
    assert_int_equal(do_open(&t, "127.0.0.1", s.port, NULL, &h), PN_OK);
    t.reader = h;
    g_h = h;
    size_t sent = 0;
    int limits = 0;
    int64_t end = pb_mono_ms() + 60000;
    while (!big_done(&t) && pb_mono_ms() < end) {
        while (sent < total) {
            size_t n = total - sent < 65536 ? total - sent : 65536;
            pn_err e = do_write(&t, h, data + sent, n);
            if (e == PN_E_LIMIT) {
                limits++;
                break;
            }
            assert_int_equal(e, PN_OK);
            sent += n;
        }
        assert_true(pn_loop_run_once(t.l, 50) >= 0);
    }
    assert_true(limits > 0);
    assert_true(t.writable > 0); /* every limit is followed by a writable */
    assert_int_equal(t.ngot, total);
    uint8_t a[32], b[32];
    digest(data, total, a);
    digest(t.got, t.ngot, b);
    assert_memory_equal(a, b, 32);
    do_close(&t, h);
    assert_true(run_until(&t, is_settled, 1000));
    free(data);
    server_end(&s);
    loop_end(&t);
}

/* ---- TLS ---------------------------------------------------------------------------- */

static char g_dir[128];

static int tls_setup(void **st) {
    (void)st;
    snprintf(g_dir, sizeof g_dir, "/tmp/pn-tls-XXXXXX");
    if (!mkdtemp(g_dir)) return -1;
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "cd %s && printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\n' > ext.cnf && "
             "for ca in ca other; do openssl req -x509 -newkey ec -pkeyopt "
             "ec_paramgen_curve:prime256v1 -nodes -keyout $ca.key -out $ca.pem -days 2 "
             "-subj /CN=peri-test-$ca >/dev/null 2>&1 || exit 1; done && "
             "openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "
             "srv.key -out srv.csr -subj /CN=localhost >/dev/null 2>&1 && "
             "openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out "
             "srv.pem -days 2 -extfile ext.cnf >/dev/null 2>&1",
             g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

static int tls_teardown(void **st) {
    (void)st;
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

static SSL_CTX *server_ctx(void) {
    SSL_CTX *c = SSL_CTX_new(TLS_server_method());
    char p[256];
    snprintf(p, sizeof p, "%s/srv.pem", g_dir);
    assert_int_equal(SSL_CTX_use_certificate_file(c, p, SSL_FILETYPE_PEM), 1);
    snprintf(p, sizeof p, "%s/srv.key", g_dir);
    assert_int_equal(SSL_CTX_use_PrivateKey_file(c, p, SSL_FILETYPE_PEM), 1);
    return c;
}

/* One TLS stream to the local server with this CA file and server name; returns the
 * OPENED error, and when it is PN_OK checks an echo through it. */
static pn_err tls_case(const char *ca, const char *sni, char *detail, size_t dl) {
    char cafile[256];
    snprintf(cafile, sizeof cafile, "%s/%s", g_dir, ca);
    pn_loop_opts o = {.ca_file = cafile, .connect_timeout_ms = 5000};
    tctx t;
    loop_make(&t, &o);
    server s;
    server_start(&s, SRV_TLS_ECHO, 1);
    s.tls = server_ctx();
    server_go(&s);
    pn_handle h;
    pn_stream_opts so = {.tls = true, .server_name = sni};
    assert_int_equal(do_open(&t, "127.0.0.1", s.port, &so, &h), PN_OK);
    t.reader = h;
    g_h = h;
    assert_true(run_until(&t, opened_h, 5000));
    pn_err e = find(&t, PN_EV_OPENED, h)->err;
    snprintf(detail, dl, "%s", find(&t, PN_EV_OPENED, h)->detail);
    if (e == PN_OK) {
        assert_int_equal(do_write(&t, h, "secret", 6), PN_OK);
        int64_t end = pb_mono_ms() + 5000;
        while (t.ngot < 6 && pb_mono_ms() < end)
            pn_loop_run_once(t.l, 50);
        assert_int_equal(t.ngot, 6);
        assert_memory_equal(t.got, "secret", 6);
        t.in_call = true;
        assert_int_equal(t.p->shutdown(t.p->ctx, h), PN_OK);
        t.in_call = false;
        assert_true(run_until(&t, eof_or_closed, 5000));
        assert_true(t.got_eof);
        do_close(&t, h);
    } else {
        assert_true(run_until(&t, closed_h, 5000));
        assert_int_equal(find(&t, PN_EV_CLOSED, h)->err, e);
    }
    assert_true(run_until(&t, is_settled, 2000));
    server_end(&s);
    SSL_CTX_free(s.tls);
    loop_end(&t);
    return e;
}

/* A single write bigger than the whole queue bound, on an empty queue: PN_E_LIMIT, and
 * the PN_EV_WRITABLE the writer waits for still comes (nothing would drain to send it). */
static void test_oversized_write(void **st) {
    (void)st;
    tctx t;
    pn_loop_opts o = {.write_queue = 4096};
    loop_make(&t, &o);
    server s;
    server_start(&s, SRV_ECHO, 1);
    server_go(&s);
    pn_handle h = 0;
    assert_int_equal(do_open(&t, "127.0.0.1", s.port, NULL, &h), PN_OK);
    t.reader = h;
    g_h = h;
    assert_true(run_until(&t, opened_h, 5000));
    static char big[8192];
    assert_int_equal(do_write(&t, h, big, sizeof big), PN_E_LIMIT);
    assert_int_equal(t.writable, 0); /* not from inside the call */
    int64_t end = pb_mono_ms() + 5000;
    while (t.writable == 0 && pb_mono_ms() < end)
        pn_loop_run_once(t.l, 50);
    assert_int_equal(t.writable, 1);
    assert_int_equal(do_write(&t, h, big, 4096), PN_OK); /* what fits goes */
    do_close(&t, h);
    assert_true(run_until(&t, is_settled, 2000));
    server_end(&s);
    loop_end(&t);
}

static void test_tls(void **st) {
    (void)st;
    char d[256];
    assert_int_equal(tls_case("ca.pem", "localhost", d, sizeof d), PN_OK);
    assert_int_equal(tls_case("ca.pem", "127.0.0.1", d, sizeof d), PN_OK); /* IP SAN */
    assert_int_equal(tls_case("other.pem", "localhost", d, sizeof d), PN_E_TLS);
    assert_non_null(strstr(d, "not trusted"));
    assert_int_equal(tls_case("ca.pem", "wrong.example", d, sizeof d), PN_E_TLS);
    assert_non_null(strstr(d, "hostname mismatch"));
}

/* ---- starttls ---------------------------------------------------------------------- */

static bool tls_h(tctx *t) {
    return find(t, PN_EV_TLS, g_h) != NULL;
}
static bool got_one(tctx *t) {
    return t->ngot >= 1 || closed_h(t);
}

static pn_err do_starttls(tctx *t, pn_handle h, const char *sni) {
    t->in_call = true;
    pn_err e = t->p->starttls(t->p->ctx, h, sni);
    t->in_call = false;
    return e;
}

/* Opens a clear stream to a SRV_STARTTLS server in mode up, sends the request and, with
 * read_all, reads the answer into t->got (else the test reads it). */
static pn_handle upgrade_begin(tctx *t, server *s, upgrade_mode up, bool read_all) {
    server_start(s, SRV_STARTTLS, 1);
    s->up = up;
    s->tls = server_ctx();
    server_go(s);
    pn_handle h = 0;
    assert_int_equal(do_open(t, "127.0.0.1", s->port, NULL, &h), PN_OK);
    assert_int_equal(do_starttls(t, h, "localhost"), PN_E_INVALID); /* not open yet */
    g_h = h;
    assert_true(run_until(t, opened_h, 5000));
    assert_int_equal(find(t, PN_EV_OPENED, h)->err, PN_OK);
    assert_int_equal(do_write(t, h, "STARTTLS", 8), PN_OK);
    if (read_all) {
        t->reader = h;
        assert_true(run_until(t, got_one, 5000));
        assert_int_equal(t->ngot, 1);
        assert_int_equal(t->got[0], 'S');
        t->ngot = 0;
    }
    return h;
}

static void upgrade_end(tctx *t, server *s) {
    assert_true(run_until(t, is_settled, 5000));
    server_end(s);
    SSL_CTX_free(s->tls);
    loop_end(t);
}

/* Trusted: bytes written during the handshake are queued and go over TLS after it; read
 * says again meanwhile; a second upgrade is refused. */
static void test_starttls_ok(void **st) {
    (void)st;
    char cafile[256];
    snprintf(cafile, sizeof cafile, "%s/ca.pem", g_dir);
    pn_loop_opts o = {.ca_file = cafile, .connect_timeout_ms = 5000};
    tctx t;
    loop_make(&t, &o);
    server s;
    pn_handle h = upgrade_begin(&t, &s, UP_OK, true);
    assert_int_equal(do_starttls(&t, h, "localhost"), PN_OK);
    assert_null(find(&t, PN_EV_TLS, h)); /* never from inside the call */
    assert_int_equal(do_starttls(&t, h, "localhost"), PN_E_INVALID);
    assert_int_equal(do_write(&t, h, "secret", 6), PN_OK);
    uint8_t b[4];
    size_t n = 9;
    assert_int_equal(t.p->read(t.p->ctx, h, b, sizeof b, &n), PN_E_AGAIN);
    assert_int_equal(n, 0);
    assert_true(run_until(&t, tls_h, 5000));
    assert_int_equal(find(&t, PN_EV_TLS, h)->err, PN_OK);
    int64_t end = pb_mono_ms() + 5000;
    while (t.ngot < 6 && pb_mono_ms() < end)
        pn_loop_run_once(t.l, 50);
    assert_int_equal(t.ngot, 6);
    assert_memory_equal(t.got, "secret", 6);
    assert_int_equal(do_starttls(&t, h, NULL), PN_E_INVALID); /* already TLS */
    t.in_call = true;
    assert_int_equal(t.p->shutdown(t.p->ctx, h), PN_OK);
    t.in_call = false;
    assert_true(run_until(&t, eof_or_closed, 5000));
    assert_true(t.got_eof);
    do_close(&t, h);
    assert_int_equal(count(&t, PN_EV_OPENED, h), 1);
    assert_int_equal(count(&t, PN_EV_TLS, h), 1);
    upgrade_end(&t, &s);
}

/* An untrusted certificate or another name: PN_EV_TLS with tls, then closed. */
static void starttls_refused(const char *ca, const char *sni, const char *why) {
    char cafile[256];
    snprintf(cafile, sizeof cafile, "%s/%s", g_dir, ca);
    pn_loop_opts o = {.ca_file = cafile, .connect_timeout_ms = 5000};
    tctx t;
    loop_make(&t, &o);
    server s;
    pn_handle h = upgrade_begin(&t, &s, UP_OK, true);
    assert_int_equal(do_starttls(&t, h, sni), PN_OK);
    assert_true(run_until(&t, closed_h, 5000));
    assert_int_equal(find(&t, PN_EV_TLS, h)->err, PN_E_TLS);
    assert_non_null(strstr(find(&t, PN_EV_TLS, h)->detail, why));
    assert_int_equal(find(&t, PN_EV_CLOSED, h)->err, PN_E_TLS);
    assert_int_equal(t.ngot, 0);
    upgrade_end(&t, &s);
}

static void test_starttls_untrusted(void **st) {
    (void)st;
    starttls_refused("other.pem", "localhost", "not trusted");
    starttls_refused("ca.pem", "wrong.example", "hostname mismatch");
}

/* Clear bytes behind the answer, already received: the upgrade is refused at once and
 * the stream is left as it was (the owner closes it). Clear bytes that come once the
 * handshake began: the handshake fails. */
static void test_starttls_garbage(void **st) {
    (void)st;
    char cafile[256];
    snprintf(cafile, sizeof cafile, "%s/ca.pem", g_dir);
    pn_loop_opts o = {.ca_file = cafile, .connect_timeout_ms = 5000};
    tctx t;
    loop_make(&t, &o);
    server s;
    pn_handle h = upgrade_begin(&t, &s, UP_GARBAGE_AT_ONCE, false);
    int64_t end = pb_mono_ms() + 5000;
    while (count(&t, PN_EV_READABLE, h) == 0 && pb_mono_ms() < end)
        pn_loop_run_once(t.l, 50);
    usleep(50 * 1000);
    pn_loop_run_once(t.l, 50); /* the whole "Sinjected" is buffered now */
    uint8_t b = 0;
    size_t n = 0;
    assert_int_equal(t.p->read(t.p->ctx, h, &b, 1, &n), PN_OK);
    assert_int_equal(n, 1);
    assert_int_equal(b, 'S');
    assert_int_equal(do_starttls(&t, h, "localhost"), PN_E_TLS);
    char rest[16];
    assert_int_equal(t.p->read(t.p->ctx, h, rest, sizeof rest, &n), PN_OK);
    assert_int_equal(n, 8);
    assert_memory_equal(rest, "injected", 8);
    do_close(&t, h);
    assert_int_equal(count(&t, PN_EV_TLS, h), 0);
    upgrade_end(&t, &s);

    loop_make(&t, &o);
    h = upgrade_begin(&t, &s, UP_GARBAGE_LATER, true);
    assert_int_equal(do_starttls(&t, h, "localhost"), PN_OK);
    assert_true(run_until(&t, closed_h, 5000));
    assert_int_equal(find(&t, PN_EV_TLS, h)->err, PN_E_TLS);
    assert_int_equal(find(&t, PN_EV_CLOSED, h)->err, PN_E_TLS);
    assert_int_equal(t.ngot, 0); /* none of it was handed over as data */
    upgrade_end(&t, &s);
}

/* A handshake that never ends: timeout after the loop's deadline counted from the
 * starttls call (the open's own deadline, passing meanwhile, does not end it). */
static void test_starttls_deadline(void **st) {
    (void)st;
    char cafile[256];
    snprintf(cafile, sizeof cafile, "%s/ca.pem", g_dir);
    pn_loop_opts o = {.ca_file = cafile, .connect_timeout_ms = 400};
    tctx t;
    loop_make(&t, &o);
    server s;
    int64_t t0 = pb_mono_ms();
    pn_handle h = upgrade_begin(&t, &s, UP_STALL, true);
    while (pb_mono_ms() - t0 < 200)
        pn_loop_run_once(t.l, 20);
    int64_t t1 = pb_mono_ms();
    assert_int_equal(do_starttls(&t, h, NULL), PN_OK); /* the name given to open */
    assert_true(run_until(&t, closed_h, 5000));
    int64_t took = pb_mono_ms() - t1;
    assert_true(took >= 350 && took < 4000);
    assert_int_equal(find(&t, PN_EV_TLS, h)->err, PN_E_TIMEOUT);
    assert_non_null(strstr(find(&t, PN_EV_TLS, h)->detail, "starttls"));
    assert_int_equal(find(&t, PN_EV_CLOSED, h)->err, PN_E_TIMEOUT);
    upgrade_end(&t, &s);
}

/* ---- timers, close-all, resolution, post ------------------------------------------- */

static bool four_timers(tctx *t) {
    int n = 0;
    for (int i = 0; i < t->nev; i++)
        n += t->ev[i].kind == PN_EV_TIMER;
    return n == 4;
}

static void test_timers(void **st) {
    (void)st;
    tctx t;
    loop_make(&t, NULL);
    pn_handle a, b, c, d;
    int ua, ub, uc, ud;
    t.in_call = true;
    assert_int_equal(t.p->timer_set(t.p->ctx, 120, &ua, &a), PN_OK);
    assert_int_equal(t.p->timer_set(t.p->ctx, 40, &ub, &b), PN_OK);
    assert_int_equal(t.p->timer_set(t.p->ctx, 80, &uc, &c), PN_OK);
    assert_int_equal(t.p->timer_set(t.p->ctx, 60, &ud, &d), PN_OK);
    assert_int_equal(t.p->timer_cancel(t.p->ctx, d), PN_OK);
    assert_int_equal(t.p->timer_cancel(t.p->ctx, d), PN_OK); /* already settling */
    t.in_call = false;
    uint64_t t0 = t.p->now_ms(t.p->ctx);
    assert_true(t.p->wall_ms(t.p->ctx) > 1600000000000LL);
    assert_true(run_until(&t, four_timers, 3000));
    assert_true(t.p->now_ms(t.p->ctx) - t0 >= 110);
    assert_int_equal(t.ev[0].h, d);
    assert_int_equal(t.ev[0].err, PN_E_CANCELLED);
    assert_int_equal(t.ev[1].h, b);
    assert_ptr_equal(t.ev[1].ud, &ub);
    assert_int_equal(t.ev[2].h, c);
    assert_int_equal(t.ev[3].h, a);
    for (int i = 1; i < 4; i++)
        assert_int_equal(t.ev[i].err, PN_OK);
    assert_true(pn_loop_settled(t.l));
    assert_int_equal(t.p->timer_cancel(t.p->ctx, a), PN_E_INVALID); /* settled */
    /* many set-and-cancel rounds do not grow anything without bound */
    for (int r = 0; r < 5000; r++) {
        pn_handle h;
        assert_int_equal(t.p->timer_set(t.p->ctx, 1000000, NULL, &h), PN_OK);
        assert_int_equal(t.p->timer_cancel(t.p->ctx, h), PN_OK);
        if (r % 100 == 0) pn_loop_run_once(t.l, 0);
    }
    assert_true(run_until(&t, is_settled, 2000));
    loop_end(&t);
}

static void test_close_all(void **st) {
    (void)st;
    pn_loop_opts o = {.max_handles = 8};
    tctx t;
    loop_make(&t, &o);
    server s;
    server_start(&s, SRV_SILENT, 2);
    server_go(&s);
    pn_handle hs[6];
    pn_stream_opts so = {.tls = true};
    assert_int_equal(do_open(&t, "127.0.0.1", s.port, NULL, &hs[0]), PN_OK);
    g_h = hs[0];
    assert_true(run_until(&t, opened_h, 5000)); /* the plain one is connected */
    assert_int_equal(do_open(&t, "localhost", s.port, &so, &hs[1]), PN_OK);
    t.in_call = true;
    assert_int_equal(t.p->resolve(t.p->ctx, "localhost", NULL, &hs[2]), PN_OK);
    assert_int_equal(t.p->timer_set(t.p->ctx, 100000, NULL, &hs[3]), PN_OK);
    assert_int_equal(t.p->timer_set(t.p->ctx, 0, NULL, &hs[4]), PN_OK);
    assert_int_equal(t.p->timer_set(t.p->ctx, 100000, NULL, &hs[5]), PN_OK);
    t.in_call = false;
    pn_handle more[8];
    int n = 0;
    while (t.p->timer_set(t.p->ctx, 100000, NULL, &more[n]) == PN_OK)
        n++;
    assert_int_equal(n, 2); /* 8 handles at most */
    pn_loop_close_all(t.l);
    assert_false(pn_loop_settled(t.l));
    pn_handle x;
    assert_int_equal(t.p->timer_set(t.p->ctx, 1, NULL, &x), PN_E_CLOSED);
    assert_int_equal(t.p->open(t.p->ctx, "127.0.0.1", 1, NULL, NULL, &x), PN_E_CLOSED);
    assert_true(run_until(&t, is_settled, 3000));
    /* every handle settled exactly once; those still open with closed */
    pn_event_kind kinds[6] = {PN_EV_CLOSED, PN_EV_CLOSED, PN_EV_RESOLVED,
                              PN_EV_TIMER,  PN_EV_TIMER,  PN_EV_TIMER};
    for (int i = 0; i < 6; i++) {
        assert_int_equal(count(&t, kinds[i], hs[i]), 1);
        assert_int_equal(find(&t, kinds[i], hs[i])->err, PN_E_CLOSED);
    }
    for (int i = 0; i < n; i++)
        assert_int_equal(count(&t, PN_EV_TIMER, more[i]), 1);
    assert_null(find(&t, PN_EV_OPENED, hs[1])); /* closed by the host: only the settling */
    /* a late resolver result after the close is dropped, nothing more arrives */
    int before = t.nev;
    for (int i = 0; i < 10; i++)
        pn_loop_run_once(t.l, 20);
    assert_int_equal(t.nev, before);
    server_end(&s);
    loop_end(&t);
}

static bool resolved2(tctx *t) {
    int n = 0;
    for (int i = 0; i < t->nev; i++)
        n += t->ev[i].kind == PN_EV_RESOLVED;
    return n == 3;
}

static void test_resolve(void **st) {
    (void)st;
    tctx t;
    loop_make(&t, NULL);
    pn_handle a, b, c;
    t.in_call = true;
    assert_int_equal(t.p->resolve(t.p->ctx, "localhost", NULL, &a), PN_OK);
    assert_int_equal(t.p->resolve(t.p->ctx, "no-such-host.invalid", NULL, &b), PN_OK);
    assert_int_equal(t.p->resolve(t.p->ctx, "localhost", NULL, &c), PN_OK);
    assert_int_equal(t.p->resolve_cancel(t.p->ctx, c), PN_OK);
    t.in_call = false;
    assert_true(run_until(&t, resolved2, 10000));
    rec *ra = find(&t, PN_EV_RESOLVED, a);
    assert_int_equal(ra->err, PN_OK);
    assert_true(ra->naddrs >= 1);
    assert_true(strcmp(ra->addr0, "127.0.0.1") == 0 || strcmp(ra->addr0, "::1") == 0);
    rec *rb = find(&t, PN_EV_RESOLVED, b);
    assert_int_equal(rb->err, PN_E_NOT_FOUND);
    assert_non_null(strstr(rb->detail, "no-such-host.invalid"));
    assert_int_equal(find(&t, PN_EV_RESOLVED, c)->err, PN_E_CANCELLED);
    /* a stream to a name that does not exist */
    pn_handle h;
    assert_int_equal(do_open(&t, "nowhere.invalid", 80, NULL, &h), PN_OK);
    g_h = h;
    assert_true(run_until(&t, closed_h, 5000));
    assert_int_equal(find(&t, PN_EV_CLOSED, h)->err, PN_E_NOT_FOUND);
    assert_true(run_until(&t, is_settled, 3000));
    loop_end(&t);
}

static void test_localhost_stream(void **st) {
    (void)st;
    tctx t;
    loop_make(&t, NULL);
    server s;
    server_start(&s, SRV_ECHO, 1);
    server_go(&s);
    pn_handle h;
    /* localhost may list ::1 first: nothing listens there, the next address is tried */
    assert_int_equal(do_open(&t, "localhost", s.port, NULL, &h), PN_OK);
    g_h = h;
    assert_true(run_until(&t, opened_h, 10000));
    assert_int_equal(find(&t, PN_EV_OPENED, h)->err, PN_OK);
    do_close(&t, h);
    assert_true(run_until(&t, is_settled, 2000));
    server_end(&s);
    loop_end(&t);
}

typedef struct post_arg {
    pn_loop *l;
    int ran;
} post_arg;

static void posted(void *a) {
    post_arg *p = a;
    p->ran++;
    assert_int_equal(pn_loop_run_once(p->l, 0), -1); /* no nested turn */
}

static void *poster(void *a) {
    post_arg *p = a;
    for (int i = 0; i < 100; i++)
        pn_loop_post(p->l, posted, p);
    return NULL;
}

static void test_post(void **st) {
    (void)st;
    tctx t;
    loop_make(&t, NULL);
    post_arg pa = {.l = t.l};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, poster, &pa), 0);
    pthread_join(th, NULL);
    int64_t end = pb_mono_ms() + 3000;
    while (pa.ran < 100 && pb_mono_ms() < end)
        pn_loop_run_once(t.l, 50);
    assert_int_equal(pa.ran, 100);
    loop_end(&t);
}

typedef struct watch_arg {
    pn_loop *l;
    int fd, calls, got, ended;
} watch_arg;

static void on_watch(void *a) {
    watch_arg *w = a;
    char buf[16];
    w->calls++;
    ssize_t n = read(w->fd, buf, sizeof buf);
    if (n > 0) w->got += (int)n;
    if (n == 0) {
        w->ended = 1;
        assert_int_equal(pn_loop_watch(w->l, -1, NULL, NULL), 0); /* from the callback */
    }
}

/* A watched descriptor wakes a loop that would otherwise wait without limit, its
 * callback runs from run_once, the end of input is seen, and a removed watch is silent;
 * a regular file cannot be watched (EPERM, always readable). */
static void test_watch(void **st) {
    (void)st;
    tctx t;
    loop_make(&t, NULL);
    int p[2];
    assert_int_equal(pipe(p), 0);
    watch_arg w = {.l = t.l, .fd = p[0]};
    assert_int_equal(pn_loop_watch(t.l, p[0], NULL, NULL), -1);
    assert_int_equal(pn_loop_watch(t.l, p[0], on_watch, &w), 0);
    assert_int_equal(pn_loop_run_once(t.l, 0), 0); /* nothing to read: no call */
    assert_int_equal(w.calls, 0);
    assert_int_equal(write(p[1], "abc", 3), 3);
    assert_int_equal(pn_loop_run_once(t.l, -1), 1); /* would hang without the watch */
    assert_int_equal(w.got, 3);
    close(p[1]);
    assert_int_equal(pn_loop_run_once(t.l, -1), 1);
    assert_int_equal(w.ended, 1);
    assert_int_equal(pn_loop_run_once(t.l, 0), 0); /* removed: the hung-up pipe is quiet */
    assert_int_equal(w.calls, 2);
    close(p[0]);
    char path[] = "/tmp/peri-watch-XXXXXX";
    int f = mkstemp(path);
    assert_true(f >= 0);
    unlink(path);
    errno = 0;
    assert_int_equal(pn_loop_watch(t.l, f, on_watch, &w), -1);
    assert_int_equal(errno, EPERM);
    close(f);
    loop_end(&t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_invalid_args),
        cmocka_unit_test(test_echo),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_policy),
        cmocka_unit_test(test_timeout),
        cmocka_unit_test(test_reset),
        cmocka_unit_test(test_half_close),
        cmocka_unit_test(test_big_writes),
        cmocka_unit_test(test_timers),
        cmocka_unit_test(test_close_all),
        cmocka_unit_test(test_resolve),
        cmocka_unit_test(test_localhost_stream),
        cmocka_unit_test(test_post),
        cmocka_unit_test(test_watch),
        cmocka_unit_test(test_oversized_write),
    };
    const struct CMUnitTest tls[] = {
        cmocka_unit_test(test_tls),
        cmocka_unit_test(test_starttls_ok),
        cmocka_unit_test(test_starttls_untrusted),
        cmocka_unit_test(test_starttls_garbage),
        cmocka_unit_test(test_starttls_deadline),
    };
    int r = cmocka_run_group_tests_name("net.loop", tests, NULL, NULL);
    return r + cmocka_run_group_tests_name("net.tls", tls, tls_setup, tls_teardown);
}
