/*
 * store_sql.h — the part of the store's rules that needs no connection, no lock and no
 * libpq: typed statement parameters and rows, the error helpers, the SQL texts of the
 * rules (one copy, run by the native store's rules in threads.c / messages.c and by the
 * remote client in remote.c), the PostgreSQL migrations and the SQLSTATE mapping
 * (pg_shared.c, used by be_pg.c and remote_conn.c). Not a public header. It compiles for
 * wasm32-wasi (no pthread, no libpq), since the remote client does.
 */
#ifndef PERI_STORE_SQL_H
#define PERI_STORE_SQL_H

#include "peri/store.h"

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

/* A row callback's first step: a row with fewer than n columns (a server that answers a
 * statement with another shape: a hostile or mismatched database) fails the statement
 * with PST_ERR_IO instead of reading past the columns it has. */
#define PSB_NEED_COLS(row, n, err)                                                                 \
    do {                                                                                           \
        if ((row)->ncol < (n))                                                                     \
            return pst__fail((err), PST_ERR_IO, 0,                                                 \
                             "the database answered with %d columns where %d were expected",       \
                             (row)->ncol, (n));                                                    \
    } while (0)

/* Returns PST_OK to continue, anything else stops and is returned by exec. */
typedef pst_status (*psb_row_fn)(void *ctx, const psb_row *row, pst_error *err);

/* One statement of a batch. */
typedef struct psb_stmt {
    const char *sql;
    const psb_val *params;
    int nparams;
} psb_stmt;

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

/* ---- the rules' texts (rules_sql.c) -------------------------------------------------- */

/* $1 thread id → its machine */
extern const char pst__sql_thread_owner[];
/* $1 id, $2 name, $3 now */
extern const char pst__sql_machine_ensure[];
/* $1 machine, $2 path → id */
extern const char pst__sql_workspace_find[];
/* $1 id, $2 machine, $3 path, $4 now */
extern const char pst__sql_workspace_insert[];
/* $1 id → one row of pst__read_thread_row */
extern const char pst__sql_thread_get[];
/* $1 workspace → its machine */
extern const char pst__sql_workspace_owner[];
/* $1 id, $2 workspace, $3 parent, $4 title, $5 model, $6 meta, $7 now */
extern const char pst__sql_thread_insert[];
/* the guarded writes: $1 id, $2 text, $3 number, $4 owner (NULL: no check) */
extern const char pst__sql_thread_delete[];
extern const char pst__sql_thread_archive[];
extern const char pst__sql_thread_rename[];
extern const char pst__sql_thread_model[];
extern const char pst__sql_thread_meta[];
/* $1 cwd, $2 machine, $3 archived, $4 empty, $5 children, $6 cursor ts, $7 cursor id, $8 limit + 1
 */
extern const char pst__sql_thread_list[];
/* $1 thread, $2 places before the range end, $3 role, $4 content, $5 meta, $6 now, $7 owner */
extern const char pst__sql_message_insert[];
/* $1 thread, $2 n, $3 now, $4 owner → first seq */
extern const char pst__sql_message_reserve[];
/* $1 thread */
extern const char pst__sql_thread_next_seq[];
/* $1 thread */
extern const char pst__sql_message_count[];
/* $1 thread → rows of pst__take_message */
extern const char pst__sql_message_load[];

/* Fills t from a row of pst__sql_thread_get / pst__sql_thread_list (owned strings; t is
 * cleared on failure). */
pst_status pst__read_thread_row(const psb_row *row, pst_thread *t, pst_error *err);
/* Row callback of a page query: the first `limit` rows into out->items (room for them
 * allocated by the caller), `more` when one more row came. */
typedef struct pst__page_fill {
    pst_thread_page *out;
    size_t limit;
    bool more;
} pst__page_fill;
pst_status pst__take_page_row(void *ctx, const psb_row *row, pst_error *err);
/* Cursor text "<updated_at>:<id>" of the last row of the previous page. */
bool pst__parse_cursor(const char *c, int64_t *ts, char id[PST_ID_LEN]);
/* The parameters of pst__sql_thread_list for q (limit and cursor checked; a->p points
 * into q and a). */
typedef struct pst__list_args {
    int limit;
    char cur_id[PST_ID_LEN];
    psb_val p[8];
} pst__list_args;
pst_status pst__list_params(const pst_list_query *q, pst__list_args *a, pst_error *err);
/* The cursor of a page that ends with this row (malloc'd, NULL on OOM). */
char *pst__format_cursor(int64_t updated_at, const char *id);
/* Row callback of pst__sql_message_load: appends to out (cap grows by doubling). */
typedef struct pst__msg_fill {
    pst_message_list *out;
    size_t cap;
} pst__msg_fill;
pst_status pst__take_message(void *ctx, const psb_row *row, pst_error *err);
/* The ownership refusals and the common not-found, worded once. */
pst_status pst__foreign(pst_error *err, const char *what, const char *id, const char *owner,
                        const char *me);
pst_status pst__refuse_no_identity(pst_error *err);
pst_status pst__refuse_machine(pst_error *err, const char *machine_id, const char *owner);
pst_status pst__no_session(pst_error *err, const char *id);
/* Message i, which the database refused by a CHECK constraint. */
pst_status pst__bad_message(pst_error *err, pst_status r, size_t i);

/* ---- UUID layouts (uuid_form.c) ------------------------------------------------------ */

void pst__uuid_format(const unsigned char b[16], char out[PST_ID_LEN]);
/* A UUID v7 from 16 random bytes and a Unix time in milliseconds. */
void pst__uuid_v7_from(const unsigned char random16[16], uint64_t ms, char out[PST_ID_LEN]);

/* ---- PostgreSQL's dialect (pg_shared.c) --------------------------------------------- */

/* Migration N (1-based) is pst__pg_migrations[N - 1]; PST_SCHEMA_VERSION of them. */
extern const char *const pst__pg_migrations[];
extern const int pst__pg_nmigrations;
/* pg_advisory_xact_lock key that serialises concurrent migrations of one database. */
#define PST_PG_MIGRATION_LOCK "7277001501"

/* The status of a failed statement from its SQLSTATE (NULL: none was sent, i.e. the
 * connection failed): 08xxx/57Pxx/NULL → PST_ERR_CONN, 23503 → foreign key, 23505 →
 * unique, other 23xxx/22xxx → check (all PST_ERR_ARG), 40xxx/55P03 → PST_ERR_BUSY, 53200 →
 * PST_ERR_NOMEM, anything else PST_ERR_IO. *viol (may be NULL) gets the violation kind. */
pst_status pst__pg_sqlstate_status(const char *sqlstate, psb_violation *viol);

#endif
