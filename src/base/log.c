/*
 * log.c — the log hook. Library code reports through the pb_logger its caller
 * configured (host options, server configs); nothing is written anywhere by default,
 * as with SQLite's SQLITE_CONFIG_LOG, except that the logger is a value, not a global.
 * pb_log_to_file writes each message as visible.c renders outside text.
 */
#include "visible_int.h"
#include "peri/base.h"

#include <stdio.h>
#include <string.h>

#if defined(__wasi__) && !defined(_REENTRANT) /* single-threaded wasi-libc: no stream locks */
#define flockfile(f)   ((void)(f))
#define funlockfile(f) ((void)(f))
#endif

void pb_log(const pb_logger *lg, pb_log_level level, const char *fmt, ...) {
    if (!lg || !lg->fn) return;
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    /* a message never ends in a newline: the sink decides the line structure */
    size_t len = (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1;
    while (len > 0 && msg[len - 1] == '\n')
        msg[--len] = 0;
    lg->fn(lg->ud, level, msg);
}

const char *pb_log_level_name(pb_log_level level) {
    switch (level) {
    case PB_LOG_DEBUG: return "debug";
    case PB_LOG_INFO: return "info";
    case PB_LOG_WARN: return "warning";
    default: return "error";
    }
}

static bool put_file(void *ctx, const char *p, size_t n) {
    return fwrite(p, 1, n, ctx) == n;
}

void pb_log_to_file(void *ud, pb_log_level level, const char *msg) {
    FILE *f = ud;
    if (!f) return;
    flockfile(f); /* one line, even when several threads log at once */
    fputs("peri: ", f);
    if (level != PB_LOG_INFO) fprintf(f, "%s: ", pb_log_level_name(level));
    /* the message may carry a server's or a program's text: escapes, never raw controls */
    pb__visible_log(msg, strlen(msg), put_file, f);
    fputc('\n', f);
    fflush(f);
    funlockfile(f);
}
