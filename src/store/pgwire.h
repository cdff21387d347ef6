/*
 * pgwire.h — a sans-IO PostgreSQL frontend (protocol 3.0) for the store: the caller
 * moves bytes between a byte stream it owns (a socket, or the host's network port in the
 * WebAssembly form) and this codec, which gives bytes to send and typed events back. It
 * does no I/O, reads no clock, environment or randomness (the caller supplies the SCRAM
 * nonce's random bytes) and needs neither libpq nor libcrypto. Not a public header.
 *
 * Use:
 *   c = pst__pgw_new(&cfg, &err)            the first bytes to send are queued
 *   loop: send pst__pgw_output() bytes, then pst__pgw_sent(n);
 *         feed received bytes with pst__pgw_feed(); drain pst__pgw_next() until
 *         PST_PGW_EV_NONE before feeding more;
 *         on PST_PGW_EV_TLS do the TLS handshake on the stream and call
 *         pst__pgw_tls_started(); on PST_PGW_EV_READY the connection takes a command
 *         (pst__pgw_query, pst__pgw_query_params ... pst__pgw_sync).
 *   pst__pgw_terminate() queues Terminate; pst__pgw_free() releases everything.
 *
 * Authentication: SCRAM-SHA-256 (RFC 5802/7677, no channel binding: gs2 header "n,,")
 * with the server's signature verified; a server that asks for MD5, Kerberos, GSS or
 * SSPI is refused, and a cleartext password is sent only over TLS and only when the
 * configuration allows it. When a password is configured, AuthenticationOk without a
 * verified SCRAM exchange is refused too (a server that cannot prove it knows the
 * verifier is not trusted), unless allow_no_auth is set.
 *
 * Bounds: every backend message's declared length is checked against max_message before
 * anything is buffered for it; every field read is checked against the message's end;
 * column counts are bounded by the message size and by PostgreSQL's 1664-column limit;
 * the SCRAM iteration count by max_iterations. Malformed input ends the connection with
 * PST_PGW_E_PROTOCOL, never a crash or an unbounded allocation.
 */
#ifndef PERI_STORE_PGWIRE_H
#define PERI_STORE_PGWIRE_H

#include "peri/base.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What went wrong, for PST_PGW_EV_FAILED and the functions that return false. */
typedef enum pst__pgw_errkind {
    PST_PGW_E_NONE = 0,
    PST_PGW_E_PROTOCOL,         /* malformed or unexpected server message */
    PST_PGW_E_TOO_LARGE,        /* a message longer than max_message */
    PST_PGW_E_AUTH_UNSUPPORTED, /* MD5, cleartext (not allowed), GSS, SSPI, no SCRAM-SHA-256 */
    PST_PGW_E_AUTH_FAILED,      /* the server rejected the credentials (SQLSTATE 28xxx) */
    PST_PGW_E_AUTH_SERVER,      /* the server failed SCRAM (bad signature, nonce, salt ...) */
    PST_PGW_E_NO_PASSWORD,      /* the server wants a password and none is configured */
    PST_PGW_E_TLS_REFUSED,      /* TLS required and the server said no */
    PST_PGW_E_SERVER,           /* a FATAL/PANIC ErrorResponse ended the session */
    PST_PGW_E_NOMEM,
    PST_PGW_E_STATE, /* a bad configuration */
} pst__pgw_errkind;

/* A failure that ends the connection (copies; sqlstate/severity "" when the server did
 * not send one). */
typedef struct pst__pgw_error {
    pst__pgw_errkind kind;
    char severity[16];
    char sqlstate[6];
    char message[256];
    char detail[256];
} pst__pgw_error;

/* Every field of an ErrorResponse/NoticeResponse (NULL when absent), pointing into the
 * codec's buffer: valid until the next pst__pgw_next/feed/free. */
typedef struct pst__pgw_fields {
    const char *severity; /* non-localised (V) when sent, else the localised S */
    const char *sqlstate, *message, *detail, *hint, *position, *internal_position, *internal_query,
        *where, *schema, *table, *column, *datatype, *constraint, *file, *line, *routine;
} pst__pgw_fields;

typedef enum pst__pgw_ev_kind {
    PST_PGW_EV_NONE = 0,     /* nothing complete yet: feed more bytes (or send output) */
    PST_PGW_EV_TLS,          /* the server accepted SSLRequest: start TLS, then tls_started */
    PST_PGW_EV_READY,        /* ReadyForQuery: tx is 'I', 'T' or 'E' */
    PST_PGW_EV_PARAM,        /* ParameterStatus: name, value */
    PST_PGW_EV_COLUMNS,      /* RowDescription: ncol, col (names), type_oid */
    PST_PGW_EV_ROW,          /* DataRow: ncol, col (NUL-terminated, NULL = SQL NULL), len */
    PST_PGW_EV_COMPLETE,     /* CommandComplete: tag, rows (-1 when the tag has none) */
    PST_PGW_EV_EMPTY,        /* EmptyQueryResponse */
    PST_PGW_EV_SERVER_ERROR, /* ErrorResponse of a statement: fields; READY follows */
    PST_PGW_EV_NOTICE,       /* NoticeResponse: fields */
    PST_PGW_EV_FAILED,       /* the connection is unusable: error (also every later call) */
} pst__pgw_ev_kind;

/* One event; every pointer is valid until the next pst__pgw_next/feed/free. */
typedef struct pst__pgw_event {
    pst__pgw_ev_kind kind;
    char tx;                     /* READY */
    const char *name, *value;    /* PARAM */
    int ncol;                    /* COLUMNS, ROW */
    const char *const *col;      /* COLUMNS: names; ROW: values */
    const uint32_t *type_oid;    /* COLUMNS */
    const size_t *len;           /* ROW: value lengths (a value may contain NUL bytes) */
    const char *tag;             /* COMPLETE */
    int64_t rows;                /* COMPLETE */
    pst__pgw_fields fields;      /* SERVER_ERROR, NOTICE */
    const pst__pgw_error *error; /* FAILED */
} pst__pgw_event;

typedef enum pst__pgw_tls {
    PST_PGW_TLS_OFF = 0, /* plain stream, no SSLRequest */
    PST_PGW_TLS_PREFER,  /* SSLRequest; 'N' continues in plain text */
    PST_PGW_TLS_REQUIRE, /* SSLRequest; 'N' fails with PST_PGW_E_TLS_REFUSED */
    PST_PGW_TLS_DIRECT,  /* the stream is TLS from its first byte (PostgreSQL 17's direct
                            negotiation: the port must offer ALPN "postgresql"); no
                            SSLRequest, the StartupMessage goes first */
} pst__pgw_tls;

/* The strings are copied by pst__pgw_new; the caller keeps ownership of its own. */
typedef struct pst__pgw_config {
    const char *user;             /* required, non-empty */
    const char *database;         /* NULL or "": the user name */
    const char *application_name; /* NULL: "peri" */
    const char *password;         /* NULL: none (trust only); used as raw bytes (no SASLprep) */
    pst__pgw_tls tls;
    bool allow_cleartext_over_tls; /* answer AuthenticationCleartextPassword, over TLS only */
    bool allow_no_auth;            /* with a password: accept a server that skips SCRAM */
    uint8_t nonce_random[18];      /* fresh random bytes from the caller (the SCRAM nonce) */
    size_t max_message;            /* 0: 64 MiB. The largest backend message accepted */
    uint32_t max_iterations;       /* 0: 600000. The largest SCRAM iteration count */
} pst__pgw_config;

typedef struct pst__pgw pst__pgw;

/* A new connection state; the StartupMessage (or SSLRequest) is queued for sending.
 * NULL with *err filled (PST_PGW_E_STATE: bad configuration; PST_PGW_E_NOMEM). The
 * caller owns the result and frees it with pst__pgw_free (which wipes the password). */
pst__pgw *pst__pgw_new(const pst__pgw_config *cfg, pst__pgw_error *err);
void pst__pgw_free(pst__pgw *c);

/* Bytes waiting to be sent (pointer valid until the next call that queues or frees);
 * pst__pgw_sent(c, n) drops the first n of them once written. */
const uint8_t *pst__pgw_output(const pst__pgw *c, size_t *n);
void pst__pgw_sent(pst__pgw *c, size_t n);

/* Received bytes. False (and the connection FAILED) on out of memory, or when more than
 * max_message + 64 KiB would wait unparsed: drain pst__pgw_next first. */
bool pst__pgw_feed(pst__pgw *c, const void *data, size_t n);
/* The next event parsed from the bytes fed so far; PST_PGW_EV_NONE when none is complete. */
pst__pgw_ev_kind pst__pgw_next(pst__pgw *c, pst__pgw_event *ev);
/* After PST_PGW_EV_TLS: the stream is now TLS; queues the StartupMessage. */
bool pst__pgw_tls_started(pst__pgw *c);

/* Commands; false (nothing queued) before the session is up (the first READY), after a
 * failure or Terminate, or for a bad argument. They may be queued while earlier ones
 * still run (pipelining): every simple query and every Sync is answered by one READY.
 * The simple query protocol: sql may hold several statements. */
bool pst__pgw_query(pst__pgw *c, const char *sql);
/* The extended protocol: Parse/Bind/Describe/Execute of one statement with text
 * parameters (values[i] NULL = SQL NULL; lens NULL or lens[i] < 0: strlen), text
 * results. Statements may be queued back to back and end with ONE pst__pgw_sync (they
 * then run as one implicit transaction: the first error skips the rest until the Sync);
 * with sync true this call sends the Sync itself. */
bool pst__pgw_query_params(pst__pgw *c, const char *sql, int n, const char *const *values,
                           const int *lens, bool sync);
bool pst__pgw_sync(pst__pgw *c);
/* Queues Terminate; afterwards every command returns false and next gives NONE. */
void pst__pgw_terminate(pst__pgw *c);
/* The CancelRequest packet for the session with this backend key (pst__pgw_backend_key):
 * the caller sends these 16 bytes on a NEW stream to the same server and closes it; the
 * running statement then fails with SQLSTATE 57014. */
void pst__pgw_cancel_request(uint32_t pid, uint32_t key, uint8_t out[16]);

/* State for the caller: ready for a command; the failure (kind NONE while healthy); the
 * backend's process id and cancel key (0 until BackendKeyData); whether TLS was agreed;
 * whether the server proved its identity with SCRAM. */
bool pst__pgw_ready(const pst__pgw *c);
const pst__pgw_error *pst__pgw_failure(const pst__pgw *c);
void pst__pgw_backend_key(const pst__pgw *c, uint32_t *pid, uint32_t *key);
bool pst__pgw_tls_active(const pst__pgw *c);
bool pst__pgw_server_verified(const pst__pgw *c);
const char *pst__pgw_errkind_name(pst__pgw_errkind k);

/* ---- SCRAM-SHA-256 client (pgwire_scram.c) -------------------------------------------
 * The message texts of one exchange, exposed for the RFC 7677 test vector. */
typedef struct pst__scram {
    char client_first_bare[128]; /* "n=<user>,r=<nonce>" */
    uint8_t server_signature[PB_SHA256_LEN];
    bool verified;
} pst__scram;
/* client-first-message ("n,," + bare) into out (NUL-terminated); false when user or
 * nonce is too long or holds ',' / '=' (user must be "" for PostgreSQL). */
bool pst__scram_first(pst__scram *s, const char *user, const char *nonce, char *out, size_t cap);
/* From server-first-message (sf, n bytes) and the password: client-final-message into
 * out (NUL-terminated). False with *why set (a static text) when the server's message is
 * malformed, its nonce does not extend ours, or the salt/iteration count is out of
 * bounds. */
bool pst__scram_final(pst__scram *s, const char *sf, size_t n, const char *password,
                      uint32_t max_iterations, char *out, size_t cap, const char **why);
/* server-final-message: true only for "v=" with our expected signature. */
bool pst__scram_verify(pst__scram *s, const char *msg, size_t n, const char **why);

#endif
