/*
 * fdtransport.c — psdk_transport over two file descriptors: newline-delimited frames,
 * a wake pipe so that close() unblocks a recv() waiting in poll(), and writes that
 * never raise SIGPIPE (blocked for the writing thread around each write).
 * The stdio, in-process and TCP helpers are built on it.
 */
#include "sdk/sdk_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_FRAME (64u << 20)

typedef struct fdt {
    psdk_transport base;
    int in_fd, out_fd;
    bool own;
    int wake[2];
    pthread_mutex_t mu; /* out_fd, closed */
    bool closed;
    pb_buf in;    /* bytes read and not yet returned */
    size_t start; /* where the next frame begins in `in` */
    void (*teardown)(void *);
    void *teardown_ctx;
} fdt;

/* pb_write_all with SIGPIPE blocked for this thread, so a peer that went away (a socket
 * or a pipe) fails the write with EPIPE; a SIGPIPE the write raised is consumed before
 * the mask is restored. */
static int write_all(int fd, const char *p, size_t n) {
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &set, &old);
    int rc = pb_write_all(fd, p, n);
    int saved = errno;
    if (rc < 0 && saved == EPIPE) {
        struct timespec zero = {0, 0};
        sigtimedwait(&set, NULL, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    errno = saved;
    return rc;
}

static int fdt_send(psdk_transport *t, const char *frame, size_t len) {
    fdt *f = (fdt *)t;
    pthread_mutex_lock(&f->mu);
    int rc = -1;
    if (!f->closed && f->out_fd >= 0) {
        char *line = malloc(len + 1);
        if (line) {
            memcpy(line, frame, len);
            line[len] = '\n';
            rc = write_all(f->out_fd, line, len + 1);
            free(line);
        }
    }
    pthread_mutex_unlock(&f->mu);
    return rc;
}

static int fdt_recv(psdk_transport *t, char **frame, size_t *len) {
    fdt *f = (fdt *)t;
    for (;;) {
        /* A complete line in the buffer? */
        size_t avail = f->in.len - f->start;
        char *line = avail ? f->in.p + f->start : NULL;
        char *nl = line ? memchr(line, '\n', avail) : NULL;
        if (nl) {
            size_t n = (size_t)(nl - line);
            f->start += n + 1;
            if (n > 0 && line[n - 1] == '\r') n--;
            if (pb_line_blank(line, n)) continue; /* a keep-alive */
            char *out = malloc(n + 1);
            if (!out) return -1;
            memcpy(out, line, n);
            out[n] = '\0';
            *frame = out;
            *len = n;
            return 0;
        }
        if (f->start > 0) { /* compact */
            memmove(f->in.p, f->in.p + f->start, avail);
            f->in.len = avail;
            f->in.p[avail] = '\0';
            f->start = 0;
        }
        if (f->in.len >= MAX_FRAME) return -1;
        if (!pb_buf_reserve(&f->in, 65536)) return -1;
        struct pollfd p[2] = {{.fd = f->in_fd, .events = POLLIN},
                              {.fd = f->wake[0], .events = POLLIN}};
        int r = poll(p, 2, -1);
        if (r < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        if (p[1].revents) return 1; /* closed by us */
        ssize_t got = read(f->in_fd, f->in.p + f->in.len, f->in.cap - f->in.len - 1);
        if (got < 0) {
            if (errno == EINTR || errno == EAGAIN) continue;
            return -1;
        }
        if (got == 0) return 1; /* end of stream (a partial last line is dropped) */
        f->in.len += (size_t)got;
        f->in.p[f->in.len] = '\0';
    }
}

static void fdt_close(psdk_transport *t) {
    fdt *f = (fdt *)t;
    pthread_mutex_lock(&f->mu);
    if (!f->closed) {
        f->closed = true;
        if (f->own && f->out_fd >= 0) {
            /* Our side of the conversation ends: the peer reads EOF. For a socket that
             * is the same fd as in_fd, so only shut down the write half. */
            if (f->out_fd == f->in_fd)
                shutdown(f->out_fd, SHUT_WR);
            else {
                close(f->out_fd);
                f->out_fd = -1;
            }
        }
        char c = 1;
        ssize_t w = write(f->wake[1], &c, 1);
        (void)w;
    }
    pthread_mutex_unlock(&f->mu);
}

static void fdt_free(psdk_transport *t) {
    fdt *f = (fdt *)t;
    if (!f) return;
    fdt_close(t);
    if (f->own) {
        if (f->out_fd >= 0 && f->out_fd != f->in_fd) close(f->out_fd);
        if (f->in_fd >= 0) close(f->in_fd);
    }
    close(f->wake[0]);
    close(f->wake[1]);
    if (f->teardown) f->teardown(f->teardown_ctx);
    pthread_mutex_destroy(&f->mu);
    pb_buf_free(&f->in);
    free(f);
}

psdk_transport *psdk__fdt_new(int in_fd, int out_fd, bool own, void (*teardown)(void *),
                              void *teardown_ctx, psdk_error *err) {
    fdt *f = calloc(1, sizeof *f);
    if (!f) {
        psdk__fail(err, PSDK_ERR_NOMEM, "out of memory");
        return NULL;
    }
    if (pipe2(f->wake, O_CLOEXEC) != 0) {
        psdk__fail(err, PSDK_ERR_TRANSPORT, "cannot create a wake pipe: %s", strerror(errno));
        free(f);
        return NULL;
    }
    f->base.send = fdt_send;
    f->base.recv = fdt_recv;
    f->base.close = fdt_close;
    f->base.free = fdt_free;
    f->in_fd = in_fd;
    f->out_fd = out_fd;
    f->own = own;
    f->teardown = teardown;
    f->teardown_ctx = teardown_ctx;
    pthread_mutex_init(&f->mu, NULL);
    return &f->base;
}

psdk_transport *psdk_fd_transport_new(int in_fd, int out_fd, bool own, psdk_error *err) {
    psdk__ok(err);
    if (in_fd < 0 || out_fd < 0) {
        psdk__fail(err, PSDK_ERR_ARG, "bad file descriptor");
        return NULL;
    }
    return psdk__fdt_new(in_fd, out_fd, own, NULL, NULL, err);
}
