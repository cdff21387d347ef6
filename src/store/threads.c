/*
 * threads.c — machines, workspaces and threads (= sessions): ensure, create, get,
 * rename/archive/model/meta updates, delete, and the cursor-paged list.
 */
#include "store_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LOCK(s)   pthread_mutex_lock(&(s)->mu)
#define UNLOCK(s) pthread_mutex_unlock(&(s)->mu)

static bool id_ok(const char *id) {
    return id && *id && strlen(id) < PST_ID_LEN;
}

static void bind_text_or_null(sqlite3_stmt *st, int i, const char *v) {
    if (v)
        sqlite3_bind_text(st, i, v, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, i);
}

void pst_thread_clear(pst_thread *t) {
    if (!t) return;
    free(t->cwd);
    free(t->title);
    free(t->model);
    free(t->meta);
    memset(t, 0, sizeof *t);
}

/* ---------------------------------------------------------------- machines/workspaces */

static pst_status machine_ensure_locked(pst_store *s, const char *machine_id, const char *name,
                                        pst_error *err) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db,
                           "INSERT INTO machines(id, name, created_at) VALUES(?1, ?2, ?3) "
                           "ON CONFLICT(id) DO UPDATE SET name = coalesce(?2, name)",
                           -1, &st, NULL) != SQLITE_OK)
        return pst__sqlfail(s->db, err, "ensure machine");
    sqlite3_bind_text(st, 1, machine_id, -1, SQLITE_TRANSIENT);
    bind_text_or_null(st, 2, name);
    sqlite3_bind_int64(st, 3, pst__now_ms());
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? PST_OK : pst__sqlfail(s->db, err, "ensure machine");
}

pst_status pst_machine_ensure(pst_store *s, const char *machine_id, const char *name,
                              pst_error *err) {
    pst__ok(err);
    if (!s || !id_ok(machine_id)) return pst__fail(err, PST_ERR_ARG, 0, "bad machine id");
    LOCK(s);
    pst_status r = machine_ensure_locked(s, machine_id, name, err);
    UNLOCK(s);
    return r;
}

static pst_status find_workspace(pst_store *s, const char *machine_id, const char *path,
                                 char out_id[PST_ID_LEN], pst_error *err) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, "SELECT id FROM workspaces WHERE machine_id=?1 AND path=?2", -1,
                           &st, NULL) != SQLITE_OK)
        return pst__sqlfail(s->db, err, "find workspace");
    sqlite3_bind_text(st, 1, machine_id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, path, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(st);
    pst_status r;
    if (rc == SQLITE_ROW) {
        snprintf(out_id, PST_ID_LEN, "%s", (const char *)sqlite3_column_text(st, 0));
        r = PST_OK;
    } else if (rc == SQLITE_DONE) {
        r = PST_ERR_NOT_FOUND;
    } else {
        r = pst__sqlfail(s->db, err, "find workspace");
    }
    sqlite3_finalize(st);
    return r;
}

pst_status pst_workspace_ensure(pst_store *s, const char *machine_id, const char *path,
                                char out_id[PST_ID_LEN], pst_error *err) {
    pst__ok(err);
    if (!s || !id_ok(machine_id) || !path || !*path)
        return pst__fail(err, PST_ERR_ARG, 0, "bad machine id or workspace path");
    LOCK(s);
    pst_status r = find_workspace(s, machine_id, path, out_id, err);
    if (r != PST_ERR_NOT_FOUND) goto out;
    if (pst__exec(s->db, "BEGIN IMMEDIATE") != SQLITE_OK) {
        r = pst__sqlfail(s->db, err, "begin");
        goto out;
    }
    /* Someone else may have inserted it between our read and the write lock. */
    r = find_workspace(s, machine_id, path, out_id, err);
    if (r == PST_ERR_NOT_FOUND) {
        r = machine_ensure_locked(s, machine_id, NULL, err);
        sqlite3_stmt *st = NULL;
        /* Name-based: the same machine and root give the same id in every store. */
        if (r == PST_OK && !pst_workspace_id(machine_id, path, out_id))
            r = pst__fail(err, PST_ERR_IO, 0, "cannot derive a workspace id");
        if (r == PST_OK &&
            sqlite3_prepare_v2(s->db,
                               "INSERT INTO workspaces(id, machine_id, path, created_at) "
                               "VALUES(?1, ?2, ?3, ?4)",
                               -1, &st, NULL) != SQLITE_OK)
            r = pst__sqlfail(s->db, err, "insert workspace");
        if (r == PST_OK) {
            sqlite3_bind_text(st, 1, out_id, -1, SQLITE_TRANSIENT);
            sqlite3_bind_text(st, 2, machine_id, -1, SQLITE_TRANSIENT);
            sqlite3_bind_text(st, 3, path, -1, SQLITE_TRANSIENT);
            sqlite3_bind_int64(st, 4, pst__now_ms());
            if (sqlite3_step(st) != SQLITE_DONE) r = pst__sqlfail(s->db, err, "insert workspace");
        }
        sqlite3_finalize(st);
    }
    if (r == PST_OK && pst__exec(s->db, "COMMIT") != SQLITE_OK)
        r = pst__sqlfail(s->db, err, "commit");
    if (r != PST_OK) pst__exec(s->db, "ROLLBACK");
out:
    UNLOCK(s);
    return r;
}

/* ---------------------------------------------------------------- threads */

#define THREAD_COLUMNS                                                                             \
    "t.id, t.workspace_id, coalesce(t.parent_thread_id, ''), w.machine_id, w.path, t.title, "      \
    "t.model, t.meta, t.archived, t.message_count, t.created_at, t.updated_at "

static char *col_dup(sqlite3_stmt *st, int i) {
    const unsigned char *v = sqlite3_column_text(st, i);
    return v ? strdup((const char *)v) : NULL;
}

/* Fills t from a row selected with THREAD_COLUMNS. */
static pst_status read_thread_row(sqlite3_stmt *st, pst_thread *t, pst_error *err) {
    memset(t, 0, sizeof *t);
    snprintf(t->id, PST_ID_LEN, "%s", (const char *)sqlite3_column_text(st, 0));
    snprintf(t->workspace_id, PST_ID_LEN, "%s", (const char *)sqlite3_column_text(st, 1));
    snprintf(t->parent_id, PST_ID_LEN, "%s", (const char *)sqlite3_column_text(st, 2));
    snprintf(t->machine_id, PST_ID_LEN, "%s", (const char *)sqlite3_column_text(st, 3));
    t->cwd = col_dup(st, 4);
    t->title = col_dup(st, 5);
    t->model = col_dup(st, 6);
    t->meta = col_dup(st, 7);
    t->archived = sqlite3_column_int(st, 8) != 0;
    t->message_count = sqlite3_column_int64(st, 9);
    t->created_at = sqlite3_column_int64(st, 10);
    t->updated_at = sqlite3_column_int64(st, 11);
    if (!t->cwd || (!t->title && sqlite3_column_type(st, 5) != SQLITE_NULL) ||
        (!t->model && sqlite3_column_type(st, 6) != SQLITE_NULL) ||
        (!t->meta && sqlite3_column_type(st, 7) != SQLITE_NULL)) {
        pst_thread_clear(t);
        return pst__fail(err, PST_ERR_NOMEM, 0, "out of memory");
    }
    return PST_OK;
}

static pst_status get_locked(pst_store *s, const char *id, pst_thread *out, pst_error *err) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db,
                           "SELECT " THREAD_COLUMNS
                           "FROM threads t JOIN workspaces w ON w.id = t.workspace_id "
                           "WHERE t.id = ?1",
                           -1, &st, NULL) != SQLITE_OK)
        return pst__sqlfail(s->db, err, "get thread");
    sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(st);
    pst_status r;
    if (rc == SQLITE_ROW)
        r = out ? read_thread_row(st, out, err) : PST_OK;
    else if (rc == SQLITE_DONE)
        r = pst__fail(err, PST_ERR_NOT_FOUND, 0, "no such session: %s", id);
    else
        r = pst__sqlfail(s->db, err, "get thread");
    sqlite3_finalize(st);
    return r;
}

pst_status pst_thread_get(pst_store *s, const char *id, pst_thread *out, pst_error *err) {
    pst__ok(err);
    if (out) memset(out, 0, sizeof *out);
    if (!s || !id_ok(id)) return pst__fail(err, PST_ERR_ARG, 0, "bad session id");
    LOCK(s);
    pst_status r = get_locked(s, id, out, err);
    UNLOCK(s);
    return r;
}

pst_status pst_thread_create(pst_store *s, const pst_thread_new *in, pst_thread *out,
                             pst_error *err) {
    pst__ok(err);
    if (out) memset(out, 0, sizeof *out);
    if (!s || !in || !id_ok(in->workspace_id) || (in->id && !id_ok(in->id)) ||
        (in->parent_id && !id_ok(in->parent_id)))
        return pst__fail(err, PST_ERR_ARG, 0, "bad thread arguments");
    char id[PST_ID_LEN];
    if (in->id)
        snprintf(id, sizeof id, "%s", in->id);
    else if (!pst_uuid_v7(id))
        return pst__fail(err, PST_ERR_IO, 0, "no randomness for a session id");
    LOCK(s);
    sqlite3_stmt *st = NULL;
    pst_status r = PST_OK;
    if (sqlite3_prepare_v2(s->db,
                           "INSERT INTO threads(id, workspace_id, parent_thread_id, title, "
                           "model, meta, created_at, updated_at) "
                           "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7)",
                           -1, &st, NULL) != SQLITE_OK) {
        r = pst__sqlfail(s->db, err, "create thread");
        goto out;
    }
    sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, in->workspace_id, -1, SQLITE_TRANSIENT);
    bind_text_or_null(st, 3, in->parent_id);
    bind_text_or_null(st, 4, in->title);
    bind_text_or_null(st, 5, in->model);
    bind_text_or_null(st, 6, in->meta);
    sqlite3_bind_int64(st, 7, pst__now_ms());
    if (sqlite3_step(st) != SQLITE_DONE) {
        int code = sqlite3_extended_errcode(s->db);
        if (code == SQLITE_CONSTRAINT_FOREIGNKEY)
            r = pst__fail(err, PST_ERR_NOT_FOUND, code, "unknown workspace or parent session");
        else if (code == SQLITE_CONSTRAINT_PRIMARYKEY)
            r = pst__fail(err, PST_ERR_ARG, code, "session %s already exists", id);
        else
            r = pst__sqlfail(s->db, err, "create thread");
        goto out;
    }
    if (out) r = get_locked(s, id, out, err);
out:
    sqlite3_finalize(st);
    UNLOCK(s);
    return r;
}

/* Runs an UPDATE/DELETE with ?1 = id and optional ?2 text, then reports NOT_FOUND when no
 * row changed. */
static pst_status update_one(pst_store *s, const char *sql, const char *id, const char *text,
                             int64_t num, pst_error *err) {
    pst__ok(err);
    if (!s || !id_ok(id)) return pst__fail(err, PST_ERR_ARG, 0, "bad session id");
    LOCK(s);
    sqlite3_stmt *st = NULL;
    pst_status r = PST_OK;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) {
        r = pst__sqlfail(s->db, err, "update thread");
        goto out;
    }
    sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
    if (sqlite3_bind_parameter_count(st) >= 2) bind_text_or_null(st, 2, text);
    if (sqlite3_bind_parameter_count(st) >= 3) sqlite3_bind_int64(st, 3, num);
    if (sqlite3_step(st) != SQLITE_DONE)
        r = pst__sqlfail(s->db, err, "update thread");
    else if (sqlite3_changes(s->db) == 0)
        r = pst__fail(err, PST_ERR_NOT_FOUND, 0, "no such session: %s", id);
out:
    sqlite3_finalize(st);
    UNLOCK(s);
    return r;
}

pst_status pst_thread_delete(pst_store *s, const char *id, pst_error *err) {
    /* Children and messages go through ON DELETE CASCADE (foreign_keys=ON). */
    return update_one(s, "DELETE FROM threads WHERE id = ?1", id, NULL, 0, err);
}

pst_status pst_thread_set_archived(pst_store *s, const char *id, bool archived, pst_error *err) {
    return update_one(s, "UPDATE threads SET archived = ?3 WHERE id = ?1", id, NULL,
                      archived ? 1 : 0, err);
}

pst_status pst_thread_rename(pst_store *s, const char *id, const char *title, pst_error *err) {
    return update_one(s, "UPDATE threads SET title = ?2, updated_at = ?3 WHERE id = ?1", id, title,
                      pst__now_ms(), err);
}

pst_status pst_thread_set_model(pst_store *s, const char *id, const char *model, pst_error *err) {
    return update_one(s, "UPDATE threads SET model = ?2 WHERE id = ?1", id, model, 0, err);
}

pst_status pst_thread_set_meta(pst_store *s, const char *id, const char *meta_json,
                               pst_error *err) {
    return update_one(s, "UPDATE threads SET meta = ?2 WHERE id = ?1", id, meta_json, 0, err);
}

/* ---------------------------------------------------------------- list */

void pst_thread_page_clear(pst_thread_page *p) {
    if (!p) return;
    for (size_t i = 0; i < p->count; i++)
        pst_thread_clear(&p->items[i]);
    free(p->items);
    free(p->next_cursor);
    memset(p, 0, sizeof *p);
}

/* Cursor text: "<updated_at>:<id>" of the last row of the previous page. */
static bool parse_cursor(const char *c, int64_t *ts, char id[PST_ID_LEN]) {
    char *end = NULL;
    long long v = strtoll(c, &end, 10);
    if (end == c || *end != ':' || v < 0 || !id_ok(end + 1)) return false;
    for (const char *p = end + 1; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
              *p == '-' || *p == '_'))
            return false;
    *ts = v;
    snprintf(id, PST_ID_LEN, "%s", end + 1);
    return true;
}

pst_status pst_thread_list(pst_store *s, const pst_list_query *q, pst_thread_page *out,
                           pst_error *err) {
    pst__ok(err);
    if (out) memset(out, 0, sizeof *out);
    if (!s || !q || !out) return pst__fail(err, PST_ERR_ARG, 0, "bad list arguments");
    int limit = q->limit == 0 ? 100 : q->limit;
    if (limit < 1 || limit > 500) return pst__fail(err, PST_ERR_ARG, 0, "limit must be 1..500");
    int64_t cur_ts = 0;
    char cur_id[PST_ID_LEN] = "";
    if (q->cursor && !parse_cursor(q->cursor, &cur_ts, cur_id))
        return pst__fail(err, PST_ERR_ARG, 0, "bad cursor");
    LOCK(s);
    sqlite3_stmt *st = NULL;
    pst_status r = PST_OK;
    if (sqlite3_prepare_v2(
            s->db,
            "SELECT " THREAD_COLUMNS "FROM threads t JOIN workspaces w ON w.id = t.workspace_id "
            "WHERE (?1 IS NULL OR w.path = ?1) AND (?2 IS NULL OR w.machine_id = ?2) "
            "AND (?3 OR t.archived = 0) AND (?4 OR t.message_count > 0) "
            "AND (?5 OR t.parent_thread_id IS NULL) "
            "AND (?6 IS NULL OR t.updated_at < ?6 OR (t.updated_at = ?6 AND t.id < ?7)) "
            "ORDER BY t.updated_at DESC, t.id DESC LIMIT ?8",
            -1, &st, NULL) != SQLITE_OK) {
        r = pst__sqlfail(s->db, err, "list threads");
        goto out;
    }
    bind_text_or_null(st, 1, q->cwd);
    bind_text_or_null(st, 2, q->machine_id);
    sqlite3_bind_int(st, 3, q->include_archived);
    sqlite3_bind_int(st, 4, q->include_empty);
    sqlite3_bind_int(st, 5, q->include_children);
    if (q->cursor)
        sqlite3_bind_int64(st, 6, cur_ts);
    else
        sqlite3_bind_null(st, 6);
    sqlite3_bind_text(st, 7, cur_id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 8, limit + 1); /* one extra row tells whether a next page exists */
    out->items = calloc((size_t)limit + 1, sizeof *out->items);
    if (!out->items) {
        r = pst__fail(err, PST_ERR_NOMEM, 0, "out of memory");
        goto out;
    }
    int rc;
    bool more = false;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (out->count == (size_t)limit) {
            more = true;
            break;
        }
        r = read_thread_row(st, &out->items[out->count], err);
        if (r != PST_OK) goto out;
        out->count++;
    }
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        r = pst__sqlfail(s->db, err, "list threads");
        goto out;
    }
    if (more) {
        const pst_thread *last = &out->items[out->count - 1];
        char buf[64];
        snprintf(buf, sizeof buf, "%" PRId64 ":%s", last->updated_at, last->id);
        out->next_cursor = strdup(buf);
        if (!out->next_cursor) r = pst__fail(err, PST_ERR_NOMEM, 0, "out of memory");
    }
out:
    sqlite3_finalize(st);
    UNLOCK(s);
    if (r != PST_OK) pst_thread_page_clear(out);
    return r;
}
