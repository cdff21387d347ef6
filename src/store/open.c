/*
 * open.c — opening a store: parent directories, connection pragmas (WAL, foreign keys,
 * busy timeout) and the versioned migrations, run in one transaction at open.
 */
#include "store_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Migration N brings the schema from version N-1 to N. Append only; never edit one that
 * has shipped. */
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

static pst_status migrate(pst_store *s, pst_error *err) {
    sqlite3 *db = s->db;
    /* IMMEDIATE: two processes opening a fresh file at once must not both migrate. */
    if (pst__exec(db, "BEGIN IMMEDIATE") != SQLITE_OK)
        return pst__sqlfail(db, err, "begin migration");
    int v = 0;
    pst_status st = PST_OK;
    if (pst__exec(db, "CREATE TABLE IF NOT EXISTS schema_version(version INTEGER NOT NULL)") !=
            SQLITE_OK ||
        read_version(db, &v) != SQLITE_OK) {
        st = pst__sqlfail(db, err, "read schema version");
        goto rollback;
    }
    if (v > NMIGRATIONS) {
        st =
            pst__fail(err, PST_ERR_SCHEMA, 0,
                      "database schema version %d is newer than this program's %d", v, NMIGRATIONS);
        goto rollback;
    }
    for (; v < NMIGRATIONS; v++) {
        char sql[96];
        snprintf(sql, sizeof sql,
                 "DELETE FROM schema_version; INSERT INTO schema_version "
                 "VALUES(%d)",
                 v + 1);
        if (pst__exec(db, migrations[v]) != SQLITE_OK || pst__exec(db, sql) != SQLITE_OK) {
            st = pst__sqlfail(db, err, "migration");
            goto rollback;
        }
    }
    if (pst__exec(db, "COMMIT") != SQLITE_OK) {
        st = pst__sqlfail(db, err, "commit migration");
        goto rollback;
    }
    s->version = v;
    return PST_OK;
rollback:
    pst__exec(db, "ROLLBACK");
    return st;
}

pst_store *pst_open(const char *path, pst_error *err) {
    pst__ok(err);
    if (!path || !*path) {
        pst__fail(err, PST_ERR_ARG, 0, "no database path");
        return NULL;
    }
    bool memory = strcmp(path, ":memory:") == 0;
    if (!memory) {
        int rc = make_parent_dirs(path);
        if (rc) {
            pst__fail(err, PST_ERR_IO, 0, "cannot create the directory of %s: %s", path,
                      strerror(rc));
            return NULL;
        }
    }
    pst_store *s = calloc(1, sizeof *s);
    if (!s) {
        pst__fail(err, PST_ERR_NOMEM, 0, "out of memory");
        return NULL;
    }
    if (pthread_mutex_init(&s->mu, NULL) != 0) {
        free(s);
        pst__fail(err, PST_ERR_IO, 0, "cannot create the store mutex");
        return NULL;
    }
    /* NOMUTEX: our own mutex serialises every use of the connection. */
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
    if (sqlite3_open_v2(path, &s->db, flags, NULL) != SQLITE_OK) {
        if (s->db)
            pst__sqlfail(s->db, err, path);
        else
            pst__fail(err, PST_ERR_NOMEM, 0, "out of memory opening %s", path);
        goto fail;
    }
    sqlite3_busy_timeout(s->db, 5000);
    sqlite3_extended_result_codes(s->db, 1);
    if (pst__exec(s->db, "PRAGMA foreign_keys=ON") != SQLITE_OK ||
        (!memory && pst__exec(s->db, "PRAGMA journal_mode=WAL") != SQLITE_OK) ||
        pst__exec(s->db, "PRAGMA synchronous=NORMAL") != SQLITE_OK) {
        pst__sqlfail(s->db, err, "configure connection");
        goto fail;
    }
    if (migrate(s, err) != PST_OK) goto fail;
    return s;
fail:
    sqlite3_close(s->db);
    pthread_mutex_destroy(&s->mu);
    free(s);
    return NULL;
}

void pst_close(pst_store *s) {
    if (!s) return;
    sqlite3_close_v2(s->db);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

int pst_schema_version(pst_store *s) {
    return s ? s->version : 0;
}
