/*
 * remote_conn.c — one PostgreSQL connection over the host's ports (see remote_int.h): the
 * locator (sslmode), the stream and its upgrade to TLS after SSLRequest (the port's
 * starttls), the wire codec's startup and SCRAM, and the pipelined queue of batches. Owns: the
 * stream handle (until its PN_EV_CLOSED), the codec, the password copy (wiped), every queued batch
 * and its copied statements and results.
 *
 * Invariants: batches complete in the order they were queued, each with one callback;
 * `sent` batches are on the wire (answered by one ReadyForQuery each), the others wait
 * for the session; after a loss nothing is resent. No global state, no clock, no env.
 */
#include "remote_int.h"
#include "pgwire.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The most result bytes one batch keeps: a hostile or runaway server cannot make the
 * client hold an unbounded answer (the store's largest reads are one thread's history). */
#define MAX_RESULT ((size_t)256 << 20)

typedef enum rstate {
    RS_IDLE,    /* no stream (new, or after a loss): the next submit opens one */
    RS_OPENING, /* open called, waiting for PN_EV_OPENED */
    RS_STARTUP, /* stream up, startup / authentication running */
    RS_READY,   /* session up */
    RS_DOWN,    /* lost: the stream is closing; queued batches have failed */
    RS_CLOSED,  /* pst__rconn_close: nothing more is accepted */
} rstate;

typedef struct rbatch {
    struct rbatch *next;
    bool simple;
    int nstmt;
    char **sql;     /* nstmt texts (simple: 1) */
    int *nparams;   /* per statement */
    char ***params; /* per statement: nparams values (NULL = SQL NULL) */
    pst__rconn_done done;
    void *ud;
    pst__rout out;
    int cap;      /* out.res capacity */
    size_t bytes; /* result bytes kept so far, bounded by MAX_RESULT */
    int cur;      /* the statement whose answer is being read */
} rbatch;

struct pst__rconn {
    const pn_ports *ports;
    pst__rtarget t;
    char *password;
    bool (*random)(void *ctx, void *buf, size_t n);
    void *random_ctx;
    void *ud;
    rstate state;
    pn_handle h;    /* 0: none */
    bool stream_up; /* a handle exists that has not settled */
    bool closing;   /* close was called on it */
    pst__pgw *pgw;
    rbatch *head, *tail; /* queue; the first `nsent` are on the wire */
    int nsent;
};

/* ---------------------------------------------------------------- locator */

/* Copies s[0..n) into dst, %XX decoded (a URL component); false when empty, too long
 * or badly escaped. */
static bool copy_part(char *dst, size_t cap, const char *s, size_t n) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '%') {
            int v = 0;
            for (int j = 1; j <= 2; j++) {
                char h = i + (size_t)j < n ? s[i + (size_t)j] : '\0';
                int d = h >= '0' && h <= '9'   ? h - '0'
                        : h >= 'a' && h <= 'f' ? h - 'a' + 10
                        : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                               : -1;
                if (d < 0) return false;
                v = v * 16 + d;
            }
            if (v == 0) return false;
            c = (char)v;
            i += 2;
        }
        if (k + 1 >= cap) return false;
        dst[k++] = c;
    }
    dst[k] = '\0';
    return k > 0;
}

static bool parse_port(const char *d, size_t n, uint16_t *out) {
    unsigned long v = 0;
    if (n == 0) return false;
    for (size_t i = 0; i < n; i++) {
        if (d[i] < '0' || d[i] > '9' || (v = v * 10 + (unsigned long)(d[i] - '0')) > 65535)
            return false;
    }
    if (v == 0) return false;
    *out = (uint16_t)v;
    return true;
}

/* One key=value of the locator's query (libpq's keywords this client honours). */
static pst_status query_option(pst__rtarget *t, const char *o, size_t n, pst_error *err) {
    const char *eq = memchr(o, '=', n);
    size_t kn = eq ? (size_t)(eq - o) : n;
    const char *v = eq ? eq + 1 : o + n;
    size_t vn = (size_t)(o + n - v);
    char val[256];
#define KEY(k) (kn == sizeof k - 1 && !strncmp(o, k, kn))
    if (!eq || (vn && !copy_part(val, sizeof val, v, vn)))
        return pst__fail(err, PST_ERR_ARG, 0, "bad store locator option: %.*s",
                         (int)(n > 40 ? 40 : n), o);
    if (!vn) val[0] = '\0';
    if (KEY("sslmode")) {
        static const struct {
            const char *name;
            pst__rssl mode;
        } modes[] = {{"disable", PST_RSSL_DISABLE},     {"prefer", PST_RSSL_PREFER},
                     {"require", PST_RSSL_REQUIRE},     {"verify-ca", PST_RSSL_REQUIRE},
                     {"verify-full", PST_RSSL_REQUIRE}, {"direct", PST_RSSL_DIRECT}};
        for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++)
            if (!strcmp(val, modes[i].name)) {
                t->ssl = modes[i].mode;
                return PST_OK;
            }
        return pst__fail(err, PST_ERR_ARG, 0,
                         "sslmode=%.40s: not a mode of this client (disable, prefer, require, "
                         "verify-ca, verify-full, direct)",
                         val);
    }
    if (KEY("host") || KEY("hostaddr")) {
        if (val[0] == '/' || val[0] == '@')
            return pst__fail(err, PST_ERR_ARG, 0,
                             "host=%.100s is a Unix-domain socket: the store is reached only "
                             "through the host's network port (give a TCP host and port)",
                             val);
        if (strchr(val, ',') || strchr(val, '['))
            return pst__fail(err, PST_ERR_ARG, 0, "host=%.100s: one host name or IPv4 address only",
                             val);
        if (!val[0]) return pst__fail(err, PST_ERR_ARG, 0, "the store locator's host is empty");
        snprintf(t->host, sizeof t->host, "%s", val);
        return PST_OK;
    }
    if (KEY("port")) {
        if (!parse_port(val, strlen(val), &t->port))
            return pst__fail(err, PST_ERR_ARG, 0, "bad port in the store locator");
        return PST_OK;
    }
    if (KEY("user") || KEY("dbname") || KEY("application_name")) {
        char *dst = KEY("user") ? t->user : KEY("dbname") ? t->database : t->application_name;
        size_t cap = KEY("user")     ? sizeof t->user
                     : KEY("dbname") ? sizeof t->database
                                     : sizeof t->application_name;
        size_t vn = strlen(val);
        if (vn >= cap)
            return pst__fail(err, PST_ERR_ARG, 0, "%.*s is too long in the store locator", (int)kn,
                             o);
        memcpy(dst, val, vn + 1); /* fits: checked above (snprintf here tripped gcc 12's
                                     -Wformat-truncation in debug builds) */
        return PST_OK;
    }
    if (KEY("connect_timeout")) /* the host's port bounds the connect (its own timeout) */
        return PST_OK;
    if (KEY("password") || KEY("passfile"))
        return pst__fail(err, PST_ERR_ARG, 0,
                         "the store locator holds a password: pass it as the credential instead");
#undef KEY
    return pst__fail(err, PST_ERR_ARG, 0, "unknown store locator option: %.*s",
                     (int)(kn > 40 ? 40 : kn), o);
}

pst_status pst__rtarget_parse(const char *loc, pst__rtarget *t, pst_error *err) {
    memset(t, 0, sizeof *t);
    const char *p;
    if (loc && !strncmp(loc, "postgresql://", 13))
        p = loc + 13;
    else if (loc && !strncmp(loc, "postgres://", 11))
        p = loc + 11;
    else
        return pst__fail(err, PST_ERR_ARG, 0,
                         "the remote store needs a postgresql:// locator (a local store "
                         "cannot be reached from here)");
    t->port = 5432;
    const char *end = p + strcspn(p, "/?");
    const char *at = memchr(p, '@', (size_t)(end - p));
    if (at) {
        if (memchr(p, ':', (size_t)(at - p)))
            return pst__fail(err, PST_ERR_ARG, 0,
                             "the store locator holds a password: pass it as the credential "
                             "instead");
        if (at > p && !copy_part(t->user, sizeof t->user, p, (size_t)(at - p)))
            return pst__fail(err, PST_ERR_ARG, 0, "bad user in the store locator");
    }
    const char *h = at ? at + 1 : p, *colon = memchr(h, ':', (size_t)(end - h));
    if (h < end && *h == '[') return pst__fail(err, PST_ERR_ARG, 0, "IPv6 literals: not yet");
    if (memchr(h, ',', (size_t)(end - h)))
        return pst__fail(err, PST_ERR_ARG, 0, "one host only in the store locator");
    size_t hn = (size_t)((colon ? colon : end) - h);
    if (hn && !copy_part(t->host, sizeof t->host, h, hn))
        return pst__fail(err, PST_ERR_ARG, 0, "bad host in the store locator");
    if (colon && !parse_port(colon + 1, (size_t)(end - colon - 1), &t->port))
        return pst__fail(err, PST_ERR_ARG, 0, "bad port in the store locator");
    const char *q = strchr(end, '?');
    if (*end == '/') {
        size_t n = (size_t)((q ? q : end + strlen(end)) - (end + 1));
        if (n && !copy_part(t->database, sizeof t->database, end + 1, n))
            return pst__fail(err, PST_ERR_ARG, 0, "bad database name in the store locator");
    }
    for (const char *o = q ? q + 1 : NULL; o && *o;) {
        size_t n = strcspn(o, "&");
        pst_status r = n ? query_option(t, o, n, err) : PST_OK;
        if (r != PST_OK) return r;
        o += n + (o[n] == '&');
    }
    if (!t->user[0])
        return pst__fail(err, PST_ERR_ARG, 0,
                         "the store locator names no user (postgresql://user@host/db or "
                         "?user=)");
    if (!t->host[0])
        return pst__fail(err, PST_ERR_ARG, 0,
                         "the store locator names no host: the store is reached only through "
                         "the host's network port (postgresql://user@host:port/db)");
    if (!t->database[0]) snprintf(t->database, sizeof t->database, "%s", t->user);
    return PST_OK;
}

/* ---------------------------------------------------------------- batches */

static void free_batch(rbatch *b) {
    if (!b) return;
    for (int i = 0; i < b->nstmt; i++) {
        free(b->sql ? b->sql[i] : NULL);
        if (b->params && b->params[i]) {
            for (int k = 0; k < b->nparams[i]; k++)
                free(b->params[i][k]);
            free(b->params[i]);
        }
    }
    free(b->sql);
    free(b->params);
    free(b->nparams);
    for (int i = 0; i < b->out.n; i++) {
        pst__rres *r = &b->out.res[i];
        for (size_t k = 0; k < r->nrows * (size_t)r->ncol; k++)
            free(r->cells[k]);
        free(r->cells);
    }
    free(b->out.res);
    free(b);
}

/* Completes the first batch: unlinks it, calls back, frees it. */
static void complete_head(pst__rconn *c) {
    rbatch *b = c->head;
    c->head = b->next;
    if (!c->head) c->tail = NULL;
    if (c->nsent > 0) c->nsent--;
    b->done(b->ud, &b->out);
    free_batch(b);
}

/* Fails every batch (sent or queued) with st and the message. */
static void fail_all(pst__rconn *c, pst_status st, const char *msg) {
    while (c->head) {
        rbatch *b = c->head;
        if (b->out.err.status == PST_OK || st == PST_ERR_CONN) {
            pst__fail(&b->out.err, st, 0, "%s", msg);
            b->out.failed_at = -1;
        }
        complete_head(c);
    }
    c->nsent = 0;
}

/* The statement being answered: a result slot (grown on demand). */
static pst__rres *cur_res(rbatch *b) {
    if (b->cur >= b->cap) {
        int cap = b->cap ? b->cap * 2 : 4;
        while (cap <= b->cur)
            cap *= 2;
        pst__rres *g = realloc(b->out.res, (size_t)cap * sizeof *g);
        if (!g) return NULL;
        memset(g + b->cap, 0, (size_t)(cap - b->cap) * sizeof *g);
        b->out.res = g;
        b->cap = cap;
    }
    if (b->out.n <= b->cur) b->out.n = b->cur + 1;
    return &b->out.res[b->cur];
}

static bool add_row(rbatch *b, const pst__pgw_event *ev) {
    pst__rres *r = cur_res(b);
    if (!r) return false;
    if (r->nrows == 0) r->ncol = ev->ncol;
    if (ev->ncol != r->ncol) return false;
    size_t need = (size_t)r->ncol * (sizeof(char *) + 1);
    for (int i = 0; i < r->ncol; i++)
        need += ev->col[i] ? ev->len[i] : 0;
    if (need > MAX_RESULT - b->bytes) return false;
    b->bytes += need;
    if (r->ncol > 0 && r->nrows >= SIZE_MAX / 2 / (size_t)r->ncol / sizeof(char *)) return false;
    size_t base = r->nrows * (size_t)r->ncol;
    char **g = realloc(r->cells, (base + (size_t)r->ncol) * sizeof *g + 1);
    if (!g) return false;
    r->cells = g;
    for (int i = 0; i < r->ncol; i++) {
        g[base + (size_t)i] = NULL;
        if (!ev->col[i]) continue;
        g[base + (size_t)i] = malloc(ev->len[i] + 1);
        if (!g[base + (size_t)i]) {
            for (int k = 0; k < i; k++)
                free(g[base + (size_t)k]);
            return false;
        }
        memcpy(g[base + (size_t)i], ev->col[i], ev->len[i] + 1);
    }
    r->nrows++;
    return true;
}

/* ---------------------------------------------------------------- the stream */

static void lose(pst__rconn *c, pst_status st, const char *msg);

/* A port failure in words; a timeout stays a timeout (never "closed"). */
static const char *err_word(pn_err e) {
    switch (e) {
    case PN_E_TIMEOUT: return "timed out";
    case PN_E_REFUSED: return "connection refused";
    case PN_E_RESET: return "connection reset";
    case PN_E_CLOSED: return "closed";
    case PN_E_DENIED: return "denied by the host's policy";
    case PN_E_NOT_FOUND: return "the name does not resolve";
    case PN_E_UNREACHABLE: return "unreachable";
    case PN_E_TLS: return "TLS failed (handshake, or a certificate the host does not trust)";
    default: return "port error";
    }
}

/* Sends what the codec has queued. */
static void flush(pst__rconn *c) {
    size_t n;
    const uint8_t *p;
    while (c->stream_up && c->pgw && (p = pst__pgw_output(c->pgw, &n)) != NULL && n > 0) {
        pn_err e = c->ports->write(c->ports->ctx, c->h, p, n);
        if (e != PN_OK) {
            char m[120];
            snprintf(m, sizeof m, "PostgreSQL connection lost: write failed (port error %d)",
                     (int)e);
            lose(c, PST_ERR_CONN, m);
            return;
        }
        pst__pgw_sent(c->pgw, n);
    }
}

/* Puts every waiting batch on the wire (the session is up). */
static void send_waiting(pst__rconn *c) {
    int i = 0;
    for (rbatch *b = c->head; b; b = b->next, i++) {
        if (i < c->nsent) continue;
        bool ok = true;
        if (b->simple) {
            ok = pst__pgw_query(c->pgw, b->sql[0]);
        } else {
            for (int s = 0; s < b->nstmt && ok; s++)
                ok = pst__pgw_query_params(c->pgw, b->sql[s], b->nparams[s],
                                           (const char *const *)b->params[s], NULL, false);
            ok = ok && pst__pgw_sync(c->pgw);
        }
        if (!ok) {
            lose(c, PST_ERR_CONN, "PostgreSQL connection lost: cannot queue a statement");
            return;
        }
        c->nsent++;
    }
    flush(c);
}

/* The connection is gone: every batch fails, the stream closes, nothing is resent. */
static void lose(pst__rconn *c, pst_status st, const char *msg) {
    if (c->state != RS_CLOSED) c->state = RS_DOWN;
    pst__pgw_free(c->pgw);
    c->pgw = NULL;
    if (c->stream_up && c->h && !c->closing) c->ports->close(c->ports->ctx, c->h);
    c->closing = c->stream_up;
    fail_all(c, st, msg);
}

static void on_server_error(pst__rconn *c, const pst__pgw_event *ev) {
    rbatch *b = c->head;
    if (!b || c->nsent == 0 || b->out.err.status != PST_OK) return;
    const char *state = ev->fields.sqlstate;
    pst_status st = pst__pg_sqlstate_status(state, &b->out.viol);
    pst__fail(&b->out.err, st, 0, "%s%s%s: %.200s", st == PST_ERR_CONN ? "PostgreSQL " : "",
              st == PST_ERR_CONN ? "connection lost, SQLSTATE " : "SQLSTATE ", state ? state : "?",
              ev->fields.message ? ev->fields.message : "");
    b->out.failed_at = b->cur;
}

/* Drains the codec's events. */
static void pump(pst__rconn *c) {
    pst__pgw_event ev;
    while (c->pgw) {
        pst__pgw_ev_kind k = pst__pgw_next(c->pgw, &ev);
        flush(c); /* authentication answers */
        if (!c->pgw) return;
        rbatch *b = c->nsent ? c->head : NULL;
        switch (k) {
        case PST_PGW_EV_NONE: return;
        case PST_PGW_EV_TLS: { /* the server answered SSLRequest with 'S': upgrade */
            pn_err e = c->ports->starttls(c->ports->ctx, c->h, c->t.host);
            if (e != PN_OK) {
                char m[200];
                snprintf(m, sizeof m, "cannot start TLS with PostgreSQL at %.60s:%u: %s", c->t.host,
                         (unsigned)c->t.port,
                         e == PN_E_TLS ? "the server sent data in the clear after accepting TLS"
                                       : err_word(e));
                lose(c, PST_ERR_CONN, m);
            }
            return; /* the startup follows the port's PN_EV_TLS */
        }
        case PST_PGW_EV_READY:
            if (c->state == RS_STARTUP) {
                c->state = RS_READY;
                send_waiting(c);
            } else if (b) {
                complete_head(c);
            }
            break;
        case PST_PGW_EV_ROW:
            if (b && b->out.err.status == PST_OK && !add_row(b, &ev)) {
                pst__fail(&b->out.err, PST_ERR_NOMEM, 0,
                          "out of memory reading rows (or more than 256 MiB, or a row of "
                          "another width)");
                b->out.failed_at = b->cur;
            }
            break;
        case PST_PGW_EV_COMPLETE:
        case PST_PGW_EV_EMPTY:
            if (b) {
                pst__rres *r = cur_res(b);
                if (r) r->changes = k == PST_PGW_EV_COMPLETE ? ev.rows : 0;
                b->cur++;
            }
            break;
        case PST_PGW_EV_SERVER_ERROR: on_server_error(c, &ev); break;
        case PST_PGW_EV_FAILED: {
            const pst__pgw_error *e = ev.error;
            char m[sizeof((pst_error *)0)->message];
            if (e->kind == PST_PGW_E_TLS_REFUSED)
                snprintf(m, sizeof m,
                         "PostgreSQL at %.60s:%u does not accept TLS, and the locator's sslmode "
                         "requires it",
                         c->t.host, (unsigned)c->t.port);
            else
                snprintf(m, sizeof m, "PostgreSQL connection lost (%s%s%s): %.180s",
                         pst__pgw_errkind_name(e->kind), e->sqlstate[0] ? ", SQLSTATE " : "",
                         e->sqlstate, e->message);
            lose(c, PST_ERR_CONN, m);
            return;
        }
        default: break; /* PARAM, COLUMNS, NOTICE */
        }
    }
}

static pst_status open_stream(pst__rconn *c, pst_error *err) {
    pst__pgw_config cfg = {
        .user = c->t.user,
        .database = c->t.database,
        .application_name = c->t.application_name[0] ? c->t.application_name : "peri",
        .password = c->password,
        .tls = c->t.ssl == PST_RSSL_DIRECT                         ? PST_PGW_TLS_DIRECT
               : c->t.ssl == PST_RSSL_REQUIRE                      ? PST_PGW_TLS_REQUIRE
               : c->t.ssl == PST_RSSL_PREFER && c->ports->starttls ? PST_PGW_TLS_PREFER
                                                                   : PST_PGW_TLS_OFF};
    if (!c->random(c->random_ctx, cfg.nonce_random, sizeof cfg.nonce_random))
        return pst__fail(err, PST_ERR_IO, 0, "no randomness for the SCRAM nonce");
    pst__pgw_error pe;
    c->pgw = pst__pgw_new(&cfg, &pe);
    if (!c->pgw)
        return pst__fail(err, pe.kind == PST_PGW_E_NOMEM ? PST_ERR_NOMEM : PST_ERR_ARG, 0,
                         "PostgreSQL client: %s", pst__pgw_errkind_name(pe.kind));
    pn_stream_opts so = {.tls = c->t.ssl == PST_RSSL_DIRECT, .server_name = c->t.host};
    pn_err e = c->ports->open(c->ports->ctx, c->t.host, c->t.port, &so, c->ud, &c->h);
    if (e != PN_OK) {
        pst__pgw_free(c->pgw);
        c->pgw = NULL;
        return pst__fail(err, PST_ERR_CONN, 0, "cannot open a stream to %.100s:%u: port error %d",
                         c->t.host, (unsigned)c->t.port, (int)e);
    }
    c->stream_up = true;
    c->closing = false;
    c->state = RS_OPENING;
    return PST_OK;
}

void pst__rconn_event(pst__rconn *c, const pn_event *ev) {
    if (!c || !c->stream_up || ev->handle != c->h) return;
    switch (ev->kind) {
    case PN_EV_OPENED:
        if (ev->err != PN_OK) {
            char m[200];
            snprintf(m, sizeof m, "cannot connect to PostgreSQL at %.60s:%u: %s%s%.80s", c->t.host,
                     (unsigned)c->t.port, err_word(ev->err), ev->detail ? ": " : "",
                     ev->detail ? ev->detail : "");
            lose(c, PST_ERR_CONN, m); /* the stream still settles with PN_EV_CLOSED */
            return;
        }
        if (c->state == RS_OPENING) c->state = RS_STARTUP;
        flush(c);
        break;
    case PN_EV_TLS:
        if (ev->err != PN_OK) {
            char m[200];
            snprintf(m, sizeof m, "cannot start TLS with PostgreSQL at %.60s:%u: %s%s%.80s",
                     c->t.host, (unsigned)c->t.port, err_word(ev->err), ev->detail ? ": " : "",
                     ev->detail ? ev->detail : "");
            lose(c, PST_ERR_CONN, m); /* the stream still settles with PN_EV_CLOSED */
            return;
        }
        if (c->pgw && !pst__pgw_tls_started(c->pgw)) {
            pump(c); /* the codec failed: its FAILED event says why */
            if (c->pgw) lose(c, PST_ERR_CONN, "PostgreSQL connection lost: TLS start refused");
            return;
        }
        flush(c); /* the StartupMessage, now inside TLS */
        break;
    case PN_EV_READABLE:
        while (c->pgw) {
            uint8_t buf[16384];
            size_t got = 0;
            pn_err e = c->ports->read(c->ports->ctx, c->h, buf, sizeof buf, &got);
            if (e == PN_E_AGAIN) break;
            /* the stream is settling (a readable queued before a failed TLS start, say):
             * its own PN_EV_TLS / PN_EV_CLOSED follows and says why */
            if (e == PN_E_CLOSED) break;
            if (e != PN_OK || got == 0) {
                char m[120];
                snprintf(m, sizeof m, "PostgreSQL connection lost: %s",
                         e == PN_OK ? "the server closed the stream" : err_word(e));
                lose(c, PST_ERR_CONN, m);
                break;
            }
            if (!pst__pgw_feed(c->pgw, buf, got)) {
                pump(c); /* the codec failed: its FAILED event says why */
                if (c->pgw) lose(c, PST_ERR_CONN, "PostgreSQL connection lost: bad input");
                break;
            }
            pump(c);
        }
        break;
    case PN_EV_CLOSED:
        c->stream_up = false;
        c->closing = false;
        c->h = 0;
        if (c->pgw || c->head) {
            char m[160];
            snprintf(m, sizeof m, "PostgreSQL connection lost: %s%s%.100s", err_word(ev->err),
                     ev->detail ? ": " : "", ev->detail ? ev->detail : "");
            lose(c, PST_ERR_CONN, m);
        }
        if (c->state != RS_CLOSED) c->state = RS_IDLE;
        break;
    default: break;
    }
}

/* ---------------------------------------------------------------- API */

pst__rconn *pst__rconn_new(const pn_ports *ports, const pst__rtarget *t, const char *password,
                           bool (*random)(void *ctx, void *buf, size_t n), void *random_ctx,
                           void *ud, pst_error *err) {
    if (!ports || !t || !random) {
        pst__fail(err, PST_ERR_ARG, 0, "remote store: no ports or no randomness");
        return NULL;
    }
    if (t->ssl == PST_RSSL_REQUIRE && !ports->starttls) {
        pst__fail(err, PST_ERR_ARG, 0,
                  "the host's network port cannot upgrade an open stream to TLS (PostgreSQL's "
                  "SSLRequest), and the locator's sslmode requires TLS; use sslmode=direct "
                  "(TLS from the first byte, PostgreSQL 17+) or a host that offers starttls");
        return NULL;
    }
    pst__rconn *c = calloc(1, sizeof *c);
    if (!c || (password && !(c->password = pst__strdup(password)))) {
        free(c);
        pst__fail(err, PST_ERR_NOMEM, 0, "out of memory");
        return NULL;
    }
    c->ports = ports;
    c->t = *t;
    c->random = random;
    c->random_ctx = random_ctx;
    c->ud = ud;
    return c;
}

static pst_status enqueue(pst__rconn *c, rbatch *b, pst_error *err) {
    if (c->state == RS_CLOSED) {
        free_batch(b);
        return pst__fail(err, PST_ERR_CONN, 0, "the remote store is closed");
    }
    if (c->state == RS_DOWN || (c->state == RS_IDLE && c->stream_up)) {
        free_batch(b); /* the old stream has not settled yet */
        return pst__fail(err, PST_ERR_CONN, 0, "PostgreSQL connection lost (reconnecting)");
    }
    if (c->state == RS_IDLE) {
        pst_status r = open_stream(c, err);
        if (r != PST_OK) {
            free_batch(b);
            return r;
        }
    }
    if (c->tail)
        c->tail->next = b;
    else
        c->head = b;
    c->tail = b;
    if (c->state == RS_READY) send_waiting(c);
    return PST_OK;
}

static rbatch *new_batch(int nstmt, pst__rconn_done done, void *ud) {
    rbatch *b = calloc(1, sizeof *b);
    if (!b) return NULL;
    b->nstmt = nstmt;
    b->done = done;
    b->ud = ud;
    b->out.failed_at = -1;
    b->sql = calloc((size_t)nstmt, sizeof *b->sql);
    b->nparams = calloc((size_t)nstmt, sizeof *b->nparams);
    b->params = calloc((size_t)nstmt, sizeof *b->params);
    if (!b->sql || !b->nparams || !b->params) {
        free_batch(b);
        return NULL;
    }
    return b;
}

pst_status pst__rconn_submit(pst__rconn *c, const psb_stmt *stmts, int n, pst__rconn_done done,
                             void *ud, pst_error *err) {
    if (!c || !stmts || n <= 0 || !done)
        return pst__fail(err, PST_ERR_ARG, 0, "bad batch arguments");
    rbatch *b = new_batch(n, done, ud);
    bool ok = b != NULL;
    for (int s = 0; ok && s < n; s++) {
        b->sql[s] = pst__strdup(stmts[s].sql);
        b->nparams[s] = stmts[s].nparams;
        b->params[s] = calloc((size_t)stmts[s].nparams + 1, sizeof(char *));
        ok = b->sql[s] && b->params[s];
        for (int k = 0; ok && k < stmts[s].nparams; k++) {
            const psb_val *v = &stmts[s].params[k];
            char num[24];
            if (v->kind == PSB_NULL) continue;
            if (v->kind == PSB_INT) snprintf(num, sizeof num, "%" PRId64, v->i);
            b->params[s][k] = pst__strdup(v->kind == PSB_INT ? num : v->text);
            ok = b->params[s][k] != NULL;
        }
    }
    if (!ok) {
        free_batch(b);
        return pst__fail(err, PST_ERR_NOMEM, 0, "out of memory");
    }
    return enqueue(c, b, err);
}

pst_status pst__rconn_submit_simple(pst__rconn *c, const char *sql, pst__rconn_done done, void *ud,
                                    pst_error *err) {
    if (!c || !sql || !done) return pst__fail(err, PST_ERR_ARG, 0, "bad batch arguments");
    rbatch *b = new_batch(1, done, ud);
    if (!b || !(b->sql[0] = pst__strdup(sql))) {
        free_batch(b);
        return pst__fail(err, PST_ERR_NOMEM, 0, "out of memory");
    }
    b->simple = true;
    return enqueue(c, b, err);
}

void pst__rconn_close(pst__rconn *c) {
    if (!c || c->state == RS_CLOSED) return;
    c->state = RS_CLOSED;
    if (c->pgw && c->stream_up) {
        pst__pgw_terminate(c->pgw);
        flush(c);
    }
    pst__pgw_free(c->pgw);
    c->pgw = NULL;
    fail_all(c, PST_ERR_CONN, "the remote store was closed");
    if (c->stream_up && c->h && !c->closing) c->ports->close(c->ports->ctx, c->h);
    c->closing = c->stream_up;
}

bool pst__rconn_settled(const pst__rconn *c) {
    return !c || !c->stream_up;
}

void pst__rconn_free(pst__rconn *c) {
    if (!c) return;
    while (c->head) {
        rbatch *b = c->head;
        c->head = b->next;
        free_batch(b);
    }
    pst__pgw_free(c->pgw);
    if (c->password) {
        volatile char *p = c->password;
        while (*p)
            *p++ = '\0';
        free(c->password);
    }
    free(c);
}
