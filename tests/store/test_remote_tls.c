/*
 * test_remote_tls.c — the remote store client's sslmode over the native ports (pn_loop:
 * real sockets, OpenSSL) against a real PostgreSQL with ssl=on, started by
 * tests/store/pg_cluster.sh with PERI_PG_TCP=1 (its throwaway certificate, for
 * "localhost", is the trust store here), and against small local servers that answer
 * SSLRequest with 'N' or with 'S' followed by clear bytes.
 *
 * Checked: require, verify-full and the default (prefer) connect over TLS after
 * SSLRequest (the server's pg_stat_ssl says so); disable stays in the clear; require
 * with a certificate the host does not trust, or one that names another host, fails
 * (the host always verifies); require against 'N' is a clear error while prefer goes on
 * in the clear; clear bytes after 'S' are refused.
 *
 * Without the cluster's variables it fails (never skips).
 */
#include "peri/base.h"
#include "peri/net.h"
#include "peri/store.h"

#include <arpa/inet.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#define ROLE      "rt_role"
#define PASSWORD  "remote tls secret"
#define DB        "rt_tls"
#define MACHINE_A "0190a000-0000-4000-8000-00000000000a"

static const char *sockdir, *certfile;
static int port;

/* ---- the admin (libpq over the socket) --------------------------------------------- */

static PGconn *admin(void) {
    char ci[512];
    snprintf(ci, sizeof ci, "host=%s port=%d user=peri dbname=postgres", sockdir, port);
    PGconn *c = PQconnectdb(ci);
    assert_int_equal(PQstatus(c), CONNECTION_OK);
    return c;
}

static void admin_exec(PGconn *c, const char *sql) {
    PGresult *r = PQexec(c, sql);
    ExecStatusType st = PQresultStatus(r);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) fail_msg("%s: %s", sql, PQerrorMessage(c));
    PQclear(r);
}

/* How many sessions of the role are open, and how many of them use TLS. */
static void role_sessions(int *all, int *tls) {
    PGconn *c = admin();
    PGresult *r = PQexec(c, "SELECT count(*), count(*) FILTER (WHERE s.ssl) FROM pg_stat_activity "
                            "a JOIN pg_stat_ssl s USING (pid) WHERE a.usename = '" ROLE "'");
    assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
    *all = atoi(PQgetvalue(r, 0, 0));
    *tls = atoi(PQgetvalue(r, 0, 1));
    PQclear(r);
    PQfinish(c);
}

/* ---- the remote store over a native loop ------------------------------------------- */

typedef struct conn {
    pn_loop *l;
    pst_remote *r;
    bool done;
    pst_status status;
    char message[512];
} conn;

static void on_event(void *ctx, const pn_event *ev) {
    conn *c = ctx;
    if (c->r) pst_remote_on_event(c->r, ev);
}

static bool allow_all(void *ctx, const char *name, const char *addr, uint16_t p) {
    (void)ctx, (void)name, (void)addr, (void)p;
    return true;
}

static bool rnd(void *ctx, void *buf, size_t n) {
    (void)ctx;
    return getrandom(buf, n, 0) == (ssize_t)n;
}

static void opened(void *ud, pst_remote_result *res) {
    conn *c = ud;
    c->done = true;
    c->status = res->status;
    snprintf(c->message, sizeof c->message, "%s", res->error.message);
}

/* Opens the store at host:prt with this sslmode ("" none) and trust store (NULL: the
 * system's) and waits for the outcome. */
static void open_store(conn *c, const char *host, int prt, const char *mode, const char *ca) {
    memset(c, 0, sizeof *c);
    char err[200];
    pn_loop_opts o = {.on_event = on_event,
                      .event_ctx = c,
                      .policy = allow_all,
                      .ca_file = ca,
                      .connect_timeout_ms = 10000};
    c->l = pn_loop_new(&o, err, sizeof err);
    assert_non_null(c->l);
    char loc[256];
    snprintf(loc, sizeof loc, "postgresql://" ROLE "@%s:%d/" DB "%s%s", host, prt,
             mode[0] ? "?sslmode=" : "", mode);
    pst_error e;
    c->r = pst_remote_open(&(pst_remote_options){.ports = pn_loop_ports(c->l),
                                                 .locator = loc,
                                                 .password = PASSWORD,
                                                 .machine_id = MACHINE_A,
                                                 .random = rnd},
                           opened, c, &e);
    if (!c->r) fail_msg("open %s: %s", loc, e.message);
    int64_t end = pb_mono_ms() + 20000;
    while (!c->done && pb_mono_ms() < end)
        assert_true(pn_loop_run_once(c->l, 100) >= 0);
    assert_true(c->done);
}

static void close_store(conn *c) {
    pst_remote_close(c->r);
    int64_t end = pb_mono_ms() + 10000;
    while (!pst_remote_settled(c->r) && pb_mono_ms() < end)
        assert_true(pn_loop_run_once(c->l, 100) >= 0);
    assert_true(pst_remote_settled(c->r));
    pst_remote_free(c->r);
    c->r = NULL;
    pn_loop_free(c->l);
}

static void expect_ok(conn *c) {
    if (c->status != PST_OK) fail_msg("open: %s", c->message);
}

static void expect_conn_error(conn *c, const char *part) {
    assert_int_equal(c->status, PST_ERR_CONN);
    if (!strstr(c->message, part)) fail_msg("'%s' not in: %s", part, c->message);
}

/* ---- against the real server -------------------------------------------------------- */

static void require_and_verify_full_use_tls(void **state) {
    (void)state;
    const char *modes[] = {"require", "verify-full", ""};
    for (size_t i = 0; i < sizeof modes / sizeof *modes; i++) {
        conn c;
        open_store(&c, "localhost", port, modes[i], certfile);
        expect_ok(&c);
        int all = 0, tls = 0;
        role_sessions(&all, &tls);
        assert_int_equal(all, 1);
        assert_int_equal(tls, 1); /* the session is inside TLS */
        close_store(&c);
    }
}

static void disable_stays_clear(void **state) {
    (void)state;
    conn c;
    open_store(&c, "localhost", port, "disable", certfile);
    expect_ok(&c);
    int all = 0, tls = 0;
    role_sessions(&all, &tls);
    assert_int_equal(all, 1);
    assert_int_equal(tls, 0);
    close_store(&c);
}

/* The host verifies even under require: an untrusted certificate, or one for another
 * name (the server's names localhost, not 127.0.0.1), ends the connection. */
static void require_verifies_the_certificate(void **state) {
    (void)state;
    conn c;
    open_store(&c, "localhost", port, "require", NULL); /* the system's store */
    expect_conn_error(&c, "cannot start TLS");
    expect_conn_error(&c, "TLS failed");
    close_store(&c);
    open_store(&c, "127.0.0.1", port, "verify-full", certfile);
    expect_conn_error(&c, "TLS failed");
    close_store(&c);
    open_store(&c, "localhost", port, "", NULL); /* prefer: no fall-back to the clear */
    expect_conn_error(&c, "TLS failed");
    close_store(&c);
}

/* ---- against local servers that misbehave ------------------------------------------- */

typedef struct fake {
    int ls;
    uint16_t port;
    const char *answer; /* to the SSLRequest */
    size_t alen;
    bool got_ssl_request, got_startup;
    pthread_t th;
} fake;

static void *fake_main(void *arg) {
    fake *f = arg;
    int c = accept(f->ls, NULL, NULL);
    if (c < 0) return NULL;
    uint8_t req[8];
    static const uint8_t ssl_request[8] = {0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f};
    if (pb_read_full(c, req, 8) == 8 && memcmp(req, ssl_request, 8) == 0) {
        f->got_ssl_request = true;
        pb_write_all(c, f->answer, f->alen);
        uint8_t m[8]; /* a StartupMessage: length, then protocol 3.0 */
        f->got_startup =
            pb_read_full(c, m, 8) == 8 && m[4] == 0 && m[5] == 3 && m[6] == 0 && m[7] == 0;
    }
    close(c);
    return NULL;
}

static void fake_start(fake *f, const char *answer, size_t alen) {
    memset(f, 0, sizeof *f);
    f->answer = answer;
    f->alen = alen;
    f->ls = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(f->ls, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(f->ls, 1), 0);
    socklen_t al = sizeof a;
    getsockname(f->ls, (struct sockaddr *)&a, &al);
    f->port = ntohs(a.sin_port);
    assert_int_equal(pthread_create(&f->th, NULL, fake_main, f), 0);
}

static void fake_end(fake *f) {
    shutdown(f->ls, SHUT_RDWR);
    pthread_join(f->th, NULL);
    close(f->ls);
}

static void no_tls_server(void **state) {
    (void)state;
    fake f;
    conn c;
    fake_start(&f, "N", 1);
    open_store(&c, "127.0.0.1", f.port, "require", certfile);
    expect_conn_error(&c, "does not accept TLS");
    close_store(&c);
    fake_end(&f);
    assert_true(f.got_ssl_request);
    assert_false(f.got_startup); /* nothing was sent in the clear */

    fake_start(&f, "N", 1);
    open_store(&c, "127.0.0.1", f.port, "prefer", certfile);
    assert_int_equal(c.status, PST_ERR_CONN); /* the fake closes after the startup */
    close_store(&c);
    fake_end(&f);
    assert_true(f.got_ssl_request);
    assert_true(f.got_startup); /* prefer went on in the clear */
}

static void clear_bytes_after_s_are_refused(void **state) {
    (void)state;
    fake f;
    conn c;
    static const char answer[] = "SE\0\0\0\x08injected";
    fake_start(&f, answer, sizeof answer - 1);
    open_store(&c, "127.0.0.1", f.port, "require", certfile);
    assert_int_equal(c.status, PST_ERR_CONN);
    assert_true(strstr(c.message, "unencrypted data after the server's TLS answer") ||
                strstr(c.message, "in the clear after accepting TLS") ||
                strstr(c.message, "TLS failed"));
    close_store(&c);
    fake_end(&f);
    assert_false(f.got_startup);
}

static int setup(void **state) {
    (void)state;
    sockdir = getenv("PERI_TEST_PG_SOCKDIR");
    certfile = getenv("PERI_TEST_PG_CERT");
    const char *p = getenv("PERI_TEST_PG_PORT");
    if (!sockdir || !p || !certfile) {
        fprintf(stderr,
                "test_remote_tls: run it through tests/store/pg_cluster.sh (PERI_PG_TCP=1)\n");
        return -1;
    }
    port = atoi(p);
    PGconn *c = admin();
    admin_exec(c, "CREATE ROLE " ROLE " LOGIN PASSWORD '" PASSWORD "'");
    admin_exec(c, "CREATE DATABASE " DB " OWNER " ROLE);
    PQfinish(c);
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(require_and_verify_full_use_tls),  cmocka_unit_test(disable_stays_clear),
        cmocka_unit_test(require_verifies_the_certificate), cmocka_unit_test(no_tls_server),
        cmocka_unit_test(clear_bytes_after_s_are_refused),
    };
    return cmocka_run_group_tests_name("store.remote_tls", tests, setup, NULL);
}
