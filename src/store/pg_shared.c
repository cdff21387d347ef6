/*
 * pg_shared.c — what the two PostgreSQL clients of the store share: the dialect's
 * migrations (be_pg.c runs them over libpq, remote.c over the wire client) and the
 * SQLSTATE → pst_status mapping. One copy, so both clients create the same schema and
 * answer a failed statement with the same status. No I/O; compiles for wasm32-wasi.
 */
#include "store_sql.h"

#include <string.h>

const char *const pst__pg_migrations[] = {
    /* 1: the machine → workspace → thread → message model */
    "CREATE TABLE machines("
    "  id TEXT COLLATE \"C\" PRIMARY KEY,"
    "  name TEXT,"
    "  identity_kind TEXT NOT NULL DEFAULT 'known'"
    "    CHECK(identity_kind IN ('known','legacy_unknown')),"
    "  created_at BIGINT NOT NULL);"
    "CREATE TABLE workspaces("
    "  id TEXT COLLATE \"C\" PRIMARY KEY,"
    "  machine_id TEXT COLLATE \"C\" NOT NULL REFERENCES machines(id) ON DELETE CASCADE,"
    "  path TEXT COLLATE \"C\" NOT NULL,"
    "  path_source TEXT NOT NULL DEFAULT 'discovered'"
    "    CHECK(path_source IN ('discovered','derived_legacy','unverified')),"
    "  created_at BIGINT NOT NULL,"
    "  UNIQUE(machine_id, path));"
    "CREATE TABLE threads("
    "  id TEXT COLLATE \"C\" PRIMARY KEY,"
    "  workspace_id TEXT COLLATE \"C\" NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,"
    "  parent_thread_id TEXT COLLATE \"C\" REFERENCES threads(id) ON DELETE CASCADE,"
    "  title TEXT,"
    "  model TEXT,"
    "  archived INTEGER NOT NULL DEFAULT 0,"
    "  meta JSON,"
    "  message_count BIGINT NOT NULL DEFAULT 0,"
    "  next_seq BIGINT NOT NULL DEFAULT 1,"
    "  created_at BIGINT NOT NULL,"
    "  updated_at BIGINT NOT NULL);"
    "CREATE INDEX threads_by_update ON threads(updated_at DESC, id DESC);"
    "CREATE INDEX threads_by_workspace ON threads(workspace_id, updated_at DESC, id DESC);"
    "CREATE INDEX threads_by_parent ON threads(parent_thread_id);"
    "CREATE TABLE messages("
    "  thread_id TEXT COLLATE \"C\" NOT NULL REFERENCES threads(id) ON DELETE CASCADE,"
    "  seq BIGINT NOT NULL,"
    "  role TEXT NOT NULL CHECK(length(role) > 0),"
    "  content JSON NOT NULL,"
    "  meta JSON,"
    "  created_at BIGINT NOT NULL,"
    "  PRIMARY KEY(thread_id, seq));",
};
const int pst__pg_nmigrations = (int)(sizeof pst__pg_migrations / sizeof pst__pg_migrations[0]);

_Static_assert(sizeof pst__pg_migrations / sizeof pst__pg_migrations[0] == PST_SCHEMA_VERSION,
               "one migration per schema version");

pst_status pst__pg_sqlstate_status(const char *state, psb_violation *viol) {
    psb_violation v = PSB_V_NONE;
    pst_status st = PST_ERR_IO;
    if (!state || !strncmp(state, "08", 2) || !strncmp(state, "57P", 3)) {
        st = PST_ERR_CONN;
    } else if (!strcmp(state, "23503")) {
        st = PST_ERR_ARG;
        v = PSB_V_FOREIGN_KEY;
    } else if (!strcmp(state, "23505")) {
        st = PST_ERR_ARG;
        v = PSB_V_UNIQUE;
    } else if (!strncmp(state, "23", 2) || !strncmp(state, "22", 2)) {
        st = PST_ERR_ARG;
        v = PSB_V_CHECK;
    } else if (!strncmp(state, "40", 2) || !strcmp(state, "55P03")) {
        st = PST_ERR_BUSY;
    } else if (!strcmp(state, "53200")) {
        st = PST_ERR_NOMEM;
    }
    if (viol) *viol = v;
    return st;
}
