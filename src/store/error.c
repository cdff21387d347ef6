/*
 * error.c — the store's typed errors, status names and small shared helpers.
 */
#include "store_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *pst_status_name(pst_status s) {
    switch (s) {
    case PST_OK: return "ok";
    case PST_ERR_NOT_FOUND: return "not_found";
    case PST_ERR_IO: return "io";
    case PST_ERR_BUSY: return "busy";
    case PST_ERR_SCHEMA: return "schema";
    case PST_ERR_ARG: return "arg";
    case PST_ERR_NOMEM: return "nomem";
    }
    return "unknown";
}

pst_status pst__fail(pst_error *err, pst_status st, int sqlite_code, const char *fmt, ...) {
    if (err) {
        va_list ap;
        err->status = st;
        err->sqlite_code = sqlite_code;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
    }
    return st;
}

pst_status pst__sqlfail(sqlite3 *db, pst_error *err, const char *what) {
    int code = sqlite3_extended_errcode(db);
    pst_status st;
    switch (code & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED: st = PST_ERR_BUSY; break;
    case SQLITE_NOMEM: st = PST_ERR_NOMEM; break;
    case SQLITE_CONSTRAINT: st = PST_ERR_ARG; break;
    default: st = PST_ERR_IO; break;
    }
    return pst__fail(err, st, code, "%s: %s", what, sqlite3_errmsg(db));
}

void pst__ok(pst_error *err) {
    if (err) {
        err->status = PST_OK;
        err->sqlite_code = 0;
        err->message[0] = '\0';
    }
}

int64_t pst__now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int pst__exec(sqlite3 *db, const char *sql) {
    return sqlite3_exec(db, sql, NULL, NULL, NULL);
}

char *pst__strdup(const char *s) {
    return s ? strdup(s) : NULL;
}
