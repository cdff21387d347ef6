/*
 * lines.c — the newline-delimited frame reader of the stdio JSON-RPC transports: one
 * line at a time from a descriptor, any length up to a limit, through partial reads
 * and EINTR.
 *
 * Invariants: a CR before the newline is removed; the last line counts even without its
 * newline; a line longer than the limit is dropped whole (up to its newline) and
 * reported once, never split into frames, and the buffer stays bounded meanwhile.
 */
#include "peri/base.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void pb_lines_init(pb_lines *r, int fd, size_t max) {
    memset(r, 0, sizeof *r);
    r->fd = fd;
    r->max = max;
}

void pb_lines_free(pb_lines *r) {
    free(r->buf);
    memset(r, 0, sizeof *r);
    r->fd = -1;
}

bool pb_line_blank(const char *s, size_t n) {
    for (size_t k = 0; k < n; k++)
        if (s[k] != ' ' && s[k] != '\t') return false;
    return true;
}

/* Reads more bytes into the buffer. 1 = got bytes, 0 = EOF, -1 = error. */
static int fill(pb_lines *r) {
    if (r->start > 0) {
        memmove(r->buf, r->buf + r->start, r->len - r->start);
        r->len -= r->start;
        r->start = 0;
    }
    if (r->cap - r->len < 4096) {
        size_t ncap = r->cap ? r->cap * 2 : 65536;
        char *nb = realloc(r->buf, ncap);
        if (!nb) return -1;
        r->buf = nb;
        r->cap = ncap;
    }
    ssize_t n = pb_read_some(r->fd, r->buf + r->len, r->cap - r->len);
    if (n < 0) return -1;
    r->len += (size_t)n;
    return n > 0;
}

pb_lines_status pb_lines_next(pb_lines *r, char **line, size_t *len) {
    bool dropping = false;
    size_t scanned = 0;
    for (;;) {
        char *base = r->buf + r->start;
        size_t avail = r->len - r->start;
        char *nl = avail > scanned ? memchr(base + scanned, '\n', avail - scanned) : NULL;
        if (nl) {
            size_t n = (size_t)(nl - base);
            r->start += n + 1;
            if (dropping) return PB_LINE_TOO_LONG;
            if (n > 0 && base[n - 1] == '\r') n--; /* tolerate CRLF peers */
            base[n] = '\0';
            *line = base;
            *len = n;
            return PB_LINE;
        }
        scanned = avail;
        if (avail > r->max) {
            /* Keep memory bounded: forget what we have and skip to the newline. */
            dropping = true;
            r->start = r->len;
            scanned = 0;
        }
        if (r->eof) {
            if (avail == 0 || dropping) return dropping ? PB_LINE_TOO_LONG : PB_LINES_EOF;
            /* Final line without a newline: still a frame. */
            r->start = r->len;
            if (r->len == r->cap) {
                char *nb = realloc(r->buf, r->cap + 1);
                if (!nb) return PB_LINES_ERROR;
                r->buf = nb;
                r->cap++;
                base = r->buf + r->len - avail;
            }
            base[avail] = '\0';
            *line = base;
            *len = avail;
            return PB_LINE;
        }
        int got = fill(r);
        if (got < 0) return PB_LINES_ERROR;
        if (got == 0) r->eof = true;
    }
}
