/*
 * store_int.h — what the store's files share: the connection + mutex, error helpers and
 * the clock. Not a public header.
 */
#ifndef PERI_STORE_INT_H
#define PERI_STORE_INT_H

#include "peri/store.h"

#include <pthread.h>
#include <sqlite3.h>

struct pst_store {
    sqlite3 *db;
    pthread_mutex_t mu; /* one connection, serialised: SQLite handles are not shared */
    int version;
};

/* Fill err (may be NULL) and return st. */
pst_status pst__fail(pst_error *err, pst_status st, int sqlite_code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Map the connection's last SQLite error to a status and fill err. */
pst_status pst__sqlfail(sqlite3 *db, pst_error *err, const char *what);
void pst__ok(pst_error *err);
int64_t pst__now_ms(void);
/* Run SQL without results; returns SQLITE_OK or an error code. */
int pst__exec(sqlite3 *db, const char *sql);
/* strdup that accepts NULL. */
char *pst__strdup(const char *s);

#endif
