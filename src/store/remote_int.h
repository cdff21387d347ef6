/*
 * remote_int.h — one PostgreSQL connection driven by the host's ports (pn_ports), for the
 * remote store client (remote.c). Not a public header.
 *
 * The connection owns its stream handle, the wire codec (pgwire.c) and a queue of
 * batches. A batch is either N statements with text parameters and ONE Sync (one
 * implicit transaction: all or nothing), or one simple-protocol text (several statements,
 * used for the migrations). Batches are pipelined: every queued batch is sent as soon as
 * the session is up, and their answers come back in order. Each batch completes with
 * exactly one callback, from inside pst__rconn_event (never from the call that queued
 * it), carrying every statement's rows or a typed error.
 *
 * Invariants: a lost connection fails the batch in flight and every queued batch with
 * PST_ERR_CONN, and nothing is resent (a batch that may have reached the server is never
 * retried); the next pst__rconn_submit after the loss opens a new stream. A timeout of
 * the port is reported as a timeout (PST_ERR_CONN with "timed out"), never as a close.
 */
#ifndef PERI_STORE_REMOTE_INT_H
#define PERI_STORE_REMOTE_INT_H

#include "peri/net.h"
#include "store_sql.h"

/* One statement's answer: nrows x ncol cells (NULL = SQL NULL), owned by the batch. */
typedef struct pst__rres {
    int ncol;
    size_t nrows;
    char **cells;
    int64_t changes; /* rows the command changed/returned (-1: the tag had none) */
} pst__rres;

/* A completed batch, valid during the callback only (the connection frees it). */
typedef struct pst__rout {
    pst_error err;      /* err.status PST_OK or why the batch failed */
    psb_violation viol; /* the failing statement's constraint kind */
    int failed_at;      /* the failing statement's index, -1 when none / the connection */
    int n;              /* statements answered so far (res[0..n)) */
    pst__rres *res;
} pst__rout;

typedef void (*pst__rconn_done)(void *ud, pst__rout *out);

/* How the connection gets TLS (sslmode). The host's port always verifies the server's
 * certificate (its trust store, the host name), so require, verify-ca and verify-full
 * all mean "TLS with a verified certificate, or no connection". */
typedef enum pst__rssl {
    PST_RSSL_PREFER = 0, /* SSLRequest; 'N' continues in the clear (libpq's default) */
    PST_RSSL_DISABLE,    /* plain TCP, no SSLRequest */
    PST_RSSL_REQUIRE,    /* SSLRequest; 'N' is an error (require, verify-ca, verify-full) */
    PST_RSSL_DIRECT,     /* TLS from the first byte (the port's tls option; PostgreSQL 17) */
} pst__rssl;

/* Where to connect and how (parsed from a postgresql:// locator). */
typedef struct pst__rtarget {
    char host[256];
    uint16_t port;
    char user[64];
    char database[64];
    char application_name[64]; /* "": "peri" */
    pst__rssl ssl;
} pst__rtarget;

/* Parses "postgresql://[user@][host][:port][/db][?key=value&...]" (also "postgres://"),
 * with libpq's query keywords host, hostaddr, port, user, dbname, application_name,
 * sslmode and connect_timeout (accepted; the host's port bounds the connect). Components
 * are %XX-decoded. A password (in the userinfo, password= or passfile=) is refused: it
 * comes from the credential. A Unix-domain socket host is refused: only the network port
 * reaches the store. sslmode: disable, prefer (the default, as libpq's), require,
 * verify-ca, verify-full, direct; allow and anything else are refused. */
pst_status pst__rtarget_parse(const char *locator, pst__rtarget *t, pst_error *err);

typedef struct pst__rconn pst__rconn;

/* A connection (no stream yet: the first submit opens it). password may be NULL (trust);
 * it is copied and wiped on free. random fills the SCRAM nonce. ud is the pointer every
 * event of this connection's stream carries (the owner routes events by it). The caller
 * owns the result: pst__rconn_free. */
pst__rconn *pst__rconn_new(const pn_ports *ports, const pst__rtarget *t, const char *password,
                           bool (*random)(void *ctx, void *buf, size_t n), void *random_ctx,
                           void *ud, pst_error *err);
/* Queues a batch of n statements (copied) ending in one Sync; done(ud, out) follows. */
pst_status pst__rconn_submit(pst__rconn *c, const psb_stmt *stmts, int n, pst__rconn_done done,
                             void *ud, pst_error *err);
/* Queues one simple-protocol text (several statements; rows of all in res[i] order). */
pst_status pst__rconn_submit_simple(pst__rconn *c, const char *sql, pst__rconn_done done, void *ud,
                                    pst_error *err);
/* An event of this connection's stream (ev->ud == the ud given to new). */
void pst__rconn_event(pst__rconn *c, const pn_event *ev);
/* Fails every queued batch (PST_ERR_CONN, "closed"), sends Terminate and closes the
 * stream; the connection is settled when its PN_EV_CLOSED has arrived. */
void pst__rconn_close(pst__rconn *c);
bool pst__rconn_settled(const pst__rconn *c);
/* Frees everything; call after settling (or without a stream). Not from a callback. */
void pst__rconn_free(pst__rconn *c);

#endif
