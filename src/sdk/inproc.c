/*
 * inproc.c — the in-process transport pair: a connected AF_UNIX socket pair, one end
 * a psdk_transport for the SDK, the other a file descriptor for a host running in
 * this process (pacp_serve(opt, fd, fd, ...) on a thread of the embedder's). No
 * process is started.
 */
#include "sdk/sdk_int.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int psdk_inproc_pair(psdk_transport **client, int *host_fd, psdk_error *err) {
    psdk__ok(err);
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        psdk__fail(err, PSDK_ERR_TRANSPORT, "socketpair: %s", strerror(errno));
        return -1;
    }
    *client = psdk__fdt_new(sv[0], sv[0], true, NULL, NULL, err);
    if (!*client) {
        close(sv[0]);
        close(sv[1]);
        return -1;
    }
    *host_fd = sv[1];
    return 0;
}
