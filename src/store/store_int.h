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

#include "store_sql.h"

#include <pthread.h>

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
