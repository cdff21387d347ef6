/*
 * be_sqlite.c — the SQLite backend (default, embedded): one connection in WAL mode with
 * foreign keys on and a busy timeout, its dialect's migrations, and the vtable the rules
 * run on. Statements are written with $N placeholders by the rules and run here as ?N;
 * prepared statements are cached per SQL text (the rules pass string literals).
 *
 * Durability: journal_mode=WAL, synchronous=NORMAL: a committed transaction survives a
 * crash of the process (kill -9); a power loss may drop the last commits.
 */
#include "store_int.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* Migration N brings the schema from version N-1 to N. Append only; never edit one that
 * has shipped. The PostgreSQL backend has the same tables in its dialect (be_pg.c). */
static const char *const migrations[] = {
    /* 1: the machine → workspace → thread → message model */
    "CREATE TABLE machines("
    "  id TEXT PRIMARY KEY,"
    "  name TEXT,"
    "  identity_kind TEXT NOT NULL DEFAULT 'known'"
    "    CHECK(identity_kind IN ('known','legacy_unknown')),"
    "  created_at INTEGER NOT NULL);"
    "CREATE TABLE workspaces("
    "  id TEXT PRIMARY KEY,"
    "  machine_id TEXT NOT NULL REFERENCES machines(id) ON DELETE CASCADE,"
    "  path TEXT NOT NULL,"
    "  path_source TEXT NOT NULL DEFAULT 'discovered'"
    "    CHECK(path_source IN ('discovered','derived_legacy','unverified')),"
    "  created_at INTEGER NOT NULL,"
    "  UNIQUE(machine_id, path));"
    "CREATE TABLE threads("
    "  id TEXT PRIMARY KEY,"
    "  workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,"
    "  parent_thread_id TEXT REFERENCES threads(id) ON DELETE CASCADE,"
    "  title TEXT,"
    "  model TEXT,"
    "  archived INTEGER NOT NULL DEFAULT 0,"
    "  meta TEXT CHECK(meta IS NULL OR json_valid(meta)),"
    "  message_count INTEGER NOT NULL DEFAULT 0,"
    "  next_seq INTEGER NOT NULL DEFAULT 1,"
    "  created_at INTEGER NOT NULL,"
    "  updated_at INTEGER NOT NULL);"
    "CREATE INDEX threads_by_update ON threads(updated_at DESC, id DESC);"
    "CREATE INDEX threads_by_workspace ON threads(workspace_id, updated_at DESC, id DESC);"
    "CREATE INDEX threads_by_parent ON threads(parent_thread_id);"
    "CREATE TABLE messages("
    "  thread_id TEXT NOT NULL REFERENCES threads(id) ON DELETE CASCADE,"
    "  seq INTEGER NOT NULL,"
    "  role TEXT NOT NULL CHECK(length(role) > 0),"
    "  content TEXT NOT NULL CHECK(json_valid(content)),"
    "  meta TEXT CHECK(meta IS NULL OR json_valid(meta)),"
    "  created_at INTEGER NOT NULL,"
    "  PRIMARY KEY(thread_id, seq)) WITHOUT ROWID;",
};
#define NMIGRATIONS ((int)(sizeof migrations / sizeof migrations[0]))

_Static_assert(NMIGRATIONS == PST_SCHEMA_VERSION, "one migration per schema version");

#define NCACHE 48

typedef struct be_sqlite {
    sqlite3 *db;
    struct {
        const char *sql; /* key: the rules' string literal */
        sqlite3_stmt *st;
    } cache[NCACHE];
} be_sqlite;

static pst_status sqlfail(sqlite3 *db, pst_error *err, psb_violation *viol) {
    int code = sqlite3_extended_errcode(db);
    pst_status st;
    if (viol) *viol = PSB_V_NONE;
    switch (code & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED: st = PST_ERR_BUSY; break;
    case SQLITE_NOMEM: st = PST_ERR_NOMEM; break;
    case SQLITE_CONSTRAINT:
        st = PST_ERR_ARG;
        if (viol)
            *viol = code == SQLITE_CONSTRAINT_FOREIGNKEY ? PSB_V_FOREIGN_KEY
                    : (code == SQLITE_CONSTRAINT_PRIMARYKEY || code == SQLITE_CONSTRAINT_UNIQUE)
                        ? PSB_V_UNIQUE
                        : PSB_V_CHECK;
        break;
    default: st = PST_ERR_IO; break;
    }
    return pst__fail(err, st, code, "%s", sqlite3_errmsg(db));
}

static int run(sqlite3 *db, const char *sql) {
    return sqlite3_exec(db, sql, NULL, NULL, NULL);
}

/* The cached statement for sql ($N rewritten to ?N), NULL + err on failure. */
static sqlite3_stmt *stmt_for(be_sqlite *b, const char *sql, pst_error *err, psb_violation *viol) {
    int slot = -1;
    for (int i = 0; i < NCACHE; i++) {
        if (b->cache[i].sql == sql) return b->cache[i].st;
        if (slot < 0 && !b->cache[i].sql) slot = i;
    }
    size_t n = strlen(sql);
    char *text = malloc(n + 1);
    if (!text) {
        pst__fail(err, PST_ERR_NOMEM, 0, "out of memory");
        return NULL;
    }
    for (size_t i = 0; i <= n; i++)
        text[i] = sql[i] == '$' ? '?' : sql[i];
    sqlite3_stmt *st = NULL;
    int rc =
        sqlite3_prepare_v3(b->db, text, -1, slot >= 0 ? SQLITE_PREPARE_PERSISTENT : 0, &st, NULL);
    free(text);
    if (rc != SQLITE_OK) {
        sqlfail(b->db, err, viol);
        return NULL;
    }
    if (slot >= 0) {
        b->cache[slot].sql = sql;
        b->cache[slot].st = st;
    }
    return st;
}

static bool cached(const be_sqlite *b, const sqlite3_stmt *st) {
    for (int i = 0; i < NCACHE; i++)
        if (b->cache[i].st == st) return true;
    return false;
}

static pst_status be_exec(void *be, const char *sql, const psb_val *params, int nparams,
                          psb_row_fn fn, void *ctx, int64_t *changes, psb_violation *viol,
                          pst_error *err) {
    be_sqlite *b = be;
    if (viol) *viol = PSB_V_NONE;
    sqlite3_stmt *st = stmt_for(b, sql, err, viol);
    if (!st) return err ? err->status : PST_ERR_IO;
    for (int i = 0; i < nparams; i++) {
        switch (params[i].kind) {
        case PSB_NULL: sqlite3_bind_null(st, i + 1); break;
        case PSB_TEXT: sqlite3_bind_text(st, i + 1, params[i].text, -1, SQLITE_STATIC); break;
        case PSB_INT: sqlite3_bind_int64(st, i + 1, params[i].i); break;
        }
    }
    pst_status r = PST_OK;
    int ncol = sqlite3_column_count(st);
    const char *colv[16];
    if (ncol > 16) ncol = 16;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (!fn) continue;
        for (int i = 0; i < ncol; i++)
            colv[i] = (const char *)sqlite3_column_text(st, i);
        psb_row row = {.ncol = ncol, .col = colv};
        r = fn(ctx, &row, err);
        if (r != PST_OK) break;
    }
    if (r == PST_OK && rc != SQLITE_DONE) r = sqlfail(b->db, err, viol);
    if (r == PST_OK && changes) *changes = sqlite3_changes64(b->db);
    sqlite3_clear_bindings(st);
    sqlite3_reset(st);
    if (!cached(b, st)) sqlite3_finalize(st);
    return r;
}

static pst_status be_begin(void *be, pst_error *err);
static pst_status be_commit(void *be, pst_error *err);
static void be_rollback(void *be);

static pst_status be_batch(void *be, const psb_stmt *stmts, int n, psb_row_fn fn, void *ctx,
                           int *failed_at, psb_violation *viol, pst_error *err) {
    if (failed_at) *failed_at = -1;
    if (viol) *viol = PSB_V_NONE;
    pst_status r = be_begin(be, err);
    for (int i = 0; i < n && r == PST_OK; i++) {
        r = be_exec(be, stmts[i].sql, stmts[i].params, stmts[i].nparams, i == 0 ? fn : NULL, ctx,
                    NULL, viol, err);
        if (r != PST_OK && failed_at) *failed_at = i;
    }
    if (r == PST_OK) r = be_commit(be, err);
    if (r != PST_OK) be_rollback(be);
    return r;
}

static pst_status be_begin(void *be, pst_error *err) {
    be_sqlite *b = be;
    /* IMMEDIATE: take the write lock now, so read-then-write cannot deadlock. */
    return run(b->db, "BEGIN IMMEDIATE") == SQLITE_OK ? PST_OK : sqlfail(b->db, err, NULL);
}

static pst_status be_commit(void *be, pst_error *err) {
    be_sqlite *b = be;
    return run(b->db, "COMMIT") == SQLITE_OK ? PST_OK : sqlfail(b->db, err, NULL);
}

static void be_rollback(void *be) {
    be_sqlite *b = be;
    if (!sqlite3_get_autocommit(b->db)) run(b->db, "ROLLBACK");
}

static int read_version(sqlite3 *db, int *version) {
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, "SELECT coalesce(max(version), 0) FROM schema_version", -1, &st,
                                NULL);
    if (rc != SQLITE_OK) return rc;
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *version = sqlite3_column_int(st, 0);
        rc = SQLITE_OK;
    }
    sqlite3_finalize(st);
    return rc;
}

static pst_status be_migrate(void *be, int target, int *version, pst_error *err) {
    be_sqlite *b = be;
    sqlite3 *db = b->db;
    /* IMMEDIATE: two processes opening a fresh file at once must not both migrate. */
    if (run(db, "BEGIN IMMEDIATE") != SQLITE_OK)
        return pst__ctx(err, sqlfail(db, err, NULL), "begin migration");
    int v = 0;
    pst_status st = PST_OK;
    if (run(db, "CREATE TABLE IF NOT EXISTS schema_version(version INTEGER NOT NULL)") !=
            SQLITE_OK ||
        read_version(db, &v) != SQLITE_OK) {
        st = pst__ctx(err, sqlfail(db, err, NULL), "read schema version");
        goto rollback;
    }
    if (v > target || target > NMIGRATIONS) {
        st = pst__fail(err, PST_ERR_SCHEMA, 0,
                       "database schema version %d is newer than this program's %d", v, target);
        goto rollback;
    }
    for (; v < target; v++) {
        char sql[96];
        snprintf(sql, sizeof sql,
                 "DELETE FROM schema_version; INSERT INTO schema_version VALUES(%d)", v + 1);
        if (run(db, migrations[v]) != SQLITE_OK || run(db, sql) != SQLITE_OK) {
            st = pst__ctx(err, sqlfail(db, err, NULL), "migration");
            goto rollback;
        }
    }
    if (run(db, "COMMIT") != SQLITE_OK) {
        st = pst__ctx(err, sqlfail(db, err, NULL), "commit migration");
        goto rollback;
    }
    *version = v;
    return PST_OK;
rollback:
    run(db, "ROLLBACK");
    return st;
}

static void be_close(void *be) {
    be_sqlite *b = be;
    if (!b) return;
    for (int i = 0; i < NCACHE; i++)
        sqlite3_finalize(b->cache[i].st);
    sqlite3_close_v2(b->db);
    free(b);
}

static const psb_ops sqlite_ops = {
    .name = "sqlite",
    .exec = be_exec,
    .batch = be_batch,
    .begin = be_begin,
    .commit = be_commit,
    .rollback = be_rollback,
    .migrate = be_migrate,
    .close = be_close,
};

/* mkdir -p of the directory part of path. */
static int make_parent_dirs(const char *path) {
    char *p = strdup(path);
    if (!p) return ENOMEM;
    char *slash = strrchr(p, '/');
    int rc = 0;
    if (slash && slash != p) {
        *slash = '\0';
        for (char *q = p + 1; *q; q++) {
            if (*q != '/') continue;
            *q = '\0';
            if (mkdir(p, 0700) != 0 && errno != EEXIST) rc = errno;
            *q = '/';
            if (rc) break;
        }
        if (!rc && mkdir(p, 0700) != 0 && errno != EEXIST) rc = errno;
    }
    free(p);
    return rc;
}

/* PRAGMA journal_mode=WAL, retried while another connection holds the lock it needs:
 * when two processes (or two hosts in one process) open a new shared database at once,
 * SQLite answers SQLITE_BUSY at once for the lock upgrade, without the busy handler
 * (waiting could deadlock), so busy_timeout alone does not cover it. Up to ~5 s. */
static int to_wal(sqlite3 *db) {
    int rc = SQLITE_BUSY;
    for (int i = 0; i < 500; i++) {
        rc = run(db, "PRAGMA journal_mode=WAL");
        if ((rc & 0xff) != SQLITE_BUSY && (rc & 0xff) != SQLITE_LOCKED) break;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return rc;
}

void *pst__sqlite_open(const char *path, const psb_ops **ops, pst_error *err) {
    bool memory = strcmp(path, ":memory:") == 0;
    if (!memory) {
        int rc = make_parent_dirs(path);
        if (rc) {
            pst__fail(err, PST_ERR_IO, 0, "cannot create the directory of %s: %s", path,
                      strerror(rc));
            return NULL;
        }
    }
    be_sqlite *b = calloc(1, sizeof *b);
    if (!b) {
        pst__fail(err, PST_ERR_NOMEM, 0, "out of memory");
        return NULL;
    }
    /* NOMUTEX: the store's mutex serialises every use of the connection. */
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
    if (sqlite3_open_v2(path, &b->db, flags, NULL) != SQLITE_OK) {
        if (b->db)
            pst__ctx(err, sqlfail(b->db, err, NULL), path);
        else
            pst__fail(err, PST_ERR_NOMEM, 0, "out of memory opening %s", path);
        goto fail;
    }
    sqlite3_busy_timeout(b->db, 5000);
    sqlite3_extended_result_codes(b->db, 1);
    if (run(b->db, "PRAGMA foreign_keys=ON") != SQLITE_OK ||
        (!memory && to_wal(b->db) != SQLITE_OK) ||
        run(b->db, "PRAGMA synchronous=NORMAL") != SQLITE_OK) {
        pst__ctx(err, sqlfail(b->db, err, NULL), "configure connection");
        goto fail;
    }
    *ops = &sqlite_ops;
    return b;
fail:
    sqlite3_close(b->db);
    free(b);
    return NULL;
}
