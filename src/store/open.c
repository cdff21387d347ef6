/*
 * open.c — opening a store: pick the backend from the locator (a postgresql:// or
 * postgres:// URL → PostgreSQL, anything else → an SQLite file path or ":memory:"), run
 * the versioned migrations, remember the ownership rules (owner machine, read-only).
 */
#include "store_int.h"

#include <stdlib.h>
#include <string.h>

bool pst__is_pg_url(const char *locator) {
    return locator &&
           (!strncmp(locator, "postgresql://", 13) || !strncmp(locator, "postgres://", 11));
}

bool pst_locator_is_remote(const char *locator) {
    return pst__is_pg_url(locator);
}

pst_store *pst_open_ex(const char *locator, const pst_open_options *o, pst_error *err) {
    pst__ok(err);
    if (!locator || !*locator) {
        pst__fail(err, PST_ERR_ARG, 0, "no database path");
        return NULL;
    }
    if (o && o->owner_machine_id &&
        (!*o->owner_machine_id || strlen(o->owner_machine_id) >= PST_ID_LEN)) {
        pst__fail(err, PST_ERR_ARG, 0, "bad owner machine id");
        return NULL;
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
    s->be = pst__is_pg_url(locator) ? pst__pg_open(locator, o ? o->password : NULL, &s->ops, err)
                                    : pst__sqlite_open(locator, &s->ops, err);
    if (!s->be) goto fail;
    if (s->ops->migrate(s->be, PST_SCHEMA_VERSION, &s->version, err) != PST_OK) goto fail;
    if (o && o->owner_machine_id) strcpy(s->owner, o->owner_machine_id);
    s->read_only = o && o->read_only;
    return s;
fail:
    if (s->be) s->ops->close(s->be);
    pthread_mutex_destroy(&s->mu);
    free(s);
    return NULL;
}

pst_store *pst_open(const char *path, pst_error *err) {
    return pst_open_ex(path, NULL, err);
}

void pst_close(pst_store *s) {
    if (!s) return;
    s->ops->close(s->be);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

int pst_schema_version(pst_store *s) {
    return s ? s->version : 0;
}

const char *pst_backend_name(const pst_store *s) {
    return s ? s->ops->name : "";
}
