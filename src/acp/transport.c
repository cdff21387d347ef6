/*
 * transport.c — line reader and locked frame writer (see transport.h).
 */
#include "acp/transport.h"

#include "acp/jsonrpc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void pacp__reader_init(pacp_reader *r, int fd) {
    memset(r, 0, sizeof *r);
    r->fd = fd;
}

void pacp__reader_free(pacp_reader *r) {
    free(r->buf);
    memset(r, 0, sizeof *r);
    r->fd = -1;
}

/* Reads more bytes into the buffer. 1 = got bytes, 0 = EOF, -1 = error. */
static int fill(pacp_reader *r) {
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
    for (;;) {
        ssize_t n = read(r->fd, r->buf + r->len, r->cap - r->len);
        if (n > 0) {
            r->len += (size_t)n;
            return 1;
        }
        if (n == 0) return 0;
        if (errno != EINTR) return -1;
    }
}

pacp_read_status pacp__reader_next(pacp_reader *r, char **line, size_t *len) {
    int dropping = 0;
    size_t scanned = 0;
    for (;;) {
        char *base = r->buf + r->start;
        size_t avail = r->len - r->start;
        char *nl = avail > scanned ? memchr(base + scanned, '\n', avail - scanned) : NULL;
        if (nl) {
            size_t n = (size_t)(nl - base);
            r->start += n + 1;
            if (dropping) return PACP_READ_TOO_LONG;
            if (n > 0 && base[n - 1] == '\r') n--; /* tolerate CRLF clients */
            base[n] = '\0';
            *line = base;
            *len = n;
            return PACP_READ_LINE;
        }
        scanned = avail;
        if (avail > PACP_MAX_FRAME) {
            /* Keep memory bounded: forget what we have and skip to the newline. */
            dropping = 1;
            r->start = r->len;
            scanned = 0;
        }
        if (r->eof) {
            if (avail == 0 || dropping) return dropping ? PACP_READ_TOO_LONG : PACP_READ_EOF;
            /* Final line without a newline: still a frame. */
            r->start = r->len;
            if (r->len == r->cap) {
                char *nb = realloc(r->buf, r->cap + 1);
                if (!nb) return PACP_READ_ERROR;
                r->buf = nb;
                r->cap++;
                base = r->buf + r->len - avail;
            }
            base[avail] = '\0';
            *line = base;
            *len = avail;
            return PACP_READ_LINE;
        }
        int got = fill(r);
        if (got < 0) return PACP_READ_ERROR;
        if (got == 0) r->eof = 1;
    }
}

int pacp__writer_init(pacp_writer *w, int fd) {
    w->fd = fd;
    w->broken = 0;
    return pthread_mutex_init(&w->mu, NULL) == 0 ? 0 : -1;
}

void pacp__writer_destroy(pacp_writer *w) {
    pthread_mutex_destroy(&w->mu);
}

int pacp__writer_send(pacp_writer *w, const json_t *frame) {
    size_t n;
    char *line = pb_rpc_encode(frame, true, &n);
    if (!line) return -1;
    int rc = 0;
    pthread_mutex_lock(&w->mu);
    if (w->broken) rc = -1;
    for (size_t off = 0; rc == 0 && off < n;) {
        ssize_t k = write(w->fd, line + off, n - off);
        if (k > 0) {
            off += (size_t)k;
        } else if (k < 0 && errno == EINTR) {
            continue;
        } else {
            w->broken = 1;
            rc = -1;
        }
    }
    pthread_mutex_unlock(&w->mu);
    free(line);
    return rc;
}
