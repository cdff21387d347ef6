/*
 * error.c — SDK error values and status names.
 */
#include "sdk/sdk_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* Indexed by status; a value outside the enum (or a hole) is "UNKNOWN". */
static const char *const status_names[] = {
    [PSDK_OK] = "OK",
    [PSDK_ERR_ARG] = "ARG",
    [PSDK_ERR_TRANSPORT] = "TRANSPORT",
    [PSDK_ERR_RPC] = "RPC",
    [PSDK_ERR_PROTOCOL] = "PROTOCOL",
    [PSDK_ERR_TIMEOUT] = "TIMEOUT",
    [PSDK_ERR_SESSION_CLOSE_INCOMPLETE] = "SESSION_CLOSE_INCOMPLETE",
    [PSDK_ERR_STATE] = "STATE",
    [PSDK_ERR_NOMEM] = "NOMEM",
};

const char *psdk_status_name(psdk_status s) {
    size_t i = (size_t)s;
    return i < sizeof status_names / sizeof *status_names && status_names[i] ? status_names[i]
                                                                             : "UNKNOWN";
}

void psdk__ok(psdk_error *e) {
    if (e) memset(e, 0, sizeof *e);
}

psdk_status psdk__fail(psdk_error *e, psdk_status st, const char *fmt, ...) {
    if (!e) return st;
    *e = (psdk_error){.status = st};
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    return st;
}
