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

/* ---------------------------------------------------------------- ownership */

psb_val pst__owner_param(const pst_store *s) {
    return s->owner[0] ? PSB_T(s->owner) : PSB_NULLV;
}

pst_status pst__write_ok(pst_store *s, pst_error *err) {
    return s->read_only ? pst__refuse_no_identity(err) : PST_OK;
}

static pst_status copy_first(void *ctx, const psb_row *row, pst_error *err) {
    PSB_NEED_COLS(row, 1, err);
    char *out = ctx;
    snprintf(out, PST_ID_LEN, "%s", row->col[0] ? row->col[0] : "");
    return PST_OK;
}

pst_status pst__thread_owner_check(pst_store *s, const char *thread_id, pst_error *err) {
    char owner[PST_ID_LEN] = "";
    psb_val p[] = {PSB_T(thread_id)};
    pst_status r = PSB_EXEC(s, pst__sql_thread_owner, p, copy_first, owner, NULL, NULL, err);
    if (r != PST_OK) return r;
    if (!owner[0]) return pst__fail(err, PST_ERR_NOT_FOUND, 0, "no such session: %s", thread_id);
    if (s->owner[0] && strcmp(owner, s->owner) != 0)
        return pst__foreign(err, "session", thread_id, owner, s->owner);
    return PST_OK;
}

/* A machine other than the owner may not be created or changed by this store. */
static pst_status machine_write_ok(pst_store *s, const char *machine_id, pst_error *err) {
    pst_status r = pst__write_ok(s, err);
    if (r == PST_OK && s->owner[0] && strcmp(machine_id, s->owner) != 0)
        r = pst__refuse_machine(err, machine_id, s->owner);
    return r;
}

/* ---------------------------------------------------------------- machines/workspaces */

static pst_status machine_ensure_locked(pst_store *s, const char *machine_id, const char *name,
                                        pst_error *err) {
    psb_val p[] = {PSB_T(machine_id), PSB_T(name), PSB_I(pst__now_ms())};
    pst_status r = PSB_EXEC(s, pst__sql_machine_ensure, p, NULL, NULL, NULL, NULL, err);
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
    pst_status r = PSB_EXEC(s, pst__sql_workspace_find, p, copy_first, out_id, NULL, NULL, err);
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
        r = PSB_EXEC(s, pst__sql_workspace_insert, p, NULL, NULL, NULL, NULL, err);
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

static pst_status get_locked(pst_store *s, const char *id, pst_thread *out, pst_error *err) {
    /* a page of at most one: into out, or into tmp when only existence is asked */
    pst_thread tmp;
    pst_thread_page one = {.items = out ? out : &tmp};
    pst__page_fill f = {.out = &one, .limit = 1};
    psb_val p[] = {PSB_T(id)};
    pst_status r = PSB_EXEC(s, pst__sql_thread_get, p, pst__take_page_row, &f, NULL, NULL, err);
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
        r = PSB_EXEC(s, pst__sql_workspace_owner, p, copy_first, owner, NULL, NULL, err);
        if (r == PST_OK && !owner[0])
            r = pst__fail(err, PST_ERR_NOT_FOUND, 0, "unknown workspace or parent session");
        else if (r == PST_OK && strcmp(owner, s->owner) != 0)
            r = pst__foreign(err, "workspace", in->workspace_id, owner, s->owner);
    }
    if (r != PST_OK) goto out;
    psb_val p[] = {PSB_T(id),           PSB_T(in->workspace_id), PSB_T(in->parent_id),
                   PSB_T(in->title),    PSB_T(in->model),        PSB_T(in->meta),
                   PSB_I(pst__now_ms())};
    psb_violation v;
    r = PSB_EXEC(s, pst__sql_thread_insert, p, NULL, NULL, NULL, &v, err);
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

pst_status pst_thread_delete(pst_store *s, const char *id, pst_error *err) {
    /* Children and messages go through ON DELETE CASCADE. $2/$3 unused but typed. */
    return update_one(s, pst__sql_thread_delete, id, NULL, 0, err);
}

pst_status pst_thread_set_archived(pst_store *s, const char *id, bool archived, pst_error *err) {
    return update_one(s, pst__sql_thread_archive, id, NULL, archived ? 1 : 0, err);
}

pst_status pst_thread_rename(pst_store *s, const char *id, const char *title, pst_error *err) {
    return update_one(s, pst__sql_thread_rename, id, title, pst__now_ms(), err);
}

pst_status pst_thread_set_model(pst_store *s, const char *id, const char *model, pst_error *err) {
    return update_one(s, pst__sql_thread_model, id, model, 0, err);
}

pst_status pst_thread_set_meta(pst_store *s, const char *id, const char *meta_json,
                               pst_error *err) {
    pst_status r = update_one(s, pst__sql_thread_meta, id, meta_json, 0, err);
    return r;
}

/* ---------------------------------------------------------------- list */

pst_status pst_thread_list(pst_store *s, const pst_list_query *q, pst_thread_page *out,
                           pst_error *err) {
    pst__ok(err);
    if (out) memset(out, 0, sizeof *out);
    if (!s || !q || !out) return pst__fail(err, PST_ERR_ARG, 0, "bad list arguments");
    pst__list_args a;
    pst_status r = pst__list_params(q, &a, err);
    if (r != PST_OK) return r;
    int limit = a.limit;
    out->items = calloc((size_t)limit + 1, sizeof *out->items);
    if (!out->items) return pst__fail(err, PST_ERR_NOMEM, 0, "out of memory");
    LOCK(s);
    pst__page_fill f = {.out = out, .limit = (size_t)limit};
    r = PSB_EXEC(s, pst__sql_thread_list, a.p, pst__take_page_row, &f, NULL, NULL, err);
    UNLOCK(s);
    if (r != PST_OK) {
        pst__ctx(err, r, "list threads");
    } else if (f.more) {
        const pst_thread *last = &out->items[out->count - 1];
        out->next_cursor = pst__format_cursor(last->updated_at, last->id);
        if (!out->next_cursor) r = pst__fail(err, PST_ERR_NOMEM, 0, "out of memory");
    }
    if (r != PST_OK) pst_thread_page_clear(out);
    return r;
}
