/*
 * buf.c — the room's typed errors: filling a pr_error and naming its kind.
 */
#include "room_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void pr__err_set(pr_error *err, pr_kind kind, const char *fmt, ...) {
    if (!err) return;
    err->kind = kind;
    err->stop = PR_STOP_NONE;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
}

const char *pr_kind_name(pr_kind k) {
    switch (k) {
    case PR_KIND_VIOLATION: return "violation";
    case PR_KIND_RUN_FAILED: return "run_failed";
    case PR_KIND_INTERFACE: return "interface";
    default: return "none";
    }
}
