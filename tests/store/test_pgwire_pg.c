/*
 * test_pgwire_pg.c — the sans-IO PostgreSQL frontend (src/store/pgwire*.c) against a real
 * PostgreSQL server, started by tests/store/pg_cluster.sh with PERI_PG_TCP=1: the admin
 * role over the cluster's Unix socket (trust), a role with a password over TCP on
 * 127.0.0.1 (scram-sha-256). A tiny blocking driver in this file moves the bytes (the
 * library's codec does no I/O). It runs the store's kind of statements (DDL, inserts and
 * selects with text parameters and NULLs, a pipelined all-or-nothing batch, a
 * CancelRequest), checks SQLSTATEs and error fields of failing statements, and the typed
 * errors of a wrong password, an unknown role and a missing password.
 *
 * Without the cluster's variables it fails (never skips): CTest runs it only through
 * pg_cluster.sh, which itself fails when PostgreSQL is missing.
 */
#include "peri/base.h"
#include "store/pgwire.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include <openssl/ssl.h>

static const char *sockdir, *certfile;
static int port;

#define ROLE     "pgw_role"
#define PASSWORD "correct horse battery staple"

/* ---- the blocking driver --------------------------------------------------------- */

typedef struct drv {
    int fd;
    pst__pgw *c;
    SSL_CTX *ctx; /* after the codec's PST_PGW_EV_TLS: the stream runs through ssl */
    SSL *ssl;
} drv;

/* The port's side of TLS: a handshake on the open socket that trusts only the cluster's
 * throwaway certificate and checks the name "localhost". */
static void tls_handshake(drv *d) {
    assert_non_null(certfile);
    d->ctx = SSL_CTX_new(TLS_client_method());
    assert_non_null(d->ctx);
    assert_int_equal(SSL_CTX_load_verify_locations(d->ctx, certfile, NULL), 1);
    SSL_CTX_set_verify(d->ctx, SSL_VERIFY_PEER, NULL);
    d->ssl = SSL_new(d->ctx);
    assert_non_null(d->ssl);
    assert_int_equal(SSL_set1_host(d->ssl, "localhost"), 1);
    assert_int_equal(SSL_set_fd(d->ssl, d->fd), 1);
    assert_int_equal(SSL_connect(d->ssl), 1);
}

static ssize_t stream_send(drv *d, const void *p, size_t n) {
    if (d->ssl) {
        int w = SSL_write(d->ssl, p, n > INT32_MAX ? INT32_MAX : (int)n);
        return w > 0 ? w : -1;
    }
    return send(d->fd, p, n, MSG_NOSIGNAL);
}

static ssize_t stream_recv(drv *d, void *p, size_t n) {
    if (d->ssl) {
        int r = SSL_read(d->ssl, p, (int)n);
        return r > 0 ? r : 0; /* a TLS close or error ends the stream */
    }
    return recv(d->fd, p, n, 0);
}

static void stream_close(drv *d) {
    if (d->ssl) SSL_free(d->ssl);
    if (d->ctx) SSL_CTX_free(d->ctx);
    d->ssl = NULL;
    d->ctx = NULL;
    close(d->fd);
}

static int connect_unix(void) {
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s/.s.PGSQL.%d", sockdir, port);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    return fd;
}

static int connect_tcp(void) {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    return fd;
}

static void flush(drv *d) {
    size_t n;
    const uint8_t *p;
    while ((p = pst__pgw_output(d->c, &n))) {
        ssize_t w = stream_send(d, p, n);
        if (w < 0 && errno == EINTR) continue;
        assert_true(w > 0);
        pst__pgw_sent(d->c, (size_t)w);
    }
}

/* The next event, reading as needed (10 s per read). End of stream: FAILED if the codec
 * has not failed already (the caller checks pst__pgw_failure). */
static pst__pgw_ev_kind next_event(drv *d, pst__pgw_event *ev) {
    for (;;) {
        flush(d);
        pst__pgw_ev_kind k = pst__pgw_next(d->c, ev);
        if (k == PST_PGW_EV_TLS) {
            tls_handshake(d);
            assert_true(pst__pgw_tls_started(d->c));
            continue;
        }
        flush(d); /* parsing may have queued an answer (authentication) */
        if (k != PST_PGW_EV_NONE) return k;
        if (!d->ssl || SSL_pending(d->ssl) == 0) {
            struct pollfd pf = {.fd = d->fd, .events = POLLIN};
            assert_true(poll(&pf, 1, 10000) == 1);
        }
        uint8_t buf[16384];
        ssize_t r = stream_recv(d, buf, sizeof buf);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return PST_PGW_EV_NONE; /* the server closed */
        assert_true(pst__pgw_feed(d->c, buf, (size_t)r));
    }
}

/* Connects and authenticates; returns the failure kind (PST_PGW_E_NONE when ready). */
static pst__pgw_errkind open_session_with(drv *d, bool tcp, pst__pgw_config cfg,
                                          pst__pgw_error *failure);

static pst__pgw_errkind open_session(drv *d, bool tcp, const char *user, const char *db,
                                     const char *password, pst__pgw_error *failure) {
    pst__pgw_config cfg = {.user = user, .database = db, .password = password};
    return open_session_with(d, tcp, cfg, failure);
}

static pst__pgw_errkind open_session_with(drv *d, bool tcp, pst__pgw_config cfg,
                                          pst__pgw_error *failure) {
    cfg.application_name = "peri-pgwire-test";
    assert_int_equal(getrandom(cfg.nonce_random, sizeof cfg.nonce_random, 0),
                     (ssize_t)sizeof cfg.nonce_random);
    pst__pgw_error err;
    d->c = pst__pgw_new(&cfg, &err);
    assert_non_null(d->c);
    d->ssl = NULL;
    d->ctx = NULL;
    d->fd = tcp ? connect_tcp() : connect_unix();
    pst__pgw_event ev;
    bool version = false;
    for (;;) {
        pst__pgw_ev_kind k = next_event(d, &ev);
        if (k == PST_PGW_EV_PARAM && !strcmp(ev.name, "server_version")) version = true;
        if (k == PST_PGW_EV_READY) break;
        if (k == PST_PGW_EV_FAILED) {
            if (failure) *failure = *ev.error;
            return ev.error->kind;
        }
        assert_int_not_equal(k, PST_PGW_EV_NONE); /* closed without an error */
    }
    assert_true(version);
    assert_true(pst__pgw_ready(d->c));
    return PST_PGW_E_NONE;
}

static void close_session(drv *d) {
    pst__pgw_terminate(d->c);
    flush(d);
    /* the server closes after Terminate */
    uint8_t b[64];
    if (!d->ssl) {
        struct pollfd pf = {.fd = d->fd, .events = POLLIN};
        assert_int_equal(poll(&pf, 1, 10000), 1);
    }
    assert_int_equal(stream_recv(d, b, sizeof b), 0);
    stream_close(d);
    pst__pgw_free(d->c);
}

/* What one round trip gave: rows as "a|b" lines (NULL as "<null>"), the last command
 * tag's row count, and the first error. */
typedef struct result {
    pb_buf rows;
    int64_t count;
    int errors;
    char sqlstate[6], constraint[64], detail[256], position[16];
    char tx;
} result;

static void collect(drv *d, result *r) {
    memset(r, 0, sizeof *r);
    r->count = -1;
    pst__pgw_event ev;
    for (;;) {
        pst__pgw_ev_kind k = next_event(d, &ev);
        switch (k) {
        case PST_PGW_EV_ROW:
            for (int i = 0; i < ev.ncol; i++) {
                if (i) assert_true(pb_buf_putc(&r->rows, '|'));
                assert_true(pb_buf_puts(&r->rows, ev.col[i] ? ev.col[i] : "<null>"));
            }
            assert_true(pb_buf_putc(&r->rows, '\n'));
            break;
        case PST_PGW_EV_COMPLETE: r->count = ev.rows; break;
        case PST_PGW_EV_SERVER_ERROR:
            if (!r->errors++) {
                snprintf(r->sqlstate, sizeof r->sqlstate, "%s", ev.fields.sqlstate);
                snprintf(r->constraint, sizeof r->constraint, "%s",
                         ev.fields.constraint ? ev.fields.constraint : "");
                snprintf(r->detail, sizeof r->detail, "%s",
                         ev.fields.detail ? ev.fields.detail : "");
                snprintf(r->position, sizeof r->position, "%s",
                         ev.fields.position ? ev.fields.position : "");
                assert_non_null(ev.fields.message);
                assert_string_equal(ev.fields.severity, "ERROR");
            }
            break;
        case PST_PGW_EV_READY: r->tx = ev.tx; return;
        case PST_PGW_EV_FAILED:
            fail_msg("connection failed: %s: %s", pst__pgw_errkind_name(ev.error->kind),
                     ev.error->message);
            break;
        case PST_PGW_EV_NONE: fail_msg("the server closed the connection"); break;
        default: break;
        }
    }
}

static void simple(drv *d, const char *sql, result *r) {
    assert_true(pst__pgw_query(d->c, sql));
    collect(d, r);
}

static void params(drv *d, const char *sql, int n, const char *const *v, result *r) {
    assert_true(pst__pgw_query_params(d->c, sql, n, v, NULL, true));
    collect(d, r);
}

static void ok(result *r) {
    if (r->errors) fail_msg("SQLSTATE %s", r->sqlstate);
    assert_int_equal(r->tx, 'I');
}

/* ---- setup: the role and its database, as the trusted admin over the socket ------ */

static int setup(void **st) {
    (void)st;
    drv d;
    assert_int_equal(open_session(&d, false, "peri", "postgres", NULL, NULL), PST_PGW_E_NONE);
    assert_false(pst__pgw_server_verified(d.c)); /* trust: nothing to verify */
    result r;
    simple(&d, "SET password_encryption = 'scram-sha-256'", &r);
    ok(&r);
    simple(&d, "CREATE ROLE " ROLE " LOGIN PASSWORD '" PASSWORD "'", &r);
    ok(&r);
    simple(&d, "CREATE DATABASE pgw_db OWNER " ROLE, &r);
    ok(&r);
    simple(&d, "CREATE ROLE pgw_clear LOGIN PASSWORD '" PASSWORD "'", &r);
    ok(&r);
    pb_buf_free(&r.rows);
    close_session(&d);
    return 0;
}

/* ---- tests ----------------------------------------------------------------------- */

static void scram_login_over_tcp(void **st) {
    (void)st;
    drv d;
    assert_int_equal(open_session(&d, true, ROLE, "pgw_db", PASSWORD, NULL), PST_PGW_E_NONE);
    assert_true(pst__pgw_server_verified(d.c));
    assert_false(pst__pgw_tls_active(d.c));
    uint32_t pid, key;
    pst__pgw_backend_key(d.c, &pid, &key);
    assert_true(pid != 0);
    result r;
    simple(&d, "SELECT current_user, current_database(), current_setting('application_name')", &r);
    ok(&r);
    assert_string_equal(r.rows.p, ROLE "|pgw_db|peri-pgwire-test\n");
    pb_buf_free(&r.rows);
    close_session(&d);
}

static void store_statements(void **st) {
    (void)st;
    drv d;
    assert_int_equal(open_session(&d, true, ROLE, "pgw_db", PASSWORD, NULL), PST_PGW_E_NONE);
    result r;
    /* the store's shape: machines and workspaces, COLLATE "C" ids, JSON, a foreign key */
    simple(&d,
           "CREATE TABLE machines(id TEXT COLLATE \"C\" PRIMARY KEY, name TEXT,"
           " created_at BIGINT NOT NULL);"
           "CREATE TABLE workspaces(id TEXT COLLATE \"C\" PRIMARY KEY,"
           " machine_id TEXT COLLATE \"C\" NOT NULL REFERENCES machines(id) ON DELETE CASCADE,"
           " path TEXT COLLATE \"C\" NOT NULL, meta JSON, created_at BIGINT NOT NULL,"
           " UNIQUE(machine_id, path));",
           &r);
    ok(&r);
    const char *m1[] = {"m-1", "laptop", "1700000000000"}, *m2[] = {"m-2", NULL, "1700000000001"};
    params(&d, "INSERT INTO machines(id, name, created_at) VALUES($1, $2, $3)", 3, m1, &r);
    ok(&r);
    assert_int_equal(r.count, 1);
    params(&d, "INSERT INTO machines(id, name, created_at) VALUES($1, $2, $3)", 3, m2, &r);
    ok(&r);
    const char *w1[] = {"w-1", "m-1", "/home/u/proj", "{\"k\": [1, \"é\"]}", "5"};
    params(&d,
           "INSERT INTO workspaces(id, machine_id, path, meta, created_at) "
           "VALUES($1, $2, $3, $4, $5)",
           5, w1, &r);
    ok(&r);
    const char *q1[] = {"m-1", "/home/u/proj"};
    pb_buf_free(&r.rows);
    params(&d, "SELECT id, meta, created_at FROM workspaces WHERE machine_id = $1 AND path = $2", 2,
           q1, &r);
    ok(&r);
    assert_string_equal(r.rows.p, "w-1|{\"k\": [1, \"é\"]}|5\n");
    assert_int_equal(r.count, 1);
    pb_buf_free(&r.rows);
    simple(&d, "SELECT id, name FROM machines ORDER BY id", &r);
    ok(&r);
    assert_string_equal(r.rows.p, "m-1|laptop\nm-2|<null>\n");
    pb_buf_free(&r.rows);
    /* failing statements: typed SQLSTATEs with their fields; the session goes on */
    const char *dup[] = {"m-1", "again", "1"};
    params(&d, "INSERT INTO machines(id, name, created_at) VALUES($1, $2, $3)", 3, dup, &r);
    assert_int_equal(r.errors, 1);
    assert_string_equal(r.sqlstate, "23505");
    assert_string_equal(r.constraint, "machines_pkey");
    assert_string_equal(r.detail, "Key (id)=(m-1) already exists.");
    assert_int_equal(r.tx, 'I');
    const char *fk[] = {"w-2", "m-404", "/x", NULL, "1"};
    params(&d,
           "INSERT INTO workspaces(id, machine_id, path, meta, created_at) "
           "VALUES($1, $2, $3, $4, $5)",
           5, fk, &r);
    assert_string_equal(r.sqlstate, "23503");
    const char *badjson[] = {"w-3", "m-1", "/y", "{not json", "1"};
    params(&d,
           "INSERT INTO workspaces(id, machine_id, path, meta, created_at) "
           "VALUES($1, $2, $3, $4, $5)",
           5, badjson, &r);
    assert_string_equal(r.sqlstate, "22P02");
    simple(&d, "SELECT 1/0", &r);
    assert_string_equal(r.sqlstate, "22012");
    simple(&d, "SELEC 1", &r);
    assert_string_equal(r.sqlstate, "42601");
    assert_string_equal(r.position, "1");
    simple(&d, "", &r); /* EmptyQueryResponse */
    ok(&r);
    /* inside a transaction block: 'T', then 'E' after a failure, then back */
    simple(&d, "BEGIN", &r);
    assert_int_equal(r.tx, 'T');
    simple(&d, "SELECT nope", &r);
    assert_string_equal(r.sqlstate, "42703");
    assert_int_equal(r.tx, 'E');
    simple(&d, "ROLLBACK", &r);
    ok(&r);
    pb_buf_free(&r.rows);
    close_session(&d);
}

/* Several statements before one Sync run as one implicit transaction: the failing second
 * one undoes the first (the store's batch rule), and the rest is skipped. */
static void pipelined_batch_is_all_or_nothing(void **st) {
    (void)st;
    drv d;
    assert_int_equal(open_session(&d, true, ROLE, "pgw_db", PASSWORD, NULL), PST_PGW_E_NONE);
    result r;
    simple(&d, "CREATE TABLE counters(id TEXT PRIMARY KEY, n BIGINT NOT NULL)", &r);
    ok(&r);
    const char *a[] = {"a", "1"}, *b[] = {"a", "2"}, *c[] = {"c", "3"};
    const char *ins = "INSERT INTO counters(id, n) VALUES($1, $2)";
    assert_true(pst__pgw_query_params(d.c, ins, 2, a, NULL, false));
    assert_true(pst__pgw_query_params(d.c, ins, 2, b, NULL, false));
    assert_true(pst__pgw_query_params(d.c, ins, 2, c, NULL, false));
    assert_true(pst__pgw_sync(d.c));
    collect(&d, &r);
    assert_int_equal(r.errors, 1);
    assert_string_equal(r.sqlstate, "23505");
    assert_int_equal(r.tx, 'I');
    simple(&d, "SELECT count(*) FROM counters", &r);
    ok(&r);
    assert_string_equal(r.rows.p, "0\n");
    pb_buf_free(&r.rows);
    /* the same batch without the conflict commits all three */
    const char *b2[] = {"b", "2"};
    assert_true(pst__pgw_query_params(d.c, ins, 2, a, NULL, false));
    assert_true(pst__pgw_query_params(d.c, ins, 2, b2, NULL, false));
    assert_true(pst__pgw_query_params(d.c, "SELECT sum(n) FROM counters", 0, NULL, NULL, false));
    assert_true(pst__pgw_sync(d.c));
    collect(&d, &r);
    ok(&r);
    assert_string_equal(r.rows.p, "3\n");
    pb_buf_free(&r.rows);
    close_session(&d);
}

/* A 1 MiB parameter and result (the message-size path), and bytes that are not ASCII. */
static void large_values(void **st) {
    (void)st;
    drv d;
    assert_int_equal(open_session(&d, true, ROLE, "pgw_db", PASSWORD, NULL), PST_PGW_E_NONE);
    size_t n = 1 << 20;
    char *big = malloc(n + 1);
    assert_non_null(big);
    for (size_t i = 0; i < n; i++)
        big[i] = (char)('a' + i % 26);
    big[n] = 0;
    memcpy(big + 100, "\xe5\xad\x97", 3); /* 字 */
    const char *v[] = {big};
    result r;
    params(&d, "SELECT length($1::text), md5($1::text) = md5($1::text), $1::text", 1, v, &r);
    ok(&r);
    char head[64];
    snprintf(head, sizeof head, "%zu|t|", n - 2); /* three bytes, one character */
    assert_memory_equal(r.rows.p, head, strlen(head));
    assert_int_equal(r.rows.len, strlen(head) + n + 1);
    assert_memory_equal(r.rows.p + strlen(head), big, n);
    free(big);
    pb_buf_free(&r.rows);
    close_session(&d);
}

/* CancelRequest on a second stream stops a running statement: SQLSTATE 57014, and the
 * session stays usable. */
static void cancel_request_stops_a_statement(void **st) {
    (void)st;
    drv d;
    assert_int_equal(open_session(&d, true, ROLE, "pgw_db", PASSWORD, NULL), PST_PGW_E_NONE);
    uint32_t pid, key;
    pst__pgw_backend_key(d.c, &pid, &key);
    assert_true(pst__pgw_query(d.c, "SELECT pg_sleep(60)"));
    flush(&d);
    usleep(300 * 1000); /* let the statement start */
    uint8_t pkt[16];
    pst__pgw_cancel_request(pid, key, pkt);
    int fd = connect_tcp();
    assert_int_equal(send(fd, pkt, sizeof pkt, MSG_NOSIGNAL), (ssize_t)sizeof pkt);
    result r;
    collect(&d, &r); /* well before the 60 s (each read waits 10 s at most) */
    assert_string_equal(r.sqlstate, "57014");
    assert_int_equal(r.tx, 'I');
    close(fd);
    simple(&d, "SELECT 42", &r);
    ok(&r);
    assert_string_equal(r.rows.p, "42\n");
    pb_buf_free(&r.rows);
    close_session(&d);
}

/* SSLRequest, the port's TLS handshake on 'S', then SCRAM inside TLS. */
static void tls_then_scram(void **st) {
    (void)st;
    drv d;
    pst__pgw_config cfg = {
        .user = ROLE, .database = "pgw_db", .password = PASSWORD, .tls = PST_PGW_TLS_REQUIRE};
    assert_int_equal(open_session_with(&d, true, cfg, NULL), PST_PGW_E_NONE);
    assert_true(pst__pgw_tls_active(d.c));
    assert_true(pst__pgw_server_verified(d.c));
    result r;
    simple(&d, "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()", &r);
    ok(&r);
    assert_string_equal(r.rows.p, "t\n");
    pb_buf_free(&r.rows);
    close_session(&d);
}

/* A role whose server rule is a cleartext password over TLS: refused by default, sent
 * when allowed (and only because the stream is TLS). */
static void cleartext_only_over_tls_and_when_allowed(void **st) {
    (void)st;
    drv d;
    pst__pgw_error e;
    pst__pgw_config cfg = {.user = "pgw_clear",
                           .database = "pgw_db",
                           .password = PASSWORD,
                           .tls = PST_PGW_TLS_REQUIRE};
    assert_int_equal(open_session_with(&d, true, cfg, &e), PST_PGW_E_AUTH_UNSUPPORTED);
    stream_close(&d);
    pst__pgw_free(d.c);
    cfg.allow_cleartext_over_tls = true;
    assert_int_equal(open_session_with(&d, true, cfg, NULL), PST_PGW_E_NONE);
    assert_false(pst__pgw_server_verified(d.c));
    result r;
    simple(&d, "SELECT current_user", &r);
    ok(&r);
    assert_string_equal(r.rows.p, "pgw_clear\n");
    pb_buf_free(&r.rows);
    close_session(&d);
    /* without TLS the same role meets the scram-sha-256 rule and logs in with SCRAM */
    cfg.tls = PST_PGW_TLS_OFF;
    assert_int_equal(open_session_with(&d, true, cfg, NULL), PST_PGW_E_NONE);
    assert_true(pst__pgw_server_verified(d.c));
    close_session(&d);
}

static void wrong_password_is_typed(void **st) {
    (void)st;
    drv d;
    pst__pgw_error e;
    assert_int_equal(open_session(&d, true, ROLE, "pgw_db", "wrong password", &e),
                     PST_PGW_E_AUTH_FAILED);
    assert_string_equal(e.sqlstate, "28P01");
    assert_string_equal(e.severity, "FATAL");
    assert_non_null(strstr(e.message, ROLE));
    stream_close(&d);
    pst__pgw_free(d.c);
    /* an unknown role goes through the server's mock SCRAM and fails the same way */
    assert_int_equal(open_session(&d, true, "nobody_here", "pgw_db", PASSWORD, &e),
                     PST_PGW_E_AUTH_FAILED);
    assert_string_equal(e.sqlstate, "28P01");
    stream_close(&d);
    pst__pgw_free(d.c);
    /* the server asks for SCRAM and no password is configured */
    assert_int_equal(open_session(&d, true, ROLE, "pgw_db", NULL, &e), PST_PGW_E_NO_PASSWORD);
    stream_close(&d);
    pst__pgw_free(d.c);
}

int main(void) {
    sockdir = getenv("PERI_TEST_PG_SOCKDIR");
    certfile = getenv("PERI_TEST_PG_CERT");
    const char *p = getenv("PERI_TEST_PG_PORT");
    if (!sockdir || !p || (port = atoi(p)) <= 0) {
        fprintf(stderr, "test_pgwire_pg: run it through tests/store/pg_cluster.sh with "
                        "PERI_PG_TCP=1 (PERI_TEST_PG_SOCKDIR and PERI_TEST_PG_PORT unset)\n");
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(scram_login_over_tcp),
        cmocka_unit_test(store_statements),
        cmocka_unit_test(pipelined_batch_is_all_or_nothing),
        cmocka_unit_test(large_values),
        cmocka_unit_test(cancel_request_stops_a_statement),
        cmocka_unit_test(tls_then_scram),
        cmocka_unit_test(cleartext_only_over_tls_and_when_allowed),
        cmocka_unit_test(wrong_password_is_typed),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
