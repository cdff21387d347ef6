/*
 * transport.c — the locked frame writer (see transport.h).
 */
#include "acp/transport.h"

#include "acp/jsonrpc.h"
#include "peri/base.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int pacp__writer_init(pacp_writer *w, int fd) {
    w->fd = fd;
    w->broken = 0;
    return pthread_mutex_init(&w->mu, NULL) == 0 ? 0 : -1;
}

void pacp__writer_destroy(pacp_writer *w) {
    pthread_mutex_destroy(&w->mu);
}

int pacp__writer_send(pacp_writer *w, const pj_t *frame) {
    size_t n;
    char *line = pb_rpc_encode(frame, true, &n);
    if (!line) return -1;
    int rc = 0;
    pthread_mutex_lock(&w->mu);
    if (w->broken || pb_write_all(w->fd, line, n) != 0) {
        w->broken = 1;
        rc = -1;
    }
    pthread_mutex_unlock(&w->mu);
    free(line);
    return rc;
}
