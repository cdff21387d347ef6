/*
 * error.c — SDK error values and status names.
 */
#include "sdk/sdk_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* A switch rather than a table: -Wswitch names a status added to the enum without a
 * name here. A value outside the enum is "UNKNOWN". */
const char *psdk_status_name(psdk_status s) {
    switch (s) {
    case PSDK_OK: return "OK";
    case PSDK_ERR_ARG: return "ARG";
    case PSDK_ERR_TRANSPORT: return "TRANSPORT";
    case PSDK_ERR_RPC: return "RPC";
    case PSDK_ERR_PROTOCOL: return "PROTOCOL";
    case PSDK_ERR_TIMEOUT: return "TIMEOUT";
    case PSDK_ERR_SESSION_CLOSE_INCOMPLETE: return "SESSION_CLOSE_INCOMPLETE";
    case PSDK_ERR_STATE: return "STATE";
    case PSDK_ERR_NOMEM: return "NOMEM";
    }
    return "UNKNOWN";
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
