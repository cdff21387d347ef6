/*
 * error.c — the store's typed errors, status names and small shared helpers.
 */
#include "store_sql.h" /* no lock, no connection: the remote client links it too */

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
    case PST_ERR_CONN: return "conn";
    case PST_ERR_FOREIGN: return "foreign";
    }
    return "unknown";
}

pst_status pst__fail(pst_error *err, pst_status st, int code, const char *fmt, ...) {
    if (err) {
        va_list ap;
        err->status = st;
        err->sqlite_code = code;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
    }
    return st;
}

pst_status pst__ctx(pst_error *err, pst_status st, const char *what) {
    if (err && what) {
        char tmp[sizeof err->message];
        memcpy(tmp, err->message, sizeof tmp);
        tmp[sizeof tmp - 1] = '\0';
        size_t n = strlen(what);
        if (n > 64) n = 64;
        memcpy(err->message, what, n);
        memcpy(err->message + n, ": ", 2);
        size_t room = sizeof err->message - n - 3;
        size_t m = strnlen(tmp, room);
        memcpy(err->message + n + 2, tmp, m);
        err->message[n + 2 + m] = '\0';
    }
    return st;
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

char *pst__strdup(const char *s) {
    return s ? strdup(s) : NULL;
}

int64_t pst__i64(const char *s) {
    return s ? strtoll(s, NULL, 10) : 0;
}
