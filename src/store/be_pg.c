/*
 * be_pg.c — the PostgreSQL backend (shared store): one libpq connection, the dialect's
 * migrations (pg_shared.c, shared with the remote client; same tables as SQLite; JSON
 * columns of type json keep the text verbatim) and the vtable the rules run on.
 *
 * Connection parameters come ONLY from the URL (postgresql://user:pass@host:port/db?...,
 * including passfile=, sslmode=, ...): host, port, user, dbname, passfile,
 * connect_timeout, application_name, client_encoding, sslmode, gssencmode and
 * target_session_attrs the URL leaves out are filled with fixed defaults (the Debian
 * socket directory /var/run/postgresql, 5432, the OS user from getpwuid, the same name as
 * database, <home>/.pgpass, 10 s, peri, UTF8, prefer, prefer, any) so that libpq's PG*
 * environment cannot redirect the library; the CLI maps the standard libpq environment into the URL
 * (src/cli/host_env.c). libpq still consults PGPASSWORD when neither the URL nor the passfile gives
 * a password (documented in docs/store.md).
 *
 * Errors: SQLSTATE classes map to pst_status (23503 → foreign key, 23505 → unique,
 * 23xxx/22xxx → check/bad value, 40xxx/55P03 → busy, 08xxx/57Pxx or a dead connection →
 * PST_ERR_CONN). A lost connection is never retried inside a transaction; the next begin
 * or statement outside a transaction resets it (PQreset).
 */
#include "store_int.h"

#include <inttypes.h>
#include <libpq-fe.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct be_pg {
    PGconn *conn;
    bool in_tx;
} be_pg;

static void quiet(void *arg, const char *msg) {
    (void)arg;
    (void)msg; /* NOTICEs (e.g. "relation already exists, skipping") are not errors */
}

static bool conn_dead(const be_pg *b) {
    return PQstatus(b->conn) != CONNECTION_OK;
}

/* Message of the connection or result, first line only. */
static void set_msg(pst_error *err, pst_status st, const char *what, const char *m) {
    if (!err) return;
    char line[200];
    snprintf(line, sizeof line, "%s", m && *m ? m : "unknown PostgreSQL error");
    line[strcspn(line, "\n")] = '\0';
    pst__fail(err, st, 0, "%s%s%s", what ? what : "", what ? ": " : "", line);
}

static pst_status conn_fail(be_pg *b, pst_error *err) {
    set_msg(err, PST_ERR_CONN, "PostgreSQL connection lost", PQerrorMessage(b->conn));
    return PST_ERR_CONN;
}

/* Maps a failed result. */
static pst_status res_fail(be_pg *b, PGresult *res, pst_error *err, psb_violation *viol) {
    if (viol) *viol = PSB_V_NONE;
    const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    const char *msg = res ? PQresultErrorMessage(res) : PQerrorMessage(b->conn);
    psb_violation v = PSB_V_NONE;
    pst_status st = conn_dead(b) ? PST_ERR_CONN : pst__pg_sqlstate_status(state, &v);
    if (st == PST_ERR_CONN) {
        set_msg(err, PST_ERR_CONN, "PostgreSQL connection lost", msg);
        return PST_ERR_CONN;
    }
    if (viol) *viol = v;
    char what[16];
    snprintf(what, sizeof what, "SQLSTATE %s", state);
    set_msg(err, st, what, msg);
    return st;
}

/* Outside a transaction a dead connection is reset before use. */
static pst_status ensure_conn(be_pg *b, pst_error *err) {
    if (!conn_dead(b)) return PST_OK;
    if (b->in_tx) return conn_fail(b, err);
    PQreset(b->conn);
    if (conn_dead(b)) return conn_fail(b, err);
    PQsetNoticeProcessor(b->conn, quiet, NULL);
    return PST_OK;
}

#define MAXP 16
static pst_status text_params(const psb_val *params, int nparams, const char *vals[MAXP],
                              char nums[MAXP][24], pst_error *err);

static pst_status be_exec(void *be, const char *sql, const psb_val *params, int nparams,
                          psb_row_fn fn, void *ctx, int64_t *changes, psb_violation *viol,
                          pst_error *err) {
    be_pg *b = be;
    if (viol) *viol = PSB_V_NONE;
    pst_status r = ensure_conn(b, err);
    if (r != PST_OK) return r;
    const char *vals[MAXP];
    char nums[MAXP][24];
    r = text_params(params, nparams, vals, nums, err);
    if (r != PST_OK) return r;
    PGresult *res = PQexecParams(b->conn, sql, nparams, NULL, vals, NULL, NULL, 0);
    ExecStatusType rs = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
    if (rs != PGRES_COMMAND_OK && rs != PGRES_TUPLES_OK) {
        r = res ? res_fail(b, res, err, viol)
                : (conn_dead(b) ? conn_fail(b, err)
                                : pst__fail(err, PST_ERR_NOMEM, 0, "out of memory"));
        PQclear(res);
        return r;
    }
    if (fn && rs == PGRES_TUPLES_OK) {
        int ncol = PQnfields(res), nrow = PQntuples(res);
        const char *colv[16];
        if (ncol > 16) ncol = 16;
        for (int i = 0; i < nrow && r == PST_OK; i++) {
            for (int c = 0; c < ncol; c++)
                colv[c] = PQgetisnull(res, i, c) ? NULL : PQgetvalue(res, i, c);
            psb_row row = {.ncol = ncol, .col = colv};
            r = fn(ctx, &row, err);
        }
    }
    if (r == PST_OK && changes) {
        const char *t = PQcmdTuples(res);
        *changes = t && *t ? strtoll(t, NULL, 10) : 0;
    }
    PQclear(res);
    return r;
}

/* Parameters as text for libpq; nums holds the formatted integers. */
static pst_status text_params(const psb_val *params, int nparams, const char *vals[MAXP],
                              char nums[MAXP][24], pst_error *err) {
    if (nparams > MAXP) return pst__fail(err, PST_ERR_ARG, 0, "too many parameters");
    for (int i = 0; i < nparams; i++) {
        switch (params[i].kind) {
        case PSB_NULL: vals[i] = NULL; break;
        case PSB_TEXT: vals[i] = params[i].text; break;
        case PSB_INT:
            snprintf(nums[i], sizeof nums[i], "%" PRId64, params[i].i);
            vals[i] = nums[i];
            break;
        }
    }
    return PST_OK;
}

/* Pipeline mode: every statement sent, one Sync, one round trip. The statements up to
 * the Sync form one implicit transaction: an error anywhere rolls all of them back. */
static pst_status be_batch(void *be, const psb_stmt *stmts, int n, psb_row_fn fn, void *ctx,
                           int *failed_at, psb_violation *viol, pst_error *err) {
    be_pg *b = be;
    if (failed_at) *failed_at = -1;
    if (viol) *viol = PSB_V_NONE;
    pst_status r = ensure_conn(b, err);
    if (r != PST_OK) return r;
    if (b->in_tx || PQenterPipelineMode(b->conn) != 1)
        return pst__fail(err, PST_ERR_IO, 0, "cannot enter pipeline mode");
    int sent = 0;
    for (; sent < n && r == PST_OK; sent++) {
        const char *vals[MAXP];
        char nums[MAXP][24];
        r = text_params(stmts[sent].params, stmts[sent].nparams, vals, nums, err);
        if (r == PST_OK && PQsendQueryParams(b->conn, stmts[sent].sql, stmts[sent].nparams, NULL,
                                             vals, NULL, NULL, 0) != 1)
            r = conn_dead(b) ? conn_fail(b, err) : pst__fail(err, PST_ERR_IO, 0, "send failed");
    }
    if (r == PST_OK && PQpipelineSync(b->conn) != 1) r = conn_fail(b, err);
    if (r != PST_OK) {
        PQexitPipelineMode(b->conn); /* fails while results are pending: reset next time */
        if (!conn_dead(b)) PQreset(b->conn);
        return r;
    }
    /* Read every statement's result, then the Sync's. */
    for (int i = 0; i <= n; i++) {
        PGresult *res;
        bool first = true;
        while ((res = PQgetResult(b->conn)) != NULL) {
            ExecStatusType st = PQresultStatus(res);
            if (st == PGRES_PIPELINE_SYNC) {
                PQclear(res);
                goto synced;
            }
            if (first && r == PST_OK) {
                if (st == PGRES_TUPLES_OK && i == 0 && fn) {
                    int ncol = PQnfields(res) > 16 ? 16 : PQnfields(res);
                    const char *colv[16];
                    for (int row = 0; row < PQntuples(res) && r == PST_OK; row++) {
                        for (int c = 0; c < ncol; c++)
                            colv[c] = PQgetisnull(res, row, c) ? NULL : PQgetvalue(res, row, c);
                        psb_row pr = {.ncol = ncol, .col = colv};
                        r = fn(ctx, &pr, err);
                    }
                } else if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) {
                    r = st == PGRES_PIPELINE_ABORTED ? PST_ERR_IO : res_fail(b, res, err, viol);
                    if (failed_at && st != PGRES_PIPELINE_ABORTED) *failed_at = i;
                }
            }
            first = false;
            PQclear(res);
        }
        if (conn_dead(b)) {
            PQexitPipelineMode(b->conn);
            return conn_fail(b, err);
        }
    }
synced:
    if (PQexitPipelineMode(b->conn) != 1) {
        PGresult *left;
        while ((left = PQgetResult(b->conn)) != NULL)
            PQclear(left);
        if (PQexitPipelineMode(b->conn) != 1) {
            PQreset(b->conn); /* never leave the connection in pipeline mode */
            if (r == PST_OK) r = conn_fail(b, err);
        }
    }
    return r;
}

static pst_status simple(be_pg *b, const char *sql, pst_error *err) {
    PGresult *res = PQexec(b->conn, sql);
    pst_status r = PST_OK;
    ExecStatusType rs = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
    if (rs != PGRES_COMMAND_OK && rs != PGRES_TUPLES_OK)
        r = res ? res_fail(b, res, err, NULL) : conn_fail(b, err);
    PQclear(res);
    return r;
}

static pst_status be_begin(void *be, pst_error *err) {
    be_pg *b = be;
    pst_status r = ensure_conn(b, err);
    if (r == PST_OK) r = simple(b, "BEGIN", err);
    b->in_tx = r == PST_OK;
    return r;
}

static pst_status be_commit(void *be, pst_error *err) {
    be_pg *b = be;
    pst_status r = simple(b, "COMMIT", err);
    b->in_tx = false;
    return r;
}

static void be_rollback(void *be) {
    be_pg *b = be;
    if (b->in_tx && !conn_dead(b)) simple(b, "ROLLBACK", NULL);
    b->in_tx = false;
}

static pst_status be_migrate(void *be, int target, int *version, pst_error *err) {
    be_pg *b = be;
    pst_status r = be_begin(b, err);
    if (r != PST_OK) return pst__ctx(err, r, "begin migration");
    int v = 0;
    PGresult *res = NULL;
    /* Two hosts opening a fresh database at once must not both migrate. */
    r = simple(b, "SELECT pg_advisory_xact_lock(" PST_PG_MIGRATION_LOCK ")", err);
    if (r == PST_OK)
        r = simple(b, "CREATE TABLE IF NOT EXISTS schema_version(version INTEGER NOT NULL)", err);
    if (r == PST_OK) {
        res = PQexec(b->conn, "SELECT coalesce(max(version), 0) FROM schema_version");
        if (!res || PQresultStatus(res) != PGRES_TUPLES_OK)
            r = res ? res_fail(b, res, err, NULL) : conn_fail(b, err);
        else
            v = atoi(PQgetvalue(res, 0, 0));
        PQclear(res);
    }
    if (r == PST_OK && (v > target || target > pst__pg_nmigrations))
        r = pst__fail(err, PST_ERR_SCHEMA, 0,
                      "database schema version %d is newer than this program's %d", v, target);
    for (; r == PST_OK && v < target; v++) {
        char sql[96];
        snprintf(sql, sizeof sql,
                 "DELETE FROM schema_version; INSERT INTO schema_version VALUES(%d)", v + 1);
        r = simple(b, pst__pg_migrations[v], err);
        if (r == PST_OK) r = simple(b, sql, err);
        if (r != PST_OK) pst__ctx(err, r, "migration");
    }
    if (r == PST_OK) r = be_commit(b, err);
    if (r != PST_OK) {
        be_rollback(b);
        return r;
    }
    *version = v;
    return PST_OK;
}

static void be_close(void *be) {
    be_pg *b = be;
    if (!b) return;
    PQfinish(b->conn);
    free(b);
}

static const psb_ops pg_ops = {
    .name = "postgresql",
    .exec = be_exec,
    .batch = be_batch,
    .begin = be_begin,
    .commit = be_commit,
    .rollback = be_rollback,
    .migrate = be_migrate,
    .close = be_close,
};

void *pst__pg_open(const char *url, const char *password, const psb_ops **ops, pst_error *err) {
    char *perr = NULL;
    PQconninfoOption *opts = PQconninfoParse(url, &perr);
    if (!opts) {
        pst__fail(err, PST_ERR_ARG, 0, "bad PostgreSQL URL: %.200s", perr ? perr : "out of memory");
        PQfreemem(perr);
        return NULL;
    }
    /* Fixed defaults for what the URL leaves out, so no PG* variable applies. */
    struct passwd pw, *pwp = NULL;
    char pwbuf[1024], passfile[600] = "";
    const char *osuser = "postgres";
    if (getpwuid_r(geteuid(), &pw, pwbuf, sizeof pwbuf, &pwp) == 0 && pwp) {
        osuser = pw.pw_name;
        if (pw.pw_dir) snprintf(passfile, sizeof passfile, "%s/.pgpass", pw.pw_dir);
    }
    const char *def_key[] = {"host",
                             "port",
                             "user",
                             "dbname",
                             "passfile",
                             "connect_timeout",
                             "application_name",
                             "client_encoding",
                             "sslmode",
                             "gssencmode",
                             "target_session_attrs",
                             "password"};
    const char *def_val[] = {"/var/run/postgresql",
                             "5432",
                             osuser,
                             NULL,
                             passfile[0] ? passfile : NULL,
                             "10",
                             "peri",
                             "UTF8",
                             "prefer",
                             "prefer",
                             "any",
                             password};
    enum { NDEF = sizeof def_key / sizeof def_key[0] };
    size_t nopt = 0;
    for (PQconninfoOption *o = opts; o->keyword; o++)
        nopt++;
    const char **keys = calloc(nopt + NDEF + 1, sizeof *keys);
    const char **vals = calloc(nopt + NDEF + 1, sizeof *vals);
    be_pg *b = calloc(1, sizeof *b);
    if (!keys || !vals || !b) {
        pst__fail(err, PST_ERR_NOMEM, 0, "out of memory");
        goto fail;
    }
    size_t k = 0;
    const char *user = NULL;
    for (PQconninfoOption *o = opts; o->keyword; o++) {
        if (!o->val || !*o->val) continue;
        if (!strcmp(o->keyword, "user")) user = o->val;
        keys[k] = o->keyword;
        vals[k++] = o->val;
    }
    for (int d = 0; d < NDEF; d++) {
        bool given = false;
        for (size_t i = 0; i < k && !given; i++)
            given = !strcmp(keys[i], def_key[d]);
        const char *v = def_val[d];
        if (!strcmp(def_key[d], "dbname")) v = user ? user : osuser;
        if (given || !v) continue;
        keys[k] = def_key[d];
        vals[k++] = v;
    }
    keys[k] = vals[k] = NULL;
    b->conn = PQconnectdbParams(keys, vals, 0);
    if (!b->conn) {
        pst__fail(err, PST_ERR_NOMEM, 0, "out of memory");
        goto fail;
    }
    if (PQstatus(b->conn) != CONNECTION_OK) {
        set_msg(err, PST_ERR_CONN, "cannot connect to PostgreSQL", PQerrorMessage(b->conn));
        goto fail;
    }
    PQsetNoticeProcessor(b->conn, quiet, NULL);
    free(keys);
    free(vals);
    PQconninfoFree(opts);
    *ops = &pg_ops;
    return b;
fail:
    if (b) PQfinish(b->conn);
    free(b);
    free(keys);
    free(vals);
    PQconninfoFree(opts);
    return NULL;
}
