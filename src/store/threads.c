/*
 * threads.c — the rules for machines, workspaces and threads (= sessions): ensure,
 * create, get, rename/archive/model/meta updates, delete, the cursor-paged list, and the
 * ownership checks every write passes (a store opened with an owner machine writes only
 * threads of that machine's workspaces; a read-only store writes nothing). Portable SQL
 * with $N placeholders, run by the backend (be_sqlite.c / be_pg.c).
 */
#include "store_int.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LOCK(s)   pthread_mutex_lock(&(s)->mu)
#define UNLOCK(s) pthread_mutex_unlock(&(s)->mu)

static bool id_ok(const char *id) {
    return id && *id && strlen(id) < PST_ID_LEN;
}

/* The thread's owned strings and their column in THREAD_COLUMNS: the one list that
 * reading a row and clearing walk. cwd is never NULL ("" for a NULL column); the others
 * stay NULL when their column is. */
static const struct {
    int col;
    size_t off;
    const char *if_null; /* what a NULL column reads as */
} thread_strs[] = {
    {4, offsetof(pst_thread, cwd), ""},
    {5, offsetof(pst_thread, title), NULL},
    {6, offsetof(pst_thread, model), NULL},
    {7, offsetof(pst_thread, meta), NULL},
};
#define NTHREAD_STRS (sizeof thread_strs / sizeof thread_strs[0])

static char **thread_str(pst_thread *t, size_t i) {
    return (char **)((char *)t + thread_strs[i].off);
}

void pst_thread_clear(pst_thread *t) {
    if (!t) return;
    for (size_t i = 0; i < NTHREAD_STRS; i++)
        free(*thread_str(t, i));
    memset(t, 0, sizeof *t);
}

/* ---------------------------------------------------------------- ownership */

psb_val pst__owner_param(const pst_store *s) {
    return s->owner[0] ? PSB_T(s->owner) : PSB_NULLV;
}

pst_status pst__write_ok(pst_store *s, pst_error *err) {
    if (s->read_only)
        return pst__fail(err, PST_ERR_FOREIGN, 0,
                         "this host has no machine identity: writes to the shared store are "
                         "refused (set machineId / --machine-id)");
    return PST_OK;
}

static pst_status foreign(pst_error *err, const char *what, const char *id, const char *owner,
                          const char *me) {
    return pst__fail(err, PST_ERR_FOREIGN, 0,
                     "%s %.40s belongs to machine %.40s, not to this host's machine %.40s: "
                     "read-only here",
                     what, id, owner, me);
}

static pst_status copy_first(void *ctx, const psb_row *row, pst_error *err) {
    (void)err;
    char *out = ctx;
    snprintf(out, PST_ID_LEN, "%s", row->col[0] ? row->col[0] : "");
    return PST_OK;
}

pst_status pst__thread_owner_check(pst_store *s, const char *thread_id, pst_error *err) {
    char owner[PST_ID_LEN] = "";
    psb_val p[] = {PSB_T(thread_id)};
    pst_status r = PSB_EXEC(s,
                            "SELECT w.machine_id FROM threads t JOIN workspaces w ON "
                            "w.id = t.workspace_id WHERE t.id = $1",
                            p, copy_first, owner, NULL, NULL, err);
    if (r != PST_OK) return r;
    if (!owner[0]) return pst__fail(err, PST_ERR_NOT_FOUND, 0, "no such session: %s", thread_id);
    if (s->owner[0] && strcmp(owner, s->owner) != 0)
        return foreign(err, "session", thread_id, owner, s->owner);
    return PST_OK;
}

/* A machine other than the owner may not be created or changed by this store. */
static pst_status machine_write_ok(pst_store *s, const char *machine_id, pst_error *err) {
    pst_status r = pst__write_ok(s, err);
    if (r == PST_OK && s->owner[0] && strcmp(machine_id, s->owner) != 0)
        r = pst__fail(err, PST_ERR_FOREIGN, 0,
                      "machine %.40s is not this host's machine %.40s: read-only here", machine_id,
                      s->owner);
    return r;
}

/* ---------------------------------------------------------------- machines/workspaces */

static pst_status machine_ensure_locked(pst_store *s, const char *machine_id, const char *name,
                                        pst_error *err) {
    psb_val p[] = {PSB_T(machine_id), PSB_T(name), PSB_I(pst__now_ms())};
    pst_status r = PSB_EXEC(s,
                            "INSERT INTO machines(id, name, created_at) VALUES($1, $2, $3) "
                            "ON CONFLICT(id) DO UPDATE SET name = coalesce($2, machines.name)",
                            p, NULL, NULL, NULL, NULL, err);
    return r == PST_OK ? r : pst__ctx(err, r, "ensure machine");
}

pst_status pst_machine_ensure(pst_store *s, const char *machine_id, const char *name,
                              pst_error *err) {
    pst__ok(err);
    if (!s || !id_ok(machine_id)) return pst__fail(err, PST_ERR_ARG, 0, "bad machine id");
    LOCK(s);
    pst_status r = machine_write_ok(s, machine_id, err);
    if (r == PST_OK) r = machine_ensure_locked(s, machine_id, name, err);
    UNLOCK(s);
    return r;
}

static pst_status find_workspace(pst_store *s, const char *machine_id, const char *path,
                                 char out_id[PST_ID_LEN], pst_error *err) {
    out_id[0] = '\0';
    psb_val p[] = {PSB_T(machine_id), PSB_T(path)};
    pst_status r = PSB_EXEC(s, "SELECT id FROM workspaces WHERE machine_id = $1 AND path = $2", p,
                            copy_first, out_id, NULL, NULL, err);
    if (r != PST_OK) return pst__ctx(err, r, "find workspace");
    return out_id[0] ? PST_OK : PST_ERR_NOT_FOUND;
}

pst_status pst_workspace_ensure(pst_store *s, const char *machine_id, const char *path,
                                char out_id[PST_ID_LEN], pst_error *err) {
    pst__ok(err);
    if (!s || !id_ok(machine_id) || !path || !*path)
        return pst__fail(err, PST_ERR_ARG, 0, "bad machine id or workspace path");
    LOCK(s);
    pst_status r = find_workspace(s, machine_id, path, out_id, err);
    if (r != PST_ERR_NOT_FOUND) goto out;
    r = machine_write_ok(s, machine_id, err);
    if (r != PST_OK) goto out;
    /* Name-based: the same machine and root give the same id in every store. */
    if (!pst_workspace_id(machine_id, path, out_id)) {
        r = pst__fail(err, PST_ERR_IO, 0, "cannot derive a workspace id");
        goto out;
    }
    r = s->ops->begin(s->be, err);
    if (r != PST_OK) goto out;
    r = machine_ensure_locked(s, machine_id, NULL, err);
    if (r == PST_OK) {
        /* Another writer may have inserted it meanwhile: then it is the same row. */
        psb_val p[] = {PSB_T(out_id), PSB_T(machine_id), PSB_T(path), PSB_I(pst__now_ms())};
        r = PSB_EXEC(s,
                     "INSERT INTO workspaces(id, machine_id, path, created_at) "
                     "VALUES($1, $2, $3, $4) ON CONFLICT DO NOTHING",
                     p, NULL, NULL, NULL, NULL, err);
        if (r != PST_OK) pst__ctx(err, r, "insert workspace");
    }
    if (r == PST_OK) r = find_workspace(s, machine_id, path, out_id, err);
    if (r == PST_ERR_NOT_FOUND) r = pst__fail(err, PST_ERR_IO, 0, "workspace vanished");
    if (r == PST_OK) r = s->ops->commit(s->be, err);
    if (r != PST_OK) s->ops->rollback(s->be);
out:
    UNLOCK(s);
    return r;
}

/* ---------------------------------------------------------------- threads */

#define THREAD_COLUMNS                                                                             \
    "t.id, t.workspace_id, coalesce(t.parent_thread_id, ''), w.machine_id, w.path, t.title, "      \
    "t.model, t.meta, t.archived, t.message_count, t.created_at, t.updated_at "

/* Fills t from a row selected with THREAD_COLUMNS. */
static pst_status read_thread_row(const psb_row *row, pst_thread *t, pst_error *err) {
    const char *const *c = row->col;
    memset(t, 0, sizeof *t);
    snprintf(t->id, PST_ID_LEN, "%s", c[0] ? c[0] : "");
    snprintf(t->workspace_id, PST_ID_LEN, "%s", c[1] ? c[1] : "");
    snprintf(t->parent_id, PST_ID_LEN, "%s", c[2] ? c[2] : "");
    snprintf(t->machine_id, PST_ID_LEN, "%s", c[3] ? c[3] : "");
    bool oom = false;
    for (size_t i = 0; i < NTHREAD_STRS; i++) {
        const char *v = c[thread_strs[i].col] ? c[thread_strs[i].col] : thread_strs[i].if_null;
        char **f = thread_str(t, i);
        *f = pst__strdup(v);
        oom |= v && !*f;
    }
    t->archived = pst__i64(c[8]) != 0;
    t->message_count = pst__i64(c[9]);
    t->created_at = pst__i64(c[10]);
    t->updated_at = pst__i64(c[11]);
    if (oom) {
        pst_thread_clear(t);
        return pst__fail(err, PST_ERR_NOMEM, 0, "out of memory");
    }
    return PST_OK;
}

typedef struct page_fill {
    pst_thread_page *out;
    size_t limit;
    bool more;
} page_fill;

static pst_status take_page_row(void *ctx, const psb_row *row, pst_error *err) {
    page_fill *f = ctx;
    if (f->out->count == f->limit) {
        f->more = true;
        return PST_OK;
    }
    pst_status r = read_thread_row(row, &f->out->items[f->out->count], err);
    if (r == PST_OK) f->out->count++;
    return r;
}

static pst_status get_locked(pst_store *s, const char *id, pst_thread *out, pst_error *err) {
    /* a page of at most one: into out, or into tmp when only existence is asked */
    pst_thread tmp;
    pst_thread_page one = {.items = out ? out : &tmp};
    page_fill f = {.out = &one, .limit = 1};
    psb_val p[] = {PSB_T(id)};
    pst_status r = PSB_EXEC(s,
                            "SELECT " THREAD_COLUMNS
                            "FROM threads t JOIN workspaces w ON w.id = t.workspace_id "
                            "WHERE t.id = $1",
                            p, take_page_row, &f, NULL, NULL, err);
    if (!out && one.count) pst_thread_clear(&tmp);
    if (r != PST_OK) return pst__ctx(err, r, "get thread");
    if (!one.count) return pst__fail(err, PST_ERR_NOT_FOUND, 0, "no such session: %s", id);
    return PST_OK;
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
    pst_status r = pst__write_ok(s, err);
    if (r == PST_OK && s->owner[0]) {
        char owner[PST_ID_LEN] = "";
        psb_val p[] = {PSB_T(in->workspace_id)};
        r = PSB_EXEC(s, "SELECT machine_id FROM workspaces WHERE id = $1", p, copy_first, owner,
                     NULL, NULL, err);
        if (r == PST_OK && !owner[0])
            r = pst__fail(err, PST_ERR_NOT_FOUND, 0, "unknown workspace or parent session");
        else if (r == PST_OK && strcmp(owner, s->owner) != 0)
            r = foreign(err, "workspace", in->workspace_id, owner, s->owner);
    }
    if (r != PST_OK) goto out;
    psb_val p[] = {PSB_T(id),           PSB_T(in->workspace_id), PSB_T(in->parent_id),
                   PSB_T(in->title),    PSB_T(in->model),        PSB_T(in->meta),
                   PSB_I(pst__now_ms())};
    psb_violation v;
    r = PSB_EXEC(s,
                 "INSERT INTO threads(id, workspace_id, parent_thread_id, title, "
                 "model, meta, created_at, updated_at) VALUES($1, $2, $3, $4, $5, $6, $7, $7)",
                 p, NULL, NULL, NULL, &v, err);
    if (r == PST_ERR_ARG && v == PSB_V_FOREIGN_KEY)
        r = pst__fail(err, PST_ERR_NOT_FOUND, err ? err->sqlite_code : 0,
                      "unknown workspace or parent session");
    else if (r == PST_ERR_ARG && v == PSB_V_UNIQUE)
        r = pst__fail(err, PST_ERR_ARG, err ? err->sqlite_code : 0, "session %s already exists",
                      id);
    else if (r != PST_OK)
        pst__ctx(err, r, "create thread");
    if (r == PST_OK && out) r = get_locked(s, id, out, err);
out:
    UNLOCK(s);
    return r;
}

/* Runs an UPDATE/DELETE with $1 = id, $2 text, $3 number, $4 the owner guard, then tells
 * NOT_FOUND / FOREIGN apart when no row changed. */
static pst_status update_one(pst_store *s, const char *sql, const char *id, const char *text,
                             int64_t num, pst_error *err) {
    pst__ok(err);
    if (!s || !id_ok(id)) return pst__fail(err, PST_ERR_ARG, 0, "bad session id");
    LOCK(s);
    pst_status r = pst__write_ok(s, err);
    int64_t changed = 0;
    if (r == PST_OK) {
        psb_val p[] = {PSB_T(id), PSB_T(text), PSB_I(num), pst__owner_param(s)};
        r = PSB_EXEC(s, sql, p, NULL, NULL, &changed, NULL, err);
        if (r != PST_OK) pst__ctx(err, r, "update thread");
    }
    if (r == PST_OK && changed == 0) {
        r = pst__thread_owner_check(s, id, err);
        if (r == PST_OK) r = pst__fail(err, PST_ERR_NOT_FOUND, 0, "no such session: %s", id);
    }
    UNLOCK(s);
    return r;
}

/* The owner guard every thread write carries ($4: NULL = no check). */
#define OWNED                                                                                      \
    " AND (CAST($4 AS TEXT) IS NULL OR workspace_id IN "                                           \
    "(SELECT id FROM workspaces WHERE machine_id = $4))"

pst_status pst_thread_delete(pst_store *s, const char *id, pst_error *err) {
    /* Children and messages go through ON DELETE CASCADE. $2/$3 unused but typed. */
    return update_one(s,
                      "DELETE FROM threads WHERE id = $1 AND CAST($2 AS TEXT) IS NULL "
                      "AND CAST($3 AS BIGINT) IS NOT NULL" OWNED,
                      id, NULL, 0, err);
}

pst_status pst_thread_set_archived(pst_store *s, const char *id, bool archived, pst_error *err) {
    return update_one(s,
                      "UPDATE threads SET archived = CAST($3 AS INTEGER) WHERE id = $1 "
                      "AND CAST($2 AS TEXT) IS NULL" OWNED,
                      id, NULL, archived ? 1 : 0, err);
}

pst_status pst_thread_rename(pst_store *s, const char *id, const char *title, pst_error *err) {
    return update_one(s, "UPDATE threads SET title = $2, updated_at = $3 WHERE id = $1" OWNED, id,
                      title, pst__now_ms(), err);
}

pst_status pst_thread_set_model(pst_store *s, const char *id, const char *model, pst_error *err) {
    return update_one(s,
                      "UPDATE threads SET model = $2 WHERE id = $1 "
                      "AND CAST($3 AS BIGINT) IS NOT NULL" OWNED,
                      id, model, 0, err);
}

pst_status pst_thread_set_meta(pst_store *s, const char *id, const char *meta_json,
                               pst_error *err) {
    pst_status r = update_one(s,
                              "UPDATE threads SET meta = $2 WHERE id = $1 "
                              "AND CAST($3 AS BIGINT) IS NOT NULL" OWNED,
                              id, meta_json, 0, err);
    return r;
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
    out->items = calloc((size_t)limit + 1, sizeof *out->items);
    if (!out->items) return pst__fail(err, PST_ERR_NOMEM, 0, "out of memory");
    LOCK(s);
    psb_val p[] = {PSB_T(q->cwd),
                   PSB_T(q->machine_id),
                   PSB_I(q->include_archived),
                   PSB_I(q->include_empty),
                   PSB_I(q->include_children),
                   q->cursor ? PSB_I(cur_ts) : PSB_NULLV,
                   PSB_T(cur_id),
                   PSB_I(limit + 1)}; /* one extra row tells whether a next page exists */
    page_fill f = {.out = out, .limit = (size_t)limit};
    pst_status r = PSB_EXEC(s,
                            "SELECT " THREAD_COLUMNS
                            "FROM threads t JOIN workspaces w ON w.id = t.workspace_id "
                            "WHERE (CAST($1 AS TEXT) IS NULL OR w.path = $1) "
                            "AND (CAST($2 AS TEXT) IS NULL OR w.machine_id = $2) "
                            "AND ($3 = 1 OR t.archived = 0) AND ($4 = 1 OR t.message_count > 0) "
                            "AND ($5 = 1 OR t.parent_thread_id IS NULL) "
                            "AND (CAST($6 AS BIGINT) IS NULL OR t.updated_at < $6 "
                            "OR (t.updated_at = $6 AND t.id < $7)) "
                            "ORDER BY t.updated_at DESC, t.id DESC LIMIT $8",
                            p, take_page_row, &f, NULL, NULL, err);
    UNLOCK(s);
    if (r != PST_OK) {
        pst__ctx(err, r, "list threads");
    } else if (f.more) {
        const pst_thread *last = &out->items[out->count - 1];
        char buf[64];
        snprintf(buf, sizeof buf, "%" PRId64 ":%s", last->updated_at, last->id);
        out->next_cursor = strdup(buf);
        if (!out->next_cursor) r = pst__fail(err, PST_ERR_NOMEM, 0, "out of memory");
    }
    if (r != PST_OK) pst_thread_page_clear(out);
    return r;
}
