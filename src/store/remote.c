/*
 * remote.c — the remote store client (pst_remote_*, peri/store.h): the store's operations
 * over one PostgreSQL connection driven by the host's ports (remote_conn.c), each started
 * at once and answered in a callback. Same schema (pst__pg_migrations), same SQL texts,
 * row readers and refusal messages as the native rules (rules_sql.c), so a database
 * written by one client reads back the same through the other and a refusal is worded
 * the same.
 *
 * Owns: the connection, the machine identity (fixed at open: one per instance), one
 * `rop` per running operation (freed after its callback).
 *
 * Round trips: every read and every guarded write is ONE pipelined batch (the write and
 * the owner lookup that explains a refused write travel together); thread_create takes
 * two (the workspace's owner is checked before the insert, as the native rules do); open
 * takes two (version under the migration lock, then migrate + commit).
 *
 * Ownership rules as in threads.c: without a machine id every write is refused
 * (PST_ERR_FOREIGN); with one, writes touch only threads of that machine's workspaces
 * and create/change no other machine; reads are never restricted.
 */
#include "remote_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct pst_remote {
    const pn_ports *ports;
    pst__rconn *conn;
    char owner[PST_ID_LEN]; /* "" = no identity: read-only */
    bool open;              /* the schema is checked: operations are accepted */
    int version;
    pst_remote_cb open_cb;
    void *open_ud;
    bool (*random)(void *ctx, void *buf, size_t n); /* session ids (and the SCRAM nonce) */
    void *random_ctx;
};

typedef enum op_kind {
    OP_OPEN,
    OP_MACHINE,
    OP_WORKSPACE,
    OP_CREATE,
    OP_GET,
    OP_LIST,
    OP_UPDATE,
    OP_APPEND,
    OP_LOAD,
    OP_COUNT,
} op_kind;

typedef struct rop {
    pst_remote *r;
    op_kind kind;
    pst_remote_cb cb;
    void *ud;
    char id[PST_ID_LEN];      /* thread / workspace id */
    char machine[PST_ID_LEN]; /* workspace_ensure */
    size_t n;                 /* append: messages; list: limit */
    bool write;               /* workspace_ensure: wrote (else only looked up) */
    char *ins[5];             /* create: workspace, parent, title, model, meta */
    const char *what;         /* the context word of a failed update */
} rop;

static bool id_ok(const char *id) {
    return id && *id && strlen(id) < PST_ID_LEN;
}

void pst_remote_result_clear(pst_remote_result *res) {
    if (!res) return;
    pst_thread_clear(&res->thread);
    pst_thread_page_clear(&res->page);
    pst_message_list_clear(&res->messages);
    memset(res, 0, sizeof *res);
}

static void op_free(rop *op) {
    for (size_t i = 0; i < sizeof op->ins / sizeof op->ins[0]; i++)
        free(op->ins[i]);
    free(op);
}

/* Hands res to the callback, then clears it and frees the operation. */
static void finish(rop *op, pst_remote_result *res) {
    res->status = res->error.status;
    op->cb(op->ud, res);
    pst_remote_result_clear(res);
    op_free(op);
}

/* A result that starts with the batch's outcome. */
static pst_remote_result result_of(const pst__rout *o) {
    pst_remote_result res = {0};
    res.error = o->err;
    return res;
}

static void finish_err(rop *op, const pst_error *e) {
    pst_remote_result res = {0};
    res.error = *e;
    finish(op, &res);
}

static rop *op_new(pst_remote *r, op_kind k, pst_remote_cb cb, void *ud, pst_error *err) {
    rop *op = calloc(1, sizeof *op);
    if (!op) {
        pst__fail(err, PST_ERR_NOMEM, 0, "out of memory");
        return NULL;
    }
    op->r = r;
    op->kind = k;
    op->cb = cb;
    op->ud = ud;
    return op;
}

/* Validity of every operation's common arguments. */
static pst_status usable(pst_remote *r, pst_remote_cb cb, pst_error *err) {
    pst__ok(err);
    if (!r || !cb) return pst__fail(err, PST_ERR_ARG, 0, "bad remote store arguments");
    if (!r->open) return pst__fail(err, PST_ERR_CONN, 0, "the remote store is not open");
    return PST_OK;
}

static pst_status write_ok(pst_remote *r, pst_error *err) {
    return r->owner[0] ? PST_OK : pst__refuse_no_identity(err);
}

static pst_status submit(rop *op, const psb_stmt *st, int n, pst__rconn_done done, pst_error *err) {
    pst_status s = pst__rconn_submit(op->r->conn, st, n, done, op, err);
    if (s != PST_OK) op_free(op);
    return s;
}

/* A new operation on `id` (may be NULL) whose one batch is st[0..n). */
static pst_status start(pst_remote *r, op_kind k, const char *id, const char *what,
                        const psb_stmt *st, int n, pst__rconn_done done, pst_remote_cb cb, void *ud,
                        pst_error *err) {
    rop *op = op_new(r, k, cb, ud, err);
    if (!op) return PST_ERR_NOMEM;
    if (id) snprintf(op->id, sizeof op->id, "%s", id);
    op->what = what;
    return submit(op, st, n, done, err);
}

/* The cell (row, col) of statement i, NULL when absent. */
static const char *cell(const pst__rout *o, int i, size_t row, int col) {
    if (i >= o->n || row >= o->res[i].nrows || col >= o->res[i].ncol) return NULL;
    return o->res[i].cells[row * (size_t)o->res[i].ncol + (size_t)col];
}

/* Feeds statement i's rows to a rules row reader. */
static pst_status each_row(const pst__rout *o, int i, psb_row_fn fn, void *ctx, pst_error *err) {
    if (i >= o->n) return PST_OK;
    const pst__rres *res = &o->res[i];
    for (size_t k = 0; k < res->nrows; k++) {
        psb_row row = {.ncol = res->ncol,
                       .col = (const char *const *)res->cells + k * (size_t)res->ncol};
        pst_status s = fn(ctx, &row, err);
        if (s != PST_OK) return s;
    }
    return PST_OK;
}

/* ---------------------------------------------------------------- open: the schema */

static void open_done(pst_remote *r, const pst_error *e) {
    pst_remote_result res = {0};
    res.error = *e;
    res.status = e->status;
    res.value = r->version;
    r->open = e->status == PST_OK;
    r->open_cb(r->open_ud, &res);
    pst_remote_result_clear(&res);
}

static void after_rollback(void *ud, pst__rout *o) {
    (void)o; /* the refusal that asked for the rollback is what is reported */
    rop *op = ud;
    pst_error e;
    pst__fail(&e, PST_ERR_SCHEMA, 0, "database schema version %d is newer than this program's %d",
              op->r->version, PST_SCHEMA_VERSION);
    open_done(op->r, &e);
    op_free(op);
}

static void free_after_rollback(void *ud, pst__rout *o) {
    (void)o;
    op_free(ud);
}

static void after_migrate(void *ud, pst__rout *o) {
    rop *op = ud;
    pst_remote *r = op->r;
    if (o->err.status != PST_OK) {
        pst_error e = o->err, ignored;
        pst__ctx(&e, e.status, "migration");
        r->version = 0;
        open_done(r, &e);
        /* leave no open transaction behind (the connection may still be usable) */
        if (pst__rconn_submit_simple(r->conn, "ROLLBACK", free_after_rollback, op, &ignored) !=
            PST_OK)
            op_free(op);
        return;
    }
    r->version = (int)op->n;
    pst_error ok;
    pst__ok(&ok);
    open_done(r, &ok);
    op_free(op);
}

static void after_version(void *ud, pst__rout *o) {
    rop *op = ud;
    pst_remote *r = op->r;
    pst_error e;
    if (o->err.status != PST_OK) {
        e = o->err;
        pst__ctx(&e, e.status, "begin migration");
        open_done(r, &e);
        op_free(op);
        return;
    }
    /* the 4th statement: SELECT coalesce(max(version), 0) */
    int v = (int)pst__i64(cell(o, 3, 0, 0));
    r->version = v;
    if (v > PST_SCHEMA_VERSION || PST_SCHEMA_VERSION > pst__pg_nmigrations) {
        if (pst__rconn_submit_simple(r->conn, "ROLLBACK", after_rollback, op, &e) != PST_OK) {
            after_rollback(op, NULL);
        }
        return;
    }
    /* migrations v+1..target, the version row, COMMIT: one text, one round trip */
    size_t len = 128;
    for (int i = v; i < PST_SCHEMA_VERSION; i++)
        len += strlen(pst__pg_migrations[i]) + 2;
    char *sql = malloc(len);
    if (!sql) {
        pst__fail(&e, PST_ERR_NOMEM, 0, "out of memory");
        open_done(r, &e);
        op_free(op);
        return;
    }
    size_t at = 0;
    for (int i = v; i < PST_SCHEMA_VERSION; i++)
        at += (size_t)snprintf(sql + at, len - at, "%s;", pst__pg_migrations[i]);
    snprintf(sql + at, len - at,
             "DELETE FROM schema_version; INSERT INTO schema_version VALUES(%d); COMMIT",
             PST_SCHEMA_VERSION);
    op->n = PST_SCHEMA_VERSION;
    pst_status s = pst__rconn_submit_simple(r->conn, sql, after_migrate, op, &e);
    free(sql);
    if (s != PST_OK) {
        open_done(r, &e);
        op_free(op);
    }
}

pst_remote *pst_remote_open(const pst_remote_options *o, pst_remote_cb cb, void *ud,
                            pst_error *err) {
    pst__ok(err);
    if (!o || !o->ports || !cb || !o->random) {
        pst__fail(err, PST_ERR_ARG, 0, "remote store: ports, randomness and a callback needed");
        return NULL;
    }
    if (o->machine_id && !id_ok(o->machine_id)) {
        pst__fail(err, PST_ERR_ARG, 0, "bad machine id");
        return NULL;
    }
    pst__rtarget t;
    if (pst__rtarget_parse(o->locator, &t, err) != PST_OK) return NULL;
    pst_remote *r = calloc(1, sizeof *r);
    rop *op = r ? op_new(r, OP_OPEN, cb, ud, err) : NULL;
    if (!r || !op) {
        free(r);
        pst__fail(err, PST_ERR_NOMEM, 0, "out of memory");
        return NULL;
    }
    r->ports = o->ports;
    r->random = o->random;
    r->random_ctx = o->random_ctx;
    r->open_cb = cb;
    r->open_ud = ud;
    if (o->machine_id) snprintf(r->owner, sizeof r->owner, "%s", o->machine_id);
    r->conn = pst__rconn_new(o->ports, &t, o->password, o->random, o->random_ctx, r, err);
    if (!r->conn ||
        pst__rconn_submit_simple(r->conn,
                                 "BEGIN; SELECT pg_advisory_xact_lock(" PST_PG_MIGRATION_LOCK
                                 "); CREATE TABLE IF NOT EXISTS schema_version(version INTEGER "
                                 "NOT NULL); SELECT coalesce(max(version), 0) FROM schema_version",
                                 after_version, op, err) != PST_OK) {
        pst__rconn_free(r->conn);
        free(op);
        free(r);
        return NULL;
    }
    return r;
}

bool pst_remote_on_event(pst_remote *r, const pn_event *ev) {
    if (!r || !ev || ev->ud != r) return false;
    pst__rconn_event(r->conn, ev);
    return true;
}

void pst_remote_close(pst_remote *r) {
    if (!r) return;
    r->open = false;
    pst__rconn_close(r->conn);
}

bool pst_remote_settled(const pst_remote *r) {
    return !r || pst__rconn_settled(r->conn);
}

void pst_remote_free(pst_remote *r) {
    if (!r) return;
    pst__rconn_free(r->conn);
    free(r);
}

/* ---------------------------------------------------------------- machines, workspaces */

static void after_simple_write(void *ud, pst__rout *o) {
    rop *op = ud;
    if (o->err.status != PST_OK) pst__ctx(&o->err, o->err.status, op->what);
    finish_err(op, &o->err);
}

pst_status pst_remote_machine_ensure(pst_remote *r, const char *machine_id, const char *name,
                                     pst_remote_cb cb, void *ud, pst_error *err) {
    pst_status s = usable(r, cb, err);
    if (s != PST_OK) return s;
    if (!id_ok(machine_id)) return pst__fail(err, PST_ERR_ARG, 0, "bad machine id");
    if ((s = write_ok(r, err)) != PST_OK) return s;
    if (strcmp(machine_id, r->owner) != 0) return pst__refuse_machine(err, machine_id, r->owner);
    psb_val p[] = {PSB_T(machine_id), PSB_T(name), PSB_I(r->ports->wall_ms(r->ports->ctx))};
    psb_stmt st[] = {{pst__sql_machine_ensure, p, 3}};
    return start(r, OP_MACHINE, NULL, "ensure machine", st, 1, after_simple_write, cb, ud, err);
}

static void after_workspace(void *ud, pst__rout *o) {
    rop *op = ud;
    pst_remote_result res = result_of(o);
    const char *id = cell(o, op->write ? 2 : 0, 0, 0);
    if (o->err.status != PST_OK)
        pst__ctx(&res.error, res.error.status, op->write ? "insert workspace" : "find workspace");
    else if (id)
        snprintf(res.id, sizeof res.id, "%s", id);
    else if (op->write)
        pst__fail(&res.error, PST_ERR_IO, 0, "workspace vanished");
    else if (!op->r->owner[0]) /* not there, and this instance may not create it */
        pst__refuse_no_identity(&res.error);
    else
        pst__refuse_machine(&res.error, op->machine, op->r->owner);
    finish(op, &res);
}

pst_status pst_remote_workspace_ensure(pst_remote *r, const char *machine_id, const char *path,
                                       pst_remote_cb cb, void *ud, pst_error *err) {
    pst_status s = usable(r, cb, err);
    if (s != PST_OK) return s;
    if (!id_ok(machine_id) || !path || !*path)
        return pst__fail(err, PST_ERR_ARG, 0, "bad machine id or workspace path");
    rop *op = op_new(r, OP_WORKSPACE, cb, ud, err);
    if (!op) return PST_ERR_NOMEM;
    snprintf(op->machine, sizeof op->machine, "%s", machine_id);
    psb_val find[] = {PSB_T(machine_id), PSB_T(path)};
    op->write = r->owner[0] && !strcmp(machine_id, r->owner);
    if (!op->write) { /* another machine's (or no identity): only an existing one */
        psb_stmt st[] = {{pst__sql_workspace_find, find, 2}};
        return submit(op, st, 1, after_workspace, err);
    }
    /* Name-based: the same machine and root give the same id in every store. */
    if (!pst_workspace_id(machine_id, path, op->id)) {
        op_free(op);
        return pst__fail(err, PST_ERR_IO, 0, "cannot derive a workspace id");
    }
    int64_t now = r->ports->wall_ms(r->ports->ctx);
    psb_val mach[] = {PSB_T(machine_id), PSB_NULLV, PSB_I(now)};
    psb_val ins[] = {PSB_T(op->id), PSB_T(machine_id), PSB_T(path), PSB_I(now)};
    psb_stmt st[] = {{pst__sql_machine_ensure, mach, 3},
                     {pst__sql_workspace_insert, ins, 4},
                     {pst__sql_workspace_find, find, 2}};
    return submit(op, st, 3, after_workspace, err);
}

/* ---------------------------------------------------------------- threads */

/* Statement i holds one thread row (get): into res->thread, or NOT_FOUND. */
static void read_one_thread(const pst__rout *o, int i, const char *id, pst_remote_result *res) {
    if (i >= o->n || o->res[i].nrows == 0) {
        pst__no_session(&res->error, id);
        return;
    }
    psb_row row = {.ncol = o->res[i].ncol, .col = (const char *const *)o->res[i].cells};
    pst__read_thread_row(&row, &res->thread, &res->error);
}

static void after_get(void *ud, pst__rout *o) {
    rop *op = ud;
    pst_remote_result res = result_of(o);
    if (o->err.status != PST_OK)
        pst__ctx(&res.error, res.error.status, "get thread");
    else
        read_one_thread(o, 0, op->id, &res);
    finish(op, &res);
}

pst_status pst_remote_thread_get(pst_remote *r, const char *id, pst_remote_cb cb, void *ud,
                                 pst_error *err) {
    pst_status s = usable(r, cb, err);
    if (s != PST_OK) return s;
    if (!id_ok(id)) return pst__fail(err, PST_ERR_ARG, 0, "bad session id");
    psb_val p[] = {PSB_T(id)};
    psb_stmt st[] = {{pst__sql_thread_get, p, 1}};
    return start(r, OP_GET, id, "get thread", st, 1, after_get, cb, ud, err);
}

static void after_insert(void *ud, pst__rout *o) {
    rop *op = ud;
    pst_remote_result res = result_of(o);
    pst_error *e = &res.error;
    if (e->status == PST_ERR_ARG && o->failed_at == 0 && o->viol == PSB_V_FOREIGN_KEY)
        pst__fail(e, PST_ERR_NOT_FOUND, 0, "unknown workspace or parent session");
    else if (e->status == PST_ERR_ARG && o->failed_at == 0 && o->viol == PSB_V_UNIQUE)
        pst__fail(e, PST_ERR_ARG, 0, "session %s already exists", op->id);
    else if (e->status != PST_OK && o->failed_at <= 0)
        pst__ctx(e, e->status, "create thread");
    else if (e->status != PST_OK)
        pst__ctx(e, e->status, "get thread");
    else
        read_one_thread(o, 1, op->id, &res);
    finish(op, &res);
}

static void after_ws_owner(void *ud, pst__rout *o) {
    rop *op = ud;
    pst_remote *r = op->r;
    pst_error e = o->err;
    const char *owner = cell(o, 0, 0, 0);
    if (e.status == PST_OK && !owner)
        pst__fail(&e, PST_ERR_NOT_FOUND, 0, "unknown workspace or parent session");
    else if (e.status == PST_OK && strcmp(owner, r->owner) != 0)
        pst__foreign(&e, "workspace", op->ins[0], owner, r->owner);
    if (e.status != PST_OK) {
        finish_err(op, &e);
        return;
    }
    psb_val p[] = {PSB_T(op->id),
                   PSB_T(op->ins[0]),
                   PSB_T(op->ins[1]),
                   PSB_T(op->ins[2]),
                   PSB_T(op->ins[3]),
                   PSB_T(op->ins[4]),
                   PSB_I(r->ports->wall_ms(r->ports->ctx))};
    psb_val g[] = {PSB_T(op->id)};
    psb_stmt st[] = {{pst__sql_thread_insert, p, 7}, {pst__sql_thread_get, g, 1}};
    if (pst__rconn_submit(r->conn, st, 2, after_insert, op, &e) != PST_OK) finish_err(op, &e);
}

pst_status pst_remote_thread_create(pst_remote *r, const pst_thread_new *in, pst_remote_cb cb,
                                    void *ud, pst_error *err) {
    pst_status s = usable(r, cb, err);
    if (s != PST_OK) return s;
    if (!in || !id_ok(in->workspace_id) || (in->id && !id_ok(in->id)) ||
        (in->parent_id && !id_ok(in->parent_id)))
        return pst__fail(err, PST_ERR_ARG, 0, "bad thread arguments");
    if ((s = write_ok(r, err)) != PST_OK) return s;
    rop *op = op_new(r, OP_CREATE, cb, ud, err);
    if (!op) return PST_ERR_NOMEM;
    if (in->id)
        snprintf(op->id, sizeof op->id, "%s", in->id);
    else {
        unsigned char rb[16];
        if (!r->random(r->random_ctx, rb, sizeof rb)) {
            op_free(op);
            return pst__fail(err, PST_ERR_IO, 0, "no randomness for a session id");
        }
        pst__uuid_v7_from(rb, (uint64_t)r->ports->wall_ms(r->ports->ctx), op->id);
    }
    const char *src[] = {in->workspace_id, in->parent_id, in->title, in->model, in->meta};
    for (size_t i = 0; i < 5; i++) {
        op->ins[i] = pst__strdup(src[i]);
        if (src[i] && !op->ins[i]) {
            op_free(op);
            return pst__fail(err, PST_ERR_NOMEM, 0, "out of memory");
        }
    }
    psb_val p[] = {PSB_T(in->workspace_id)};
    psb_stmt st[] = {{pst__sql_workspace_owner, p, 1}};
    return submit(op, st, 1, after_ws_owner, err);
}

/* A guarded write ($1 id, $2 text, $3 number, $4 owner) with the owner lookup in the same
 * batch: no row changed → NOT_FOUND or FOREIGN with the native rules' words. */
static void after_update(void *ud, pst__rout *o) {
    rop *op = ud;
    pst_error e = o->err;
    if (e.status != PST_OK) {
        pst__ctx(&e, e.status, "update thread");
    } else if (o->n < 1 || o->res[0].changes == 0) {
        const char *owner = cell(o, 1, 0, 0);
        if (!owner)
            pst__no_session(&e, op->id);
        else if (strcmp(owner, op->r->owner) != 0)
            pst__foreign(&e, "session", op->id, owner, op->r->owner);
        else
            pst__no_session(&e, op->id);
    }
    finish_err(op, &e);
}

static pst_status update_one(pst_remote *r, const char *sql, const char *id, const char *text,
                             int64_t num, pst_remote_cb cb, void *ud, pst_error *err) {
    pst_status s = usable(r, cb, err);
    if (s != PST_OK) return s;
    if (!id_ok(id)) return pst__fail(err, PST_ERR_ARG, 0, "bad session id");
    if ((s = write_ok(r, err)) != PST_OK) return s;
    psb_val p[] = {PSB_T(id), PSB_T(text), PSB_I(num), PSB_T(r->owner)};
    psb_val q[] = {PSB_T(id)};
    psb_stmt st[] = {{sql, p, 4}, {pst__sql_thread_owner, q, 1}};
    return start(r, OP_UPDATE, id, "update thread", st, 2, after_update, cb, ud, err);
}

pst_status pst_remote_thread_rename(pst_remote *r, const char *id, const char *title,
                                    pst_remote_cb cb, void *ud, pst_error *err) {
    int64_t now = r && r->ports ? r->ports->wall_ms(r->ports->ctx) : 0;
    return update_one(r, pst__sql_thread_rename, id, title, now, cb, ud, err);
}

pst_status pst_remote_thread_set_model(pst_remote *r, const char *id, const char *model,
                                       pst_remote_cb cb, void *ud, pst_error *err) {
    return update_one(r, pst__sql_thread_model, id, model, 0, cb, ud, err);
}

pst_status pst_remote_thread_set_meta(pst_remote *r, const char *id, const char *meta_json,
                                      pst_remote_cb cb, void *ud, pst_error *err) {
    return update_one(r, pst__sql_thread_meta, id, meta_json, 0, cb, ud, err);
}

pst_status pst_remote_thread_set_archived(pst_remote *r, const char *id, bool archived,
                                          pst_remote_cb cb, void *ud, pst_error *err) {
    return update_one(r, pst__sql_thread_archive, id, NULL, archived ? 1 : 0, cb, ud, err);
}

pst_status pst_remote_thread_delete(pst_remote *r, const char *id, pst_remote_cb cb, void *ud,
                                    pst_error *err) {
    return update_one(r, pst__sql_thread_delete, id, NULL, 0, cb, ud, err);
}

static void after_list(void *ud, pst__rout *o) {
    rop *op = ud;
    pst_remote_result res = result_of(o);
    pst__page_fill f = {.out = &res.page, .limit = op->n};
    if (res.error.status == PST_OK) {
        res.page.items = calloc(op->n + 1, sizeof *res.page.items);
        if (!res.page.items) pst__fail(&res.error, PST_ERR_NOMEM, 0, "out of memory");
    }
    if (res.error.status == PST_OK) each_row(o, 0, pst__take_page_row, &f, &res.error);
    if (res.error.status == PST_OK && f.more) {
        const pst_thread *last = &res.page.items[res.page.count - 1];
        res.page.next_cursor = pst__format_cursor(last->updated_at, last->id);
        if (!res.page.next_cursor) pst__fail(&res.error, PST_ERR_NOMEM, 0, "out of memory");
    }
    if (res.error.status != PST_OK) {
        pst__ctx(&res.error, res.error.status, "list threads");
        pst_thread_page_clear(&res.page);
    }
    finish(op, &res);
}

pst_status pst_remote_thread_list(pst_remote *r, const pst_list_query *q, pst_remote_cb cb,
                                  void *ud, pst_error *err) {
    pst_status s = usable(r, cb, err);
    if (s != PST_OK) return s;
    if (!q) return pst__fail(err, PST_ERR_ARG, 0, "bad list arguments");
    pst__list_args a;
    if ((s = pst__list_params(q, &a, err)) != PST_OK) return s;
    rop *op = op_new(r, OP_LIST, cb, ud, err);
    if (!op) return PST_ERR_NOMEM;
    op->n = (size_t)a.limit; /* after_list reads the page size from the operation */
    psb_stmt st[] = {{pst__sql_thread_list, a.p, 8}};
    return submit(op, st, 1, after_list, err);
}

/* ---------------------------------------------------------------- messages */

/* One number from statement 0 (count, next seq); no row: no such session. */
static void after_value(void *ud, pst__rout *o) {
    rop *op = ud;
    pst_remote_result res = result_of(o);
    const char *v = cell(o, 0, 0, 0);
    if (res.error.status != PST_OK)
        pst__ctx(&res.error, res.error.status, op->what);
    else if (!v)
        pst__no_session(&res.error, op->id);
    else
        res.value = pst__i64(v);
    finish(op, &res);
}

/* Batch: [thread owner, reserve, insert x n]; the owner lookup runs first so that a
 * refused batch is explained without a second round trip. */
static void after_append(void *ud, pst__rout *o) {
    rop *op = ud;
    pst_remote_result res = result_of(o);
    pst_error *e = &res.error;
    const char *owner = cell(o, 0, 0, 0);
    const char *seq = cell(o, 1, 0, 0);
    if (e->status == PST_ERR_CONN || e->status == PST_ERR_NOMEM) {
        pst__ctx(e, e->status, "append messages");
    } else if (e->status != PST_OK || !seq) {
        if (o->n >= 1 && !owner && o->failed_at != 0)
            pst__no_session(e, op->id);
        else if (owner && strcmp(owner, op->r->owner) != 0)
            pst__foreign(e, "session", op->id, owner, op->r->owner);
        else if (e->status == PST_OK)
            pst__fail(e, PST_ERR_IO, 0, "append: no sequence reserved");
        else if (e->status == PST_ERR_ARG && o->viol == PSB_V_CHECK && o->failed_at >= 2)
            pst__bad_message(e, e->status, (size_t)(o->failed_at - 2));
        else
            pst__ctx(e, e->status, "append messages");
    } else {
        res.value = pst__i64(seq);
    }
    finish(op, &res);
}

pst_status pst_remote_messages_append(pst_remote *r, const char *thread_id,
                                      const pst_message_in *msgs, size_t n, pst_remote_cb cb,
                                      void *ud, pst_error *err) {
    pst_status s = usable(r, cb, err);
    if (s != PST_OK) return s;
    if (!id_ok(thread_id) || (n > 0 && !msgs) || n > 100000)
        return pst__fail(err, PST_ERR_ARG, 0, "bad append arguments");
    for (size_t i = 0; i < n; i++)
        if (!msgs[i].role || !*msgs[i].role || !msgs[i].content)
            return pst__fail(err, PST_ERR_ARG, 0, "message %zu has no role or content", i);
    if ((s = write_ok(r, err)) != PST_OK) return s;
    rop *op = op_new(r, OP_APPEND, cb, ud, err);
    if (!op) return PST_ERR_NOMEM;
    snprintf(op->id, sizeof op->id, "%s", thread_id);
    psb_val one[] = {PSB_T(thread_id)};
    if (n == 0) { /* nothing to write: where the next message would go */
        op->what = "append messages";
        psb_stmt st[] = {{pst__sql_thread_next_seq, one, 1}};
        return submit(op, st, 1, after_value, err);
    }
    psb_stmt *st = calloc(n + 2, sizeof *st);
    psb_val *pv = calloc(n * 7, sizeof *pv);
    if (!st || !pv) {
        free(st);
        free(pv);
        op_free(op);
        return pst__fail(err, PST_ERR_NOMEM, 0, "out of memory");
    }
    int64_t now = r->ports->wall_ms(r->ports->ctx);
    psb_val up[] = {PSB_T(thread_id), PSB_I((int64_t)n), PSB_I(now), PSB_T(r->owner)};
    st[0] = (psb_stmt){pst__sql_thread_owner, one, 1};
    st[1] = (psb_stmt){pst__sql_message_reserve, up, 4};
    for (size_t i = 0; i < n; i++) {
        psb_val *p = pv + i * 7;
        p[0] = PSB_T(thread_id);
        p[1] = PSB_I((int64_t)(n - i));
        p[2] = PSB_T(msgs[i].role);
        p[3] = PSB_T(msgs[i].content);
        p[4] = PSB_T(msgs[i].meta);
        p[5] = PSB_I(now);
        p[6] = PSB_T(r->owner);
        st[i + 2] = (psb_stmt){pst__sql_message_insert, p, 7};
    }
    s = submit(op, st, (int)n + 2, after_append, err);
    free(st);
    free(pv);
    return s;
}

static void after_load(void *ud, pst__rout *o) {
    rop *op = ud;
    pst_remote_result res = result_of(o);
    pst__msg_fill f = {.out = &res.messages};
    if (res.error.status == PST_OK && !cell(o, 0, 0, 0))
        pst__no_session(&res.error, op->id);
    else if (res.error.status == PST_OK)
        each_row(o, 1, pst__take_message, &f, &res.error);
    if (res.error.status != PST_OK) {
        pst_message_list_clear(&res.messages); /* nothing half-loaded is handed out */
        pst__ctx(&res.error, res.error.status, "load messages");
    }
    finish(op, &res);
}

static pst_status read_thread_op(pst_remote *r, const char *thread_id, op_kind k, pst_remote_cb cb,
                                 void *ud, pst_error *err) {
    pst_status s = usable(r, cb, err);
    if (s != PST_OK) return s;
    if (!id_ok(thread_id)) return pst__fail(err, PST_ERR_ARG, 0, "bad session id");
    psb_val p[] = {PSB_T(thread_id)};
    psb_stmt st[] = {{pst__sql_message_count, p, 1}, {pst__sql_message_load, p, 1}};
    return start(r, k, thread_id, "count messages", st, k == OP_LOAD ? 2 : 1,
                 k == OP_LOAD ? after_load : after_value, cb, ud, err);
}

pst_status pst_remote_messages_load(pst_remote *r, const char *thread_id, pst_remote_cb cb,
                                    void *ud, pst_error *err) {
    return read_thread_op(r, thread_id, OP_LOAD, cb, ud, err);
}

pst_status pst_remote_messages_count(pst_remote *r, const char *thread_id, pst_remote_cb cb,
                                     void *ud, pst_error *err) {
    return read_thread_op(r, thread_id, OP_COUNT, cb, ud, err);
}
