/*
 * test_remote.c — the remote store client (pst_remote_*, src/store/remote*.c) against a
 * real PostgreSQL started by tests/store/pg_cluster.sh with PERI_PG_TCP=1: a role with a
 * password over TCP (scram-sha-256), the admin over the socket (libpq, for setup and for
 * the native store on the same database).
 *
 * The host's ports (peri/net.h) are played by a small blocking-socket implementation in
 * this file: open connects at once and queues PN_EV_OPENED, writes block, reads never
 * block, and pump() polls the open sockets and delivers PN_EV_READABLE / PN_EV_CLOSED.
 *
 * Checked: data written by the remote client reads back identically through the native
 * libpq store and the other way round; the ownership refusals (another machine, no
 * machine id) are the native store's, status and message; two machine ids side by side;
 * a connection killed mid-batch (pg_terminate_backend) gives PST_ERR_CONN and no partial
 * batch, and the next operation reconnects; a newer schema is refused as natively;
 * locators the port cannot serve are refused (sslmode=require over ports without
 * starttls); hostile server bytes never crash.
 *
 * Without the cluster's variables it fails (never skips).
 */
#include "peri/net.h"
#include "peri/store.h"

#include <arpa/inet.h>
#include <errno.h>
#include <libpq-fe.h>
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
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#define ROLE      "rs_role"
#define PASSWORD  "remote store secret"
#define MACHINE_A "0190a000-0000-4000-8000-00000000000a"
#define MACHINE_B "0190a000-0000-4000-8000-00000000000b"

static const char *sockdir;
static int port;

/* ---- the blocking ports ------------------------------------------------------------ */

#define MAXH 16
typedef struct tstream {
    int fd; /* -1: free */
    void *ud;
    bool closing;
} tstream;

typedef struct tports {
    pn_ports p;
    tstream s[MAXH + 1];
    pn_event q[64];
    int nq;
    pst_remote *stores[4];
    pn_err fail_open; /* PN_OK, or how every open fails (e.g. the host's timeout) */
} tports;

static void push(tports *t, pn_event ev) {
    assert_true(t->nq < 64);
    t->q[t->nq++] = ev;
}

static pn_err t_open(void *ctx, const char *host, uint16_t prt, const pn_stream_opts *o, void *ud,
                     pn_handle *out) {
    tports *t = ctx;
    assert_false(o && o->tls);
    pn_handle h = 1;
    while (h <= MAXH && t->s[h].fd >= 0)
        h++;
    if (h > MAXH) return PN_E_LIMIT;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(prt)};
    if (inet_pton(AF_INET, !strcmp(host, "localhost") ? "127.0.0.1" : host, &a.sin_addr) != 1)
        return PN_E_NOT_FOUND;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return PN_E_IO;
    t->s[h] = (tstream){.fd = fd, .ud = ud};
    *out = h;
    pn_err e = t->fail_open;
    if (e == PN_OK) e = connect(fd, (struct sockaddr *)&a, sizeof a) == 0 ? PN_OK : PN_E_REFUSED;
    push(t, (pn_event){.kind = PN_EV_OPENED, .handle = h, .ud = ud, .err = e});
    if (e != PN_OK) {
        t->s[h].closing = true;
        push(t, (pn_event){.kind = PN_EV_CLOSED, .handle = h, .ud = ud, .err = e});
    }
    return PN_OK;
}

static pn_err t_read(void *ctx, pn_handle h, void *buf, size_t cap, size_t *got) {
    tports *t = ctx;
    *got = 0;
    if (h == 0 || h > MAXH || t->s[h].fd < 0 || t->s[h].closing) return PN_E_INVALID;
    ssize_t r = recv(t->s[h].fd, buf, cap, MSG_DONTWAIT);
    if (r < 0) return errno == EAGAIN || errno == EWOULDBLOCK ? PN_E_AGAIN : PN_E_RESET;
    *got = (size_t)r;
    return PN_OK;
}

static pn_err t_write(void *ctx, pn_handle h, const void *data, size_t len) {
    tports *t = ctx;
    if (h == 0 || h > MAXH || t->s[h].fd < 0 || t->s[h].closing) return PN_E_INVALID;
    const char *p = data;
    while (len) {
        ssize_t w = send(t->s[h].fd, p, len, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return PN_E_RESET;
        p += w;
        len -= (size_t)w;
    }
    return PN_OK;
}

static pn_err t_shutdown(void *ctx, pn_handle h) {
    tports *t = ctx;
    if (h == 0 || h > MAXH || t->s[h].fd < 0) return PN_E_INVALID;
    shutdown(t->s[h].fd, SHUT_WR);
    return PN_OK;
}

static pn_err t_close(void *ctx, pn_handle h) {
    tports *t = ctx;
    if (h == 0 || h > MAXH || t->s[h].fd < 0 || t->s[h].closing) return PN_E_INVALID;
    t->s[h].closing = true;
    push(t, (pn_event){.kind = PN_EV_CLOSED, .handle = h, .ud = t->s[h].ud, .err = PN_OK});
    return PN_OK;
}

static uint64_t t_now(void *ctx) {
    (void)ctx;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static int64_t t_wall(void *ctx) {
    (void)ctx;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void tports_init(tports *t) {
    memset(t, 0, sizeof *t);
    for (int i = 0; i <= MAXH; i++)
        t->s[i].fd = -1;
    t->p = (pn_ports){.ctx = t,
                      .open = t_open,
                      .read = t_read,
                      .write = t_write,
                      .shutdown = t_shutdown,
                      .close = t_close,
                      .now_ms = t_now,
                      .wall_ms = t_wall};
}

static void deliver(tports *t, const pn_event *ev) {
    if (ev->kind == PN_EV_CLOSED) {
        close(t->s[ev->handle].fd);
        t->s[ev->handle] = (tstream){.fd = -1};
    }
    for (int i = 0; i < 4; i++)
        if (t->stores[i] && pst_remote_on_event(t->stores[i], ev)) return;
}

/* Delivers queued events, else waits up to 10 s for readable sockets. */
static void pump(tports *t) {
    if (t->nq) {
        pn_event ev = t->q[0];
        memmove(t->q, t->q + 1, (size_t)--t->nq * sizeof *t->q);
        deliver(t, &ev);
        return;
    }
    struct pollfd pf[MAXH];
    pn_handle hs[MAXH];
    int n = 0;
    for (pn_handle h = 1; h <= MAXH; h++)
        if (t->s[h].fd >= 0 && !t->s[h].closing) {
            pf[n] = (struct pollfd){.fd = t->s[h].fd, .events = POLLIN};
            hs[n++] = h;
        }
    assert_true(n > 0); /* something must be pending */
    assert_true(poll(pf, (nfds_t)n, 10000) > 0);
    for (int i = 0; i < n; i++)
        if (pf[i].revents)
            deliver(t, &(pn_event){.kind = PN_EV_READABLE, .handle = hs[i], .ud = t->s[hs[i]].ud});
}

static bool rnd(void *ctx, void *buf, size_t n) {
    (void)ctx;
    return getrandom(buf, n, 0) == (ssize_t)n;
}

/* ---- callbacks: one slot that takes the result over -------------------------------- */

typedef struct slot {
    bool done;
    pst_remote_result res;
} slot;

static void take(void *ud, pst_remote_result *res) {
    slot *s = ud;
    s->done = true;
    s->res = *res;
    memset(res, 0, sizeof *res); /* moved out: the library clears an empty result */
}

static void wait_for(tports *t, slot *s) {
    while (!s->done)
        pump(t);
}

/* Opens the store at loc (ROLE's password) and waits for the open's outcome in *s. */
static pst_remote *open_at(tports *t, const char *loc, const char *machine, slot *s) {
    pst_error err;
    pst_remote *r = pst_remote_open(&(pst_remote_options){.ports = &t->p,
                                                          .locator = loc,
                                                          .password = PASSWORD,
                                                          .machine_id = machine,
                                                          .random = rnd},
                                    take, s, &err);
    assert_non_null(r);
    for (int i = 0; i < 4; i++)
        if (!t->stores[i]) {
            t->stores[i] = r;
            break;
        }
    wait_for(t, s);
    return r;
}

static pst_remote *open_remote(tports *t, const char *db, const char *machine, pst_status want) {
    char loc[256];
    snprintf(loc, sizeof loc, "postgresql://" ROLE "@127.0.0.1:%d/%s", port, db);
    slot s = {0};
    pst_remote *r = open_at(t, loc, machine, &s);
    if (s.res.status != want) fail_msg("open: %s", s.res.error.message);
    if (want == PST_OK) assert_int_equal(s.res.value, PST_SCHEMA_VERSION);
    return r;
}

static void close_remote(tports *t, pst_remote *r) {
    pst_remote_close(r);
    while (!pst_remote_settled(r))
        pump(t);
    for (int i = 0; i < 4; i++)
        if (t->stores[i] == r) t->stores[i] = NULL;
    pst_remote_free(r);
}

/* ---- the admin (libpq over the socket) --------------------------------------------- */

static void quiet(void *arg, const char *msg) {
    (void)arg;
    (void)msg; /* "database ... does not exist, skipping" */
}

static PGconn *admin(const char *db) {
    char ci[512];
    snprintf(ci, sizeof ci, "host=%s port=%d user=peri dbname=%s", sockdir, port, db);
    PGconn *c = PQconnectdb(ci);
    assert_int_equal(PQstatus(c), CONNECTION_OK);
    PQsetNoticeProcessor(c, quiet, NULL);
    return c;
}

static void admin_exec(PGconn *c, const char *sql) {
    PGresult *r = PQexec(c, sql);
    ExecStatusType st = PQresultStatus(r);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) fail_msg("%s: %s", sql, PQerrorMessage(c));
    PQclear(r);
}

static void new_db(const char *db) {
    PGconn *c = admin("postgres");
    char sql[256];
    snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS %s", db);
    admin_exec(c, sql);
    snprintf(sql, sizeof sql, "CREATE DATABASE %s OWNER " ROLE, db);
    admin_exec(c, sql);
    PQfinish(c);
}

/* The native store (libpq backend) on the same database, as the admin. */
static pst_store *native(const char *db, const char *owner, bool read_only) {
    char url[512];
    snprintf(url, sizeof url, "postgresql:///%s?host=%s&port=%d&user=peri", db, sockdir, port);
    pst_error err;
    pst_store *s = pst_open_ex(
        url, &(pst_open_options){.owner_machine_id = owner, .read_only = read_only}, &err);
    if (!s) fail_msg("native open: %s", err.message);
    return s;
}

static int setup(void **state) {
    (void)state;
    sockdir = getenv("PERI_TEST_PG_SOCKDIR");
    const char *p = getenv("PERI_TEST_PG_PORT");
    if (!sockdir || !p) {
        fprintf(stderr, "test_remote: run it through tests/store/pg_cluster.sh (PERI_PG_TCP=1)\n");
        return -1;
    }
    port = atoi(p);
    PGconn *c = admin("postgres");
    admin_exec(c, "CREATE ROLE " ROLE " LOGIN PASSWORD '" PASSWORD "'");
    PQfinish(c);
    return 0;
}

/* ---- tests ------------------------------------------------------------------------- */

#define RUN(t, call)                                                                               \
    do {                                                                                           \
        pst_error e_;                                                                              \
        s = (slot){0};                                                                             \
        pst_status st_ = (call);                                                                   \
        if (st_ != PST_OK) fail_msg("%s: %s", #call, e_.message);                                  \
        wait_for((t), &s);                                                                         \
    } while (0)
#define E (&e_)

static void expect_ok(slot *s) {
    if (s->res.status != PST_OK) fail_msg("%s", s->res.error.message);
}

static void remote_and_native_read_the_same(void **state) {
    (void)state;
    new_db("rs_same");
    tports t;
    tports_init(&t);
    pst_remote *r = open_remote(&t, "rs_same", MACHINE_A, PST_OK);
    slot s;
    char ws[PST_ID_LEN];
    RUN(&t, pst_remote_workspace_ensure(r, MACHINE_A, "/work/a", take, &s, E));
    expect_ok(&s);
    snprintf(ws, sizeof ws, "%s", s.res.id);
    char expect_ws[PST_ID_LEN];
    assert_true(pst_workspace_id(MACHINE_A, "/work/a", expect_ws));
    assert_string_equal(ws, expect_ws);
    RUN(&t, pst_remote_thread_create(
                r, &(pst_thread_new){.workspace_id = ws, .title = "t1", .meta = "{\"k\": [1, 2]}"},
                take, &s, E));
    expect_ok(&s);
    char tid[PST_ID_LEN];
    snprintf(tid, sizeof tid, "%s", s.res.thread.id);
    assert_string_equal(s.res.thread.cwd, "/work/a");
    assert_string_equal(s.res.thread.machine_id, MACHINE_A);
    pst_remote_result_clear(&s.res);
    pst_message_in msgs[] = {{"user", "{\"text\":\"hi\"}", NULL},
                             {"assistant", "[1,  2]", "{\"m\":true}"},
                             {"tool", "\"x\\u00e9\"", NULL}};
    RUN(&t, pst_remote_messages_append(r, tid, msgs, 3, take, &s, E));
    expect_ok(&s);
    assert_int_equal(s.res.value, 1);
    RUN(&t, pst_remote_messages_append(r, tid, msgs, 2, take, &s, E));
    expect_ok(&s);
    assert_int_equal(s.res.value, 4);
    RUN(&t, pst_remote_thread_rename(r, tid, "renamed", take, &s, E));
    expect_ok(&s);
    RUN(&t, pst_remote_thread_set_model(r, tid, "m-1", take, &s, E));
    expect_ok(&s);

    /* the native store reads what the remote client wrote */
    pst_store *n = native("rs_same", MACHINE_A, false);
    pst_thread nt;
    pst_error err;
    assert_int_equal(pst_thread_get(n, tid, &nt, &err), PST_OK);
    RUN(&t, pst_remote_thread_get(r, tid, take, &s, E));
    expect_ok(&s);
    pst_thread *rt = &s.res.thread;
    assert_string_equal(nt.id, rt->id);
    assert_string_equal(nt.workspace_id, rt->workspace_id);
    assert_string_equal(nt.title, "renamed");
    assert_string_equal(rt->title, "renamed");
    assert_string_equal(nt.model, rt->model);
    assert_string_equal(nt.meta, "{\"k\": [1, 2]}");
    assert_string_equal(rt->meta, nt.meta);
    assert_int_equal(nt.message_count, 5);
    assert_int_equal(rt->message_count, 5);
    assert_int_equal(nt.updated_at, rt->updated_at);
    assert_int_equal(nt.created_at, rt->created_at);
    pst_thread_clear(&nt);
    pst_remote_result_clear(&s.res);
    pst_message_list nl;
    assert_int_equal(pst_messages_load(n, tid, &nl, &err), PST_OK);
    RUN(&t, pst_remote_messages_load(r, tid, take, &s, E));
    expect_ok(&s);
    assert_int_equal(nl.count, 5);
    assert_int_equal(s.res.messages.count, 5);
    for (size_t i = 0; i < 5; i++) {
        assert_int_equal(nl.items[i].seq, (int64_t)i + 1);
        assert_int_equal(s.res.messages.items[i].seq, (int64_t)i + 1);
        assert_string_equal(nl.items[i].role, s.res.messages.items[i].role);
        assert_string_equal(nl.items[i].content, s.res.messages.items[i].content);
        assert_string_equal(nl.items[i].content, msgs[i % 3].content); /* verbatim */
        assert_int_equal(nl.items[i].created_at, s.res.messages.items[i].created_at);
        if (nl.items[i].meta)
            assert_string_equal(nl.items[i].meta, s.res.messages.items[i].meta);
        else
            assert_null(s.res.messages.items[i].meta);
    }
    pst_message_list_clear(&nl);
    pst_remote_result_clear(&s.res);

    /* the other way: the native store writes, the remote client reads */
    pst_thread made;
    assert_int_equal(
        pst_thread_create(n, &(pst_thread_new){.workspace_id = ws, .title = "nat"}, &made, &err),
        PST_OK);
    int64_t first = 0;
    assert_int_equal(pst_messages_append(n, made.id, msgs, 3, &first, &err), PST_OK);
    RUN(&t, pst_remote_messages_count(r, made.id, take, &s, E));
    expect_ok(&s);
    assert_int_equal(s.res.value, 3);
    /* paging: one thread per page, the native cursor works remotely and back */
    pst_thread_page np;
    assert_int_equal(pst_thread_list(n, &(pst_list_query){.limit = 1}, &np, &err), PST_OK);
    RUN(&t, pst_remote_thread_list(r, &(pst_list_query){.limit = 1}, take, &s, E));
    expect_ok(&s);
    assert_int_equal(s.res.page.count, 1);
    assert_string_equal(s.res.page.items[0].id, np.items[0].id);
    assert_non_null(s.res.page.next_cursor);
    assert_string_equal(s.res.page.next_cursor, np.next_cursor);
    char cur[64];
    snprintf(cur, sizeof cur, "%s", np.next_cursor);
    pst_remote_result_clear(&s.res);
    pst_thread_page_clear(&np);
    RUN(&t, pst_remote_thread_list(r, &(pst_list_query){.limit = 1, .cursor = cur}, take, &s, E));
    expect_ok(&s);
    assert_int_equal(s.res.page.count, 1);
    assert_null(s.res.page.next_cursor);
    pst_remote_result_clear(&s.res);
    assert_int_equal(pst_thread_list(n, &(pst_list_query){.limit = 1, .cursor = cur}, &np, &err),
                     PST_OK);
    assert_int_equal(np.count, 1);
    pst_thread_page_clear(&np);

    /* delete through the remote client: gone for the native store too */
    RUN(&t, pst_remote_thread_delete(r, made.id, take, &s, E));
    expect_ok(&s);
    assert_int_equal(pst_thread_get(n, made.id, NULL, &err), PST_ERR_NOT_FOUND);
    RUN(&t, pst_remote_thread_get(r, made.id, take, &s, E));
    assert_int_equal(s.res.status, PST_ERR_NOT_FOUND);
    assert_string_equal(s.res.error.message, err.message);
    pst_thread_clear(&made);
    pst_close(n);
    close_remote(&t, r);
}

/* The same refusal, status and words, from both clients. */
static void same_refusal(slot *s, pst_status st, const pst_error *e) {
    assert_int_equal(s->res.status, st);
    assert_int_equal(e->status, st);
    assert_string_equal(s->res.error.message, e->message);
    pst_remote_result_clear(&s->res);
}

static void ownership_refusals_are_the_native_ones(void **state) {
    (void)state;
    new_db("rs_own");
    tports t;
    tports_init(&t);
    pst_remote *a = open_remote(&t, "rs_own", MACHINE_A, PST_OK);
    pst_remote *b = open_remote(&t, "rs_own", MACHINE_B, PST_OK);
    pst_remote *ro = open_remote(&t, "rs_own", NULL, PST_OK);
    slot s;
    char ws[PST_ID_LEN], tid[PST_ID_LEN];
    RUN(&t, pst_remote_workspace_ensure(a, MACHINE_A, "/w", take, &s, E));
    expect_ok(&s);
    snprintf(ws, sizeof ws, "%s", s.res.id);
    RUN(&t, pst_remote_thread_create(a, &(pst_thread_new){.workspace_id = ws}, take, &s, E));
    expect_ok(&s);
    snprintf(tid, sizeof tid, "%s", s.res.thread.id);
    pst_remote_result_clear(&s.res);
    /* B's own workspace and thread beside A's */
    RUN(&t, pst_remote_workspace_ensure(b, MACHINE_B, "/w", take, &s, E));
    expect_ok(&s);
    assert_string_not_equal(s.res.id, ws);
    pst_store *nb = native("rs_own", MACHINE_B, false);
    pst_store *nro = native("rs_own", NULL, true);
    pst_error e;
    pst_message_in m = {"user", "{}", NULL};

    RUN(&t, pst_remote_thread_rename(b, tid, "x", take, &s, E));
    same_refusal(&s, PST_ERR_FOREIGN, (pst_thread_rename(nb, tid, "x", &e), &e));
    RUN(&t, pst_remote_messages_append(b, tid, &m, 1, take, &s, E));
    same_refusal(&s, PST_ERR_FOREIGN, (pst_messages_append(nb, tid, &m, 1, NULL, &e), &e));
    RUN(&t, pst_remote_thread_delete(b, tid, take, &s, E));
    same_refusal(&s, PST_ERR_FOREIGN, (pst_thread_delete(nb, tid, &e), &e));
    RUN(&t, pst_remote_thread_set_archived(b, tid, true, take, &s, E));
    same_refusal(&s, PST_ERR_FOREIGN, (pst_thread_set_archived(nb, tid, true, &e), &e));
    RUN(&t, pst_remote_thread_create(b, &(pst_thread_new){.workspace_id = ws}, take, &s, E));
    same_refusal(&s, PST_ERR_FOREIGN,
                 (pst_thread_create(nb, &(pst_thread_new){.workspace_id = ws}, NULL, &e), &e));
    /* a workspace of A that does not exist yet: B may not create it */
    char out[PST_ID_LEN];
    RUN(&t, pst_remote_workspace_ensure(b, MACHINE_A, "/new", take, &s, E));
    same_refusal(&s, PST_ERR_FOREIGN, (pst_workspace_ensure(nb, MACHINE_A, "/new", out, &e), &e));
    /* ... but an existing one is found (a read) */
    RUN(&t, pst_remote_workspace_ensure(b, MACHINE_A, "/w", take, &s, E));
    expect_ok(&s);
    assert_string_equal(s.res.id, ws);
    /* a missing session: NOT_FOUND, same words */
    const char *ghost = "0190a000-0000-7000-8000-0000000000ff";
    RUN(&t, pst_remote_thread_rename(b, ghost, "x", take, &s, E));
    same_refusal(&s, PST_ERR_NOT_FOUND, (pst_thread_rename(nb, ghost, "x", &e), &e));
    RUN(&t, pst_remote_messages_append(b, ghost, &m, 1, take, &s, E));
    same_refusal(&s, PST_ERR_NOT_FOUND, (pst_messages_append(nb, ghost, &m, 1, NULL, &e), &e));
    /* bad JSON: the same message naming the message */
    pst_message_in bad[] = {{"user", "{}", NULL}, {"user", "{nope", NULL}};
    RUN(&t, pst_remote_messages_append(a, tid, bad, 2, take, &s, E));
    pst_store *na = native("rs_own", MACHINE_A, false);
    same_refusal(&s, PST_ERR_ARG, (pst_messages_append(na, tid, bad, 2, NULL, &e), &e));
    int64_t cnt = -1;
    assert_int_equal(pst_messages_count(na, tid, &cnt, &e), PST_OK);
    assert_int_equal(cnt, 0); /* all or nothing */

    /* no machine identity: every write refused at once, with the native words */
    pst_error re;
    assert_int_equal(pst_remote_thread_rename(ro, tid, "x", take, &s, &re), PST_ERR_FOREIGN);
    assert_int_equal(pst_thread_rename(nro, tid, "x", &e), PST_ERR_FOREIGN);
    assert_string_equal(re.message, e.message);
    assert_int_equal(pst_remote_messages_append(ro, tid, &m, 1, take, &s, &re), PST_ERR_FOREIGN);
    assert_int_equal(pst_remote_machine_ensure(ro, MACHINE_A, NULL, take, &s, &re),
                     PST_ERR_FOREIGN);
    assert_int_equal(pst_machine_ensure(nro, MACHINE_A, NULL, &e), PST_ERR_FOREIGN);
    assert_string_equal(re.message, e.message);
    assert_int_equal(pst_remote_machine_ensure(b, MACHINE_A, NULL, take, &s, &re), PST_ERR_FOREIGN);
    assert_int_equal(pst_machine_ensure(nb, MACHINE_A, NULL, &e), PST_ERR_FOREIGN);
    assert_string_equal(re.message, e.message);
    /* ... reads are not restricted */
    RUN(&t, pst_remote_thread_get(ro, tid, take, &s, E));
    expect_ok(&s);
    assert_string_equal(s.res.thread.machine_id, MACHINE_A);
    pst_remote_result_clear(&s.res);
    RUN(&t,
        pst_remote_thread_list(
            ro, &(pst_list_query){.machine_id = MACHINE_A, .include_empty = true}, take, &s, E));
    expect_ok(&s);
    assert_int_equal(s.res.page.count, 1);
    pst_remote_result_clear(&s.res);

    /* two machine ids side by side: each appends to its own thread, interleaved */
    RUN(&t, pst_remote_workspace_ensure(b, MACHINE_B, "/w", take, &s, E));
    char wsb[PST_ID_LEN];
    snprintf(wsb, sizeof wsb, "%s", s.res.id);
    RUN(&t, pst_remote_thread_create(b, &(pst_thread_new){.workspace_id = wsb}, take, &s, E));
    expect_ok(&s);
    char tidb[PST_ID_LEN];
    snprintf(tidb, sizeof tidb, "%s", s.res.thread.id);
    pst_remote_result_clear(&s.res);
    for (int i = 0; i < 10; i++) {
        slot sa = {0}, sb = {0};
        pst_error ea, eb;
        assert_int_equal(pst_remote_messages_append(a, tid, &m, 1, take, &sa, &ea), PST_OK);
        assert_int_equal(pst_remote_messages_append(b, tidb, &m, 1, take, &sb, &eb), PST_OK);
        wait_for(&t, &sa);
        wait_for(&t, &sb);
        assert_int_equal(sa.res.value, i + 1);
        assert_int_equal(sb.res.value, i + 1);
    }
    RUN(&t, pst_remote_thread_list(ro, &(pst_list_query){.machine_id = MACHINE_B}, take, &s, E));
    expect_ok(&s);
    assert_int_equal(s.res.page.count, 1);
    assert_string_equal(s.res.page.items[0].id, tidb);
    assert_int_equal(s.res.page.items[0].message_count, 10);
    pst_remote_result_clear(&s.res);
    pst_close(na);
    pst_close(nb);
    pst_close(nro);
    close_remote(&t, ro);
    close_remote(&t, b);
    close_remote(&t, a);
}

static void killed_mid_batch_is_conn_and_nothing_partial(void **state) {
    (void)state;
    new_db("rs_kill");
    tports t;
    tports_init(&t);
    pst_remote *r = open_remote(&t, "rs_kill", MACHINE_A, PST_OK);
    slot s;
    RUN(&t, pst_remote_workspace_ensure(r, MACHINE_A, "/k", take, &s, E));
    char ws[PST_ID_LEN];
    snprintf(ws, sizeof ws, "%s", s.res.id);
    RUN(&t, pst_remote_thread_create(r, &(pst_thread_new){.workspace_id = ws}, take, &s, E));
    char tid[PST_ID_LEN];
    snprintf(tid, sizeof tid, "%s", s.res.thread.id);
    pst_remote_result_clear(&s.res);
    /* the admin holds the thread's row lock: the batch's reserve UPDATE waits on it */
    PGconn *adm = admin("rs_kill");
    admin_exec(adm, "BEGIN");
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT 1 FROM threads WHERE id = '%s' FOR UPDATE", tid);
    admin_exec(adm, sql);
    pst_message_in m[4] = {
        {"user", "{}", NULL}, {"assistant", "{}", NULL}, {"tool", "1", NULL}, {"tool", "2", NULL}};
    pst_error e;
    s = (slot){0};
    assert_int_equal(pst_remote_messages_append(r, tid, m, 4, take, &s, &e), PST_OK);
    /* wait until the remote backend is blocked on the lock, then kill it */
    PGconn *killer = admin("postgres");
    for (int i = 0; i < 200; i++) {
        PGresult *res =
            PQexec(killer, "SELECT count(*) FROM pg_stat_activity WHERE usename = '" ROLE
                           "' AND wait_event_type = 'Lock'");
        int n = atoi(PQgetvalue(res, 0, 0));
        PQclear(res);
        if (n > 0) break;
        usleep(20000);
    }
    admin_exec(killer,
               "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '" ROLE
               "' AND wait_event_type = 'Lock'");
    admin_exec(adm, "ROLLBACK");
    wait_for(&t, &s);
    assert_int_equal(s.res.status, PST_ERR_CONN);
    assert_non_null(strstr(s.res.error.message, "connection lost"));
    pst_remote_result_clear(&s.res);
    /* nothing of the batch is there */
    pst_store *n = native("rs_kill", NULL, true);
    int64_t cnt = -1;
    assert_int_equal(pst_messages_count(n, tid, &cnt, &e), PST_OK);
    assert_int_equal(cnt, 0);
    pst_message_list l;
    assert_int_equal(pst_messages_load(n, tid, &l, &e), PST_OK);
    assert_int_equal(l.count, 0);
    pst_message_list_clear(&l);
    /* the lost stream settles; the next operation opens a new one and works */
    while (!pst_remote_settled(r))
        pump(&t);
    RUN(&t, pst_remote_messages_append(r, tid, m, 4, take, &s, E));
    expect_ok(&s);
    assert_int_equal(s.res.value, 1);
    assert_int_equal(pst_messages_count(n, tid, &cnt, &e), PST_OK);
    assert_int_equal(cnt, 4);
    pst_close(n);
    PQfinish(killer);
    PQfinish(adm);
    close_remote(&t, r);
}

static void newer_schema_is_refused_as_natively(void **state) {
    (void)state;
    new_db("rs_newer");
    tports t;
    tports_init(&t);
    pst_remote *r = open_remote(&t, "rs_newer", MACHINE_A, PST_OK); /* creates v1 */
    close_remote(&t, r);
    PGconn *c = admin("rs_newer");
    admin_exec(c, "UPDATE schema_version SET version = 99");
    PQfinish(c);
    char url[512];
    snprintf(url, sizeof url, "postgresql:///rs_newer?host=%s&port=%d&user=peri", sockdir, port);
    pst_error e;
    assert_null(pst_open_ex(url, NULL, &e));
    assert_int_equal(e.status, PST_ERR_SCHEMA);
    char loc[256];
    snprintf(loc, sizeof loc, "postgresql://" ROLE "@127.0.0.1:%d/rs_newer", port);
    slot s = {0};
    r = open_at(&t, loc, MACHINE_A, &s);
    assert_int_equal(s.res.status, PST_ERR_SCHEMA);
    assert_non_null(strstr(s.res.error.message, "newer than this program's"));
    /* not open: operations are refused at once */
    pst_error oe;
    assert_int_equal(pst_remote_thread_get(r, "x", take, &s, &oe), PST_ERR_CONN);
    close_remote(&t, r);
    /* libpq's query form (as the CLI writes PG* variables into the URL) reaches the same
     * server: the host, port, user and database from the query, %-escapes decoded */
    snprintf(loc, sizeof loc,
             "postgresql:///rs%%5Fnewer?host=127.0.0.1&port=%d&user=" ROLE
             "&application_name=peri-t&connect_timeout=5&sslmode=disable",
             port);
    tports_init(&t);
    pst_remote_result_clear(&s.res);
    memset(&s, 0, sizeof s);
    r = open_at(&t, loc, MACHINE_A, &s);
    assert_int_equal(s.res.status, PST_ERR_SCHEMA);
    close_remote(&t, r);
}

static void locators_the_port_cannot_serve(void **state) {
    (void)state;
    tports t;
    tports_init(&t);
    slot s = {0};
    pst_error e;
    const char *bad[] = {"/home/u/.peri/peri.db",
                         ":memory:",
                         "postgresql://u:secret@127.0.0.1/db",
                         "postgresql://127.0.0.1/db",
                         "postgresql://u@127.0.0.1:0/db",
                         "postgresql://u@127.0.0.1:99999/db",
                         "postgresql://u@127.0.0.1/db?sslmode=require",
                         "postgresql://u@127.0.0.1/db?sslmode=allow",
                         "postgresql://u@127.0.0.1/db?host=/tmp",
                         "postgresql:///db?host=%2Ftmp&user=u",
                         "postgresql://u@127.0.0.1/db?password=x",
                         "postgresql://u@127.0.0.1/db?passfile=/home/u/.pgpass",
                         "postgresql://u@127.0.0.1/db?bogus=1",
                         "postgresql://u@127.0.0.1/db?sslrootcert=/x",
                         "postgresql://u@127.0.0.1/db?user=%zz",
                         "postgresql://u@127.0.0.1/db?sslmode",
                         "postgresql://u@a,b/db",
                         "postgresql:///db?user=u",
                         "postgresql://@127.0.0.1/db"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_null(pst_remote_open(
            &(pst_remote_options){
                .ports = &t.p, .locator = bad[i], .machine_id = MACHINE_A, .random = rnd},
            take, &s, &e));
        assert_int_equal(e.status, PST_ERR_ARG);
    }
    assert_null(pst_remote_open(
        &(pst_remote_options){.ports = &t.p, .locator = bad[6], .random = rnd}, take, &s, &e));
    assert_non_null(strstr(e.message, "cannot upgrade an open stream to TLS"));
    assert_null(pst_remote_open(
        &(pst_remote_options){.ports = &t.p, .locator = bad[0], .random = rnd}, take, &s, &e));
    assert_non_null(strstr(e.message, "a local store cannot be reached"));
    assert_false(s.done);
}

/* A server that answers the startup with garbage: a typed error, no crash. */
static void hostile_server_bytes(void **state) {
    (void)state;
#define ANSWER(x)                                                                                  \
    { x, sizeof(x) - 1 }
    static const struct {
        const char *b;
        size_t n;
    } answers[] = {
        ANSWER("garbage that is not a protocol message at all"),
        ANSWER("R\x00\x00\x00\x0c\x00\x00\x00\x05xxxx"), /* MD5: refused */
        ANSWER("R\xff\xff\xff\xff"),                     /* absurd length */
        ANSWER("Z\x00\x00\x00\x05I"),                    /* ready before authentication */
        ANSWER("E\x00\x00\x00\x13SFATAL\x00"
               "C28P01\x00\x00"), /* an error without a message */
    };
    enum { NFIXED = sizeof answers / sizeof answers[0], NRANDOM = 40 };
    for (size_t i = 0; i < NFIXED + NRANDOM; i++) {
        /* after the fixed answers: random bytes, half of them behind a plausible 'R' */
        unsigned char rb[600];
        size_t rn = 0;
        if (i >= NFIXED) {
            assert_int_equal(getrandom(rb, sizeof rb, 0), (ssize_t)sizeof rb);
            rn = 1 + rb[0] % (sizeof rb - 1);
            if (i % 2) memcpy(rb, "R\x00\x00\x00\x08\x00\x00\x00", rn < 8 ? rn : 8);
        }
        const void *ans = i < NFIXED ? (const void *)answers[i].b : rb;
        size_t alen = i < NFIXED ? answers[i].n : rn;
        int ls = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET};
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        assert_int_equal(bind(ls, (struct sockaddr *)&a, sizeof a), 0);
        assert_int_equal(listen(ls, 1), 0);
        socklen_t al = sizeof a;
        getsockname(ls, (struct sockaddr *)&a, &al);
        char loc[128];
        snprintf(loc, sizeof loc, "postgresql://u@127.0.0.1:%u/db", (unsigned)ntohs(a.sin_port));
        tports t;
        tports_init(&t);
        slot s = {0};
        pst_error e;
        pst_remote *r = pst_remote_open(
            &(pst_remote_options){.ports = &t.p, .locator = loc, .password = "p", .random = rnd},
            take, &s, &e);
        assert_non_null(r);
        t.stores[0] = r;
        pump(&t); /* OPENED: the startup message is written */
        int c = accept(ls, NULL, NULL);
        assert_true(c >= 0);
        char buf[512];
        assert_true(recv(c, buf, sizeof buf, 0) > 0);
        assert_int_equal(send(c, ans, alen, MSG_NOSIGNAL), (ssize_t)alen);
        shutdown(c, SHUT_WR);
        wait_for(&t, &s);
        assert_int_equal(s.res.status, PST_ERR_CONN);
        close_remote(&t, r);
        close(c);
        close(ls);
    }
}

/* A close fails what is pending and settles the stream; a port timeout stays a timeout. */
static void close_settles_and_timeout_is_a_timeout(void **state) {
    (void)state;
    new_db("rs_close");
    tports t;
    tports_init(&t);
    pst_remote *r = open_remote(&t, "rs_close", MACHINE_A, PST_OK);
    slot s = {0};
    pst_error e;
    assert_int_equal(pst_remote_thread_get(r, "0190a000-0000-7000-8000-000000000001", take, &s, &e),
                     PST_OK);
    assert_false(s.done); /* never from the call that started it */
    pst_remote_close(r);
    assert_true(s.done);
    assert_int_equal(s.res.status, PST_ERR_CONN);
    assert_non_null(strstr(s.res.error.message, "closed"));
    assert_false(pst_remote_settled(r)); /* the port has not reported the stream settled */
    assert_int_equal(pst_remote_thread_get(r, "x", take, &s, &e), PST_ERR_CONN);
    close_remote(&t, r);

    tports_init(&t);
    t.fail_open = PN_E_TIMEOUT;
    char loc[256];
    snprintf(loc, sizeof loc, "postgresql://" ROLE "@127.0.0.1:%d/rs_close", port);
    s = (slot){0};
    r = pst_remote_open(&(pst_remote_options){.ports = &t.p,
                                              .locator = loc,
                                              .password = PASSWORD,
                                              .machine_id = MACHINE_A,
                                              .random = rnd},
                        take, &s, &e);
    assert_non_null(r);
    t.stores[0] = r;
    wait_for(&t, &s);
    assert_int_equal(s.res.status, PST_ERR_CONN);
    assert_non_null(strstr(s.res.error.message, "timed out"));
    assert_null(strstr(s.res.error.message, "closed"));
    close_remote(&t, r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(remote_and_native_read_the_same),
        cmocka_unit_test(ownership_refusals_are_the_native_ones),
        cmocka_unit_test(killed_mid_batch_is_conn_and_nothing_partial),
        cmocka_unit_test(newer_schema_is_refused_as_natively),
        cmocka_unit_test(locators_the_port_cannot_serve),
        cmocka_unit_test(hostile_server_bytes),
        cmocka_unit_test(close_settles_and_timeout_is_a_timeout),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
