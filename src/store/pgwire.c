/*
 * pgwire.c — the PostgreSQL protocol 3.0 frontend state machine behind pgwire.h: the
 * startup and authentication exchange, the simple and extended query protocols, and
 * the parsing of every backend message into typed events, without doing any I/O.
 *
 * Owns: the connection state (pst__pgw), its copies of the configuration strings (the
 * password is wiped on free), the output queue, the input buffer and the scratch arrays
 * that events point into.
 *
 * Invariants:
 *   - `in` (a pb_fifo) holds the bytes received and not yet parsed; never more than
 *     max_message + FEED_SLACK. A message is parsed only when all of it is here,
 *     and its declared length was checked against max_message first.
 *   - every read of a message body is bounded by its length (rd_* helpers); a cstring
 *     must end inside the body.
 *   - `drop` bytes at the front of `in` belong to the message the last event points into; they are
 *     dropped at the next next/feed call, so event pointers stay valid until then.
 *   - awaiting counts the ReadyForQuery messages still owed (one per simple query or
 *     Sync); the state is READY only when it is 0 and no extended message is unsynced.
 *   - once FAILED, every next() returns the same FAILED event and commands return false.
 */
#include "pgwire.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_MAX_MESSAGE (64u << 20)
#define DEFAULT_MAX_ITER    600000u
#define FEED_SLACK          (64u << 10)
#define MAX_COLUMNS         1664 /* PostgreSQL's MaxTupleAttributeNumber */
#define SASL_MAX            2048 /* a SCRAM server message longer than this is refused */
#define PROTOCOL_3_0        196608u
#define SSL_REQUEST_CODE    80877103u
#define CANCEL_REQUEST_CODE 80877102u

typedef enum state {
    ST_SSL_WAIT,      /* SSLRequest sent, one byte 'S' or 'N' expected */
    ST_TLS_HANDSHAKE, /* the caller is doing TLS */
    ST_AUTH,          /* StartupMessage sent: an authentication request expected */
    ST_SASL,          /* SASLInitialResponse sent: SASLContinue expected */
    ST_SASL_FINAL,    /* SASLResponse sent: SASLFinal expected */
    ST_STARTUP,       /* AuthenticationOk: ParameterStatus / BackendKeyData until ready */
    ST_READY,
    ST_BUSY,
    ST_FAILED,
    ST_CLOSED,
} state;

struct pst__pgw {
    state st;
    pst__pgw_tls tls;
    bool tls_on, allow_cleartext, allow_no_auth, cleartext_sent, sasl_started;
    bool secret_out; /* out holds a password message: wiped when sent or dropped */
    char *user, *database, *appname, *password; /* owned copies */
    uint8_t nonce_random[18];
    size_t max_message;
    uint32_t max_iter;
    pb_buf out; /* queued output; out_off bytes of it already sent */
    size_t out_off;
    pb_fifo in; /* received, not yet parsed */
    size_t drop;
    pst__scram scram;
    int awaiting, unsynced, ncol;
    char tx;
    uint32_t pid, key;
    pst__pgw_error err;
    /* event scratch: row values with terminators, column arrays (cols_cap entries) */
    char *scratch;
    size_t scratch_cap;
    const char **cols;
    size_t *lens;
    uint32_t *oids;
    size_t cols_cap;
};

const char *pst__pgw_errkind_name(pst__pgw_errkind k) {
    switch (k) {
    case PST_PGW_E_NONE: return "none";
    case PST_PGW_E_PROTOCOL: return "protocol";
    case PST_PGW_E_TOO_LARGE: return "too_large";
    case PST_PGW_E_AUTH_UNSUPPORTED: return "auth_unsupported";
    case PST_PGW_E_AUTH_FAILED: return "auth_failed";
    case PST_PGW_E_AUTH_SERVER: return "auth_server";
    case PST_PGW_E_NO_PASSWORD: return "no_password";
    case PST_PGW_E_TLS_REFUSED: return "tls_refused";
    case PST_PGW_E_SERVER: return "server";
    case PST_PGW_E_NOMEM: return "nomem";
    case PST_PGW_E_STATE: return "state";
    }
    return "unknown";
}

static void set_err(pst__pgw_error *e, pst__pgw_errkind k, const char *fmt, va_list ap) {
    memset(e, 0, sizeof *e);
    e->kind = k;
    vsnprintf(e->message, sizeof e->message, fmt, ap);
}

/* Empties the output queue; a password message in it is overwritten first (best effort:
 * a copy left behind by an earlier growth of the buffer is not reachable from here). */
static void out_clear(pst__pgw *c) {
    if (c->secret_out && c->out.p) pb_wipe(c->out.p, c->out.len);
    c->secret_out = false;
    pb_buf_reset(&c->out);
    c->out_off = 0;
}

/* The connection fails for good: the error is kept, queued output is discarded. */
__attribute__((format(printf, 3, 4))) static void fail(pst__pgw *c, pst__pgw_errkind k,
                                                       const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    set_err(&c->err, k, fmt, ap);
    va_end(ap);
    c->st = ST_FAILED;
    out_clear(c);
}

/* ---- output ---------------------------------------------------------------------- */

static bool put_u32(pb_buf *b, uint32_t v) {
    char x[4] = {(char)(v >> 24), (char)(v >> 16), (char)(v >> 8), (char)v};
    return pb_buf_put(b, x, 4);
}

static bool put_u16(pb_buf *b, uint16_t v) {
    char x[2] = {(char)(v >> 8), (char)v};
    return pb_buf_put(b, x, 2);
}

static bool put_cstr(pb_buf *b, const char *s) {
    return pb_buf_put(b, s, strlen(s) + 1);
}

/* A message under construction: type byte (0 for the untyped startup packets) and a
 * length placeholder; msg_end writes the length, or on any earlier failure removes the
 * partial message and fails the connection with PST_PGW_E_NOMEM. */
static size_t msg_begin(pst__pgw *c, char type, bool *ok) {
    size_t at = c->out.len;
    *ok = (!type || pb_buf_putc(&c->out, type)) && put_u32(&c->out, 0);
    return at;
}

static bool msg_end(pst__pgw *c, size_t at, char type, bool ok) {
    size_t len = c->out.len - at - (type ? 1 : 0);
    if (!ok || len > INT32_MAX) {
        c->out.len = at;
        if (c->out.p) c->out.p[at] = 0;
        if (!ok) fail(c, PST_PGW_E_NOMEM, "out of memory");
        return false;
    }
    uint8_t *p = (uint8_t *)c->out.p + at + (type ? 1 : 0);
    p[0] = (uint8_t)(len >> 24), p[1] = (uint8_t)(len >> 16), p[2] = (uint8_t)(len >> 8);
    p[3] = (uint8_t)len;
    return true;
}

static bool queue_startup(pst__pgw *c) {
    bool ok;
    size_t at = msg_begin(c, 0, &ok);
    ok = ok && put_u32(&c->out, PROTOCOL_3_0) && put_cstr(&c->out, "user") &&
         put_cstr(&c->out, c->user) && put_cstr(&c->out, "database") &&
         put_cstr(&c->out, c->database) && put_cstr(&c->out, "application_name") &&
         put_cstr(&c->out, c->appname) && put_cstr(&c->out, "client_encoding") &&
         put_cstr(&c->out, "UTF8") && pb_buf_putc(&c->out, 0);
    if (!msg_end(c, at, 0, ok)) return false;
    c->st = ST_AUTH;
    return true;
}

static bool queue_ssl_request(pst__pgw *c) {
    bool ok;
    size_t at = msg_begin(c, 0, &ok);
    ok = ok && put_u32(&c->out, SSL_REQUEST_CODE);
    if (!msg_end(c, at, 0, ok)) return false;
    c->st = ST_SSL_WAIT;
    return true;
}

const uint8_t *pst__pgw_output(const pst__pgw *c, size_t *n) {
    *n = c->out.len - c->out_off;
    return *n ? (const uint8_t *)c->out.p + c->out_off : NULL;
}

void pst__pgw_sent(pst__pgw *c, size_t n) {
    size_t left = c->out.len - c->out_off;
    c->out_off += n < left ? n : left;
    if (c->out_off == c->out.len) out_clear(c);
}

/* ---- construction ---------------------------------------------------------------- */

static char *dup_str(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

static void free_secret(char *s) {
    if (!s) return;
    pb_wipe(s, strlen(s));
    free(s);
}

pst__pgw *pst__pgw_new(const pst__pgw_config *cfg, pst__pgw_error *err) {
    memset(err, 0, sizeof *err);
    if (!cfg || !cfg->user || !*cfg->user || cfg->tls > PST_PGW_TLS_DIRECT) {
        err->kind = PST_PGW_E_STATE;
        snprintf(err->message, sizeof err->message, "a user name is required");
        return NULL;
    }
    pst__pgw *c = calloc(1, sizeof *c);
    if (!c) goto nomem;
    const char *db = cfg->database && *cfg->database ? cfg->database : cfg->user;
    c->user = dup_str(cfg->user);
    c->database = dup_str(db);
    c->appname = dup_str(cfg->application_name ? cfg->application_name : "peri");
    c->password = cfg->password ? dup_str(cfg->password) : NULL;
    if (!c->user || !c->database || !c->appname || (cfg->password && !c->password)) goto nomem;
    c->tls = cfg->tls;
    c->allow_cleartext = cfg->allow_cleartext_over_tls;
    c->allow_no_auth = cfg->allow_no_auth;
    memcpy(c->nonce_random, cfg->nonce_random, sizeof c->nonce_random);
    c->max_message = cfg->max_message ? cfg->max_message : DEFAULT_MAX_MESSAGE;
    if (c->max_message > INT32_MAX - 4) c->max_message = INT32_MAX - 4;
    c->max_iter = cfg->max_iterations ? cfg->max_iterations : DEFAULT_MAX_ITER;
    c->ncol = -1;
    c->tx = 'I';
    c->tls_on = c->tls == PST_PGW_TLS_DIRECT;
    bool plain_start = c->tls == PST_PGW_TLS_OFF || c->tls == PST_PGW_TLS_DIRECT;
    if (!(plain_start ? queue_startup(c) : queue_ssl_request(c))) goto nomem;
    return c;
nomem:
    pst__pgw_free(c);
    err->kind = PST_PGW_E_NOMEM;
    snprintf(err->message, sizeof err->message, "out of memory");
    return NULL;
}

void pst__pgw_free(pst__pgw *c) {
    if (!c) return;
    free(c->user);
    free(c->database);
    free(c->appname);
    free_secret(c->password);
    pb_wipe(&c->scram, sizeof c->scram);
    pb_wipe(c->nonce_random, sizeof c->nonce_random);
    out_clear(c); /* may hold a password message */
    pb_buf_free(&c->out);
    pb_fifo_free(&c->in);
    free(c->scratch);
    free(c->cols);
    free(c->lens);
    free(c->oids);
    free(c);
}

/* ---- input ----------------------------------------------------------------------- */

static void apply_drop(pst__pgw *c) {
    pb_fifo_consume(&c->in, c->drop);
    c->drop = 0;
}

bool pst__pgw_feed(pst__pgw *c, const void *data, size_t n) {
    if (c->st == ST_FAILED) return false;
    apply_drop(c);
    size_t bound = c->max_message + FEED_SLACK;
    if (n > bound - pb_fifo_size(&c->in)) {
        fail(c, PST_PGW_E_TOO_LARGE, "more than %zu bytes received and not parsed", bound);
        return false;
    }
    if (!pb_fifo_push(&c->in, data, n, bound)) {
        fail(c, PST_PGW_E_NOMEM, "out of memory");
        return false;
    }
    return true;
}

/* Bounded readers over one message body; each returns false past the end. */
typedef struct rd {
    const uint8_t *p;
    size_t n, at;
} rd;

static bool rd_u32(rd *r, uint32_t *v) {
    if (r->n - r->at < 4) return false;
    const uint8_t *p = r->p + r->at;
    *v = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
    r->at += 4;
    return true;
}

static bool rd_u16(rd *r, uint16_t *v) {
    if (r->n - r->at < 2) return false;
    *v = (uint16_t)(r->p[r->at] << 8 | r->p[r->at + 1]);
    r->at += 2;
    return true;
}

static bool rd_cstr(rd *r, const char **s) {
    const uint8_t *z = memchr(r->p + r->at, 0, r->n - r->at);
    if (!z) return false;
    *s = (const char *)r->p + r->at;
    r->at = (size_t)(z - r->p) + 1;
    return true;
}

static bool rd_end(const rd *r) {
    return r->at == r->n;
}

/* Grows the event arrays to n entries and the scratch to bytes. */
static bool scratch_room(pst__pgw *c, size_t n, size_t bytes) {
    if (n > c->cols_cap) {
        const char **cols = realloc(c->cols, n * sizeof *cols);
        if (cols) c->cols = cols;
        size_t *lens = realloc(c->lens, n * sizeof *lens);
        if (lens) c->lens = lens;
        uint32_t *oids = realloc(c->oids, n * sizeof *oids);
        if (oids) c->oids = oids;
        if (!cols || !lens || !oids) return false;
        c->cols_cap = n;
    }
    if (bytes > c->scratch_cap) {
        char *s = realloc(c->scratch, bytes);
        if (!s) return false;
        c->scratch = s;
        c->scratch_cap = bytes;
    }
    return true;
}

/* ErrorResponse / NoticeResponse fields; unknown field codes are skipped (the protocol
 * says so). False when a field is unterminated or the list does not end at the body's
 * end. */
static bool parse_fields(rd *r, pst__pgw_fields *f) {
    memset(f, 0, sizeof *f);
    const char *loc_severity = NULL;
    for (;;) {
        if (r->at >= r->n) return false;
        char code = (char)r->p[r->at++];
        if (!code) return rd_end(r);
        const char *v;
        if (!rd_cstr(r, &v)) return false;
        switch (code) {
        case 'S': loc_severity = v; break;
        case 'V': f->severity = v; break;
        case 'C': f->sqlstate = v; break;
        case 'M': f->message = v; break;
        case 'D': f->detail = v; break;
        case 'H': f->hint = v; break;
        case 'P': f->position = v; break;
        case 'p': f->internal_position = v; break;
        case 'q': f->internal_query = v; break;
        case 'W': f->where = v; break;
        case 's': f->schema = v; break;
        case 't': f->table = v; break;
        case 'c': f->column = v; break;
        case 'd': f->datatype = v; break;
        case 'n': f->constraint = v; break;
        case 'F': f->file = v; break;
        case 'L': f->line = v; break;
        case 'R': f->routine = v; break;
        default: break;
        }
        if (!f->severity && loc_severity) f->severity = loc_severity;
    }
}

/* A FATAL or PANIC server error (or any error before the session is ready) ends the
 * connection; its fields are copied into the typed error. */
static void fail_server(pst__pgw *c, const pst__pgw_fields *f) {
    bool auth = f->sqlstate && !strncmp(f->sqlstate, "28", 2);
    fail(c, auth ? PST_PGW_E_AUTH_FAILED : PST_PGW_E_SERVER, "%s",
         f->message ? f->message : "the server reported an error");
    snprintf(c->err.severity, sizeof c->err.severity, "%s", f->severity ? f->severity : "");
    snprintf(c->err.sqlstate, sizeof c->err.sqlstate, "%s", f->sqlstate ? f->sqlstate : "");
    snprintf(c->err.detail, sizeof c->err.detail, "%s", f->detail ? f->detail : "");
}

static bool fatal_severity(const pst__pgw_fields *f) {
    return f->severity && (!strcmp(f->severity, "FATAL") || !strcmp(f->severity, "PANIC"));
}

enum { CONTINUE = -1 }; /* a message consumed without an event for the caller */

static int ev_failed(pst__pgw *c, pst__pgw_event *ev) {
    ev->kind = PST_PGW_EV_FAILED;
    ev->error = &c->err;
    return PST_PGW_EV_FAILED;
}

/* Queues a 'p' message: [mechanism cstring, int32 length] data. */
static bool queue_password_msg(pst__pgw *c, const char *mech, const char *data, size_t n) {
    bool ok;
    size_t at = msg_begin(c, 'p', &ok);
    if (mech) ok = ok && put_cstr(&c->out, mech) && put_u32(&c->out, (uint32_t)n);
    ok = ok && pb_buf_put(&c->out, data, n);
    c->secret_out = true;
    return msg_end(c, at, 'p', ok);
}

static int on_sasl_start(pst__pgw *c, rd *r) {
    bool scram = false;
    for (;;) {
        const char *mech;
        if (!rd_cstr(r, &mech)) {
            fail(c, PST_PGW_E_PROTOCOL, "malformed AuthenticationSASL");
            return CONTINUE;
        }
        if (!*mech) break;
        if (!strcmp(mech, "SCRAM-SHA-256")) scram = true;
    }
    if (!rd_end(r) || c->st != ST_AUTH || c->sasl_started) {
        fail(c, PST_PGW_E_PROTOCOL, "unexpected AuthenticationSASL");
        return CONTINUE;
    }
    if (!scram) {
        fail(c, PST_PGW_E_AUTH_UNSUPPORTED,
             "the server offers no SCRAM-SHA-256 authentication (only SCRAM-SHA-256 is "
             "supported; SCRAM-SHA-256-PLUS needs channel binding)");
        return CONTINUE;
    }
    if (!c->password) {
        fail(c, PST_PGW_E_NO_PASSWORD, "the server asks for a password and none is configured");
        return CONTINUE;
    }
    char nonce[PB_BASE64_LEN(sizeof c->nonce_random) + 1], first[200];
    pb_base64_encode(c->nonce_random, sizeof c->nonce_random, nonce);
    /* PostgreSQL takes the user from the startup packet: the SCRAM user name is empty */
    if (!pst__scram_first(&c->scram, "", nonce, first, sizeof first)) {
        fail(c, PST_PGW_E_STATE, "bad SCRAM nonce");
        return CONTINUE;
    }
    if (!queue_password_msg(c, "SCRAM-SHA-256", first, strlen(first))) return CONTINUE;
    c->sasl_started = true;
    c->st = ST_SASL;
    return CONTINUE;
}

static int on_auth(pst__pgw *c, rd *r) {
    uint32_t code;
    if (!rd_u32(r, &code)) {
        fail(c, PST_PGW_E_PROTOCOL, "malformed authentication request");
        return CONTINUE;
    }
    const char *data = (const char *)r->p + r->at, *why = NULL;
    size_t dn = r->n - r->at;
    switch (code) {
    case 0: /* AuthenticationOk */
        if (!rd_end(r) || c->st != ST_AUTH) {
            fail(c, PST_PGW_E_AUTH_SERVER,
                 "the server ended authentication before the SCRAM exchange finished");
        } else if (c->password && !c->scram.verified && !c->cleartext_sent && !c->allow_no_auth) {
            fail(c, PST_PGW_E_AUTH_SERVER,
                 "the server accepted the login without proving that it knows the password "
                 "(no SCRAM exchange); refused");
        } else {
            c->st = ST_STARTUP;
        }
        return CONTINUE;
    case 3: /* AuthenticationCleartextPassword */
        if (!rd_end(r) || c->st != ST_AUTH || c->cleartext_sent) {
            fail(c, PST_PGW_E_PROTOCOL, "unexpected AuthenticationCleartextPassword");
        } else if (!c->password) {
            fail(c, PST_PGW_E_NO_PASSWORD, "the server asks for a password and none is configured");
        } else if (!c->allow_cleartext || !c->tls_on) {
            fail(c, PST_PGW_E_AUTH_UNSUPPORTED,
                 "the server asks for the password in clear text; refused (configure "
                 "scram-sha-256 in pg_hba.conf)");
        } else if (queue_password_msg(c, NULL, c->password, strlen(c->password) + 1)) {
            c->cleartext_sent = true;
        }
        return CONTINUE;
    case 5:
        fail(c, PST_PGW_E_AUTH_UNSUPPORTED,
             "the server asks for MD5 password authentication, which is refused (configure "
             "scram-sha-256 in pg_hba.conf)");
        return CONTINUE;
    case 10: return on_sasl_start(c, r);
    case 11: { /* AuthenticationSASLContinue: server-first-message */
        char final[400];
        if (c->st != ST_SASL || dn > SASL_MAX) {
            fail(c, PST_PGW_E_PROTOCOL, "unexpected AuthenticationSASLContinue");
        } else if (!pst__scram_final(&c->scram, data, dn, c->password, c->max_iter, final,
                                     sizeof final, &why)) {
            fail(c, PST_PGW_E_AUTH_SERVER, "SCRAM: %s", why);
        } else if (queue_password_msg(c, NULL, final, strlen(final))) {
            c->st = ST_SASL_FINAL;
        }
        pb_wipe(final, sizeof final);
        return CONTINUE;
    }
    case 12: /* AuthenticationSASLFinal: server-final-message */
        if (c->st != ST_SASL_FINAL || dn > SASL_MAX)
            fail(c, PST_PGW_E_PROTOCOL, "unexpected AuthenticationSASLFinal");
        else if (!pst__scram_verify(&c->scram, data, dn, &why))
            fail(c, PST_PGW_E_AUTH_SERVER, "SCRAM: %s", why);
        else
            c->st = ST_AUTH; /* AuthenticationOk follows */
        return CONTINUE;
    case 2:
    case 6:
    case 7:
    case 8:
    case 9:
        fail(c, PST_PGW_E_AUTH_UNSUPPORTED,
             "the server asks for Kerberos, SCM, GSSAPI or SSPI authentication (code %u), "
             "which is not supported; configure scram-sha-256",
             (unsigned)code);
        return CONTINUE;
    default:
        fail(c, PST_PGW_E_PROTOCOL, "unknown authentication request %u", (unsigned)code);
        return CONTINUE;
    }
}

/* A COLUMNS or ROW event over the scratch arrays (names or values, types, lengths). */
static int table_event(pst__pgw *c, pst__pgw_event *ev, pst__pgw_ev_kind kind, uint16_t n) {
    ev->kind = kind;
    ev->ncol = n;
    ev->col = c->cols;
    ev->type_oid = c->oids;
    ev->len = c->lens;
    return kind;
}

static int on_row_description(pst__pgw *c, rd *r, pst__pgw_event *ev) {
    uint16_t n;
    /* a field takes at least 19 bytes: an empty name and six integers */
    if (!rd_u16(r, &n) || n > MAX_COLUMNS || (size_t)n * 19 > r->n - r->at) goto bad;
    if (!scratch_room(c, n ? n : 1, 0)) goto nomem;
    for (uint16_t i = 0; i < n; i++) {
        uint32_t table, type, typmod;
        uint16_t attnum, typlen, format;
        if (!rd_cstr(r, &c->cols[i]) || !rd_u32(r, &table) || !rd_u16(r, &attnum) ||
            !rd_u32(r, &type) || !rd_u16(r, &typlen) || !rd_u32(r, &typmod) || !rd_u16(r, &format))
            goto bad;
        c->oids[i] = type;
    }
    if (!rd_end(r)) goto bad;
    c->ncol = n;
    return table_event(c, ev, PST_PGW_EV_COLUMNS, n);
bad:
    fail(c, PST_PGW_E_PROTOCOL, "malformed RowDescription");
    return CONTINUE;
nomem:
    fail(c, PST_PGW_E_NOMEM, "out of memory");
    return CONTINUE;
}

static int on_data_row(pst__pgw *c, rd *r, pst__pgw_event *ev) {
    uint16_t n;
    if (!rd_u16(r, &n) || (int)n != c->ncol || (size_t)n * 4 > r->n - r->at) {
        fail(c, PST_PGW_E_PROTOCOL, "DataRow without a matching RowDescription");
        return CONTINUE;
    }
    /* values copied with a terminator each: at most the body's size plus n bytes */
    if (!scratch_room(c, n ? n : 1, r->n + n + 1)) {
        fail(c, PST_PGW_E_NOMEM, "out of memory");
        return CONTINUE;
    }
    size_t k = 0;
    for (uint16_t i = 0; i < n; i++) {
        uint32_t len;
        if (!rd_u32(r, &len)) goto bad;
        if (len == UINT32_MAX) { /* -1: NULL */
            c->cols[i] = NULL;
            c->lens[i] = 0;
            continue;
        }
        if (len > r->n - r->at) goto bad;
        memcpy(c->scratch + k, r->p + r->at, len);
        c->scratch[k + len] = 0;
        c->cols[i] = c->scratch + k;
        c->lens[i] = len;
        k += len + 1;
        r->at += len;
    }
    if (!rd_end(r)) goto bad;
    return table_event(c, ev, PST_PGW_EV_ROW, n);
bad:
    fail(c, PST_PGW_E_PROTOCOL, "malformed DataRow");
    return CONTINUE;
}

/* "INSERT 0 5", "UPDATE 3", "SELECT 2" ...: the last word when it is a number. */
static int64_t tag_rows(const char *tag) {
    const char *sp = strrchr(tag, ' ');
    if (!sp || !sp[1]) return -1;
    int64_t v = 0;
    for (const char *p = sp + 1; *p; p++) {
        if (*p < '0' || *p > '9' || v > (INT64_MAX - 9) / 10) return -1;
        v = v * 10 + (*p - '0');
    }
    return v;
}

/* Messages that may come at any time once authenticated: notices, parameter changes,
 * notifications, and a FATAL error (the server going away). */
static int on_async(pst__pgw *c, char type, rd *r, pst__pgw_event *ev) {
    switch (type) {
    case 'N':
        if (!parse_fields(r, &ev->fields)) break;
        ev->kind = PST_PGW_EV_NOTICE;
        return PST_PGW_EV_NOTICE;
    case 'S':
        if (!rd_cstr(r, &ev->name) || !rd_cstr(r, &ev->value) || !rd_end(r)) break;
        ev->kind = PST_PGW_EV_PARAM;
        return PST_PGW_EV_PARAM;
    case 'A': { /* NotificationResponse: not used by the store; checked and skipped */
        uint32_t pid;
        const char *chan, *payload;
        if (!rd_u32(r, &pid) || !rd_cstr(r, &chan) || !rd_cstr(r, &payload) || !rd_end(r)) break;
        return CONTINUE;
    }
    case 'E': {
        pst__pgw_fields f;
        if (!parse_fields(r, &f)) break;
        fail_server(c, &f);
        return CONTINUE;
    }
    default:
        fail(c, PST_PGW_E_PROTOCOL, "unexpected message '%c' (0x%02x)",
             type >= 0x20 && type < 0x7f ? type : '?', (unsigned)(uint8_t)type);
        return CONTINUE;
    }
    fail(c, PST_PGW_E_PROTOCOL, "malformed message '%c'", type);
    return CONTINUE;
}

static int on_busy(pst__pgw *c, char type, rd *r, pst__pgw_event *ev) {
    switch (type) {
    case '1':
    case '2':
    case '3':
    case 'n':
    case 's': /* Parse/Bind/CloseComplete, NoData, PortalSuspended */
        if (!rd_end(r)) break;
        return CONTINUE;
    case 't': { /* ParameterDescription */
        uint16_t n;
        if (!rd_u16(r, &n) || (size_t)n * 4 != r->n - r->at) break;
        return CONTINUE;
    }
    case 'T': return on_row_description(c, r, ev);
    case 'D': return on_data_row(c, r, ev);
    case 'C':
        if (!rd_cstr(r, &ev->tag) || !rd_end(r)) break;
        c->ncol = -1;
        ev->kind = PST_PGW_EV_COMPLETE;
        ev->rows = tag_rows(ev->tag);
        return PST_PGW_EV_COMPLETE;
    case 'I':
        if (!rd_end(r)) break;
        c->ncol = -1;
        ev->kind = PST_PGW_EV_EMPTY;
        return PST_PGW_EV_EMPTY;
    case 'E':
        if (!parse_fields(r, &ev->fields)) break;
        if (fatal_severity(&ev->fields)) {
            fail_server(c, &ev->fields);
            return CONTINUE;
        }
        c->ncol = -1;
        ev->kind = PST_PGW_EV_SERVER_ERROR;
        return PST_PGW_EV_SERVER_ERROR;
    case 'Z':
        if (r->n != 1 || !memchr("ITE", r->p[0], 3) || c->awaiting <= 0) break;
        c->tx = (char)r->p[0];
        c->ncol = -1;
        if (--c->awaiting == 0 && c->unsynced == 0) c->st = ST_READY;
        ev->kind = PST_PGW_EV_READY;
        ev->tx = c->tx;
        return PST_PGW_EV_READY;
    case 'G':
    case 'H':
    case 'W': fail(c, PST_PGW_E_PROTOCOL, "COPY is not supported by this client"); return CONTINUE;
    default: return on_async(c, type, r, ev);
    }
    fail(c, PST_PGW_E_PROTOCOL, "malformed or unexpected message '%c'",
         type >= 0x20 && type < 0x7f ? type : '?');
    return CONTINUE;
}

static int on_message(pst__pgw *c, char type, rd *r, pst__pgw_event *ev) {
    switch (c->st) {
    case ST_AUTH:
    case ST_SASL:
    case ST_SASL_FINAL:
        if (type == 'R') return on_auth(c, r);
        if (type == 'E') {
            pst__pgw_fields f;
            if (parse_fields(r, &f)) {
                fail_server(c, &f);
                return CONTINUE;
            }
        } else if (type == 'N') {
            return on_async(c, type, r, ev);
        }
        fail(c, PST_PGW_E_PROTOCOL, "unexpected message '%c' during authentication",
             type >= 0x20 && type < 0x7f ? type : '?');
        return CONTINUE;
    case ST_STARTUP:
        if (type == 'K') {
            if (!rd_u32(r, &c->pid) || !rd_u32(r, &c->key) || !rd_end(r)) {
                fail(c, PST_PGW_E_PROTOCOL, "malformed BackendKeyData");
            }
            return CONTINUE;
        }
        if (type == 'Z') {
            if (r->n != 1 || !memchr("ITE", r->p[0], 3)) {
                fail(c, PST_PGW_E_PROTOCOL, "malformed ReadyForQuery");
                return CONTINUE;
            }
            c->tx = (char)r->p[0];
            c->st = ST_READY;
            ev->kind = PST_PGW_EV_READY;
            ev->tx = c->tx;
            return PST_PGW_EV_READY;
        }
        return on_async(c, type, r, ev);
    case ST_READY: return on_async(c, type, r, ev);
    case ST_BUSY: return on_busy(c, type, r, ev);
    default: fail(c, PST_PGW_E_PROTOCOL, "data in an unexpected state"); return CONTINUE;
    }
}

pst__pgw_ev_kind pst__pgw_next(pst__pgw *c, pst__pgw_event *ev) {
    memset(ev, 0, sizeof *ev);
    apply_drop(c);
    for (;;) {
        size_t have = pb_fifo_size(&c->in);
        const uint8_t *p = pb_fifo_data(&c->in);
        switch (c->st) {
        case ST_FAILED: return (pst__pgw_ev_kind)ev_failed(c, ev);
        case ST_CLOSED: return PST_PGW_EV_NONE;
        case ST_SSL_WAIT:
            if (!have) return PST_PGW_EV_NONE;
            if (p[0] == 'S') {
                /* bytes behind the 'S' were sent before TLS: a man in the middle could
                 * have injected them, so they are refused */
                if (have > 1) {
                    fail(c, PST_PGW_E_PROTOCOL, "unencrypted data after the server's TLS answer");
                    continue;
                }
                c->drop = 1;
                c->st = ST_TLS_HANDSHAKE;
                c->tls_on = true;
                ev->kind = PST_PGW_EV_TLS;
                return PST_PGW_EV_TLS;
            }
            if (p[0] == 'N') {
                pb_fifo_consume(&c->in, 1);
                if (c->tls == PST_PGW_TLS_REQUIRE)
                    fail(c, PST_PGW_E_TLS_REFUSED, "the server does not accept TLS connections");
                else
                    queue_startup(c);
                continue;
            }
            fail(c, PST_PGW_E_PROTOCOL, "the server does not understand SSLRequest");
            continue;
        case ST_TLS_HANDSHAKE:
            if (have) fail(c, PST_PGW_E_PROTOCOL, "data before the TLS handshake finished");
            if (have) continue;
            return PST_PGW_EV_NONE;
        default: break;
        }
        if (have < 5) return PST_PGW_EV_NONE;
        uint32_t len = (uint32_t)p[1] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 8 | p[4];
        if (len < 4) {
            fail(c, PST_PGW_E_PROTOCOL, "message length %u is below 4", (unsigned)len);
            continue;
        }
        if (len - 4 > c->max_message) {
            fail(c, PST_PGW_E_TOO_LARGE, "a %u-byte message exceeds the %zu-byte limit",
                 (unsigned)len, c->max_message);
            continue;
        }
        if (have - 1 < len) return PST_PGW_EV_NONE;
        rd r = {.p = p + 5, .n = len - 4, .at = 0};
        int k = on_message(c, (char)p[0], &r, ev);
        if (c->st == ST_FAILED) {
            memset(ev, 0, sizeof *ev);
            continue;
        }
        if (k == CONTINUE) {
            pb_fifo_consume(&c->in, 1 + (size_t)len);
            memset(ev, 0, sizeof *ev);
            continue;
        }
        c->drop = 1 + (size_t)len;
        return (pst__pgw_ev_kind)k;
    }
}

bool pst__pgw_tls_started(pst__pgw *c) {
    if (c->st != ST_TLS_HANDSHAKE) return false;
    return queue_startup(c);
}

/* ---- commands -------------------------------------------------------------------- */

/* Commands go out once the session is up; they may be pipelined behind running ones. */
static bool can_command(const pst__pgw *c) {
    return c->st == ST_READY || c->st == ST_BUSY;
}

bool pst__pgw_query(pst__pgw *c, const char *sql) {
    if (!can_command(c) || !sql) return false;
    bool ok;
    size_t at = msg_begin(c, 'Q', &ok);
    ok = ok && put_cstr(&c->out, sql);
    if (!msg_end(c, at, 'Q', ok)) return false;
    c->awaiting++;
    c->st = ST_BUSY;
    return true;
}

bool pst__pgw_sync(pst__pgw *c) {
    if (!can_command(c)) return false;
    bool ok;
    size_t at = msg_begin(c, 'S', &ok);
    if (!msg_end(c, at, 'S', ok)) return false;
    c->awaiting++;
    c->unsynced = 0;
    c->st = ST_BUSY;
    return true;
}

bool pst__pgw_query_params(pst__pgw *c, const char *sql, int n, const char *const *values,
                           const int *lens, bool sync) {
    if (!can_command(c) || !sql || n < 0 || n > UINT16_MAX || (n && !values)) return false;
    for (int i = 0; i < n; i++) /* a value must fit the int32 length field */
        if (values[i] &&
            (lens && lens[i] >= 0 ? (size_t)lens[i] : strlen(values[i])) > INT32_MAX - 64)
            return false;
    size_t start = c->out.len;
    bool ok;
    /* Parse: unnamed statement, parameter types left to the server */
    size_t at = msg_begin(c, 'P', &ok);
    ok = ok && put_cstr(&c->out, "") && put_cstr(&c->out, sql) && put_u16(&c->out, 0);
    if (!msg_end(c, at, 'P', ok)) return false;
    /* Bind: unnamed portal, all parameters and results in text */
    at = msg_begin(c, 'B', &ok);
    ok = ok && put_cstr(&c->out, "") && put_cstr(&c->out, "") && put_u16(&c->out, 0) &&
         put_u16(&c->out, (uint16_t)n);
    for (int i = 0; ok && i < n; i++) {
        if (!values[i]) {
            ok = put_u32(&c->out, UINT32_MAX);
            continue;
        }
        size_t l = lens && lens[i] >= 0 ? (size_t)lens[i] : strlen(values[i]);
        ok = put_u32(&c->out, (uint32_t)l) && pb_buf_put(&c->out, values[i], l);
    }
    ok = ok && put_u16(&c->out, 0);
    if (!msg_end(c, at, 'B', ok)) goto undo;
    at = msg_begin(c, 'D', &ok); /* Describe the portal: its RowDescription or NoData */
    ok = ok && pb_buf_putc(&c->out, 'P') && put_cstr(&c->out, "");
    if (!msg_end(c, at, 'D', ok)) goto undo;
    at = msg_begin(c, 'E', &ok); /* Execute, all rows */
    ok = ok && put_cstr(&c->out, "") && put_u32(&c->out, 0);
    if (!msg_end(c, at, 'E', ok)) goto undo;
    c->unsynced++;
    c->st = ST_BUSY;
    return sync ? pst__pgw_sync(c) : true;
undo: /* no half statement stays queued (the Parse before a Bind that did not fit) */
    if (c->st != ST_FAILED) {
        c->out.len = start;
        if (c->out.p) c->out.p[start] = 0;
    }
    return false;
}

void pst__pgw_terminate(pst__pgw *c) {
    if (c->st == ST_FAILED || c->st == ST_CLOSED) return;
    bool ok;
    size_t at = msg_begin(c, 'X', &ok);
    if (msg_end(c, at, 'X', ok)) c->st = ST_CLOSED;
}

void pst__pgw_cancel_request(uint32_t pid, uint32_t key, uint8_t out[16]) {
    const uint32_t w[4] = {16, CANCEL_REQUEST_CODE, pid, key};
    for (int i = 0; i < 4; i++) {
        out[4 * i] = (uint8_t)(w[i] >> 24);
        out[4 * i + 1] = (uint8_t)(w[i] >> 16);
        out[4 * i + 2] = (uint8_t)(w[i] >> 8);
        out[4 * i + 3] = (uint8_t)w[i];
    }
}

/* ---- state ----------------------------------------------------------------------- */

bool pst__pgw_ready(const pst__pgw *c) {
    return c->st == ST_READY;
}

const pst__pgw_error *pst__pgw_failure(const pst__pgw *c) {
    return &c->err;
}

void pst__pgw_backend_key(const pst__pgw *c, uint32_t *pid, uint32_t *key) {
    *pid = c->pid;
    *key = c->key;
}

bool pst__pgw_tls_active(const pst__pgw *c) {
    return c->tls_on;
}

bool pst__pgw_server_verified(const pst__pgw *c) {
    return c->scram.verified;
}
