/*
 * log.c — the log hook. Library code reports through the pb_logger its caller
 * configured (host options, server configs); nothing is written anywhere by default,
 * as with SQLite's SQLITE_CONFIG_LOG, except that the logger is a value, not a global.
 * Also the visible rendering of outside text (pb_buf_put_visible, pb_visible), which
 * pb_log_to_file applies to every message it writes.
 */
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

/* ---------------------------------------------------------------- visible text */

/* How many bytes at u[0..n) form one character kept as it is: tab, printable ASCII, or
 * a valid UTF-8 sequence of a code point from U+00A0 up (no overlong form, no
 * surrogate, nothing past U+10FFFF). 0: u[0] is shown as an escape. */
static size_t kept_len(const unsigned char *u, size_t n) {
    unsigned char c = u[0];
    if (c == '\t' || (c >= 0x20 && c < 0x7F)) return 1;
    if (c < 0xC2 || c > 0xF4) return 0; /* C0, DEL, a lone continuation, overlong, too big */
    size_t len = c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    if (n < len) return 0;
    unsigned char lo = 0x80, hi = 0xBF; /* the second byte's range */
    if (c == 0xC2) lo = 0xA0;           /* U+0080..U+009F are the C1 controls */
    if (c == 0xE0) lo = 0xA0;           /* overlong */
    if (c == 0xED) hi = 0x9F;           /* UTF-16 surrogates */
    if (c == 0xF0) lo = 0x90;           /* overlong */
    if (c == 0xF4) hi = 0x8F;           /* past U+10FFFF */
    if (u[1] < lo || u[1] > hi) return 0;
    for (size_t i = 2; i < len; i++)
        if ((u[i] & 0xC0) != 0x80) return 0;
    return len;
}

typedef bool (*put_fn)(void *ctx, const char *p, size_t n);

/* Passes s[0..n) to put in pieces, control characters and bad bytes as escapes. */
static bool put_visible(const char *s, size_t n, put_fn put, void *ctx) {
    const unsigned char *u = (const unsigned char *)s;
    size_t start = 0, i = 0;
    while (i < n) {
        size_t k = kept_len(u + i, n - i);
        if (k) {
            i += k;
            continue;
        }
        if (i > start && !put(ctx, s + start, i - start)) return false;
        char esc[5] = {'\\', 'x', "0123456789abcdef"[u[i] >> 4], "0123456789abcdef"[u[i] & 15]};
        if (u[i] == '\n' || u[i] == '\r') {
            esc[1] = u[i] == '\n' ? 'n' : 'r';
            if (!put(ctx, esc, 2)) return false;
        } else if (!put(ctx, esc, 4)) {
            return false;
        }
        start = ++i;
    }
    return i == start || put(ctx, s + start, i - start);
}

static bool put_buf(void *ctx, const char *p, size_t n) {
    return pb_buf_put(ctx, p, n);
}

bool pb_buf_put_visible(pb_buf *b, const char *s, size_t n) {
    size_t len0 = b->len;
    if (put_visible(s, n, put_buf, b)) return pb_buf_reserve(b, 0); /* NUL even for n == 0 */
    b->len = len0;                                                  /* out of memory: as it was */
    if (b->p) b->p[len0] = 0;
    return false;
}

char *pb_visible(const char *s) {
    pb_buf b = {0};
    if (!s || !pb_buf_put_visible(&b, s, strlen(s))) {
        pb_buf_free(&b); /* storage a failed growth may have left */
        return NULL;
    }
    return pb_buf_take(&b, NULL);
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
    put_visible(msg, strlen(msg), put_file, f);
    fputc('\n', f);
    fflush(f);
    funlockfile(f);
}
