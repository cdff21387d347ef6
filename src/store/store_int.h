/*
 * store_int.h — what the store's files share. Not a public header.
 *
 * The store is two halves:
 *   rules    (open.c threads.c messages.c): validation, ids, sequence numbering, ownership
 *            checks, cursors, transactions' shape. Written ONCE in portable SQL with $N
 *            placeholders (SQLite and PostgreSQL both run it).
 *   backends (be_sqlite.c, be_pg.c): one connection each behind the small vtable below:
 *            run a statement with typed parameters and hand rows back as text, begin/commit/
 *            rollback a write transaction, bring the schema to a version (dialect DDL),
 *            map engine errors to pst_status + a violation kind.
 *
 * Invariants: every use of the connection holds s->mu; a backend never retries a
 * statement inside a transaction (a lost connection fails the transaction with
 * PST_ERR_CONN; the next begin/exec outside a transaction reconnects).
 */
#ifndef PERI_STORE_INT_H
#define PERI_STORE_INT_H

#include "peri/store.h"

#include <pthread.h>

typedef enum psb_kind { PSB_NULL, PSB_TEXT, PSB_INT } psb_kind;

typedef struct psb_val {
    psb_kind kind;
    const char *text; /* PSB_TEXT */
    int64_t i;        /* PSB_INT */
} psb_val;

static inline psb_val psb_text(const char *s) {
    return (psb_val){.kind = s ? PSB_TEXT : PSB_NULL, .text = s};
}
#define PSB_T(s)  psb_text(s)
#define PSB_I(v)  ((psb_val){.kind = PSB_INT, .i = (v)})
#define PSB_NULLV ((psb_val){.kind = PSB_NULL})

/* What kind of constraint a failed statement violated (rules turn it into a message). */
typedef enum psb_violation {
    PSB_V_NONE = 0,
    PSB_V_FOREIGN_KEY, /* unknown workspace/parent/thread */
    PSB_V_UNIQUE,      /* duplicate primary key / unique */
    PSB_V_CHECK,       /* CHECK failed, invalid JSON text */
} psb_violation;

/* One result row: ncol text values (NULL = SQL NULL), valid during the callback. */
typedef struct psb_row {
    int ncol;
    const char *const *col;
} psb_row;

/* Returns PST_OK to continue, anything else stops and is returned by exec. */
typedef pst_status (*psb_row_fn)(void *ctx, const psb_row *row, pst_error *err);

/* One statement of a batch. */
typedef struct psb_stmt {
    const char *sql;
    const psb_val *params;
    int nparams;
} psb_stmt;

typedef struct psb_ops {
    const char *name; /* "sqlite" or "postgresql" */
    /* Runs one statement; fn (may be NULL) gets each row; *changes (may be NULL) the
     * number of rows changed; *viol (may be NULL) the violation kind on failure. */
    pst_status (*exec)(void *be, const char *sql, const psb_val *params, int nparams, psb_row_fn fn,
                       void *ctx, int64_t *changes, psb_violation *viol, pst_error *err);
    /* Runs stmts[0..n) as ONE transaction, in one round trip where the backend can
     * (PostgreSQL: pipeline mode, one implicit transaction); all or nothing. fn gets the
     * rows of stmts[0]. On failure *failed_at (may be NULL) is the failing statement's
     * index (-1: the transaction itself) and the transaction is rolled back. */
    pst_status (*batch)(void *be, const psb_stmt *stmts, int n, psb_row_fn fn, void *ctx,
                        int *failed_at, psb_violation *viol, pst_error *err);
    pst_status (*begin)(void *be, pst_error *err); /* a write transaction */
    pst_status (*commit)(void *be, pst_error *err);
    void (*rollback)(void *be);
    /* Brings the schema to `target` in one transaction; *version gets the result.
     * PST_ERR_SCHEMA when the database is newer. */
    pst_status (*migrate)(void *be, int target, int *version, pst_error *err);
    void (*close)(void *be);
} psb_ops;

struct pst_store {
    const psb_ops *ops;
    void *be;
    pthread_mutex_t mu; /* one connection, serialised */
    int version;
    char owner[PST_ID_LEN]; /* "" = no ownership check */
    bool read_only;         /* shared store without a machine identity */
};

/* Backends. locator: a file path / ":memory:" or a postgresql:// URL. NULL + err. */
void *pst__sqlite_open(const char *path, const psb_ops **ops, pst_error *err);
void *pst__pg_open(const char *url, const char *password, const psb_ops **ops, pst_error *err);
bool pst__is_pg_url(const char *locator);

/* Fill err (may be NULL) and return st. code: the engine's error code (SQLite extended
 * code, or the PostgreSQL SQLSTATE packed by psb_pg), 0 if none. */
pst_status pst__fail(pst_error *err, pst_status st, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void pst__ok(pst_error *err);
int64_t pst__now_ms(void);
/* strdup that accepts NULL. */
char *pst__strdup(const char *s);
/* Decimal text -> int64 (0 for NULL/garbage). */
int64_t pst__i64(const char *s);

/* Prefix the message of a failed err with what (keeps status). */
pst_status pst__ctx(pst_error *err, pst_status st, const char *what);

/* Runs sql with the parameter ARRAY p on s's backend (caller holds s->mu). */
#define PSB_EXEC(s, sql, p, fn, ctx, changes, viol, err)                                           \
    (s)->ops->exec((s)->be, (sql), (p), (int)(sizeof(p) / sizeof((p)[0])), (fn), (ctx), (changes), \
                   (viol), (err))

/* Ownership rules shared by the write paths (threads.c); caller holds s->mu.
 * pst__write_ok: PST_ERR_FOREIGN on a read-only store. pst__thread_owner_check: after a
 * guarded write changed no row, tells PST_ERR_NOT_FOUND from PST_ERR_FOREIGN. */
pst_status pst__write_ok(pst_store *s, pst_error *err);
pst_status pst__thread_owner_check(pst_store *s, const char *thread_id, pst_error *err);
/* The owner as a parameter: NULL (no check) or the machine id. */
psb_val pst__owner_param(const pst_store *s);

#endif
