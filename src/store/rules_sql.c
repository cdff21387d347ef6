/*
 * rules_sql.c — the rules' texts that need no connection: every SQL statement of the
 * rules (portable SQL with $N placeholders), reading a thread or message row, the cursor
 * format and the ownership refusals' messages. The native rules (threads.c, messages.c)
 * and the remote client (remote.c) both use these, so the two answer the same way with
 * the same words. No I/O, no lock; compiles for wasm32-wasi.
 */
#include "store_sql.h"
#include "peri/base.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool id_ok(const char *id) {
    return id && *id && strlen(id) < PST_ID_LEN;
}

#define THREAD_COLUMNS                                                                             \
    "t.id, t.workspace_id, coalesce(t.parent_thread_id, ''), w.machine_id, w.path, t.title, "      \
    "t.model, t.meta, t.archived, t.message_count, t.created_at, t.updated_at "

/* The owner guard every thread write carries ($4: NULL = no check). */
#define OWNED                                                                                      \
    " AND (CAST($4 AS TEXT) IS NULL OR workspace_id IN "                                           \
    "(SELECT id FROM workspaces WHERE machine_id = $4))"

const char pst__sql_thread_owner[] = "SELECT w.machine_id FROM threads t JOIN workspaces w ON "
                                     "w.id = t.workspace_id WHERE t.id = $1";
const char pst__sql_machine_ensure[] =
    "INSERT INTO machines(id, name, created_at) VALUES($1, $2, $3) "
    "ON CONFLICT(id) DO UPDATE SET name = coalesce($2, machines.name)";
const char pst__sql_workspace_find[] =
    "SELECT id FROM workspaces WHERE machine_id = $1 AND path = $2";
const char pst__sql_workspace_insert[] = "INSERT INTO workspaces(id, machine_id, path, created_at) "
                                         "VALUES($1, $2, $3, $4) ON CONFLICT DO NOTHING";
const char pst__sql_thread_get[] =
    "SELECT " THREAD_COLUMNS "FROM threads t JOIN workspaces w ON w.id = t.workspace_id "
    "WHERE t.id = $1";
const char pst__sql_workspace_owner[] = "SELECT machine_id FROM workspaces WHERE id = $1";
const char pst__sql_thread_insert[] =
    "INSERT INTO threads(id, workspace_id, parent_thread_id, title, "
    "model, meta, created_at, updated_at) VALUES($1, $2, $3, $4, $5, $6, $7, $7)";
const char pst__sql_thread_delete[] =
    "DELETE FROM threads WHERE id = $1 AND CAST($2 AS TEXT) IS NULL "
    "AND CAST($3 AS BIGINT) IS NOT NULL" OWNED;
const char pst__sql_thread_archive[] =
    "UPDATE threads SET archived = CAST($3 AS INTEGER) WHERE id = $1 "
    "AND CAST($2 AS TEXT) IS NULL" OWNED;
const char pst__sql_thread_rename[] =
    "UPDATE threads SET title = $2, updated_at = $3 WHERE id = $1" OWNED;
const char pst__sql_thread_model[] = "UPDATE threads SET model = $2 WHERE id = $1 "
                                     "AND CAST($3 AS BIGINT) IS NOT NULL" OWNED;
const char pst__sql_thread_meta[] = "UPDATE threads SET meta = $2 WHERE id = $1 "
                                    "AND CAST($3 AS BIGINT) IS NOT NULL" OWNED;
const char pst__sql_thread_list[] =
    "SELECT " THREAD_COLUMNS "FROM threads t JOIN workspaces w ON w.id = t.workspace_id "
    "WHERE (CAST($1 AS TEXT) IS NULL OR w.path = $1) "
    "AND (CAST($2 AS TEXT) IS NULL OR w.machine_id = $2) "
    "AND ($3 = 1 OR t.archived = 0) AND ($4 = 1 OR t.message_count > 0) "
    "AND ($5 = 1 OR t.parent_thread_id IS NULL) "
    "AND (CAST($6 AS BIGINT) IS NULL OR t.updated_at < $6 "
    "OR (t.updated_at = $6 AND t.id < $7)) "
    "ORDER BY t.updated_at DESC, t.id DESC LIMIT $8";
const char pst__sql_message_insert[] =
    "INSERT INTO messages(thread_id, seq, role, content, meta, created_at) "
    "VALUES($1, (SELECT next_seq FROM threads WHERE id = $1 AND "
    "(CAST($7 AS TEXT) IS NULL OR workspace_id IN "
    "(SELECT id FROM workspaces WHERE machine_id = $7))) - $2, $3, $4, $5, $6)";
const char pst__sql_message_reserve[] =
    "UPDATE threads SET next_seq = next_seq + $2, "
    "message_count = message_count + $2, "
    "updated_at = CASE WHEN updated_at > $3 THEN updated_at ELSE $3 END "
    "WHERE id = $1 AND (CAST($4 AS TEXT) IS NULL OR workspace_id IN "
    "(SELECT id FROM workspaces WHERE machine_id = $4)) "
    "RETURNING next_seq - $2";
const char pst__sql_thread_next_seq[] = "SELECT next_seq FROM threads WHERE id = $1";
const char pst__sql_message_count[] = "SELECT message_count FROM threads WHERE id = $1";
const char pst__sql_message_load[] = "SELECT seq, role, content, meta, created_at FROM messages "
                                     "WHERE thread_id = $1 ORDER BY seq";

/* ---------------------------------------------------------------- rows */

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

/* Fills t from a row selected with THREAD_COLUMNS. */
pst_status pst__read_thread_row(const psb_row *row, pst_thread *t, pst_error *err) {
    const char *const *c = row->col;
    memset(t, 0, sizeof *t);
    PSB_NEED_COLS(row, 12, err);
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

void pst_thread_page_clear(pst_thread_page *p) {
    if (!p) return;
    for (size_t i = 0; i < p->count; i++)
        pst_thread_clear(&p->items[i]);
    free(p->items);
    free(p->next_cursor);
    memset(p, 0, sizeof *p);
}

/* Cursor text: "<updated_at>:<id>" of the last row of the previous page. */
pst_status pst__take_page_row(void *ctx, const psb_row *row, pst_error *err) {
    pst__page_fill *f = ctx;
    if (f->out->count == f->limit) {
        f->more = true;
        return PST_OK;
    }
    pst_status r = pst__read_thread_row(row, &f->out->items[f->out->count], err);
    if (r == PST_OK) f->out->count++;
    return r;
}

bool pst__parse_cursor(const char *c, int64_t *ts, char id[PST_ID_LEN]) {
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

void pst_message_list_clear(pst_message_list *l) {
    if (!l) return;
    for (size_t i = 0; i < l->count; i++) {
        free(l->items[i].role);
        free(l->items[i].content);
        free(l->items[i].meta);
    }
    free(l->items);
    memset(l, 0, sizeof *l);
}

pst_status pst__take_message(void *ctx, const psb_row *row, pst_error *err) {
    PSB_NEED_COLS(row, 5, err);
    pst__msg_fill *f = ctx;
    if (f->out->count == f->cap) { /* checked doubling: a huge history cannot wrap */
        pst_message *grown = pb_grow(f->out->items, &f->cap, sizeof *grown, 64);
        if (!grown) return pst__fail(err, PST_ERR_NOMEM, 0, "out of memory");
        f->out->items = grown;
    }
    pst_message *m = &f->out->items[f->out->count++];
    m->seq = pst__i64(row->col[0]);
    m->role = pst__strdup(row->col[1] ? row->col[1] : "");
    m->content = pst__strdup(row->col[2] ? row->col[2] : "");
    m->meta = pst__strdup(row->col[3]);
    m->created_at = pst__i64(row->col[4]);
    if (!m->role || !m->content || (!m->meta && row->col[3]))
        return pst__fail(err, PST_ERR_NOMEM, 0, "out of memory");
    return PST_OK;
}

pst_status pst__list_params(const pst_list_query *q, pst__list_args *a, pst_error *err) {
    a->limit = q->limit == 0 ? 100 : q->limit;
    if (a->limit < 1 || a->limit > 500)
        return pst__fail(err, PST_ERR_ARG, 0, "limit must be 1..500");
    int64_t cur_ts = 0;
    a->cur_id[0] = '\0';
    if (q->cursor && !pst__parse_cursor(q->cursor, &cur_ts, a->cur_id))
        return pst__fail(err, PST_ERR_ARG, 0, "bad cursor");
    psb_val p[] = {PSB_T(q->cwd),
                   PSB_T(q->machine_id),
                   PSB_I(q->include_archived),
                   PSB_I(q->include_empty),
                   PSB_I(q->include_children),
                   q->cursor ? PSB_I(cur_ts) : PSB_NULLV,
                   PSB_T(a->cur_id),
                   PSB_I(a->limit + 1)}; /* one extra row tells whether a next page exists */
    memcpy(a->p, p, sizeof p);
    return PST_OK;
}

char *pst__format_cursor(int64_t updated_at, const char *id) {
    char buf[64];
    snprintf(buf, sizeof buf, "%" PRId64 ":%s", updated_at, id);
    return pst__strdup(buf);
}

/* ---------------------------------------------------------------- refusals */

pst_status pst__foreign(pst_error *err, const char *what, const char *id, const char *owner,
                        const char *me) {
    return pst__fail(err, PST_ERR_FOREIGN, 0,
                     "%s %.40s belongs to machine %.40s, not to this host's machine %.40s: "
                     "read-only here",
                     what, id, owner, me);
}

pst_status pst__refuse_no_identity(pst_error *err) {
    return pst__fail(err, PST_ERR_FOREIGN, 0,
                     "this host has no machine identity: writes to the shared store are "
                     "refused (set machineId / --machine-id)");
}

pst_status pst__refuse_machine(pst_error *err, const char *machine_id, const char *owner) {
    return pst__fail(err, PST_ERR_FOREIGN, 0,
                     "machine %.40s is not this host's machine %.40s: read-only here", machine_id,
                     owner);
}

pst_status pst__no_session(pst_error *err, const char *id) {
    return pst__fail(err, PST_ERR_NOT_FOUND, 0, "no such session: %s", id);
}

pst_status pst__bad_message(pst_error *err, pst_status r, size_t i) {
    return pst__fail(err, r, err ? err->sqlite_code : 0,
                     "message %zu: content/meta is not valid JSON or role is empty", i);
}
