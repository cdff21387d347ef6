/*
 * lines.c — the newline-delimited frame reader of MCP's stdio transport: one line per
 * JSON-RPC frame (decoded by the library's codec, base/rpc.h).
 *
 * Invariants: a line longer than PMCP_MAX_FRAME is dropped whole (up to its newline)
 * and reported, never split into frames; a CR before the newline is removed; the last
 * line counts even without its newline; the buffer never grows past the frame limit
 * plus one read.
 */
#include "mcp/mcp_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void pmcp__lines_init(pmcp__lines *r, int fd) {
    memset(r, 0, sizeof *r);
    r->fd = fd;
}

void pmcp__lines_free(pmcp__lines *r) {
    free(r->buf);
    r->buf = NULL;
}

int pmcp__lines_next(pmcp__lines *r, char **line, size_t *len) {
    for (;;) {
        char *nl = r->len > r->start ? memchr(r->buf + r->start, '\n', r->len - r->start) : NULL;
        if (nl) {
            size_t n = (size_t)(nl - (r->buf + r->start));
            char *s = r->buf + r->start;
            r->start += n + 1;
            if (r->dropping || n > PMCP_MAX_FRAME) {
                r->dropping = false;
                return 2;
            }
            if (n && s[n - 1] == '\r') n--;
            s[n] = '\0';
            *line = s;
            *len = n;
            return 1;
        }
        if (r->start > 0) {
            memmove(r->buf, r->buf + r->start, r->len - r->start);
            r->len -= r->start;
            r->start = 0;
        }
        if (r->len > PMCP_MAX_FRAME) { /* too long: drop up to the next newline */
            r->dropping = true;
            r->len = 0;
        }
        if (r->eof) return 0;
        if (r->cap - r->len < 65536) {
            size_t nc = r->cap ? r->cap * 2 : 131072;
            if (nc > PMCP_MAX_FRAME + 262144) nc = PMCP_MAX_FRAME + 262144;
            if (nc <= r->cap) nc = r->cap; /* at the cap: still room for >= 64 KiB */
            char *nb = nc != r->cap ? realloc(r->buf, nc) : r->buf;
            if (!nb) return -1;
            r->buf = nb;
            r->cap = nc;
        }
        ssize_t got = read(r->fd, r->buf + r->len, r->cap - r->len - 1);
        if (got < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        if (got == 0) {
            r->eof = true;
            if (r->len > 0 && !r->dropping) { /* last line without newline */
                r->buf[r->len++] = '\n';
            }
            continue;
        }
        r->len += (size_t)got;
    }
}
