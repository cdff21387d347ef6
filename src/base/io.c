/*
 * io.c — descriptor loops that survive EINTR and short transfers, so callers never
 * write their own (a lost EINTR is a truncated frame on a pipe); and the decimal
 * formatting a forked child may still do (async-signal-safe: no stdio, no malloc).
 */
#include "peri/base.h"

#include <errno.h>
#include <unistd.h>

int pb_write_all(int fd, const void *p, size_t n) {
    const char *c = p;
    while (n > 0) {
        ssize_t w = write(fd, c, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

ssize_t pb_read_some(int fd, void *p, size_t n) {
    for (;;) {
        ssize_t r = read(fd, p, n);
        if (r >= 0 || errno != EINTR) return r;
    }
}

ssize_t pb_read_full(int fd, void *p, size_t n) {
    char *c = p;
    size_t got = 0;
    while (got < n) {
        ssize_t r = pb_read_some(fd, c + got, n - got);
        if (r < 0) return -1;
        if (r == 0) break;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

size_t pb_utoa(char *out, unsigned long v) {
    char t[24];
    size_t n = 0;
    do {
        t[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++)
        out[i] = t[n - 1 - i];
    out[n] = 0;
    return n;
}
